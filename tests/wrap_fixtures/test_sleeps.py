"""Sleeps, wait_for and timeouts through asyncio.run, as a plain asyncio user writes them."""

import asyncio
import time

import pytest


async def fetch(delay: float, value: str) -> str:
    await asyncio.sleep(delay)
    return value


def test_gather_returns_in_argument_order():
    async def main():
        return await asyncio.gather(fetch(0.3, "a"), fetch(0.1, "b"), fetch(0.2, "c"))

    assert asyncio.run(main()) == ["a", "b", "c"]


def test_wait_for_times_out():
    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(fetch(10, "late"), timeout=0.5)

    asyncio.run(main())


def test_timeout_context_lets_a_fast_call_through():
    async def main():
        async with asyncio.timeout(1.0):
            return await fetch(0.25, "ok")

    assert asyncio.run(main()) == "ok"


def test_queue_producer_consumer():
    async def main():
        queue: asyncio.Queue[int] = asyncio.Queue(maxsize=2)
        got = []

        async def producer():
            for i in range(5):
                await queue.put(i)
                await asyncio.sleep(0.01)
            await queue.put(-1)

        async def consumer():
            while (item := await queue.get()) != -1:
                got.append(item)

        await asyncio.gather(producer(), consumer())
        return got

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_monotonic_moves_with_sleep():
    async def main():
        start = time.monotonic()
        await asyncio.sleep(0.2)
        return time.monotonic() - start

    assert asyncio.run(main()) >= 0.2


@pytest.mark.slow_stock
def test_sleeping_an_hour_finishes():
    async def main():
        loop = asyncio.get_running_loop()
        start, wall = loop.time(), time.time()
        await asyncio.sleep(3600)
        return loop.time() - start, time.time() - wall

    loop_elapsed, time_elapsed = asyncio.run(main())
    assert loop_elapsed >= 3600
    assert time_elapsed >= 3600  # time.time() is virtual inside the loop


@pytest.mark.slow_stock
def test_a_day_of_periodic_ticks():
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(60)
                ticks += 1

        task = asyncio.create_task(ticker())
        await asyncio.sleep(24 * 3600 + 1)
        task.cancel()
        return ticks

    assert asyncio.run(main()) == 24 * 60
