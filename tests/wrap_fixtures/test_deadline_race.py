"""A test that races a deadline against the time its own code takes: it
passes on a fast machine and fails on a slow one, as real flaky tests do."""

import asyncio


def test_work_beats_its_deadline():
    async def work():
        for _ in range(40):
            await asyncio.sleep(0)  # each step takes a little CPU time

    async def main():
        await asyncio.wait_for(work(), timeout=0.0004)

    asyncio.run(main())
