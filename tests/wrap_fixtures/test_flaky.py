"""A test that passes on asyncio's FIFO order and depends on it, by design."""

import asyncio


def test_workers_alternate():
    log = []

    async def worker(name):
        await asyncio.sleep(0)
        log.append(name)

    async def main():
        await asyncio.gather(worker("a"), worker("b"))

    asyncio.run(main())
    assert log == ["a", "b"]
