# SPDX-License-Identifier: Apache-2.0
"""The connection-scale edges of simulated TCP and TLS (docs/sockets.md):
nothing leaks from one run into the next, and misuse (closing twice,
writing or reading after a reset, a TLS peer that stops answering its
close) behaves as asyncio does on Linux. The basic edges (EADDRINUSE, write
after close, a server closed with live connections, 10,000 plain
connections) are in tests/net/test_sockets.py."""

from __future__ import annotations

import asyncio
import errno
import gc
from asyncio import sslproto
from typing import Any

import pytest
from conftest import echo_server, run_sim
from test_sockets import Recorder, client, resetting_server, run_nodes
from test_tls import PORT, client_context, echo_once, silent_server, tls_echo_server

import askew
from askew._net import host as _host
from askew._net import server as _server
from askew._net import tcp as _tcp

# ---- nothing leaks across runs ---------------------------------------------------------


def _leave_everything_open(seen: list[dict[str, Any]]) -> Any:
    """A run that ends with a listener, open plain and TLS connections,
    a connect in progress and a half-done handshake; it records what its
    first client port and its counters were."""

    async def body(world: askew.World) -> None:
        world.spawn(echo_server)
        world.spawn(tls_echo_server)  # node 1, TLS on 443

        async def talk(node: Any) -> None:
            loop = asyncio.get_running_loop()
            transport, _ = await loop.create_connection(Recorder, "node-0", 7)
            node.port = transport.get_extra_info("sockname")[1]
            node.kept = await asyncio.open_connection("node-1", PORT, ssl=client_context())
            world.net.isolate(0)
            node.stuck = asyncio.ensure_future(asyncio.open_connection("node-0", 7))
            node.half = asyncio.ensure_future(
                asyncio.open_connection("node-2", PORT, ssl=client_context())
            )
            await asyncio.sleep(1e9)

        world.spawn(silent_server)  # node 2: TCP, never a TLS word
        handle = world.spawn(talk)
        await asyncio.sleep(2)
        stats = world.net.stats()
        seen.append(
            {
                "port": handle.port,
                "connects": stats["tcp_connects"],
                "tls": stats["tls_handshakes"],
                "in_flight": stats["in_flight"] > 0,
            }
        )

    return body


def test_a_second_run_starts_clean_ports_listeners_endpoints_and_counters() -> None:
    seen: list[dict[str, Any]] = []
    askew.simulate(seed=3, iterations=3)(_leave_everything_open(seen))()
    # Every iteration binds the same ports, counts from zero and picks the
    # same first ephemeral port, although the one before left it all open.
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2]
    assert seen[0]["port"] == _tcp.EPHEMERAL_LO and seen[0]["tls"] == 2
    assert _host._world is None  # the last run let go of its world


def test_a_run_after_one_that_failed_mid_handshake_starts_clean() -> None:
    async def failing(world: askew.World) -> None:
        world.spawn(tls_echo_server)

        async def talk(node: Any) -> None:
            await asyncio.open_connection("node-0", PORT, ssl=client_context())
            raise RuntimeError("boom")

        world.spawn(talk)
        await asyncio.sleep(5)

    with pytest.raises(askew.SimulationFailure, match="boom"):
        run_sim(failing)

    async def talk(node: Any) -> Any:
        got, info = await echo_once("node-0", b"fresh")
        return got, info["socket"].getsockname()[1]

    seen = run_nodes(tls_echo_server, client(talk))
    assert seen["result"] == (b"fresh", _tcp.EPHEMERAL_LO)
    assert seen["stats"]["tcp_connects"] == 1 and seen["stats"]["tls_handshakes"] == 2


def test_five_hundred_tls_connections_in_one_run_leak_no_port_and_no_protocol() -> None:
    async def many(node: Any) -> Any:
        ctx = client_context()
        for i in range(500):
            reader, writer = await asyncio.open_connection("node-0", PORT, ssl=ctx)
            writer.write(b"%d" % i)
            await reader.readexactly(len(b"%d" % i))
            writer.close()
            await writer.wait_closed()
        await asyncio.sleep(1)
        del reader, writer
        gc.collect()
        # A closed transport lets go of its protocol, as asyncio's do: the
        # world log still holds the recent segments and their endpoints.
        assert not [o for o in gc.get_objects() if isinstance(o, sslproto.SSLProtocol)]
        # Ports held, per node: only the listener's.
        return {world._slots[i].token: {PORT: 1} if i == 0 else {} for i in (0, 1)}, dict(
            world._tcp.used
        )

    world: Any = None

    def setup(w: askew.World) -> None:
        nonlocal world
        world = w
        w.net.configure(latency=(0.0001, 0.0002))

    seen = run_nodes(tls_echo_server, client(many), setup=setup)
    expected, used = seen["result"]
    assert used == expected
    assert seen["stats"]["tls_handshakes"] == 1000 and seen["stats"]["in_flight"] == 0


