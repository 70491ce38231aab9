# SPDX-License-Identifier: Apache-2.0
"""The Future API (results, exceptions, cancellation are final) and done callbacks, which run
via the loop in registration order.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from .conftest import TICK, append_when_done, settle


def test_create_future_makes_a_pending_asyncio_future_of_this_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    fut = loop.create_future()
    assert isinstance(fut, asyncio.Future)
    assert fut.get_loop() is loop
    assert not fut.done()
    assert not fut.cancelled()
    with pytest.raises(asyncio.InvalidStateError):
        fut.result()
    with pytest.raises(asyncio.InvalidStateError):
        fut.exception()
    fut.cancel()


def test_future_set_result_is_final(loop: asyncio.AbstractEventLoop) -> None:
    fut = loop.create_future()
    fut.set_result(1)
    assert fut.done()
    assert fut.result() == 1
    assert fut.exception() is None
    with pytest.raises(asyncio.InvalidStateError):
        fut.set_result(2)
    with pytest.raises(asyncio.InvalidStateError):
        fut.set_exception(ValueError())
    assert fut.cancel() is False


def test_future_set_exception_is_raised_by_result(loop: asyncio.AbstractEventLoop) -> None:
    fut = loop.create_future()
    err = ValueError("e")
    fut.set_exception(err)
    assert fut.exception() is err
    with pytest.raises(ValueError, match="e"):
        fut.result()


def test_a_cancelled_future_raises_cancelled_error(loop: asyncio.AbstractEventLoop) -> None:
    fut = loop.create_future()
    assert fut.cancel("why") is True
    assert fut.cancelled()
    assert fut.done()
    assert fut.cancel() is False
    with pytest.raises(asyncio.CancelledError):
        fut.result()


def test_awaiting_a_future_returns_its_result(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> str:
        fut: asyncio.Future[str] = loop.create_future()
        loop.call_later(TICK, fut.set_result, "awaited")
        return await fut

    assert loop.run_until_complete(main()) == "awaited"


def test_done_callbacks_run_via_the_loop_in_registration_order(
    loop: asyncio.AbstractEventLoop,
) -> None:
    order: list[int] = []

    async def main() -> None:
        fut = loop.create_future()
        for i in range(6):
            fut.add_done_callback(functools.partial(append_when_done, order, i))
        fut.set_result(None)
        assert order == []  # scheduled, not called synchronously
        await settle()

    loop.run_until_complete(main())
    assert order == list(range(6))


def test_done_callbacks_set_from_a_plain_callback_keep_their_order(
    loop: asyncio.AbstractEventLoop,
) -> None:
    order: list[int] = []
    fut = loop.create_future()
    for i in range(6):
        fut.add_done_callback(functools.partial(append_when_done, order, i))
    loop.call_soon(fut.set_result, None)
    loop.run_until_complete(settle())
    assert order == list(range(6))


def test_done_callback_receives_the_future(loop: asyncio.AbstractEventLoop) -> None:
    got: list[asyncio.Future[Any]] = []

    async def main() -> asyncio.Future[Any]:
        fut = loop.create_future()
        fut.add_done_callback(got.append)
        fut.set_result(None)
        await settle()
        return fut

    assert got == [loop.run_until_complete(main())]


def test_remove_done_callback_removes_every_registration(loop: asyncio.AbstractEventLoop) -> None:
    called: list[str] = []

    def cb(f: asyncio.Future[Any]) -> None:
        called.append("cb")

    async def main() -> None:
        fut = loop.create_future()
        fut.add_done_callback(cb)
        fut.add_done_callback(lambda f: called.append("other"))
        fut.add_done_callback(cb)
        assert fut.remove_done_callback(cb) == 2
        assert fut.remove_done_callback(cb) == 0
        fut.set_result(None)
        await settle()

    loop.run_until_complete(main())
    assert called == ["other"]


def test_a_done_callback_added_after_completion_is_scheduled_soon(
    loop: asyncio.AbstractEventLoop,
) -> None:
    called: list[str] = []

    async def main() -> None:
        fut = loop.create_future()
        fut.set_result(None)
        fut.add_done_callback(lambda f: called.append("late"))
        assert called == []
        await settle()

    loop.run_until_complete(main())
    assert called == ["late"]


def test_task_done_callbacks_run_in_registration_order(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []

    async def main() -> None:
        t = loop.create_task(asyncio.sleep(TICK))
        for i in range(5):
            t.add_done_callback(functools.partial(append_when_done, order, i))
        await t
        await settle()

    loop.run_until_complete(main())
    assert order == list(range(5))
