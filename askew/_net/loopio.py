# SPDX-License-Identifier: Apache-2.0
"""SimLoop's socket, name and fd methods, served by the simulated network.

askew/_loop/hostio.py's SimLoop methods ask the `HostIO` installed there;
this module is that HostIO (its functions take the loop first, the keywords
as given) and installs itself when imported. Each call checks its arguments
as asyncio does, then runs on the running world's stack (or wrap mode's one
host), or is refused: outside a world, for a real socket, or for an option
not built yet (docs/sockets.md).
"""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from .._loop import hostio
from .._loop.refusal import IO_HINT, refuse
from .._loop.text import safe_repr
from . import connect as _connect_mod
from . import rawsock as _rawsock
from . import server as _server
from . import sockcalls as _sockcalls
from . import sockets as _sockets
from . import tls as _tls
from . import udp as _udp
from .host import active, drop_host
from .stack import Stack
from .tcp import BACKLOG_DEFAULT


def reset(loop: Any) -> None:
    """The loop is reset or closed: wrap mode's host and its sockets go."""
    drop_host(loop)


# Keyword arguments of create_connection/create_server that the simulated
# TCP accepts (with their default meaning, or no effect on a simulated
# socket); anything else set (ssl, sock, family=AF_INET6, ...) is a part not
# built yet, refused by name (docs/sockets.md).
_CONNECT_IGNORED = frozenset(
    {"local_addr", "happy_eyeballs_delay", "interleave", "all_errors", "proto", "flags"}
    | {"family", "sock", "ssl_handshake_timeout", "ssl_shutdown_timeout"}
)
_SERVE_IGNORED = frozenset(
    {"backlog", "start_serving", "reuse_address", "reuse_port", "flags", "keep_alive"}
    | {"proto", "family"}
    | {"sock", "ssl_handshake_timeout", "ssl_shutdown_timeout", "cleanup_socket"}
)
_DATAGRAM_IGNORED = frozenset({"proto", "flags", "allow_broadcast", "sock", "reuse_port"})


# Each socket method's keywords on this Python (asyncio's signature): any
# other is asyncio's TypeError, not an option askew has yet to build.
_KEYWORDS = {
    name: frozenset(inspect.signature(getattr(asyncio.BaseEventLoop, name)).parameters)
    for name in (
        "create_connection",
        "create_server",
        "create_unix_connection",
        "create_unix_server",
        "create_datagram_endpoint",
        "connect_accepted_socket",
    )
}


def _check_keywords(method: str, kwargs: dict[str, Any]) -> None:
    for name in kwargs:
        if name not in _KEYWORDS[method]:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")


def _simulated(sock: Any, call: str) -> None:
    """A real socket is refused; only askew's simulated ones are served."""
    if not isinstance(sock, _rawsock.RawSocket):
        refuse(call, _SOCK_HINT, f"given the real socket {safe_repr(sock)} would do real I/O")


_SOCK_HINT = (
    "Only sockets made inside the run are simulated: socket.socket() and "
    "socket.socketpair() called from a node's code or a wrapped test (docs/sockets.md)."
)


_BOTH_HOST = "host/port and sock can not be specified at the same time"
_BOTH_PATH = "path and sock can not be specified at the same time"


def _sock_arg(call: str, kwargs: dict[str, Any], ignored: frozenset[str], clash: str | None) -> Any:
    """The sock= argument, if given: checked as asyncio does (`clash` is
    the ValueError when an address came too) and simulated, or refused."""
    sock = kwargs.get("sock")
    if sock is None:
        return None
    _refuse_unbuilt(call, kwargs, ignored)
    if clash is not None:
        raise ValueError(clash)
    _simulated(sock, call.split(" ", 1)[0].split("(", 1)[0] + "(sock=...)")
    return sock


def _refuse_unbuilt(call: str, kwargs: dict[str, Any], ignored: frozenset[str]) -> None:
    for name, value in kwargs.items():
        # None or False is the option left off (reuse_port=False, as anyio
        # passes it): nothing to build.
        if name in ignored or value is None or value is False:
            continue
        if name == "family" and value in (0, socket.AF_INET, socket.AF_UNSPEC):
            continue
        refuse(
            call,
            "Simulated TCP covers IPv4 streams, IPv6 loopback, TLS and sock= with a "
            "simulated socket; the option named is not built yet (docs/sockets.md).",
            f"with {name}={value!r} is not simulated yet",
        )


async def _connect(stack: Stack, protocol_factory: Any, tls: Any, connect: Any) -> Any:
    """create_connection and its unix twin, by address: `connect(factory)`
    is the one plain connect, with every argument the call took; TLS runs
    its handshake over that very connect (askew/_net/tls.py), so it reaches the
    same address the plain call would (family= was once lost there)."""
    if tls is not None:
        return await _tls.create_connection(stack, protocol_factory, tls, connect)
    return await connect(protocol_factory)


