"""Primary/backup replication, fixed: the primary acknowledges only what the backup has.

Each write goes to the backup first, and the client hears "ok" only after the backup confirms
it (synchronous replication). A crash of the primary can now cost a write that was never
acknowledged, but never one that was.
"""

import asyncio

import askew


async def backup(node):
    node.data = {}
    while True:
        msg = await node.recv()
        key, value = msg.payload
        node.data[key] = value
        node.send(msg.src, "stored")


async def primary(node, backup_id):
    node.data = {}
    while True:
        msg = await node.recv()
        key, value = msg.payload
        node.data[key] = value
        node.send(backup_id, (key, value))
        await node.recv()  # the backup's "stored" (the client waits for us meanwhile)
        node.send(msg.src, "ok")


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
