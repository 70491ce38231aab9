# SPDX-License-Identifier: Apache-2.0
"""How threads of a run end (docs/design.md §3 "Threads"): a deadlock is
reported with each thread's stack and the lock it waits on, never a hang; a
crashed node's threads run no more; whatever a run leaves running is
unwound with the run, in the dead zone, and nothing of it outlives it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew._loop.nodes import TOKEN_SHIFT, node_var
from askew.errors import DeadlockError

pytestmark = pytest.mark.usefixtures("clean_env")


def _threads_now() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate()}


def test_a_deadlock_between_two_threads_is_reported_with_both_stacks() -> None:
    async def body(world: askew.World) -> None:
        a, b = threading.Lock(), threading.Lock()
        both = threading.Barrier(2)

        def first() -> None:
            with a:
                both.wait()
                with b:
                    pass

        def second() -> None:
            with b:
                both.wait()
                with a:
                    pass

        threads = [threading.Thread(target=f, name=f.__name__) for f in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join)

    before = _threads_now()
    with pytest.raises(askew.SimulationFailure) as info:
        run_sim(body, executor="threads")
    text = str(info.value)
    assert isinstance(info.value.__cause__, DeadlockError)
    assert "thread 'first' waits on acquire() of <locked lock #" in text
    assert "thread 'second' waits on acquire() of <locked lock #" in text
    assert "in first" in text and "in second" in text
    assert "test_thread_ends.py" in text
    assert _threads_now() == before  # unwound with the run


def test_the_loop_blocking_on_a_thread_that_waits_for_the_loop_is_a_deadlock() -> None:
    async def body(world: askew.World) -> None:
        loop = asyncio.get_running_loop()

        async def nothing() -> None:
            pass

        def needs_the_loop() -> None:
            asyncio.run_coroutine_threadsafe(nothing(), loop).result()

        t = threading.Thread(target=needs_the_loop, name="needs-the-loop")
        t.start()
        t.join()  # blocks the loop itself: the coroutine can never run

    with pytest.raises(askew.SimulationFailure) as info:
        run_sim(body, executor="threads")
    text = str(info.value)
    assert "the event loop blocks in join() of thread 'needs-the-loop'" in text
    assert "thread 'needs-the-loop' waits on acquire() of" in text


def test_the_loop_blocking_on_a_sleeping_thread_lets_virtual_time_pass() -> None:
    seen: dict[str, float] = {}

    async def body(world: askew.World) -> None:
        t = threading.Thread(target=time.sleep, args=(3,))
        t.start()
        t.join()  # the loop blocks; the thread's sleep passes meanwhile
        seen["t"] = asyncio.get_running_loop().time()

    run_sim(body, executor="threads")
    assert 3 <= seen["t"] < 3.1


async def _holder(node: Any, log: list[str], lock: threading.Lock) -> None:
    def critical() -> None:
        try:
            with lock:
                log.append("in")
                time.sleep(5)
                log.append("still in")
        finally:
            log.append(f"unwound at {time.monotonic():.0f}")

    await asyncio.to_thread(critical)


def test_a_crash_during_a_threads_critical_section_stops_the_thread_for_good() -> None:
    log: list[str] = []

    async def body(world: askew.World) -> None:
        lock = threading.Lock()
        node = world.spawn(_holder, log, lock)
        await world.clock.advance(1)
        assert log == ["in"]
        world.faults.crash(node)
        await world.clock.advance(10)
        assert log == ["in"]  # the thread never ran again
        assert lock.locked()  # a power cut releases nothing

    before = _threads_now()
    run_sim(body, executor="threads")
    # Unwound at the end of the run, in the dead zone (time frozen there).
    assert log[:1] == ["in"] and log[1].startswith("unwound at")
    assert "still in" not in log
    assert _threads_now() == before


def test_threads_left_running_at_the_end_of_a_run_are_unwound_deterministically() -> None:
    logs: list[list[str]] = []

    async def body(world: askew.World) -> None:
        log: list[str] = []
        logs.append(log)

        def forever(name: str) -> None:
            try:
                while True:
                    time.sleep(1)
            finally:
                log.append(name)

        for name in "abc":
            threading.Thread(target=forever, args=(name,), daemon=True).start()
        await asyncio.to_thread(time.sleep, 2.5)

    before = _threads_now()
    run_sim(body, seed=3, executor="threads")
    run_sim(body, seed=3, executor="threads")
    assert logs[0] == logs[1] == ["a", "b", "c"]  # creation order
    assert _threads_now() == before


def test_a_thread_runs_as_the_node_that_started_it() -> None:
    seen: list[int] = []

    async def node_main(node: Any) -> None:
        seen.append(await asyncio.to_thread(lambda: node_var.get(-1) >> TOKEN_SHIFT))

    async def body(world: askew.World) -> None:
        world.spawn(node_main)
        world.spawn(node_main)
        await world.clock.advance(1)

    run_sim(body, executor="threads")
    assert sorted(seen) == [0, 1]
