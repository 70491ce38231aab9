"""Primary/backup replication that loses acknowledged writes.

The primary acknowledges a write at once and ships new writes to the backup once it has been
idle for 100 ms (asynchronous replication). If the primary crashes in between, the backup
takes over without writes the client was told had succeeded.
"""

import asyncio

import askew


async def backup(node):
    node.data = {}
    while True:
        node.data.update((await node.recv()).payload)


async def primary(node, backup_id):
    node.data, unshipped = {}, {}
    while True:
        msg = await node.recv(timeout=0.1)
        if msg is None and unshipped:  # idle: ship the new writes to the backup
            node.send(backup_id, tuple(unshipped.items()))
            unshipped.clear()
        elif msg is not None:
            key, value = msg.payload
            node.data[key] = unshipped[key] = value
            node.send(msg.src, "ok")  # acknowledged before the backup has it


async def client(node, primary_id, delays):
    node.acked = []
    for key, delay in enumerate(delays):
        await asyncio.sleep(delay)
        node.send(primary_id, (key, f"value {key}"))
        if await node.recv(timeout=1) is not None:
            node.acked.append(key)


@askew.simulate(seed=2024, iterations=1_000)
async def test_acked_writes_survive_failover(world):
    b = world.spawn(backup)
    p = world.spawn(primary, b.id)
    c = world.spawn(client, p.id, [world.random.uniform(0, 2) for _ in range(5)])
    await world.clock.advance(seconds=world.random.uniform(0, 10))
    world.faults.crash(p)  # the primary dies; the backup takes over
    await world.clock.advance(seconds=5)
    lost = [key for key in c.acked if key not in b.data]
    assert not lost, f"acknowledged writes lost: {lost}"
