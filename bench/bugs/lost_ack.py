# SPDX-License-Identifier: Apache-2.0
"""A lost acknowledged write: acknowledged before it was replicated.

A primary acknowledges each write as soon as it holds it in memory and
ships writes to its backup in batches every 50 ms. The test crashes the
primary at a random moment while a client writes; the client notices (a
timeout), fails over to the backup and reads back every write it had
been told was stored. A write acknowledged after the last batch left is
gone. Fixed: the primary sends each write to the backup at once and
acknowledges it only when the backup has it. The check: every
acknowledged write is on the backup after the failover.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 300}
PEERS = None

BATCH = 0.05


async def primary(node: Any, backup_id: int, fixed: bool) -> None:
    batch: list[tuple[int, int]] = []
    waiting: dict[int, int] = {}  # key -> client, until the backup has it

    async def ship() -> None:
        while True:
            await asyncio.sleep(BATCH)
            if batch:
                node.send(backup_id, ("batch", tuple(batch)))
                batch.clear()

    node.shipper = asyncio.ensure_future(ship())  # kept: a task only weakly held may go
    while True:
        msg = await node.recv()
        kind, arg = msg.payload
        if kind == "write" and fixed:
            waiting[arg] = msg.src
            node.send(backup_id, ("batch", ((arg, arg),)))
        elif kind == "write":
            batch.append((arg, arg))
            node.send(msg.src, ("ok", arg))
        elif kind == "stored":
            for key in arg:
                if key in waiting:  # a duplicate is answered once
                    node.send(waiting.pop(key), ("ok", key))


async def backup(node: Any) -> None:
    node.data = {}
    while True:
        msg = await node.recv()
        kind, arg = msg.payload
        if kind == "batch":
            node.data.update(arg)
            node.send(msg.src, ("stored", tuple(k for k, _ in arg)))
        elif kind == "read":
            node.send(msg.src, ("value", node.data.get(arg)))


async def client(node: Any, primary_id: int, backup_id: int) -> None:
    node.acked, node.lost = [], []
    key = 0
    while True:
        node.send(primary_id, ("write", key))
        msg = await node.recv(timeout=1)
        if msg is None:
            break  # the primary is gone: fail over
        if msg.payload == ("ok", key):
            node.acked.append(key)
            key += 1
        await asyncio.sleep(random.uniform(0, 0.02))
    for key in node.acked:
        node.send(backup_id, ("read", key))
        msg = await node.recv(timeout=1)
        if msg is None or msg.payload[1] != key:
            node.lost.append(key)
    node.done = True


async def scenario(world: Any, fixed: bool) -> None:
    world.net.configure(loss=0, duplicate=0)  # the protocol runs over TCP
    p = world.spawn(primary, 1, fixed)
    b = world.spawn(backup)
    c = world.spawn(client, p.id, b.id)
    await world.clock.advance(random.uniform(0.05, 0.5))
    world.faults.crash(p)
    await world.clock.advance(10)
    assert getattr(c, "done", False), "the client never finished its failover"
    assert not c.lost, f"acknowledged writes lost in the failover: {c.lost}"
