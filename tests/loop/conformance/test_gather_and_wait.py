# SPDX-License-Identifier: Apache-2.0
"""Waiting on several awaitables: gather (order, errors, cancellation both ways), wait and
as_completed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from .conftest import ORDER_TICK, TICK, cancel_once_started, settle, sleep_until


def test_gather_returns_results_in_argument_order(loop: asyncio.AbstractEventLoop) -> None:
    async def job(n: int) -> int:
        await asyncio.sleep((5 - n) * TICK)
        return n

    async def main() -> list[int]:
        return await asyncio.gather(*(job(n) for n in range(5)))

    assert loop.run_until_complete(main()) == [0, 1, 2, 3, 4]


def test_gather_with_no_awaitables_returns_an_empty_list(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[Any]:
        return await asyncio.gather()

    assert loop.run_until_complete(main()) == []


def test_gather_propagates_the_first_exception_and_leaves_the_rest_running(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def boom() -> None:
        raise ValueError("boom")

    async def main() -> asyncio.Task[str]:
        gate: asyncio.Future[str] = loop.create_future()

        async def slow_work() -> str:
            return await gate

        slow = loop.create_task(slow_work())
        with pytest.raises(ValueError, match="boom"):
            await asyncio.gather(boom(), slow)
        await settle()
        assert not slow.done()
        gate.set_result("slow")
        await slow
        return slow

    assert loop.run_until_complete(main()).result() == "slow"


def test_gather_return_exceptions_puts_exceptions_in_place(loop: asyncio.AbstractEventLoop) -> None:
    err = ValueError("x")

    async def boom() -> None:
        await asyncio.sleep(TICK)
        raise err

    async def main() -> Sequence[Any]:
        return await asyncio.gather(
            asyncio.sleep(0, result=1), boom(), asyncio.sleep(0, result=3),
            return_exceptions=True,
        )  # fmt: skip

    assert loop.run_until_complete(main()) == [1, err, 3]


def test_gather_return_exceptions_reports_a_cancelled_child(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> Sequence[Any]:
        child = loop.create_task(asyncio.sleep(10))
        loop.call_soon(child.cancel)
        return await asyncio.gather(child, asyncio.sleep(TICK, result=2), return_exceptions=True)

    res = loop.run_until_complete(main())
    assert isinstance(res[0], asyncio.CancelledError)
    assert res[1] == 2


def test_cancelling_gather_cancels_its_children(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[asyncio.Task[None]]:
        children = [loop.create_task(asyncio.sleep(10)) for _ in range(3)]
        g = asyncio.gather(*children)
        await cancel_once_started(g)
        return children

    assert all(c.cancelled() for c in loop.run_until_complete(main()))


def test_a_cancelled_child_cancels_gather(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        child = loop.create_task(asyncio.sleep(10))
        other = loop.create_task(asyncio.sleep(TICK))
        loop.call_soon(child.cancel)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.gather(child, other)
        await other

    loop.run_until_complete(main())


def test_wait_first_completed_returns_done_and_pending_sets(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        fast = loop.create_task(asyncio.sleep(TICK, result="fast"))
        slow = loop.create_task(asyncio.sleep(10))
        done, pending = await asyncio.wait({fast, slow}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {fast}
        assert pending == {slow}
        slow.cancel()

    loop.run_until_complete(main())


def test_wait_with_a_timeout_leaves_pending_tasks_running(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        slow = loop.create_task(asyncio.sleep(10))
        done, pending = await asyncio.wait({slow}, timeout=TICK)
        assert done == set()
        assert pending == {slow}
        assert not slow.done()
        slow.cancel()

    loop.run_until_complete(main())


def test_as_completed_yields_in_completion_order(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[int]:
        base = loop.time()
        aws = [sleep_until(base + n * ORDER_TICK, result=n) for n in (5, 1, 3)]
        return [await f for f in asyncio.as_completed(aws)]

    assert loop.run_until_complete(main()) == [1, 3, 5]
