# SPDX-License-Identifier: Apache-2.0
"""One end of a simulated TCP connection: the kernel's socket and asyncio's
transport in one (Endpoint). Its hot state is in C (ext/stream.c: `_s`, a
_core.Stream): a write the window takes, the next bytes in order for an open
socket and their delivery to a plain Protocol never come back to Python.
Everything else of a connection is here: the handshake's end, the window,
FIN and RST, keep-alive and TCP_USER_TIMEOUT, flow control and close.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import operator
import socket
import struct
from asyncio.log import logger as _asyncio_logger
from typing import Any

from .. import _core
from .._loop.kinds import CLOSE, RESET
from .addr import UNIX, as_sockaddr, ep_text
from .simsock import SimSocket
from .tcp import (
    ACK,
    DATA,
    FIN,
    HIGH_WATER_DEFAULT,
    KEEPALIVE,
    KEEPCNT_DEFAULT,
    KEEPIDLE_DEFAULT,
    KEEPINTVL_DEFAULT,
    LOG_WRITES_AFTER_LOST,
    PROBE,
    RST,
    RTO_MIN_NS,
    SEGMENT_MAX,
    TCP_USER_TIMEOUT,
    WINDOW,
    Owned,
    Segment,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .server import Server
    from .stack import Stack


def _tcp_stack(stack: Stack) -> Any:
    """What the C state of stack's endpoints shares: made on first use."""
    if stack._c is None:
        stack._c = _core.StreamStack(
            stack.wire,
            stack,
            stack.stats,
            Segment,
            asyncio.BufferedProtocol,
            WINDOW,
            SEGMENT_MAX,
            DATA,
        )
    return stack._c


def _in_c(name: str) -> Any:
    """An Endpoint attribute kept in its C state, self._s (ext/stream.c)."""

    def set_field(self: Endpoint, value: Any) -> None:
        setattr(self._s, name, value)

    return property(operator.attrgetter("_s." + name), set_field)


