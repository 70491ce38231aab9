# SPDX-License-Identifier: Apache-2.0
"""Simulated TCP and names (askew/_net/, docs/sockets.md): each
semantic the model promises, its edges, and determinism."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
import sys
from typing import Any

import pytest
from conftest import echo_server, json_in_hash_seeds, run_sim

import askew
from askew._loop.nodes import node_var as _node_var
from askew.errors import NondeterminismError

LINGER_0 = struct.pack("ii", 1, 0)  # SO_LINGER on, zero seconds: close() resets


async def resetting_server(node: Any, port: int = 7) -> None:
    """Read one byte from each connection, then abort it with SO_LINGER
    zero: close() resets even with nothing unread (Linux)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(1)
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_0)
        writer.transport.abort()

    node.server = await asyncio.start_server(handle, None, port)
    await asyncio.sleep(1e9)


class Recorder(asyncio.Protocol):
    """A protocol that writes down every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.data = bytearray()
        self.lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.calls.append(("made", None))

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.calls.append(("data", len(data)))

    def eof_received(self) -> bool:
        self.calls.append(("eof", None))
        return True

    def pause_writing(self) -> None:
        self.calls.append(("pause", self.transport.get_write_buffer_size()))

    def resume_writing(self) -> None:
        self.calls.append(("resume", self.transport.get_write_buffer_size()))

    def connection_lost(self, exc: BaseException | None) -> None:
        self.calls.append(("lost", exc))
        if not self.lost.done():
            self.lost.set_result(exc)


def run_nodes(*targets: Any, seed: int = 0, until: float = 3600, setup: Any = None) -> Any:
    """Spawn each target as a node (node 0 first) and run until the last
    one returns; return the world's log and stats as seen at its end."""
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        if setup is not None:
            setup(world)
        handles = [world.spawn(t) for t in targets]
        last = handles[-1]
        while not getattr(last, "finished", False):
            await asyncio.sleep(0.01)
            assert world.now < until, "the scenario did not finish"
        seen["stats"] = world.net.stats()
        seen["log"] = [str(e) for e in world.log]
        seen["result"] = last.result

    run_sim(body, seed=seed)
    return seen


def client(fn: Any) -> Any:
    """A node target that stores fn(node)'s result and says when it is done."""

    async def target(node: Any) -> None:
        node.result = None
        try:
            node.result = await fn(node)
        finally:
            node.finished = True

    return target


# ---- names -------------------------------------------------------------------


