# SPDX-License-Identifier: Apache-2.0
"""Simulated socket objects for the loop's low-level methods (docs/sockets.md,
"Low-level sockets").

Inside a world (a node's code) or a wrapped test, `socket.socket()` for an
IPv4, IPv6 or AF_UNIX stream or an IPv4 datagram gives a `RawSocket`, and
`socket.socketpair()` two connected ones: no file descriptor, only what
`loop.sock_connect`, `sock_accept`, `sock_recv(_into)`, `sock_sendall`,
`sock_sendto`, `sock_recvfrom(_into)`, `sock_sendfile` and
`add_reader`/`add_writer` need. Underneath it is a TCP `Endpoint`
(askew/_sockets.py) or a UDP `DatagramEndpoint` (askew/_udp.py) whose
protocol fills the socket's receive queue, so the bytes meet the same
network as a transport's; `sock=` hands that endpoint to a transport.
Everything else (the test body, other families, a given `fileno`) is a
real socket and stays refused as before.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import errno
import functools
import socket
import ssl
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._loop.executor import inline_loop
from .._loop.kinds import CONNECT, REFUSE
from .._loop.nodes import TOKEN_SHIFT
from .._loop.refusal import IO_HINT, raise_refusal, refuse
from . import realsock as _realsock
from . import udp as _udp
from .addr import (
    UNIX,
    WILDCARDS,
    address_of,
    as_sockaddr,
    c_int,
    ep_text,
    is_loopback,
    local_addr_for,
    loopback_of,
    may_bind,
    unix_path,
)
from .connect import create_connection, create_unix_connection
from .endpoint import Endpoint
from .host import current
from .names import resolve
from .server import Server, listen
from .simsock import SimSocket
from .tcp import BACKLOG_DEFAULT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack

_RealSocket = socket.socket
_TYPE_MASK = ~(getattr(socket, "SOCK_NONBLOCK", 0) | getattr(socket, "SOCK_CLOEXEC", 0))
_BLOCKING = frozenset(
    {"accept", "connect", "connect_ex", "recv", "recv_into", "recvfrom", "recvfrom_into"}
    | {"recvmsg", "send", "sendall", "sendto", "sendmsg", "sendfile"}
)
# getsockopt(SOL_SOCKET, name) read off the socket object itself.
_SO_SELF = {
    socket.SO_TYPE: "type",
    socket.SO_DOMAIN: "family",
    socket.SO_PROTOCOL: "proto",
    socket.SO_ACCEPTCONN: "_listening",
}
RECV_MAX = 65536  # receive queue, in bytes, before the connection stops reading


def _ebadf() -> OSError:
    return OSError(errno.EBADF, "Bad file descriptor")


class _StreamProtocol:
    """The protocol under a stream RawSocket: fills its receive queue."""

    def __init__(self, sock: RawSocket) -> None:
        self.sock = sock

    def connection_made(self, transport: Any) -> None:
        sock = self.sock
        sock._ep = transport
        if isinstance(transport, Endpoint):  # a stream: its timers read sock's options
            transport.extra["socket"] = sock
            sock._owner = transport
            transport._timers_changed()
        if sock._accepting is not None:
            sock._accepting._accepted.append(sock)
            sock._accepting._changed()
            sock._accepting = None

    def data_received(self, data: bytes) -> None:
        sock = self.sock
        sock._rx += data
        if len(sock._rx) >= RECV_MAX:
            sock._ep.pause_reading()
        sock._changed()

    def eof_received(self) -> bool:
        self.sock._eof = True
        self.sock._changed()
        return True  # the other way stays open, as a half-closed socket

    def connection_lost(self, exc: BaseException | None) -> None:
        self.sock._eof = True
        if exc is not None:
            self.sock._err = exc
        self.sock._changed()

    def pause_writing(self) -> None:
        self.sock._wpaused = True

    def resume_writing(self) -> None:
        self.sock._wpaused = False
        self.sock._changed()


class _DatagramProtocol:
    def __init__(self, sock: RawSocket) -> None:
        self.sock = sock

    def connection_made(self, transport: Any) -> None:
        pass

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.sock._dq.append((data, addr))
        self.sock._changed()

    def error_received(self, exc: Exception) -> None:
        self.sock._err = exc
        self.sock._changed()

    def connection_lost(self, exc: BaseException | None) -> None:
        pass


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
        super().__init__(_UNBOUND[family], None)
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
            _would_block(self, name)
        raise AttributeError(name)

    # -- the blocking methods: at once where Linux would not wait -------------

    def connect(self, address: Any) -> None:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            _now(sock_connect(self, address))  # sets the peer, never waits
            return
        if self._connecting is not None:
            if not self._connecting.done():
                raise OSError(errno.EALREADY, "Operation already in progress")
            self._connecting = None
        if self._ep is not None:
            raise OSError(errno.EISCONN, "Transport endpoint is already connected")
        if self._server is not None:
            raise OSError(errno.EINVAL, "Invalid argument")  # a listening socket
        if _connect_locally(self, address):
            return
        if self._timeout != 0.0:
            _would_block(self, "connect", "a connection to another node takes the link's latency")
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
            _would_block(self, "accept", "no connection is waiting in the backlog")
        conn, peer = _now(sock_accept(self))
        conn._timeout = None  # blocking, as Python's accept() makes it
        return conn, peer

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self._check_open()
        self._recv_ready("recv", flags)
        return _now(sock_recv(self, bufsize))

    def recv_into(self, buf: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._check_open()
        self._recv_ready("recv_into", flags)
        view = memoryview(buf).cast("B")
        data = _now(sock_recv(self, nbytes or len(view)))
        view[: len(data)] = data
        return len(data)

    def recvfrom(self, bufsize: int, flags: int = 0) -> tuple[bytes, Any]:
        self._check_open()
        self._recv_ready("recvfrom", flags)
        return _now(sock_recvfrom(self, bufsize))

    def recvfrom_into(self, buf: Any, nbytes: int = 0, flags: int = 0) -> tuple[int, Any]:
        self._check_open()
        self._recv_ready("recvfrom_into", flags)
        return _now(sock_recvfrom_into(self, buf, nbytes))

    def _recv_ready(self, name: str, flags: int) -> None:
        """Return if a receive can answer at once (bytes, EOF, an error, or
        an unconnected stream socket's ENOTCONN); else EAGAIN or refused."""
        if flags:
            _would_block(self, name, "receive flags are not simulated")
        if self.type == socket.SOCK_DGRAM:
            if self._ep is None:
                self._open_datagram(("0.0.0.0", 0), None)
            if self._dq or self._err:
                return
        elif self._ep is None or self._rx or self._eof or self._err:
            return
        _would_block(self, name, "nothing has arrived yet")

    def send(self, data: Any, flags: int = 0) -> int:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            return _now(sock_sendto(self, data, _peer_of(self)))
        ep = _stream_ep(self)
        view = memoryview(data).cast("B")
        room: int = ep.high - len(ep.buf)  # after what the peer's window took
        if not len(view):
            return 0
        if room <= 0:
            _would_block(self, "send", "the send buffer is full until the peer reads")
        ep.write(view[:room].tobytes())
        return min(room, len(view))

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._check_open()
        if self.type == socket.SOCK_DGRAM:
            _now(sock_sendto(self, data, _peer_of(self)))
            return
        ep = _stream_ep(self)
        view = memoryview(data).cast("B")
        room = ep.high - len(ep.buf)
        if len(view) > room:
            if self._timeout == 0.0 and room > 0:
                ep.write(view[:room].tobytes())  # as Python's: part, then EAGAIN
            _would_block(
                self, "sendall", "the bytes do not fit the send buffer until the peer reads"
            )
        ep.write(view.tobytes())

    def sendto(self, data: Any, *args: Any) -> int:
        self._check_open()
        if self.type != socket.SOCK_DGRAM:
            raise OSError(errno.EISCONN, "Transport endpoint is already connected")
        return _now(sock_sendto(self, data, args[-1]))

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
        host, port = _sockets_addr(self._stack, address, True, self.family, "bind")
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

        def accepted() -> _StreamProtocol:
            sock = RawSocket(self._stack, self._token, socket.SOCK_STREAM, self.family)
            sock._accepting = self
            return _StreamProtocol(sock)

        self._listen(accepted, backlog)._start_serving()

    def _listen(self, factory: Any, backlog: int) -> Server:
        host, port = self._local
        coro = listen(self._stack, self._token, factory, [host], port, backlog, False)
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
            raise _ebadf()

    def _check_fd(self) -> None:
        """A closed socket's descriptor is gone (one handed to a transport
        or a server lives on there, as asyncio's TransportSocket)."""
        if self._fd_closed:
            raise _ebadf()

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
        udp.bind(ep, host, port)
        ep.protocol = _DatagramProtocol(self)
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


# Where a socket of each family starts: unbound.
_UNBOUND: dict[int, tuple[str, Any]] = {
    socket.AF_INET: ("0.0.0.0", 0),
    socket.AF_INET6: ("::", 0),
    socket.AF_UNIX: (UNIX, ""),
}


def _sockets_addr(
    stack: Stack,
    address: Any,
    passive: bool,
    family: int = socket.AF_INET,
    call: str = "connect",
) -> tuple[str, int]:
    """An AF_INET or AF_INET6 address as the socket module takes it (its
    TypeError, OverflowError, the lookup's gaierror): (address, port)."""
    if family == socket.AF_INET6:
        if not isinstance(address, tuple) or not 2 <= len(address) <= 4:
            raise TypeError(
                f"AF_INET6 address must be a tuple (host, port[, flowinfo[, scopeid]]), "
                f"not {type(address).__name__}"
            )
        host, port = _udp.inet_address(address[:2], call)
        wildcard = "::"
    else:
        host, port = _udp.inet_address(address, call)
        wildcard = "0.0.0.0"
    if host in ("", wildcard):
        return wildcard, port
    flags = socket.AI_PASSIVE if passive else 0
    info = stack.names.getaddrinfo(host, None, family, 0, 0, flags)
    return str(info[0][4][0]), port


# ---- socket.socket() in a world -------------------------------------------------


# The protocols Linux takes for each simulated kind of socket (0: the default).
_PROTOS: dict[tuple[int, int], tuple[int, ...]] = {
    (socket.AF_UNIX, socket.SOCK_STREAM): (0, socket.AF_UNIX),
    (socket.AF_INET, socket.SOCK_STREAM): (0, socket.IPPROTO_TCP),
    (socket.AF_INET6, socket.SOCK_STREAM): (0, socket.IPPROTO_TCP),
    (socket.AF_INET, socket.SOCK_DGRAM): (0, socket.IPPROTO_UDP),
}


def _make(family: int, kind: int, proto: int = -1) -> RawSocket | None:
    """A RawSocket when a world's node or a wrapped test asks for a stream
    socket (IPv4, IPv6, AF_UNIX) or an IPv4 datagram one, else None (the
    real class runs, and stays refused)."""
    stack = current(True)
    if stack is None:
        return None
    family = socket.AF_INET if family == -1 else family
    kind = socket.SOCK_STREAM if kind == -1 else kind & _TYPE_MASK
    proto = 0 if proto == -1 else proto
    protos = _PROTOS.get((family, kind))
    if protos is None:
        return None
    if proto not in protos:
        raise OSError(errno.EPROTONOSUPPORT, "Protocol not supported")
    return RawSocket(stack, stack.caller("socket.socket()"), kind, family, proto)


class _SocketMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, (_RealSocket, RawSocket))

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, (_RealSocket, RawSocket))


