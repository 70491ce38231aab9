# SPDX-License-Identifier: Apache-2.0
"""One conformance body for the event loop, run against stock asyncio and askew's SimLoop.

`_LoopBehaviour` states what asyncio promises about its loop and the primitives built on it;
`TestStockLoop` runs it on `asyncio.new_event_loop()` so the claims are checked against the
reference, and `TestSimLoop` runs it on `askew.new_event_loop(seed=...)` so any difference is a
failing test. The SimLoop orders independent ready callbacks by a seeded PRNG, so the body
asserts only orderings asyncio itself promises (FIFO of `call_soon` from one caller, timers by
deadline, done callbacks of one future, FIFO waiters of a lock), never the relative order of
independent tasks. Nothing here asserts on wall-clock time: stock-loop sleeps are a few
milliseconds and only ever bound an order, never a duration.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import inspect
import logging
import re
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any
from unittest import mock

import pytest

from askew._config import DEFAULT_CPU, DEFAULT_OVERSHOOT

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)

# Whether this Python's own loop accepts `create_task(..., eager_start=True)` (3.14, and
# `**kwargs` on late 3.13 patch releases). The SimLoop is held to the stock loop's signature.
_STOCK_CREATE_TASK_PARAMS = inspect.signature(asyncio.BaseEventLoop.create_task).parameters
STOCK_CREATE_TASK_TAKES_EAGER_START = "eager_start" in _STOCK_CREATE_TASK_PARAMS or any(
    p.kind is inspect.Parameter.VAR_KEYWORD for p in _STOCK_CREATE_TASK_PARAMS.values()
)

needs_312 = pytest.mark.skipif(not PY312, reason="needs Python 3.12+")
needs_313 = pytest.mark.skipif(not PY313, reason="needs Python 3.13+")

# A tiny delay: long enough to order timers on the stock loop, short enough to keep it fast.
TICK = 0.001

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


async def settle(steps: int = 20) -> None:
    """Yield to the loop `steps` times, so every task that is ready gets to run.

    Both loops promise that a callback already ready when a task yields runs before that
    task resumes (stock: a FIFO ready queue; SimLoop: a callback scheduled during a tick runs
    in a later tick), so this bounds progress by steps, never by wall-clock time.
    """
    for _ in range(steps):
        await asyncio.sleep(0)


async def sleep_until(deadline: float, result: Any = None) -> Any:
    """Sleep until `deadline` on the running loop's clock.

    Tests that order sleeps by their length measure them from one shared instant, so that on
    the stock loop a task that starts late under load cannot push its deadline past another's.
    """
    return await asyncio.sleep(deadline - asyncio.get_running_loop().time(), result)


class _LoopBehaviour:
    """The conformance body. Subclasses provide `new_loop` and `clock_slack`."""

    # How far before its deadline a timer may fire, in the loop's own clock. The stock loop
    # fires timers due before `time() + clock_resolution` (BaseEventLoop._run_once), so it may
    # run a timer up to one clock resolution early; a virtual clock has no such slack.
    clock_slack: float = 0.0

    loop: asyncio.AbstractEventLoop

    def new_loop(self) -> asyncio.AbstractEventLoop:
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _fresh_loop(self) -> Iterator[None]:
        self.loop = self.new_loop()
        yield
        loop = self.loop
        if loop.is_closed():
            return
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coro)

    # -- call_soon / call_later / call_at / time -------------------------------------------

    def test_call_soon_passes_positional_args(self) -> None:
        got: list[tuple[int, str]] = []
        self.loop.call_soon(lambda a, b: got.append((a, b)), 1, "x")
        self.loop.call_soon(self.loop.stop)
        self.loop.run_forever()
        assert got == [(1, "x")]

    def test_call_soon_from_top_level_runs_in_fifo_order(self) -> None:
        order: list[int] = []
        for i in range(10):
            self.loop.call_soon(order.append, i)
        self.loop.call_soon(self.loop.stop)
        self.loop.run_forever()
        assert order == list(range(10))

    def test_call_soon_from_one_callback_runs_in_fifo_order(self) -> None:
        order: list[int] = []

        def parent() -> None:
            for i in range(10):
                self.loop.call_soon(order.append, i)

        self.loop.call_soon(parent)
        self.run(settle())
        assert order == list(range(10))

    def test_call_soon_from_one_task_step_runs_in_fifo_order(self) -> None:
        order: list[int] = []

        async def main() -> None:
            for i in range(10):
                self.loop.call_soon(order.append, i)
            await settle()

        self.run(main())
        assert order == list(range(10))

    def test_a_callback_scheduled_during_a_batch_runs_after_that_batch(self) -> None:
        order: list[str] = []

        def a() -> None:
            order.append("a")
            self.loop.call_soon(order.append, "c")

        self.loop.call_soon(a)
        self.loop.call_soon(order.append, "b")
        self.run(settle())
        assert sorted(order[:2]) == ["a", "b"]
        assert order[2] == "c"

    def test_callbacks_run_with_the_loop_running_and_current(self) -> None:
        seen: list[tuple[bool, asyncio.AbstractEventLoop, asyncio.Task[Any] | None]] = []

        def cb() -> None:
            running = asyncio.get_running_loop()
            seen.append((self.loop.is_running(), running, asyncio.current_task()))

        self.loop.call_soon(cb)
        self.loop.call_soon(self.loop.stop)
        self.loop.run_forever()
        assert seen == [(True, self.loop, None)]
        with pytest.raises(RuntimeError, match="no running event loop"):
            asyncio.get_running_loop()

    def test_call_soon_returns_a_handle_and_call_later_a_timer_handle(self) -> None:
        h = self.loop.call_soon(lambda: None)
        th = self.loop.call_later(1, lambda: None)
        assert isinstance(h, asyncio.Handle) and not isinstance(h, asyncio.TimerHandle)
        assert isinstance(th, asyncio.TimerHandle) and isinstance(th, asyncio.Handle)
        for attr in ("cancel", "cancelled"):
            assert callable(getattr(h, attr)) and callable(getattr(th, attr))
        assert isinstance(th.when(), float)
        assert not hasattr(h, "when")
        h.cancel()
        th.cancel()

    def test_handle_cancel_prevents_the_callback(self) -> None:
        ran: list[str] = []
        h = self.loop.call_soon(ran.append, "soon")
        th = self.loop.call_later(TICK, ran.append, "later")
        assert not h.cancelled()
        assert not th.cancelled()
        h.cancel()
        th.cancel()
        h.cancel()  # cancelling twice is harmless
        assert h.cancelled()
        assert th.cancelled()
        self.run(asyncio.sleep(3 * TICK))
        assert ran == []

    def test_cancelling_a_handle_after_it_ran_is_harmless(self) -> None:
        ran: list[int] = []
        h = self.loop.call_soon(ran.append, 1)
        self.run(settle())
        h.cancel()
        assert ran == [1]

    @needs_312
    def test_handle_get_context_returns_the_context_it_runs_in(self) -> None:
        ctx = contextvars.copy_context()
        h = self.loop.call_soon(lambda: None, context=ctx)
        th = self.loop.call_later(1, lambda: None, context=ctx)
        assert h.get_context() is ctx
        assert th.get_context() is ctx
        h.cancel()
        th.cancel()

    def test_call_later_runs_after_the_delay(self) -> None:
        fired: list[float] = []
        start = self.loop.time()
        h = self.loop.call_later(2 * TICK, lambda: fired.append(self.loop.time()))
        self.run(asyncio.sleep(5 * TICK))
        assert len(fired) == 1
        assert fired[0] >= h.when() - self.clock_slack
        assert fired[0] >= start + 2 * TICK - self.clock_slack

    def test_call_later_when_is_time_at_scheduling_plus_delay(self) -> None:
        t0 = self.loop.time()
        h = self.loop.call_later(0.5, lambda: None)
        t1 = self.loop.time()
        assert t0 + 0.5 <= h.when() <= t1 + 0.5
        h.cancel()

    def test_call_later_with_a_negative_delay_still_runs(self) -> None:
        ran: list[int] = []
        self.loop.call_later(-1, ran.append, 1)
        self.run(asyncio.sleep(TICK))
        assert ran == [1]

    def test_call_at_fires_with_time_at_or_after_when(self) -> None:
        fired: list[float] = []
        when = self.loop.time() + 2 * TICK
        h = self.loop.call_at(when, lambda: fired.append(self.loop.time()))
        assert h.when() == when
        self.run(asyncio.sleep(5 * TICK))
        assert len(fired) == 1
        assert fired[0] >= when - self.clock_slack

    def test_timers_fire_in_deadline_order(self) -> None:
        order: list[int] = []
        base = self.loop.time()
        for i in (3, 1, 4, 2, 5):
            self.loop.call_at(base + i * TICK, order.append, i)
        self.run(asyncio.sleep(8 * TICK))
        assert order == [1, 2, 3, 4, 5]

    def test_timer_handles_compare_by_when(self) -> None:
        early = self.loop.call_later(1, lambda: None)
        late = self.loop.call_later(2, lambda: None)
        assert early.when() < late.when()
        assert early < late
        assert late > early
        assert sorted([late, early]) == [early, late]
        early.cancel()
        late.cancel()

    def test_time_never_goes_backwards(self) -> None:
        samples: list[float] = []

        async def main() -> None:
            for _ in range(5):
                samples.append(self.loop.time())
                await asyncio.sleep(TICK)
                samples.append(self.loop.time())
                await asyncio.sleep(0)

        samples.append(self.loop.time())
        self.run(main())
        samples.append(self.loop.time())
        assert samples == sorted(samples)

    def test_call_later_args_and_context_are_passed(self) -> None:
        ctx = contextvars.copy_context()
        ctx.run(var.set, "in-ctx")
        got: list[tuple[int, str]] = []
        self.loop.call_later(TICK, lambda a: got.append((a, var.get())), 7, context=ctx)
        self.run(asyncio.sleep(3 * TICK))
        assert got == [(7, "in-ctx")]

    # -- sleep ------------------------------------------------------------------------------

    def test_sleep_zero_yields_and_returns_none(self) -> None:
        order: list[str] = []

        async def main() -> None:
            self.loop.call_soon(order.append, "callback")
            assert await asyncio.sleep(0) is None
            order.append("after sleep")

        self.run(main())
        assert order == ["callback", "after sleep"]

    def test_sleep_returns_its_result_argument(self) -> None:
        assert self.run(asyncio.sleep(TICK, result="r")) == "r"
        assert self.run(asyncio.sleep(0, result="z")) == "z"

    def test_sleep_lasts_at_least_the_delay_on_the_loop_clock(self) -> None:
        async def main() -> tuple[float, float]:
            t0 = self.loop.time()
            await asyncio.sleep(3 * TICK)
            return t0, self.loop.time()

        t0, t1 = self.run(main())
        assert t1 - t0 >= 3 * TICK - self.clock_slack

    def test_sleep_with_a_negative_delay_returns(self) -> None:
        assert self.run(asyncio.sleep(-1, result=5)) == 5

    def test_shorter_sleep_finishes_first(self) -> None:
        order: list[int] = []

        async def sleeper(base: float, n: int) -> None:
            await sleep_until(base + n * TICK)
            order.append(n)

        async def main() -> None:
            base = self.loop.time()
            await asyncio.gather(sleeper(base, 5), sleeper(base, 1), sleeper(base, 3))

        self.run(main())
        assert order == [1, 3, 5]

    # -- wait_for ---------------------------------------------------------------------------

    def test_wait_for_returns_the_result_within_the_timeout(self) -> None:
        async def main() -> str:
            return await asyncio.wait_for(asyncio.sleep(TICK, result="ok"), timeout=10)

        assert self.run(main()) == "ok"

    def test_wait_for_with_no_timeout_waits(self) -> None:
        async def main() -> str:
            return await asyncio.wait_for(asyncio.sleep(TICK, result="ok"), timeout=None)

        assert self.run(main()) == "ok"

    def test_wait_for_raises_timeout_error_and_cancels_the_inner_task(self) -> None:
        async def main() -> asyncio.Task[None]:
            inner = self.loop.create_task(asyncio.sleep(10))
            with pytest.raises(TimeoutError) as info:
                await asyncio.wait_for(inner, timeout=TICK)
            assert isinstance(info.value.__cause__, asyncio.CancelledError)
            return inner

        inner = self.run(main())
        assert inner.cancelled()

    def test_wait_for_timeout_is_asyncio_timeout_error(self) -> None:
        assert asyncio.TimeoutError is TimeoutError

        async def main() -> None:
            await asyncio.wait_for(asyncio.sleep(10), timeout=TICK)

        with pytest.raises(asyncio.TimeoutError):
            self.run(main())

    def test_wait_for_zero_timeout_returns_a_done_future_result(self) -> None:
        async def main() -> int:
            fut = self.loop.create_future()
            fut.set_result(3)
            return await asyncio.wait_for(fut, timeout=0)

        assert self.run(main()) == 3

    def test_wait_for_zero_timeout_on_a_pending_coroutine_times_out(self) -> None:
        started: list[bool] = []

        async def work() -> None:
            started.append(True)
            await asyncio.sleep(10)

        async def main() -> None:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(work(), timeout=0)

        self.run(main())
        assert started == []

    def test_wait_for_propagates_the_inner_exception(self) -> None:
        async def boom() -> None:
            await asyncio.sleep(TICK)
            raise ValueError("inner")

        async def main() -> None:
            await asyncio.wait_for(boom(), timeout=10)

        with pytest.raises(ValueError, match="inner"):
            self.run(main())

    def test_cancelling_wait_for_cancels_the_inner_task(self) -> None:
        async def main() -> asyncio.Task[None]:
            inner = self.loop.create_task(asyncio.sleep(10))
            outer = self.loop.create_task(asyncio.wait_for(inner, timeout=5))
            await settle()
            outer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await outer
            return inner

        inner = self.run(main())
        assert inner.cancelled()

    # -- asyncio.timeout / timeout_at --------------------------------------------------------

    def test_timeout_raises_timeout_error_at_the_deadline(self) -> None:
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

        cm = self.run(main())
        assert seen == ["cancelled inside"]
        assert cm.expired()

    def test_timeout_that_is_not_reached_does_nothing(self) -> None:
        async def main() -> tuple[str, asyncio.Timeout]:
            async with asyncio.timeout(10) as cm:
                r = await asyncio.sleep(TICK, result="done")
            return r, cm

        r, cm = self.run(main())
        assert r == "done"
        assert not cm.expired()

    def test_timeout_when_is_the_absolute_deadline(self) -> None:
        async def main() -> None:
            t0 = self.loop.time()
            async with asyncio.timeout(5) as cm:
                t1 = self.loop.time()
                when = cm.when()
                assert when is not None
                assert t0 + 5 <= when <= t1 + 5
            async with asyncio.timeout(None) as cm:
                assert cm.when() is None

        self.run(main())

    def test_timeout_at_uses_loop_time(self) -> None:
        async def main() -> None:
            deadline = self.loop.time() + TICK
            with pytest.raises(TimeoutError):
                async with asyncio.timeout_at(deadline) as cm:
                    assert cm.when() == deadline
                    await asyncio.sleep(10)
            assert self.loop.time() >= deadline - self.clock_slack

        self.run(main())

    def test_timeout_reschedule_to_none_disables_it(self) -> None:
        async def main() -> str:
            async with asyncio.timeout(TICK) as cm:
                cm.reschedule(None)
                assert cm.when() is None
                return await asyncio.sleep(5 * TICK, result="survived")

        assert self.run(main()) == "survived"

    def test_timeout_reschedule_arms_a_disabled_timeout(self) -> None:
        async def main() -> None:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(None) as cm:
                    cm.reschedule(self.loop.time() + TICK)
                    await asyncio.sleep(10)

        self.run(main())

    def test_timeout_reschedule_extends_the_deadline(self) -> None:
        async def main() -> str:
            async with asyncio.timeout(TICK) as cm:
                cm.reschedule(self.loop.time() + 10)
                return await asyncio.sleep(5 * TICK, result="extended")

        assert self.run(main()) == "extended"

    def test_timeout_in_the_past_expires_at_the_next_await(self) -> None:
        async def main() -> None:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(-1):
                    await asyncio.sleep(10)

        self.run(main())

    def test_inner_timeout_fires_without_the_outer_one(self) -> None:
        async def main() -> tuple[bool, bool]:
            async with asyncio.timeout(10) as outer:
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(TICK) as inner:
                        await asyncio.sleep(10)
            return inner.expired(), outer.expired()

        assert self.run(main()) == (True, False)

    def test_cancelling_a_task_inside_timeout_raises_cancelled_error_not_timeout(self) -> None:
        async def body() -> None:
            async with asyncio.timeout(10):
                await asyncio.sleep(5)

        async def main() -> asyncio.Task[None]:
            t = self.loop.create_task(body())
            await settle()
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            return t

        assert self.run(main()).cancelled()

    # -- gather / wait / as_completed -------------------------------------------------------

    def test_gather_returns_results_in_argument_order(self) -> None:
        async def job(n: int) -> int:
            await asyncio.sleep((5 - n) * TICK)
            return n

        async def main() -> list[int]:
            return await asyncio.gather(*(job(n) for n in range(5)))

        assert self.run(main()) == [0, 1, 2, 3, 4]

    def test_gather_with_no_awaitables_returns_an_empty_list(self) -> None:
        async def main() -> list[Any]:
            return await asyncio.gather()

        assert self.run(main()) == []

    def test_gather_propagates_the_first_exception_and_leaves_the_rest_running(self) -> None:
        async def boom() -> None:
            raise ValueError("boom")

        async def main() -> asyncio.Task[str]:
            gate: asyncio.Future[str] = self.loop.create_future()

            async def slow_work() -> str:
                return await gate

            slow = self.loop.create_task(slow_work())
            with pytest.raises(ValueError, match="boom"):
                await asyncio.gather(boom(), slow)
            await settle()
            assert not slow.done()
            gate.set_result("slow")
            await slow
            return slow

        assert self.run(main()).result() == "slow"

    def test_gather_return_exceptions_puts_exceptions_in_place(self) -> None:
        err = ValueError("x")

        async def boom() -> None:
            await asyncio.sleep(TICK)
            raise err

        async def main() -> list[Any]:
            return await asyncio.gather(
                asyncio.sleep(0, result=1), boom(), asyncio.sleep(0, result=3),
                return_exceptions=True,
            )  # fmt: skip

        assert self.run(main()) == [1, err, 3]

    def test_gather_return_exceptions_reports_a_cancelled_child(self) -> None:
        async def main() -> list[Any]:
            child = self.loop.create_task(asyncio.sleep(10))
            self.loop.call_soon(child.cancel)
            return await asyncio.gather(
                child, asyncio.sleep(TICK, result=2), return_exceptions=True
            )

        res = self.run(main())
        assert isinstance(res[0], asyncio.CancelledError)
        assert res[1] == 2

    def test_cancelling_gather_cancels_its_children(self) -> None:
        async def main() -> list[asyncio.Task[None]]:
            children = [self.loop.create_task(asyncio.sleep(10)) for _ in range(3)]
            g = asyncio.gather(*children)
            await settle()
            g.cancel()
            with pytest.raises(asyncio.CancelledError):
                await g
            return children

        assert all(c.cancelled() for c in self.run(main()))

    def test_a_cancelled_child_cancels_gather(self) -> None:
        async def main() -> None:
            child = self.loop.create_task(asyncio.sleep(10))
            other = self.loop.create_task(asyncio.sleep(TICK))
            self.loop.call_soon(child.cancel)
            with pytest.raises(asyncio.CancelledError):
                await asyncio.gather(child, other)
            await other

        self.run(main())

    def test_wait_first_completed_returns_done_and_pending_sets(self) -> None:
        async def main() -> None:
            fast = self.loop.create_task(asyncio.sleep(TICK, result="fast"))
            slow = self.loop.create_task(asyncio.sleep(10))
            done, pending = await asyncio.wait({fast, slow}, return_when=asyncio.FIRST_COMPLETED)
            assert done == {fast}
            assert pending == {slow}
            slow.cancel()

        self.run(main())

    def test_wait_with_a_timeout_leaves_pending_tasks_running(self) -> None:
        async def main() -> None:
            slow = self.loop.create_task(asyncio.sleep(10))
            done, pending = await asyncio.wait({slow}, timeout=TICK)
            assert done == set()
            assert pending == {slow}
            assert not slow.done()
            slow.cancel()

        self.run(main())

    def test_as_completed_yields_in_completion_order(self) -> None:
        async def main() -> list[int]:
            base = self.loop.time()
            aws = [sleep_until(base + n * TICK, result=n) for n in (5, 1, 3)]
            return [await f for f in asyncio.as_completed(aws)]

        assert self.run(main()) == [1, 3, 5]

    # -- TaskGroup --------------------------------------------------------------------------

    def test_task_group_waits_for_all_children(self) -> None:
        async def main() -> list[int]:
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(asyncio.sleep(n * TICK, result=n)) for n in (3, 1, 2)]
            assert all(t.done() for t in tasks)
            return [t.result() for t in tasks]

        assert self.run(main()) == [3, 1, 2]

    def test_task_group_child_error_raises_exception_group_and_cancels_siblings(self) -> None:
        sibling: list[str] = []

        async def boom() -> None:
            await asyncio.sleep(TICK)
            raise ValueError("child")

        async def long() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                sibling.append("cancelled")
                raise

        async def main() -> None:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(boom())
                tg.create_task(long())

        with pytest.raises(ExceptionGroup) as info:
            self.run(main())
        assert [type(e) for e in info.value.exceptions] == [ValueError]
        assert str(info.value.exceptions[0]) == "child"
        assert sibling == ["cancelled"]

    def test_task_group_collects_every_child_error(self) -> None:
        async def fail(exc: Exception) -> None:
            await asyncio.sleep(TICK)
            raise exc

        async def main() -> None:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(fail(ValueError("a")))
                tg.create_task(fail(KeyError("b")))

        with pytest.raises(ExceptionGroup) as info:
            self.run(main())
        assert {type(e) for e in info.value.exceptions} == {ValueError, KeyError}

    def test_task_group_body_error_cancels_children_and_is_grouped(self) -> None:
        children: list[asyncio.Task[None]] = []

        async def main() -> None:
            async with asyncio.TaskGroup() as tg:
                children.append(tg.create_task(asyncio.sleep(10)))
                await asyncio.sleep(0)
                raise RuntimeError("body")

        with pytest.raises(ExceptionGroup) as info:
            self.run(main())
        assert [str(e) for e in info.value.exceptions] == ["body"]
        assert children[0].cancelled()

    def test_cancelling_the_parent_cancels_task_group_children(self) -> None:
        children: list[asyncio.Task[None]] = []

        async def body() -> None:
            async with asyncio.TaskGroup() as tg:
                children.append(tg.create_task(asyncio.sleep(10)))
                children.append(tg.create_task(asyncio.sleep(10)))

        async def main() -> asyncio.Task[None]:
            parent = self.loop.create_task(body())
            await settle()
            parent.cancel()
            with pytest.raises(asyncio.CancelledError):
                await parent
            return parent

        assert self.run(main()).cancelled()
        assert len(children) == 2
        assert all(c.cancelled() for c in children)

    def test_task_group_refuses_new_tasks_once_finished(self) -> None:
        async def main() -> None:
            async with asyncio.TaskGroup() as tg:
                pass
            coro = asyncio.sleep(0)
            try:
                with pytest.raises(RuntimeError, match="is finished"):
                    tg.create_task(coro)
            finally:
                coro.close()

        self.run(main())

    # -- Queue ------------------------------------------------------------------------------

    def test_queue_delivers_one_producers_items_in_fifo_order(self) -> None:
        async def main() -> list[int]:
            q: asyncio.Queue[int | None] = asyncio.Queue()
            got: list[int] = []

            async def producer() -> None:
                for i in range(20):
                    await q.put(i)
                    if i % 3 == 0:
                        await asyncio.sleep(0)
                await q.put(None)

            async def consumer() -> None:
                while (item := await q.get()) is not None:
                    got.append(item)

            await asyncio.gather(producer(), consumer())
            return got

        assert self.run(main()) == list(range(20))

    def test_queue_maxsize_blocks_the_producer_until_there_is_room(self) -> None:
        async def main() -> None:
            q: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
            q.put_nowait(1)
            assert q.full()
            with pytest.raises(asyncio.QueueFull):
                q.put_nowait(2)
            putter = self.loop.create_task(q.put(2))
            await settle()
            assert not putter.done()
            assert q.get_nowait() == 1
            await putter
            assert q.qsize() == 1
            assert q.get_nowait() == 2

        self.run(main())

    def test_queue_get_blocks_until_an_item_arrives(self) -> None:
        async def main() -> None:
            q: asyncio.Queue[str] = asyncio.Queue()
            with pytest.raises(asyncio.QueueEmpty):
                q.get_nowait()
            getter = self.loop.create_task(q.get())
            await settle()
            assert not getter.done()
            q.put_nowait("x")
            assert await getter == "x"

        self.run(main())

    def test_queue_join_waits_for_every_task_done(self) -> None:
        async def main() -> None:
            q: asyncio.Queue[int] = asyncio.Queue()
            for i in range(3):
                q.put_nowait(i)
            joiner = self.loop.create_task(q.join())
            for _ in range(3):
                q.get_nowait()
                await settle()
                assert not joiner.done()
                q.task_done()
            await joiner
            with pytest.raises(ValueError, match="task_done"):
                q.task_done()

        self.run(main())

    def test_lifo_and_priority_queues_order_their_items(self) -> None:
        async def main() -> tuple[list[int], list[int]]:
            lifo: asyncio.LifoQueue[int] = asyncio.LifoQueue()
            prio: asyncio.PriorityQueue[int] = asyncio.PriorityQueue()
            for i in (2, 3, 1):
                await lifo.put(i)
                await prio.put(i)
            return [await lifo.get() for _ in range(3)], [await prio.get() for _ in range(3)]

        assert self.run(main()) == ([1, 3, 2], [1, 2, 3])

    @needs_313
    def test_queue_shutdown_wakes_blocked_getters(self) -> None:
        async def main() -> None:
            q: asyncio.Queue[int] = asyncio.Queue()
            getter = self.loop.create_task(q.get())
            await settle()
            q.shutdown()
            with pytest.raises(asyncio.QueueShutDown):
                await getter

        self.run(main())

    # -- Lock / Event / Semaphore / Condition ----------------------------------------------

    def test_lock_gives_mutual_exclusion(self) -> None:
        async def main() -> int:
            lock = asyncio.Lock()
            inside = 0
            most = 0

            async def worker() -> None:
                nonlocal inside, most
                for _ in range(3):
                    async with lock:
                        inside += 1
                        most = max(most, inside)
                        await asyncio.sleep(0)
                        inside -= 1

            await asyncio.gather(*(worker() for _ in range(5)))
            return most

        assert self.run(main()) == 1

    def test_lock_waiters_acquire_in_the_order_they_started_waiting(self) -> None:
        async def main() -> list[int]:
            lock = asyncio.Lock()
            order: list[int] = []

            async def waiter(i: int) -> None:
                async with lock:
                    order.append(i)

            await lock.acquire()
            tasks = []
            for i in range(5):
                tasks.append(self.loop.create_task(waiter(i)))
                await settle()
            lock.release()
            await asyncio.gather(*tasks)
            return order

        assert self.run(main()) == [0, 1, 2, 3, 4]

    def test_releasing_an_unlocked_lock_raises(self) -> None:
        async def main() -> None:
            lock = asyncio.Lock()
            assert not lock.locked()
            with pytest.raises(RuntimeError, match="Lock is not acquired"):
                lock.release()
            await lock.acquire()
            assert lock.locked()
            lock.release()

        self.run(main())

    def test_event_set_wakes_every_waiter(self) -> None:
        async def main() -> list[bool]:
            ev = asyncio.Event()
            waiters = [self.loop.create_task(ev.wait()) for _ in range(4)]
            await settle()
            assert not any(w.done() for w in waiters)
            assert not ev.is_set()
            ev.set()
            return await asyncio.gather(*waiters)

        assert self.run(main()) == [True] * 4

    def test_event_wait_returns_at_once_when_set_and_blocks_after_clear(self) -> None:
        async def main() -> None:
            ev = asyncio.Event()
            ev.set()
            assert await ev.wait() is True
            ev.clear()
            waiter = self.loop.create_task(ev.wait())
            await settle()
            assert not waiter.done()
            ev.set()
            assert await waiter is True

        self.run(main())

    def test_semaphore_bounds_concurrency(self) -> None:
        async def main() -> int:
            sem = asyncio.Semaphore(2)
            inside = 0
            most = 0

            async def worker() -> None:
                nonlocal inside, most
                async with sem:
                    inside += 1
                    most = max(most, inside)
                    await asyncio.sleep(TICK)
                    inside -= 1

            await asyncio.gather(*(worker() for _ in range(6)))
            return most

        assert self.run(main()) == 2

    def test_semaphore_locked_and_value_checks(self) -> None:
        async def main() -> None:
            with pytest.raises(ValueError):
                asyncio.Semaphore(-1)
            sem = asyncio.Semaphore(1)
            assert not sem.locked()
            await sem.acquire()
            assert sem.locked()
            sem.release()
            sem.release()  # an unbounded semaphore may be released past its initial value
            assert not sem.locked()

        self.run(main())

    def test_bounded_semaphore_refuses_too_many_releases(self) -> None:
        async def main() -> None:
            sem = asyncio.BoundedSemaphore(1)
            await sem.acquire()
            sem.release()
            with pytest.raises(ValueError, match="BoundedSemaphore released too many times"):
                sem.release()

        self.run(main())

    def test_condition_notify_wakes_one_waiter_at_a_time(self) -> None:
        async def main() -> None:
            cond = asyncio.Condition()
            woken: list[int] = []

            async def waiter(i: int) -> None:
                async with cond:
                    await cond.wait()
                    woken.append(i)

            tasks = [self.loop.create_task(waiter(i)) for i in range(3)]
            await settle()
            async with cond:
                cond.notify(1)
            await settle()
            assert len(woken) == 1
            async with cond:
                cond.notify_all()
            await asyncio.gather(*tasks)
            assert sorted(woken) == [0, 1, 2]

        self.run(main())

    def test_condition_wait_for_returns_once_the_predicate_holds(self) -> None:
        async def main() -> int:
            cond = asyncio.Condition()
            state = {"n": 0}

            async def consumer() -> int:
                async with cond:
                    await cond.wait_for(lambda: state["n"] >= 3)
                    return state["n"]

            c = self.loop.create_task(consumer())
            for _ in range(3):
                await settle()
                assert not c.done()
                async with cond:
                    state["n"] += 1
                    cond.notify_all()
            return await c

        assert self.run(main()) == 3

    def test_condition_requires_its_lock(self) -> None:
        async def main() -> None:
            cond = asyncio.Condition()
            with pytest.raises(RuntimeError, match="cannot notify on un-acquired lock"):
                cond.notify()
            with pytest.raises(RuntimeError, match="cannot wait on un-acquired lock"):
                await cond.wait()

        self.run(main())

    # -- shield / cancellation --------------------------------------------------------------

    def test_shield_protects_the_inner_task_from_the_outer_cancel(self) -> None:
        async def main() -> None:
            gate: asyncio.Future[str] = self.loop.create_future()

            async def work() -> str:
                return await gate

            inner = self.loop.create_task(work())

            async def outer() -> str:
                return await asyncio.shield(inner)

            o = self.loop.create_task(outer())
            await settle()
            o.cancel()
            with pytest.raises(asyncio.CancelledError):
                await o
            assert not inner.done()
            gate.set_result("inner")
            assert await inner == "inner"

        self.run(main())

    def test_shield_of_a_done_future_returns_its_result(self) -> None:
        async def main() -> int:
            fut = self.loop.create_future()
            fut.set_result(4)
            return await asyncio.shield(fut)

        assert self.run(main()) == 4

    def test_cancel_raises_cancelled_error_with_the_message_at_the_await(self) -> None:
        inside: list[tuple[Any, ...]] = []

        async def body() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError as e:
                inside.append(e.args)
                raise

        async def main() -> asyncio.Task[None]:
            t = self.loop.create_task(body())
            await settle()
            assert t.cancel("stop now") is True
            with pytest.raises(asyncio.CancelledError) as info:
                await t
            assert info.value.args == ("stop now",)
            return t

        t = self.run(main())
        assert t.cancelled()
        assert inside == [("stop now",)]
        with pytest.raises(asyncio.CancelledError):
            t.result()

    def test_cancelling_a_task_before_it_starts_skips_its_body(self) -> None:
        ran: list[bool] = []

        async def body() -> None:
            ran.append(True)

        async def main() -> asyncio.Task[None]:
            t = self.loop.create_task(body())
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            return t

        assert self.run(main()).cancelled()
        assert ran == []

    def test_cancel_on_a_done_task_returns_false(self) -> None:
        async def main() -> asyncio.Task[int]:
            t = self.loop.create_task(asyncio.sleep(0, result=1))
            await t
            return t

        t = self.run(main())
        assert t.cancel() is False
        assert not t.cancelled()
        assert t.result() == 1

    def test_cancelling_counts_requests_and_uncancel_lets_a_task_survive(self) -> None:
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
            t = self.loop.create_task(body())
            await settle()
            assert t.cancelling() == 0
            assert t.cancel() is True
            assert t.cancel() is True
            assert t.cancelling() == 2
            await t
            return t

        t = self.run(main())
        assert counts == [2, 1, 0, 0]
        assert not t.cancelled()
        assert t.result() == "survived"

    def test_cancelled_error_propagates_through_awaiting_tasks(self) -> None:
        async def leaf() -> None:
            await asyncio.sleep(10)

        async def middle() -> None:
            await leaf()

        async def main() -> asyncio.Task[None]:
            t = self.loop.create_task(middle())
            await settle()
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            return t

        assert self.run(main()).cancelled()

    def test_cancelling_the_awaiter_cancels_the_awaited_task(self) -> None:
        async def main() -> tuple[asyncio.Task[None], asyncio.Task[None]]:
            inner = self.loop.create_task(asyncio.sleep(10))

            async def outer() -> None:
                await inner

            o = self.loop.create_task(outer())
            await settle()
            o.cancel()
            with pytest.raises(asyncio.CancelledError):
                await o
            return o, inner

        o, inner = self.run(main())
        assert o.cancelled()
        assert inner.cancelled()

    def test_a_task_that_swallows_cancel_completes_normally(self) -> None:
        async def body() -> str:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                return "swallowed"
            return "not reached"

        async def main() -> asyncio.Task[str]:
            t = self.loop.create_task(body())
            await settle()
            t.cancel()
            await t
            return t

        t = self.run(main())
        assert not t.cancelled()
        assert t.result() == "swallowed"

    # -- tasks: names, factories, eager start, current/all ----------------------------------

    def test_default_task_names_are_numbered(self) -> None:
        async def main() -> list[str]:
            tasks = [self.loop.create_task(asyncio.sleep(0)) for _ in range(3)]
            await asyncio.gather(*tasks)
            return [t.get_name() for t in tasks]

        names = self.run(main())
        numbers = []
        for name in names:
            m = re.fullmatch(r"Task-(\d+)", name)
            assert m is not None, name
            numbers.append(int(m.group(1)))
        assert numbers == sorted(numbers)
        assert len(set(numbers)) == 3

    def test_task_name_can_be_given_and_changed(self) -> None:
        async def main() -> None:
            t = self.loop.create_task(asyncio.sleep(0), name="worker")
            assert t.get_name() == "worker"
            t.set_name("renamed")
            assert t.get_name() == "renamed"
            t2 = asyncio.create_task(asyncio.sleep(0), name="via-asyncio")
            assert t2.get_name() == "via-asyncio"
            await asyncio.gather(t, t2)

        self.run(main())

    def test_create_task_returns_an_asyncio_task_with_its_coroutine(self) -> None:
        async def work() -> int:
            return 9

        async def main() -> None:
            coro = work()
            t = self.loop.create_task(coro)
            assert isinstance(t, asyncio.Task)
            assert t.get_loop() is self.loop
            assert t.get_coro() is coro
            assert await t == 9

        self.run(main())

    def test_create_task_refuses_a_non_coroutine(self) -> None:
        with pytest.raises(TypeError, match="coroutine was expected"):
            self.loop.create_task(1)  # type: ignore[arg-type]

    def test_current_task_is_the_running_task(self) -> None:
        async def main() -> None:
            me = asyncio.current_task()
            assert me is not None
            assert asyncio.current_task(self.loop) is me

            async def child() -> asyncio.Task[Any] | None:
                return asyncio.current_task()

            t = self.loop.create_task(child())
            assert await t is t
            assert asyncio.current_task() is me

        self.run(main())
        assert asyncio.current_task(self.loop) is None

    def test_all_tasks_lists_exactly_the_pending_tasks(self) -> None:
        async def main() -> None:
            me = asyncio.current_task()
            sleeper = self.loop.create_task(asyncio.sleep(10))
            finished = self.loop.create_task(asyncio.sleep(0))
            await finished
            assert asyncio.all_tasks() == {me, sleeper}
            assert asyncio.all_tasks(self.loop) == {me, sleeper}
            sleeper.cancel()
            await asyncio.gather(sleeper, return_exceptions=True)
            assert asyncio.all_tasks() == {me}

        self.run(main())
        pending = self.loop.create_task(asyncio.sleep(0))
        assert asyncio.all_tasks(self.loop) == {pending}
        self.run(pending)
        assert asyncio.all_tasks(self.loop) == set()

    def test_task_factory_is_none_by_default_and_resettable(self) -> None:
        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
            return asyncio.Task(coro, loop=loop, **kw)

        assert self.loop.get_task_factory() is None
        self.loop.set_task_factory(factory)
        assert self.loop.get_task_factory() is factory
        self.loop.set_task_factory(None)
        assert self.loop.get_task_factory() is None
        with pytest.raises(TypeError):
            self.loop.set_task_factory(1)  # type: ignore[arg-type]

    def test_a_custom_task_factory_makes_every_task(self) -> None:
        calls: list[tuple[asyncio.AbstractEventLoop, dict[str, Any]]] = []

        class MyTask(asyncio.Task):  # type: ignore[type-arg]
            pass

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
            calls.append((loop, kw))
            return MyTask(coro, loop=loop, **kw)

        self.loop.set_task_factory(factory)
        ctx = contextvars.copy_context()
        ctx.run(var.set, "factory-ctx")

        async def read_var() -> str:
            return var.get()

        async def main() -> None:
            t = self.loop.create_task(asyncio.sleep(0, result=1), name="named")
            assert isinstance(t, MyTask)
            assert t.get_name() == "named"
            assert await t == 1
            t2 = asyncio.create_task(asyncio.sleep(0, result=2))
            assert isinstance(t2, MyTask)
            assert await t2 == 2
            t3 = self.loop.create_task(read_var(), context=ctx)
            assert await t3 == "factory-ctx"

        main_task = self.loop.create_task(main())
        assert isinstance(main_task, MyTask)
        self.run(main_task)
        assert len(calls) == 4
        assert all(loop is self.loop for loop, _ in calls)
        assert calls[-1][1].get("context") is ctx

    @needs_312
    def test_eager_task_factory_runs_a_task_to_its_first_await_at_once(self) -> None:
        steps: list[str] = []

        async def instant() -> str:
            steps.append("instant ran")
            return "instant"

        async def suspends() -> str:
            steps.append("suspends started")
            await asyncio.sleep(TICK)
            steps.append("suspends resumed")
            return "suspends"

        async def main() -> None:
            self.loop.set_task_factory(asyncio.eager_task_factory)
            assert self.loop.get_task_factory() is asyncio.eager_task_factory
            t1 = self.loop.create_task(instant())
            assert steps == ["instant ran"]
            assert t1.done()
            assert t1.result() == "instant"
            t2 = self.loop.create_task(suspends())
            assert steps == ["instant ran", "suspends started"]
            assert not t2.done()
            assert t2 in asyncio.all_tasks()
            assert await t2 == "suspends"
            assert steps[-1] == "suspends resumed"

        self.run(main())

    @needs_312
    def test_an_eager_task_is_current_while_it_runs_eagerly(self) -> None:
        async def main() -> None:
            self.loop.set_task_factory(asyncio.eager_task_factory)
            seen: list[asyncio.Task[Any] | None] = []
            me = asyncio.current_task()

            async def who() -> None:
                seen.append(asyncio.current_task())

            t = self.loop.create_task(who(), name="eager-one")
            assert seen == [t]
            assert t.get_name() == "eager-one"
            assert asyncio.current_task() is me

        self.run(main())

    @needs_312
    def test_eager_factory_does_not_start_tasks_while_the_loop_is_stopped(self) -> None:
        started: list[bool] = []

        async def body() -> None:
            started.append(True)

        self.loop.set_task_factory(asyncio.eager_task_factory)
        t = self.loop.create_task(body())
        assert started == []
        assert not t.done()
        self.run(t)
        assert started == [True]

    @needs_312
    def test_create_eager_task_factory_uses_the_given_task_class(self) -> None:
        class MyTask(asyncio.Task):  # type: ignore[type-arg]
            pass

        async def main() -> None:
            self.loop.set_task_factory(asyncio.create_eager_task_factory(MyTask))
            t = self.loop.create_task(asyncio.sleep(0, result=5))
            assert isinstance(t, MyTask)
            assert await t == 5

        self.run(main())

    @needs_312
    def test_task_constructor_eager_start_runs_eagerly_on_a_running_loop(self) -> None:
        async def main() -> None:
            steps: list[str] = []

            async def body() -> int:
                steps.append("ran")
                return 1

            t = asyncio.Task(body(), loop=self.loop, eager_start=True)
            assert steps == ["ran"]
            assert t.done()
            assert t.result() == 1

        self.run(main())

    @pytest.mark.skipif(
        not STOCK_CREATE_TASK_TAKES_EAGER_START,
        reason="this Python's loop.create_task has no eager_start",
    )
    def test_create_task_eager_start_runs_eagerly(self) -> None:
        async def main() -> None:
            steps: list[str] = []

            async def body() -> int:
                steps.append("ran")
                return 1

            t = self.loop.create_task(body(), eager_start=True)  # type: ignore[call-arg]
            assert steps == ["ran"]
            assert t.done()

        self.run(main())

    # -- run_until_complete / run_forever / stop / close ------------------------------------

    def test_run_until_complete_returns_the_result(self) -> None:
        async def main() -> int:
            await asyncio.sleep(TICK)
            return 42

        assert self.run(main()) == 42
        assert not self.loop.is_running()

    def test_run_until_complete_raises_the_exception(self) -> None:
        async def main() -> None:
            await asyncio.sleep(0)
            raise KeyError("k")

        with pytest.raises(KeyError):
            self.run(main())
        assert not self.loop.is_running()

    def test_run_until_complete_accepts_a_future(self) -> None:
        fut = self.loop.create_future()
        self.loop.call_later(TICK, fut.set_result, "fut")
        assert self.loop.run_until_complete(fut) == "fut"
        assert self.loop.run_until_complete(fut) == "fut"  # already done: returns at once

    def test_run_until_complete_refuses_a_future_of_another_loop(self) -> None:
        other = self.new_loop()
        try:
            fut = other.create_future()
            with pytest.raises(ValueError, match="different loop"):
                self.loop.run_until_complete(fut)
        finally:
            other.close()

    def test_is_running_is_true_only_while_running(self) -> None:
        assert not self.loop.is_running()

        async def main() -> bool:
            return self.loop.is_running()

        assert self.run(main()) is True
        assert not self.loop.is_running()

    def test_running_loop_is_cleared_after_a_run(self) -> None:
        async def main() -> asyncio.AbstractEventLoop:
            return asyncio.get_running_loop()

        assert self.run(main()) is self.loop
        with pytest.raises(RuntimeError, match="no running event loop"):
            asyncio.get_running_loop()

    def test_run_until_complete_inside_the_running_loop_is_refused(self) -> None:
        async def main() -> None:
            fut = self.loop.create_future()
            with pytest.raises(RuntimeError, match="This event loop is already running"):
                self.loop.run_until_complete(fut)
            with pytest.raises(RuntimeError, match="This event loop is already running"):
                self.loop.run_forever()

        self.run(main())

    def test_running_a_loop_inside_another_running_loop_is_refused(self) -> None:
        other = self.new_loop()
        try:

            async def main() -> None:
                fut = other.create_future()
                msg = "Cannot run the event loop while another loop is running"
                with pytest.raises(RuntimeError, match=msg):
                    other.run_until_complete(fut)
                with pytest.raises(RuntimeError, match=msg):
                    other.run_forever()
                assert not other.is_running()

            self.run(main())
        finally:
            other.close()

    def test_stop_before_the_future_completes_is_an_error(self) -> None:
        fut = self.loop.create_future()
        self.loop.call_soon(self.loop.stop)
        with pytest.raises(RuntimeError, match=r"Event loop stopped before Future completed\."):
            self.loop.run_until_complete(fut)
        assert not fut.done()
        self.loop.call_soon(fut.set_result, "later")
        assert self.loop.run_until_complete(fut) == "later"

    def test_stop_inside_run_forever_finishes_the_current_batch(self) -> None:
        ran: list[str] = []
        self.loop.call_soon(self.loop.stop)
        self.loop.call_soon(ran.append, "same batch")
        self.loop.run_forever()
        assert ran == ["same batch"]
        assert not self.loop.is_running()

    def test_stop_before_run_forever_runs_exactly_the_ready_callbacks(self) -> None:
        ran: list[str] = []

        def first() -> None:
            ran.append("first")
            self.loop.call_soon(ran.append, "second")

        self.loop.call_soon(first)
        self.loop.stop()
        self.loop.run_forever()
        assert ran == ["first"]
        self.loop.stop()
        self.loop.run_forever()
        assert ran == ["first", "second"]

    def test_a_stop_does_not_outlive_a_run_that_ended_in_an_error(self) -> None:
        def interrupt() -> None:
            raise KeyboardInterrupt

        self.loop.call_soon(self.loop.stop)
        self.loop.call_soon(interrupt)
        with pytest.raises(KeyboardInterrupt):
            self.loop.run_forever()
        ran: list[str] = []

        def later() -> None:
            ran.append("later")
            self.loop.stop()

        self.loop.call_soon(ran.append, "soon")
        self.loop.call_later(TICK, later)
        self.loop.run_forever()
        assert ran == ["soon", "later"]

    def test_run_forever_can_be_run_again_after_stop(self) -> None:
        ran: list[int] = []
        for i in range(3):
            self.loop.call_soon(ran.append, i)
            self.loop.call_soon(self.loop.stop)
            self.loop.run_forever()
        assert ran == [0, 1, 2]

    def test_system_exit_in_a_callback_propagates_out_of_the_loop(self) -> None:
        def bail() -> None:
            raise SystemExit(3)

        self.loop.call_soon(bail)
        with pytest.raises(SystemExit):
            self.loop.run_forever()
        assert not self.loop.is_running()
        with pytest.raises(RuntimeError, match="no running event loop"):
            asyncio.get_running_loop()

    def test_close_makes_the_loop_closed_and_is_idempotent(self) -> None:
        assert not self.loop.is_closed()
        self.loop.close()
        assert self.loop.is_closed()
        self.loop.close()
        assert self.loop.is_closed()

    def test_a_closed_loop_refuses_work(self) -> None:
        self.loop.close()
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            self.loop.call_soon(lambda: None)
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            self.loop.call_later(1, lambda: None)
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            self.loop.call_at(1, lambda: None)
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            self.loop.run_forever()
        coro = asyncio.sleep(0)
        try:
            with pytest.raises(RuntimeError, match="Event loop is closed"):
                self.loop.run_until_complete(coro)
            with pytest.raises(RuntimeError, match="Event loop is closed"):
                self.loop.create_task(coro)
        finally:
            coro.close()

    def test_closing_a_running_loop_is_refused(self) -> None:
        async def main() -> None:
            with pytest.raises(RuntimeError, match="Cannot close a running event loop"):
                self.loop.close()

        self.run(main())
        assert not self.loop.is_closed()

    def test_slow_callback_duration_is_a_settable_attribute(self) -> None:
        assert self.loop.slow_callback_duration == 0.1  # type: ignore[attr-defined]
        self.loop.slow_callback_duration = 0.5  # type: ignore[attr-defined]
        assert self.loop.slow_callback_duration == 0.5  # type: ignore[attr-defined]

    # -- exception handling -----------------------------------------------------------------

    def test_exception_handler_is_none_by_default_and_settable(self) -> None:
        def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            pass

        assert self.loop.get_exception_handler() is None
        self.loop.set_exception_handler(handler)
        assert self.loop.get_exception_handler() is handler
        self.loop.set_exception_handler(None)
        assert self.loop.get_exception_handler() is None
        with pytest.raises(TypeError, match="callable"):
            self.loop.set_exception_handler("nope")  # type: ignore[arg-type]

    def test_call_exception_handler_calls_the_handler_with_loop_and_context(self) -> None:
        got: list[tuple[asyncio.AbstractEventLoop, dict[str, Any]]] = []
        self.loop.set_exception_handler(lambda loop, ctx: got.append((loop, ctx)))
        context = {"message": "hello"}
        self.loop.call_exception_handler(context)
        assert got == [(self.loop, context)]

    def test_an_exception_in_a_callback_goes_to_the_handler_and_the_loop_goes_on(self) -> None:
        got: list[dict[str, Any]] = []
        self.loop.set_exception_handler(lambda loop, ctx: got.append(ctx))
        err = ZeroDivisionError("cb")
        ran: list[str] = []

        def bad() -> None:
            raise err

        h = self.loop.call_soon(bad)
        self.loop.call_soon(ran.append, "next")
        self.run(settle())
        assert ran == ["next"]
        assert len(got) == 1
        assert got[0]["exception"] is err
        assert got[0]["message"].startswith("Exception in callback")
        assert got[0]["handle"] is h

    def test_an_exception_in_a_timer_callback_goes_to_the_handler(self) -> None:
        got: list[dict[str, Any]] = []
        self.loop.set_exception_handler(lambda loop, ctx: got.append(ctx))

        def bad() -> None:
            raise ValueError("timer")

        self.loop.call_later(TICK, bad)
        self.run(asyncio.sleep(3 * TICK))
        assert [type(c["exception"]) for c in got] == [ValueError]

    def test_default_exception_handler_logs_to_the_asyncio_logger(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            self.loop.call_exception_handler({"message": "first message"})
            self.loop.default_exception_handler(
                {"message": "second message", "exception": ValueError("v")}
            )
        records = [r for r in caplog.records if r.name == "asyncio"]
        assert [r.levelno for r in records] == [logging.ERROR, logging.ERROR]
        assert "first message" in records[0].getMessage()
        assert "second message" in records[1].getMessage()
        assert records[1].exc_info is not None
        assert records[1].exc_info[0] is ValueError

    def test_an_exception_in_a_callback_is_logged_without_a_handler(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        def bad() -> None:
            raise ValueError("unhandled in callback")

        with caplog.at_level(logging.ERROR, logger="asyncio"):
            self.loop.call_soon(bad)
            self.run(settle())
        records = [r for r in caplog.records if r.name == "asyncio"]
        assert len(records) == 1
        assert "Exception in callback" in records[0].getMessage()
        assert records[0].exc_info is not None
        assert records[0].exc_info[0] is ValueError

    def test_an_error_in_the_exception_handler_is_logged(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        def handler(loop: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
            raise RuntimeError("handler broke")

        self.loop.set_exception_handler(handler)
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            self.loop.call_exception_handler({"message": "m"})
        messages = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
        assert any("Unhandled error in exception handler" in m for m in messages)

    def test_a_never_retrieved_task_exception_reaches_the_handler(self) -> None:
        got: list[dict[str, Any]] = []
        self.loop.set_exception_handler(lambda loop, ctx: got.append(ctx))

        async def fail() -> None:
            raise ValueError("lost")

        async def main() -> None:
            self.loop.create_task(fail())
            await settle()

        self.run(main())
        gc.collect()
        assert len(got) == 1
        assert got[0]["message"] == "Task exception was never retrieved"
        assert isinstance(got[0]["exception"], ValueError)

    # -- debug ------------------------------------------------------------------------------

    def test_set_debug_is_reflected_by_get_debug(self) -> None:
        assert isinstance(self.loop.get_debug(), bool)
        self.loop.set_debug(True)
        assert self.loop.get_debug() is True
        self.loop.set_debug(False)
        assert self.loop.get_debug() is False

    def test_debug_mode_refuses_coroutines_and_non_callables_in_call_soon(self) -> None:
        self.loop.set_debug(True)

        async def coro_fn() -> None:
            pass

        with pytest.raises(TypeError, match="coroutines cannot be used with call_soon"):
            self.loop.call_soon(coro_fn)
        with pytest.raises(TypeError, match="a callable object was expected by call_soon"):
            self.loop.call_soon(1)  # type: ignore[arg-type]

    # -- async generators and executor shutdown ---------------------------------------------

    def test_the_loop_installs_asyncgen_hooks_only_while_running(self) -> None:
        before = sys.get_asyncgen_hooks()

        async def main() -> Any:
            return sys.get_asyncgen_hooks()

        inside = self.run(main())
        assert inside.firstiter is not None
        assert inside.finalizer is not None
        assert sys.get_asyncgen_hooks() == before

    def test_shutdown_asyncgens_finalizes_suspended_generators(self) -> None:
        closed: list[str] = []
        keep: list[AsyncIterator[int]] = []

        async def agen(name: str) -> AsyncIterator[int]:
            try:
                yield 1
                yield 2
            finally:
                closed.append(name)

        async def main() -> None:
            for name in ("a", "b"):
                g = agen(name)
                assert await g.__anext__() == 1
                keep.append(g)

        self.run(main())
        assert closed == []
        self.run(self.loop.shutdown_asyncgens())
        assert sorted(closed) == ["a", "b"]

    def test_a_collected_async_generator_is_closed_on_the_loop(self) -> None:
        async def main() -> bool:
            finalized = asyncio.Event()

            async def agen() -> AsyncIterator[int]:
                try:
                    yield 1
                    yield 2
                finally:
                    finalized.set()

            g = agen()
            assert await g.__anext__() == 1
            del g
            gc.collect()
            async with asyncio.timeout(10):
                await finalized.wait()
            return finalized.is_set()

        assert self.run(main()) is True

    def test_shutdown_default_executor_completes_when_no_executor_was_used(self) -> None:
        assert self.run(self.loop.shutdown_default_executor()) is None

    @needs_312
    def test_shutdown_default_executor_accepts_a_timeout(self) -> None:
        assert self.run(self.loop.shutdown_default_executor(timeout=1.0)) is None

    # -- call_soon_threadsafe ---------------------------------------------------------------

    def test_call_soon_threadsafe_from_the_loop_thread_is_call_soon(self) -> None:
        order: list[int] = []

        async def main() -> None:
            for i in range(3):
                self.loop.call_soon_threadsafe(order.append, i)
            h = self.loop.call_soon_threadsafe(order.append, 99)
            h.cancel()
            await settle()

        self.run(main())
        assert order == [0, 1, 2]

    def test_call_soon_threadsafe_before_running_runs_once_started(self) -> None:
        got: list[str] = []
        self.loop.call_soon_threadsafe(lambda: got.append(var.get()))
        self.loop.call_soon(self.loop.stop)
        self.loop.run_forever()
        assert got == ["unset"]

    # -- Runner / asyncio.run ---------------------------------------------------------------

    def test_runner_with_loop_factory_runs_coroutines_on_that_loop(self) -> None:
        made: list[asyncio.AbstractEventLoop] = []

        def factory() -> asyncio.AbstractEventLoop:
            made.append(self.new_loop())
            return made[-1]

        async def which() -> asyncio.AbstractEventLoop:
            await asyncio.sleep(TICK)
            return asyncio.get_running_loop()

        with asyncio.Runner(loop_factory=factory) as runner:
            assert runner.run(which()) is made[0]
            assert runner.run(which()) is made[0]
            assert runner.get_loop() is made[0]
        assert len(made) == 1
        assert made[0].is_closed()

    def test_runner_cancels_leftover_tasks_on_close(self) -> None:
        seen: list[str] = []

        async def lingering() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        async def main() -> None:
            asyncio.get_running_loop().create_task(lingering())
            await asyncio.sleep(0)

        with asyncio.Runner(loop_factory=self.new_loop) as runner:
            runner.run(main())
            assert seen == []
        assert seen == ["cancelled"]

    def test_runner_debug_sets_the_loop_debug_flag(self) -> None:
        async def main() -> bool:
            return asyncio.get_running_loop().get_debug()

        with asyncio.Runner(debug=True, loop_factory=self.new_loop) as runner:
            assert runner.run(main()) is True

    def test_runner_run_uses_the_given_context(self) -> None:
        ctx = contextvars.copy_context()
        ctx.run(var.set, "runner-ctx")

        async def main() -> str:
            return var.get()

        with asyncio.Runner(loop_factory=self.new_loop) as runner:
            assert runner.run(main(), context=ctx) == "runner-ctx"

    def test_runner_finalizes_async_generators_on_close(self) -> None:
        closed: list[bool] = []
        keep: list[AsyncIterator[int]] = []

        async def agen() -> AsyncIterator[int]:
            try:
                yield 1
                yield 2
            finally:
                closed.append(True)

        async def main() -> None:
            g = agen()
            await g.__anext__()
            keep.append(g)

        with asyncio.Runner(loop_factory=self.new_loop) as runner:
            runner.run(main())
        assert closed == [True]

    @needs_312
    def test_asyncio_run_accepts_the_loop_factory(self) -> None:
        made: list[asyncio.AbstractEventLoop] = []

        def factory() -> asyncio.AbstractEventLoop:
            made.append(self.new_loop())
            return made[-1]

        async def main() -> tuple[asyncio.AbstractEventLoop, str]:
            return asyncio.get_running_loop(), await asyncio.sleep(TICK, result="ran")

        loop, result = asyncio.run(main(), loop_factory=factory)  # type: ignore[call-arg]
        assert result == "ran"
        assert loop is made[0]
        assert loop.is_closed()

    @needs_312
    def test_asyncio_run_propagates_the_exception(self) -> None:
        async def main() -> None:
            await asyncio.sleep(0)
            raise LookupError("out")

        with pytest.raises(LookupError, match="out"):
            asyncio.run(main(), loop_factory=self.new_loop)  # type: ignore[call-arg]

    # -- contextvars ------------------------------------------------------------------------

    def test_a_task_runs_in_a_copy_of_the_creating_context(self) -> None:
        async def child() -> str:
            seen = var.get()
            var.set("child")
            return seen

        async def main() -> tuple[str, str]:
            var.set("parent")
            seen = await self.loop.create_task(child())
            return seen, var.get()

        assert self.run(main()) == ("parent", "parent")

    def test_create_task_with_context_runs_in_that_context(self) -> None:
        ctx = contextvars.copy_context()
        ctx.run(var.set, "given")

        async def child() -> str:
            var.set("changed by child")
            return "done"

        async def main() -> None:
            t = self.loop.create_task(child(), context=ctx)
            assert await t == "done"
            assert ctx[var] == "changed by child"
            assert var.get() == "unset"

        self.run(main())

    def test_call_soon_copies_the_context_at_the_time_of_the_call(self) -> None:
        seen: list[str] = []

        async def main() -> None:
            var.set("at call")
            self.loop.call_soon(lambda: seen.append(var.get()))
            var.set("after call")
            await settle()

        self.run(main())
        assert seen == ["at call"]

    def test_call_soon_with_context_runs_in_that_context(self) -> None:
        ctx = contextvars.copy_context()
        ctx.run(var.set, "explicit")
        seen: list[str] = []

        def cb() -> None:
            seen.append(var.get())
            var.set("changed in callback")

        self.loop.call_soon(cb, context=ctx)
        self.run(settle())
        assert seen == ["explicit"]
        assert ctx[var] == "changed in callback"
        assert var.get() == "unset"

    def test_done_callback_with_context_runs_in_that_context(self) -> None:
        ctx = contextvars.copy_context()
        ctx.run(var.set, "done-ctx")
        seen: list[str] = []

        async def main() -> None:
            fut = self.loop.create_future()
            fut.add_done_callback(lambda f: seen.append(var.get()), context=ctx)
            fut.set_result(None)
            await settle()

        self.run(main())
        assert seen == ["done-ctx"]

    # -- Future API -------------------------------------------------------------------------

    def test_create_future_makes_a_pending_asyncio_future_of_this_loop(self) -> None:
        fut = self.loop.create_future()
        assert isinstance(fut, asyncio.Future)
        assert fut.get_loop() is self.loop
        assert not fut.done()
        assert not fut.cancelled()
        with pytest.raises(asyncio.InvalidStateError):
            fut.result()
        with pytest.raises(asyncio.InvalidStateError):
            fut.exception()
        fut.cancel()

    def test_future_set_result_is_final(self) -> None:
        fut = self.loop.create_future()
        fut.set_result(1)
        assert fut.done()
        assert fut.result() == 1
        assert fut.exception() is None
        with pytest.raises(asyncio.InvalidStateError):
            fut.set_result(2)
        with pytest.raises(asyncio.InvalidStateError):
            fut.set_exception(ValueError())
        assert fut.cancel() is False

    def test_future_set_exception_is_raised_by_result(self) -> None:
        fut = self.loop.create_future()
        err = ValueError("e")
        fut.set_exception(err)
        assert fut.exception() is err
        with pytest.raises(ValueError, match="e"):
            fut.result()

    def test_a_cancelled_future_raises_cancelled_error(self) -> None:
        fut = self.loop.create_future()
        assert fut.cancel("why") is True
        assert fut.cancelled()
        assert fut.done()
        assert fut.cancel() is False
        with pytest.raises(asyncio.CancelledError):
            fut.result()

    def test_awaiting_a_future_returns_its_result(self) -> None:
        async def main() -> str:
            fut = self.loop.create_future()
            self.loop.call_later(TICK, fut.set_result, "awaited")
            return await fut

        assert self.run(main()) == "awaited"

    def test_done_callbacks_run_via_the_loop_in_registration_order(self) -> None:
        order: list[int] = []

        async def main() -> None:
            fut = self.loop.create_future()
            for i in range(6):
                fut.add_done_callback(lambda f, i=i: order.append(i))
            fut.set_result(None)
            assert order == []  # scheduled, not called synchronously
            await settle()

        self.run(main())
        assert order == list(range(6))

    def test_done_callbacks_set_from_a_plain_callback_keep_their_order(self) -> None:
        order: list[int] = []
        fut = self.loop.create_future()
        for i in range(6):
            fut.add_done_callback(lambda f, i=i: order.append(i))
        self.loop.call_soon(fut.set_result, None)
        self.run(settle())
        assert order == list(range(6))

    def test_done_callback_receives_the_future(self) -> None:
        got: list[asyncio.Future[Any]] = []

        async def main() -> asyncio.Future[Any]:
            fut = self.loop.create_future()
            fut.add_done_callback(got.append)
            fut.set_result(None)
            await settle()
            return fut

        assert got == [self.run(main())]

    def test_remove_done_callback_removes_every_registration(self) -> None:
        called: list[str] = []

        def cb(f: asyncio.Future[Any]) -> None:
            called.append("cb")

        async def main() -> None:
            fut = self.loop.create_future()
            fut.add_done_callback(cb)
            fut.add_done_callback(lambda f: called.append("other"))
            fut.add_done_callback(cb)
            assert fut.remove_done_callback(cb) == 2
            assert fut.remove_done_callback(cb) == 0
            fut.set_result(None)
            await settle()

        self.run(main())
        assert called == ["other"]

    def test_a_done_callback_added_after_completion_is_scheduled_soon(self) -> None:
        called: list[str] = []

        async def main() -> None:
            fut = self.loop.create_future()
            fut.set_result(None)
            fut.add_done_callback(lambda f: called.append("late"))
            assert called == []
            await settle()

        self.run(main())
        assert called == ["late"]

    def test_task_done_callbacks_run_in_registration_order(self) -> None:
        order: list[int] = []

        async def main() -> None:
            t = self.loop.create_task(asyncio.sleep(TICK))
            for i in range(5):
                t.add_done_callback(lambda f, i=i: order.append(i))
            await t
            await settle()

        self.run(main())
        assert order == list(range(5))


class TestStockLoop(_LoopBehaviour):
    clock_slack = time.get_clock_info("monotonic").resolution

    def new_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.new_event_loop()


def _new_sim_loop(strategy: str = "faithful") -> asyncio.AbstractEventLoop:
    import askew

    loop: asyncio.AbstractEventLoop = askew.new_event_loop(seed=12345, strategy=strategy)
    return loop


class _SimLoopBehaviour(_LoopBehaviour):
    """What every strategy of SimLoop adds to the conformance body."""

    clock_slack = 0.0  # virtual time: a timer never fires before its deadline

    def test_virtual_time_starts_at_zero(self) -> None:
        assert self.loop.time() == 0.0

    def test_a_patched_time_on_the_loop_instance_drives_its_timers(self) -> None:
        # As on asyncio's loop (aiolimiter's tests do this): call_later counts
        # from the replacement, and timers fall due when it reaches them.
        mock_now = [100.0]
        fired: list[float] = []

        async def main() -> None:
            with mock.patch.object(self.loop, "time", lambda: mock_now[0]):
                self.loop.call_later(2, lambda: fired.append(self.loop.time()))
                await asyncio.sleep(0)
                assert fired == []
                mock_now[0] = 103.0
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                assert fired == [103.0]
            assert self.loop.time() < 1.0  # the replacement is gone

        self.run(main())

    def test_pythonasynciodebug_turns_debug_on(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")
        loop = self.new_loop()
        try:
            assert loop.get_debug()
        finally:
            loop.close()


class TestSimLoop(_SimLoopBehaviour):
    """The default, faithful strategy: asyncio's order, with time passing as
    code runs and timers firing a little after their deadline."""

    def new_loop(self) -> asyncio.AbstractEventLoop:
        return _new_sim_loop()

    def test_sleep_advances_virtual_time_by_the_delay_and_at_most_a_wake_up_later(
        self,
    ) -> None:
        async def main() -> float:
            await asyncio.sleep(3600)
            return self.loop.time()

        overshoot_max, cpu_max = DEFAULT_OVERSHOOT[1], DEFAULT_CPU[1]
        assert 3600.0 < self.run(main()) <= 3600.0 + overshoot_max + 3 * cpu_max

    def test_a_timer_fires_after_its_deadline_never_before(self) -> None:
        fired: list[float] = []
        self.loop.call_at(12.5, lambda: fired.append(self.loop.time()))
        self.run(asyncio.sleep(20))
        assert len(fired) == 1 and 12.5 <= fired[0] <= 12.5 + DEFAULT_OVERSHOOT[1]


class TestFifoSimLoop(_SimLoopBehaviour):
    """strategy="fifo": asyncio's order with no CPU time and no overshoot."""

    def new_loop(self) -> asyncio.AbstractEventLoop:
        return _new_sim_loop(strategy="fifo")

    def test_sleep_advances_virtual_time_by_exactly_the_delay(self) -> None:
        async def main() -> float:
            await asyncio.sleep(3600)
            return self.loop.time()

        assert self.run(main()) == 3600.0

    def test_a_timer_fires_at_exactly_its_deadline(self) -> None:
        fired: list[float] = []
        self.loop.call_at(12.5, lambda: fired.append(self.loop.time()))
        self.run(asyncio.sleep(20))
        assert fired == [12.5]


