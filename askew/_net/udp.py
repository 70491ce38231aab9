# SPDX-License-Identifier: Apache-2.0
"""Simulated UDP: what `loop.create_datagram_endpoint` does inside a world
(docs/sockets.md, "Datagrams").

Each datagram is one `Segment` of kind UDP on the C network, sent over the
link between two nodes exactly as a node message is: it takes the link's
latency and meets its loss, duplication, reordering, partitions and crashes,
and nothing is retransmitted. The destination node's kernel hands it to the
endpoint bound to its port, or, when none is, answers with an ICMP port
unreachable (one more segment, back over the reverse link) that a
*connected* sender sees as `ConnectionRefusedError` through
`error_received`, as Linux and asyncio do. Ports are a namespace of their
own per node incarnation, beside TCP's.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import errno
import socket
import sys
from asyncio.log import logger as _asyncio_logger
from socket import EAI_ADDRFAMILY, gaierror
from typing import Any

from .._loop.kinds import CLOSE, REFUSE
from .._loop.nodes import TOKEN_SHIFT
from .._loop.refusal import IO_HINT, refuse
from .addr import address_of, ep_text, is_loopback, may_bind, node_of_address, refuse_remote
from .names import resolve
from .simsock import SimSocket
from .tcp import EPHEMERAL_HI, EPHEMERAL_LO, ICMP, LOG_WRITES_AFTER_LOST, UDP, Owned, Segment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack

DATAGRAM_MAX = 65507  # IPv4: 65535 - 20 (IP header) - 8 (UDP header)
RCVBUF = 212992  # Linux's default net.core.rmem_default, counted in payload bytes
BROADCAST = "255.255.255.255"

COUNTERS = (
    "udp_sent",
    "udp_received",
    "udp_bytes",
    "udp_no_port",
    "udp_rcvbuf_drops",
    "udp_refused",
)


class Udp:
    """The world's UDP: bound endpoints per (node, port) and ports per
    incarnation. Made on the first datagram endpoint of a run, so a run
    without one keeps its counters as they were."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.bound: dict[tuple[int, int], list[DatagramEndpoint]] = {}
        self.next_port: dict[int, int] = {}
        self.used: dict[int, set[int]] = {}  # token -> ports bound
        self.nodes: dict[str, int] = {}  # address -> node (node_of's cache)
        self.names: dict[str, str] = {}  # host -> address, once resolved
        self.stats = stack.stats
        for name in COUNTERS:
            self.stats[name] = 0

    def ephemeral(self, token: int) -> int:
        used = self.used.setdefault(token, set())
        port = self.next_port.get(token, EPHEMERAL_LO)
        for _ in range(EPHEMERAL_HI - EPHEMERAL_LO + 1):
            nxt = port + 1 if port < EPHEMERAL_HI else EPHEMERAL_LO
            if port not in used:
                self.next_port[token] = nxt
                return port
            port = nxt
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    def live(self, node: int, port: int) -> list[DatagramEndpoint]:
        """The endpoints the node's current incarnation has bound on port."""
        found = self.bound.get((node, port))
        if not found:
            return []
        token = self.stack.token_of(node)
        if len(found) == 1 and found[0].token == token and not found[0].closed:
            return found  # the common case, without a new list
        live = [ep for ep in found if ep.token == token and not ep.closed]
        if len(live) != len(found):
            if live:
                found[:] = live
            else:
                del self.bound[(node, port)]
        return live

    def bind(self, ep: DatagramEndpoint, host: str, port: int) -> None:
        node = ep.node
        for other in self.live(node, port):
            if ep.reuse_port and other.reuse_port:
                continue  # one SO_REUSEPORT group
            if host == "0.0.0.0" or other.local[0] in ("0.0.0.0", host):
                raise OSError(errno.EADDRINUSE, "Address already in use")
        self.used.setdefault(ep.token, set()).add(port)
        self.bound.setdefault((node, port), []).append(ep)

    def unbind(self, ep: DatagramEndpoint) -> None:
        port = ep.local[1]
        used = self.used.get(ep.token)
        if used is not None:
            used.discard(port)
        found = self.bound.get((ep.node, port))
        if found is not None and ep in found:
            found.remove(ep)
            if not found:
                del self.bound[(ep.node, port)]

    def find(self, node: int, addr: str, port: int, src: tuple[str, int]) -> Any:
        """The endpoint a datagram from src to (addr, port) reaches: one
        connected to src first, as Linux scores them; else an unconnected
        one, and in an SO_REUSEPORT group the one src's port picks (Linux
        hashes the addresses: a fixed function of them either way)."""
        open_to_all: list[DatagramEndpoint] = []
        for ep in self.live(node, port):
            host = ep.local[0]
            if host in ("0.0.0.0", addr) or (is_loopback(addr) and is_loopback(host)):
                if ep.remote == src:
                    return ep
                if ep.remote is None:
                    open_to_all.append(ep)
        if not open_to_all:
            return None
        group = [ep for ep in open_to_all if ep.reuse_port]
        if len(group) > 1 and open_to_all[0].reuse_port:
            return group[src[1] % len(group)]
        return open_to_all[0]

    # -- the wire -------------------------------------------------------------

    def node_of(self, addr: str) -> int:
        """The node that owns addr (a node's address, not loopback), cached:
        addresses never move in a run. ENETUNREACH for no node."""
        node = self.nodes.get(addr)
        if node is None:
            if self.stack.one_host:
                refuse_remote(self.stack, f"sendto({addr!r})")
            found = node_of_address(addr)
            if found is None or found >= len(self.stack.world._slots):
                raise OSError(errno.ENETUNREACH, "Network is unreachable")
            node = self.nodes[addr] = found
        return node

    def send(self, ep: DatagramEndpoint, data: bytes, addr: str, port: int) -> None:
        """One datagram from ep to (addr, port): to a node, loopback or, with
        SO_BROADCAST, every node in id order (the sender's own included)."""
        src_addr = ep.local[0]
        if addr == BROADCAST:
            dsts = range(len(self.stack.world._slots))
        elif is_loopback(addr) or addr == "0.0.0.0":
            dsts = range(ep.node, ep.node + 1)
            if src_addr == "0.0.0.0":
                src_addr = "127.0.0.1"
        else:
            node = self.node_of(addr)
            dsts = range(node, node + 1)
        if src_addr == "0.0.0.0":
            src_addr = address_of(ep.node)
        stats = self.stats
        stats["udp_bytes"] += len(data)
        stats["udp_sent"] += len(dsts)
        send_segment = self.stack.wire.send_segment
        for dst in dsts:
            seg = Segment(UDP, ep, None, 0, data)
            seg.src_addr = (src_addr, ep.local[1])
            seg.to = (addr, port) if addr != BROADCAST else (address_of(dst), port)
            send_segment(ep.token, dst, seg)

    def arrive(self, seg: Segment, outcome: int, delivered: bool) -> None:
        """The C network's callback for a UDP or ICMP segment that came due;
        a dropped one is gone (UDP retransmits nothing)."""
        if not delivered:
            return
        if seg.kind == ICMP:
            ep: Any = seg.src  # a DatagramEndpoint
            if not ep.closed and ep.alive() and ep.remote is not None:
                ep.refused()
            return
        addr, port = seg.to
        node = seg.src.node if is_loopback(addr) else self.node_of(addr)
        ep = self.find(node, addr, port, seg.src_addr)
        if ep is None:
            self.stats["udp_no_port"] += 1
            token = self.stack.token_of(node)
            if token < 0:
                return
            self.stack.log(
                REFUSE,
                node,
                f"refuse udp {ep_text(seg.src_addr)} -> {ep_text(seg.to)} (port unreachable)",
            )
            icmp = Segment(ICMP, seg.src, None, 0, b"")
            icmp.src_addr = seg.to
            icmp.to = seg.src_addr
            self.stack.wire.send_segment(token, seg.src.node, icmp)
            return
        ep.received(seg.data, seg.src_addr)