def test_every_node_has_an_address_and_a_hostname_that_resolve() -> None:
    async def body(world: askew.World) -> None:
        a = world.spawn(echo_server)
        b = world.spawn(echo_server, name="db")
        assert (world.address(a), world.hostname(a)) == ("10.0.0.1", "node-0")
        assert (world.address(b), world.hostname(b)) == ("10.0.0.2", "db")
        assert socket.gethostbyname("db") == "10.0.0.2"
        assert socket.gethostbyname("node-0") == "10.0.0.1"
        assert socket.gethostbyname("localhost") == "127.0.0.1"
        assert socket.gethostbyname_ex("DB") == ("db", [], ["10.0.0.2"])
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo("db", 80, type=socket.SOCK_STREAM)
        assert infos == [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", 80))]
        assert len(socket.getaddrinfo("db", "80")) == 3  # stream, datagram, raw: as Linux
        assert await loop.getnameinfo(("10.0.0.1", 2222)) == ("node-0", "2222")
        assert await loop.getnameinfo(("10.0.0.1", 2222), socket.NI_NUMERICHOST) == (
            "10.0.0.1",
            "2222",
        )

    run_sim(body)


def test_addresses_count_on_past_254_nodes() -> None:
    from askew._net.addr import address_of
    from askew._net.addr import node_of_address as _node_of_address

    assert address_of(0) == "10.0.0.1"
    assert address_of(254) == "10.0.0.255"
    assert address_of(255) == "10.0.1.0"
    assert all(_node_of_address(address_of(n)) == n for n in (0, 1, 254, 255, 70000))


def test_an_unknown_name_fails_as_a_real_lookup_does() -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(socket.gaierror) as info:
            socket.getaddrinfo("nowhere", 80)
        assert info.value.errno == socket.EAI_NONAME
        with pytest.raises(socket.gaierror) as info:
            await asyncio.get_running_loop().getaddrinfo("nowhere", 80)
        assert info.value.errno == socket.EAI_NONAME
        with pytest.raises(socket.gaierror):
            socket.gethostbyname("nowhere")

    run_sim(body)


def test_outside_a_run_names_resolve_as_before() -> None:
    original = socket.getaddrinfo

    async def body(world: askew.World) -> None:
        assert socket.getaddrinfo is not original

    run_sim(body)
    assert socket.getaddrinfo is original
    assert socket.getaddrinfo("127.0.0.1", 80)  # numeric: no query, the real function


def test_spawn_refuses_a_bad_or_taken_hostname() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(echo_server, name="db")
        for bad in ("", "a b", "-x", "localhost", "10.0.0.1", "x" * 64):
            with pytest.raises(ValueError, match="hostname"):
                world.spawn(echo_server, name=bad)
        with pytest.raises(ValueError, match="node 0 has that name"):
            world.spawn(echo_server, name="DB")
        for default in ("node-1", "NODE-7", "node-01", "node-0"):
            # node 1's default name, before or after node 1 exists: refused
            with pytest.raises(ValueError, match="default names of nodes"):
                world.spawn(echo_server, name=default)
        world.spawn(echo_server)  # node 1, whose name stays its own
        assert world._names["node-1"] == 1
        world.spawn(echo_server, name="node-x")  # only node-<number> is reserved
        with pytest.raises(TypeError):
            world.spawn(echo_server, name=3)  # type: ignore[arg-type]

    run_sim(body)


def test_a_node_knows_its_own_names_and_a_reverse_lookup_of_others_stays_refused() -> None:
    """aiosmtplib's EHLO asks socket.getfqdn(): a host answers that from
    what it knows of itself (issue 24, item 26)."""
    seen: dict[str, Any] = {}

    async def named(node: Any) -> None:
        seen[node.id] = (
            socket.gethostname(),
            socket.getfqdn(),
            socket.getfqdn(" 0.0.0.0 "),
            socket.getfqdn(socket.gethostname().upper()),
            socket.getfqdn("localhost"),
            socket.getaddrinfo(socket.gethostname(), 25)[0][4],
        )

    async def body(world: askew.World) -> None:
        world.spawn(named)
        world.spawn(named, name="mail.example")
        await asyncio.sleep(1)

    run_sim(body)
    assert seen[0] == ("node-0", "node-0", "node-0", "node-0", "localhost", ("10.0.0.1", 25))
    assert seen[1][:2] == ("mail.example", "mail.example")
    assert socket.gethostname() == _real_hostname()  # put back after the run

    for who in ("node", "body"):

        async def other(node: Any) -> None:
            socket.getfqdn("10.0.0.1")  # another host's address: a reverse DNS query

        async def refused_body(world: askew.World, who: str = who) -> None:
            if who == "node":
                world.spawn(other)
                await asyncio.sleep(1)
            else:
                socket.getfqdn()  # the test body is no host

        with pytest.raises(NondeterminismError, match=r"socket\.getfqdn\(\)"):
            run_sim(refused_body)


def _real_hostname() -> str:
    import _socket

    return str(_socket.gethostname())


def test_an_option_left_off_as_false_is_not_refused_as_not_built() -> None:
    """anyio passes reuse_port=False; False (like None) asks for nothing
    unbuilt. (True is refused by name: test_udp.py.)"""

    async def serve(node: Any) -> Any:
        server = await asyncio.start_server(lambda r, w: None, None, 7, reuse_port=False)
        server.close()
        return "served"

    assert run_nodes(client(serve))["result"] == "served"


def test_a_socket_from_the_test_body_is_refused_since_only_nodes_have_addresses() -> None:
    async def body(world: askew.World) -> None:
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.raises(NondeterminismError, match="from the test body"):
        run_sim(body)


def test_a_given_sock_that_is_not_a_simulated_socket_is_refused() -> None:
    async def connect(node: Any) -> None:  # (simulated ones: tests/net/test_sockets_wrap.py)
        await asyncio.open_connection(sock=True)

    async def body(world: askew.World) -> None:
        world.spawn(echo_server)
        world.spawn(connect)
        await asyncio.sleep(1)

    with pytest.raises(NondeterminismError, match=r"sock=\.\.\.\) .* given the real socket True"):
        run_sim(body)


# ---- bytes on the wire ------------------------------------------------------------


def test_bytes_arrive_in_order_exactly_once_in_segments_the_seed_chooses() -> None:
    payload = bytes(range(256)) * 40  # 10 KB

    async def talk(node: Any) -> list[int]:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(Recorder, "node-0", 7)
        proto.transport.write(payload)
        while len(proto.data) < len(payload):
            await asyncio.sleep(0.001)
        assert bytes(proto.data) == payload
        return [n for kind, n in proto.calls if kind == "data"]

    pieces = {tuple(run_nodes(echo_server, client(talk), seed=s)["result"]) for s in range(6)}
    assert all(sum(p) == len(payload) for p in pieces)
    assert len(pieces) > 1  # the seed chooses the cuts
    assert any(len(p) > 1 for p in pieces)  # one write, several reads


def test_a_segment_takes_the_links_latency() -> None:
    async def rtt(node: Any) -> float:
        reader, writer = await asyncio.open_connection("node-0", 7)
        loop = asyncio.get_running_loop()
        start = loop.time()
        writer.write(b"x")
        await reader.readexactly(1)
        return loop.time() - start

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.05, 0.05))

    took = run_nodes(echo_server, client(rtt), setup=setup)["result"]
    assert 0.1 <= took < 0.101  # there and back, 50 ms each, plus CPU time


