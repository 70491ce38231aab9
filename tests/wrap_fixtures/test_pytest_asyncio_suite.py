"""pytest-asyncio tests and fixtures (skipped when pytest-asyncio is missing)."""

import asyncio

import pytest

pytest_asyncio = pytest.importorskip("pytest_asyncio")


@pytest_asyncio.fixture
async def ticker():
    ticks = []

    async def tick():
        while True:
            await asyncio.sleep(0.1)
            ticks.append(asyncio.get_running_loop().time())

    task = asyncio.create_task(tick())
    yield ticks
    task.cancel()


@pytest.mark.asyncio
async def test_fixture_task_ticks_while_test_sleeps(ticker):
    await asyncio.sleep(0.55)
    assert len(ticker) == 5


@pytest.mark.asyncio
async def test_wait_for_times_out():
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.1)


@pytest.mark.slow_stock
@pytest.mark.asyncio
async def test_sleeping_an_hour_finishes():
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.sleep(3600)
    assert loop.time() - start >= 3600