_SENDS_EMPTY = sys.version_info >= (3, 13)  # asyncio 3.13 sends b"" as a datagram


class DatagramEndpoint(Owned, asyncio.DatagramTransport):
    """A bound UDP socket and asyncio's datagram transport in one."""

    def __init__(
        self,
        udp: Udp,
        token: int,
        ctx: Any,
        local: tuple[str, int],
        remote: tuple[str, int] | None,
        allow_broadcast: bool,
    ) -> None:
        asyncio.DatagramTransport.__init__(self)
        Owned.__init__(self, udp.stack, token, ctx)
        self.udp = udp
        self.loop = udp.stack.loop
        self.local = local
        self.remote = remote
        self.broadcast = allow_broadcast
        self.reuse_port = False  # SO_REUSEPORT: a group shares the port
        self.protocol: Any = None
        self.closed = False  # close() or abort() was called
        self.lost = False  # connection_lost has been scheduled
        self.conn_lost = 0
        self.rx: collections.deque[tuple[bytes, tuple[str, int]]] = collections.deque()
        self.rx_bytes = 0
        self.rx_scheduled = False
        self.error: OSError | None = None  # a pending ICMP error (connected only)
        sock = SimSocket(local, remote)
        sock.type = socket.SOCK_DGRAM
        sock.proto = socket.IPPROTO_UDP
        self.extra = self._extra = {"peername": remote, "sockname": local, "socket": sock}

    def __repr__(self) -> str:
        peer = f" -> {ep_text(self.remote)}" if self.remote else ""
        return f"<askew UDP {ep_text(self.local)}{peer}{' closed' if self.closed else ''}>"

    def alive(self) -> bool:
        return self.stack.token_of(self.node) == self.token

    # -- receive ------------------------------------------------------------------

    def received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.rx_bytes + len(data) > RCVBUF:
            self.udp.stats["udp_rcvbuf_drops"] += 1  # a full receive queue drops
            return
        self.udp.stats["udp_received"] += 1
        self.rx.append((data, addr))
        self.rx_bytes += len(data)
        self._schedule()

    def refused(self) -> None:
        """An ICMP port unreachable for this connected socket arrived."""
        self.udp.stats["udp_refused"] += 1
        self.error = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        self._schedule()

    def _schedule(self) -> None:
        if not self.rx_scheduled and self.protocol is not None:
            self.rx_scheduled = True
            self.loop.call_soon(self._read_ready, context=self.ctx)

    def _read_ready(self) -> None:
        """What asyncio's reader does when the socket is readable: the
        pending error first, then every datagram queued, one call each."""
        self.rx_scheduled = False
        if self.lost:
            return
        if self.error is not None:
            exc, self.error = self.error, None
            self.protocol.error_received(exc)
        while self.rx and not self.lost:
            data, addr = self.rx.popleft()
            self.rx_bytes -= len(data)
            self.protocol.datagram_received(data, addr)

    # -- the transport ----------------------------------------------------------

    def sendto(self, data: Any, addr: Any = None) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if not data and not _SENDS_EMPTY:
            return  # asyncio before 3.13 sends nothing for an empty datagram
        if self.remote is not None:
            if addr not in (None, self.remote):
                raise ValueError(f"Invalid address: must be None or {self.remote}")
            addr = self.remote
        if self.closed and self.remote is not None:
            if self.conn_lost >= LOG_WRITES_AFTER_LOST:
                _asyncio_logger.warning("socket.send() raised exception.")
            self.conn_lost += 1
            return
        try:
            self._send(bytes(data), addr)
        except OSError as exc:
            if self.protocol is None:
                raise  # closed and lost: no protocol to tell (asyncio's AttributeError)
            self.protocol.error_received(exc)

    def _send(self, data: bytes, addr: Any) -> None:
        """socket.sendto's checks, then the wire: OSError as Linux raises it."""
        if self.closed and self.protocol is None:
            # asyncio closes the socket when connection_lost runs; until
            # then a datagram still goes out, as there.
            raise OSError(errno.EBADF, "Bad file descriptor")
        host, port = inet_address(addr, "sendto")
        if self.error is not None:  # Linux reports a pending ICMP error on the next send
            exc, self.error = self.error, None
            raise exc
        if len(data) > DATAGRAM_MAX:
            raise OSError(errno.EMSGSIZE, "Message too long")
        if host == "<broadcast>":
            host = BROADCAST
        if host == BROADCAST and not self.broadcast:
            raise PermissionError(errno.EACCES, "Permission denied")
        a = self.udp.names.get(host)
        if a is None:
            if ":" in host:  # an IPv6 address for an IPv4 socket: the lookup's error
                raise gaierror(EAI_ADDRFAMILY, "Address family for hostname not supported")
            a = host if host == BROADCAST else self.stack.names.host_to_addr(host)
            self.udp.names[host] = a  # names never change in a run
        if port == 0:
            raise OSError(errno.EINVAL, "Invalid argument")  # Linux: no datagram to port 0
        if not self.alive():
            return  # a dead incarnation's socket sends nothing
        self.udp.send(self, data, a, port)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.udp.unbind(self)
        self.stack.log(CLOSE, self.node, f"close udp {ep_text(self.local)}")
        self.rx.clear()
        self.rx_bytes = 0
        self.conn_lost += 1
        self.lost = True
        self.loop.call_soon(self._connection_lost, None, context=self.ctx)

    def abort(self) -> None:
        self.close()

    def _connection_lost(self, exc: BaseException | None) -> None:
        protocol, self.protocol = self.protocol, None
        if protocol is not None:
            protocol.connection_lost(exc)

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0  # every datagram goes to the wire at once

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (64 * 1024, 16 * 1024)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_protocol(self) -> Any:
        return self.protocol


