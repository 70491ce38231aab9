"""A primary/backup register that serves reads from its backup: stale reads.

Clients write to the primary, which acknowledges at once and copies the value to the backup
in the background; clients read from either node. A read that reaches the backup before the
copy does returns a value older than a write that had already been acknowledged, and the
history of what clients saw is not linearizable. A buggify point makes the copy slow in some
runs, so the window is found in a few seeds; the checker names the read that cannot be
explained and the operations around it.
"""

import asyncio

import askew
from askew import check

PRIMARY, BACKUP = 0, 1


async def replica(node):
    value = None
    while True:
        msg = await node.recv()
        kind, arg = msg.payload
        if kind == "read":
            node.send(msg.src, ("value", value))
            continue
        value = arg  # a client's write at the primary, or the primary's copy at the backup
        if kind == "write":
            delay = 0.05 if askew.buggify("slow copy to the backup") else 0
            asyncio.get_running_loop().call_later(delay, node.send, BACKUP, ("copy", arg))
            node.send(msg.src, ("ok", None))


async def client(node, world):
    for i in range(6):
        if world.random.random() < 0.5:
            async with world.history.op(node, "write", (node.id, i)):
                node.send(PRIMARY, ("write", (node.id, i)))
                await node.recv()
        else:
            replica = world.random.choice([PRIMARY, BACKUP])  # the bug: the backup may lag
            async with world.history.op(node, "read") as op:
                node.send(replica, ("read", None))
                op.ok((await node.recv()).payload[1])


async def workload(world):
    world.net.configure(latency=(0.001, 0.01))
    world.spawn(replica)  # the primary
    world.spawn(replica)  # the backup
    for _ in range(3):
        world.spawn(client, world)
    await world.clock.advance(5)
    return world.history


@askew.simulate(seed=7, iterations=500)
async def test_reads_are_linearizable(world):
    history = await workload(world)
    check.assert_linearizable(history, check.register())
