"""The replicated counter, fixed: replicas send increments, not totals.

Increments commute, so every replica ends at the same count whatever order they arrive in;
no replica ever overwrites another's work. The same test now passes for every seed it tries.
"""

import asyncio

import askew


async def listen(node):
    while True:
        await node.recv()
        node.count += 1  # apply a peer's increment


async def replica(node, delays):
    node.count = 0
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(listen(node))
        for delay in delays:
            await asyncio.sleep(delay)  # a client asks this replica to increment
            node.count += 1
            node.broadcast("+1")


@askew.simulate(seed=2024, iterations=1_000)
async def test_no_lost_increments(world):
    plans = [[world.random.uniform(0, 20) for _ in range(3)] for _ in range(3)]
    replicas = [world.spawn(replica, plan) for plan in plans]
    await world.clock.advance(seconds=120)
    assert [r.count for r in replicas] == [9, 9, 9]
