# SPDX-License-Identifier: Apache-2.0
"""Timers and sleep: call_later and call_at, the loop's clock (never backwards, timers in
deadline order), and asyncio.sleep. A timer may fire up to `clock_slack` early on the stock
loop, never on the SimLoop.
"""

from __future__ import annotations

import asyncio
import contextvars

from .conftest import ORDER_TICK, TICK, sleep_until, var


def test_call_later_runs_after_the_delay(
    loop: asyncio.AbstractEventLoop, clock_slack: float
) -> None:
    fired: list[float] = []
    start = loop.time()
    h = loop.call_later(2 * TICK, lambda: fired.append(loop.time()))
    loop.run_until_complete(asyncio.sleep(5 * TICK))
    assert len(fired) == 1
    assert fired[0] >= h.when() - clock_slack
    assert fired[0] >= start + 2 * TICK - clock_slack


def test_call_later_when_is_time_at_scheduling_plus_delay(loop: asyncio.AbstractEventLoop) -> None:
    t0 = loop.time()
    h = loop.call_later(0.5, lambda: None)
    t1 = loop.time()
    assert t0 + 0.5 <= h.when() <= t1 + 0.5
    h.cancel()


def test_call_later_with_a_negative_delay_still_runs(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[int] = []
    loop.call_later(-1, ran.append, 1)
    loop.run_until_complete(asyncio.sleep(TICK))
    assert ran == [1]


def test_call_at_fires_with_time_at_or_after_when(
    loop: asyncio.AbstractEventLoop, clock_slack: float
) -> None:
    fired: list[float] = []
    when = loop.time() + 2 * TICK
    h = loop.call_at(when, lambda: fired.append(loop.time()))
    assert h.when() == when
    loop.run_until_complete(asyncio.sleep(5 * TICK))
    assert len(fired) == 1
    assert fired[0] >= when - clock_slack


def test_timers_fire_in_deadline_order(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []
    base = loop.time()
    for i in (3, 1, 4, 2, 5):
        loop.call_at(base + i * TICK, order.append, i)
    loop.run_until_complete(asyncio.sleep(8 * TICK))
    assert order == [1, 2, 3, 4, 5]


def test_timer_handles_compare_by_when(loop: asyncio.AbstractEventLoop) -> None:
    early = loop.call_later(1, lambda: None)
    late = loop.call_later(2, lambda: None)
    assert early.when() < late.when()
    assert early < late
    assert late > early
    assert sorted([late, early]) == [early, late]
    early.cancel()
    late.cancel()


def test_time_never_goes_backwards(loop: asyncio.AbstractEventLoop) -> None:
    samples: list[float] = []

    async def main() -> None:
        for _ in range(5):
            samples.append(loop.time())
            await asyncio.sleep(TICK)
            samples.append(loop.time())
            await asyncio.sleep(0)

    samples.append(loop.time())
    loop.run_until_complete(main())
    samples.append(loop.time())
    assert samples == sorted(samples)


def test_call_later_args_and_context_are_passed(loop: asyncio.AbstractEventLoop) -> None:
    ctx = contextvars.copy_context()
    ctx.run(var.set, "in-ctx")
    got: list[tuple[int, str]] = []
    loop.call_later(TICK, lambda a: got.append((a, var.get())), 7, context=ctx)
    loop.run_until_complete(asyncio.sleep(3 * TICK))
    assert got == [(7, "in-ctx")]


def test_sleep_zero_yields_and_returns_none(loop: asyncio.AbstractEventLoop) -> None:
    order: list[str] = []

    async def main() -> None:
        loop.call_soon(order.append, "callback")
        assert await asyncio.sleep(0) is None  # type: ignore[func-returns-value]
        order.append("after sleep")

    loop.run_until_complete(main())
    assert order == ["callback", "after sleep"]


def test_sleep_returns_its_result_argument(loop: asyncio.AbstractEventLoop) -> None:
    assert loop.run_until_complete(asyncio.sleep(TICK, result="r")) == "r"
    assert loop.run_until_complete(asyncio.sleep(0, result="z")) == "z"


def test_sleep_lasts_at_least_the_delay_on_the_loop_clock(
    loop: asyncio.AbstractEventLoop, clock_slack: float
) -> None:
    async def main() -> tuple[float, float]:
        t0 = loop.time()
        await asyncio.sleep(3 * TICK)
        return t0, loop.time()

    t0, t1 = loop.run_until_complete(main())
    assert t1 - t0 >= 3 * TICK - clock_slack


def test_sleep_with_a_negative_delay_returns(loop: asyncio.AbstractEventLoop) -> None:
    assert loop.run_until_complete(asyncio.sleep(-1, result=5)) == 5


def test_shorter_sleep_finishes_first(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []

    async def sleeper(base: float, n: int) -> None:
        await sleep_until(base + n * ORDER_TICK)
        order.append(n)

    async def main() -> None:
        base = loop.time()
        await asyncio.gather(sleeper(base, 5), sleeper(base, 1), sleeper(base, 3))

    loop.run_until_complete(main())
    assert order == [1, 3, 5]
