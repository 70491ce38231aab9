# SPDX-License-Identifier: Apache-2.0
"""The loop's life: run_until_complete and run_forever, stop, close, and the refusals asyncio
makes (a running loop inside another, a closed loop given work).
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import TICK


def test_run_until_complete_returns_the_result(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> int:
        await asyncio.sleep(TICK)
        return 42

    assert loop.run_until_complete(main()) == 42
    assert not loop.is_running()


def test_run_until_complete_raises_the_exception(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        await asyncio.sleep(0)
        raise KeyError("k")

    with pytest.raises(KeyError):
        loop.run_until_complete(main())
    assert not loop.is_running()


def test_run_until_complete_accepts_a_future(loop: asyncio.AbstractEventLoop) -> None:
    fut = loop.create_future()
    loop.call_later(TICK, fut.set_result, "fut")
    assert loop.run_until_complete(fut) == "fut"
    assert loop.run_until_complete(fut) == "fut"  # already done: returns at once


def test_run_until_complete_refuses_a_future_of_another_loop(
    loop: asyncio.AbstractEventLoop, other_loop: asyncio.AbstractEventLoop
) -> None:
    fut = other_loop.create_future()
    with pytest.raises(ValueError, match="different loop"):
        loop.run_until_complete(fut)


def test_is_running_is_true_only_while_running(loop: asyncio.AbstractEventLoop) -> None:
    assert not loop.is_running()

    async def main() -> bool:
        return loop.is_running()

    assert loop.run_until_complete(main()) is True
    assert not loop.is_running()


def test_running_loop_is_cleared_after_a_run(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert loop.run_until_complete(main()) is loop
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


def test_run_until_complete_inside_the_running_loop_is_refused(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        fut = loop.create_future()
        with pytest.raises(RuntimeError, match="This event loop is already running"):
            loop.run_until_complete(fut)
        with pytest.raises(RuntimeError, match="This event loop is already running"):
            loop.run_forever()

    loop.run_until_complete(main())


def test_running_a_loop_inside_another_running_loop_is_refused(
    loop: asyncio.AbstractEventLoop, other_loop: asyncio.AbstractEventLoop
) -> None:
    async def main() -> None:
        fut = other_loop.create_future()
        msg = "Cannot run the event loop while another loop is running"
        with pytest.raises(RuntimeError, match=msg):
            other_loop.run_until_complete(fut)
        with pytest.raises(RuntimeError, match=msg):
            other_loop.run_forever()
        assert not other_loop.is_running()

    loop.run_until_complete(main())


def test_stop_before_the_future_completes_is_an_error(loop: asyncio.AbstractEventLoop) -> None:
    fut = loop.create_future()
    loop.call_soon(loop.stop)
    with pytest.raises(RuntimeError, match=r"Event loop stopped before Future completed\."):
        loop.run_until_complete(fut)
    assert not fut.done()
    loop.call_soon(fut.set_result, "later")
    assert loop.run_until_complete(fut) == "later"


def test_stop_inside_run_forever_finishes_the_current_batch(
    loop: asyncio.AbstractEventLoop,
) -> None:
    ran: list[str] = []
    loop.call_soon(loop.stop)
    loop.call_soon(ran.append, "same batch")
    loop.run_forever()
    assert ran == ["same batch"]
    assert not loop.is_running()


def test_stop_before_run_forever_runs_exactly_the_ready_callbacks(
    loop: asyncio.AbstractEventLoop,
) -> None:
    ran: list[str] = []

    def first() -> None:
        ran.append("first")
        loop.call_soon(ran.append, "second")

    loop.call_soon(first)
    loop.stop()
    loop.run_forever()
    assert ran == ["first"]
    loop.stop()
    loop.run_forever()
    assert ran == ["first", "second"]


def test_a_stop_does_not_outlive_a_run_that_ended_in_an_error(
    loop: asyncio.AbstractEventLoop,
) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    loop.call_soon(loop.stop)
    loop.call_soon(interrupt)
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()
    ran: list[str] = []

    def later() -> None:
        ran.append("later")
        loop.stop()

    loop.call_soon(ran.append, "soon")
    loop.call_later(TICK, later)
    loop.run_forever()
    assert ran == ["soon", "later"]


def test_run_forever_can_be_run_again_after_stop(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[int] = []
    for i in range(3):
        loop.call_soon(ran.append, i)
        loop.call_soon(loop.stop)
        loop.run_forever()
    assert ran == [0, 1, 2]


def test_system_exit_in_a_callback_propagates_out_of_the_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    def bail() -> None:
        raise SystemExit(3)

    loop.call_soon(bail)
    with pytest.raises(SystemExit):
        loop.run_forever()
    assert not loop.is_running()
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


def test_close_makes_the_loop_closed_and_is_idempotent(loop: asyncio.AbstractEventLoop) -> None:
    assert not loop.is_closed()
    loop.close()
    assert loop.is_closed()
    loop.close()
    assert loop.is_closed()


def test_a_closed_loop_refuses_work(loop: asyncio.AbstractEventLoop) -> None:
    loop.close()
    with pytest.raises(RuntimeError, match="Event loop is closed"):
        loop.call_soon(lambda: None)
    with pytest.raises(RuntimeError, match="Event loop is closed"):
        loop.call_later(1, lambda: None)
    with pytest.raises(RuntimeError, match="Event loop is closed"):
        loop.call_at(1, lambda: None)
    with pytest.raises(RuntimeError, match="Event loop is closed"):
        loop.run_forever()
    coro = asyncio.sleep(0)
    try:
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            loop.run_until_complete(coro)
        with pytest.raises(RuntimeError, match="Event loop is closed"):
            loop.create_task(coro)
    finally:
        coro.close()


def test_closing_a_running_loop_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        with pytest.raises(RuntimeError, match="Cannot close a running event loop"):
            loop.close()

    loop.run_until_complete(main())
    assert not loop.is_closed()


def test_slow_callback_duration_is_a_settable_attribute(loop: asyncio.AbstractEventLoop) -> None:
    assert loop.slow_callback_duration == 0.1
    loop.slow_callback_duration = 0.5
    assert loop.slow_callback_duration == 0.5
