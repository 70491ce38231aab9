# SPDX-License-Identifier: Apache-2.0
"""A blocking sleep costs virtual time (issue 8, deliver 2).

Inside a run, on the simulation thread, `time.sleep(s)` and (under the
preload) C's nanosleep, clock_nanosleep, usleep and sleep let `s` of the
calling node's clock pass and return at once: what a blocking sleep does to
a real loop, timers included. Anywhere else the real function runs. No test
asserts on wall-clock time: a sleep that really slept a day would trip a
subprocess timeout instead. Exact virtual times are read under "fifo",
which adds no CPU time per step and no timer overshoot.
"""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_sim
from test_preload import LIB, _needs_askew, assert_ok, probe_dir, run_python

import askew
from askew import _core

pytestmark = pytest.mark.usefixtures("clean_env")
__all__ = ["probe_dir"]  # the fixture, shared with test_preload.py

_virtual: Any = _core.virtual
_original_sleep = _virtual.original_sleep
needs_preload = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not LIB.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)


def test_time_sleep_in_a_run_costs_exactly_its_length_of_virtual_time() -> None:
    async def main() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        before = (loop.time(), time.monotonic(), time.time(), time.perf_counter())
        time.sleep(1.5)
        after = (loop.time(), time.monotonic(), time.time(), time.perf_counter())
        names = ("loop", "monotonic", "wall", "perf")
        return {name: a - b for name, a, b in zip(names, after, before, strict=True)}

    moved = askew.run(main(), seed=1, strategy="fifo")
    assert moved["loop"] == moved["monotonic"] == moved["perf"] == 1.5
    assert moved["wall"] == pytest.approx(1.5, abs=1e-6)  # float seconds since 1970


