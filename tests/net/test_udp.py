# SPDX-License-Identifier: Apache-2.0
"""Simulated UDP (askew/_net/udp.py, docs/sockets.md "Datagrams"): each
semantic the model promises, its edges, and determinism."""

from __future__ import annotations

import asyncio
import errno
import logging
import sys
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim
from test_sockets import client, run_nodes

import askew
from askew.errors import NondeterminismError


class Rec(asyncio.DatagramProtocol):
    """A datagram protocol that writes down every call it gets."""

    def __init__(self) -> None:
        self.got: list[tuple[bytes, Any]] = []
        self.errors: list[BaseException] = []
        self.lost: list[BaseException | None] = []
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.got.append((data, addr))

    def error_received(self, exc: Exception) -> None:
        self.errors.append(exc)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost.append(exc)


class Echo(Rec):
    def datagram_received(self, data: bytes, addr: Any) -> None:
        super().datagram_received(data, addr)
        self.transport.sendto(data, addr)


async def echo_server(node: Any, port: int = 9) -> None:
    loop = asyncio.get_running_loop()
    node.transport, node.proto = await loop.create_datagram_endpoint(
        Echo, local_addr=("0.0.0.0", port)
    )
    await asyncio.sleep(1e9)


async def endpoint(**kwargs: Any) -> tuple[Any, Rec]:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(Rec, **kwargs)
    return transport, proto


# ---- the round trip --------------------------------------------------------------


def test_a_datagram_goes_there_and_back_with_both_addresses() -> None:
    async def talk(node: Any) -> Any:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        transport.sendto(b"ping")
        await asyncio.sleep(1)
        sock = transport.get_extra_info("socket")
        return (
            proto.got,
            transport.get_extra_info("sockname"),
            transport.get_extra_info("peername"),
            sock.type,
        )

    got, sockname, peername, kind = run_nodes(echo_server, client(talk))["result"]
    assert got == [(b"ping", ("10.0.0.1", 9))]
    assert sockname == ("10.0.0.2", 32768) and peername == ("10.0.0.1", 9)
    assert kind == askew._net.udp.socket.SOCK_DGRAM


def test_an_unconnected_endpoint_sends_to_any_address_and_loopback_reaches_itself() -> None:
    async def talk(node: Any) -> Any:
        transport, proto = await endpoint(local_addr=("127.0.0.1", 5000))
        other, _ = await endpoint(local_addr=("0.0.0.0", 0))
        other.sendto(b"self", ("localhost", 5000))
        transport.sendto(b"far", ("node-0", 9))
        await asyncio.sleep(1)
        return proto.got

    got = run_nodes(echo_server, client(talk))["result"]
    assert got == [(b"self", ("127.0.0.1", 32768))]  # node-0's echo goes to 10.0.0.2:5000: unbound


def test_a_datagram_takes_the_links_latency() -> None:
    async def rtt(node: Any) -> float:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        loop = asyncio.get_running_loop()
        start = loop.time()
        transport.sendto(b"x")
        while not proto.got:
            await asyncio.sleep(0.0001)
        return loop.time() - start

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.05, 0.05))

    took = run_nodes(echo_server, client(rtt), setup=setup)["result"]
    assert 0.1 <= took < 0.101  # there and back, 50 ms each, plus CPU time


def test_loss_drops_datagrams_for_good_and_duplication_delivers_twice() -> None:
    async def blast(node: Any) -> Any:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        for i in range(400):
            transport.sendto(b"%d" % i)
        await asyncio.sleep(5)
        return [d for d, _ in proto.got]

    def setup(world: askew.World) -> None:
        world.net.configure(loss=0.3, duplicate=0.3)

    seen = run_nodes(echo_server, client(blast), setup=setup)
    got = seen["result"]
    assert len(set(got)) < 400  # nothing is retransmitted
    assert len(got) > len(set(got))  # some arrived more than once
    assert seen["stats"]["lost"] > 0 and seen["stats"]["duplicated"] > 0
    assert seen["stats"]["tcp_retransmits"] == 0


