# SPDX-License-Identifier: Apache-2.0
"""Handles and callbacks: call_soon and call_soon_threadsafe from the loop's thread, the order
asyncio promises for them (FIFO from one caller, a batch before what it schedules), and the
handles they return.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from .conftest import TICK, needs_312, settle, var


def test_call_soon_passes_positional_args(loop: asyncio.AbstractEventLoop) -> None:
    got: list[tuple[int, str]] = []
    loop.call_soon(lambda a, b: got.append((a, b)), 1, "x")
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert got == [(1, "x")]


def test_call_soon_from_top_level_runs_in_fifo_order(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []
    for i in range(10):
        loop.call_soon(order.append, i)
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert order == list(range(10))


def test_call_soon_from_one_callback_runs_in_fifo_order(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []

    def parent() -> None:
        for i in range(10):
            loop.call_soon(order.append, i)

    loop.call_soon(parent)
    loop.run_until_complete(settle())
    assert order == list(range(10))


def test_call_soon_from_one_task_step_runs_in_fifo_order(loop: asyncio.AbstractEventLoop) -> None:
    order: list[int] = []

    async def main() -> None:
        for i in range(10):
            loop.call_soon(order.append, i)
        await settle()

    loop.run_until_complete(main())
    assert order == list(range(10))


def test_a_callback_scheduled_during_a_batch_runs_after_that_batch(
    loop: asyncio.AbstractEventLoop,
) -> None:
    order: list[str] = []

    def a() -> None:
        order.append("a")
        loop.call_soon(order.append, "c")

    loop.call_soon(a)
    loop.call_soon(order.append, "b")
    loop.run_until_complete(settle())
    assert sorted(order[:2]) == ["a", "b"]
    assert order[2] == "c"


def test_callbacks_run_with_the_loop_running_and_current(loop: asyncio.AbstractEventLoop) -> None:
    seen: list[tuple[bool, asyncio.AbstractEventLoop, asyncio.Task[Any] | None]] = []

    def cb() -> None:
        running = asyncio.get_running_loop()
        seen.append((loop.is_running(), running, asyncio.current_task()))

    loop.call_soon(cb)
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert seen == [(True, loop, None)]
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


def test_call_soon_returns_a_handle_and_call_later_a_timer_handle(
    loop: asyncio.AbstractEventLoop,
) -> None:
    h = loop.call_soon(lambda: None)
    th = loop.call_later(1, lambda: None)
    assert isinstance(h, asyncio.Handle) and not isinstance(h, asyncio.TimerHandle)
    assert isinstance(th, asyncio.TimerHandle) and isinstance(th, asyncio.Handle)
    for attr in ("cancel", "cancelled"):
        assert callable(getattr(h, attr)) and callable(getattr(th, attr))
    assert isinstance(th.when(), float)
    assert not hasattr(h, "when")
    h.cancel()
    th.cancel()


def test_handle_cancel_prevents_the_callback(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[str] = []
    h = loop.call_soon(ran.append, "soon")
    th = loop.call_later(TICK, ran.append, "later")
    assert not h.cancelled()
    assert not th.cancelled()
    h.cancel()
    th.cancel()
    h.cancel()  # cancelling twice is harmless
    assert h.cancelled()
    assert th.cancelled()
    loop.run_until_complete(asyncio.sleep(3 * TICK))
    assert ran == []


def test_cancelling_a_handle_after_it_ran_is_harmless(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[int] = []
    h = loop.call_soon(ran.append, 1)
    loop.run_until_complete(settle())
    h.cancel()
    assert ran == [1]


@needs_312
def test_handle_get_context_returns_the_context_it_runs_in(loop: asyncio.AbstractEventLoop) -> None:
    ctx = contextvars.copy_context()
    h = loop.call_soon(lambda: None, context=ctx)
    th = loop.call_later(1, lambda: None, context=ctx)
    assert h.get_context() is ctx  # type: ignore[attr-defined]
    assert th.get_context() is ctx  # type: ignore[attr-defined]
    h.cancel()
    th.cancel()


def test_call_soon_threadsafe_from_the_loop_thread_is_call_soon(
    loop: asyncio.AbstractEventLoop,
) -> None:
    order: list[int] = []

    async def main() -> None:
        for i in range(3):
            loop.call_soon_threadsafe(order.append, i)
        h = loop.call_soon_threadsafe(order.append, 99)
        h.cancel()
        await settle()

    loop.run_until_complete(main())
    assert order == [0, 1, 2]


def test_call_soon_threadsafe_before_running_runs_once_started(
    loop: asyncio.AbstractEventLoop,
) -> None:
    got: list[str] = []
    loop.call_soon_threadsafe(lambda: got.append(var.get()))
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert got == ["unset"]
