# SPDX-License-Identifier: Apache-2.0
"""Timeouts: asyncio.wait_for, asyncio.timeout and asyncio.timeout_at, their deadlines on the
loop's clock, rescheduling, and cancellation from outside versus expiry.
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import TICK, cancel_once_started


def test_wait_for_returns_the_result_within_the_timeout(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> str:
        return await asyncio.wait_for(asyncio.sleep(TICK, result="ok"), timeout=10)

    assert loop.run_until_complete(main()) == "ok"


def test_wait_for_with_no_timeout_waits(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> str:
        return await asyncio.wait_for(asyncio.sleep(TICK, result="ok"), timeout=None)

    assert loop.run_until_complete(main()) == "ok"


def test_wait_for_raises_timeout_error_and_cancels_the_inner_task(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> asyncio.Task[None]:
        inner = loop.create_task(asyncio.sleep(10))
        with pytest.raises(TimeoutError) as info:
            await asyncio.wait_for(inner, timeout=TICK)
        assert isinstance(info.value.__cause__, asyncio.CancelledError)
        return inner

    inner = loop.run_until_complete(main())
    assert inner.cancelled()


def test_wait_for_timeout_is_asyncio_timeout_error(loop: asyncio.AbstractEventLoop) -> None:
    assert asyncio.TimeoutError is TimeoutError

    async def main() -> None:
        await asyncio.wait_for(asyncio.sleep(10), timeout=TICK)

    with pytest.raises(asyncio.TimeoutError):
        loop.run_until_complete(main())


def test_wait_for_zero_timeout_returns_a_done_future_result(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> int:
        fut = loop.create_future()
        fut.set_result(3)
        return await asyncio.wait_for(fut, timeout=0)

    assert loop.run_until_complete(main()) == 3


def test_wait_for_zero_timeout_on_a_pending_coroutine_times_out(
    loop: asyncio.AbstractEventLoop,
) -> None:
    started: list[bool] = []

    async def work() -> None:
        started.append(True)
        await asyncio.sleep(10)

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(work(), timeout=0)

    loop.run_until_complete(main())
    assert started == []


def test_wait_for_propagates_the_inner_exception(loop: asyncio.AbstractEventLoop) -> None:
    async def boom() -> None:
        await asyncio.sleep(TICK)
        raise ValueError("inner")

    async def main() -> None:
        await asyncio.wait_for(boom(), timeout=10)

    with pytest.raises(ValueError, match="inner"):
        loop.run_until_complete(main())


def test_cancelling_wait_for_cancels_the_inner_task(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> asyncio.Task[None]:
        inner = loop.create_task(asyncio.sleep(10))
        outer = loop.create_task(asyncio.wait_for(inner, timeout=5))
        await cancel_once_started(outer)
        return inner

    inner = loop.run_until_complete(main())
    assert inner.cancelled()


def test_timeout_raises_timeout_error_at_the_deadline(loop: asyncio.AbstractEventLoop) -> None:
    seen: list[str] = []

    async def main() -> asyncio.Timeout:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(TICK) as cm:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    seen.append("cancelled inside")
                    raise
        return cm

    cm = loop.run_until_complete(main())
    assert seen == ["cancelled inside"]
    assert cm.expired()


def test_timeout_that_is_not_reached_does_nothing(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> tuple[str, asyncio.Timeout]:
        async with asyncio.timeout(10) as cm:
            r = await asyncio.sleep(TICK, result="done")
        return r, cm

    r, cm = loop.run_until_complete(main())
    assert r == "done"
    assert not cm.expired()


def test_timeout_when_is_the_absolute_deadline(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        t0 = loop.time()
        async with asyncio.timeout(5) as cm:
            t1 = loop.time()
            when = cm.when()
            assert when is not None
            assert t0 + 5 <= when <= t1 + 5
        async with asyncio.timeout(None) as cm:
            assert cm.when() is None

    loop.run_until_complete(main())


def test_timeout_at_uses_loop_time(loop: asyncio.AbstractEventLoop, clock_slack: float) -> None:
    async def main() -> None:
        deadline = loop.time() + TICK
        with pytest.raises(TimeoutError):
            async with asyncio.timeout_at(deadline) as cm:
                assert cm.when() == deadline
                await asyncio.sleep(10)
        assert loop.time() >= deadline - clock_slack

    loop.run_until_complete(main())


def test_timeout_reschedule_to_none_disables_it(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> str:
        async with asyncio.timeout(TICK) as cm:
            cm.reschedule(None)
            assert cm.when() is None
            return await asyncio.sleep(5 * TICK, result="survived")

    assert loop.run_until_complete(main()) == "survived"


def test_timeout_reschedule_arms_a_disabled_timeout(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(None) as cm:
                cm.reschedule(loop.time() + TICK)
                await asyncio.sleep(10)

    loop.run_until_complete(main())


def test_timeout_reschedule_extends_the_deadline(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> str:
        async with asyncio.timeout(TICK) as cm:
            cm.reschedule(loop.time() + 10)
            return await asyncio.sleep(5 * TICK, result="extended")

    assert loop.run_until_complete(main()) == "extended"


def test_timeout_in_the_past_expires_at_the_next_await(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(-1):
                await asyncio.sleep(10)

    loop.run_until_complete(main())


def test_inner_timeout_fires_without_the_outer_one(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> tuple[bool, bool]:
        async with asyncio.timeout(10) as outer:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(TICK) as inner:
                    await asyncio.sleep(10)
        return inner.expired(), outer.expired()

    assert loop.run_until_complete(main()) == (True, False)


def test_cancelling_a_task_inside_timeout_raises_cancelled_error_not_timeout(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def body() -> None:
        async with asyncio.timeout(10):
            await asyncio.sleep(5)

    async def main() -> asyncio.Task[None]:
        t = loop.create_task(body())
        await cancel_once_started(t)
        return t

    assert loop.run_until_complete(main()).cancelled()
