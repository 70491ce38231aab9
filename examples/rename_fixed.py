"""Atomic replace by rename, fixed: fsync the directory after the rename.

The rename is a change to /data, so /data is fsynced before the save counts as done; then a
crash keeps the new file, whichever way the disk's other unsynced writes go.
"""

import json
import os

import askew

STATE = "/data/state.json"


def load():
    if not os.path.exists(STATE):
        return 0
    with open(STATE) as f:
        return json.load(f)["value"]


def save(value):
    with open(STATE + ".tmp", "w") as f:
        json.dump({"value": value}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(STATE + ".tmp", STATE)
    folder = os.open("/data", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)  # the rename is durable
    finally:
        os.close(folder)


async def counter(node):
    node.value = node.loaded = load()
    while True:
        msg = await node.recv()
        node.value += 1
        save(node.value)
        node.send(msg.src, node.value)


async def client(node, server):
    node.acked = 0
    while True:
        node.send(server, "increment")
        reply = await node.recv(timeout=1.0)
        if reply is not None:
            node.acked = max(node.acked, reply.payload)


@askew.simulate(seed=1, iterations=200)
async def test_the_counter_never_goes_below_an_acknowledged_value(world):
    server = world.spawn(counter, disk="/data")
    user = world.spawn(client, server.id)
    await world.clock.advance(seconds=world.random.uniform(0.1, 1.0))
    acked = user.acked
    world.faults.restart(server)  # a power cut, then the node starts again
    await world.clock.advance(seconds=0.1)
    assert server.loaded >= acked, f"the counter came back at {server.loaded}, below {acked}"
