# SPDX-License-Identifier: Apache-2.0
"""A lease held across a pause: a write from a holder whose lease expired.

A lock server grants 0.5 s leases with increasing tokens. Two clients take
turns: take the lease, then three times check that it has time left, work
for 50 ms and write to the storage node. The test pauses client 0 once
(a GC pause, a VM migration) for 0.3-1.5 s at a random moment. If the
pause falls between a check and its write and outlasts the lease, client 1
takes the lease and writes, and then client 0 wakes and writes with its
expired lease. Fixed: storage refuses a token older than the newest it has
seen (a fencing token). The check: the tokens of accepted writes never go
backwards.

Neither peer can express it: they can crash a host but not pause one.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 500}
PEERS = "no stop-the-world pause: simloom and simloop can crash a host, not pause it"

LEASE = 0.5


async def lock_server(node: Any) -> None:
    token, holder, expires = 0, None, 0.0
    while True:
        msg = await node.recv()
        now = asyncio.get_running_loop().time()
        if msg.payload == "acquire" and (holder is None or now >= expires):
            token, holder, expires = token + 1, msg.src, now + LEASE
            node.send(msg.src, ("granted", token))
        elif msg.payload == "acquire":
            node.send(msg.src, ("busy", None))
        elif msg.payload == "release" and holder == msg.src:
            holder = None


async def storage(node: Any, fixed: bool) -> None:
    node.accepted = []
    while True:
        msg = await node.recv()
        token = msg.payload
        if fixed and node.accepted and token < node.accepted[-1]:
            continue  # fenced off: a newer lease has written
        node.accepted.append(token)


async def client(node: Any, lock_id: int, storage_id: int) -> None:
    loop = asyncio.get_running_loop()
    while True:
        node.send(lock_id, "acquire")
        msg = await node.recv(timeout=0.05)
        if msg is None or msg.payload[0] != "granted":
            await asyncio.sleep(random.uniform(0.01, 0.1))
            continue
        token, expires = msg.payload[1], loop.time() + LEASE - 0.05  # a safety margin
        for _ in range(3):
            if loop.time() >= expires:
                break
            await asyncio.sleep(0.05)  # the work the lease protects
            node.send(storage_id, token)
        node.send(lock_id, "release")
        await asyncio.sleep(random.uniform(0.01, 0.1))


async def scenario(world: Any, fixed: bool) -> None:
    lock = world.spawn(lock_server)
    store = world.spawn(storage, fixed)
    clients = [world.spawn(client, lock.id, store.id) for _ in range(2)]
    await world.clock.advance(random.uniform(0, 1))
    world.faults.pause(clients[0], random.uniform(0.3, 1.5))
    await world.clock.advance(2)
    tokens = store.accepted
    back = [(a, b) for a, b in itertools.pairwise(tokens) if b < a]
    assert not back, f"a write under an expired lease: token {back[0][1]} after {back[0][0]}"