def test_loss_is_retransmission_and_no_byte_is_lost() -> None:
    payload = b"".join(b"%06d" % i for i in range(5000))

    async def send_all(node: Any) -> bytes:
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.write(payload)
        writer.write_eof()
        return await reader.read()

    def setup(world: askew.World) -> None:
        world.net.configure(loss=0.3, duplicate=0.3)

    seen = run_nodes(echo_server, client(send_all), setup=setup)
    assert seen["result"] == payload  # in order, exactly once: duplicates discarded
    assert seen["stats"]["tcp_retransmits"] > 0
    assert seen["stats"]["lost"] > 0 and seen["stats"]["duplicated"] > 0


def test_a_partition_stalls_the_connection_fills_the_buffer_and_it_flows_after_the_heal() -> None:
    seen: dict[str, Any] = {}

    async def writer_node(node: Any) -> None:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(Recorder, "node-0", 7)
        node.proto = proto
        await asyncio.sleep(1 - loop.time())  # the test body cuts the link at 0.5 s
        while True:
            transport.write(b"y" * 4096)
            await asyncio.sleep(0.001)
            if proto.calls[-1][0] == "pause":
                break
        seen["paused_at"] = loop.time()
        while not any(kind == "resume" for kind, _ in proto.calls):
            await asyncio.sleep(0.01)
        seen["resumed_at"] = loop.time()

    async def body(world: askew.World) -> None:
        world.spawn(echo_server)
        w = world.spawn(writer_node)
        await asyncio.sleep(0.5)
        world.partition({0}, {1}).__enter__()  # down before the first byte
        await asyncio.sleep(5)
        assert "paused_at" in seen and "resumed_at" not in seen
        # The window (64 KiB) is out on the wire, the rest waits in the transport.
        assert w.proto.transport.get_write_buffer_size() > 64 * 1024
        world.net.heal()
        await asyncio.sleep(60)
        assert seen["resumed_at"] > 5
        assert world.net.stats()["tcp_retransmits"] > 0

    run_sim(body)


def test_a_partition_longer_than_tcp_retries2_times_the_connection_out() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(Recorder, "node-0", 7)
        await asyncio.sleep(1)
        node._askew_world.net.isolate(0)
        transport.write(b"z")
        exc = await proto.lost
        return exc, loop.time() - 1

    seen = run_nodes(echo_server, client(talk))
    exc, after = seen["result"]
    assert isinstance(exc, TimeoutError) and exc.errno == errno.ETIMEDOUT
    assert 924 < after < 924.6 * 1.13  # Linux: tcp_retries2 = 15, ~924.6 s, plus jitter
    assert seen["stats"]["tcp_timeouts"] == 1


# ---- connecting ---------------------------------------------------------------------


def test_connecting_to_a_port_with_no_listener_is_refused_after_a_round_trip() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ConnectionRefusedError) as info:
            await asyncio.open_connection("node-0", 9)
        assert info.value.errno == errno.ECONNREFUSED
        return loop.time() - start

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.02, 0.02))

    seen = run_nodes(echo_server, client(talk), setup=setup)
    assert 0.04 <= seen["result"] < 0.041
    assert seen["stats"]["tcp_refused"] == 1
    assert any("refuse" in line for line in seen["log"])


def test_connecting_to_a_crashed_node_times_out_as_a_syn_does() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TimeoutError) as info:
            await asyncio.open_connection("node-0", 7)
        assert info.value.errno == errno.ETIMEDOUT
        return loop.time() - start

    def setup(world: askew.World) -> None:
        world.spawn(echo_server)
        world.faults.crash(0)

    seen = run_nodes(client(talk), setup=setup)
    assert 127 <= seen["result"] < 127 * 1.13  # 1+2+4+...+64 s: tcp_syn_retries = 6


def test_a_users_timeout_fires_first_when_connecting_to_an_isolated_node() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.open_connection("node-0", 7), 3)
        return loop.time() - start

    def setup(world: askew.World) -> None:
        world.spawn(echo_server)
        world.net.isolate(0)

    assert 3 <= run_nodes(client(talk), setup=setup)["result"] < 3.01


