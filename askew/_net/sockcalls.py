# SPDX-License-Identifier: Apache-2.0
"""The loop's low-level methods on a simulated socket (askew/_net/rawsock.py):
sock_connect, sock_accept, sock_recv(_into), sock_sendall, sock_sendto,
sock_recvfrom(_into) and add_reader/add_writer, and what a RawSocket's own
blocking methods run them with (a call that cannot suspend, run to its end
at once; EAGAIN or a refusal for one that would block). The protocols here
fill a socket's receive queue from its endpoint.
"""

from __future__ import annotations

import contextvars
import errno
import socket
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._loop.executor import inline_loop
from .._loop.kinds import CONNECT, REFUSE
from .._loop.refusal import raise_refusal
from . import realsock as _realsock
from . import udp as _udp
from .addr import (
    UNIX,
    WILDCARDS,
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
from .names import resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .rawsock import RawSocket
    from .stack import Stack

RECV_MAX = 65536  # receive queue, in bytes, before the connection stops reading


def ebadf() -> OSError:
    return OSError(errno.EBADF, "Bad file descriptor")


class StreamProtocol:
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


class DatagramProtocol:
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


# Where a socket of each family starts: unbound.
UNBOUND: dict[int, tuple[str, Any]] = {
    socket.AF_INET: ("0.0.0.0", 0),
    socket.AF_INET6: ("::", 0),
    socket.AF_UNIX: (UNIX, ""),
}


def stack_address(
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


# ---- the blocking methods' helpers ---------------------------------------------


_T = TypeVar("_T")


def now(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run one of the loop methods below to its end, without the loop: the
    caller checked that it cannot suspend."""
    try:
        coro.send(None)
    except StopIteration as done:
        value: _T = done.value
        return value
    coro.close()
    raise AssertionError("a blocking method's loop method suspended")


def would_block(sock: RawSocket, name: str, why: str = "") -> None:
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


def connect_locally(sock: RawSocket, address: Any) -> bool:
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
            now(create_unix_connection(stack, None, address))  # raises as Linux
        local: tuple[str, Any] = (UNIX, "")
    else:
        host, port = stack_address(stack, address, False, sock.family)
        if host in WILDCARDS:
            host = loopback_of(host)  # Linux connects the unspecified address locally
        if not (is_loopback(host) or may_bind(stack, node, host)):
            return False
        remote = (host, port)
        lhost = sock._local[0]
        if lhost in WILDCARDS:
            lhost = local_addr_for(stack, node, host)
        local = (lhost, sock._local[1] or stack.ephemeral(sock._token))
        listener = stack.find_listener(node, host, port, local[1])
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
    protocol = StreamProtocol(sock)
    client.protocol = protocol
    protocol.connection_made(client)
    sock._local, sock._remote = client.local, client.remote
    return True


def stream_ep(sock: RawSocket) -> Any:
    """A connected stream socket's endpoint, or the error a send raises."""
    if sock._ep is None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")  # Linux: a send never connected
    if sock._err is not None:
        err, sock._err = sock._err, None  # reported once, as Linux's sock_error()
        raise err
    ep = sock._ep
    if ep.so_error is not None:
        err, ep.so_error = ep.so_error, None  # a reset after the peer's FIN
        raise err
    if ep.is_closing() or ep.dead:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")
    return ep


def peer_of(sock: RawSocket) -> Any:
    if sock._remote is None:
        raise OSError(errno.EDESTADDRREQ, "Destination address required")
    return sock._remote


# ---- the loop's methods ------------------------------------------------------------


def check_open(sock: RawSocket) -> None:
    if sock._closed:
        raise ebadf()


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
    check_open(sock)
    address = _asyncio_address(sock, address)
    if sock.type == socket.SOCK_DGRAM:
        remote = stack_address(sock._stack, address, False)
        if sock._ep is None:
            sock._open_datagram(("0.0.0.0", 0), remote)
        sock._ep.remote = remote
        sock._ep.extra["peername"] = remote
        sock._remote = remote
        return
    stack = sock._stack
    if sock.family != socket.AF_UNIX:
        host, port = stack_address(stack, address, False, sock.family)
    if sock._ep is not None:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    if sock._server is not None:
        raise OSError(errno.EINVAL, "Invalid argument")  # a listening socket
    if sock.family == socket.AF_UNIX:
        await create_unix_connection(stack, lambda: StreamProtocol(sock), address)
    else:
        local = sock._local if sock._local[1] else None
        await create_connection(stack, lambda: StreamProtocol(sock), host, port, local, sock.family)
    ep: Any = sock._ep  # set by the protocol's connection_made
    sock._local = ep.local
    sock._remote = ep.remote


async def sock_accept(sock: RawSocket) -> tuple[RawSocket, tuple[str, int]]:
    check_open(sock)
    if sock._server is None:
        raise OSError(errno.EINVAL, "Invalid argument")
    while not sock._accepted:
        await sock._wait()
        check_open(sock)
    conn = sock._accepted.popleft()
    conn._local = conn._ep.local
    conn._remote = conn._ep.remote
    conn._timeout = 0.0  # asyncio makes it non-blocking
    assert conn._remote is not None
    return conn, conn._remote


async def _stream_ready(sock: RawSocket) -> None:
    check_open(sock)
    if sock.type != socket.SOCK_STREAM:
        return
    if sock._ep is None:
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
    while not (sock._rx or sock._eof or sock._err):
        await sock._wait()
        check_open(sock)


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
        check_open(sock)
        return b""  # Linux answers a zero-length receive at once
    await _stream_ready(sock)
    return _take(sock, nbytes)


async def sock_recv_into(sock: RawSocket, buf: Any) -> int:
    view = _writable(buf, "recv_into")
    if not len(view):
        check_open(sock)
        return 0
    data = await sock_recv(sock, len(view))
    view[: len(data)] = data
    return len(data)


async def sock_sendall(sock: RawSocket, data: Any) -> None:
    check_open(sock)
    data = memoryview(data).tobytes()  # a bytes-like object, or TypeError
    if sock.type == socket.SOCK_DGRAM:
        await sock_sendto(sock, data, peer_of(sock))
        return
    stream_ep(sock).write(data)
    while sock._wpaused and sock._err is None and not sock._closed:
        await sock._wait()  # sendall returns once the kernel took every byte
    check_open(sock)


async def sock_sendto(sock: RawSocket, data: Any, address: Any) -> int:
    check_open(sock)
    if sock.type != socket.SOCK_DGRAM:
        raise OSError(errno.EISCONN, "Transport endpoint is already connected")
    data = memoryview(data).tobytes()  # a bytes-like object, or TypeError
    if sock._ep is None:
        sock._open_datagram(("0.0.0.0", 0), None)
    sock._ep._send(data, address)  # OSError as Linux raises it (EMSGSIZE, ...)
    return len(data)


async def sock_recvfrom(sock: RawSocket, bufsize: int) -> tuple[bytes, Any]:
    bufsize = _size(bufsize, "recvfrom")
    check_open(sock)
    if sock.type != socket.SOCK_DGRAM:
        data = await sock_recv(sock, bufsize)
        return data, None
    if sock._ep is None:
        sock._open_datagram(("0.0.0.0", 0), None)
    while not (sock._dq or sock._err):
        await sock._wait()
        check_open(sock)
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
    check_fd(sock)
    sock._watch[which] = (callback, args, contextvars.copy_context())
    sock._arm(which)


def unwatch(sock: RawSocket, which: str) -> bool:
    check_fd(sock)
    return sock._watch.pop(which, None) is not None


def check_fd(sock: RawSocket) -> None:
    """asyncio's selector loop reads fileno(), -1 once the socket is closed."""
    if sock._fd_closed:
        raise ValueError("Invalid file descriptor: -1")
