# SPDX-License-Identifier: Apache-2.0
"""Stale read after failover: the old primary keeps serving reads.

A primary (node 0) replicates every write to a backup (node 1) before it
acknowledges it, and heartbeats it. A partition cuts {0, reader} from
{1, writer}; the backup stops hearing heartbeats, promotes itself, and the
writer (told of the new primary) writes x = 2 there. The reader, still
beside the old primary, reads x from it: the old primary answers from its
own copy, 1, after 2 was acknowledged. Fixed: a primary answers a read only
after its backup confirms it is still the primary (a read quorum), so a
cut-off primary stops answering. The check: no read that began after the
acknowledgement of x = 2 returned an older value.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 400}
PEERS = None

HEARTBEAT, DEAD_AFTER = 0.02, 0.06


class Observed:
    """What the test sees happen, in the order it happens."""

    def __init__(self) -> None:
        self.acked = 0  # the newest value whose write was acknowledged
        self.stale: list[tuple[int, int]] = []  # (newest acked when the read began, read)


async def primary(node: Any, backup: int, fixed: bool) -> None:
    node.x = 0
    reads: dict[int, int] = {}  # read id -> client, awaiting the backup's word
    ids = itertools.count()

    async def heartbeat() -> None:
        while True:
            node.send(backup, ("beat", None))
            await asyncio.sleep(HEARTBEAT)

    node.beat = asyncio.ensure_future(heartbeat())  # kept: a task only weakly held may go
    writes: dict[int, int] = {}
    while True:
        msg = await node.recv()
        op, arg = msg.payload
        if op == "write":
            node.x = arg
            writes[arg] = msg.src
            node.send(backup, ("replicate", arg))
        elif op == "replicated" and arg in writes:  # a duplicate is answered once
            node.send(writes.pop(arg), ("ok", arg))
        elif op == "read" and not fixed:
            node.send(msg.src, ("value", node.x))
        elif op == "read":
            rid = next(ids)
            reads[rid] = msg.src
            node.send(backup, ("confirm", rid))
        elif op == "confirmed" and arg in reads:
            node.send(reads.pop(arg), ("value", node.x))


async def backup(node: Any, writer: int) -> None:
    node.x, node.primary = 0, False
    while True:
        msg = await node.recv(timeout=None if node.primary else DEAD_AFTER)
        if msg is None:  # no heartbeat: the primary is gone, take over
            node.primary = True
            node.send(writer, ("primary", node.id))
            continue
        op, arg = msg.payload
        if op == "replicate":
            node.x = arg
            node.send(msg.src, ("replicated", arg))
        elif op == "confirm" and not node.primary:
            node.send(msg.src, ("confirmed", arg))
        elif op == "write" and node.primary:
            node.x = arg
            node.send(msg.src, ("ok", arg))


async def writer(node: Any, primary_id: int, seen: Observed) -> None:
    """Write 1 on the primary; once told of a new primary, write 2 there."""
    node.send(primary_id, ("write", 1))
    new_primary, sent = None, False
    while seen.acked < 2:
        kind, arg = (await node.recv()).payload
        if kind == "ok":
            seen.acked = max(seen.acked, arg)
        elif kind == "primary":
            new_primary = arg
        if new_primary is not None and seen.acked == 1 and not sent:
            node.send(new_primary, ("write", 2))
            sent = True


async def reader(node: Any, primary_id: int, seen: Observed) -> None:
    for i in range(3):
        await asyncio.sleep(random.uniform(0.05, 0.3))
        began = seen.acked
        node.send(primary_id, ("read", i))
        msg = await node.recv(timeout=0.05)
        if msg is not None and msg.payload[1] < began:
            seen.stale.append((began, msg.payload[1]))


async def scenario(world: Any, fixed: bool) -> None:
    seen = Observed()
    p = world.spawn(primary, 1, fixed)
    world.spawn(backup, 2)
    w = world.spawn(writer, p.id, seen)
    r = world.spawn(reader, p.id, seen)
    await world.clock.advance(random.uniform(0.02, 0.1))
    async with world.partition({p.id, r.id}, {1, w.id}):
        await world.clock.advance(1)
    assert not seen.stale, f"stale reads (newest acked, value read): {seen.stale}"