def test_a_crashed_peer_is_silent_until_restarted_and_then_answers_with_a_reset() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(echo_server)
        out: dict[str, Any] = {}

        async def talk(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            writer.write(b"a")
            assert await reader.readexactly(1) == b"a"
            out["writer"], out["reader"] = writer, reader

        world.spawn(talk)
        await asyncio.sleep(1)
        world.faults.crash(0)
        out["writer"].write(b"b")  # into the void: retransmitted, no answer
        await asyncio.sleep(5)
        assert not out["reader"].at_eof() and out["reader"]._exception is None
        world.faults.restart(0)
        await asyncio.sleep(30)  # the next retransmission reaches the new kernel
        with pytest.raises(ConnectionResetError):
            await out["reader"].read(1)
        assert world.net.stats()["tcp_resets"] == 1

    run_sim(body)


def test_a_restarted_node_listens_again_on_its_port_with_a_fresh_kernel() -> None:
    async def body(world: askew.World) -> None:
        server = world.spawn(echo_server)
        await asyncio.sleep(0.1)
        world.faults.restart(server)  # the old listener died with its incarnation
        await asyncio.sleep(0.1)

        async def talk(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            writer.write(b"a")
            node.got = await reader.readexactly(1)

        c = world.spawn(talk)
        await asyncio.sleep(1)
        assert c.got == b"a"

    run_sim(body)


# ---- closing ----------------------------------------------------------------------------


def test_close_sends_fin_and_the_peer_reads_eof() -> None:
    class ClosesOnEof(Recorder):
        def eof_received(self) -> bool:
            super().eof_received()
            return False  # so the transport closes itself, as asyncio's do

    async def talk(node: Any) -> list[Any]:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(ClosesOnEof, "node-0", 7)
        transport.write(b"hi")
        transport.write_eof()  # the echo server sees EOF, echoes, closes
        exc = await proto.lost
        assert exc is None and bytes(proto.data) == b"hi"
        return [kind for kind, _ in proto.calls]

    calls = run_nodes(echo_server, client(talk))["result"]
    assert calls[0] == "made" and calls[-2:] == ["eof", "lost"]


def test_abort_with_so_linger_zero_sends_rst_and_the_peer_reading_gets_a_reset() -> None:
    async def talk(node: Any) -> str:
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.write(b"!")
        with pytest.raises(ConnectionResetError):
            await reader.read(10)
        with pytest.raises(ConnectionResetError):  # and again: reading after a reset
            await reader.read(10)
        return "reset"

    assert run_nodes(resetting_server, client(talk))["result"] == "reset"


def test_write_eof_half_closes_and_the_other_way_stays_open() -> None:
    async def server(node: Any) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            request = await reader.read()  # up to EOF
            writer.write(request[::-1])
            writer.close()

        await asyncio.start_server(handle, None, 7)
        await asyncio.sleep(1e9)

    async def talk(node: Any) -> bytes:
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.write(b"abc")
        assert writer.can_write_eof()
        writer.write_eof()
        with pytest.raises(RuntimeError, match="after write_eof"):
            writer.write(b"more")
        return await reader.read()

    assert run_nodes(server, client(talk))["result"] == b"cba"


def test_writing_after_close_is_ignored_and_logged_after_five_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def talk(node: Any) -> bool:
        _reader, writer = await asyncio.open_connection("node-0", 7)
        writer.close()
        await writer.wait_closed()
        for _ in range(7):
            writer.write(b"late")  # no exception, as asyncio
        writer.close()  # closing twice is harmless
        writer.transport.abort()  # and aborting after a close does nothing
        return writer.is_closing()

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        assert run_nodes(echo_server, client(talk))["result"] is True
    warnings = [r for r in caplog.records if "socket.send() raised exception" in r.message]
    assert len(warnings) == 3  # writes 5, 6 and 7: the close counts as the first loss


def test_binding_a_port_twice_is_eaddrinuse() -> None:
    async def bind_twice(node: Any) -> str:
        server = await asyncio.start_server(lambda r, w: None, None, 80)
        with pytest.raises(OSError) as info:
            await asyncio.start_server(lambda r, w: None, "127.0.0.1", 80)
        assert info.value.errno == errno.EADDRINUSE
        assert "address already in use" in str(info.value)
        with pytest.raises(OSError) as info:
            await asyncio.start_server(lambda r, w: None, "10.0.0.9", 81)
        assert info.value.errno == errno.EADDRNOTAVAIL
        server.close()
        again = await asyncio.start_server(lambda r, w: None, None, 80)  # free once closed
        again.close()
        return "ok"

    assert run_nodes(client(bind_twice))["result"] == "ok"


def test_a_server_closed_with_live_connections_leaves_them_open() -> None:
    async def both(node: Any) -> bytes:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readexactly(2))
            await writer.drain()

        server = await asyncio.start_server(handle, None, 7)
        assert server.is_serving() and server.sockets[0].getsockname() == ("0.0.0.0", 7)
        reader, writer = await asyncio.open_connection("localhost", 7)
        await asyncio.sleep(0.1)
        server.close()
        assert not server.is_serving() and server.sockets == ()
        if sys.version_info >= (3, 12, 1):
            # wait_closed() waits for the live connections too, as asyncio's.
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 1)
        else:
            await asyncio.wait_for(server.wait_closed(), 1)  # at once
        writer.write(b"ok")  # the accepted connection lives on
        got = await reader.readexactly(2)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("localhost", 7)
        return got

    assert run_nodes(client(both))["result"] == b"ok"


