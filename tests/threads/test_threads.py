# SPDX-License-Identifier: Apache-2.0
"""Threads inside a run (executor='threads', docs/design.md §3 "Threads"):
real OS threads that run one at a time, only while they hold the run's
baton, at switch points the seed orders; the stdlib's primitives work
across them in virtual time; a seed names one interleaving, in one process
and across processes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import textwrap
import threading
import time
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")


async def two_writers(world: askew.World) -> list[str]:
    """Two threads append to one list around their switch points."""
    out: list[str] = []
    lock = threading.Lock()

    def writer(name: str) -> None:
        for i in range(5):
            with lock:
                out.append(f"{name}{i}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        await asyncio.to_thread(t.join)
    return out


def trace_of(seed: int, body: Any = two_writers) -> tuple[int, list[str]]:
    out: list[tuple[int, list[str]]] = []

    async def wrapped(world: askew.World) -> None:
        result = await body(world)
        out.append((world.log.hash, result))

    run_sim(wrapped, seed=seed, executor="threads")
    return out[0]


def test_a_seed_names_one_interleaving_of_threads() -> None:
    first = trace_of(7)
    assert trace_of(7) == first
    assert sorted(first[1]) == sorted(f"{n}{i}" for n in "ab" for i in range(5))


def test_seeds_reach_different_interleavings_each_one_real_threads_could_produce() -> None:
    orders = {tuple(trace_of(seed)[1]) for seed in range(12)}
    assert len(orders) > 3
    for order in orders:
        # Each thread's own appends stay in its program order.
        for name in "ab":
            assert [x for x in order if x[0] == name] == [f"{name}{i}" for i in range(5)]


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_threads as t
    print(json.dumps(t.trace_of(4321)))
    """
)


def test_a_seed_gives_the_same_thread_trace_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "1", "777"))
    assert results[0] == results[1] == results[2]
    assert results[0] == list(trace_of(4321))


def test_to_thread_and_run_in_executor_run_on_the_runs_threads() -> None:
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        loop = asyncio.get_running_loop()
        main = threading.get_ident()

        def work(x: int) -> tuple[int, bool]:
            return x * 2, threading.get_ident() != main

        seen["to_thread"] = await asyncio.to_thread(work, 3)
        seen["executor"] = await loop.run_in_executor(None, work, 4)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            seen["pool"] = await loop.run_in_executor(pool, work, 5)
            seen["submit"] = pool.submit(work, 6).result()

    run_sim(body, executor="threads")
    assert seen == {
        "to_thread": (6, True),
        "executor": (8, True),
        "pool": (10, True),
        "submit": (12, True),
    }


def test_time_sleep_in_a_thread_waits_in_virtual_time_while_the_loop_runs_on() -> None:
    seen: dict[str, float] = {}

    async def body(world: askew.World) -> None:
        loop = asyncio.get_running_loop()

        def nap() -> float:
            start = time.monotonic()
            time.sleep(30)
            return time.monotonic() - start

        task = asyncio.ensure_future(asyncio.to_thread(nap))
        await asyncio.sleep(10)
        seen["loop_meanwhile"] = loop.time()
        seen["slept"] = await task
        seen["end"] = loop.time()

    run_sim(body, executor="threads")
    assert 10 <= seen["loop_meanwhile"] < 10.1
    assert 30 <= seen["slept"] < 30.1
    assert 30 <= seen["end"] < 30.2


def test_the_stdlib_primitives_work_across_threads() -> None:
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        q: queue.Queue[int | None] = queue.Queue(maxsize=2)
        got: list[int] = []
        ready = threading.Event()
        cond = threading.Condition()
        sem = threading.Semaphore(1)
        barrier = threading.Barrier(2)
        rlock = threading.RLock()
        inside: list[int] = []

        def producer() -> None:
            ready.wait()
            for i in range(6):
                q.put(i)
            q.put(None)
            barrier.wait()

        def consumer() -> None:
            ready.set()
            while (item := q.get()) is not None:
                with sem, rlock, rlock:
                    inside.append(len(inside))
                    got.append(item)
            with cond:
                cond.notify_all()
            barrier.wait()

        threads = [threading.Thread(target=f) for f in (producer, consumer)]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join)
        seen["got"] = got
        seen["timed_out"] = await asyncio.to_thread(threading.Event().wait, 5)
        seen["t"] = asyncio.get_running_loop().time()
        seen["alive"] = [t.is_alive() for t in threads]

    run_sim(body, executor="threads")
    assert seen["got"] == list(range(6))
    assert seen["timed_out"] is False
    assert 5 <= seen["t"] < 5.1
    assert seen["alive"] == [False, False]


def test_a_thread_waits_on_the_loop_while_the_loop_awaits_the_thread() -> None:
    async def body(world: askew.World) -> None:
        loop = asyncio.get_running_loop()

        async def on_the_loop(x: int) -> int:
            await asyncio.sleep(1)
            return x + 1

        def in_a_thread() -> int:
            fut = asyncio.run_coroutine_threadsafe(on_the_loop(41), loop)
            return fut.result(timeout=10)

        assert await asyncio.to_thread(in_a_thread) == 42
        assert 1 <= loop.time() < 1.1

    run_sim(body, executor="threads")


def test_ten_thousand_thread_switches_in_one_run() -> None:
    seen: dict[str, int] = {}

    async def body(world: askew.World) -> None:
        lock = threading.Lock()
        count = [0]

        def spin() -> None:
            for _ in range(5000):
                with lock:
                    count[0] += 1

        threads = [threading.Thread(target=spin) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join)
        seen["count"] = count[0]
        seen["switches"] = asyncio.get_running_loop()._threads.switches

    run_sim(body, executor="threads", max_steps=10_000_000)
    assert seen["count"] == 20_000
    assert seen["switches"] >= 10_000


def test_a_thread_start_is_refused_by_name_with_executor_refuse() -> None:
    async def body(world: askew.World) -> None:
        threading.Thread(target=print).start()

    with pytest.raises(askew.SimulationFailure, match="executor='threads'"):
        run_sim(body, executor="refuse")


def test_an_executor_made_before_the_run_is_refused_by_name() -> None:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    async def body(world: askew.World) -> None:
        await asyncio.get_running_loop().run_in_executor(pool, print)

    try:
        with pytest.raises(askew.SimulationFailure, match="an executor made before the run"):
            run_sim(body, executor="threads")
    finally:
        pool.shutdown()


def test_a_bad_executor_names_the_value_and_the_choices() -> None:
    with pytest.raises(ValueError, match="'threads', 'inline' or 'refuse', got 'pool'"):
        askew.simulate(executor="pool")