def udp_of(stack: Stack) -> Udp:
    udp: Udp | None = stack.udp
    if udp is None:
        udp = stack.udp = Udp(stack)
    return udp


def inet_address(addr: Any, call: str) -> tuple[str, int]:
    """An AF_INET address as the socket module takes it (its TypeError and
    OverflowError): a (host, port) pair, the host a str or bytes, the port
    an int in 0-65535."""
    if not isinstance(addr, tuple):
        raise TypeError(f"{call}(): AF_INET address must be tuple, not {type(addr).__name__}")
    if len(addr) != 2:
        raise TypeError("AF_INET address must be a pair (host, port)")
    host, port = addr
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode("ascii", "surrogateescape")
    elif not isinstance(host, str):
        raise TypeError(f"str, bytes or bytearray expected, not {type(host).__name__}")
    if isinstance(port, float) or not hasattr(port, "__index__"):
        raise TypeError(f"'{type(port).__name__}' object cannot be interpreted as an integer")
    if not 0 <= port.__index__() <= 65535:
        raise OverflowError(f"{call}(): port must be 0-65535.")
    return host, int(port.__index__())


def _resolve(stack: Stack, what: Any, passive: bool, proto: int) -> tuple[str, int]:
    """local_addr or remote_addr as asyncio resolves it (_ensure_resolved),
    then bound or connected (the socket module's checks)."""
    if not isinstance(what, tuple) or len(what) != 2:
        raise TypeError("2-tuple is expected")  # asyncio's check
    host, port = what
    if host == "<broadcast>":
        return BROADCAST, int(port)
    flags = socket.AI_PASSIVE if passive else 0
    info = resolve(stack, host, port, 0, socket.SOCK_DGRAM, flags, proto)
    addr, p = info[0][4][:2]
    if ":" in addr:
        refuse(f"create_datagram_endpoint({what!r})", IO_HINT, "over IPv6 is not simulated yet")
    return inet_address((addr, p), "bind" if passive else "connect")


