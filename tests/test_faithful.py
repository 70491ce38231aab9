# SPDX-License-Identifier: Apache-2.0
"""Faithful schedules: under the default strategy every order askew produces
is one stock asyncio could produce (DESIGN §2), so a red run is a real bug.

A differential test runs random programs of tasks, call_soon, done-callbacks,
sleep(0), Events, Queues and cancellations on stock asyncio and on askew, and
the shapes that the first release got wrong on real suites run for 200 seeds
each. Across nodes the order still varies with the seed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew.errors import BudgetExceeded

pytestmark = pytest.mark.usefixtures("clean_env")

SEEDS = range(200)


def run_on(loop_factory: Callable[[], asyncio.AbstractEventLoop], main: Any) -> Any:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())


def stock() -> asyncio.AbstractEventLoop:
    return asyncio.new_event_loop()


def sim(seed: int, strategy: str = "faithful") -> Callable[[], asyncio.AbstractEventLoop]:
    return lambda: askew.new_event_loop(seed, strategy=strategy)


# ---- the differential test ----------------------------------------------------------

OPS = ("sleep0", "soon", "set", "wait", "put", "get", "cancel", "child", "done_cb", "yield2")


def random_program(rng: random.Random) -> list[list[tuple[str, int]]]:
    """Ops for 2-6 tasks; the last list is main's own, which never waits on
    an event or a queue (only main sets and feeds them all at the end)."""
    tasks = rng.randint(2, 6)
    main_ops = [op for op in OPS if op not in ("wait", "get")]
    return [
        [(rng.choice(OPS), rng.randrange(3)) for _ in range(rng.randint(1, 12))]
        for _ in range(tasks)
    ] + [[(rng.choice(main_ops), rng.randrange(3)) for _ in range(rng.randint(1, 12))]]


def program_main(program: list[list[tuple[str, int]]], log: list[Any]) -> Callable[[], Any]:
    """A main coroutine that runs `program` and records, in `log`, the order
    in which every callback and task step it makes ran. Deadlock-free: main
    sets every event and feeds every queue once all ops are issued."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        events = [asyncio.Event() for _ in range(3)]
        queues: list[asyncio.Queue[int]] = [asyncio.Queue() for _ in range(3)]
        tasks: list[asyncio.Task[None]] = []
        children: list[asyncio.Task[None]] = []

        async def child(name: str) -> None:
            log.append((name, "child"))
            await asyncio.sleep(0)
            log.append((name, "child done"))

        async def run_ops(name: str, ops: list[tuple[str, int]]) -> None:
            for i, (op, k) in enumerate(ops):
                log.append((name, i, op))
                if op == "sleep0":
                    await asyncio.sleep(0)
                elif op == "soon":
                    loop.call_soon(log.append, (name, i, "soon cb"))
                elif op == "set":
                    events[k].set()
                elif op == "wait":
                    await events[k].wait()
                elif op == "put":
                    queues[k].put_nowait(i)
                elif op == "get":
                    log.append((name, i, "got", await queues[k].get()))
                elif op == "cancel" and k < len(tasks):
                    tasks[k].cancel()
                elif op == "child":
                    children.append(loop.create_task(child(f"{name}.{i}")))
                elif op == "done_cb":
                    t = loop.create_task(child(f"{name}.{i}"))
                    t.add_done_callback(lambda t, n=name, i=i: log.append((n, i, "done cb")))
                elif op == "yield2":
                    await asyncio.sleep(0)
                    await asyncio.sleep(0)

        async def guarded(name: str, ops: list[tuple[str, int]]) -> None:
            try:
                await run_ops(name, ops)
            except asyncio.CancelledError:
                log.append((name, "cancelled"))

        for n, ops in enumerate(program[:-1]):
            tasks.append(loop.create_task(guarded(f"t{n}", ops)))
        await run_ops("main", program[-1])
        gets = sum(op == "get" for ops in program for op, _ in ops)
        for e in events:
            e.set()
        for q in queues:
            for _ in range(gets):
                q.put_nowait(-1)
        await asyncio.gather(*tasks, return_exceptions=True)
        for _ in range(3):  # let children finish
            await asyncio.sleep(0)
        log.append("end")

    return main


def order_on(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], program: list[list[tuple[str, int]]]
) -> list[Any]:
    log: list[Any] = []
    run_on(loop_factory, program_main(program, log))
    return log


@pytest.mark.parametrize("strategy", ["faithful", "fifo"])
def test_random_programs_run_in_exactly_stock_asyncios_order_for_every_seed(
    strategy: str,
) -> None:
    for program_seed in range(60):
        program = random_program(random.Random(program_seed))
        expected = order_on(stock, program)
        assert expected[-1] == "end"
        for seed in range(5):
            got = order_on(sim(seed, strategy), program)
            assert got == expected, (program_seed, seed, program)


def test_interleave_can_leave_asyncios_order() -> None:
    # The check above is not vacuous: the first release's default breaks it.
    differs = 0
    for program_seed in range(30):
        program = random_program(random.Random(program_seed))
        expected = order_on(stock, program)
        differs += any(order_on(sim(s, "interleave"), program) != expected for s in range(3))
    assert differs > 0


# ---- the shapes seen on real suites --------------------------------------------------