def test_serve_forever_ends_when_cancelled_and_the_server_is_an_async_context_manager() -> None:
    async def both(node: Any) -> str:
        server = await asyncio.start_server(lambda r, w: None, None, 7, start_serving=False)
        assert not server.is_serving()
        task = asyncio.create_task(server.serve_forever())
        await asyncio.sleep(0.1)
        assert server.is_serving()
        with pytest.raises(RuntimeError, match="already being awaited"):
            await server.serve_forever()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.sockets == ()
        async with await asyncio.start_server(lambda r, w: None, None, 7) as again:
            assert again.get_loop() is asyncio.get_running_loop()
        return "ok"

    assert run_nodes(client(both))["result"] == "ok"


def test_a_paused_node_s_kernel_still_answers_while_its_code_waits_for_the_resume() -> None:
    async def body(world: askew.World) -> None:
        server = world.spawn(echo_server)
        await asyncio.sleep(0.1)
        got: list[float] = []

        async def talk(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            got.append(asyncio.get_running_loop().time())  # the handshake: no server code
            writer.write(b"e")
            await reader.readexactly(1)
            got.append(asyncio.get_running_loop().time())  # the echo: the server's code

        async with world.faults.pause(server):
            world.spawn(talk)
            await asyncio.sleep(3)
            assert len(got) == 1 and got[0] < 1
        await asyncio.sleep(1)
        assert len(got) == 2 and got[1] >= 3

    run_sim(body)


def test_a_full_accept_queue_drops_syns_which_are_retransmitted() -> None:
    async def body(world: askew.World) -> None:
        async def server(node: Any) -> None:
            node.server = await asyncio.start_server(
                lambda r, w: None, None, 7, backlog=2, start_serving=False
            )
            await asyncio.sleep(1e9)

        times: list[float] = []

        async def connect(node: Any) -> None:
            await asyncio.open_connection("node-0", 7)
            times.append(round(asyncio.get_running_loop().time()))

        s = world.spawn(server)
        await asyncio.sleep(0.1)
        for _ in range(4):
            world.spawn(connect)
        await asyncio.sleep(0.5)
        assert len(times) == 2  # the kernel completes two handshakes nobody accepts yet
        await s.server.start_serving()
        await asyncio.sleep(5)
        assert len(times) == 4 and sorted(times)[2] >= 1  # after a 1 s SYN timeout

    run_sim(body)


def test_bad_arguments_fail_as_asyncio_and_the_socket_module_do() -> None:
    async def node_code(node: Any) -> None:
        loop = asyncio.get_running_loop()
        with pytest.raises(TypeError, match="backlog"):
            await asyncio.start_server(lambda r, w: None, None, 7, backlog="many")
        assert socket.getaddrinfo("node-0", 70000)[0][4] == ("10.0.0.1", 4464)  # 16 bits, as glibc
        assert socket.getaddrinfo("node-0", "http")[0][4] == ("10.0.0.1", 80)  # a known service
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo("node-0", "no-such-service")
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo("10.0.0.1", 80, socket.AF_INET6)  # node addresses are IPv4
        with pytest.raises(ValueError, match="host and port"):
            await loop.create_connection(asyncio.Protocol)
        with pytest.raises(OSError) as info:
            await asyncio.open_connection("10.9.9.9", 80)  # no node has that address
        assert info.value.errno == errno.ENETUNREACH
        await asyncio.start_server(lambda r, w: None, None, 7)
        _reader, writer = await asyncio.open_connection("localhost", 7)
        with pytest.raises(TypeError, match="bytes-like"):
            writer.write("text")  # type: ignore[arg-type]
        node.ok = True

    async def body(world: askew.World) -> None:
        n = world.spawn(node_code)
        await asyncio.sleep(1)
        assert n.ok

    run_sim(body)


# ---- transports and protocols ------------------------------------------------------------


def test_flow_control_pauses_at_the_high_water_mark_and_resumes_at_the_low() -> None:
    async def slow_reader(node: Any) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.transport.pause_reading()
            await asyncio.sleep(10)
            writer.transport.resume_reading()
            while await reader.read(65536):
                pass

        await asyncio.start_server(handle, None, 7)
        await asyncio.sleep(1e9)

    async def talk(node: Any) -> list[Any]:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(Recorder, "node-0", 7)
        transport.set_write_buffer_limits(high=32 * 1024)
        assert transport.get_write_buffer_limits() == (8 * 1024, 32 * 1024)
        with pytest.raises(ValueError):
            transport.set_write_buffer_limits(high=1, low=2)
        for _ in range(50):
            transport.write(b"w" * 4096)
        while not any(kind == "resume" for kind, _ in proto.calls):
            await asyncio.sleep(0.1)
        return [c for c in proto.calls if c[0] in ("pause", "resume")]

    calls = run_nodes(slow_reader, client(talk))["result"]
    assert calls[0][0] == "pause" and calls[0][1] > 32 * 1024
    assert calls[1][0] == "resume" and calls[1][1] <= 8 * 1024


def test_a_buffered_protocol_fills_its_buffer() -> None:
    class Buffered(asyncio.BufferedProtocol):
        def __init__(self) -> None:
            self.buf = bytearray(100)
            self.got = bytearray()

        def get_buffer(self, sizehint: int) -> bytearray:
            return self.buf

        def buffer_updated(self, nbytes: int) -> None:
            self.got += self.buf[:nbytes]

    async def talk(node: Any) -> bytes:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(Buffered, "node-0", 7)
        transport.write(b"q" * 1000)
        while len(proto.got) < 1000:
            await asyncio.sleep(0.01)
        return bytes(proto.got)

    assert run_nodes(echo_server, client(talk))["result"] == b"q" * 1000


def test_extra_info_names_both_ends_and_a_socket_like_object() -> None:
    async def talk(node: Any) -> Any:
        _reader, writer = await asyncio.open_connection("node-0", 7)
        sock = writer.get_extra_info("socket")
        assert sock.getpeername() == writer.get_extra_info("peername") == ("10.0.0.1", 7)
        assert sock.getsockname() == writer.get_extra_info("sockname")
        assert sock.family == socket.AF_INET and sock.type == socket.SOCK_STREAM
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return writer.get_extra_info("sockname"), writer.get_extra_info("nope", 5)

    (addr, port), default = run_nodes(echo_server, client(talk))["result"]
    assert addr == "10.0.0.2" and 32768 <= port <= 60999 and default == 5


def test_connection_events_are_logged_and_counted() -> None:
    async def talk(node: Any) -> None:
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.write(b"x")
        await reader.readexactly(1)
        writer.close()
        await writer.wait_closed()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("node-0", 8)

    seen = run_nodes(echo_server, client(talk))
    kinds = {line.split()[1] for line in seen["log"]}
    assert {"connect", "accept", "refuse", "close", "tcp"} <= kinds
    stats = seen["stats"]
    assert stats["tcp_connects"] == 2 and stats["tcp_accepts"] == 1
    assert stats["tcp_refused"] == 1 and stats["tcp_bytes"] == 2


def test_ten_thousand_connections_in_one_run_leak_nothing() -> None:
    async def many(node: Any) -> Any:
        for _ in range(10_000):
            reader, writer = await asyncio.open_connection("node-0", 7)
            writer.write(b"p")
            await reader.readexactly(1)
            writer.close()
            await writer.wait_closed()
        await asyncio.sleep(1)
        used = node._askew_world._tcp.used
        shift = askew._core.NODE_TOKEN_SHIFT
        return sorted((token >> shift, dict(ports)) for token, ports in used.items())

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.0001, 0.0002))

    seen = run_nodes(echo_server, client(many), setup=setup)
    assert seen["result"] == [(0, {7: 1}), (1, {})]  # only the listener's port is held
    assert seen["stats"]["tcp_accepts"] == 10_000 and seen["stats"]["in_flight"] == 0


