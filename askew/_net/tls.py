# SPDX-License-Identifier: Apache-2.0
"""TLS and sendfile over simulated TCP (docs/sockets.md, "TLS").

asyncio's own `SSLProtocol` runs over an `askew.Endpoint`, as it
runs over a selector transport: this module is only the glue that
`create_connection(ssl=...)`, `create_server(ssl=...)`, `start_tls` and
`sendfile` need on `SimLoop`, with asyncio's argument checks. It never
touches the wire itself, so every TLS byte meets the network's latency and
faults like any other. OpenSSL's randomness changes ciphertext bytes only;
what the trace hashes (segment counts, lengths and times) does not see them
(docs/determinism.md says when that holds). Called by askew/_loop/loop.py.
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import constants, sslproto
from typing import Any

from . import sockets as _sockets
from .endpoint import STREAMS_CALLBACK_RAISES_ON_CANCEL, mend_streams_callback
from .host import active
from .server import Server

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack

_TLS_KEYWORDS = ("ssl", "server_hostname", "ssl_handshake_timeout", "ssl_shutdown_timeout")


class Options:
    """What create_connection/create_server were told about TLS."""

    __slots__ = ("context", "handshake_timeout", "server_hostname", "shutdown_timeout")

    def __init__(
        self,
        context: ssl.SSLContext,
        server_hostname: str | None,
        handshake_timeout: float | None,
        shutdown_timeout: float | None,
    ) -> None:
        self.context = context
        self.server_hostname = server_hostname
        self.handshake_timeout = handshake_timeout
        self.shutdown_timeout = shutdown_timeout


def take_options(kwargs: dict[str, Any], host: Any, *, server_side: bool) -> Options | None:
    """Pop the TLS keywords from kwargs and check them as asyncio's
    create_connection/create_server do; None when no ssl= was given."""
    given = {name: kwargs.pop(name, None) for name in _TLS_KEYWORDS}
    context = given["ssl"]
    hostname = given["server_hostname"]
    if server_side:
        if hostname is not None:
            raise TypeError("create_server() got an unexpected keyword argument 'server_hostname'")
        if isinstance(context, bool):
            raise TypeError("ssl argument must be an SSLContext or None")
    elif hostname is not None and not context:
        raise ValueError("server_hostname is only meaningful with ssl")
    for name in ("ssl_handshake_timeout", "ssl_shutdown_timeout"):
        if given[name] is not None and not context:
            raise ValueError(f"{name} is only meaningful with ssl")
    if not context:
        return None
    if not server_side:
        if hostname is None:
            if not host:
                raise ValueError("You must set server_hostname when using ssl without a host")
            hostname = host
        if not isinstance(context, ssl.SSLContext):
            # ssl=True: asyncio's client default, verifying against the
            # host's trust store (made here, on first use, as asyncio does).
            context = ssl.create_default_context()
    return Options(context, hostname, given["ssl_handshake_timeout"], given["ssl_shutdown_timeout"])


class _Protocol(sslproto.SSLProtocol):
    """asyncio's SSLProtocol, counting handshakes in the world's stats and,
    on a server, ending a connection whose handshake failed (asyncio's
    accept path awaits the waiter and closes the transport)."""

    def __init__(
        self,
        stack: Stack | None,
        loop: Any,
        app: Any,
        tls: Options,
        server: bool,
        call_connection_made: bool = True,
    ) -> None:
        waiter = loop.create_future()
        # Seconds as asyncio takes them, float or int (typeshed says int).
        timeouts: dict[str, Any] = {
            "ssl_handshake_timeout": tls.handshake_timeout,
            "ssl_shutdown_timeout": tls.shutdown_timeout,
        }
        super().__init__(
            loop,
            app,
            tls.context,
            waiter,
            server_side=server,
            server_hostname=None if server else tls.server_hostname,
            call_connection_made=call_connection_made,
            **timeouts,
        )
        self.askew_stack = stack
        self.askew_waiter = waiter
        self.askew_accepted = server and call_connection_made
        waiter.add_done_callback(self._handshake_done)

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        super()._on_handshake_complete(handshake_exc)
        app = self._app_protocol
        if (
            handshake_exc is None
            and self.askew_accepted
            and STREAMS_CALLBACK_RAISES_ON_CANCEL
            and self._app_transport is not None
        ):
            # The streams handler task exists only now (connection_made
            # runs after the handshake): mend its 3.11 callback as the
            # accept path mends a plain connection's.
            mend: Any = _Mended(app, self._app_transport)
            mend_streams_callback(mend)

    def _handshake_done(self, waiter: asyncio.Future[None]) -> None:
        """The handshake is over: counted (a cancelled wait is neither), and
        on a server a failed one closes the connection."""
        if waiter.cancelled():
            return
        failed = waiter.exception() is not None
        if self.askew_stack is not None:
            stats = self.askew_stack.stats
            stats["tls_handshakes"] = stats.get("tls_handshakes", 0) + (not failed)
            stats["tls_handshake_failures"] = stats.get("tls_handshake_failures", 0) + failed
        if failed and self.askew_accepted and self._transport is not None:
            self._transport.close()


class _Mended:
    """What askew/_net/'s 3.11 streams mend reads of a transport."""

    __slots__ = ("close", "protocol")

    def __init__(self, protocol: Any, transport: Any) -> None:
        self.protocol = protocol
        self.close = transport.close