async def create_datagram_endpoint(
    stack: Stack,
    protocol_factory: Any,
    local_addr: Any,
    remote_addr: Any,
    family: int,
    reuse_port: Any,
    allow_broadcast: Any,
    proto: int = 0,
) -> tuple[DatagramEndpoint, Any]:
    token = stack.caller(f"create_datagram_endpoint({local_addr!r}, {remote_addr!r})")
    node = token >> TOKEN_SHIFT
    if family not in (0, socket.AF_INET):
        raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")
    if local_addr is None and remote_addr is None and family == 0:
        raise ValueError("unexpected address family")  # asyncio's: no address, no family
    udp = udp_of(stack)
    if local_addr is not None:
        host, port = _resolve(stack, local_addr, True, proto)
        if not may_bind(stack, node, host):
            raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
    else:
        host, port = "0.0.0.0", 0
    remote = _resolve(stack, remote_addr, False, proto) if remote_addr is not None else None
    if remote is not None and stack.one_host and not is_loopback(remote[0]):
        refuse_remote(stack, f"create_datagram_endpoint(remote_addr={remote_addr!r})")
    if remote is not None and host == "0.0.0.0":
        # connect() picks the source address the route gives.
        host = "127.0.0.1" if is_loopback(remote[0]) else address_of(node)
    if port == 0:
        port = udp.ephemeral(token)
    ctx = contextvars.copy_context()
    ep = DatagramEndpoint(udp, token, ctx, (host, port), remote, bool(allow_broadcast))
    ep.reuse_port = bool(reuse_port)
    udp.bind(ep, host, port)
    return await start(ep, protocol_factory)


async def start(ep: DatagramEndpoint, protocol_factory: Any) -> tuple[DatagramEndpoint, Any]:
    """Give a bound endpoint its protocol: as asyncio does, connection_made
    runs soon, then the caller wakes (datagrams queued meanwhile wait)."""
    loop = ep.loop
    protocol = protocol_factory()
    ep.protocol = protocol
    waiter = loop.create_future()

    def made() -> None:
        protocol.connection_made(ep)
        if not waiter.done():
            waiter.set_result(None)

    ep.rx_scheduled = True  # nothing is read before connection_made
    loop.call_soon(made, context=ep.ctx)
    try:
        await waiter
    except BaseException:
        ep.close()
        raise
    finally:
        ep.rx_scheduled = False
    if ep.rx or ep.error is not None:
        ep._schedule()
    return ep, protocol