class Endpoint(Owned, asyncio.Transport):
    """One end of a connection: the kernel's socket and asyncio's transport."""

    # TLS and sendfile (askew/_net/tls.py): asyncio's start_tls and sendfile
    # read these; a simulated socket's "native" sendfile is the block copy.
    _start_tls_compatible = True
    _sendfile_compatible = asyncio.constants._SendfileMode.TRY_NATIVE

    def __init__(
        self,
        stack: Stack,
        token: int,
        ctx: Any,
        local: tuple[str, Any],
        remote: tuple[str, Any],
        remote_node: int,
    ) -> None:
        asyncio.Transport.__init__(self)
        Owned.__init__(self, stack, token, ctx)
        self.loop = stack.loop
        self.slot: Any = stack.world._slots[self.node]  # its token is the live incarnation's
        self.local = local
        self.remote = remote
        self.remote_node = remote_node
        self.buf = bytearray()  # written, not yet taken by the window
        self.ooo: dict[int, Segment] = {}
        self.rx: list[bytes] = []  # arrived in order, not yet read: chunks
        # The hot state, in C (ext/stream.c) and read through the properties
        # below: peer None; snd_next, inflight, rcv_next, conn_lost 0;
        # reading True; dead (the socket is gone: arriving data gets a RST),
        # closing, eof_wanted, rx_scheduled, rx_eof False.
        self._s = _core.Stream(
            _tcp_stack(stack), self, self.slot, token, remote_node, ctx, self.rx, self.buf, self.ooo
        )
        self.server: Server | None = None
        self.protocol: Any = None
        self.state = "syn"
        self.waiter: asyncio.Future[None] | None = None
        # send side
        self.fin_sent = False
        self.high = HIGH_WATER_DEFAULT
        self.low = HIGH_WATER_DEFAULT // 4
        self.writing_paused = False
        self.drainers: list[asyncio.Future[None]] | None = None  # sendfile's waits
        # keep-alive and TCP_USER_TIMEOUT (tcp(7))
        self.unacked: dict[Segment, int] = {}  # data lost at least once -> ns since
        self.rx_ns = self.loop._local_ns(self.node)  # its own node's clock (keep-alive)
        self.probes = 0  # keep-alive probes unanswered
        self.ka_timer: asyncio.TimerHandle | None = None
        # receive side
        self.eof_delivered = False
        self.port_held = False
        # A reset that came after the peer's FIN, for the next write to meet.
        self.so_error: OSError | None = None
        # asyncio.BaseTransport.get_extra_info reads _extra (not overridden,
        # so a test that patches asyncio.Transport.get_extra_info reaches it).
        self.extra = self._extra = {
            "peername": as_sockaddr(remote),
            "sockname": as_sockaddr(local),
            "socket": SimSocket(local, remote),
        }
        self._extra["socket"]._owner = self

    peer: Endpoint | None = _in_c("peer")
    dead: bool = _in_c("dead")
    closing: bool = _in_c("closing")
    reading: bool = _in_c("reading")
    eof_wanted: bool = _in_c("eof_wanted")
    rx_scheduled: bool = _in_c("rx_scheduled")
    rx_eof: bool = _in_c("rx_eof")
    snd_next: int = _in_c("snd_next")
    inflight: int = _in_c("inflight")
    rcv_next: int = _in_c("rcv_next")
    conn_lost: int = _in_c("conn_lost")
    rx_ns: int = _in_c("rx_ns")  # when a segment last came from the peer (keep-alive)

    def __repr__(self) -> str:
        return f"<askew TCP {ep_text(self.local)} -> {ep_text(self.remote)} {self.state}>"

    def alive(self) -> bool:
        live: int = self.slot.token  # the live incarnation's
        return live == self.token

    # -- connection setup ---------------------------------------------------

    def _established(self, server: Endpoint) -> None:
        if self.state != "syn":
            if self.state == "closed" and server.state == "open":
                self.stack._reset_back(Segment(DATA, server, self, 0, b""))
            return
        self.peer = server
        self.state = "open"
        self._timers_changed()
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            self.loop.call_soon(_set_result, waiter, context=self.ctx)

    def _connect_failed(self, exc: BaseException) -> None:
        self.state = "closed"
        self.dead = True
        self._release()
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            self.loop.call_soon(_set_exception, waiter, exc, context=self.ctx)

    def _timed_out(self, seg: Segment | None) -> None:
        """The kernel gave up: retransmissions, the user timeout or
        keep-alive (seg None) ran out."""
        self.stack.stats["tcp_timeouts"] += 1
        exc = TimeoutError(errno.ETIMEDOUT, "Connection timed out")
        if self.state == "syn":
            self._connect_failed(exc)
            return
        what = "timeout" if seg is not None else "keep-alive timeout"
        self.stack.log(RESET, self.node, f"{what} {self}")
        if seg is None and self.peer is not None and not self.dead:
            # Linux's keep-alive timer resets the connection as it gives up
            # (a retransmission timeout sends nothing).
            self._send_rst()
        self._lose(exc)

    def _send_rst(self) -> None:
        """A RST to the peer, once: nobody retransmits a reset."""
        self.stack.stats["tcp_segments"] += 1
        seq = self.snd_next + self.fin_sent  # what it sent: a FIN counts one
        self.stack.wire.send_segment(
            self.token, self.remote_node, Segment(RST, self, self.peer, seq, b"")
        )

    def _send_ack(self) -> None:
        """An ACK alone to the peer (see tcp.ACK): a reset did not match."""
        if not self.dead and self.alive():
            self.stack.send(Segment(ACK, self, self.peer, self.snd_next, b""), self.remote_node)

    # -- keep-alive and the user timeout (tcp(7)) ------------------------------

    def _option(self, name: int, level: int = socket.IPPROTO_TCP) -> int:
        """A timer option's value on this connection's socket object (0 when unset)."""
        opts = getattr(self._extra.get("socket"), "_opts", None)
        return int(opts.get((level, name), 0)) if opts else 0

    def _seconds(self, name: int, default: int) -> int:
        """A TCP_KEEP* option in ns, or its default when unset."""
        return (self._option(name) or default) * 1_000_000_000

    def _timers_changed(self, key: tuple[int, int] = KEEPALIVE) -> None:
        """A timer option was set (key), or the connection opened with its
        options set (as SO_KEEPALIVE): as Linux, turning keep-alive on, or
        opening with it on, starts the idle time from now; a new
        TCP_KEEPIDLE counts from the last word from the peer; the interval,
        count and user timeout take effect at the timer's next turn."""
        if key not in (KEEPALIVE, (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)):
            return
        self._timers_stop()
        if self.state != "open" or self.dead or self.closing or self.local[0] == UNIX:
            return  # a closed socket, or AF_UNIX (no TCP under it), sends no probe
        if not self._option(socket.SO_KEEPALIVE, socket.SOL_SOCKET):
            return
        idle = self._seconds(socket.TCP_KEEPIDLE, KEEPIDLE_DEFAULT)
        if key != KEEPALIVE:
            idle = max(0, idle - (self.loop._local_ns(self.node) - self.rx_ns))
        self._keepalive_in(idle)

    def _timers_stop(self) -> None:
        if self.ka_timer is not None:
            self.ka_timer.cancel()
            self.ka_timer = None

    def _keepalive_in(self, ns: int) -> None:
        self.ka_timer = self.loop.call_later(ns / 1e9, self._keepalive, context=self.ctx)

    def _keepalive(self) -> None:
        """Linux's keep-alive timer: after the idle time with nothing
        heard from the peer, a probe each interval; the count unanswered (or, if set,
        TCP_USER_TIMEOUT since the last word from the peer) ends the
        connection with ETIMEDOUT. Data in flight or waiting for the window
        is the retransmission timer's business, not keep-alive's."""
        self.ka_timer = None
        if self.state != "open" or self.dead or not self.alive():
            return
        idle = self._seconds(socket.TCP_KEEPIDLE, KEEPIDLE_DEFAULT)
        if self._lost_unacked() or self.buf:
            self._keepalive_in(idle)
            return
        elapsed = self.loop._local_ns(self.node) - self.rx_ns
        if elapsed < idle:
            self.probes = 0  # heard since the last probe (C stamps rx_ns alone)
            self._keepalive_in(idle - elapsed)
            return
        user_timeout = self._option(TCP_USER_TIMEOUT) * 1_000_000
        count = self._option(socket.TCP_KEEPCNT) or KEEPCNT_DEFAULT
        if (self.probes and user_timeout and elapsed >= user_timeout) or (
            not user_timeout and self.probes >= count
        ):
            self._timed_out(None)
            return
        self.probes += 1
        self.stack.stats["tcp_probes"] += 1
        self.stack.send(Segment(PROBE, self, self.peer, self.snd_next, b""), self.remote_node)
        self._keepalive_in(self._seconds(socket.TCP_KEEPINTVL, KEEPINTVL_DEFAULT))

    def _lost_unacked(self) -> int:
        """How many segments lost at least once are still unacknowledged;
        the ones acknowledged since are forgotten."""
        unacked = self.unacked
        for seg in [s for s in unacked if s.acked]:
            del unacked[seg]
        return len(unacked)

    def _heard(self) -> None:
        """A segment or an ACK came from the peer: keep-alive starts over."""
        self.rx_ns = self.loop._local_ns(self.node)
        self.probes = 0

    def _reset(self, rst: Segment) -> None:
        if self.state == "syn":
            refused = f"Connect call failed {self.remote!r}"
            self._connect_failed(ConnectionRefusedError(errno.ECONNREFUSED, refused))
            return
        if self.dead:
            return
        expected = self.rcv_next + self.rx_eof
        if rst.seq != expected:
            # Linux (RFC 5961) takes a reset only at the next byte it
            # expects. One ahead (the peer sent more than has arrived) gets
            # a challenge ACK at once; one behind (it answered a segment
            # sent before what arrived since) is dropped, and the segment
            # that drew it goes again a retransmission timeout later. A
            # socket that is gone answers either with a reset that matches.
            if rst.seq > expected:
                self._send_ack()
            else:
                self.loop.call_later(RTO_MIN_NS / 1e9, self._send_ack, context=self.ctx)
            return
        self.stack.stats["tcp_resets"] += 1
        self.stack.log(RESET, self.node, f"reset {ep_text(self.local)} <- {ep_text(self.remote)}")
        if self.rx_eof and not self.buf:
            # After the peer's FIN (CLOSE_WAIT) Linux keeps the reset as the
            # socket's pending error, EPIPE, and a read still gives what
            # arrived, then EOF. asyncio stopped reading at EOF, so only its
            # next write meets the error (_write); the transport stays open.
            self.dead = True
            self._timers_stop()
            self.unacked.clear()
            self.state = "closed"
            self.ooo.clear()
            self.so_error = BrokenPipeError(errno.EPIPE, "Broken pipe")
            return
        if self.rx_eof:
            # Bytes wait to be sent: asyncio's writer meets EPIPE at once.
            self._lose(BrokenPipeError(errno.EPIPE, "Broken pipe"))
            return
        self._lose(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"))

    def _lose(self, exc: BaseException | None) -> None:
        """The connection is over for the kernel: no more segments either way."""
        self.dead = True
        self._timers_stop()
        self.unacked.clear()
        self.state = "closed"
        self.buf.clear()
        self.ooo.clear()
        if self.protocol is not None and self.conn_lost == 0:
            self.conn_lost += 1
            self.closing = True
            self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)
        elif self.protocol is None:
            self._release()

    def _release(self) -> None:
        if self.port_held:
            self.port_held = False
            self.stack.free_port(self.token, self.local[1])

    # -- sending ----------------------------------------------------------------

    def _pump(self) -> None:
        """Hand buffered bytes to the wire while the window allows."""
        s = self._s
        if s.dead or s.peer is None:
            return
        buf = self.buf
        while buf and s.inflight < WINDOW:
            take = min(len(buf), WINDOW - s.inflight)
            if take == len(buf):
                data = bytes(buf)
                buf.clear()
            else:
                with memoryview(buf) as view:
                    data = view[:take].tobytes()
                del buf[:take]
            s.put(data)  # segments whose sizes the seed draws (ext/stream.c)
        if not self.buf:
            if self.eof_wanted and not self.fin_sent:
                self._send_fin()
            if self.closing and self.conn_lost == 0 and self.protocol is not None:
                self.conn_lost += 1
                self.loop.call_soon(self._call_connection_lost, None, context=self.ctx)
        if self.writing_paused and len(self.buf) <= self.low:
            self.writing_paused = False
            self.loop.call_soon(self._resume_writing, context=self.ctx)

    def _send_fin(self) -> None:
        self.fin_sent = True
        if self.peer is not None and not self.dead:
            self.stack.send(Segment(FIN, self, self.peer, self.snd_next, b""), self.remote_node)

    def _wake_drainers(self) -> None:
        drainers, self.drainers = self.drainers, None
        for fut in drainers or ():
            _set_result(fut)

    async def drained(self) -> None:
        """Until the write buffer is below the low-water mark (what
        asyncio's sendfile fallback waits for); ConnectionError once the
        connection is lost."""
        while self.writing_paused and not self.conn_lost:
            fut = self.loop.create_future()
            if self.drainers is None:
                self.drainers = []
            self.drainers.append(fut)
            await fut
        if self.conn_lost:
            raise ConnectionError("Connection closed by peer")

    def _resume_writing(self) -> None:
        if self.drainers:
            self._wake_drainers()
        if self.protocol is not None and not self.writing_paused:
            self._call("protocol.resume_writing() failed", False, self.protocol.resume_writing)

    def _call(self, message: str, fatal: bool, fn: Any, *args: Any) -> tuple[bool, Any]:
        """fn(*args), a protocol method: (True, its result), or (False, None)
        after its exception went to the loop's handler (and, if fatal,
        the connection was aborted), as asyncio's transports do."""
        try:
            return True, fn(*args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if fatal:
                self._fatal(exc, message)
            else:
                self._protocol_error(exc, message)
            return False, None

    def _protocol_error(self, exc: BaseException, message: str) -> None:
        self.loop.call_exception_handler(
            {"message": message, "exception": exc, "transport": self, "protocol": self.protocol}
        )

    def write(self, data: Any) -> None:
        # Bytes the window takes whole, with nothing buffered, go straight
        # to the wire in C; the rest comes back to _write.
        self._s.write(data)

    def _write(self, data: Any) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self.eof_wanted:
            raise RuntimeError("Cannot call write() after write_eof()")
        if not data:
            return
        if self.so_error is not None and not self.conn_lost:
            # The reset kept after the peer's FIN: this write fails, as
            # asyncio's send() does (a fatal write error, connection_lost).
            exc, self.so_error = self.so_error, None
            self._lose(exc)
            return
        if self.conn_lost:
            if self.conn_lost >= LOG_WRITES_AFTER_LOST:
                _asyncio_logger.warning("socket.send() raised exception.")
            self.conn_lost += 1
            return
        self.buf += data
        self._pump()
        if not self.writing_paused and len(self.buf) > self.high:
            self.writing_paused = True
            self._call("protocol.pause_writing() failed", False, self.protocol.pause_writing)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def write_eof(self) -> None:
        if self.closing or self.eof_wanted:
            return
        self.eof_wanted = True
        if not self.buf and not self.dead:
            self._send_fin()

    def can_write_eof(self) -> bool:
        return True

    def get_write_buffer_size(self) -> int:
        return len(self.buf)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (self.low, self.high)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = 64 * 1024 if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self.high, self.low = high, low
        if not self.writing_paused and len(self.buf) > self.high:
            self.writing_paused = True
            self.protocol.pause_writing()

    # -- receiving ------------------------------------------------------------------

    def _receive(self, seg: Segment) -> None:
        seq = seg.seq
        if seq < self.rcv_next or (seg.kind == FIN and self.rx_eof):
            return  # a duplicate
        if seq > self.rcv_next:
            self.ooo.setdefault(seq, seg)
            return
        self._accept_segment(seg)
        while self.rcv_next in self.ooo:
            self._accept_segment(self.ooo.pop(self.rcv_next))

    def _accept_segment(self, seg: Segment) -> None:
        s = self._s
        if seg.kind == FIN:
            s.rx_eof = True
            s.wake()
        elif s.closing and s.conn_lost:
            # The socket is closed: data has nobody to read it.
            s.rcv_next += len(seg.data)
            self.stack._reset_back(seg)
            self._lose(None)
        else:
            s.accept(seg.data)  # counted, queued, the reader woken

    def _deliver_rx(self) -> None:
        """What a readable socket gives the protocol: all that has arrived
        (up to the buffer a BufferedProtocol offers). The reader C
        schedules serves a plain Protocol itself and calls this for the
        rest (ext/stream.c)."""
        s = self._s
        s.rx_scheduled = False
        if self.protocol is None or s.conn_lost or not s.reading:
            return
        if self.rx:
            if isinstance(self.protocol, asyncio.BufferedProtocol):
                n = self._fill_buffer()
                if s.conn_lost:
                    return
            else:
                n = s.take(self.protocol)  # data_received(all of it)
                if n < 0:
                    return  # it raised: the connection was aborted
            if n and self.rx and s.reading and not s.rx_scheduled:
                s.wake()
                return
        self._deliver_eof()

    def _deliver_eof(self) -> None:
        if self.rx_eof and not self.rx and not self.eof_delivered and self.reading:
            self.eof_delivered = True
            ok, keep_open = self._call(
                "Fatal error: protocol.eof_received() call failed.",
                True,
                self.protocol.eof_received,
            )
            if not ok:
                return
            if not keep_open:
                self.close()

    def _fill_buffer(self) -> int:
        ok, buf = self._call(
            "Fatal error: protocol.get_buffer() call failed.", True, _buffer_of, self.protocol
        )
        if not ok:
            return 0
        data = b"".join(self.rx)
        n = min(len(buf), len(data))
        memoryview(buf)[:n] = data[:n]
        self.rx[:] = [data[n:]] if n < len(data) else []
        self._s.consumed(n)
        self._call(
            "Fatal error: protocol.buffer_updated() call failed.",
            True,
            self.protocol.buffer_updated,
            n,
        )
        return n

    def _fatal(self, exc: BaseException, message: str) -> None:
        # As asyncio's _fatal_error: the handler hears it, then the
        # protocol's connection_lost gets it.
        self._protocol_error(exc, message)
        self._abort(exc)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        if self.reading or self.closing:
            return
        self.reading = True
        if (self.rx or self.rx_eof) and not self.rx_scheduled:
            self.rx_scheduled = True
            self.loop.call_soon(self._deliver_rx, context=self.ctx)

    def is_reading(self) -> bool:
        return self.reading and not self.closing

    # -- closing -------------------------------------------------------------------

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if self.closing:
            return
        if self.resets(self.extra.get("socket")):
            self._send_reset(None)  # as Linux: bytes unread, or SO_LINGER 0
            return
        self.closing = True
        self.reading = False
        self.stack.stats["tcp_closes"] += 1
        self.stack.log(CLOSE, self.node, f"close {ep_text(self.local)} -> {ep_text(self.remote)}")
        if not self.buf:
            if not self.fin_sent and not self.dead:
                self._send_fin()
            self.conn_lost += 1
            self.loop.call_soon(self._call_connection_lost, None, context=self.ctx)
        else:
            self.eof_wanted = True

    def abort(self) -> None:
        self._abort(None)

    def _abort(self, exc: BaseException | None) -> None:
        """abort(), or a fatal protocol error: connection_lost(exc). asyncio
        drops the buffer and closes the socket, which Linux ends with a RST
        only when received bytes are unread or SO_LINGER is 0; else a FIN."""
        if self.conn_lost:
            return  # closed already: asyncio's _force_close does nothing then
        if not self.resets(self.extra.get("socket")):
            self._force_close(exc)
            return
        self._send_reset(exc)

    def resets(self, sock: Any) -> bool:
        """Whether closing now resets the connection rather than ending it:
        bytes have arrived that nobody read, or the socket object (`sock`)
        has SO_LINGER on with a zero timeout."""
        if self.rx:
            return True
        opts = getattr(sock, "_opts", None)
        linger = opts.get((socket.SOL_SOCKET, socket.SO_LINGER)) if opts else None
        if isinstance(linger, (bytes, bytearray)) and len(linger) == 8:
            on, seconds = struct.unpack("ii", linger)
            return bool(on) and seconds == 0
        return False

    def _send_reset(self, exc: BaseException | None) -> None:
        """Close with a RST: the peer gets ConnectionResetError."""
        already_lost = self.conn_lost
        self.closing = True
        self.reading = False
        if not self.dead and self.peer is not None and self.state == "open":
            self._send_rst()
        self.stack.log(RESET, self.node, f"abort {ep_text(self.local)} -> {ep_text(self.remote)}")
        self.dead = True
        self.state = "closed"
        self.buf.clear()
        self.rx.clear()  # what nobody read is gone with the socket
        if not already_lost:
            self.conn_lost += 1
            self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)

    def _force_close(self, exc: BaseException | None) -> None:
        """TLS (askew/_net/tls.py): asyncio's SSLProtocol ends a connection on a
        fatal error (handshake failed or timed out, shutdown timed out) with
        this, as on its selector transport: the buffer is dropped, the socket
        closed (a FIN) and connection_lost(exc) called."""
        if self.conn_lost:
            return
        self.buf.clear()
        if not self.closing:
            self.closing = True
            self.reading = False
            self.stack.stats["tcp_closes"] += 1
            self.stack.log(
                CLOSE, self.node, f"close {ep_text(self.local)} -> {ep_text(self.remote)}"
            )
        if not self.fin_sent and not self.dead:
            self._send_fin()
        self.conn_lost += 1
        self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        if self.drainers:
            self._wake_drainers()
        protocol = self.protocol
        self._timers_stop()  # a closed socket sends no keep-alive
        sock = self._extra.get("socket")
        if sock is not None and getattr(sock, "_owner", None) is self:
            sock._owner = None
        try:
            if protocol is not None:
                protocol.connection_lost(exc)
        finally:
            # As asyncio's transports, let go of the protocol: the world log
            # keeps recent segments, and through them their endpoints (a TLS
            # protocol holds a 256 KiB buffer; askew/_net/tls.py).
            self.protocol = None
            self._release()
            server = self.server
            if server is not None:
                self.server = None
                server._detach(self)

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_protocol(self) -> Any:
        return self.protocol


