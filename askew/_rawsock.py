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
from typing import Any

from . import _core, _sockets, _udp
from ._world import _KIND_CONNECT

_RealSocket = socket.socket
_TYPE_MASK = ~(getattr(socket, "SOCK_NONBLOCK", 0) | getattr(socket, "SOCK_CLOEXEC", 0))
_BLOCKING = frozenset(
    {"accept", "connect", "connect_ex", "recv", "recv_into", "recvfrom", "recvfrom_into"}
    | {"recvmsg", "send", "sendall", "sendto", "sendmsg", "sendfile"}
)
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


class RawSocket(_sockets.SimSocket):
    """A simulated socket object (fileno() is -1); SimSocket's surface plus
    what the loop's low-level methods need."""

    def __init__(
        self, stack: _sockets.Stack, token: int, kind: int, family: int = socket.AF_INET
    ) -> None:
        super().__init__(_UNBOUND[family], None)
        self._stack = stack
        self._token = token
        self._node = token >> _core.NODE_TOKEN_SHIFT
        self.type = socket.SocketKind(kind)
        self.proto = socket.IPPROTO_TCP if kind == socket.SOCK_STREAM else socket.IPPROTO_UDP
        self._closed = False
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

    def __repr__(self) -> str:
        kind = "SOCK_STREAM" if self.type == socket.SOCK_STREAM else "SOCK_DGRAM"
        peer = f", raddr={self.getpeername()!r}" if self._remote else ""
        state = " [closed]" if self._closed else ""
        where = f"laddr={self.getsockname()!r}{peer}"
        return f"<askew.RawSocket{state} family={self.family.name} type={kind} {where}>"

    # -- the socket object's own surface --------------------------------------

    def settimeout(self, value: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name in _BLOCKING:
            from ._loop import _raise_refusal

            _raise_refusal(
                f"socket.{name}() on a simulated socket would block the loop. Use "
                f"the loop's methods (loop.sock_{'connect' if name == 'connect_ex' else name}"
                "(sock, ...)), or a transport."
            )
        raise AttributeError(name)

    def bind(self, address: Any) -> None:
        self._check_open()
        if self.family == socket.AF_UNIX:
            path = _sockets.unix_path(address)
            if self._stack.find_listener(self._node, _sockets.UNIX, path) is not None:
                raise OSError(errno.EADDRINUSE, "Address already in use")
            self._local = (_sockets.UNIX, path)
            return
        host, port = _sockets_addr(self._stack, address, True, self.family)
        if not _sockets._own(self._stack, self._node, host):
            raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")
        if self.type == socket.SOCK_DGRAM:
            if self._ep is not None:
                raise OSError(errno.EINVAL, "Invalid argument")
            self._open_datagram((host, port), None)
        else:
            self._local = (host, port)

    def listen(self, backlog: int = _sockets.BACKLOG_DEFAULT) -> None:
        self._check_open()
        if self.type != socket.SOCK_STREAM:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        if self._server is not None:
            return

        def accepted() -> _StreamProtocol:
            sock = RawSocket(self._stack, self._token, socket.SOCK_STREAM, self.family)
            sock._accepting = self
            return _StreamProtocol(sock)

        self._listen(accepted, backlog)._start_serving()

    def _listen(self, factory: Any, backlog: int) -> _sockets.Server:
        host, port = self._local
        coro = _sockets._listen(self._stack, self._token, factory, [host], port, backlog, False)
        server: _sockets.Server | None = None
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
            return
        self._closed = True
        if self._ep is not None:
            self._ep.close()
        if self._server is not None:
            self._server.close()
        self._watch.clear()
        self._changed()

    def detach(self) -> int:
        return -1

    def shutdown(self, how: int) -> None:
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

    def _open_datagram(self, local: tuple[str, int], remote: tuple[str, int] | None) -> None:
        udp = _udp.udp_of(self._stack)
        host, port = local
        if remote is not None and host == "0.0.0.0":
            loop_back = _sockets._is_loopback(remote[0])
            host = "127.0.0.1" if loop_back else _sockets.address_of(self._node)
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
        if self.type == socket.SOCK_DGRAM:
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
    socket.AF_UNIX: (_sockets.UNIX, ""),
}


def _sockets_addr(
    stack: _sockets.Stack, address: Any, passive: bool, family: int = socket.AF_INET
) -> tuple[str, int]:
    v6 = family == socket.AF_INET6
    if not isinstance(address, tuple) or not (len(address) == 2 or (v6 and 2 <= len(address) <= 4)):
        if v6:
            raise TypeError(
                f"AF_INET6 address must be a tuple (host, port[, flowinfo[, scopeid]]), "
                f"not {address!r}"
            )
        raise TypeError(f"AF_INET address must be a pair (host, port), not {address!r}")
    host, port = address[0], address[1]
    wildcard = "::" if v6 else "0.0.0.0"
    if host in ("", wildcard):
        return wildcard, _sockets._port_of(port)
    flags = socket.AI_PASSIVE if passive else 0
    info = stack.names.getaddrinfo(host, port, family, 0, 0, flags)
    return str(info[0][4][0]), int(info[0][4][1])


# ---- socket.socket() in a world -------------------------------------------------


