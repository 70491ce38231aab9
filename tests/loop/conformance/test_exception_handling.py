# SPDX-License-Identifier: Apache-2.0
"""Exceptions that reach the loop: the exception handler (default, custom, broken), errors in
callbacks and timers, a task exception never retrieved, and what the asyncio logger gets.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from .conftest import TICK, asyncio_records, settle


def test_exception_handler_is_none_by_default_and_settable(loop: asyncio.AbstractEventLoop) -> None:
    def handler(handler_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        pass

    assert loop.get_exception_handler() is None
    loop.set_exception_handler(handler)
    assert loop.get_exception_handler() is handler
    loop.set_exception_handler(None)
    assert loop.get_exception_handler() is None
    with pytest.raises(TypeError, match="callable"):
        loop.set_exception_handler("nope")  # type: ignore[arg-type]


def test_call_exception_handler_calls_the_handler_with_loop_and_context(
    loop: asyncio.AbstractEventLoop,
) -> None:
    got: list[tuple[asyncio.AbstractEventLoop, dict[str, Any]]] = []
    loop.set_exception_handler(lambda handler_loop, ctx: got.append((handler_loop, ctx)))
    context = {"message": "hello"}
    loop.call_exception_handler(context)
    assert got == [(loop, context)]


def test_an_exception_in_a_callback_goes_to_the_handler_and_the_loop_goes_on(
    loop: asyncio.AbstractEventLoop, handled: list[dict[str, Any]]
) -> None:
    err = ZeroDivisionError("cb")
    ran: list[str] = []

    def bad() -> None:
        raise err

    h = loop.call_soon(bad)
    loop.call_soon(ran.append, "next")
    loop.run_until_complete(settle())
    assert ran == ["next"]
    assert len(handled) == 1
    assert handled[0]["exception"] is err
    assert handled[0]["message"].startswith("Exception in callback")
    assert handled[0]["handle"] is h


def test_an_exception_in_a_timer_callback_goes_to_the_handler(
    loop: asyncio.AbstractEventLoop, handled: list[dict[str, Any]]
) -> None:
    def bad() -> None:
        raise ValueError("timer")

    loop.call_later(TICK, bad)
    loop.run_until_complete(asyncio.sleep(3 * TICK))
    assert [type(c["exception"]) for c in handled] == [ValueError]


def test_default_exception_handler_logs_to_the_asyncio_logger(
    loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.call_exception_handler({"message": "first message"})
        loop.default_exception_handler({"message": "second message", "exception": ValueError("v")})
    records = asyncio_records(caplog)
    assert [r.levelno for r in records] == [logging.ERROR, logging.ERROR]
    assert "first message" in records[0].getMessage()
    assert "second message" in records[1].getMessage()
    assert records[1].exc_info is not None
    assert records[1].exc_info[0] is ValueError


def test_an_exception_in_a_callback_is_logged_without_a_handler(
    loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    def bad() -> None:
        raise ValueError("unhandled in callback")

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.call_soon(bad)
        loop.run_until_complete(settle())
    records = asyncio_records(caplog)
    assert len(records) == 1
    assert "Exception in callback" in records[0].getMessage()
    assert records[0].exc_info is not None
    assert records[0].exc_info[0] is ValueError


def test_an_error_in_the_exception_handler_is_logged(
    loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    def handler(handler_loop: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
        raise RuntimeError("handler broke")

    loop.set_exception_handler(handler)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.call_exception_handler({"message": "m"})
    messages = [r.getMessage() for r in asyncio_records(caplog)]
    assert any("Unhandled error in exception handler" in m for m in messages)


def test_a_never_retrieved_task_exception_reaches_the_handler(
    loop: asyncio.AbstractEventLoop, handled: list[dict[str, Any]]
) -> None:
    async def fail() -> None:
        raise ValueError("lost")

    async def main() -> None:
        loop.create_task(fail())
        await settle()

    loop.run_until_complete(main())
    gc.collect()
    assert len(handled) == 1
    assert handled[0]["message"] == "Task exception was never retrieved"
    assert isinstance(handled[0]["exception"], ValueError)