# ---- determinism ---------------------------------------------------------------------------

_SCENARIO = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import askew
from test_sockets import echo_server

hashes = []

async def talk(node):
    reader, writer = await asyncio.open_connection("node-0", 7)
    for i in range(20):
        writer.write(b"%d," % i * 300)
        await reader.readexactly(len(b"%d," % i * 300))
    writer.close()

async def body(world):
    world.net.configure(loss=0.1, duplicate=0.1)
    world.spawn(echo_server)
    world.spawn(talk)
    await asyncio.sleep(30)
    hashes.append([world.log.hash, world.net.stats()])

for seed in (1, 2):
    askew.simulate(seed=seed, iterations=1)(body)()
print(json.dumps(hashes))
"""


def test_the_same_seed_gives_the_same_trace_across_processes_and_hash_seeds() -> None:
    first, second = json_in_hash_seeds(_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] != first[1]  # and the seed does decide


# ---- low-level socket methods on simulated sockets (askew/_net/rawsock.py) -----------------


async def raw_upper_server(node: Any) -> None:
    """socket.socket + sock_accept/sock_recv/sock_sendall: an upper-casing echo."""
    loop = asyncio.get_running_loop()
    listener = socket.socket()
    listener.bind(("0.0.0.0", 7))
    listener.listen()
    node.listener = listener
    node.tasks = []

    async def serve(conn: Any) -> None:
        while data := await loop.sock_recv(conn, 1024):
            await loop.sock_sendall(conn, data.upper())
        conn.close()

    while True:
        conn, _ = await loop.sock_accept(listener)
        node.tasks.append(asyncio.create_task(serve(conn)))


def test_a_nodes_socket_socket_is_simulated_and_the_sock_methods_talk_over_it() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        await loop.sock_connect(s, ("node-0", 7))
        await loop.sock_sendall(s, b"hello" * 3000)
        got = bytearray()
        buf = bytearray(700)
        while len(got) < 15000:
            n = await loop.sock_recv_into(s, buf)
            got += buf[:n]
        peer = s.getpeername()  # before close(): then it is EBADF, as Linux
        s.close()
        return bytes(got), s.fileno(), isinstance(s, socket.socket), peer

    got, fileno, is_socket, peer = run_nodes(raw_upper_server, client(talk))["result"]
    assert got == b"HELLO" * 3000 and fileno == -1 and is_socket and peer == ("10.0.0.1", 7)


def test_add_reader_on_a_simulated_socket_fires_while_it_is_readable_in_the_nodes_context() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        s = socket.socket()
        await loop.sock_connect(s, ("node-0", 7))
        fired: list[Any] = []
        done = loop.create_future()

        def readable() -> None:
            fired.append(_node_var.get(None) >> askew._core.NODE_TOKEN_SHIFT)
            if len(fired) == 3:  # level-triggered: fires again until read
                loop.remove_reader(s)
                done.set_result(None)

        writable = loop.create_future()
        loop.add_writer(s, lambda: (loop.remove_writer(s), writable.set_result(True)))
        await writable
        loop.add_reader(s, readable)
        await loop.sock_sendall(s, b"x")
        await done
        return fired, await loop.sock_recv(s, 10), loop.remove_reader(s)

    fired, data, removed = run_nodes(raw_upper_server, client(talk))["result"]
    assert fired == [1, 1, 1] and data == b"X" and removed is False


def test_low_level_datagrams_and_their_errors_are_as_on_linux() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", 5000))
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with pytest.raises(OSError) as inuse:
            other.bind(("127.0.0.1", 5000))
        with pytest.raises(OSError) as big:
            await loop.sock_sendto(u, b"x" * 65508, ("127.0.0.1", 5000))
        await loop.sock_sendto(u, b"to me", ("127.0.0.1", 5000))
        buf = bytearray(2)
        n, addr = await loop.sock_recvfrom_into(u, buf)  # the rest of the datagram is cut
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        await loop.sock_connect(c, ("node-0", 99))  # nobody there
        await loop.sock_sendall(c, b"?")
        with pytest.raises(ConnectionRefusedError):
            await loop.sock_recv(c, 10)
        u.close()
        with pytest.raises(OSError) as closed:
            await loop.sock_recv(u, 10)
        return inuse.value.errno, big.value.errno, bytes(buf[:n]), addr, closed.value.errno

    inuse, big, data, addr, closed = run_nodes(raw_upper_server, client(talk))["result"]
    assert inuse == errno.EADDRINUSE and big == errno.EMSGSIZE and closed == errno.EBADF
    assert data == b"to" and addr == ("127.0.0.1", 5000)


def test_a_real_socket_stays_refused_by_the_low_level_methods() -> None:
    real = socket.socket()  # made before the run: a real fd
    try:

        async def talk(node: Any) -> None:
            await asyncio.get_running_loop().sock_recv(real, 10)

        with pytest.raises(NondeterminismError, match="sock_recv"):
            run_nodes(client(talk))

        async def watch(node: Any) -> None:
            asyncio.get_running_loop().add_reader(real, print)

        with pytest.raises(NondeterminismError, match="add_reader"):
            run_nodes(client(watch))
    finally:
        real.close()


def test_socket_socket_from_the_test_body_is_still_a_real_socket_and_refused() -> None:
    async def body(world: askew.World) -> None:
        with socket.socket() as s:  # the preload, when loaded, refuses this already
            assert not isinstance(s, askew._net.rawsock.RawSocket)
            s.connect(("127.0.0.1", 9))

    with pytest.raises(NondeterminismError, match="connect"):
        run_sim(body)


def test_a_simulated_sockets_blocking_methods_are_refused_naming_the_loop_method() -> None:
    async def talk(node: Any) -> None:
        s = socket.socket()
        await asyncio.get_running_loop().sock_connect(s, ("node-0", 7))
        s.recv(10)

    with pytest.raises(NondeterminismError, match=r"loop.sock_recv\(sock"):
        run_nodes(raw_upper_server, client(talk))


_RAW_TALK = """
async def talk(node):
    loop = asyncio.get_running_loop()
    s = socket.socket()
    await loop.sock_connect(s, ("node-0", 7))
    for i in range(30):
        await loop.sock_sendall(s, b"%d," % i * 200)
        await loop.sock_recv(s, 4096)

