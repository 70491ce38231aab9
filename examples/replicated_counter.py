"""A replicated counter that loses increments.

Each replica applies an increment locally and broadcasts its new total, and peers overwrite
their copy with whatever total arrives. Two replicas that increment within a few milliseconds
of each other both announce the same total, and one increment is gone for good.
"""

import asyncio

import askew


async def listen(node):
    while True:
        msg = await node.recv()
        node.count = msg.payload  # a peer's new total overwrites ours


async def replica(node, delays):
    node.count = 0
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(listen(node))
        for delay in delays:
            await asyncio.sleep(delay)  # a client asks this replica to increment
            node.count += 1
            node.broadcast(node.count)


@askew.simulate(seed=2024, iterations=1_000)
async def test_no_lost_increments(world):
    plans = [[world.random.uniform(0, 20) for _ in range(3)] for _ in range(3)]
    replicas = [world.spawn(replica, plan) for plan in plans]
    await world.clock.advance(seconds=120)
    assert [r.count for r in replicas] == [9, 9, 9]
