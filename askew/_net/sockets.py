# SPDX-License-Identifier: Apache-2.0
"""Making simulated sockets and handing them over: socket.socket() and
socket.socketpair() inside a world's node or a wrapped test (a RawSocket;
anything else is the real class, refused for I/O), blocking TLS on one
refused by name, a simulated socket given to asyncio as sock= (a transport
or a server over its endpoint), and sendfile over one (asyncio's fallback:
read the file, send the bytes).
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import functools
import socket
import ssl
from typing import Any

from .._loop.kinds import CONNECT
from .._loop.nodes import TOKEN_SHIFT
from .._loop.refusal import IO_HINT, refuse
from . import udp as _udp
from .endpoint import Endpoint
from .host import current
from .rawsock import RawSocket
from .server import Server
from .sockcalls import (
    UNBOUND,
    StreamProtocol,
    check_open,
    sock_sendall,
)

_RealSocket = socket.socket
_TYPE_MASK = ~(getattr(socket, "SOCK_NONBLOCK", 0) | getattr(socket, "SOCK_CLOEXEC", 0))


# ---- socket.socket() in a world -------------------------------------------------


# The protocols Linux takes for each simulated kind of socket (0: the default).
_PROTOS: dict[tuple[int, int], tuple[int, ...]] = {
    (socket.AF_UNIX, socket.SOCK_STREAM): (0, socket.AF_UNIX),
    (socket.AF_INET, socket.SOCK_STREAM): (0, socket.IPPROTO_TCP),
    (socket.AF_INET6, socket.SOCK_STREAM): (0, socket.IPPROTO_TCP),
    (socket.AF_INET, socket.SOCK_DGRAM): (0, socket.IPPROTO_UDP),
}


def make_socket(family: int, kind: int, proto: int = -1) -> RawSocket | None:
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
            made = make_socket(family, type, proto)
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
    unbound = UNBOUND[socket.AF_UNIX]
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
        protocol = StreamProtocol(sock)
        ep.protocol = protocol
        protocol.connection_made(ep)
    stack.pairs += 1
    stack.stats["tcp_connects"] += 1
    stack.log(CONNECT, node, f"socketpair #{stack.pairs}")
    return socks[0], socks[1]


def _handed_over(sock: RawSocket, expected: int, what: str) -> Any:
    """The endpoint under sock, which a transport now owns: the socket
    object stays (get_extra_info('socket')) but no longer reads."""
    check_open(sock)
    if sock.type != expected:
        raise ValueError(f"A {what} Socket was expected, got {sock!r}")
    if expected == socket.SOCK_DGRAM and sock._ep is None:
        sock._open_datagram(UNBOUND[socket.AF_INET], None)
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
    check_open(sock)
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
    check_open(sock)
    if sock.type != socket.SOCK_STREAM:
        raise ValueError("only SOCK_STREAM type sockets are supported")
    if not fallback:
        raise asyncio.SendfileNotAvailableError("the socket has no native sendfile")
    sendfile_args(file, offset, count)
    return await send_file(file, offset, count, functools.partial(sock_sendall, sock))
