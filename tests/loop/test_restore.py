# SPDX-License-Identifier: Apache-2.0
"""What a run patches is put back exactly: after a pass, a failure, or a
KeyboardInterrupt raised inside the test. Threads are refused inside a run,
and other threads keep the real clock while it runs."""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import hang_guard, run_sim

import askew
from askew.errors import NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")

_TIME_NAMES = ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns")


def snapshot() -> dict[str, Any]:
    return {
        **{name: getattr(time, name) for name in _TIME_NAMES},
        "urandom": os.urandom,
        "random_state": random.getstate(),
        "thread_start": threading.Thread.start,
        "gc_enabled": gc.isenabled(),
    }


async def passes(world: askew.World) -> None:
    random.random()
    os.urandom(4)
    await world.clock.advance(1)


async def fails(world: askew.World) -> None:
    random.random()
    await world.clock.advance(1)
    raise AssertionError("on purpose")


async def interrupted(world: askew.World) -> None:
    random.random()
    await world.clock.advance(1)
    raise KeyboardInterrupt


def _run_expecting(body: Callable[..., Any]) -> None:
    if body is passes:
        run_sim(body)
    elif body is fails:
        with pytest.raises(SimulationFailure):
            run_sim(body)
    else:
        with pytest.raises(KeyboardInterrupt):
            run_sim(body)


@pytest.fixture(params=[True, False], ids=["gc-on", "gc-off"])
def gc_state(request: pytest.FixtureRequest) -> Iterator[bool]:
    was = gc.isenabled()
    if request.param:
        gc.enable()
    else:
        gc.disable()
    yield request.param
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("body", [passes, fails, interrupted], ids=lambda b: b.__name__)
def test_everything_a_run_patches_is_restored_after_it(
    body: Callable[..., Any], gc_state: bool
) -> None:
    random.seed(2024)
    before = snapshot()
    _run_expecting(body)
    after = snapshot()
    assert after == before
    assert after["gc_enabled"] is gc_state
    assert time.time() > 1.7e9  # the real clock again, not the 2020 epoch


def test_a_keyboard_interrupt_inside_the_test_is_not_wrapped() -> None:
    with pytest.raises(KeyboardInterrupt) as info:
        run_sim(interrupted)
    assert type(info.value) is KeyboardInterrupt


def test_a_run_after_an_interrupted_one_works() -> None:
    with pytest.raises(KeyboardInterrupt):
        run_sim(interrupted)
    run_sim(passes)


def test_starting_a_thread_inside_a_run_raises_nondeterminism_error() -> None:
    async def body(world: askew.World) -> None:
        thread = threading.Thread(target=lambda: None, name="helper")
        thread.start()

    with pytest.raises(NondeterminismError, match=r"threading.Thread.start.*'helper'"):
        run_sim(body, executor="refuse")
    thread = threading.Thread(target=lambda: None)
    thread.start()  # allowed again outside
    thread.join()


@pytest.mark.skipif(
    askew._core.preload_active(),  # type: ignore[attr-defined]
    reason="under askew-exec the run's timed wait for the thread is refused",
)
def test_other_threads_see_the_real_clock_during_a_run() -> None:
    go, done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def watcher() -> None:
        go.wait(timeout=hang_guard(60))
        seen["time"] = time.time()
        seen["in_simulation"] = askew._core.virtual.in_simulation()  # type: ignore[attr-defined]
        seen["urandom"] = os.urandom(8)
        done.set()

    thread = threading.Thread(target=watcher)
    thread.start()

    async def body(world: askew.World) -> None:
        await world.clock.advance(5)
        assert time.time() == 1577836805
        go.set()
        assert done.wait(timeout=hang_guard(60))
        seen["sim_time"] = time.time()

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot
    thread.join()
    assert seen["sim_time"] == 1577836805
    assert seen["time"] > 1.7e9
    assert seen["in_simulation"] is False
    assert len(seen["urandom"]) == 8