# ---- misuse, as asyncio on Linux ------------------------------------------------------------


def test_closing_twice_is_harmless_on_plain_and_tls_streams() -> None:
    async def talk(node: Any) -> Any:
        lost = []
        for ssl in (None, client_context()):
            port = PORT if ssl else 7
            _reader, writer = await asyncio.open_connection(
                "node-0" if ssl is None else "node-1", port, ssl=ssl
            )
            writer.close()
            writer.close()
            writer.transport.close()
            await writer.wait_closed()
            await writer.wait_closed()
            writer.close()
            lost.append(writer.is_closing())
        return lost

    seen = run_nodes(echo_server, tls_echo_server, client(talk))
    assert seen["result"] == [True, True]


def test_after_a_reset_reads_raise_it_again_and_drain_raises_while_write_is_ignored() -> None:
    async def talk(node: Any) -> Any:
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.write(b"x")
        errors = []
        for _ in range(2):  # a StreamReader keeps the error: every read raises it
            try:
                await reader.read(10)
            except ConnectionResetError as exc:
                errors.append(exc.errno)
        writer.write(b"after")  # asyncio's transport ignores it (counted, not raised)
        try:
            await writer.drain()
        except ConnectionResetError as exc:
            errors.append(exc.errno)
        writer.close()
        await asyncio.sleep(0)
        return errors

    seen = run_nodes(resetting_server, client(talk))
    assert seen["result"] == [errno.ECONNRESET] * 3


def test_a_tls_peer_that_never_answers_the_close_is_cut_after_the_shutdown_timeout() -> None:
    out: dict[str, Any] = {}

    async def talk(node: Any) -> None:
        loop = asyncio.get_running_loop()
        _transport, proto = await loop.create_connection(
            Recorder, "node-0", PORT, ssl=client_context(), ssl_shutdown_timeout=5
        )
        out["proto"] = proto
        await asyncio.sleep(1e9)

    async def body(world: askew.World) -> None:
        world.spawn(tls_echo_server)
        world.spawn(talk)
        await asyncio.sleep(1)
        proto = out["proto"]
        world.net.isolate(0)  # the close_notify goes nowhere; none comes back
        start = world.now
        proto.transport.close()
        exc = await proto.lost
        assert isinstance(exc, TimeoutError) and "SSL shutdown timed out" in str(exc)
        assert 5 <= world.now - start < 5.1

    run_sim(body)


def test_tls_to_a_crashed_node_times_out_as_tcp_does() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        node._askew_world.faults.crash(0)
        start = loop.time()
        with pytest.raises(TimeoutError) as info:
            await asyncio.open_connection("node-0", PORT, ssl=client_context())
        return info.value.errno, loop.time() - start

    code, after = run_nodes(tls_echo_server, client(talk))["result"]
    assert code == errno.ETIMEDOUT and 127 <= after < 127 * 1.13


def test_a_tls_server_closed_with_live_connections_leaves_them_open() -> None:
    async def talk(node: Any) -> Any:
        reader, writer = await asyncio.open_connection("node-0", PORT, ssl=client_context())
        writer.write(b"one")
        assert await reader.readexactly(3) == b"one"
        server = node._askew_world.nodes[0].server
        server.close()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("node-0", PORT, ssl=client_context())
        writer.write(b"two")  # the accepted TLS connection lives on
        got = await reader.readexactly(3)
        writer.close()
        await writer.wait_closed()
        return got

    assert run_nodes(tls_echo_server, client(talk))["result"] == b"two"


# ---- the server's clients (asyncio 3.13) ---------------------------------------------


@pytest.mark.skipif(
    not hasattr(asyncio.base_events.Server, "close_clients"), reason="asyncio 3.13+"
)
@pytest.mark.parametrize("how", ["close_clients", "abort_clients"])
def test_close_clients_and_abort_clients_end_every_accepted_connection(how: str) -> None:
    async def both(node: Any) -> Any:
        held: list[asyncio.StreamWriter] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            held.append(writer)
            await asyncio.sleep(1e9)

        server = await asyncio.start_server(handle, None, 7)
        readers = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("localhost", 7)
            readers.append((reader, writer))
        await asyncio.sleep(0.1)
        server.close()
        getattr(server, how)()
        await asyncio.wait_for(server.wait_closed(), 1)  # no client is left
        return [await reader.read() for reader, _ in readers], len(held)

    assert run_nodes(client(both))["result"] == ([b"", b"", b""], 3)


def test_close_clients_is_there_exactly_when_asyncio_has_it() -> None:
    assert hasattr(_server.Server, "close_clients") == hasattr(
        asyncio.base_events.Server, "close_clients"
    )
    assert hasattr(_server.Server, "abort_clients") == hasattr(
        asyncio.base_events.Server, "abort_clients"
    )
