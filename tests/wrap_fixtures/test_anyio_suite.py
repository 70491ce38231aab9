"""anyio tests on its asyncio backend (skipped when anyio is missing)."""

import pytest

anyio = pytest.importorskip("anyio")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_fail_after_lets_a_fast_call_through():
    with anyio.fail_after(0.5):
        await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_move_on_after_cancels_a_slow_call():
    with anyio.move_on_after(0.1) as scope:
        await anyio.sleep(10)
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_task_group_and_memory_stream():
    send, receive = anyio.create_memory_object_stream[int](1)
    got = []

    async def produce():
        async with send:
            for i in range(3):
                await anyio.sleep(0.05)
                await send.send(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        async with receive:
            async for item in receive:
                got.append(item)
    assert got == [0, 1, 2]


@pytest.mark.slow_stock
@pytest.mark.anyio
async def test_sleeping_an_hour_finishes():
    start = anyio.current_time()
    await anyio.sleep(3600)
    assert anyio.current_time() - start >= 3600
