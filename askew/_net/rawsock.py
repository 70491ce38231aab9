# SPDX-License-Identifier: Apache-2.0
"""Simulated socket objects for the loop's low-level methods (docs/sockets.md,
"Low-level sockets").

Inside a world (a node's code) or a wrapped test, `socket.socket()` for an
IPv4, IPv6 or AF_UNIX stream or an IPv4 datagram gives a `RawSocket`
(askew/_net/sockets.py makes them), and `socket.socketpair()` two connected
ones: no file descriptor, only what the loop's sock_* methods and
add_reader/add_writer need (askew/_net/sockcalls.py). Underneath it is a TCP
`Endpoint` (askew/_net/endpoint.py) or a UDP `DatagramEndpoint`
(askew/_net/udp.py) whose protocol fills the socket's receive queue, so the
bytes meet the same network as a transport's. Its blocking methods run the
loop's methods to their end at once, or raise EAGAIN, or are refused.
"""

from __future__ import annotations

import collections
import contextvars
import errno
import socket
from typing import Any

from .._loop.nodes import TOKEN_SHIFT
from .._loop.refusal import raise_refusal
from . import udp as _udp
from .addr import (
    UNIX,
    address_of,
    as_sockaddr,
    c_int,
    is_loopback,
    may_bind,
    unix_path,
)
from .server import Server, listen
from .simsock import SimSocket
from .sockcalls import (
    UNBOUND,
    DatagramProtocol,
    StreamProtocol,
    connect_locally,
    ebadf,
    now,
    peer_of,
    sock_accept,
    sock_connect,
    sock_recv,
    sock_recvfrom,
    sock_recvfrom_into,
    sock_sendto,
    stack_address,
    stream_ep,
    would_block,
)
from .tcp import BACKLOG_DEFAULT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack

_RealSocket = socket.socket
_SO_REUSEPORT = getattr(socket, "SO_REUSEPORT", 15)


def _refuse_ancillary(sock: RawSocket, name: str) -> None:
    raise_refusal(
        f"socket.{name}() with ancillary data on a simulated socket: descriptors "
        "(SCM_RIGHTS) and credentials are the kernel's objects and cannot pass between "
        "simulated hosts. Send the data alone, or run this test outside the simulation."
    )


_TYPE_MASK = ~(getattr(socket, "SOCK_NONBLOCK", 0) | getattr(socket, "SOCK_CLOEXEC", 0))
_BLOCKING = frozenset(
    {"accept", "connect", "connect_ex", "recv", "recv_into", "recvfrom", "recvfrom_into"}
    | {"send", "sendall", "sendto", "sendfile"}
)
# getsockopt(SOL_SOCKET, name) read off the socket object itself.
_SO_SELF = {
    socket.SO_TYPE: "type",
    socket.SO_DOMAIN: "family",
    socket.SO_PROTOCOL: "proto",
    socket.SO_ACCEPTCONN: "_listening",
}