def test_a_day_long_time_sleep_in_a_run_returns_at_once() -> None:
    # A real sleep would outlast the child's timeout by a day.
    code = textwrap.dedent(
        """
        import asyncio, time, askew
        async def main():
            time.sleep(86400)
            return asyncio.get_running_loop().time()
        print(askew.run(main(), seed=1, strategy="fifo"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=True,
    )
    assert out.stdout.strip() == "86400.0"


def test_a_timer_due_during_a_blocking_sleep_fires_after_the_step_late() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        seen: list[tuple[str, float]] = []
        loop.call_later(0.1, lambda: seen.append(("timer", loop.time())))
        time.sleep(1)  # blocks the loop: the timer cannot fire in the meantime
        seen.append(("woke", loop.time()))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return seen

    seen = askew.run(main(), seed=2, strategy="fifo")
    assert [what for what, _ in seen] == ["woke", "timer"]
    assert seen[0][1] == 1.0 and seen[1][1] >= 1.0


def _traced(*sleeps: float, seed: int = 3) -> tuple[int, float]:
    loop = askew.new_event_loop(seed, strategy="fifo")

    async def main() -> None:
        await asyncio.sleep(0.5)
        # Last: no timer or draw after them could carry their effect into
        # the hash; only the sleeps' own trace records can.
        for s in sleeps:
            time.sleep(s)

    try:
        loop.run_until_complete(main())
        return loop.trace_hash, loop.time()
    finally:
        loop.close()


def test_a_sleep_feeds_the_trace_hash_and_its_seed_replays_it() -> None:
    assert _traced(1.0) == _traced(1.0)
    assert _traced(1.0)[0] != _traced(2.0)[0]
    assert _traced(1.0)[0] != _traced()[0]


def test_time_sleep_zero_is_a_no_op_in_time_and_in_the_trace() -> None:
    assert _traced(0, 0.0, -0.0) == _traced()


@pytest.mark.parametrize(
    ("secs", "error"),
    [
        (-1, ValueError),
        (-1e-10, ValueError),
        (math.nan, ValueError),
        (math.inf, OverflowError),
        (1e10, OverflowError),
        (10**10, OverflowError),
        (10**30, OverflowError),
        ("1", TypeError),
        (None, TypeError),
    ],
)
def test_a_bad_sleep_length_raises_what_time_sleep_raises(secs: Any, error: type) -> None:
    with pytest.raises(error):  # the stdlib's, on a value it rejects before sleeping
        _original_sleep(secs)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        assert time.sleep is _virtual.sleep
        with pytest.raises(error) as info:
            time.sleep(secs)
        if error is not TypeError:
            assert repr(secs) in str(info.value) or str(secs) in str(info.value)
        return loop.time()

    assert askew.run(main(), seed=4, strategy="fifo") == 0.0


def test_a_sleep_past_the_end_of_virtual_time_is_an_overflow_error() -> None:
    async def main() -> float:
        assert time.sleep is _virtual.sleep  # a real one would take 158 years to fail
        # 5e9 s is a valid time.sleep length, but 2**62 ns end virtual time.
        with pytest.raises(OverflowError, match=r"time\.sleep\(5000000000\.0\).*past its end"):
            time.sleep(5e9)
        return asyncio.get_running_loop().time()

    assert askew.run(main(), seed=5, max_time=1e10, strategy="fifo") == 0.0


def test_a_sleep_past_max_time_fails_the_run_even_when_caught() -> None:
    async def body(world: askew.World) -> None:
        assert time.sleep is _virtual.sleep  # a real one would take 11 s to fail
        try:
            time.sleep(11)
        except Exception:
            pass  # a livelock guard cannot be swallowed either
        await asyncio.sleep(1)

    with pytest.raises(askew.BudgetExceeded) as info:
        run_sim(body, max_time=10, strategy="fifo")
    text = str(info.value)
    assert "time.sleep(11) would carry virtual time past the run's time budget" in text
    assert text.count("at: ") == 1 and f"at: {__file__}:" in text  # the user's line, once
    assert "caught by the code under test" in text
    assert info.value.time == 0.0  # the clock did not move


def test_a_skewed_node_sleeps_on_its_own_clock() -> None:
    async def sleeper(node: Any) -> None:
        loop = asyncio.get_running_loop()
        local0, world0 = loop.time(), node._askew_world.now
        time.sleep(3)
        node.lap = (loop.time() - local0, node._askew_world.now - world0)

    async def body(world: askew.World) -> None:
        fast = world.spawn(sleeper)
        world.faults.skew(fast, drift=0.5)
        await world.clock.advance(10)
        local, real = fast.lap
        assert local == pytest.approx(3.0, abs=1e-6)
        assert real == pytest.approx(2.0, abs=1e-6)

    run_sim(body, strategy="fifo")


@pytest.mark.skipif(
    _core.preload_active(), reason="under askew-exec the run's timed wait for the thread is refused"
)
def test_time_sleep_on_another_thread_is_real_and_leaves_the_simulation_clock_alone() -> None:
    go, done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def other() -> None:
        go.wait(timeout=hang_guard(60))
        seen["patched"] = time.sleep is _virtual.sleep
        seen["returned"] = time.sleep(0.001)
        seen["in_simulation"] = _virtual.in_simulation()
        done.set()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        go.set()
        done.wait(timeout=hang_guard(60))  # this step blocks until the other thread has slept
        return loop.time() - t0

    thread = threading.Thread(target=other)
    thread.start()
    try:
        moved = askew.run(main(), seed=6, strategy="fifo")
    finally:
        go.set()
        thread.join()
    assert seen == {"patched": True, "returned": None, "in_simulation": False}
    assert moved == 0.0


def test_time_sleep_is_the_stdlibs_outside_a_run() -> None:
    async def main() -> bool:
        return time.sleep is _virtual.sleep

    assert askew.run(main(), seed=7, strategy="fifo") is True
    assert time.sleep is _original_sleep


# ---- under the preload ---------------------------------------------------------------


@needs_preload
def test_c_sleeps_under_the_preload_cost_virtual_time_and_are_not_refused(
    probe_dir: Path,
) -> None:
    _needs_askew()
    out = run_python(
        """
import asyncio, json, threading, time, askew, _askew_probe as p
from time import sleep as stdlib_sleep  # taken before the run: the real time.sleep
CLOCK_MONOTONIC, TIMER_ABSTIME = 1, 1
go, done = threading.Event(), threading.Event()
def bystander():
    go.wait(60)
    p.usleep(1000)  # another thread: a real millisecond, no virtual time
    done.set()
t = threading.Thread(target=bystander); t.start()
async def main():
    loop = asyncio.get_running_loop()
    r = {"nanosleep": p.nanosleep(1), "nogil": p.nanosleep_nogil(2)}
    r["usleep"] = p.usleep(500000)
    r["sleep"] = p.sleep(1)
    deadline = time.monotonic_ns() + 10**9
    r["abs"] = p.clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline // 10**9,
                                 deadline % 10**9)
    stdlib_sleep(0.25)
    r["before_bystander"] = loop.time()
    go.set(); done.wait()  # untimed: a timed wait here would be refused
    r["t"] = loop.time()
    await asyncio.sleep(0)
    return r
try:
    print(json.dumps(askew.run(main(), seed=8, strategy="fifo")))
finally:
    go.set(); t.join()
""",
        pythonpath=probe_dir,
    )
    r = __import__("json").loads(assert_ok(out))
    assert r == {
        "nanosleep": 0,
        "nogil": 0,
        "usleep": 0,
        "sleep": 0,
        "abs": 0,
        "before_bystander": 5.75,
        "t": 5.75,
    }
