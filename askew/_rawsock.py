# SPDX-License-Identifier: Apache-2.0
"""Simulated socket objects for the loop's low-level methods (docs/sockets.md,
"Low-level sockets").

Inside a world, `socket.socket(AF_INET, SOCK_STREAM or SOCK_DGRAM)` called by
a node's code gives a `RawSocket`: no file descriptor, only what
`loop.sock_connect`, `sock_accept`, `sock_recv(_into)`, `sock_sendall`,
`sock_sendto`, `sock_recvfrom(_into)` and `add_reader`/`add_writer` need.
Underneath it is a TCP `Endpoint` (askew/_sockets.py) or a UDP
`DatagramEndpoint` (askew/_udp.py) whose protocol fills the socket's
receive queue, so the bytes meet the same network as a transport's.
Everything else (the test body, wrap mode, other families, a given
`fileno`) is a real socket and stays refused as before.
"""

from __future__ import annotations

import collections
import contextvars
import errno
import socket
from typing import Any

from . import _core, _sockets, _udp
from ._world import _node_var

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

    def __init__(self, stack: _sockets.Stack, token: int, kind: int) -> None:
        super().__init__(("0.0.0.0", 0), None)
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
        peer = f", raddr={self._remote}" if self._remote else ""
        state = " [closed]" if self._closed else ""
        return f"<askew.RawSocket{state} family=AF_INET type={kind} laddr={self._local}{peer}>"

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
        host, port = _sockets_addr(self._stack, address, True)
        if host not in ("0.0.0.0", _sockets.address_of(self._node)) and not _sockets._is_loopback(
            host
        ):
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
        host, port = self._local

        def accepted() -> _StreamProtocol:
            sock = RawSocket(self._stack, self._token, socket.SOCK_STREAM)
            sock._accepting = self
            return _StreamProtocol(sock)

        coro = _sockets.create_server(
            self._stack, accepted, None if host == "0.0.0.0" else host, port, backlog, False
        )
        server: Any = None
        try:
            coro.send(None)  # never suspends with start_serving=False
        except StopIteration as done:
            server = done.value
        assert server is not None
        self._server = server
        self._local = server.sockets[0].getsockname()
        server._start_serving()

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


def _sockets_addr(stack: _sockets.Stack, address: Any, passive: bool) -> tuple[str, int]:
    if not isinstance(address, tuple) or len(address) != 2:
        raise TypeError(f"AF_INET address must be a pair (host, port), not {address!r}")
    host, port = address
    if host == "":
        host = "0.0.0.0"
    if host == "0.0.0.0":
        return host, _sockets._port_of(port)
    flags = socket.AI_PASSIVE if passive else 0
    info = stack.names.getaddrinfo(host, port, 0, 0, 0, flags)
    return str(info[0][4][0]), int(info[0][4][1])


# ---- socket.socket() in a world -------------------------------------------------


def _make(family: int, kind: int) -> RawSocket | None:
    """A RawSocket when a world's node asks for an IPv4 stream or datagram
    socket, else None (the real class runs, and stays refused)."""
    world = _sockets._world
    if world is None or world._ended or _node_var.get(None) is None:
        return None
    if family not in (-1, socket.AF_INET):
        return None
    kind = socket.SOCK_STREAM if kind == -1 else kind & _TYPE_MASK
    if kind not in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        return None
    stack = _sockets.stack_of(world)
    return RawSocket(stack, stack.caller("socket.socket()"), kind)


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
    host, port = address
    local = sock._local if sock._local[1] else None
    await _sockets.create_connection(sock._stack, lambda: _StreamProtocol(sock), host, port, local)
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
