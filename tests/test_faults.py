# SPDX-License-Identifier: Apache-2.0
"""world.faults: crash is a power cut, restart is a fresh incarnation under
the same id, skew shifts one node's clocks (and only that node's)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew import _core

pytestmark = pytest.mark.usefixtures("clean_env")

EPOCH = 1577836800


async def sink(node: Any) -> None:
    node.got = []
    while True:
        node.got.append(await node.recv())


# ---- crash --------------------------------------------------------------------


def test_a_crashed_node_runs_no_except_or_finally_block_during_the_run() -> None:
    seen: list[str] = []

    async def fragile(node: Any) -> None:
        try:
            await asyncio.sleep(100)
        except BaseException:
            seen.append("except")
            raise
        finally:
            seen.append("finally")

    async def body(world: askew.World) -> None:
        n = world.spawn(fragile)
        await world.clock.advance(1)
        world.faults.crash(n)
        await world.clock.advance(200)
        assert seen == []

    run_sim(body)


def test_a_crashed_nodes_timers_never_fire() -> None:
    fired: list[str] = []

    async def scheduler(node: Any) -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(5, fired.append, "call_later")
        loop.call_at(loop.time() + 6, fired.append, "call_at")

        async def sleeper() -> None:
            await asyncio.sleep(7)
            fired.append("sleep in a child task")

        node.child = asyncio.create_task(sleeper())
        await asyncio.sleep(8)
        fired.append("sleep")

    async def body(world: askew.World) -> None:
        n = world.spawn(scheduler)
        await world.clock.advance(1)
        world.faults.crash(n)
        await world.clock.advance(20)
        assert fired == []

    run_sim(body)


def test_messages_to_a_crashed_node_are_dropped_with_reason_crashed() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.faults.crash(b)
        a.send(b, ("one",))
        a.broadcast(("two",))
        await world.clock.advance(1)
        assert world.net.stats()["crashed"] == 2
        dropped = [e.text for e in world.log if e.text.endswith("dropped: crashed")]
        assert dropped == [
            "0 -> 1  ('one',)   dropped: crashed",
            "0 -> 1  ('two',)   dropped: crashed",
        ]
        assert ("crash", 1, "crash 1") in [(e.kind, e.node, e.text) for e in world.log]

    run_sim(body)


def test_a_crashed_nodes_inbox_is_gone_after_restart() -> None:
    async def slow_reader(node: Any) -> None:
        await asyncio.sleep(10)
        node.got = [await node.recv(timeout=1)]

    async def body(world: askew.World) -> None:
        reader, writer = world.spawn(slow_reader), world.spawn(sink)
        writer.send(reader, ("queued before the crash",))
        await world.clock.advance(1)
        assert world.net.stats()["delivered"] == 1  # sitting in the inbox
        world.faults.crash(reader)
        world.faults.restart(reader)
        await world.clock.advance(20)
        assert reader.got == [None]

    run_sim(body)


def test_a_crashed_node_sends_nothing() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.faults.crash(a)
        a.send(b, ("ghost",))
        a.broadcast(("ghost",))
        await world.clock.advance(1)
        assert b.got == []
        assert world.net.stats()["sent"] == 0

    run_sim(body)


def test_the_handle_of_a_crashed_node_says_so() -> None:
    async def body(world: askew.World) -> None:
        a = world.spawn(sink)
        assert repr(a) == "<askew node 0 alive>"
        world.faults.crash(a)
        assert repr(a) == "<askew node 0 crashed>"

    run_sim(body)


# ---- restart ------------------------------------------------------------------


async def counter(node: Any, step: int) -> None:
    node.count = 0
    node.started_at = asyncio.get_running_loop().time()
    while True:
        await asyncio.sleep(1)
        node.count += step


def test_restart_runs_the_target_again_under_the_same_id_with_fresh_state() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(counter, 10)
        await world.clock.advance(3.5)
        assert (n.count, n.started_at) == (30, 0.0)
        world.faults.crash(n)
        await world.clock.advance(1)
        world.faults.restart(n)
        await world.clock.advance(2.25)
        assert n.id == 0
        assert (n.count, n.started_at) == (20, 4.5)
        assert world.nodes == [n]
        kinds = [(e.kind, e.text) for e in world.log]
        assert kinds.index(("crash", "crash 0")) < kinds.index(("restart", "restart 0"))

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_restarting_a_live_node_crashes_it_first() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(counter, 1)
        await world.clock.advance(5.5)
        world.faults.restart(n)
        await world.clock.advance(1.25)
        assert n.count == 1
        assert [e.kind for e in world.log if e.kind in ("crash", "restart")] == [
            "crash",
            "restart",
        ]

    run_sim(body)


def test_restarting_a_class_node_gives_the_handle_a_new_instance() -> None:
    class Server:
        def __init__(self, node: Any) -> None:
            self.node = node
            self.requests = 0

        async def run(self) -> None:
            while True:
                if await self.node.recv() is not None:
                    self.requests += 1

    async def body(world: askew.World) -> None:
        s, c = world.spawn(Server), world.spawn(sink)
        c.send(s, ("req",))
        await world.clock.advance(1)
        assert s.requests == 1
        world.faults.restart(s)
        await world.clock.advance(1)
        assert s.requests == 0
        c.send(s, ("req",))
        await world.clock.advance(1)
        assert s.requests == 1

    run_sim(body)


def test_a_restarted_node_receives_messages_again() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.faults.crash(b)
        a.send(b, ("lost",))
        await world.clock.advance(1)
        world.faults.restart(b)
        await world.clock.advance(0.1)
        a.send(b, ("found",))
        await world.clock.advance(1)
        assert [m.payload for m in b.got] == [("found",)]

    run_sim(body)


def test_a_sweep_that_crashes_and_restarts_nodes_passes_every_iteration() -> None:
    # Regression: the crashed incarnation's task used to be collected in a later
    # iteration and fail it with "Task was destroyed but it is pending!".
    # A crashed incarnation's finally never runs inside a run (the live nodes'
    # do, when teardown cancels them); it runs once, after its own run ended.
    unwound: list[tuple[bool, bool]] = []

    async def fragile(node: Any) -> None:
        try:
            while True:
                await asyncio.sleep(1)
        finally:
            unwound.append((getattr(node, "crashed", False), _core.virtual.in_simulation()))

    @askew.simulate(seed=5, iterations=6)
    async def test(world: askew.World) -> None:
        nodes = [world.spawn(fragile) for _ in range(3)]
        await world.clock.advance(1.5)
        nodes[0].crashed = nodes[1].crashed = True
        world.faults.crash(nodes[0])
        world.faults.restart(nodes[1])
        await world.clock.advance(2)

    test()
    assert sorted(unwound) == [(False, True)] * 12 + [(True, False)] * 12


# ---- skew ---------------------------------------------------------------------


async def reader(node: Any) -> None:
    loop = asyncio.get_running_loop()
    node.reads = []
    while True:
        node.reads.append((loop.time(), time.time(), time.monotonic(), time.perf_counter()))
        await asyncio.sleep(0.5)


def test_skew_offset_shifts_every_clock_inside_that_node_only() -> None:
    async def body(world: askew.World) -> None:
        skewed, plain = world.spawn(reader), world.spawn(reader)
        world.faults.skew(skewed, offset=100)
        await world.clock.advance(0.25)
        loop_t, wall, mono, perf = skewed.reads[0]
        assert loop_t == mono == perf == pytest.approx(100.0)
        assert wall == pytest.approx(EPOCH + 100.0)
        assert plain.reads[0] == (0.0, EPOCH, 0.0, 0.0)
        # the test body is no node: its clocks are the world's
        assert time.monotonic() == asyncio.get_running_loop().time() == world.now == 0.25
        assert ("fault", 0, "skew 0: offset 100s drift 0") in [
            (e.kind, e.node, e.text) for e in world.log
        ]

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_a_skewed_nodes_monotonic_clock_never_goes_backwards_when_offset_is_reduced() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(reader)
        world.faults.skew(n, offset=100)
        await world.clock.advance(2.25)
        world.faults.skew(n, offset=-50)
        await world.clock.advance(3)
        world.faults.skew(n, offset=0, drift=0.2)
        await world.clock.advance(3)
        monos = [r[2] for r in n.reads]
        loop_times = [r[0] for r in n.reads]
        assert monos == sorted(monos) and loop_times == sorted(loop_times)
        assert monos[0] == pytest.approx(100.0)

    run_sim(body)


def test_timers_fire_when_the_skewed_nodes_own_clock_says() -> None:
    async def sleeper(node: Any) -> None:
        loop = asyncio.get_running_loop()
        node.laps = []
        for _ in range(3):
            local0, world0 = loop.time(), node._askew_world.now
            await asyncio.sleep(3)
            node.laps.append((loop.time() - local0, node._askew_world.now - world0))

    async def body(world: askew.World) -> None:
        fast, ahead = world.spawn(sleeper), world.spawn(sleeper)
        world.faults.skew(fast, drift=0.5)
        world.faults.skew(ahead, offset=1000)
        await world.clock.advance(20)
        for local, real in fast.laps:
            assert local == pytest.approx(3.0, abs=1e-6)
            assert real == pytest.approx(2.0, abs=1e-6)
        for local, real in ahead.laps:
            assert local == pytest.approx(3.0, abs=1e-6)
            assert real == pytest.approx(3.0, abs=1e-6)
        assert len(fast.laps) == len(ahead.laps) == 3


def test_a_reduced_offset_holds_the_nodes_clock_until_the_world_catches_up() -> None:
    # Monotonic clocks never go back, so a step back makes the node's clock
    # stand still; its timers fire when its own clock reaches them.
    async def ticker(node: Any) -> None:
        loop = asyncio.get_running_loop()
        node.ticks = []
        while True:
            await asyncio.sleep(1)
            node.ticks.append((loop.time(), node._askew_world.now))

    async def body(world: askew.World) -> None:
        n = world.spawn(ticker)
        world.faults.skew(n, offset=10)
        await world.clock.advance(2.5)
        world.faults.skew(n, offset=0)
        await world.clock.advance(12)
        local = [t for t, _ in n.ticks]
        assert local == pytest.approx([11, 12, 13, 14])
        assert [w for _, w in n.ticks] == pytest.approx([1, 2, 13, 14])

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_skew_applies_to_tasks_the_node_creates() -> None:
    async def parent(node: Any) -> None:
        async def child() -> float:
            return time.monotonic()

        node.child_read = await asyncio.create_task(child())

    async def body(world: askew.World) -> None:
        n = world.spawn(parent)
        world.faults.skew(n, offset=42)
        await world.clock.advance(1)
        assert n.child_read == pytest.approx(42.0)

    run_sim(body)