def test_datagrams_reorder_when_latency_varies() -> None:
    async def blast(node: Any) -> Any:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        for i in range(50):
            transport.sendto(b"%d" % i)
        await asyncio.sleep(5)
        return [int(d) for d, _ in proto.got]

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.001, 0.05))

    got = run_nodes(echo_server, client(blast), setup=setup)["result"]
    assert sorted(got) == list(range(50)) and got != list(range(50))


def test_a_partition_and_a_crashed_receiver_drop_datagrams_with_no_error() -> None:
    async def body(world: askew.World) -> None:
        server = world.spawn(echo_server)
        await asyncio.sleep(0.1)
        out: dict[str, Any] = {}

        async def talk(node: Any) -> None:
            out["t"], out["p"] = await endpoint(remote_addr=("node-0", 9))

        world.spawn(talk)
        await asyncio.sleep(0.1)
        with world.partition({0}, {1}):
            out["t"].sendto(b"a")
            await asyncio.sleep(1)
        world.faults.crash(server)
        out["t"].sendto(b"b")
        await asyncio.sleep(1)
        assert out["p"].got == [] and out["p"].errors == []
        stats = world.net.stats()
        assert stats["partitioned"] >= 1 and stats["crashed"] >= 1
        world.faults.restart(server)  # listens again: its code binds again
        await asyncio.sleep(0.1)
        out["t"].sendto(b"c")
        await asyncio.sleep(1)
        assert [d for d, _ in out["p"].got] == [b"c"]

    run_sim(body)


# ---- no one listening ------------------------------------------------------------


def test_a_connected_sender_sees_port_unreachable_as_connection_refused() -> None:
    async def talk(node: Any) -> Any:
        transport, proto = await endpoint(remote_addr=("node-0", 10))
        transport.sendto(b"x")
        await asyncio.sleep(1)
        return proto.errors

    seen = run_nodes(echo_server, client(talk))
    (err,) = seen["result"]
    assert isinstance(err, ConnectionRefusedError) and err.errno == errno.ECONNREFUSED
    assert seen["stats"]["udp_no_port"] == 1 and seen["stats"]["udp_refused"] == 1
    assert any("port unreachable" in line for line in seen["log"])


def test_an_unconnected_sender_never_hears_of_a_closed_port() -> None:
    async def talk(node: Any) -> Any:
        transport, proto = await endpoint(local_addr=("0.0.0.0", 0))
        transport.sendto(b"x", ("node-0", 10))
        await asyncio.sleep(1)
        return proto.errors

    seen = run_nodes(echo_server, client(talk))
    assert seen["result"] == [] and seen["stats"]["udp_no_port"] == 1


# ---- edges and bad input -----------------------------------------------------------


def test_a_datagram_larger_than_65507_bytes_is_emsgsize_through_error_received() -> None:
    async def talk(node: Any) -> Any:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        transport.sendto(b"x" * 65508)
        transport.sendto(b"y" * 65507)
        await asyncio.sleep(1)
        return proto.errors, [len(d) for d, _ in proto.got]

    errors, sizes = run_nodes(echo_server, client(talk))["result"]
    assert [e.errno for e in errors] == [errno.EMSGSIZE]
    assert sizes == [65507]


def test_sendto_after_close_is_ignored_when_connected_and_ebadf_when_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def talk(node: Any) -> Any:
        connected, p1 = await endpoint(remote_addr=("node-0", 9))
        loose, p2 = await endpoint(local_addr=("0.0.0.0", 0))
        connected.close()
        connected.close()  # twice is harmless
        loose.close()
        for _ in range(6):
            connected.sendto(b"x")
        loose.sendto(b"x", ("node-0", 9))  # before connection_lost: sent, as asyncio's
        await asyncio.sleep(1)
        with pytest.raises(OSError) as closed:
            loose.sendto(b"x", ("node-0", 9))  # the socket is closed now
        errs2 = [*p2.errors, closed.value]
        return p1.errors, [e.errno for e in errs2], p1.lost, connected.is_closing()

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        errs1, errs2, lost, closing = run_nodes(echo_server, client(talk))["result"]
    assert errs1 == [] and errs2 == [errno.EBADF] and lost == [None] and closing
    assert "socket.send() raised exception." in caplog.text