class SocketType(_RealSocket, metaclass=_SocketMeta):
    """socket.socket inside a run: a RawSocket for a world's node (IPv4
    stream or datagram, no fileno given), the real class otherwise."""

    def __new__(cls, family: int = -1, type: int = -1, proto: int = -1, fileno: Any = None) -> Any:
        if fileno is None:
            made = _make(family, type, proto)
            if made is not None:
                return made
        elif fileno == -1 and current(True) is not None:
            refuse(
                "socket.socket(fileno=-1)",
                "Pass the socket object itself (sock=..., anyio's from_socket(sock)).",
                "has no descriptor to rebuild: -1 is what a simulated socket's fileno() "
                "and detach() give",
            )
        return _RealSocket.__new__(cls, family, type, proto, fileno)  # type: ignore[call-arg]


_real_wrap_socket = ssl.SSLContext.wrap_socket


def wrap_socket(context: ssl.SSLContext, sock: Any, *args: Any, **kwargs: Any) -> Any:
    """SSLContext.wrap_socket inside a run: refused for a simulated socket
    (blocking TLS has no file descriptor to run OpenSSL's socket I/O on),
    the real method otherwise."""
    if isinstance(sock, RawSocket):
        refuse(
            "ssl.SSLContext.wrap_socket() on a simulated socket",
            "Use TLS on a transport: ssl= on loop.create_connection/create_server "
            "(asyncio.open_connection, start_server) or loop.start_tls.",
            "is blocking TLS, which is not simulated",
        )
    return _real_wrap_socket(context, sock, *args, **kwargs)


