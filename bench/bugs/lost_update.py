# SPDX-License-Identifier: Apache-2.0
"""Lost update: two clients increment a counter with get-then-put.

A key-value store answers `get` and `put`; each client adds one by reading
the value and writing it back plus one. When both read before either
writes, one increment is lost. Fixed: the store's atomic `incr`. The check:
after every client is done, the counter equals the increments made.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 200}
PEERS = None

CLIENTS, TIMES = 2, 3


async def store(node: Any) -> None:
    node.value = 0
    while True:
        msg = await node.recv()
        op, arg = msg.payload
        if op == "put":
            node.value = arg
        elif op == "incr":
            node.value += arg
        node.send(msg.src, node.value)


async def client(node: Any, store_id: int, fixed: bool) -> None:
    node.done = 0
    for _ in range(TIMES):
        await asyncio.sleep(random.uniform(0, 0.05))  # the client's other work
        if fixed:
            node.send(store_id, ("incr", 1))
            await node.recv()
        else:
            node.send(store_id, ("get", None))
            value = (await node.recv()).payload
            node.send(store_id, ("put", value + 1))
            await node.recv()
        node.done += 1


async def scenario(world: Any, fixed: bool) -> None:
    world.net.configure(loss=0, duplicate=0)  # the protocol runs over TCP
    kv = world.spawn(store)
    clients = [world.spawn(client, kv.id, fixed) for _ in range(CLIENTS)]
    await world.clock.advance(10)
    done = sum(c.done for c in clients)
    assert done == CLIENTS * TIMES, f"clients finished {done} increments"
    assert kv.value == done, f"lost update: {done} increments, counter {kv.value}"