def test_binding_a_udp_port_twice_is_eaddrinuse_but_tcp_has_its_own_ports() -> None:
    async def talk(node: Any) -> Any:
        await endpoint(local_addr=("0.0.0.0", 53))
        with pytest.raises(OSError) as caught:
            await endpoint(local_addr=("127.0.0.1", 53))
        server = await asyncio.start_server(lambda r, w: None, None, 53)
        server.close()
        return caught.value.errno

    assert run_nodes(client(talk))["result"] == errno.EADDRINUSE


def test_a_closed_endpoint_frees_its_port() -> None:
    async def talk(node: Any) -> Any:
        transport, _ = await endpoint(local_addr=("0.0.0.0", 53))
        transport.close()
        again, _ = await endpoint(local_addr=("0.0.0.0", 53))
        return again.get_extra_info("sockname")

    assert run_nodes(client(talk))["result"] == ("0.0.0.0", 53)


def test_bad_arguments_fail_as_asyncio_and_the_socket_module_do() -> None:
    async def talk(node: Any) -> None:
        transport, proto = await endpoint(remote_addr=("node-0", 9))
        with pytest.raises(TypeError, match="bytes-like"):
            transport.sendto("text")
        with pytest.raises(ValueError, match="Invalid address"):
            transport.sendto(b"x", ("node-0", 10))
        loose, _ = await endpoint(local_addr=("0.0.0.0", 0))
        with pytest.raises(TypeError, match="AF_INET address must be"):
            loose.sendto(b"x")  # no address on an unconnected endpoint
        transport.sendto(b"")  # an empty datagram: asyncio sends it from 3.13 on
        await asyncio.sleep(1)
        empty = [(b"", ("10.0.0.1", 9))] if sys.version_info >= (3, 13) else []
        assert proto.got == empty and proto.errors == []
        with pytest.raises(OSError) as caught:
            await endpoint(local_addr=("10.9.9.9", 0))
        assert caught.value.errno == errno.EADDRNOTAVAIL
        with pytest.raises(askew._net.udp.socket.gaierror):
            await endpoint(remote_addr=("no-such-host", 9))

    run_nodes(echo_server, client(talk))


def test_broadcast_needs_allow_broadcast_and_reaches_every_node() -> None:
    async def talk(node: Any) -> Any:
        loose, proto = await endpoint(local_addr=("0.0.0.0", 9))
        loose.sendto(b"all", ("255.255.255.255", 9))
        caster, _ = await endpoint(local_addr=("0.0.0.0", 0), allow_broadcast=True)
        caster.sendto(b"all", ("<broadcast>", 9))
        await asyncio.sleep(1)
        return [type(e).__name__ for e in proto.errors], proto.got

    errors, got = run_nodes(echo_server, client(talk))["result"]
    assert errors == ["PermissionError"]
    # node 0 echoes it back to the caster; the client's own port 9 gets it from loopback
    assert got == [(b"all", ("10.0.0.2", 32768))]


def test_a_full_receive_queue_drops_while_the_node_is_paused() -> None:
    async def body(world: askew.World) -> None:
        server = world.spawn(echo_server)
        await asyncio.sleep(0.1)

        async def talk(node: Any) -> None:
            transport, _ = await endpoint(remote_addr=("node-0", 9))
            for _ in range(10):
                transport.sendto(b"z" * 60000)

        async with world.faults.pause(server):
            world.spawn(talk)
            await asyncio.sleep(1)
        await asyncio.sleep(1)
        assert len(server.proto.got) == 3  # 3 x 60000 fit in 212992 bytes
        assert world.net.stats()["udp_rcvbuf_drops"] == 7

    run_sim(body)


def test_datagram_endpoints_are_refused_outside_a_world_and_from_the_test_body() -> None:
    async def body(world: askew.World) -> None:
        await endpoint(local_addr=("0.0.0.0", 0))

    with pytest.raises(NondeterminismError, match="from the test body"):
        run_sim(body)
    loop = askew.new_event_loop()
    try:
        with pytest.raises(NondeterminismError):
            loop.run_until_complete(loop.create_datagram_endpoint(Rec, local_addr=("127.0.0.1", 0)))
    finally:
        loop.close()