# ---- the blocking methods' helpers ---------------------------------------------


_T = TypeVar("_T")


def _now(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run one of the loop methods below to its end, without the loop: the
    caller checked that it cannot suspend."""
    try:
        coro.send(None)
    except StopIteration as done:
        value: _T = done.value
        return value
    coro.close()
    raise AssertionError("a blocking method's loop method suspended")


def _would_block(sock: RawSocket, name: str, why: str = "") -> None:
    """A call that would have to wait: EAGAIN on a non-blocking socket, as
    Linux; refused on a blocking one, which would stall virtual time."""
    if sock._timeout == 0.0 and name != "connect":
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
    loop_name = "connect" if name == "connect_ex" else name.replace("sendto", "sendall")
    because = f" ({why})" if why else ""
    work = getattr(inline_loop(), "_inline_work", None)
    if work is not None:  # urllib or http.client in run_in_executor, say
        because += (
            f", here in executor work {work} run inline on the loop's own thread, "
            "where nothing on the loop (the server it talks to) runs while it waits"
        )
    raise_refusal(
        f"socket.{name}() on a simulated socket would block the loop{because}, "
        "stalling virtual time. Await the loop's method instead "
        f"(loop.sock_{loop_name}(sock, ...)), use a transport, or make the "
        "socket non-blocking (setblocking(False)) and wait with add_reader/add_writer."
    )


def _connect_locally(sock: RawSocket, address: Any) -> bool:
    """connect() to this node itself (loopback, its own address, AF_UNIX):
    as Linux, it is over inside the call, the server's end put in the
    listener's backlog at once, or refused at once. False if the address is
    another node's or the backlog is full: the handshake must wait."""
    stack = sock._stack
    node = sock._node
    if sock.family == socket.AF_UNIX:
        where = unix_path(address)
        remote: tuple[str, Any] = (UNIX, where)
        listener = stack.find_listener(node, UNIX, where)
        if listener is None:
            _now(create_unix_connection(stack, None, address))  # raises as Linux
        local: tuple[str, Any] = (UNIX, "")
    else:
        host, port = _sockets_addr(stack, address, False, sock.family)
        if host in WILDCARDS:
            host = loopback_of(host)  # Linux connects the unspecified address locally
        if not (is_loopback(host) or may_bind(stack, node, host)):
            return False
        remote = (host, port)
        listener = stack.find_listener(node, host, port)
        lhost = sock._local[0]
        if lhost in WILDCARDS:
            lhost = local_addr_for(stack, node, host)
        local = (lhost, sock._local[1] or stack.ephemeral(sock._token))
        if listener is None:
            if stack.one_host:
                _realsock.raise_refusal(remote)
            stack.stats["tcp_refused"] += 1
            stack.log(REFUSE, node, f"refuse {ep_text(local)} -> {ep_text(remote)}")
            refused = f"Connect call failed {as_sockaddr(remote)!r}"
            raise ConnectionRefusedError(errno.ECONNREFUSED, refused)
    assert listener is not None
    if len(listener.pending) >= listener.backlog:
        return False  # a full accept queue drops the SYN: connect waits
    if sock.family != socket.AF_UNIX:
        stack.take_port(sock._token, local[1])
    ctx = contextvars.copy_context()
    client = Endpoint(stack, sock._token, ctx, local, remote, node)
    client.port_held = sock.family != socket.AF_UNIX
    server = Endpoint(stack, listener.token, listener.ctx, remote, local, node)
    client.peer, server.peer = server, client
    client.state = server.state = "open"
    stack.stats["tcp_connects"] += 1
    stack.log(CONNECT, node, f"connect {ep_text(local)} -> {ep_text(remote)}")
    listener.pending.append(server)
    stack.take_port(listener.token, remote[1])
    server.port_held = True
    listener.kick()
    protocol = _StreamProtocol(sock)
    client.protocol = protocol
    protocol.connection_made(client)
    sock._local, sock._remote = client.local, client.remote
    return True


def _stream_ep(sock: RawSocket) -> Any:
    """A connected stream socket's endpoint, or the error a send raises."""
    if sock._ep is None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")  # Linux: a send never connected
    if sock._err is not None:
        err, sock._err = sock._err, None  # reported once, as Linux's sock_error()
        raise err
    if sock._ep.is_closing():
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")
    return sock._ep


def _peer_of(sock: RawSocket) -> Any:
    if sock._remote is None:
        raise OSError(errno.EDESTADDRREQ, "Destination address required")
    return sock._remote


# ---- the loop's methods ------------------------------------------------------------


def _check(sock: RawSocket) -> None:
    if sock._closed:
        raise _ebadf()


def _asyncio_address(sock: RawSocket, address: Any) -> Any:
    """An IP address as asyncio's sock_connect resolves it before the
    socket sees it (_ensure_resolved: a numeric host's port through int())."""
    if sock.family == socket.AF_UNIX or not isinstance(address, tuple):
        return address
    if len(address) < 2:
        raise ValueError(f"not enough values to unpack (expected 2, got {len(address)})")
    info = resolve(sock._stack, address[0], address[1], sock.family, sock.type)
    return info[0][4]


async def sock_connect(sock: RawSocket, address: Any) -> None:
    _check(sock)
    address = _asyncio_address(sock, address)
    if sock.type == socket.SOCK_DGRAM:
        remote = _sockets_addr(sock._stack, address, False)
        if sock._ep is None:
            sock._open_datagram(("0.0.0.0", 0), remote)
        sock._ep.remote = remote
        sock._ep.extra["peername"] = remote
        sock._remote = remote
        return
    stack = sock._stack
    if sock.family != socket.AF_UNIX:
        host, port = _sockets_addr(stack, address, False, sock.family)
    if sock._ep is not None:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    if sock._server is not None:
        raise OSError(errno.EINVAL, "Invalid argument")  # a listening socket
    if sock.family == socket.AF_UNIX:
        await create_unix_connection(stack, lambda: _StreamProtocol(sock), address)
    else:
        local = sock._local if sock._local[1] else None
        await create_connection(
            stack, lambda: _StreamProtocol(sock), host, port, local, sock.family
        )
    ep: Any = sock._ep  # set by the protocol's connection_made
    sock._local = ep.local
    sock._remote = ep.remote


async def sock_accept(sock: RawSocket) -> tuple[RawSocket, tuple[str, int]]:
    _check(sock)
    if sock._server is None:
        raise OSError(errno.EINVAL, "Invalid argument")
    while not sock._accepted:
        await sock._wait()
        _check(sock)
    conn = sock._accepted.popleft()
    conn._local = conn._ep.local
    conn._remote = conn._ep.remote
    conn._timeout = 0.0  # asyncio makes it non-blocking
    assert conn._remote is not None
    return conn, conn._remote


async def _stream_ready(sock: RawSocket) -> None:
    _check(sock)
    if sock.type != socket.SOCK_STREAM:
        return
    if sock._ep is None:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
    while not (sock._rx or sock._eof or sock._err):
        await sock._wait()
        _check(sock)


def _take(sock: RawSocket, n: int) -> bytes:
    if not sock._rx and sock._err is not None:
        err, sock._err = sock._err, None
        raise err
    data = bytes(sock._rx[:n])
    del sock._rx[:n]
    if len(sock._rx) < RECV_MAX and not sock._ep.is_reading() and not sock._ep.is_closing():
        sock._ep.resume_reading()
    return data


def _size(n: Any, call: str) -> int:
    """A receive's size, checked as the socket module checks it."""
    n = c_int(n, "bufsize")
    if n < 0:
        raise ValueError(f"negative buffersize in {call}")
    return int(n)


def _writable(buf: Any, call: str) -> memoryview:
    """A receive's buffer: a writable bytes-like object, as recv_into wants."""
    view = memoryview(buf)
    if view.readonly:
        raise TypeError(f"{call}() argument 1 must be read-write bytes-like object, not bytes")
    return view.cast("B")


async def sock_recv(sock: RawSocket, nbytes: int) -> bytes:
    nbytes = _size(nbytes, "recv")
    if sock.type == socket.SOCK_DGRAM:
        return (await sock_recvfrom(sock, nbytes))[0]
    if nbytes == 0:
        _check(sock)
        return b""  # Linux answers a zero-length receive at once
    await _stream_ready(sock)
    return _take(sock, nbytes)


async def sock_recv_into(sock: RawSocket, buf: Any) -> int:
    view = _writable(buf, "recv_into")
    if not len(view):
        _check(sock)
        return 0
    data = await sock_recv(sock, len(view))
    view[: len(data)] = data
    return len(data)


async def sock_sendall(sock: RawSocket, data: Any) -> None:
    _check(sock)
    data = memoryview(data).tobytes()  # a bytes-like object, or TypeError
    if sock.type == socket.SOCK_DGRAM:
        await sock_sendto(sock, data, _peer_of(sock))
        return
    _stream_ep(sock).write(data)
    while sock._wpaused and sock._err is None and not sock._closed:
        await sock._wait()  # sendall returns once the kernel took every byte
    _check(sock)


async def sock_sendto(sock: RawSocket, data: Any, address: Any) -> int:
    _check(sock)
    if sock.type != socket.SOCK_DGRAM:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    data = memoryview(data).tobytes()  # a bytes-like object, or TypeError
    if sock._ep is None:
        sock._open_datagram(("0.0.0.0", 0), None)
    sock._ep._send(data, address)  # OSError as Linux raises it (EMSGSIZE, ...)
    return len(data)


async def sock_recvfrom(sock: RawSocket, bufsize: int) -> tuple[bytes, Any]:
    bufsize = _size(bufsize, "recvfrom")
    _check(sock)
    if sock.type != socket.SOCK_DGRAM:
        data = await sock_recv(sock, bufsize)
        return data, None
    if sock._ep is None:
        sock._open_datagram(("0.0.0.0", 0), None)
    while not (sock._dq or sock._err):
        await sock._wait()
        _check(sock)
    if sock._err is not None:
        err, sock._err = sock._err, None
        raise err
    data, addr = sock._dq.popleft()
    return data[:bufsize], addr  # the rest of a datagram is lost, as recvfrom cuts it


async def sock_recvfrom_into(sock: RawSocket, buf: Any, nbytes: int = 0) -> tuple[int, Any]:
    view = _writable(buf, "recvfrom_into")
    if _size(nbytes, "recvfrom_into") > len(view):
        raise ValueError("nbytes is greater than the length of the buffer")
    data, addr = await sock_recvfrom(sock, nbytes or len(view))
    view[: len(data)] = data
    return len(data), addr


def watch(sock: RawSocket, which: str, callback: Any, args: tuple[Any, ...]) -> None:
    _fd_of(sock)
    sock._watch[which] = (callback, args, contextvars.copy_context())
    sock._arm(which)


def unwatch(sock: RawSocket, which: str) -> bool:
    _fd_of(sock)
    return sock._watch.pop(which, None) is not None


def _fd_of(sock: RawSocket) -> None:
    """asyncio's selector loop reads fileno(), -1 once the socket is closed."""
    if sock._fd_closed:
        raise ValueError("Invalid file descriptor: -1")


# ---- socketpair() and sock= --------------------------------------------------------

_real_socketpair = socket.socketpair


def socketpair(family: Any = None, type: int = socket.SOCK_STREAM, proto: int = 0) -> Any:
    """socket.socketpair inside a run: two connected AF_UNIX stream
    RawSockets for a world's node or a wrapped test, the real call
    elsewhere (whose sockets stay refused)."""
    stack = current(True)
    if stack is None:
        if family is None:
            return _real_socketpair(type=type, proto=proto)
        return _real_socketpair(family, type, proto)
    family = socket.AF_UNIX if family is None else family
    if family != socket.AF_UNIX:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # as Linux
    if proto not in (0, socket.AF_UNIX):
        raise OSError(errno.EPROTONOSUPPORT, "Protocol not supported")
    if type & _TYPE_MASK != socket.SOCK_STREAM:
        refuse("socket.socketpair(type=SOCK_DGRAM)", IO_HINT, "is not simulated yet")
    token = stack.caller("socket.socketpair()")
    node = token >> TOKEN_SHIFT
    unbound = _UNBOUND[socket.AF_UNIX]
    ctx = contextvars.copy_context()
    socks = []
    eps = []
    for _ in range(2):
        sock = RawSocket(stack, token, socket.SOCK_STREAM, socket.AF_UNIX)
        sock._remote = unbound
        ep = Endpoint(stack, token, ctx, unbound, unbound, node)
        ep.state = "open"
        socks.append(sock)
        eps.append(ep)
    eps[0].peer, eps[1].peer = eps[1], eps[0]
    for sock, ep in zip(socks, eps, strict=True):
        protocol = _StreamProtocol(sock)
        ep.protocol = protocol
        protocol.connection_made(ep)
    stack.pairs += 1
    stack.stats["tcp_connects"] += 1
    stack.log(CONNECT, node, f"socketpair #{stack.pairs}")
    return socks[0], socks[1]


def _handed_over(sock: RawSocket, expected: int, what: str) -> Any:
    """The endpoint under sock, which a transport now owns: the socket
    object stays (get_extra_info('socket')) but no longer reads."""
    _check(sock)
    if sock.type != expected:
        raise ValueError(f"A {what} Socket was expected, got {sock!r}")
    if expected == socket.SOCK_DGRAM and sock._ep is None:
        sock._open_datagram(_UNBOUND[socket.AF_INET], None)
    ep = sock._ep
    if ep is None:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
    sock._ep = None
    sock._closed = True  # closing the transport closes it; sock.close() does nothing
    sock._watch.clear()
    ep.extra["socket"] = sock
    if isinstance(ep, Endpoint):  # a stream's timers read sock's options
        sock._owner = ep
        ep._timers_changed()
    return ep


def adopt_stream(sock: RawSocket, protocol_factory: Any) -> tuple[Any, Any]:
    """create_connection(sock=...), connect_accepted_socket: a connected
    stream RawSocket (a socketpair end, sock_connect's or sock_accept's)
    becomes a transport; what it had received and not yet been read goes
    to the new protocol first."""
    pending, eof, err = bytes(sock._rx), sock._eof, sock._err
    ep = _handed_over(sock, socket.SOCK_STREAM, "Stream")
    sock._rx.clear()
    protocol = protocol_factory()
    ep.protocol = protocol
    protocol.connection_made(ep)
    loop = sock._stack.loop
    if ep.conn_lost:  # the connection was over before the transport came
        loop.call_soon(protocol.connection_lost, err, context=ep.ctx)
        return ep, protocol
    if pending:
        # Unread again: they count against the sender's window until read.
        ep.rx.insert(0, pending)
        if ep.peer is not None and not ep.peer.dead:
            ep.peer.inflight += len(pending)
    if eof and ep.eof_delivered:
        ep.eof_delivered = False
    if not ep.closing:
        ep.reading = True
    if (ep.rx or ep.rx_eof) and not ep.rx_scheduled:
        ep.rx_scheduled = True
        loop.call_soon(ep._deliver_rx, context=ep.ctx)
    return ep, protocol


async def adopt_datagram(sock: RawSocket, protocol_factory: Any) -> tuple[Any, Any]:
    """create_datagram_endpoint(sock=...): the RawSocket's endpoint (bound
    now if it was not) with the datagrams it had queued."""
    queued = list(sock._dq)
    ep = _handed_over(sock, socket.SOCK_DGRAM, "UDP")
    sock._dq.clear()
    for data, addr in reversed(queued):
        ep.rx.appendleft((data, addr))
        ep.rx_bytes += len(data)
    return await _udp.start(ep, protocol_factory)


async def serve(
    sock: RawSocket, protocol_factory: Any, backlog: int, start_serving: bool
) -> Server:
    """create_server(sock=...), create_unix_server(sock=...): listen on
    the RawSocket's address (it may listen already) with this protocol."""
    _check(sock)
    if sock.type != socket.SOCK_STREAM:
        raise ValueError(f"A Stream Socket was expected, got {sock!r}")
    server: Server = sock._server or sock._listen(protocol_factory, backlog)
    server.protocol_factory = protocol_factory
    sock._server = None  # the Server owns the listener now
    sock._closed = True
    if start_serving:
        server._start_serving()
        await asyncio.sleep(0)
    return server


# ---- sendfile: asyncio's fallback, reading the file and sending ------------------

SENDFILE_CHUNK = 16384  # what asyncio's fallback reads at a time, at most


def sendfile_args(file: Any, offset: Any, count: Any) -> None:
    """asyncio's checks of sendfile's arguments, with its messages."""
    if "b" not in getattr(file, "mode", "b"):
        raise ValueError("file should be opened in binary mode")
    if not isinstance(offset, int):
        raise TypeError(f"offset must be a non-negative integer (got {offset!r})")
    if offset < 0:
        raise ValueError(f"offset must be a non-negative integer (got {offset!r})")
    if count is not None:
        if not isinstance(count, int):
            raise TypeError(f"count must be a positive integer (got {count!r})")
        if count <= 0:
            raise ValueError(f"count must be a positive integer (got {count!r})")


async def send_file(file: Any, offset: int, count: Any, send: Any) -> int:
    """Read the file in chunks and `await send(chunk)` each, as asyncio's
    fallback does: from `offset`, or from the file's position when it is 0,
    and leave the position at offset + what was sent."""
    if offset:
        _as_kernel(file.seek, offset)
    total = 0
    try:
        while count is None or total < count:
            n = SENDFILE_CHUNK if count is None else min(SENDFILE_CHUNK, count - total)
            data = _as_kernel(file.read, n)
            if not data:
                break
            await send(data)
            total += len(data)
    finally:
        if total:
            _as_kernel(file.seek, offset + total)
    return total


def _as_kernel(call: Any, arg: int) -> Any:
    """A file read or seek that stands in for the kernel's own (Linux's
    sendfile reads the file without the process): it runs with no running
    loop, so that code watching for blocking calls on the loop's thread
    (blockbuster, as aiohttp's suite installs it) sees none, as with a
    native sendfile."""
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        return call(arg)
    finally:
        asyncio.events._set_running_loop(loop)


async def sock_sendfile(sock: RawSocket, file: Any, offset: int, count: Any, fallback: bool) -> int:
    """loop.sock_sendfile on a simulated socket: asyncio's fallback."""
    _check(sock)
    if sock.type != socket.SOCK_STREAM:
        raise ValueError("only SOCK_STREAM type sockets are supported")
    if not fallback:
        raise asyncio.SendfileNotAvailableError("the socket has no native sendfile")
    sendfile_args(file, offset, count)
    return await send_file(file, offset, count, functools.partial(sock_sendall, sock))
