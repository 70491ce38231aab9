# SPDX-License-Identifier: Apache-2.0
"""Async generators and shutdown: the loop's asyncgen hooks, finalizing suspended generators,
and shutting down the default executor.

On the SimLoop no executor ever starts (that is refused, see test_io_refusals.py), so shutting
the default executor down must still complete as on the stock loop.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import sys
from collections.abc import AsyncIterator
from typing import Any

from .conftest import needs_312, two_step_agen


def test_the_loop_installs_asyncgen_hooks_only_while_running(
    loop: asyncio.AbstractEventLoop,
) -> None:
    before = sys.get_asyncgen_hooks()

    async def main() -> Any:
        return sys.get_asyncgen_hooks()

    inside = loop.run_until_complete(main())
    assert inside.firstiter is not None
    assert inside.finalizer is not None
    assert sys.get_asyncgen_hooks() == before


def test_shutdown_asyncgens_finalizes_suspended_generators(loop: asyncio.AbstractEventLoop) -> None:
    closed: list[str] = []
    keep: list[AsyncIterator[int]] = []

    async def main() -> None:
        for name in ("a", "b"):
            g = two_step_agen(on_close=functools.partial(closed.append, name))
            assert await g.__anext__() == 1
            keep.append(g)

    loop.run_until_complete(main())
    assert closed == []
    loop.run_until_complete(loop.shutdown_asyncgens())
    assert sorted(closed) == ["a", "b"]


def test_a_collected_async_generator_is_closed_on_the_loop(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> bool:
        finalized = asyncio.Event()
        g = two_step_agen(on_close=finalized.set)
        assert await g.__anext__() == 1
        del g
        gc.collect()
        async with asyncio.timeout(10):
            await finalized.wait()
        return finalized.is_set()

    assert loop.run_until_complete(main()) is True


def test_shutdown_default_executor_completes_when_no_executor_was_used(
    loop: asyncio.AbstractEventLoop,
) -> None:
    assert loop.run_until_complete(loop.shutdown_default_executor()) is None


@needs_312
def test_shutdown_default_executor_accepts_a_timeout(loop: asyncio.AbstractEventLoop) -> None:
    assert loop.run_until_complete(loop.shutdown_default_executor(timeout=1.0)) is None  # type: ignore[call-arg]