"""
# The TCP scenario with the upper-casing raw server and a raw client.
_RAW_SCENARIO = (
    _SCENARIO[: _SCENARIO.index("async def talk")]
    .replace("import asyncio,", "import asyncio, socket,")
    .replace("import echo_server", "import raw_upper_server as echo_server")
    + _RAW_TALK
    + _SCENARIO[_SCENARIO.index("async def body") :]
)


def test_low_level_sockets_give_the_same_trace_across_processes_and_hash_seeds() -> None:
    first, second = json_in_hash_seeds(_RAW_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] != first[1]


def test_a_real_hosts_name_is_refused_as_real_dns_not_an_unknown_name() -> None:
    """A dotted name no node has (a world of undotted node names) is the
    real world's: looking it up is refused, naming real DNS, rather than
    failing as if the network's DNS were broken."""
    import urllib.request

    calls: list[Any] = [
        lambda: socket.getaddrinfo("example.com", 80),
        lambda: socket.gethostbyname("example.com"),
        lambda: socket.create_connection(("example.com", 80)),
        lambda: urllib.request.urlopen("http://example.com/", timeout=5),
    ]
    for call in calls:

        async def body(world: askew.World, call: Any = call) -> None:
            world.spawn(lambda node: asyncio.sleep(1))
            call()

        with pytest.raises(askew.NondeterminismError) as info:
            run_sim(body)
        assert "getaddrinfo('example.com') inside a simulation would send a real DNS query" in str(
            info.value
        )
        assert "their 10.0.0.x addresses and localhost" in str(info.value)

    async def named(world: askew.World) -> None:
        world.spawn(lambda node: asyncio.sleep(1), name="db.cluster")
        with pytest.raises(socket.gaierror):  # perhaps a node not spawned yet
            socket.getaddrinfo("web.cluster", 80)
        assert socket.getaddrinfo("db.cluster", 80)[0][4][0] == "10.0.0.1"

    run_sim(named)