# -- refusals: real I/O on the SimLoop ------------------------------------------------------


class TestSimLoopRefusals:
    """Calls that would touch the real world raise NondeterminismError naming the call."""

    loop: asyncio.AbstractEventLoop

    @pytest.fixture(autouse=True)
    def _fresh_loop(self) -> Iterator[None]:
        self.loop = _new_sim_loop()
        yield
        if not self.loop.is_closed():
            self.loop.close()

    def refused(self, name: str, make: Callable[[], Any]) -> None:
        """Run `make()` on the loop (awaiting it if it returns an awaitable); expect a refusal.

        A refusal may come at the call or from the awaitable it returns: both count.
        """
        import askew

        async def attempt() -> None:
            result = make()
            if inspect.isawaitable(result):
                await result

        with pytest.raises(askew.NondeterminismError, match=re.escape(name)):
            self.loop.run_until_complete(attempt())

    def test_nondeterminism_error_is_not_a_runtime_error_so_except_runtimeerror_misses_it(
        self,
    ) -> None:
        import askew

        assert not issubclass(askew.NondeterminismError, RuntimeError)
        assert issubclass(askew.NondeterminismError, askew.SimulationFailure)

    def test_run_in_executor_is_refused(self) -> None:
        self.refused("run_in_executor", lambda: self.loop.run_in_executor(None, sum, [1, 2]))

    def test_to_thread_is_refused(self) -> None:
        import askew

        async def attempt() -> None:
            await asyncio.to_thread(sum, [1, 2])

        with pytest.raises(askew.NondeterminismError, match=r"to_thread|run_in_executor"):
            self.loop.run_until_complete(attempt())

    def test_create_connection_is_refused(self) -> None:
        self.refused(
            "create_connection",
            lambda: self.loop.create_connection(asyncio.Protocol, "127.0.0.1", 9),
        )

    def test_open_connection_is_refused(self) -> None:
        self.refused("create_connection", lambda: asyncio.open_connection("127.0.0.1", 9))

    def test_create_server_is_refused(self) -> None:
        self.refused("create_server", lambda: self.loop.create_server(asyncio.Protocol, "", 0))

    @pytest.mark.parametrize(
        ("method", "args"),
        [
            ("sock_recv", (16,)),
            ("sock_sendall", (b"x",)),
            ("sock_connect", (("127.0.0.1", 9),)),
            ("sock_accept", ()),
        ],
    )
    def test_socket_operations_are_refused(self, method: str, args: tuple[Any, ...]) -> None:
        a, b = socket.socketpair()
        try:
            a.setblocking(False)
            self.refused(method, lambda: getattr(self.loop, method)(a, *args))
        finally:
            a.close()
            b.close()

    def test_add_reader_is_refused(self) -> None:
        a, b = socket.socketpair()
        try:
            self.refused("add_reader", lambda: self.loop.add_reader(a.fileno(), lambda: None))
        finally:
            a.close()
            b.close()

    def test_add_writer_is_refused(self) -> None:
        a, b = socket.socketpair()
        try:
            self.refused("add_writer", lambda: self.loop.add_writer(a.fileno(), lambda: None))
        finally:
            a.close()
            b.close()

    def test_subprocess_exec_is_refused(self) -> None:
        self.refused("subprocess_exec", lambda: asyncio.create_subprocess_exec("true"))

    def test_subprocess_shell_is_refused(self) -> None:
        self.refused("subprocess_shell", lambda: asyncio.create_subprocess_shell("true"))

    def test_call_soon_threadsafe_from_another_thread_is_refused(self) -> None:
        import askew

        caught: list[BaseException] = []
        go = threading.Event()
        finished = threading.Event()

        def other_thread() -> None:
            go.wait()
            try:
                self.loop.call_soon_threadsafe(lambda: None)
            except BaseException as e:
                caught.append(e)
            finally:
                finished.set()

        async def main() -> None:
            # The thread is started before the run (starting one inside is itself refused);
            # it makes its call while the loop is running, and this step blocks until it has.
            go.set()
            finished.wait()

        th = threading.Thread(target=other_thread)
        th.start()
        try:
            # The other thread caught the refusal; the run fails all the same.
            with pytest.raises(askew.NondeterminismError, match="call_soon_threadsafe"):
                self.loop.run_until_complete(main())
        finally:
            go.set()
            th.join()
        assert len(caught) == 1
        assert isinstance(caught[0], askew.NondeterminismError)
        assert "call_soon_threadsafe" in str(caught[0])

    def test_starting_a_thread_inside_the_loop_is_refused(self) -> None:
        import askew

        async def main() -> None:
            threading.Thread(target=lambda: None).start()

        with pytest.raises(askew.NondeterminismError, match=r"Thread\.start"):
            self.loop.run_until_complete(main())