class RawSocket(SimSocket):
    """A simulated socket object (fileno() is -1); SimSocket's surface plus
    what the loop's low-level methods need."""

    def __init__(
        self,
        stack: Stack,
        token: int,
        kind: int,
        family: int = socket.AF_INET,
        proto: int = 0,
    ) -> None:
        super().__init__(UNBOUND[family], None)
        self._stack = stack
        self._token = token
        self._node = token >> TOKEN_SHIFT
        self.type = socket.SocketKind(kind)
        self.proto = proto  # as given, as the socket module keeps it
        self._closed = False  # closed, or handed to a transport or server
        self._fd_closed = False  # close() was called: the descriptor is gone
        self._bound = False
        self._ep: Any = None  # the Endpoint or DatagramEndpoint underneath
        self._server: Any = None  # a listening stream socket's Server
        self._accepting: RawSocket | None = None  # the listener an accepted one joins
        self._accepted: collections.deque[RawSocket] = collections.deque()
        self._rx = bytearray()
        self._dq: collections.deque[tuple[bytes, Any]] = collections.deque()
        self._eof = False
        self._err: BaseException | None = None
        self._wpaused = False
        self._waiters: list[Any] = []
        self._watch: dict[str, tuple[Any, tuple[Any, ...], Any]] = {}
        self._fired: set[str] = set()
        self._timeout: float | None = None  # blocking, as a new socket on Linux
        self._connecting: Any = None  # a non-blocking connect's task
        self._so_error = 0  # what getsockopt(SO_ERROR) reads once
        self._io_refs = 0  # makefile() files open (socket.socket's name)
        self._close_wanted = False  # close() called while files were open

    def __repr__(self) -> str:
        kind = "SOCK_STREAM" if self.type == socket.SOCK_STREAM else "SOCK_DGRAM"
        peer = f", raddr={as_sockaddr(self._remote)!r}" if self._remote else ""
        state = " [closed]" if self._closed else ""
        where = f"laddr={as_sockaddr(self._local)!r}{peer}"
        return f"<askew.RawSocket{state} family={self.family.name} type={kind} {where}>"

    # -- the socket object's own surface --------------------------------------

    def settimeout(self, value: Any) -> None:
        if value is not None:
            value = float(value)
            if value < 0:
                raise ValueError("Timeout value out of range")
        self._timeout = value

    def gettimeout(self) -> float | None:  # type: ignore[override]
        return self._timeout

    def setblocking(self, flag: bool) -> None:
        self._timeout = None if flag else 0.0

    def getblocking(self) -> bool:
        return self._timeout != 0.0

    def getsockname(self) -> Any:
        self._check_fd()
        return super().getsockname()

    def getpeername(self) -> Any:
        self._check_fd()
        return super().getpeername()

    def setsockopt(self, level: int, name: int, value: Any, *rest: Any) -> None:
        self._check_fd()
        super().setsockopt(level, name, value, *rest)

    def getsockopt(self, level: int, name: int, buflen: int = 0) -> Any:
        self._check_fd()
        if (level, name) == (socket.SOL_SOCKET, socket.SO_ERROR):
            err, self._so_error = self._so_error, 0
            return err
        if level == socket.SOL_SOCKET and name in _SO_SELF and not buflen:
            # What the kernel reads off the socket itself (ssl's wrap_socket
            # checks SO_TYPE first).
            return int(getattr(self, _SO_SELF[name]))
        return super().getsockopt(level, name, buflen)

    @property
    def _listening(self) -> bool:
        return self._server is not None

    def makefile(self, *args: Any, **kwargs: Any) -> Any:
        """socket.socket's own makefile: a file over recv_into and send (so
        a read that would wait is refused as theirs are); the socket closes
        once it and its files are closed, as http.client relies on."""
        self._check_open()
        make: Any = _RealSocket.makefile
        return make(self, *args, **kwargs)

    def _decref_socketios(self) -> None:
        self._io_refs -= 1
        if self._io_refs <= 0 and self._close_wanted:
            self.close()

    def __getattr__(self, name: str) -> Any:
        if name in _BLOCKING:
            would_block(self, name)
        raise AttributeError(name)

    # -- the blocking methods: at once where Linux would not wait -------------

    def connect(self, address: Any) -> None:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            now(sock_connect(self, address))  # sets the peer, never waits
            return
        if self._connecting is not None:
            if not self._connecting.done():
                raise OSError(errno.EALREADY, "Operation already in progress")
            self._connecting = None
        if self._ep is not None:
            raise OSError(errno.EISCONN, "Transport endpoint is already connected")
        if self._server is not None:
            raise OSError(errno.EINVAL, "Invalid argument")  # a listening socket
        if connect_locally(self, address):
            return
        if self._timeout != 0.0:
            would_block(self, "connect", "a connection to another node takes the link's latency")
        # Non-blocking: the handshake goes on; writable (add_writer) once
        # it is over, its outcome in getsockopt(SO_ERROR), as Linux.
        task = self._stack.loop.create_task(sock_connect(self, address))
        task.add_done_callback(self._connected)
        self._connecting = task
        raise BlockingIOError(errno.EINPROGRESS, "Operation now in progress")

    def _connected(self, task: Any) -> None:
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            self._so_error = getattr(exc, "errno", None) or errno.ECONNREFUSED
        self._changed()

    def connect_ex(self, address: Any) -> int:
        try:
            self.connect(address)
        except OSError as exc:
            if exc.errno is None or isinstance(exc, socket.gaierror):
                raise
            return int(exc.errno)
        return 0

    def accept(self) -> tuple[RawSocket, Any]:
        self._check_open()
        if self._server is None:
            raise OSError(errno.EINVAL, "Invalid argument")
        if not self._accepted:
            for listener in self._server.listeners or ():
                if listener.pending:
                    listener.accept()  # the backlog the kernel already holds
        if not self._accepted:
            would_block(self, "accept", "no connection is waiting in the backlog")
        conn, peer = now(sock_accept(self))
        conn._timeout = None  # blocking, as Python's accept() makes it
        return conn, peer

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self._check_open()
        self._recv_ready("recv", flags)
        return now(sock_recv(self, bufsize))

    def recv_into(self, buf: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._check_open()
        self._recv_ready("recv_into", flags)
        view = memoryview(buf).cast("B")
        data = now(sock_recv(self, nbytes or len(view)))
        view[: len(data)] = data
        return len(data)

    def recvfrom(self, bufsize: int, flags: int = 0) -> tuple[bytes, Any]:
        self._check_open()
        self._recv_ready("recvfrom", flags)
        return now(sock_recvfrom(self, bufsize))

    def recvfrom_into(self, buf: Any, nbytes: int = 0, flags: int = 0) -> tuple[int, Any]:
        self._check_open()
        self._recv_ready("recvfrom_into", flags)
        return now(sock_recvfrom_into(self, buf, nbytes))

    def _recv_ready(self, name: str, flags: int) -> None:
        """Return if a receive can answer at once (bytes, EOF, an error, or
        an unconnected stream socket's ENOTCONN); else EAGAIN or refused."""
        if flags:
            would_block(self, name, "receive flags are not simulated")
        if self.type == socket.SOCK_DGRAM:
            if self._ep is None:
                self._open_datagram(("0.0.0.0", 0), None)
            if self._dq or self._err:
                return
        elif self._ep is None or self._rx or self._eof or self._err:
            return
        would_block(self, name, "nothing has arrived yet")

    def send(self, data: Any, flags: int = 0) -> int:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            return now(sock_sendto(self, data, peer_of(self)))
        ep = stream_ep(self)
        view = memoryview(data).cast("B")
        room: int = ep.high - len(ep.buf)  # after what the peer's window took
        if not len(view):
            return 0
        if room <= 0:
            would_block(self, "send", "the send buffer is full until the peer reads")
        ep.write(view[:room].tobytes())
        return min(room, len(view))

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            now(sock_sendto(self, data, peer_of(self)))
            return
        ep = stream_ep(self)
        view = memoryview(data).cast("B")
        room = ep.high - len(ep.buf)
        if len(view) > room:
            if self._timeout == 0.0 and room > 0:
                ep.write(view[:room].tobytes())  # as Python's: part, then EAGAIN
            would_block(
                self, "sendall", "the bytes do not fit the send buffer until the peer reads"
            )
        ep.write(view.tobytes())

    def sendmsg(self, buffers: Any, ancdata: Any = (), flags: int = 0, address: Any = None) -> int:
        """send/sendto of the buffers joined. Ancillary data (descriptors
        passed with SCM_RIGHTS, credentials) cannot cross a simulated
        socket: refused by name, never an endless EAGAIN."""
        self._check_open()
        if list(ancdata):
            _refuse_ancillary(self, "sendmsg")
        data = b"".join(memoryview(b).cast("B").tobytes() for b in buffers)
        if flags:
            would_block(self, "sendmsg", "send flags are not simulated")
        if address is not None:
            return self.sendto(data, address)
        return self.send(data)

    def recvmsg(self, bufsize: int, ancbufsize: int = 0, flags: int = 0) -> Any:
        """recv (recvfrom for a datagram) as recvmsg's 4-tuple: nothing
        ancillary ever arrives (sendmsg refuses to send any)."""
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            data, address = self.recvfrom(bufsize, flags)
        else:
            data, address = self.recv(bufsize, flags), None
        return data, [], 0, address

    def sendto(self, data: Any, *args: Any) -> int:
        self._check_open()
        if self.type != socket.SOCK_DGRAM:
            raise OSError(errno.EISCONN, "Transport endpoint is already connected")
        return now(sock_sendto(self, data, args[-1]))

    def bind(self, address: Any) -> None:
        self._check_open()
        if self.family == socket.AF_UNIX:
            path = unix_path(address)
            if self._bound:
                raise OSError(errno.EINVAL, "Invalid argument")  # bound already
            if self._stack.find_listener(self._node, UNIX, path) is not None:
                raise OSError(errno.EADDRINUSE, "Address already in use")
            self._local = (UNIX, path)
            self._bound = True
            return
        host, port = stack_address(self._stack, address, True, self.family, "bind")
        if self._bound or self._server is not None or self._ep is not None:
            raise OSError(errno.EINVAL, "Invalid argument")  # bound already
        if not may_bind(self._stack, self._node, host):
            raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
        self._bound = True
        if self.type == socket.SOCK_DGRAM:
            if self._ep is not None:
                raise OSError(errno.EINVAL, "Invalid argument")
            self._open_datagram((host, port), None)
        else:
            # Linux picks the ephemeral port at bind: getsockname() shows it
            # (anyio's free_tcp_port_factory loops until it does).
            self._local = (host, port or self._stack.ephemeral(self._token))

    def listen(self, backlog: int = BACKLOG_DEFAULT) -> None:
        self._check_open()
        backlog = c_int(backlog, "backlog")
        if self.type != socket.SOCK_STREAM:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        if self._server is not None:
            return

        def accepted() -> StreamProtocol:
            sock = RawSocket(self._stack, self._token, socket.SOCK_STREAM, self.family)
            sock._accepting = self
            return StreamProtocol(sock)

        self._listen(accepted, backlog)._start_serving()

    def _reuse_port(self) -> bool:
        return bool(self._opts.get((socket.SOL_SOCKET, _SO_REUSEPORT)))

    def _listen(self, factory: Any, backlog: int) -> Server:
        host, port = self._local
        coro = listen(
            self._stack, self._token, factory, [host], port, backlog, False,
            reuse_port=self._reuse_port(),
        )  # fmt: skip
        server: Server | None = None
        try:
            coro.send(None)  # never suspends with start_serving=False
        except StopIteration as done:
            server = done.value
        assert server is not None
        self._server = server
        self._local = server.sockets[0]._local
        return server

    def close(self) -> None:
        if self._closed:
            self._fd_closed = True
            return
        if self._io_refs > 0:  # a makefile() file still reads it
            self._close_wanted = True
            return
        self._closed = self._fd_closed = True
        if self._stack.loop.is_closed():
            # The loop, and with it the host's stack, is gone (a fixture's
            # finalizer closing its socket after the test's loop): closing
            # a socket never raises, and nothing is left to tell.
            self._watch.clear()
            return
        if self._ep is not None:
            if self.type == socket.SOCK_STREAM and (self._rx or self._ep.resets(self)):
                self._ep._send_reset(None)  # as Linux: bytes unread, or SO_LINGER 0
            else:
                self._ep.close()
        if self._server is not None:
            self._server.close()
        self._watch.clear()
        self._changed()

    def detach(self) -> int:
        return -1

    def shutdown(self, how: int) -> None:
        self._check_fd()
        if self._ep is not None and self.type == socket.SOCK_STREAM and how != socket.SHUT_RD:
            self._ep.write_eof()

    def __enter__(self) -> RawSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ebadf()

    def _check_fd(self) -> None:
        """A closed socket's descriptor is gone (one handed to a transport
        or a server lives on there, as asyncio's TransportSocket)."""
        if self._fd_closed:
            raise ebadf()

    def _open_datagram(self, local: tuple[str, int], remote: tuple[str, int] | None) -> None:
        udp = _udp.udp_of(self._stack)
        host, port = local
        if remote is not None and host == "0.0.0.0":
            loop_back = is_loopback(remote[0])
            host = "127.0.0.1" if loop_back else address_of(self._node)
        if port == 0:
            port = udp.ephemeral(self._token)
        ep = _udp.DatagramEndpoint(
            udp, self._token, contextvars.copy_context(), (host, port), remote, False
        )
        ep.reuse_port = self._reuse_port()
        udp.bind(ep, host, port)
        ep.protocol = DatagramProtocol(self)
        self._ep = ep
        self._local = (host, port)

    def readable(self) -> bool:
        if self._closed:
            return False
        return bool(self._rx or self._dq or self._accepted or self._eof or self._err)

    def writable(self) -> bool:
        if self._closed:
            return False
        if self.type == socket.SOCK_DGRAM or self._so_error:
            return True
        return self._ep is not None and (not self._wpaused or self._eof)

    def _changed(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
        for which in ("r", "w"):
            self._arm(which)

    def _arm(self, which: str) -> None:
        if which in self._watch and which not in self._fired:
            ready = self.readable() if which == "r" else self.writable()
            if ready:
                self._fired.add(which)
                ctx = self._watch[which][2]
                self._stack.loop.call_soon(self._fire, which, context=ctx)

    def _fire(self, which: str) -> None:
        """A readiness callback, level-triggered as a selector's: it runs
        again on the next step while the socket stays ready."""
        self._fired.discard(which)
        watch = self._watch.get(which)
        if watch is None:
            return
        ready = self.readable() if which == "r" else self.writable()
        if ready:
            watch[0](*watch[1])
            self._arm(which)

    async def _wait(self) -> None:
        fut = self._stack.loop.create_future()
        self._waiters.append(fut)
        await fut
