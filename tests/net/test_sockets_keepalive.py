# SPDX-License-Identifier: Apache-2.0
"""TCP keep-alive and TCP_USER_TIMEOUT on simulated connections
(askew/_net/, docs/sockets.md "Keep-alive and the user timeout"):
what a partition, a crash and a restart do to a connection that asked
for them, with Linux's timings; and the options' checks, as a real
socket's."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

import pytest
from conftest import echo_server, run_sim
from test_sockets import client, run_nodes

import askew

TCP = socket.IPPROTO_TCP


def keepalive(writer: asyncio.StreamWriter, idle: int, intvl: int, cnt: int) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(TCP, socket.TCP_KEEPIDLE, idle)
    sock.setsockopt(TCP, socket.TCP_KEEPINTVL, intvl)
    sock.setsockopt(TCP, socket.TCP_KEEPCNT, cnt)


def test_keepalive_ends_an_idle_connection_across_a_partition_after_idle_plus_count_probes() -> (
    None
):
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("node-0", 7)
        keepalive(writer, idle=10, intvl=2, cnt=3)
        writer.write(b"a")
        assert await reader.readexactly(1) == b"a"
        heard = loop.time()
        node._askew_world.net.isolate(0)
        with pytest.raises(TimeoutError) as info:
            await reader.read(1)
        return info.value.errno, loop.time() - heard

    seen = run_nodes(echo_server, client(talk))
    err, after = seen["result"]
    assert err == errno.ETIMEDOUT
    # Probes at 10, 12 and 14 s go unanswered; at 16 s the count is spent.
    assert 16 <= after < 16.01
    assert seen["stats"]["tcp_probes"] == 3 and seen["stats"]["tcp_timeouts"] == 1
    assert any("keep-alive timeout" in line for line in seen["log"])


def test_keepalive_probes_an_idle_healthy_connection_which_lives_on() -> None:
    async def talk(node: Any) -> bytes:
        reader, writer = await asyncio.open_connection("node-0", 7)
        keepalive(writer, idle=5, intvl=1, cnt=2)
        await asyncio.sleep(100)  # ~19 probes, each answered
        writer.write(b"still here")
        return await reader.readexactly(10)

    seen = run_nodes(echo_server, client(talk))
    assert seen["result"] == b"still here"
    assert seen["stats"]["tcp_probes"] >= 15 and seen["stats"]["tcp_timeouts"] == 0


def test_without_keepalive_an_idle_connection_never_notices_a_partition() -> None:
    async def talk(node: Any) -> bool:
        reader, node.writer = await asyncio.open_connection("node-0", 7)  # kept open
        node._askew_world.net.isolate(0)
        await asyncio.sleep(3 * 3600)  # longer than Linux's default idle of two hours
        return reader.at_eof() or reader.exception() is not None

    seen = run_nodes(echo_server, client(talk), until=4 * 3600)
    assert seen["result"] is False and seen["stats"]["tcp_probes"] == 0


def test_keepalive_defaults_are_linux_s_two_hours_then_nine_probes_75_s_apart() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        start = loop.time()
        node._askew_world.net.isolate(0)
        with pytest.raises(TimeoutError):
            await reader.read(1)
        return loop.time() - start

    assert 7200 + 9 * 75 <= run_nodes(echo_server, client(talk), until=3 * 3600)["result"] < 7876


def test_a_raw_socket_set_before_it_connects_keeps_alive_too() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(TCP, socket.TCP_KEEPIDLE, 4)
        sock.setsockopt(TCP, socket.TCP_KEEPINTVL, 1)
        sock.setsockopt(TCP, socket.TCP_KEEPCNT, 2)
        await loop.sock_connect(sock, ("10.0.0.1", 7))
        start = loop.time()
        node._askew_world.net.isolate(0)
        with pytest.raises(TimeoutError):
            await loop.sock_recv(sock, 1)
        sock.close()
        return loop.time() - start

    assert 6 <= run_nodes(echo_server, client(talk))["result"] < 6.02


def test_a_probe_to_a_restarted_peer_is_answered_with_a_reset() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(echo_server)
        out: dict[str, Any] = {}

        async def talk(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            keepalive(writer, idle=30, intvl=5, cnt=5)
            out["reader"], out["writer"] = reader, writer  # kept: a dropped writer closes

        world.spawn(talk)
        await asyncio.sleep(1)
        world.faults.crash(0)
        world.faults.restart(0)  # a new kernel: it knows no connection
        await asyncio.sleep(32)
        with pytest.raises(ConnectionResetError):
            await out["reader"].read(1)
        assert world.net.stats()["tcp_probes"] == 1

    run_sim(body)


def test_an_accepted_connection_inherits_the_listeners_keepalive() -> None:
    async def body(world: askew.World) -> None:
        lost: list[Any] = []

        async def serve(node: Any) -> None:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    await reader.read(1)
                except OSError as exc:
                    lost.append((exc.errno, asyncio.get_running_loop().time()))

            server = await asyncio.start_server(handle, None, 7)
            sock = server.sockets[0]
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            sock.setsockopt(TCP, socket.TCP_KEEPIDLE, 20)
            sock.setsockopt(TCP, socket.TCP_KEEPINTVL, 1)
            sock.setsockopt(TCP, socket.TCP_KEEPCNT, 4)
            await asyncio.sleep(1e9)

        async def connect(node: Any) -> None:
            node.conn = await asyncio.open_connection("node-0", 7)

        world.spawn(serve)
        await asyncio.sleep(0.5)
        world.spawn(connect)  # accepted within a round trip (<= 20 ms)
        await asyncio.sleep(1)
        world.faults.crash(1)  # the client's node goes silent, probes go unanswered
        await asyncio.sleep(60)
        assert [e for e, _ in lost] == [errno.ETIMEDOUT]
        # Idle 20 s from the accept, then 4 probes 1 s apart.
        assert 24.5 <= lost[0][1] < 24.53

    run_sim(body)


def test_user_timeout_ends_a_stalled_write_instead_of_fifteen_retransmissions() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("node-0", 7)
        writer.get_extra_info("socket").setsockopt(TCP, socket.TCP_USER_TIMEOUT, 5000)
        node._askew_world.net.isolate(0)
        start = loop.time()
        writer.write(b"z")
        with pytest.raises(TimeoutError) as info:
            await reader.read(1)
        return info.value.errno, loop.time() - start

    seen = run_nodes(echo_server, client(talk))
    err, after = seen["result"]
    assert err == errno.ETIMEDOUT and 5 <= after < 5.01  # not ~924.6 s
    assert seen["stats"]["tcp_timeouts"] == 1


def test_keepalive_waits_while_data_is_unacknowledged_as_linux_does() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("node-0", 7)
        keepalive(writer, idle=5, intvl=1, cnt=2)
        node._askew_world.net.isolate(0)
        start = loop.time()
        writer.write(b"z")  # retransmitted: keep-alive stands aside
        with pytest.raises(TimeoutError):
            await reader.read(1)
        return loop.time() - start

    seen = run_nodes(echo_server, client(talk))
    assert seen["result"] > 900  # tcp_retries2's ~924.6 s, not 5 + 2 s
    assert seen["stats"]["tcp_probes"] == 0


@pytest.mark.parametrize(
    ("level", "name", "value", "error"),
    [
        (TCP, socket.TCP_KEEPIDLE, 0, OSError),
        (TCP, socket.TCP_KEEPIDLE, 32768, OSError),
        (TCP, socket.TCP_KEEPINTVL, -1, OSError),
        (TCP, socket.TCP_KEEPCNT, 128, OSError),
        (TCP, socket.TCP_USER_TIMEOUT, -1, OSError),
        (TCP, socket.TCP_KEEPIDLE, 3.5, TypeError),
        (TCP, socket.TCP_KEEPIDLE, "10", TypeError),
        (TCP, socket.TCP_KEEPIDLE, 2**40, TypeError),
        (TCP, socket.TCP_KEEPIDLE, b"\x05", OSError),
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1.0, TypeError),
    ],
)
def test_bad_option_values_fail_as_a_real_socket_s_do(
    level: int, name: int, value: Any, error: type[BaseException]
) -> None:
    real = socket.socket()
    try:
        with pytest.raises(error) as expected:
            real.setsockopt(level, name, value)
    finally:
        real.close()

    async def talk(node: Any) -> Any:
        _reader, writer = await asyncio.open_connection("node-0", 7)
        with pytest.raises(error) as info:
            writer.get_extra_info("socket").setsockopt(level, name, value)
        return getattr(info.value, "errno", None)

    assert run_nodes(echo_server, client(talk))["result"] == getattr(expected.value, "errno", None)


def test_good_option_values_read_back_as_a_real_socket_s_do() -> None:
    settings = [
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 5),
        (TCP, socket.TCP_KEEPIDLE, b"\x07\x00\x00\x00"),
        (TCP, socket.TCP_KEEPCNT, 127),
        (TCP, socket.TCP_USER_TIMEOUT, 0),
    ]
    real = socket.socket()
    try:
        for level, name, value in settings:
            real.setsockopt(level, name, value)
        expected = [real.getsockopt(level, name) for level, name, _ in settings]
    finally:
        real.close()

    async def talk(node: Any) -> list[int]:
        _reader, writer = await asyncio.open_connection("node-0", 7)
        sock = writer.get_extra_info("socket")
        for level, name, value in settings:
            sock.setsockopt(level, name, value)
        return [sock.getsockopt(level, name) for level, name, _ in settings]

    assert run_nodes(echo_server, client(talk))["result"] == expected


def test_keepalive_runs_replay_with_the_same_trace() -> None:
    def once() -> list[Any]:
        seen: list[Any] = []

        async def talk(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            keepalive(writer, idle=3, intvl=1, cnt=2)
            await asyncio.sleep(20)
            node._askew_world.net.isolate(0)
            with pytest.raises(TimeoutError):
                await reader.read(1)

        async def body(world: askew.World) -> None:
            world.spawn(echo_server)
            world.spawn(talk)
            await asyncio.sleep(60)
            seen.extend([world.log.hash, world.net.stats()])

        run_sim(body, seed=7)
        return seen

    assert once() == once()


# ---- what a review of the first version found -------------------------------------


def test_a_connection_that_only_sends_hears_the_acks_and_is_never_probed() -> None:
    async def talk(node: Any) -> int:
        _reader, writer = await asyncio.open_connection("node-0", 9)  # the peer never answers
        keepalive(writer, idle=5, intvl=1, cnt=1)
        for _ in range(60):
            writer.write(b"x")
            await asyncio.sleep(1)
        return 0

    async def sink(node: Any) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.read(100):
                pass

        await asyncio.start_server(handle, None, 9)
        await asyncio.sleep(1e9)

    seen = run_nodes(sink, client(talk))
    assert seen["stats"]["tcp_probes"] == 0 and seen["stats"]["tcp_timeouts"] == 0


def test_setting_keepalive_on_again_does_not_restart_the_idle_time() -> None:
    async def talk(node: Any) -> float:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("node-0", 7)
        keepalive(writer, idle=10, intvl=2, cnt=3)
        start = loop.time()
        node._askew_world.net.isolate(0)

        async def again() -> None:
            while True:
                await asyncio.sleep(5)
                writer.get_extra_info("socket").setsockopt(
                    socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1
                )

        nagging = asyncio.ensure_future(again())
        with pytest.raises(TimeoutError):
            await reader.read(1)
        nagging.cancel()
        return loop.time() - start

    assert 16 <= run_nodes(echo_server, client(talk))["result"] < 16.01


def test_a_closed_connection_sends_no_probe_whatever_is_set_after() -> None:
    async def talk(node: Any) -> None:
        _reader, writer = await asyncio.open_connection("node-0", 7)
        sock = writer.get_extra_info("socket")
        writer.close()
        await writer.wait_closed()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(TCP, socket.TCP_KEEPIDLE, 1)
        await asyncio.sleep(30)

    assert run_nodes(echo_server, client(talk))["stats"]["tcp_probes"] == 0


def test_tcp_options_on_an_af_unix_socket_are_eopnotsupp_as_on_linux() -> None:
    real = socket.socket(socket.AF_UNIX)
    try:
        with pytest.raises(OSError) as expected:
            real.setsockopt(TCP, socket.TCP_KEEPIDLE, 5)
    finally:
        real.close()

    async def talk(node: Any) -> Any:
        await asyncio.start_unix_server(lambda r, w: None, "/tmp/ka")
        _reader, writer = await asyncio.open_unix_connection("/tmp/ka")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)  # accepted, no effect
        with pytest.raises(OSError) as info:
            sock.setsockopt(TCP, socket.TCP_KEEPIDLE, 5)
        await asyncio.sleep(3 * 3600)
        return info.value.errno

    seen = run_nodes(client(talk), until=4 * 3600)
    assert seen["result"] == expected.value.errno == errno.EOPNOTSUPP
    assert seen["stats"]["tcp_probes"] == 0


def test_giving_up_on_keepalive_resets_the_peer_as_linux_does() -> None:
    async def body(world: askew.World) -> None:
        got: dict[str, Any] = {}

        async def serve(node: Any) -> None:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    await reader.read(1)
                except OSError as exc:
                    got["server"] = exc.errno

            await asyncio.start_server(handle, None, 7)
            await asyncio.sleep(1e9)

        async def talk(node: Any) -> None:
            reader, node.writer = await asyncio.open_connection("node-0", 7)
            keepalive(node.writer, idle=5, intvl=1, cnt=2)
            try:
                await reader.read(1)
            except OSError as exc:
                got["client"] = exc.errno

        world.spawn(serve)
        world.spawn(talk)
        await asyncio.sleep(1)
        cut = world.partition({0}, {1})
        cut.__enter__()  # the probes at ~5 and ~6 s are lost
        await asyncio.sleep(5.5)
        world.net.heal()  # before the give-up at ~7 s: its reset gets through
        await asyncio.sleep(60)
        assert got == {"client": errno.ETIMEDOUT, "server": errno.ECONNRESET}
        assert any("tcp" in str(e) and "keep-alive" in str(e) for e in world.log)

    run_sim(body)


@pytest.mark.parametrize("drift", [0.5, -0.5])
def test_keepalive_counts_in_the_nodes_own_clock_under_drift(drift: float) -> None:
    async def body(world: askew.World) -> None:
        out: list[float] = []

        async def talk(node: Any) -> None:
            loop = asyncio.get_running_loop()
            reader, writer = await asyncio.open_connection("node-0", 7)
            keepalive(writer, idle=10, intvl=2, cnt=3)
            start = loop.time()
            world.net.isolate(0)
            with pytest.raises(TimeoutError):
                await reader.read(1)
            out.append(loop.time() - start)

        world.spawn(echo_server)
        handle = world.spawn(talk)
        world.faults.skew(handle, drift=drift)
        await asyncio.sleep(600)
        assert len(out) == 1 and 16 <= out[0] < 16.01  # 16 s of the node's own time

    run_sim(body)
