# SPDX-License-Identifier: Apache-2.0
"""A bug in a rare branch, reached only through a buggify point.

A coordinator writes each client request to a replica and waits for its
acknowledgement. If the replica is slow (a timeout: on this network, only
when the `replica_slow` buggify point fires), the coordinator takes the
fallback: it acknowledges the client anyway and keeps a hint to replay to
the replica later (hinted handoff). The bug is in the fallback: it
acknowledges but forgets to keep the hint. Fixed: it keeps the hint, and a
loop replays hints every 50 ms until the replica acknowledges. The check:
after a quiet second, the replica holds every acknowledged write.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._compat import buggify

PCT = {"pct_depth": 2, "pct_steps": 200}
PEERS = None

WRITES = 5


async def replica(node: Any) -> None:
    node.data = {}
    while True:
        msg = await node.recv()
        key, value = msg.payload
        node.data[key] = value
        node.send(msg.src, ("stored", key))


async def coordinator(node: Any, replica_id: int, fixed: bool) -> None:
    hints: dict[int, int] = {}
    pending: dict[int, int] = {}  # key -> client waiting for it

    async def handoff() -> None:
        while True:
            await asyncio.sleep(0.05)
            for key, value in sorted(hints.items()):
                node.send(replica_id, (key, value))

    node.handoff = asyncio.ensure_future(handoff())  # kept: a task only weakly held may go
    while True:
        msg = await node.recv()
        if msg.payload[0] == "stored":
            key = msg.payload[1]
            hints.pop(key, None)
            if key in pending:
                node.send(pending.pop(key), ("ok", key))
            continue
        key, value = msg.payload
        if buggify("replica_slow", 0.5):  # the replica did not answer in time
            node.send(msg.src, ("ok", key))  # hinted handoff: acknowledge now...
            if fixed:
                hints[key] = value  # ...and replay it later (the bug forgets this)
            continue
        pending[key] = msg.src
        node.send(replica_id, (key, value))


async def client(node: Any, coordinator_id: int) -> None:
    node.acked = []
    for key in range(WRITES):
        node.send(coordinator_id, (key, key * 10))
        msg = await node.recv()
        node.acked.append(msg.payload[1])


async def scenario(world: Any, fixed: bool) -> None:
    r = world.spawn(replica)
    co = world.spawn(coordinator, r.id, fixed)
    c = world.spawn(client, co.id)
    await world.clock.advance(1)
    lost = [k for k in c.acked if k not in r.data]
    assert not lost, f"acknowledged writes the replica never got: {lost}"
