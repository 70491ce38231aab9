# SPDX-License-Identifier: Apache-2.0
"""world.always: checked after every step by a hook of the C loop. A
violation fails the run at the step where it happened, with that step and
its virtual time in the report; a predicate that raises fails the run with
its exception chained; a check draws nothing, so the run's trace stays as
it was; bad predicates are refused."""

from __future__ import annotations

import asyncio
import gc
import re
import warnings
from typing import Any

import pytest
from test_determinism import scenario, trace_of

import askew
from askew._world.monitors import PropertyViolation

pytestmark = pytest.mark.usefixtures("clean_env")


def fail_of(body: Any, **config: Any) -> askew.SimulationFailure:
    with pytest.raises(askew.SimulationFailure) as info:
        askew.simulate(seed=1, iterations=1, **config)(body)()
    return info.value


def test_a_violation_fails_the_run_at_the_step_where_it_happened() -> None:
    seen: list[tuple[int, int]] = []

    async def body(world: askew.World) -> None:
        box = [0]

        async def counter(node: Any) -> None:
            for _ in range(10):
                box[0] += 1
                seen.append((box[0], world._loop.steps))
                await asyncio.sleep(0.1)

        world.always("small", lambda: box[0] < 4)
        world.spawn(counter)
        await world.clock.advance(5)

    exc = fail_of(body)
    # The step that made box 4 is the last one run: nothing after it.
    assert seen[-1][0] == 4
    assert exc.steps == seen[-1][1]
    assert isinstance(exc.__cause__, PropertyViolation)
    assert f"did not hold after step {exc.steps} at t={exc.time:.6f}s" in str(exc)
    assert "always 'small'" in exc.report


class _Stop(BaseException):
    """The user's own BaseException."""


async def _sleeper(node: Any) -> None:
    await asyncio.sleep(5)


@pytest.mark.parametrize("check", ["always", "eventually"])
@pytest.mark.parametrize(
    "raised", [_Stop, asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit]
)
def test_a_predicate_raising_a_base_exception_ends_the_run_and_leaves_nothing_unfinished(
    check: str, raised: type[BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    def predicate() -> bool:
        raise raised("from the predicate")

    async def body(world: askew.World) -> None:
        world.spawn(_sleeper)
        world.spawn(_sleeper)
        if check == "always":
            world.always("p", predicate)
        else:
            world.eventually("p", predicate, within=0.5)
        await asyncio.sleep(1)

    stops = raised in (KeyboardInterrupt, SystemExit)
    gc.collect()  # what other tests left is not this one's
    caplog.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(raised if stops else askew.SimulationFailure) as info:
            askew.simulate(seed=1, iterations=1)(body)()
        if not stops:  # a verdict on the run: the predicate's exception chained
            violation = info.value.__cause__
            assert isinstance(violation, PropertyViolation)
            assert f"{check} 'p' (" in str(violation) and "raised" in str(violation)
            assert isinstance(violation.__cause__, raised)
        del info
        gc.collect()
    # The nodes' tasks ran to their end inside the run, as after any failure.
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert "Task was destroyed but it is pending" not in caplog.text


def test_a_predicate_that_raises_fails_the_run_with_its_exception_chained() -> None:
    async def body(world: askew.World) -> None:
        world.always("boom", lambda: 1 / 0)
        await asyncio.sleep(1)

    exc = fail_of(body)
    assert isinstance(exc.__cause__, PropertyViolation)
    assert isinstance(exc.__cause__.__cause__, ZeroDivisionError)
    assert "raised ZeroDivisionError" in str(exc)


def test_every_check_of_a_world_is_checked_after_every_step() -> None:
    calls: dict[str, int] = {"a": 0, "b": 0}
    steps: list[int] = []

    async def body(world: askew.World) -> None:
        def count(name: str) -> Any:
            def predicate() -> bool:
                calls[name] += 1
                return True

            return predicate

        world.always("a", count("a"))
        world.always("b", count("b"))
        start = world._loop.steps
        await scenario(world)
        steps.append(world._loop.steps - start)

    askew.simulate(seed=2, iterations=1)(body)()
    assert calls["a"] == calls["b"] >= steps[0] > 50


def test_a_cancelled_check_is_no_longer_checked() -> None:
    async def body(world: askew.World) -> None:
        check = world.always("never", lambda: False)
        check.cancel()
        await asyncio.sleep(1)

    askew.simulate(seed=3, iterations=2)(body)()


def test_checks_leave_the_trace_as_it_was() -> None:
    async def checked(world: askew.World) -> None:
        world.always("true", lambda: True)
        await scenario(world)

    assert trace_of(11, checked)[0] == trace_of(11)[0]


def test_checks_do_not_leak_into_the_next_iteration() -> None:
    ran: list[int] = []

    @askew.simulate(seed=4, iterations=3)
    async def test(world: askew.World) -> None:
        if not ran:
            world.always("first run only", lambda: len(ran) < 2)
        ran.append(world.seed)
        await asyncio.sleep(0.5)

    test()
    assert len(ran) == 3


@pytest.mark.parametrize("predicate", [None, 3, "x"])
def test_a_predicate_that_is_not_callable_is_refused(predicate: Any) -> None:
    async def body(world: askew.World) -> None:
        world.always("p", predicate)

    exc = fail_of(body)
    assert isinstance(exc.__cause__, TypeError)
    assert re.search(
        r"always\('p'\): the predicate must be callable, got " + re.escape(repr(predicate)),
        str(exc),
    )


def test_a_bad_name_is_refused() -> None:
    async def body(world: askew.World) -> None:
        world.always(3, lambda: True)  # type: ignore[arg-type]

    assert isinstance(fail_of(body).__cause__, TypeError)


def test_the_loop_refuses_a_step_hook_that_is_not_callable() -> None:
    loop = askew.new_event_loop(0)
    try:
        with pytest.raises(TypeError, match="the step hook must be callable or None, got 5"):
            loop._set_step_hook(5)  # type: ignore[arg-type]
        loop._set_step_hook(None)
    finally:
        loop.close()