def _make(family: int, kind: int) -> RawSocket | None:
    """A RawSocket when a world's node or a wrapped test asks for a stream
    socket (IPv4, IPv6, AF_UNIX) or an IPv4 datagram one, else None (the
    real class runs, and stays refused)."""
    stack = _sockets.current(True)
    if stack is None:
        return None
    family = socket.AF_INET if family == -1 else family
    kind = socket.SOCK_STREAM if kind == -1 else kind & _TYPE_MASK
    if kind == socket.SOCK_STREAM and family in _UNBOUND:
        return RawSocket(stack, stack.caller("socket.socket()"), kind, family)
    if kind == socket.SOCK_DGRAM and family == socket.AF_INET:
        return RawSocket(stack, stack.caller("socket.socket()"), kind)
    return None


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
            made = _make(family, type)
            if made is not None:
                return made
        return _RealSocket.__new__(cls, family, type, proto, fileno)  # type: ignore[call-arg]


# ---- the loop's methods ------------------------------------------------------------


def _check(sock: RawSocket) -> None:
    if sock._closed:
        raise _ebadf()


async def sock_connect(sock: RawSocket, address: Any) -> None:
    _check(sock)
    if sock.type == socket.SOCK_DGRAM:
        remote = _sockets_addr(sock._stack, address, False)
        if sock._ep is None:
            sock._open_datagram(("0.0.0.0", 0), remote)
        sock._ep.remote = remote
        sock._ep.extra["peername"] = remote
        sock._remote = remote
        return
    if sock._ep is not None:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    if sock._server is not None:
        raise OSError(errno.EINVAL, "Invalid argument")  # a listening socket
    stack = sock._stack
    if sock.family == socket.AF_UNIX:
        await _sockets.create_unix_connection(stack, lambda: _StreamProtocol(sock), address)
    else:
        host, port = _sockets_addr(stack, address, False, sock.family)
        local = sock._local if sock._local[1] else None
        await _sockets.create_connection(
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


async def sock_recv(sock: RawSocket, nbytes: int) -> bytes:
    if sock.type == socket.SOCK_DGRAM:
        return (await sock_recvfrom(sock, nbytes))[0]
    await _stream_ready(sock)
    return _take(sock, nbytes)


async def sock_recv_into(sock: RawSocket, buf: Any) -> int:
    view = memoryview(buf).cast("B")
    data = await sock_recv(sock, len(view))
    view[: len(data)] = data
    return len(data)


async def sock_sendall(sock: RawSocket, data: Any) -> None:
    _check(sock)
    if sock.type == socket.SOCK_DGRAM:
        if sock._remote is None:
            raise OSError(errno.EDESTADDRREQ, "Destination address required")
        await sock_sendto(sock, data, sock._remote)
        return
    if sock._ep is None:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
    if sock._err is not None:
        raise sock._err
    if sock._ep.is_closing():
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")
    sock._ep.write(bytes(data))
    while sock._wpaused and sock._err is None and not sock._closed:
        await sock._wait()  # sendall returns once the kernel took every byte
    _check(sock)


async def sock_sendto(sock: RawSocket, data: Any, address: Any) -> int:
    _check(sock)
    if sock.type != socket.SOCK_DGRAM:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    if sock._ep is None:
        sock._open_datagram(("0.0.0.0", 0), None)
    data = bytes(data)
    sock._ep._send(data, address)  # OSError as Linux raises it (EMSGSIZE, ...)
    return len(data)


async def sock_recvfrom(sock: RawSocket, bufsize: int) -> tuple[bytes, Any]:
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
    view = memoryview(buf).cast("B")
    data, addr = await sock_recvfrom(sock, nbytes or len(view))
    view[: len(data)] = data
    return len(data), addr


def watch(sock: RawSocket, which: str, callback: Any, args: tuple[Any, ...]) -> None:
    _check(sock)
    sock._watch[which] = (callback, args, contextvars.copy_context())
    sock._arm(which)


def unwatch(sock: RawSocket, which: str) -> bool:
    return sock._watch.pop(which, None) is not None


# ---- socketpair() and sock= --------------------------------------------------------

_real_socketpair = socket.socketpair


def socketpair(family: Any = None, type: int = socket.SOCK_STREAM, proto: int = 0) -> Any:
    """socket.socketpair inside a run: two connected AF_UNIX stream
    RawSockets for a world's node or a wrapped test, the real call
    elsewhere (whose sockets stay refused)."""
    stack = _sockets.current(True)
    if stack is None:
        if family is None:
            return _real_socketpair(type=type, proto=proto)
        return _real_socketpair(family, type, proto)
    family = socket.AF_UNIX if family is None else family
    if family != socket.AF_UNIX:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # as Linux
    if type & _TYPE_MASK != socket.SOCK_STREAM:
        from ._loop import _IO_HINT, _refuse

        _refuse("socket.socketpair(type=SOCK_DGRAM)", _IO_HINT, "is not simulated yet")
    token = stack.caller("socket.socketpair()")
    node = token >> _core.NODE_TOKEN_SHIFT
    unbound = _UNBOUND[socket.AF_UNIX]
    ctx = contextvars.copy_context()
    socks = []
    eps = []
    for _ in range(2):
        sock = RawSocket(stack, token, socket.SOCK_STREAM, socket.AF_UNIX)
        sock._remote = unbound
        ep = _sockets.Endpoint(stack, token, ctx, unbound, unbound, node)
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
    stack.log(_KIND_CONNECT, node, f"socketpair #{stack.pairs}")
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
) -> _sockets.Server:
    """create_server(sock=...), create_unix_server(sock=...): listen on
    the RawSocket's address (it may listen already) with this protocol."""
    _check(sock)
    if sock.type != socket.SOCK_STREAM:
        raise ValueError(f"A Stream Socket was expected, got {sock!r}")
    server: _sockets.Server = sock._server or sock._listen(protocol_factory, backlog)
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