def test_create_connection_takes_proto_flags_and_all_errors_as_asyncio() -> None:
    def lookup_error(**kwargs: Any) -> int:
        with pytest.raises(socket.gaierror) as real:
            socket.getaddrinfo("localhost", 7, type=socket.SOCK_STREAM, **kwargs)
        return int(real.value.errno)

    expected = [
        lookup_error(proto=socket.IPPROTO_UDP),
        lookup_error(flags=socket.AI_NUMERICHOST),
    ]

    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        got = []
        for kwargs in ({"proto": socket.IPPROTO_UDP}, {"flags": socket.AI_NUMERICHOST}):
            with pytest.raises(socket.gaierror) as info:
                await loop.create_connection(asyncio.Protocol, "localhost", 7, **kwargs)
            got.append(info.value.errno)
        transport, _ = await loop.create_connection(
            asyncio.Protocol, "10.0.0.1", 7, proto=socket.IPPROTO_TCP, flags=socket.AI_NUMERICHOST
        )
        transport.close()
        if sys.version_info >= (3, 12):
            with pytest.raises(ExceptionGroup) as group:
                await loop.create_connection(asyncio.Protocol, "10.0.0.1", 8, all_errors=True)
            assert [type(e) for e in group.value.exceptions] == [ConnectionRefusedError]
        return got

    assert run_nodes(echo_server, client(talk))["result"] == expected


@pytest.mark.skipif(sys.version_info < (3, 13), reason="create_server(keep_alive=) is 3.13's")
def test_create_server_keep_alive_turns_it_on_for_every_accepted_connection() -> None:
    async def both(node: Any) -> Any:
        accepted: list[int] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            accepted.append(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE))

        await asyncio.start_server(handle, None, 7, keep_alive=True)
        await asyncio.open_connection("localhost", 7)
        await asyncio.sleep(0.1)
        return accepted

    assert run_nodes(client(both))["result"] == [1]
