# SPDX-License-Identifier: Apache-2.0
"""A stale cache entry that stays: a depth-3 ordering bug (cache-aside).

Readers use cache-aside against in-process fakes of a database and a cache
(each call one hop, an `await`): on a miss, read the database, then
`add` the value to the cache (set if absent). A writer updates the database
and deletes the cache entry. Two readers and the writer start together,
each a node, and their calls meet in the same loop ticks. The cache ends
stale only when three orderings line up: the first reader reads the
database before the writer's update (1), the writer's delete comes before
that reader's add (2), and that stale add comes before the second, fresh
reader's add (3); any other order leaves the cache fresh or empty. Fixed:
a miss takes a lease (memcache's), and an add whose lease a delete has
voided since is dropped. (A delayed second delete, the other common fix,
was tried first and swarm's 10 ms CPU steps outlasted its delay.) The
check: at the end the cache holds the database's value or nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

PCT = {"pct_depth": 3, "pct_steps": 20}
PEERS = None


class Store:
    """The database and the cache, as in-process fakes."""

    def __init__(self) -> None:
        self.db = 0
        self.cache: int | None = None
        self.deletes = 0  # how often the entry was deleted: a miss's lease


async def hop() -> None:
    await asyncio.sleep(0)  # one round trip to the database or the cache


async def reader(node: Any, store: Store, skip: int, render: int, fixed: bool) -> None:
    for _ in range(skip):  # the request's other work
        await hop()
    cached, lease = store.cache, store.deletes
    await hop()
    if cached is not None:
        return
    value = store.db
    await hop()
    for _ in range(render):  # the reader's own work on the value
        await hop()
    if store.cache is None and not (fixed and store.deletes != lease):
        store.cache = value  # fixed: a delete since the miss voids the add


async def writer(node: Any, store: Store) -> None:
    await hop()
    store.db = 1
    await hop()
    await hop()  # commit the transaction
    store.cache = None
    store.deletes += 1


async def scenario(world: Any, fixed: bool) -> None:
    store = Store()
    world.spawn(reader, store, 0, 1, fixed)
    world.spawn(reader, store, 1, 0, fixed)
    world.spawn(writer, store)
    await world.clock.advance(0.1)
    assert store.cache in (None, store.db), f"stale cache: {store.cache}, database {store.db}"