def test_a_child_done_callback_runs_before_the_parents_next_wakeup_for_every_seed() -> None:
    # aiojobs: the child finishes in its first step and schedules its done
    # callback before the parent's sleep(0) wake-up is scheduled.
    async def main() -> list[str]:
        log: list[str] = []

        async def child() -> None:
            log.append("child ran")

        t = asyncio.get_running_loop().create_task(child())
        t.add_done_callback(lambda _: log.append("done callback"))
        await asyncio.sleep(0)  # the child's step runs here
        await asyncio.sleep(0)
        log.append("parent woke")
        return log

    expected = run_on(stock, main)
    assert expected == ["child ran", "done callback", "parent woke"]
    for seed in SEEDS:
        assert run_on(sim(seed), main) == expected


def test_a_requeued_cancellation_runs_before_a_later_wakeup_for_every_seed() -> None:
    # anyio: a cancellation delivered to a task is queued before another
    # task's wake-up that is registered later; asyncio runs them in that order.
    async def main() -> list[str]:
        log: list[str] = []
        ready = asyncio.Event()

        async def victim() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                log.append("victim cancelled")
                raise

        async def other() -> None:
            await ready.wait()
            log.append("other woke")

        v = asyncio.get_running_loop().create_task(victim())
        o = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        v.cancel()
        ready.set()
        await asyncio.gather(v, o, return_exceptions=True)
        return log

    expected = run_on(stock, main)
    assert expected == ["victim cancelled", "other woke"]
    for seed in SEEDS:
        assert run_on(sim(seed), main) == expected


def interleaved_sleepers() -> Callable[[], Coroutine[Any, Any, list[str]]]:
    # tenacity: two tasks sleep the same short delay from successive steps.
    async def main() -> list[str]:
        log: list[str] = []

        async def sleeper(name: str) -> None:
            await asyncio.sleep(1e-5)
            log.append(name)

        await asyncio.gather(sleeper("a"), sleeper("b"))
        return log

    return main


@pytest.mark.parametrize("strategy", ["faithful", "fifo"])
def test_equal_sleeps_from_successive_steps_wake_in_the_order_they_slept(strategy: str) -> None:
    for seed in SEEDS:
        assert run_on(sim(seed, strategy), interleaved_sleepers()) == ["a", "b"]


def test_a_task_polling_with_sleep_zero_lets_a_sleeping_writer_wake() -> None:
    # aiorwlock: readers poll with sleep(0) while the writer sleeps 10 ms. On a
    # real loop time passes while the readers run, so the writer wakes.
    async def main() -> int:
        done = False
        polls = 0

        async def writer() -> None:
            nonlocal done
            await asyncio.sleep(0.01)
            done = True

        async def reader() -> None:
            nonlocal polls
            while not done:
                polls += 1
                await asyncio.sleep(0)

        await asyncio.gather(writer(), reader(), reader())
        return polls

    for seed in SEEDS:
        polls = run_on(sim(seed), main)
        assert 0 < polls < 100_000


def test_a_livelock_under_fifo_is_a_budget_failure_and_the_runner_still_closes_cleanly() -> None:
    # Under fifo no time passes while code runs: the same polling is a
    # livelock. The budget ends it; closing the runner then cancels the tasks
    # (their finally blocks run) without the budget firing again.
    cleaned: list[str] = []

    async def spin(name: str) -> None:
        try:
            while True:
                await asyncio.sleep(0)
        finally:
            cleaned.append(name)

    async def main() -> None:
        asyncio.get_running_loop().create_task(spin("background"))
        await spin("main")

    runner = asyncio.Runner(
        loop_factory=lambda: askew.new_event_loop(1, strategy="fifo", max_steps=5000)
    )
    with pytest.raises(BudgetExceeded, match="step budget exceeded"):
        runner.run(main())
    runner.close()
    assert sorted(cleaned) == ["background", "main"]


# ---- across nodes -----------------------------------------------------------------


def test_node_interleaving_still_varies_with_the_seed() -> None:
    orders = set()
    for seed in range(30):
        seen: list[int] = []

        async def worker(node: Any, seen: list[int] = seen) -> None:
            for _ in range(3):
                seen.append(node.id)
                await asyncio.sleep(0)

        async def body(world: askew.World) -> None:
            for _ in range(4):
                world.spawn(worker)
            await world.clock.advance(1)

        run_sim(body, seed=seed)
        # Each node's own steps keep their order; the nodes interleave.
        assert sorted(seen) == [n for n in range(4) for _ in range(3)]
        orders.add(tuple(seen))
    assert len(orders) > 10


def test_within_a_node_the_order_is_asyncios_for_every_seed() -> None:
    program = random_program(random.Random(7))
    expected = order_on(stock, program)
    for seed in range(50):
        logs: dict[int, list[Any]] = {0: [], 1: []}

        async def node_main(node: Any, logs: dict[int, list[Any]] = logs) -> None:
            await program_main(program, logs[node.id])()

        async def body(world: askew.World) -> None:
            world.spawn(node_main)
            world.spawn(node_main)  # a second node running the same, beside it
            await world.clock.advance(1)

        run_sim(body, seed=seed)
        assert logs[0] == expected
        assert logs[1] == expected
