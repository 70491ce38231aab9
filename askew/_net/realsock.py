# SPDX-License-Identifier: Apache-2.0
"""Real listening sockets a wrapped test cannot reach (docs/compatibility.md,
"Real sockets made before the run").

Wrap mode's loopback is the simulated host: a connect inside the run never
reaches a socket the kernel holds. When such a connect finds no simulated
listener, the stack asks `refusal()` whether a real socket of this process
listens at that address (one a synchronous fixture made before the run, or a
server on another thread's real loop); if so the connect fails with a
`NondeterminismError` naming that socket instead of a bare ECONNREFUSED,
which would read as a bug in the code under test. Reads the process's own
socket objects only (never the kernel's tables, never a real connect), and
only on that failing path.
"""

from __future__ import annotations

import _socket
import errno
import gc
import socket
from typing import Any

from .. import _core
from ..errors import NondeterminismError
from .addr import UNIX, is_loopback, unix_path

_ANY: dict[int, str] = {socket.AF_INET: "0.0.0.0", socket.AF_INET6: "::"}


def _listening(sock: _socket.socket) -> bool:
    try:
        return (
            sock.fileno() >= 0
            and sock.type & 0xF == socket.SOCK_STREAM
            and bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
        )
    except OSError:
        return False


def _serves(sock: _socket.socket, remote: tuple[str, Any]) -> bool:
    """Would Linux hand a connect to remote (the stack's (host, port) or
    (UNIX, path)) to this listening socket?"""
    host, port = remote
    try:
        name = sock.getsockname()
    except OSError:
        return False
    if sock.family == socket.AF_UNIX:
        if isinstance(name, (bytes, bytearray)):
            name = bytes(name).decode("utf-8", "surrogateescape")
        return host == UNIX and name == port
    if host == UNIX or sock.family not in _ANY or name[1] != port:
        return False
    if name[0] == host or (name[0] == _ANY[sock.family] and (":" in host) == (":" in name[0])):
        return True
    # An IPv6 wildcard listener takes IPv4 too unless it is IPV6_V6ONLY.
    v6only = sock.family == socket.AF_INET6 and sock.getsockopt(
        socket.IPPROTO_IPV6, socket.IPV6_V6ONLY
    )
    return name[0] == "::" and ":" not in host and not v6only


def _classes(cls: type) -> list[type]:
    """cls and every subclass defined so far (socket.socket, ssl.SSLSocket,
    askew's SocketType, a test's own)."""
    found = [cls]
    subs: list[type] = type.__subclasses__(cls)
    for sub in subs:
        found += _classes(sub)
    return found


def real_listener(remote: tuple[str, Any]) -> _socket.socket | None:
    """The real listening socket of this process at remote, if any (the
    lowest file descriptor when several are). An instance of a class
    written in Python refers to its class, so the collector's referrer
    search finds every socket object: 36 ms over 516,000 live objects,
    where filtering gc.get_objects() in Python took 136."""
    found = [
        obj
        for obj in gc.get_referrers(*_classes(_socket.socket))
        if isinstance(obj, _socket.socket) and _listening(obj) and _serves(obj, remote)
    ]
    return min(found, key=lambda s: s.fileno()) if found else None


def refusal(remote: tuple[str, Any]) -> NondeterminismError | None:
    """The error a refused connect to remote raises instead of ECONNREFUSED
    when a real socket listens there, or None."""
    sock = real_listener(remote)
    if sock is None:
        return None
    where = f"unix:{remote[1]!r}" if remote[0] == UNIX else f"{remote[0]}:{remote[1]}"
    return NondeterminismError(
        f"connect to {where} inside a simulation: nothing simulated listens there, but "
        f"a real socket of this process does ({sock!r}), made outside the run (a "
        "synchronous fixture, or a server on another thread's real loop). Wrap mode's "
        "loopback is the simulated host and never reaches a real socket, so this "
        "connect would be refused. Make the listener inside the run (loop.create_server, "
        "anyio.create_tcp_listener, socket.socket() in the test body) or run this test "
        "without wrap mode."
    )


def raise_refusal(remote: tuple[str, Any]) -> None:
    """Raise `refusal(remote)`, noted as the run's refusal, if there is one."""
    exc = refusal(remote)
    if exc is not None:
        _core._note_refusal(exc)
        raise exc


# -- the other way: a real socket connecting to a simulated server -----------------


def _simulated_listener(loops: list[Any], family: int, address: Any) -> Any:
    """The simulated server of one of loops at address, if any (a real
    socket's connect target: (host, port) on loopback, or an AF_UNIX path)."""
    if family == socket.AF_UNIX:
        try:
            where: tuple[str, Any] = (UNIX, unix_path(address))
        except TypeError:
            return None
    elif isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        host = "127.0.0.1" if address[0] == "localhost" else address[0]
        if not is_loopback(host):
            return None
        where = (host, address[1])
    else:
        return None
    for loop in loops:
        host_ = getattr(loop, "_host", None)
        stack = getattr(host_, "_tcp", None)
        if stack is not None and not loop.is_closed():
            found = stack.find_listener(0, where[0], where[1])
            if found is not None:
                return found
    return None


def _refused(sock: Any, address: Any, loops: list[Any]) -> NondeterminismError | None:
    listener = _simulated_listener(loops, sock.family, address)
    if listener is None:
        return None
    return NondeterminismError(
        f"socket.connect({address!r}) on a real socket ({sock!r}), made outside the "
        "running loop, was refused: that address is a simulated server of this wrapped "
        "test, on askew's loopback, which a real socket never reaches. Connect from "
        "code the loop runs (asyncio.open_connection, loop.sock_connect, or "
        "socket.socket() made in a coroutine), or pass sock= a socket made there."
    )


def checked_connect(original: Any, loops: Any) -> Any:
    """socket.socket.connect while a wrapped test runs: the real call, but
    a refusal at an address where the test's own simulated server listens
    names it (websockets' test_explicit_socket connects a real socket made
    in the synchronous test body)."""

    def connect(sock: Any, address: Any) -> None:
        try:
            original(sock, address)
        except (ConnectionRefusedError, FileNotFoundError):
            named = _refused(sock, address, loops())
            if named is not None:
                raise named from None
            raise

    return connect


def checked_connect_ex(original: Any, loops: Any) -> Any:
    """socket.socket.connect_ex, as `checked_connect`."""

    def connect_ex(sock: Any, address: Any) -> int:
        code: int = original(sock, address)
        if code in (errno.ECONNREFUSED, errno.ENOENT):
            named = _refused(sock, address, loops())
            if named is not None:
                raise named
        return code

    return connect_ex
