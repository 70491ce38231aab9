# SPDX-License-Identifier: Apache-2.0
"""world.faults: crash is a power cut, restart is a fresh incarnation under
the same id, skew steps one node's wall clock and sets the rate of its
monotonic clocks (and only that node's)."""

from __future__ import annotations

import asyncio
import itertools
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
    # A node's finally never runs inside a run: a crashed incarnation's, and
    # those the power-off at the run's end stops, run once, in that run's
    # dead zone, after its verdict, on its frozen clocks (docs/design.md §3).
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
    assert sorted(unwound) == [(False, True)] * 12 + [(True, True)] * 12


async def cleaner(node: Any, log: list[str]) -> None:
    """A node whose cleanup awaits, as real shutdown code does."""
    try:
        await asyncio.sleep(1000)
    finally:
        for _ in range(3):
            await asyncio.sleep(0)
        log.append(f"{node.id} cleaned up")


@pytest.mark.parametrize("crash", [False, True])
def test_at_the_end_of_a_run_every_node_stops_as_a_crash_stops_it(crash: bool) -> None:
    # The verdict is in when the test body ends; then the world powers off
    # (docs/design.md §3): no node's cleanup runs inside the run, crashed or
    # not, and one that awaits never gets past its first await.
    log: list[str] = []

    async def body(world: askew.World) -> None:
        world.spawn(cleaner, log)
        victim = world.spawn(cleaner, log)
        world.spawn(cleaner, log)
        await world.clock.advance(1)
        if crash:
            world.faults.crash(victim)
        await world.clock.advance(1)

    run_sim(body)
    assert log == []


def test_a_crash_leaves_the_test_bodys_own_tasks_to_finish_their_cleanup() -> None:
    log: list[str] = []

    async def body(world: askew.World) -> None:
        async def helper() -> None:
            try:
                await asyncio.sleep(1000)
            finally:
                await asyncio.sleep(0)
                log.append("body task cleaned up")

        asyncio.get_running_loop().create_task(helper())
        n = world.spawn(cleaner, log)
        await world.clock.advance(1)
        world.faults.crash(n)

    run_sim(body)
    assert log == ["body task cleaned up"]


def test_a_crash_does_not_fail_a_live_node_waiting_in_gather_at_the_end() -> None:
    async def gatherer(node: Any) -> None:
        await asyncio.gather(asyncio.sleep(1000), asyncio.sleep(2000))

    async def body(world: askew.World) -> None:
        world.spawn(gatherer)
        victim = world.spawn(gatherer)
        await world.clock.advance(1)
        world.faults.crash(victim)
        await world.clock.advance(1)

    run_sim(body)  # the same run without the crash passes: so must this one


async def bad_cleanup(node: Any) -> None:
    try:
        await asyncio.sleep(1000)
    finally:
        raise RuntimeError("cleanup broke")


@pytest.mark.parametrize("crash", [False, True])
def test_a_nodes_failing_cleanup_at_the_end_of_a_run_never_fails_it(crash: bool) -> None:
    async def body(world: askew.World) -> None:
        world.spawn(bad_cleanup)
        other = world.spawn(cleaner, [])
        await world.clock.advance(1)
        if crash:
            world.faults.crash(other)

    run_sim(body)  # the cleanup raised in the run's dead zone: teardown


def test_a_failing_runs_report_lists_what_its_teardown_raised() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(bad_cleanup)
        await world.clock.advance(1)
        assert world.now < 1, "the verdict"

    with pytest.raises(askew.SimulationFailure) as info:
        run_sim(body)
    report = info.value.report
    assert report.startswith('assert world.now < 1, "the verdict"')
    assert "\n  teardown (after the verdict: logged, never a failure)\n" in report
    assert "    RuntimeError: cleanup broke" in report


def test_a_crash_takes_exactly_the_crashed_incarnations_tasks_and_their_children() -> None:
    async def parent(node: Any) -> None:
        async def child() -> None:
            await asyncio.sleep(1000)

        node.kids = [asyncio.create_task(child()) for _ in range(3)]
        await asyncio.sleep(1000)

    async def body(world: askew.World) -> None:
        keep, victim = world.spawn(parent), world.spawn(parent)
        await world.clock.advance(1)
        world.faults.crash(victim)
        taken = world._crashed[victim.id]
        assert {t.get_name() for t in taken} == {"node-1"} | {t.get_name() for t in victim.kids}
        assert all(t._askew_owner == (1 << 32) for t in taken)
        assert keep.id not in world._crashed

    run_sim(body)


