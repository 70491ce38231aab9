# SPDX-License-Identifier: Apache-2.0
"""Cancellation: Task.cancel and its message, cancelling() and uncancel(), propagation through
awaiting tasks, and asyncio.shield.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .conftest import cancel_once_started, settle


def test_shield_protects_the_inner_task_from_the_outer_cancel(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        gate: asyncio.Future[str] = loop.create_future()

        async def work() -> str:
            return await gate

        inner = loop.create_task(work())

        async def outer() -> str:
            return await asyncio.shield(inner)

        o = loop.create_task(outer())
        await cancel_once_started(o)
        assert not inner.done()
        gate.set_result("inner")
        assert await inner == "inner"

    loop.run_until_complete(main())


def test_shield_of_a_done_future_returns_its_result(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> int:
        fut = loop.create_future()
        fut.set_result(4)
        return await asyncio.shield(fut)

    assert loop.run_until_complete(main()) == 4


def test_cancel_raises_cancelled_error_with_the_message_at_the_await(
    loop: asyncio.AbstractEventLoop,
) -> None:
    inside: list[tuple[Any, ...]] = []

    async def body() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError as e:
            inside.append(e.args)
            raise

    async def main() -> asyncio.Task[None]:
        t = loop.create_task(body())
        await settle()
        assert t.cancel("stop now") is True
        with pytest.raises(asyncio.CancelledError) as info:
            await t
        assert info.value.args == ("stop now",)
        return t

    t = loop.run_until_complete(main())
    assert t.cancelled()
    assert inside == [("stop now",)]
    with pytest.raises(asyncio.CancelledError):
        t.result()


def test_cancelling_a_task_before_it_starts_skips_its_body(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[bool] = []

    async def body() -> None:
        ran.append(True)

    async def main() -> asyncio.Task[None]:
        t = loop.create_task(body())
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return t

    assert loop.run_until_complete(main()).cancelled()
    assert ran == []


def test_cancel_on_a_done_task_returns_false(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> asyncio.Task[int]:
        t = loop.create_task(asyncio.sleep(0, result=1))
        await t
        return t

    t = loop.run_until_complete(main())
    assert t.cancel() is False
    assert not t.cancelled()
    assert t.result() == 1


def test_cancelling_counts_requests_and_uncancel_lets_a_task_survive(
    loop: asyncio.AbstractEventLoop,
) -> None:
    counts: list[int] = []

    async def body() -> str:
        task = asyncio.current_task()
        assert task is not None
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            counts.append(task.cancelling())
            counts.append(task.uncancel())
            counts.append(task.uncancel())
            counts.append(task.uncancel())  # never goes below zero
        await asyncio.sleep(0)
        return "survived"

    async def main() -> asyncio.Task[str]:
        t = loop.create_task(body())
        await settle()
        assert t.cancelling() == 0
        assert t.cancel() is True
        assert t.cancel() is True
        assert t.cancelling() == 2
        await t
        return t

    t = loop.run_until_complete(main())
    assert counts == [2, 1, 0, 0]
    assert not t.cancelled()
    assert t.result() == "survived"


def test_cancelled_error_propagates_through_awaiting_tasks(loop: asyncio.AbstractEventLoop) -> None:
    async def leaf() -> None:
        await asyncio.sleep(10)

    async def middle() -> None:
        await leaf()

    async def main() -> asyncio.Task[None]:
        t = loop.create_task(middle())
        await cancel_once_started(t)
        return t

    assert loop.run_until_complete(main()).cancelled()


def test_cancelling_the_awaiter_cancels_the_awaited_task(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> tuple[asyncio.Task[None], asyncio.Task[None]]:
        inner = loop.create_task(asyncio.sleep(10))

        async def outer() -> None:
            await inner

        o = loop.create_task(outer())
        await cancel_once_started(o)
        return o, inner

    o, inner = loop.run_until_complete(main())
    assert o.cancelled()
    assert inner.cancelled()


def test_a_task_that_swallows_cancel_completes_normally(loop: asyncio.AbstractEventLoop) -> None:
    async def body() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "swallowed"
        return "not reached"

    async def main() -> asyncio.Task[str]:
        t = loop.create_task(body())
        await settle()
        t.cancel()
        await t
        return t

    t = loop.run_until_complete(main())
    assert not t.cancelled()
    assert t.result() == "swallowed"
