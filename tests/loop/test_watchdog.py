# SPDX-License-Identifier: Apache-2.0
"""The step watchdog (askew/_loop/watchdog.py): a step that runs past its
real-time limit fails the run with the seed, the node and the line, and the
watchdog never changes a run. The spinning steps below end by themselves
after a generous real-time bound: a hang guard, never an assertion."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time

import pytest
from conftest import hang_guard

import askew
from askew._loop.settings import env_knobs
from askew.errors import StepTimeout

_real = time.perf_counter  # the host's clock: inside a run time.* is virtual
SPIN_LINE = 0  # set below: the line the spinning node executes


def spin(seconds: float) -> None:
    """A loop that never awaits, for at most `seconds` of real time."""
    start = _real()
    while _real() - start < seconds:  # the watchdog names this line
        pass


SPIN_LINE = spin.__code__.co_firstlineno + 3


def failure_of(test: object) -> StepTimeout:
    with pytest.raises(askew.SimulationFailure) as info:
        test()  # type: ignore[operator]
    cause = info.value.__cause__
    assert isinstance(cause, StepTimeout), info.value
    return cause


def test_a_node_that_never_yields_fails_with_its_seed_node_and_line() -> None:
    @askew.simulate(seed=77, iterations=1, step_timeout=0.3)
    async def test(world: askew.World) -> None:
        async def busy(node: object) -> None:
            spin(hang_guard(60))

        async def idle(node: object) -> None:
            await node.recv()  # type: ignore[attr-defined]

        world.spawn(idle)
        world.spawn(busy)
        await world.clock.advance(1)

    text = str(failure_of(test))
    assert "a step of node 1 has run for" in text
    assert "seed=77" in text
    assert f"{__file__}:{SPIN_LINE} in spin()" in text
    assert "step_timeout=" in text and "ASKEW_STEP_TIMEOUT" in text


def test_the_test_body_stuck_in_a_step_is_named_as_the_world() -> None:
    @askew.simulate(seed=3, iterations=1, step_timeout=0.3)
    async def test(world: askew.World) -> None:
        spin(hang_guard(60))

    text = str(failure_of(test))
    assert "a step of the world (the test body)" in text
    assert "seed=3" in text and f":{SPIN_LINE} in spin()" in text


def test_a_run_after_a_stuck_one_runs_unharmed() -> None:
    """The interruption lands in the stuck step only: what runs next in the
    process (here, another test's sweep) is not touched by it."""

    @askew.simulate(seed=1, iterations=1, step_timeout=0.3)
    async def stuck(world: askew.World) -> None:
        spin(hang_guard(60))

    failure_of(stuck)

    @askew.simulate(seed=1, iterations=20, step_timeout=0.3)
    async def fine(world: askew.World) -> None:
        await world.clock.advance(5)

    fine()


def test_step_timeout_zero_switches_the_watchdog_off() -> None:
    @askew.simulate(seed=1, iterations=1, step_timeout=0)
    async def test(world: askew.World) -> None:
        spin(0.6)  # twice the limit the runs above fail at

    test()


def test_the_watchdog_never_changes_a_run() -> None:
    hashes = {}
    for limit in (0.0, 1.0, 60.0):

        @askew.simulate(seed=9, iterations=1, step_timeout=limit)
        async def test(world: askew.World) -> None:
            async def echo(node: object) -> None:
                while (msg := await node.recv(timeout=1)) is not None:  # type: ignore[attr-defined]
                    node.send(msg.src, msg.payload)  # type: ignore[attr-defined]

            async def ping(node: object, i: int) -> None:
                node.send(0, i)  # type: ignore[attr-defined]
                await node.recv(timeout=1)  # type: ignore[attr-defined]

            world.spawn(echo)
            for i in range(20):
                world.spawn(ping, i)
            await world.clock.advance(2)
            hashes[len(hashes)] = asyncio.get_running_loop().trace_hash  # type: ignore[attr-defined]

        test()
    assert len(set(hashes.values())) == 1, hashes


def test_a_bare_loop_takes_the_watchdog_too() -> None:
    async def main() -> None:
        spin(hang_guard(60))

    loop = askew.new_event_loop(4, step_timeout=0.3)
    try:
        with pytest.raises(StepTimeout, match=r"a step of the world .* \(seed=4,"):
            loop.run_until_complete(main())
    finally:
        loop.close()


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "1", True])
def test_a_bad_step_timeout_is_refused_by_name(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="step_timeout"):
        askew.simulate(step_timeout=bad)  # type: ignore[arg-type]


def test_askew_step_timeout_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKEW_STEP_TIMEOUT", "2.5")
    assert env_knobs()["step_timeout"] == 2.5
    monkeypatch.setenv("ASKEW_STEP_TIMEOUT", "soon")
    with pytest.raises(ValueError, match=re.escape("ASKEW_STEP_TIMEOUT must be a number")):
        env_knobs()


def test_a_profiled_call_after_a_stuck_step_returns() -> None:
    """A taken-back interruption on 3.11 (PyThreadState_SetAsyncExc with
    NULL) left the eval breaker set, and the next call under a profile hook
    (the timeline's) spun forever. In a child, so a regression is a guarded
    failure, not a hung suite."""
    script = (
        "import sys, time, askew\n"
        "from askew.errors import StepTimeout\n"
        "real = time.perf_counter\n"
        "async def main():\n"
        "    start = real()\n"
        f"    while real() - start < {hang_guard(60)}:\n"
        "        pass\n"
        "loop = askew.new_event_loop(4, step_timeout=0.3)\n"
        "try:\n"
        "    loop.run_until_complete(main())\n"
        "except StepTimeout:\n"
        "    print('stuck step failed')\n"
        "loop.close()\n"
        "def f():\n"
        "    return 1\n"
        "sys.setprofile(lambda *a: None)\n"
        "f()\n"
        "sys.setprofile(None)\n"
        "print('profiled call returned')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["stuck step failed", "profiled call returned"]
