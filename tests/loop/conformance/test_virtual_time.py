# SPDX-License-Identifier: Apache-2.0
"""Virtual time: what the SimLoop adds to asyncio's promises, per strategy.

The stock loop reads the host's clock, so none of this holds there. Every strategy starts its
clock at zero and lets a patched `loop.time` drive its timers; the faithful strategy (`askew`)
lets time pass as code runs and fires timers a little after their deadline, `askew-fifo` does
neither.
"""

from __future__ import annotations

import asyncio
from unittest import mock

from askew._loop.config import DEFAULT_CPU, DEFAULT_OVERSHOOT

from .conftest import ASKEW, ASKEW_FIFO, askew_only, on_loops


@askew_only
def test_virtual_time_starts_at_zero(loop: asyncio.AbstractEventLoop) -> None:
    assert loop.time() == 0.0


@askew_only
def test_a_patched_time_on_the_loop_instance_drives_its_timers(
    loop: asyncio.AbstractEventLoop,
) -> None:
    # As on asyncio's loop (aiolimiter's tests do this): call_later counts
    # from the replacement, and timers fall due when it reaches them.
    mock_now = [100.0]
    fired: list[float] = []

    async def main() -> None:
        with mock.patch.object(loop, "time", lambda: mock_now[0]):
            loop.call_later(2, lambda: fired.append(loop.time()))
            await asyncio.sleep(0)
            assert fired == []
            mock_now[0] = 103.0
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert fired == [103.0]
        assert loop.time() < 1.0  # the replacement is gone

    loop.run_until_complete(main())


@on_loops(ASKEW)
def test_sleep_advances_virtual_time_by_the_delay_and_at_most_a_wake_up_later(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> float:
        await asyncio.sleep(3600)
        return loop.time()

    overshoot_max, cpu_max = DEFAULT_OVERSHOOT[1], DEFAULT_CPU[1]
    assert 3600.0 < loop.run_until_complete(main()) <= 3600.0 + overshoot_max + 3 * cpu_max


@on_loops(ASKEW)
def test_a_timer_fires_after_its_deadline_never_before(loop: asyncio.AbstractEventLoop) -> None:
    fired: list[float] = []
    loop.call_at(12.5, lambda: fired.append(loop.time()))
    loop.run_until_complete(asyncio.sleep(20))
    assert len(fired) == 1 and 12.5 <= fired[0] <= 12.5 + DEFAULT_OVERSHOOT[1]


@on_loops(ASKEW_FIFO)
def test_sleep_advances_virtual_time_by_exactly_the_delay(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> float:
        await asyncio.sleep(3600)
        return loop.time()

    assert loop.run_until_complete(main()) == 3600.0


@on_loops(ASKEW_FIFO)
def test_a_timer_fires_at_exactly_its_deadline(loop: asyncio.AbstractEventLoop) -> None:
    fired: list[float] = []
    loop.call_at(12.5, lambda: fired.append(loop.time()))
    loop.run_until_complete(asyncio.sleep(20))
    assert fired == [12.5]