async def create_connection(
    stack: Stack, protocol_factory: Any, tls: Options, connect: Any
) -> tuple[Any, Any]:
    """create_connection(ssl=...) and create_unix_connection(ssl=...), by
    address or over sock=: `await connect(factory)` makes the connection
    (TCP, AF_UNIX, or the socket adopted), then the handshake; returns once
    it is done, as asyncio's does (its failure closes the connection)."""
    # Made before the connect, so that bad timeouts fail before a
    # connection exists; the user's protocol is made after it, as asyncio's.
    protocol = _Protocol(stack, stack.loop, None, tls, False)

    def factory() -> _Protocol:
        protocol._set_app_protocol(protocol_factory())
        return protocol

    transport, _ = await connect(factory)
    try:
        await protocol.askew_waiter
    except BaseException:
        transport.close()
        raise
    return protocol._app_transport, protocol._app_protocol


def take_unix_options(kwargs: dict[str, Any], *, server_side: bool) -> Options | None:
    """take_options for create_unix_connection/create_unix_server: a path
    names no host, so a client must name the server (asyncio's message)."""
    if not server_side and kwargs.get("ssl") and kwargs.get("server_hostname") is None:
        raise ValueError("you have to pass server_hostname when using ssl")
    return take_options(kwargs, None, server_side=server_side)


async def adopt(sock: Any, protocol_factory: Any, tls: Options) -> tuple[Any, Any]:
    """create_connection(sock=..., ssl=...): the connected simulated socket
    becomes a transport, and TLS runs over it."""

    async def connect(factory: Any) -> tuple[Any, Any]:
        return _sockets.adopt_stream(sock, factory)

    return await create_connection(sock._stack, protocol_factory, tls, connect)


async def serve(
    sock: Any, protocol_factory: Any, backlog: int, start_serving: bool, tls: Options
) -> Server:
    """create_server(sock=..., ssl=...): listen on the simulated socket,
    with TLS around each accepted connection."""
    factory = server_factory(sock._stack, protocol_factory, tls)
    server = await _sockets.serve(sock, factory, backlog, start_serving)
    server._ssl_context = tls.context
    return server


def server_factory(stack: Stack, protocol_factory: Any, tls: Options) -> Any:
    """The protocol factory of a create_server(ssl=...): each accepted
    connection gets asyncio's SSLProtocol around the user's protocol."""

    def factory() -> _Protocol:
        return _Protocol(stack, stack.loop, protocol_factory(), tls, True)

    return factory


