"""Two tasks taking two locks in opposite order: a real deadlock."""

import asyncio

import pytest


@pytest.mark.hangs_stock
def test_transfer_in_both_directions():
    async def main():
        a, b = asyncio.Lock(), asyncio.Lock()

        async def transfer(first, second):
            async with first:
                await asyncio.sleep(0.1)
                async with second:
                    pass

        await asyncio.gather(transfer(a, b), transfer(b, a))

    asyncio.run(main())
