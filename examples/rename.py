"""Atomic replace by rename, without fsyncing the directory: the crash brings the old file back.

A node keeps a counter in /data/state.json and saves it the textbook way: write a temporary
file, fsync it, rename it over the old one, then acknowledge. The rename is atomic, and the
new file's bytes are durable, but the rename itself is a change to the directory, and the
directory was never fsynced: a crash may undo it, leaving the old file (or, before the first
save was ever made durable, none at all). The counter goes backwards past a value it
acknowledged.
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
