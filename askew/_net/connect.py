# SPDX-License-Identifier: Apache-2.0
"""Connecting: create_connection and create_unix_connection over the
simulated stack, as asyncio and Linux answer (every address tried in order,
ENETUNREACH for an address no node has, ENOENT or ECONNREFUSED for a path).
"""

from __future__ import annotations

import contextvars
import errno
import socket
from typing import Any

from .._loop.kinds import CONNECT
from .._loop.nodes import TOKEN_SHIFT
from . import realsock as _realsock
from .addr import (
    UNIX,
    WILDCARDS,
    as_sockaddr,
    bind_error,
    check_port,
    ep_text,
    is_loopback,
    local_addr_for,
    loopback_of,
    may_bind,
    node_of_address,
    refuse_remote,
    unix_path,
)
from .endpoint import Endpoint
from .names import resolve
from .tcp import SYN, Segment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack


async def create_connection(
    stack: Stack,
    protocol_factory: Any,
    host: Any,
    port: Any,
    local_addr: Any,
    family: int = 0,
    proto: int = 0,
    flags: int = 0,
    all_errors: bool = False,
) -> tuple[Any, Any]:
    call = f"create_connection({host!r}, {port!r})"
    token = stack.caller(call)
    if host is None and port is None:
        raise ValueError("host and port was not specified and no sock specified")
    infos = resolve(stack, host, port, family, socket.SOCK_STREAM, flags, proto)
    locals_ = None
    if local_addr is not None:
        if not isinstance(local_addr, (tuple, list)) or len(local_addr) != 2:
            raise TypeError(f"local_addr must be a (host, port) pair, not {local_addr!r}")
        locals_ = resolve(
            stack, local_addr[0], local_addr[1], family, socket.SOCK_STREAM, flags, proto
        )
    # As asyncio: each address in turn; the first that connects wins.
    errors: list[OSError] = []
    try:
        for info in infos:
            check_port(info[4][1], "connect")
            try:
                local = None
                if locals_ is not None:  # bound first, to an address of the same family
                    local = _local_of(locals_, info[0])
                return await _connect_inet(
                    stack, token, protocol_factory, info[4][0], info[4][1], local, call
                )
            except OSError as exc:
                errors.append(exc)
        if all_errors:  # 3.12's create_connection(all_errors=True)
            raise ExceptionGroup("create_connection failed", errors)
        if len(errors) == 1 or all(str(e) == str(errors[0]) for e in errors):
            raise errors[0]
        raise OSError(f"Multiple exceptions: {', '.join(str(e) for e in errors)}")
    finally:
        # The error raised holds this frame (its traceback), which held the
        # list holding the error: a cycle only the collector frees, as
        # asyncio breaks it too.
        del errors


def _local_of(infos: list[tuple[Any, ...]], family: int) -> tuple[str, int]:
    """The local address create_connection binds to for a remote address
    of `family`: the first of that family (asyncio's _connect_sock)."""
    for info in infos:
        if info[0] == family:
            check_port(info[4][1], "bind")
            return info[4][0], info[4][1]
    raise OSError(f"no matching local address with family={family!r} found")


async def _connect_inet(
    stack: Stack, token: int, factory: Any, addr: str, p: int, local_addr: Any, call: str
) -> tuple[Any, Any]:
    node = token >> TOKEN_SHIFT
    if addr in WILDCARDS:
        addr = loopback_of(addr)  # Linux connects the unspecified address locally
    if is_loopback(addr):
        dst = node
    elif stack.one_host:
        refuse_remote(stack, call)
    else:
        found = node_of_address(addr)
        if found is None or found >= len(stack.world._slots):
            # No host has that address: the SYN goes nowhere.
            raise OSError(errno.ENETUNREACH, f"Connect call failed {as_sockaddr((addr, p))!r}")
        dst = found
    lport = stack.ephemeral(token)
    if local_addr is not None:
        want, port = local_addr[0], local_addr[1]
        if want not in (None, "") and not may_bind(stack, node, want):
            raise bind_error(errno.EADDRNOTAVAIL, local_addr, "cannot assign requested address")
        if port and stack.used.get(token, {}).get(port):
            raise bind_error(errno.EADDRINUSE, local_addr, "address already in use")
        lport = port or lport
    stack.take_port(token, lport)
    ctx = contextvars.copy_context()
    ep = Endpoint(stack, token, ctx, (local_addr_for(stack, node, addr), lport), (addr, p), dst)
    ep.port_held = True
    return await open_endpoint(stack, ep, factory)


async def open_endpoint(stack: Stack, ep: Endpoint, protocol_factory: Any) -> tuple[Any, Any]:
    """Connect ep (a SYN, then the SYN-ACK) and give it its protocol."""
    loop = stack.loop
    ep.waiter = loop.create_future()
    stack.stats["tcp_connects"] += 1
    stack.log(CONNECT, ep.node, f"connect {ep_text(ep.local)} -> {ep_text(ep.remote)}")
    stack.send(Segment(SYN, ep, None, 0, b""), ep.remote_node)
    try:
        await ep.waiter
    except BaseException:
        ep.waiter = None  # it holds the error, whose traceback holds ep: no cycle
        if ep.state == "syn":
            ep.state = "closed"
            ep.dead = True
            ep._release()
        elif ep.protocol is None:
            # The handshake was over but the caller gave up before it ran
            # on (a cancel in that step): asyncio closes the socket then,
            # and the server hears it (aiohappyeyeballs' cancelled connect).
            ep._abort(None)
        raise
    protocol = protocol_factory()
    ep.protocol = protocol
    protocol.connection_made(ep)
    if ep.rx or ep.rx_eof:
        ep.rx_scheduled = True
        loop.call_soon(ep._deliver_rx, context=ep.ctx)
    return ep, protocol


async def create_unix_connection(stack: Stack, protocol_factory: Any, path: Any) -> tuple[Any, Any]:
    """Connect to a path (or abstract name) of this node's own namespace;
    nothing touches the file system. As Linux, at once: ENOENT for a path
    nobody bound, ECONNREFUSED for one nobody listens on."""
    token = stack.caller(f"create_unix_connection({path!r})")
    where = unix_path(path)
    if not where:
        raise OSError(errno.EINVAL, "Invalid argument")  # Linux: no name to connect to
    node = token >> TOKEN_SHIFT
    if stack.find_listener(node, UNIX, where) is None:
        if stack.one_host:
            _realsock.raise_refusal((UNIX, where))
        if where.startswith("\0") or (node, where) in stack.unix_stale:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
    ep = Endpoint(stack, token, contextvars.copy_context(), (UNIX, ""), (UNIX, where), node)
    return await open_endpoint(stack, ep, protocol_factory)