def test_restarts_keep_only_each_crashed_incarnations_own_tasks() -> None:
    async def idle(node: Any) -> None:
        await asyncio.sleep(10_000)

    async def body(world: askew.World) -> None:
        nodes = [world.spawn(idle) for _ in range(50)]
        await world.clock.advance(1)
        for _ in range(100):
            world.faults.restart(nodes[7])
            await world.clock.advance(0.01)
        assert list(world._crashed) == [7]
        assert len(world._crashed[7]) == 100

    run_sim(body)


# ---- skew ---------------------------------------------------------------------


async def reader(node: Any) -> None:
    loop = asyncio.get_running_loop()
    node.reads = []
    while True:
        node.reads.append((loop.time(), time.time(), time.monotonic(), time.perf_counter()))
        await asyncio.sleep(0.5)


def test_skew_offset_steps_only_the_wall_clock_of_that_node() -> None:
    async def body(world: askew.World) -> None:
        skewed, plain = world.spawn(reader), world.spawn(reader)
        world.faults.skew(skewed, offset=100)
        await world.clock.advance(0.25)
        loop_t, wall, mono, perf = skewed.reads[0]
        # an NTP step moves the wall clock only; monotonic clocks never jump
        assert loop_t == mono == perf == 0.0
        assert wall == pytest.approx(EPOCH + 100.0)
        assert plain.reads[0] == (0.0, EPOCH, 0.0, 0.0)
        # the test body is no node: its clocks are the world's
        assert time.monotonic() == asyncio.get_running_loop().time() == world.now == 0.25
        assert time.time() == EPOCH + 0.25
        assert ("fault", 0, "skew 0: offset 100s drift 0") in [
            (e.kind, e.node, e.text) for e in world.log
        ]

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_a_negative_offset_steps_the_wall_clock_back_and_never_freezes_monotonic() -> None:
    async def sleeper(node: Any) -> None:
        loop = asyncio.get_running_loop()
        node.laps = []
        node.walls = [time.time()]
        for _ in range(4):
            start = loop.time()
            await asyncio.sleep(0.5)
            node.laps.append(loop.time() - start)
            node.walls.append(time.time())

    async def body(world: askew.World) -> None:
        n = world.spawn(sleeper)
        world.faults.skew(n, offset=-3)
        await world.clock.advance(5)
        assert n.laps == pytest.approx([0.5] * 4)  # no sleep starts late
        # the node first runs after the step: its wall clock reads 3 s behind
        assert n.walls == pytest.approx([EPOCH - 3 + 0.5 * i for i in range(5)])

    run_sim(body, strategy="fifo")


def test_a_skewed_nodes_monotonic_clocks_never_decrease_and_run_at_one_plus_drift() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(reader)
        world.faults.skew(n, offset=100, drift=0.25)
        await world.clock.advance(2.25)
        world.faults.skew(n, offset=-50, drift=-0.5)
        await world.clock.advance(3)
        world.faults.skew(n, offset=0, drift=0.2)
        await world.clock.advance(3)
        monos = [r[2] for r in n.reads]
        assert monos == sorted(monos) and [r[0] for r in n.reads] == monos
        # rate 1.25 for 2.25 s, 0.5 for 3 s, 1.2 for 3 s
        assert time.monotonic() == world.now
        assert monos[-1] <= 2.25 * 1.25 + 3 * 0.5 + 3 * 1.2

    run_sim(body, strategy="fifo")


def test_a_skewed_nodes_wall_clock_equals_epoch_plus_now_plus_offset_plus_drift() -> None:
    async def wall(node: Any) -> None:
        node.reads = []
        while True:
            node.reads.append((node._askew_world.now, time.time()))
            await asyncio.sleep(0.75)

    async def body(world: askew.World) -> None:
        n = world.spawn(wall)
        await world.clock.advance(1)
        t_skew = world.now
        world.faults.skew(n, offset=-30, drift=0.1)
        await world.clock.advance(5)
        for now, read in n.reads:
            if now > t_skew:
                want = EPOCH + now - 30 + 0.1 * (now - t_skew)
                assert read == pytest.approx(want, abs=1e-6)
            else:
                assert read == pytest.approx(EPOCH + now, abs=1e-6)

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

    run_sim(body, strategy="fifo")