async def _given_stream(sock: Any, protocol_factory: Any, tls: Any) -> Any:
    """create_connection(sock=...) and its unix twin: a transport over the
    given simulated socket, with TLS if asked (askew/_net/tls.py)."""
    if tls is not None:
        return await _tls.adopt(sock, protocol_factory, tls)
    return _sockets.adopt_stream(sock, protocol_factory)


async def _given_listener(
    sock: Any, protocol_factory: Any, backlog: int, start_serving: bool, tls: Any
) -> Any:
    """create_server(sock=...) and its unix twin: a server on the given
    simulated listening socket, with TLS if asked."""
    if tls is not None:
        return await _tls.serve(sock, protocol_factory, backlog, start_serving, tls)
    return await _sockets.serve(sock, protocol_factory, backlog, start_serving)


async def getaddrinfo(
    loop: Any, host: Any, port: Any, family: int, type: int, proto: int, flags: int
) -> Any:
    stack = active(loop)
    if stack is None:
        refuse(f"getaddrinfo({host!r}, {port!r})", IO_HINT)
    return stack.names.getaddrinfo(host, port, family, type, proto, flags)


async def getnameinfo(loop: Any, sockaddr: Any, flags: int) -> Any:
    stack = active(loop)
    if stack is None:
        refuse(f"getnameinfo({sockaddr!r})", IO_HINT)
    return stack.names.getnameinfo(sockaddr, flags)


def _socket_stack(loop: Any, call: str, kwargs: dict[str, Any], ignored: frozenset[str]) -> Stack:
    """The running world's socket stack (TCP and UDP alike); a refusal
    outside a world (a bare loop, wrap mode) or for an option not built
    yet."""
    stack = active(loop)
    if stack is None:
        refuse(call, IO_HINT)
    _refuse_unbuilt(call, kwargs, ignored)
    return stack