def _buffer_of(protocol: Any) -> Any:
    buf = protocol.get_buffer(-1)
    if not len(buf):
        raise RuntimeError("get_buffer() returned an empty buffer")
    return buf


def start_protocol(ep: Endpoint, protocol_factory: Any) -> None:
    """An accepted connection gets its protocol."""
    protocol = protocol_factory()
    ep.protocol = protocol
    protocol.connection_made(ep)


# Before CPython 3.12.2 (and in 3.11), StreamReaderProtocol reads
# task.exception() of a cancelled handler task in its done callback, which
# raises CancelledError into the loop's exception handler (later versions
# check task.cancelled() first). asyncio.run logs it at shutdown; askew fails
# a run on it, and a run's end cancels every pending handler. Where the
# callback lacks the check, it is replaced by the later behaviour: found by
# reading the callback's code, not the version number.
def _streams_callback_checks_cancelled() -> bool:
    made = asyncio.StreamReaderProtocol.connection_made.__code__
    for const in made.co_consts:
        if getattr(const, "co_name", None) == "callback":
            return "cancelled" in const.co_names
    return True  # no such callback: nothing to mend


STREAMS_CALLBACK_RAISES_ON_CANCEL = not _streams_callback_checks_cancelled()
_STREAMS_CALLBACK = "StreamReaderProtocol.connection_made.<locals>.callback"


def mend_streams_callback(ep: Endpoint) -> None:
    task = getattr(ep.protocol, "_task", None)
    if not isinstance(task, asyncio.Task):
        return
    for cb, _ctx in list(getattr(task, "_callbacks", None) or ()):
        if getattr(cb, "__qualname__", "") == _STREAMS_CALLBACK:
            task.remove_done_callback(cb)
            task.add_done_callback(functools.partial(_streams_callback, cb, ep))


def _streams_callback(original: Any, ep: Endpoint, task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        ep.close()
        return
    original(task)


def _set_result(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _set_exception(fut: asyncio.Future[None], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