def test_a_new_drift_moves_the_nodes_pending_timers_to_its_new_rate() -> None:
    async def sleeper(node: Any) -> None:
        await asyncio.sleep(10)
        node.woke = node._askew_world.now

    async def body(world: askew.World) -> None:
        n = world.spawn(sleeper)
        await world.clock.advance(4)
        world.faults.skew(n, drift=1.0 / 3)  # 6 s left on its clock: 4.5 world seconds
        await world.clock.advance(10)
        assert n.woke == pytest.approx(8.5, abs=1e-6)

    run_sim(body, strategy="fifo")


def test_timer_handle_when_is_in_the_nodes_clock() -> None:
    async def timer(node: Any) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(1)
        handle = loop.call_later(5, lambda: None)
        node.ahead = handle.when() - loop.time()

    async def body(world: askew.World) -> None:
        n = world.spawn(timer)
        world.faults.skew(n, offset=100, drift=0.5)
        await world.clock.advance(3)
        assert n.ahead == pytest.approx(5.0, abs=1e-6)

    run_sim(body)


def test_skew_refuses_offsets_and_drifts_past_what_the_clock_can_hold() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(reader)
        with pytest.raises(ValueError, match="offset must be"):
            world.faults.skew(n, offset=1e10)
        with pytest.raises(ValueError, match="offset must be"):
            world.faults.skew(n, offset=float("nan"))
        with pytest.raises(ValueError, match=r"drift must lie in \(-1, 1\)"):
            world.faults.skew(n, drift=0.9999999999)
        with pytest.raises(ValueError, match="drift must be a number in"):
            world.faults.skew(n, drift=-1)

    run_sim(body)


def test_skew_applies_to_tasks_the_node_creates() -> None:
    async def parent(node: Any) -> None:
        async def child() -> tuple[float, float]:
            await asyncio.sleep(0)
            return time.monotonic(), time.time()

        node.child_read, node.child_wall = await asyncio.create_task(child())

    async def body(world: askew.World) -> None:
        n = world.spawn(parent)
        world.faults.skew(n, offset=42)
        await world.clock.advance(1)
        assert n.child_read == pytest.approx(0.0, abs=1e-3)
        assert n.child_wall == pytest.approx(EPOCH + 42.0)

    run_sim(body)


# ---- pause --------------------------------------------------------------------


async def ticker(node: Any) -> None:
    loop = asyncio.get_running_loop()
    node.ticks = []
    while True:
        await asyncio.sleep(1)
        node.ticks.append((node._askew_world.now, loop.time(), time.monotonic()))


def test_a_paused_node_runs_nothing_while_its_clocks_run_on() -> None:
    async def body(world: askew.World) -> None:
        paused, other = world.spawn(ticker), world.spawn(ticker)
        await world.clock.advance(2.5)
        world.faults.pause(paused, 3)
        await world.clock.advance(2.9)
        assert [t[0] for t in paused.ticks] == [1, 2]
        assert [t[0] for t in other.ticks] == [1, 2, 3, 4, 5]  # the others run on
        await world.clock.advance(0.2)
        # on resume the tick due at 3 runs at once and reads the clocks as
        # they ran on through the pause
        assert paused.ticks[2] == (5.5, 5.5, 5.5)

    run_sim(body, strategy="fifo")


def test_messages_to_a_paused_node_queue_and_arrive_in_order_on_resume() -> None:
    async def talker(node: Any) -> None:
        for i in range(5):
            node.send(0, i)
            await asyncio.sleep(0.5)

    async def listener(node: Any) -> None:
        node.got = []
        while True:
            msg = await node.recv()
            node.got.append((msg.payload, node._askew_world.now))

    async def body(world: askew.World) -> None:
        world.net.configure(latency=(0.01, 0.01))
        listener_node = world.spawn(listener)
        await world.clock.advance(0)  # it runs up to its first recv
        world.faults.pause(listener_node, 10)
        world.spawn(talker)
        await world.clock.advance(9)
        assert listener_node.got == []
        assert world.net.stats()["delivered"] == 5  # on the wire, queued at the node
        await world.clock.advance(2)
        assert [p for p, _ in listener_node.got] == [0, 1, 2, 3, 4]
        assert all(t == 10 for _, t in listener_node.got)

    run_sim(body, strategy="fifo")