async def create_connection(
    loop: Any, protocol_factory: Any, host: Any, port: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("create_connection", kwargs)
    call = f"create_connection({host!r}, {port!r}) (and asyncio.open_connection)"
    tls = _tls.take_options(kwargs, host, server_side=False)  # TLS: askew/_net/tls.py
    clash = _BOTH_HOST if host is not None or port is not None else None
    sock = _sock_arg(call, kwargs, _CONNECT_IGNORED, clash)
    if sock is not None:
        return await _given_stream(sock, protocol_factory, tls)
    stack = _socket_stack(loop, call, kwargs, _CONNECT_IGNORED)
    local, family = kwargs.get("local_addr"), kwargs.get("family", 0)
    proto, flags = kwargs.get("proto", 0), kwargs.get("flags", 0)
    all_errors = bool(kwargs.get("all_errors", False))

    def connect(factory: Any) -> Any:
        return _connect_mod.create_connection(
            stack, factory, host, port, local, family, proto, flags, all_errors
        )

    return await _connect(stack, protocol_factory, tls, connect)


async def create_server(
    loop: Any, protocol_factory: Any, host: Any, port: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("create_server", kwargs)
    call = f"create_server({host!r}, {port!r}) (and asyncio.start_server)"
    tls = _tls.take_options(kwargs, host, server_side=True)  # TLS: askew/_net/tls.py
    backlog = kwargs.get("backlog", BACKLOG_DEFAULT)
    start_serving = kwargs.get("start_serving", True)
    clash = _BOTH_HOST if host is not None or port is not None else None
    sock = _sock_arg(call, kwargs, _SERVE_IGNORED, clash)
    if sock is not None:
        return await _given_listener(sock, protocol_factory, backlog, start_serving, tls)
    stack = _socket_stack(loop, call, kwargs, _SERVE_IGNORED)
    if tls is not None:
        protocol_factory = _tls.server_factory(stack, protocol_factory, tls)
    server = await _server.create_server(
        stack,
        protocol_factory,
        host,
        port,
        backlog,
        start_serving,
        kwargs.get("family", 0),
        None if tls is None else tls.context,
        bool(kwargs.get("reuse_port")),
    )
    if kwargs.get("keep_alive"):  # 3.13: on the listeners, so every accept inherits it
        for listening in server.sockets:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return server


async def create_unix_connection(
    loop: Any, protocol_factory: Any, path: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("create_unix_connection", kwargs)
    call = f"create_unix_connection({path!r}) (and asyncio.open_unix_connection)"
    tls = _tls.take_unix_options(kwargs, server_side=False)
    sock = _sock_arg(call, kwargs, _CONNECT_IGNORED, _BOTH_PATH if path is not None else None)
    if sock is not None:
        return await _given_stream(sock, protocol_factory, tls)
    stack = _socket_stack(loop, call, kwargs, _CONNECT_IGNORED)
    if path is None:
        raise ValueError("no path and sock were specified")

    def connect(factory: Any) -> Any:
        return _connect_mod.create_unix_connection(stack, factory, path)

    return await _connect(stack, protocol_factory, tls, connect)


async def create_unix_server(
    loop: Any, protocol_factory: Any, path: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("create_unix_server", kwargs)
    call = f"create_unix_server({path!r}) (and asyncio.start_unix_server)"
    tls = _tls.take_unix_options(kwargs, server_side=True)
    backlog = kwargs.get("backlog", BACKLOG_DEFAULT)
    start_serving = kwargs.get("start_serving", True)
    sock = _sock_arg(call, kwargs, _SERVE_IGNORED, _BOTH_PATH if path is not None else None)
    if sock is not None:
        return await _given_listener(sock, protocol_factory, backlog, start_serving, tls)
    stack = _socket_stack(loop, call, kwargs, _SERVE_IGNORED)
    if path is None:
        raise ValueError("path was not specified, and no sock specified")
    if tls is not None:
        protocol_factory = _tls.server_factory(stack, protocol_factory, tls)
    return await _server.create_unix_server(
        stack,
        protocol_factory,
        path,
        backlog,
        start_serving,
        None if tls is None else tls.context,
    )


async def create_datagram_endpoint(
    loop: Any, protocol_factory: Any, local_addr: Any, remote_addr: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("create_datagram_endpoint", kwargs)
    call = f"create_datagram_endpoint({local_addr!r}, {remote_addr!r})"
    addressed = local_addr is not None or remote_addr is not None
    clash = "socket modifier keyword arguments can not be used when sock is specified."
    sock = _sock_arg(call, kwargs, _DATAGRAM_IGNORED, clash if addressed else None)
    if sock is not None:
        return await _sockets.adopt_datagram(sock, protocol_factory)
    stack = _socket_stack(loop, call, kwargs, _DATAGRAM_IGNORED)
    return await _udp.create_datagram_endpoint(
        stack,
        protocol_factory,
        local_addr,
        remote_addr,
        kwargs.get("family", 0),
        kwargs.get("reuse_port"),
        kwargs.get("allow_broadcast"),
        kwargs.get("proto") or 0,
    )


async def connect_accepted_socket(
    loop: Any, protocol_factory: Any, sock: Any, kwargs: dict[str, Any]
) -> Any:
    _check_keywords("connect_accepted_socket", kwargs)
    kwargs["sock"] = sock
    given = _sock_arg("connect_accepted_socket()", kwargs, _CONNECT_IGNORED, None)
    return _sockets.adopt_stream(given, protocol_factory)


async def sendfile(
    loop: Any, transport: Any, file: Any, offset: int, count: Any, fallback: bool
) -> Any:
    # Plain and TLS transports alike (askew/_net/tls.py).
    return await _tls.sendfile(loop, transport, file, offset, count, fallback)


async def start_tls(
    loop: Any, transport: Any, protocol: Any, sslcontext: Any, kwargs: dict[str, Any]
) -> Any:
    return await _tls.start_tls(loop, transport, protocol, sslcontext, **kwargs)


# A simulated socket (askew/_net/rawsock.py: socket.socket() on a world's
# node) is served; anything else is a real fd and refused as before.


def watch(loop: Any, fd: Any, which: str, callback: Any, args: tuple[Any, ...]) -> None:
    if not isinstance(fd, _rawsock.RawSocket):
        method = "add_reader" if which == "r" else "add_writer"
        refuse(f"{method}({fd!r})", "File descriptors are real I/O. " + IO_HINT)
    _sockcalls.watch(fd, which, callback, args)


def unwatch(loop: Any, fd: Any, which: str) -> bool:
    return isinstance(fd, _rawsock.RawSocket) and _sockcalls.unwatch(fd, which)


_SOCK_METHODS: dict[str, Callable[..., Awaitable[Any]]] = {
    "accept": _sockcalls.sock_accept,
    "connect": _sockcalls.sock_connect,
    "recv": _sockcalls.sock_recv,
    "recv_into": _sockcalls.sock_recv_into,
    "recvfrom": _sockcalls.sock_recvfrom,
    "recvfrom_into": _sockcalls.sock_recvfrom_into,
    "sendall": _sockcalls.sock_sendall,
    "sendto": _sockcalls.sock_sendto,
    "sendfile": _sockets.sock_sendfile,
}


async def sock_call(loop: Any, method: str, call: str, sock: Any, *args: Any) -> Any:
    _simulated(sock, call)
    return await _SOCK_METHODS[method](sock, *args)


# This module is the HostIO the loop asks, from its import on; the names a
# scope replaces come with it (askew/_net/patches.py).
from . import loopio as _this  # noqa: E402
from . import patches as _patches  # noqa: E402, F401

hostio.install(_this)