async def start_tls(
    loop: Any,
    transport: Any,
    protocol: Any,
    sslcontext: Any,
    *,
    server_side: bool = False,
    server_hostname: str | None = None,
    ssl_handshake_timeout: float | None = None,
    ssl_shutdown_timeout: float | None = None,
) -> Any:
    """loop.start_tls, with asyncio's contract: the transport's protocol
    becomes the TLS layer at once, the handshake starts on the next step,
    and the TLS transport comes back once it is done (its failure closes
    the connection)."""
    if not isinstance(sslcontext, ssl.SSLContext):
        raise TypeError(
            f"sslcontext is expected to be an instance of ssl.SSLContext, got {sslcontext!r}"
        )
    if not getattr(transport, "_start_tls_compatible", False):
        raise TypeError(f"transport {transport!r} is not supported by start_tls()")
    tls = Options(sslcontext, server_hostname, ssl_handshake_timeout, ssl_shutdown_timeout)
    stack = active(loop)
    layer = _Protocol(stack, loop, protocol, tls, server_side, call_connection_made=False)
    # Reading pauses first, so that no bytes reach the TLS layer before
    # its connection_made (asyncio's order).
    transport.pause_reading()
    transport.set_protocol(layer)
    made = loop.call_soon(layer.connection_made, transport)
    resumed = loop.call_soon(transport.resume_reading)
    try:
        await layer.askew_waiter
    except BaseException:
        transport.close()
        made.cancel()
        resumed.cancel()
        raise
    return layer._app_transport


# ---- sendfile ------------------------------------------------------------------


async def sendfile(
    loop: Any, transport: Any, file: Any, offset: int, count: int | None, fallback: bool
) -> int:
    """loop.sendfile: asyncio's fallback (read a block, write it, wait for
    the buffer to drain), with the file read inline on the loop's thread
    (decision: asyncio reads it in the default executor, which a run
    refuses; a block read is short and its bytes are all that matter).
    A plain simulated connection has no native path to try, and acts as
    one that has (fallback=False works, as on Linux); a TLS transport
    says what asyncio's does."""
    _sockets.sendfile_args(file, offset, count)
    if transport.is_closing():
        raise RuntimeError("Transport is closing")
    mode = getattr(transport, "_sendfile_compatible", constants._SendfileMode.UNSUPPORTED)
    if mode is constants._SendfileMode.UNSUPPORTED:
        raise RuntimeError(f"sendfile is not supported for transport {transport!r}")
    if mode is not constants._SendfileMode.TRY_NATIVE and not fallback:
        raise RuntimeError(
            f"fallback is disabled and native sendfile is not supported for transport {transport!r}"
        )
    gate = _Drain(loop, transport)

    async def send(data: bytes) -> None:
        await gate.drain()
        transport.write(data)

    try:
        return await _sockets.send_file(file, offset, count, send)
    finally:
        gate.restore()


class _Drain(asyncio.Protocol):
    """Stands in for the transport's protocol while a file is sent, as
    asyncio's fallback protocol does: reading paused, writes wait while
    the transport's buffer is over its high-water mark, then the user's
    protocol comes back."""

    def __init__(self, loop: Any, transport: Any) -> None:
        self.loop = loop
        self.transport = transport
        self.proto = transport.get_protocol()
        self.was_reading = transport.is_reading()
        self.was_paused = _writing_paused(transport)
        self.ready: asyncio.Future[None] | None = loop.create_future() if self.was_paused else None
        transport.pause_reading()
        transport.set_protocol(self)

    async def drain(self) -> None:
        if self.transport.is_closing():
            raise ConnectionError("Connection closed by peer")
        if self.ready is not None:
            await self.ready

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.ready is not None and not self.ready.done():
            self.ready.set_exception(exc or ConnectionError("Connection is closed by peer"))
        self.proto.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.ready is None:
            self.ready = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.ready is not None:
            if not self.ready.done():
                self.ready.set_result(None)
            self.ready = None

    def restore(self) -> None:
        self.transport.set_protocol(self.proto)
        if self.was_reading:
            self.transport.resume_reading()
        if self.ready is not None:
            self.ready.cancel()
        # The user's protocol hears what changed meanwhile, so its pauses
        # and resumes stay paired: the transport's buffer (here it can hold
        # more than the window) may still be over its high-water mark.
        paused = _writing_paused(self.transport)
        if self.was_paused and not paused:
            self.proto.resume_writing()
        elif paused and not self.was_paused:
            self.proto.pause_writing()


def _writing_paused(transport: Any) -> bool:
    # asyncio's flow-control transports (TLS's too) and askew's Endpoint.
    return bool(getattr(transport, "_protocol_paused", getattr(transport, "writing_paused", False)))
