# SPDX-License-Identifier: Apache-2.0
"""Listening: Listener (one node, one address, one port or AF_UNIX path) and
Server (asyncio.Server's behaviour for this Python version), and the
create_server / create_unix_server that make them.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import socket
import sys
from typing import Any

from .._loop.kinds import ACCEPT
from .._loop.nodes import TOKEN_SHIFT
from .addr import (
    UNIX,
    WILDCARDS,
    as_sockaddr,
    bind_error,
    check_port,
    ep_text,
    family_of,
    may_bind,
    refuse_remote,
    unix_path,
)
from .endpoint import (
    STREAMS_CALLBACK_RAISES_ON_CANCEL,
    Endpoint,
    mend_streams_callback,
    start_protocol,
)
from .names import resolve
from .simsock import SimSocket
from .tcp import Owned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack


class Listener(Owned):
    """A listening socket: one node, one address (or all), one port."""

    def __init__(
        self,
        server: Server,
        token: int,
        ctx: Any,
        host: str,
        port: int | str,
        reuse_port: bool = False,
    ) -> None:
        self.server = server
        Owned.__init__(self, server.stack, token, ctx)
        self.host = host
        self.port = port
        self.reuse_port = reuse_port  # SO_REUSEPORT: a group shares the port
        self.backlog = server.backlog
        self.holds_port = False
        self.pending: list[Endpoint] = []
        self.open = True
        self.kicked = False
        self.sock = SimSocket((host, port), None)

    def kick(self) -> None:
        if self.server.serving and not self.kicked and self.pending:
            self.kicked = True
            self.stack.loop.call_soon(self.accept, context=self.ctx)

    def accept(self) -> None:
        """The accept loop: each pending connection gets its protocol."""
        self.kicked = False
        server = self.server
        while self.pending and server.serving:
            ep = self.pending.pop(0)
            if ep.dead and ep.so_error is None:  # reset before the peer's FIN
                continue
            self.stack.stats["tcp_accepts"] += 1
            self.stack.log(ACCEPT, self.node, f"accept {ep_text(ep.local)} <- {ep_text(ep.remote)}")
            server._attach(ep)
            ep.server = server
            if not ep._call(
                "Error on transport creation for incoming connection",
                True,
                start_protocol,
                ep,
                server.protocol_factory,
            )[0]:
                continue
            if STREAMS_CALLBACK_RAISES_ON_CANCEL:
                mend_streams_callback(ep)
            if ep.rx or ep.rx_eof:
                ep.rx_scheduled = True
                self.stack.loop.call_soon(ep._deliver_rx, context=self.ctx)

    def close(self) -> None:
        self.open = False
        stack = self.stack
        found = stack.listeners.get((self.node, self.port))
        if found and self in found:
            found.remove(self)
        if self.holds_port:
            stack.free_port(self.token, int(self.port))
        elif isinstance(self.port, str) and not self.port.startswith("\0") and not _CLOSE_UNLINKS:
            stack.unix_stale.add((self.node, self.port))  # the socket file stays
        # Connections the kernel took but nobody accepted are reset.
        for ep in self.pending:
            if not ep.dead and ep.peer is not None:
                ep._send_rst()
                ep.dead = True
        self.pending.clear()


_WAIT_CLOSED_WAITS_FOR_CONNECTIONS = sys.version_info >= (3, 12, 1)
# From 3.13 a unix server's close() removes its socket file (cleanup_socket).
_CLOSE_UNLINKS = sys.version_info >= (3, 13)


class Server(asyncio.AbstractServer):
    """asyncio.Server's behaviour over listeners, for this Python version:
    close() stops listening and leaves live connections alone;
    wait_closed() waits for them on 3.12.1+ and returns at once after close()
    on older versions, as asyncio does there."""

    def __init__(self, stack: Stack, loop: Any, protocol_factory: Any, backlog: int) -> None:
        self.stack = stack
        self._loop = loop
        self.protocol_factory = protocol_factory
        self.backlog = backlog
        self._ssl_context: Any = None  # asyncio.Server's, which suites peek at
        self.listeners: list[Listener] | None = []
        self.serving = False
        # The accepted connections not yet lost, in the order accepted (a
        # dict, so close_clients goes through them in a replayable order).
        self._clients: dict[Endpoint, None] = {}
        self._waiters: list[asyncio.Future[Any]] | None = []
        self._forever: asyncio.Future[Any] | None = None

    def __repr__(self) -> str:
        return f"<Server sockets={self.sockets!r}>"

    def _attach(self, ep: Endpoint) -> None:
        self._clients[ep] = None

    def _detach(self, ep: Endpoint) -> None:
        self._clients.pop(ep, None)
        if not self._clients and self.listeners is None:
            self._wakeup()

    if hasattr(asyncio.base_events.Server, "close_clients"):  # new in 3.13

        def close_clients(self) -> None:
            for ep in list(self._clients):
                ep.close()

        def abort_clients(self) -> None:
            for ep in list(self._clients):
                ep.abort()

    def _wakeup(self) -> None:
        waiters, self._waiters = self._waiters, None
        for w in waiters or ():
            if not w.done():
                w.set_result(w)

    def _start_serving(self) -> None:
        if self.serving or self.listeners is None:
            return
        self.serving = True
        for ls in self.listeners:
            ls.kick()

    def get_loop(self) -> Any:
        return self._loop

    def is_serving(self) -> bool:
        return self.serving

    @property
    def sockets(self) -> tuple[SimSocket, ...]:
        if self.listeners is None:
            return ()
        return tuple(ls.sock for ls in self.listeners)

    # asyncio.Server's private names that libraries read (websockets' test
    # helper reads _ssl_context, set by listen).
    @property
    def _serving(self) -> bool:
        return self.serving

    @property
    def _sockets(self) -> list[SimSocket] | None:
        return None if self.listeners is None else list(self.sockets)

    def close(self) -> None:
        listeners = self.listeners
        if listeners is None:
            return
        self.listeners = None
        for ls in listeners:
            ls.close()
        self.serving = False
        if self._forever is not None and not self._forever.done():
            self._forever.cancel()
            self._forever = None
        if not self._clients:
            self._wakeup()

    async def start_serving(self) -> None:
        if self.listeners is None:
            # asyncio's Server iterates its closed (None) socket list.
            raise TypeError("'NoneType' object is not iterable")
        self._start_serving()
        await asyncio.sleep(0)

    async def serve_forever(self) -> None:
        if self._forever is not None:
            raise RuntimeError(f"server {self!r} is already being awaited on serve_forever()")
        if self.listeners is None:
            raise RuntimeError(f"server {self!r} is closed")
        self._start_serving()
        self._forever = self._loop.create_future()
        try:
            await self._forever
        except asyncio.CancelledError:
            try:
                self.close()
                await self.wait_closed()
            finally:
                raise
        finally:
            self._forever = None

    async def wait_closed(self) -> None:
        if self._waiters is None:
            return
        if self.listeners is None and not _WAIT_CLOSED_WAITS_FOR_CONNECTIONS:
            return
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
        await self.wait_closed()


async def create_server(
    stack: Stack,
    protocol_factory: Any,
    host: Any,
    port: Any,
    backlog: int,
    start_serving: bool,
    family: int = 0,
    ssl_context: Any = None,
    reuse_port: bool = False,
) -> Server:
    token = stack.caller(f"create_server({host!r}, {port!r})")
    node = token >> TOKEN_SHIFT
    hosts = [host] if isinstance(host, str) or host is None else list(host)
    p = 0
    addrs: list[str] = []
    for h in hosts:
        # As asyncio: every address the host resolves to (no host: both
        # families' wildcards, IPv4 first, as glibc answers).
        infos = resolve(
            stack, None if h == "" else h, port, family, socket.SOCK_STREAM, socket.AI_PASSIVE
        )
        for info in infos:
            a, p = info[4][0], info[4][1]
            check_port(p, "bind")
            if not may_bind(stack, node, a):
                if stack.one_host:
                    refuse_remote(stack, f"create_server({host!r}, {port!r})")
                raise bind_error(
                    errno.EADDRNOTAVAIL, as_sockaddr((a, p)), "cannot assign requested address"
                )
            if a not in addrs:
                addrs.append(a)
    return await listen(
        stack, token, protocol_factory, addrs, p, backlog, start_serving, ssl_context, reuse_port
    )


async def create_unix_server(
    stack: Stack,
    protocol_factory: Any,
    path: Any,
    backlog: int,
    start_serving: bool,
    ssl_context: Any = None,
) -> Server:
    token = stack.caller(f"create_unix_server({path!r})")
    where = unix_path(path)
    return await listen(
        stack, token, protocol_factory, [UNIX], where, backlog, start_serving, ssl_context
    )


async def listen(
    stack: Stack,
    token: int,
    protocol_factory: Any,
    addrs: list[str],
    p: int | str,
    backlog: int,
    start_serving: bool,
    ssl_context: Any = None,
    reuse_port: bool = False,
) -> Server:
    """A Server listening on every one of addrs at port p (a path for
    AF_UNIX); every address binds or none does, as asyncio closes what it
    opened. ssl_context: the server's TLS context, which asyncio's Server
    keeps as _ssl_context (the TLS layer is in protocol_factory).
    reuse_port: SO_REUSEPORT, as Linux: listeners that all set it share the
    port, and the kernel picks one for each connection."""
    if isinstance(backlog, bool) or not isinstance(backlog, int):
        raise TypeError(f"backlog must be an int, got {backlog!r}")
    if not -(2**31) <= backlog < 2**31:
        raise OverflowError("signed integer is greater than maximum")  # listen()'s C int
    node = token >> TOKEN_SHIFT
    if p == 0:
        p = stack.ephemeral(token)
    found = stack.listeners.get((node, p), [])
    found[:] = [ls for ls in found if ls.token == token and ls.open]
    for a in addrs:
        for ls in found:
            if reuse_port and ls.reuse_port and a != UNIX:
                continue  # one SO_REUSEPORT group
            if family_of(a) == family_of(ls.host) and (
                a in WILDCARDS or ls.host in WILDCARDS or ls.host == a
            ):
                if a == UNIX:
                    raise OSError(errno.EADDRINUSE, f"Address {p!r} is already in use")
                raise bind_error(errno.EADDRINUSE, as_sockaddr((a, p)), "address already in use")
    ctx = contextvars.copy_context()
    server = Server(stack, stack.loop, protocol_factory, max(1, min(backlog, 4096)))
    server._ssl_context = ssl_context
    assert server.listeners is not None
    for a in addrs:
        ls = Listener(server, token, ctx, a, p, reuse_port)
        server.listeners.append(ls)
        found.append(ls)
    if isinstance(p, int):
        # One hold for the server's port, however many families it binds.
        server.listeners[0].holds_port = True
        stack.take_port(token, p)
    else:
        stack.unix_stale.discard((node, p))
    stack.listeners[(node, p)] = found
    if start_serving:
        server._start_serving()
        await asyncio.sleep(0)
    return server