def test_a_paused_nodes_overdue_timers_fire_on_resume_in_deadline_order() -> None:
    async def timers(node: Any) -> None:
        loop = asyncio.get_running_loop()
        node.fired = []
        for delay, name in ((1, "a"), (3, "c"), (2, "b"), (4, "d")):
            loop.call_later(delay, lambda n=name: node.fired.append((n, loop.time())))
        await asyncio.sleep(100)

    async def body(world: askew.World) -> None:
        n = world.spawn(timers)
        await world.clock.advance(0.5)
        world.faults.pause(n, 3)  # until 3.5: a, b and c come due meanwhile
        await world.clock.advance(5)
        assert n.fired == [("a", 3.5), ("b", 3.5), ("c", 3.5), ("d", 4.0)]

    run_sim(body, strategy="fifo")


def test_a_pause_used_with_async_with_resumes_at_the_end_of_the_block() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(ticker)
        await world.clock.advance(0)  # it runs up to its first sleep
        async with world.faults.pause(n) as pause:
            await world.clock.advance(30)
            assert n.ticks == [] and pause.active
        assert not pause.active
        await world.clock.advance(0.5)
        assert [t[0] for t in n.ticks] == [30]
        kinds = [(e.kind, e.text) for e in world.log if e.kind == "fault"]
        assert kinds == [("fault", "pause 0 until resumed"), ("fault", "resume 0")]

    run_sim(body, strategy="fifo")


def test_a_crash_ends_a_pause_and_the_restarted_node_runs_unpaused() -> None:
    async def body(world: askew.World) -> None:
        n = world.spawn(ticker)
        world.faults.pause(n, 100)
        await world.clock.advance(1.5)
        world.faults.crash(n)
        with pytest.raises(ValueError, match="node 0 is crashed"):
            world.faults.pause(n)
        world.faults.restart(n)
        await world.clock.advance(2.1)
        assert [t[0] for t in n.ticks] == [2.5, 3.5]

    run_sim(body, strategy="fifo")


def test_a_pause_is_traced_and_the_same_seed_replays_it_identically() -> None:
    @askew.simulate(seed=11, iterations=20, check_determinism=True)
    async def test(world: askew.World) -> None:
        nodes = [world.spawn(ticker) for _ in range(3)]
        for _ in range(5):
            victim = world.random.choice(nodes)
            world.faults.pause(victim, world.random.uniform(0, 3))
            await world.clock.advance(world.random.uniform(0, 2))

    test()


def test_a_correct_lease_protocol_passes_under_drift_and_wall_clock_steps() -> None:
    # The server grants 10 s of its monotonic clock; a client trusts a lease
    # for 8.5 s of its own, counted from when it asked. With every clock
    # drifting by up to 5% and wall clocks stepped either way, the holders'
    # trusted windows never overlap. (A negative offset used to freeze the
    # node's clock and made this fail.)
    async def server(node: Any) -> None:
        loop = asyncio.get_running_loop()
        holder, until = None, 0.0
        while True:
            msg = await node.recv()
            now = loop.time()
            if holder in (None, msg.src) or now >= until:
                holder, until = msg.src, now + 10
                node.send(msg.src, True)
            else:
                node.send(msg.src, False)

    async def client(node: Any, windows: list[tuple[int, float, float]]) -> None:
        loop = asyncio.get_running_loop()
        world = node._askew_world
        while True:
            asked, asked_world = loop.time(), world.now
            node.send(0, "acquire")
            if not (await node.recv()).payload:
                await asyncio.sleep(0.7)
                continue
            start = world.now
            await asyncio.sleep(asked + 8.5 - loop.time())  # hold it, then let go
            windows.append((node.id, max(start, asked_world), world.now))
            await asyncio.sleep(3)

    @askew.simulate(seed=85, iterations=300)
    async def test(world: askew.World) -> None:
        windows: list[tuple[int, float, float]] = []
        nodes = [world.spawn(server)] + [world.spawn(client, windows) for _ in range(2)]
        for n in nodes:
            offset = world.random.uniform(-5, 5)
            world.faults.skew(n, offset=offset, drift=world.random.uniform(-0.05, 0.05))
        await world.clock.advance(60)
        windows.sort(key=lambda w: w[1])
        assert len(windows) >= 4
        for (a, _, a_end), (b, b_start, _) in itertools.pairwise(windows):
            assert a == b or a_end <= b_start, f"{a} held until {a_end}, {b} from {b_start}"

    test()
