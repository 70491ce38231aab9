# SPDX-License-Identifier: Apache-2.0
"""asyncio.Queue and its LIFO and priority variants: FIFO from one producer, blocking at
maxsize and when empty, join, and shutdown (3.13+).
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import needs_313, settle


def test_queue_delivers_one_producers_items_in_fifo_order(loop: asyncio.AbstractEventLoop) -> None:
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

    assert loop.run_until_complete(main()) == list(range(20))


def test_queue_maxsize_blocks_the_producer_until_there_is_room(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        q: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
        q.put_nowait(1)
        assert q.full()
        with pytest.raises(asyncio.QueueFull):
            q.put_nowait(2)
        putter = loop.create_task(q.put(2))
        await settle()
        assert not putter.done()
        assert q.get_nowait() == 1
        await putter
        assert q.qsize() == 1
        assert q.get_nowait() == 2

    loop.run_until_complete(main())


def test_queue_get_blocks_until_an_item_arrives(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        q: asyncio.Queue[str] = asyncio.Queue()
        with pytest.raises(asyncio.QueueEmpty):
            q.get_nowait()
        getter = loop.create_task(q.get())
        await settle()
        assert not getter.done()
        q.put_nowait("x")
        assert await getter == "x"

    loop.run_until_complete(main())


def test_queue_join_waits_for_every_task_done(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        q: asyncio.Queue[int] = asyncio.Queue()
        for i in range(3):
            q.put_nowait(i)
        joiner = loop.create_task(q.join())
        for _ in range(3):
            q.get_nowait()
            await settle()
            assert not joiner.done()
            q.task_done()
        await joiner
        with pytest.raises(ValueError, match="task_done"):
            q.task_done()

    loop.run_until_complete(main())


def test_lifo_and_priority_queues_order_their_items(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> tuple[list[int], list[int]]:
        lifo: asyncio.LifoQueue[int] = asyncio.LifoQueue()
        prio: asyncio.PriorityQueue[int] = asyncio.PriorityQueue()
        for i in (2, 3, 1):
            await lifo.put(i)
            await prio.put(i)
        return [await lifo.get() for _ in range(3)], [await prio.get() for _ in range(3)]

    assert loop.run_until_complete(main()) == ([1, 3, 2], [1, 2, 3])


@needs_313
def test_queue_shutdown_wakes_blocked_getters(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        q: asyncio.Queue[int] = asyncio.Queue()
        getter = loop.create_task(q.get())
        await settle()
        q.shutdown()  # type: ignore[attr-defined]
        with pytest.raises(asyncio.QueueShutDown):  # type: ignore[attr-defined]
            await getter

    loop.run_until_complete(main())