def test_reuse_port_lets_endpoints_share_a_port_and_each_datagram_reaches_one() -> None:
    got: list[int] = []

    async def talk(node: Any) -> None:
        class Counting(asyncio.DatagramProtocol):
            def __init__(self, i: int) -> None:
                self.i = i

            def datagram_received(self, data: bytes, addr: Any) -> None:
                got.append(self.i)

        loop = asyncio.get_running_loop()
        group = [
            await loop.create_datagram_endpoint(
                lambda i=i: Counting(i), local_addr=("127.0.0.1", 9000), reuse_port=True
            )
            for i in range(2)
        ]
        for _ in range(8):
            sender, _ = await endpoint(remote_addr=("127.0.0.1", 9000))
            sender.sendto(b"x")
            await asyncio.sleep(0.01)
            sender.close()
        for transport, _ in group:
            transport.close()

    run_nodes(client(talk))
    assert len(got) == 8 and set(got) == {0, 1}


# ---- observability, leaks, determinism ------------------------------------------------


def test_datagrams_are_logged_and_counted() -> None:
    async def talk(node: Any) -> None:
        transport, _ = await endpoint(remote_addr=("node-0", 9))
        transport.sendto(b"abc")
        await asyncio.sleep(1)
        transport.close()
        await asyncio.sleep(0)

    seen = run_nodes(echo_server, client(talk))
    assert any(
        line.split()[1] == "udp" and "10.0.0.2:32768>10.0.0.1:9 len=3" in line
        for line in seen["log"]
    )
    assert any("close udp 10.0.0.2:32768" in line for line in seen["log"])
    stats = seen["stats"]
    assert stats["udp_sent"] == 2 and stats["udp_received"] == 2 and stats["udp_bytes"] == 6


def test_a_run_without_datagrams_has_no_udp_counters() -> None:
    async def talk(node: Any) -> None:
        await asyncio.open_connection("node-0", 7)

    from conftest import echo_server as tcp_echo

    stats = run_nodes(tcp_echo, client(talk))["stats"]
    assert "tcp_connects" in stats and not any(k.startswith("udp_") for k in stats)


def test_ten_thousand_datagrams_leak_nothing() -> None:
    async def many(node: Any) -> Any:
        for _ in range(10_000):
            transport, proto = await endpoint(remote_addr=("node-0", 9))
            transport.sendto(b"p")
            while not proto.got:
                await asyncio.sleep(0.0001)
            transport.close()
        await asyncio.sleep(1)
        udp = node._askew_world._tcp.udp
        return sorted(udp.bound), {t: sorted(p) for t, p in udp.used.items() if p}

    def setup(world: askew.World) -> None:
        world.net.configure(latency=(0.0001, 0.0002))

    seen = run_nodes(echo_server, client(many), setup=setup)
    bound, used = seen["result"]
    assert bound == [(0, 9)] and list(used.values()) == [[9]]
    assert seen["stats"]["udp_received"] == 20_000 and seen["stats"]["in_flight"] == 0


_SCENARIO = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import askew
from test_udp import echo_server, endpoint

hashes = []

async def talk(node):
    transport, proto = await endpoint(remote_addr=("node-0", 9))
    for i in range(200):
        transport.sendto(b"%d," % i * 30)
        await asyncio.sleep(0.001)
    other, _ = await endpoint(remote_addr=("node-0", 99))
    other.sendto(b"nobody")

async def body(world):
    world.net.configure(loss=0.1, duplicate=0.1, latency=(0.001, 0.02))
    world.spawn(echo_server)
    world.spawn(talk)
    await asyncio.sleep(5)
    hashes.append([world.log.hash, world.net.stats()])

for seed in (1, 2):
    askew.simulate(seed=seed, iterations=1)(body)()
print(json.dumps(hashes))
"""


def test_the_same_seed_gives_the_same_datagram_trace_across_processes_and_hash_seeds() -> None:
    first, second = json_in_hash_seeds(_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] != first[1]  # and the seed does decide
