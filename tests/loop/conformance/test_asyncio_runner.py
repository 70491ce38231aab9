# SPDX-License-Identifier: Apache-2.0
"""asyncio.Runner and asyncio.run given a loop_factory, the way users put askew under their own
entry points: the factory's loop is the one used, leftovers are cancelled and async generators
finalized on close, and debug and context arguments reach the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator

import pytest

from .conftest import TICK, RecordingLoopFactory, needs_312, two_step_agen, var


def test_runner_with_loop_factory_runs_coroutines_on_that_loop(
    loop_factory: RecordingLoopFactory,
) -> None:
    async def which() -> asyncio.AbstractEventLoop:
        await asyncio.sleep(TICK)
        return asyncio.get_running_loop()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        assert runner.run(which()) is loop_factory.made[0]
        assert runner.run(which()) is loop_factory.made[0]
        assert runner.get_loop() is loop_factory.made[0]
    assert len(loop_factory.made) == 1
    assert loop_factory.made[0].is_closed()


def test_runner_cancels_leftover_tasks_on_close(
    loop_factory: RecordingLoopFactory,
) -> None:
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

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main())
        assert seen == []
    assert seen == ["cancelled"]


def test_runner_debug_sets_the_loop_debug_flag(
    loop_factory: RecordingLoopFactory,
) -> None:
    async def main() -> bool:
        return asyncio.get_running_loop().get_debug()

    with asyncio.Runner(debug=True, loop_factory=loop_factory) as runner:
        assert runner.run(main()) is True


def test_runner_run_uses_the_given_context(
    loop_factory: RecordingLoopFactory,
) -> None:
    ctx = contextvars.copy_context()
    ctx.run(var.set, "runner-ctx")

    async def main() -> str:
        return var.get()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        assert runner.run(main(), context=ctx) == "runner-ctx"


def test_runner_finalizes_async_generators_on_close(
    loop_factory: RecordingLoopFactory,
) -> None:
    closed: list[bool] = []
    keep: list[AsyncIterator[int]] = []

    async def main() -> None:
        g = two_step_agen(on_close=lambda: closed.append(True))
        await g.__anext__()
        keep.append(g)

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main())
    assert closed == [True]


@needs_312
def test_asyncio_run_accepts_the_loop_factory(
    loop_factory: RecordingLoopFactory,
) -> None:
    async def main() -> tuple[asyncio.AbstractEventLoop, str]:
        return asyncio.get_running_loop(), await asyncio.sleep(TICK, result="ran")

    ran_on, result = asyncio.run(main(), loop_factory=loop_factory)  # type: ignore[call-arg]
    assert result == "ran"
    assert ran_on is loop_factory.made[0]
    assert ran_on.is_closed()


@needs_312
def test_asyncio_run_propagates_the_exception(
    loop_factory: RecordingLoopFactory,
) -> None:
    async def main() -> None:
        await asyncio.sleep(0)
        raise LookupError("out")

    with pytest.raises(LookupError, match="out"):
        asyncio.run(main(), loop_factory=loop_factory)  # type: ignore[call-arg]
