"""A lease service whose client trusts its lease across a pause: the classic GC-pause bug.

A lock server grants a 10-second lease to one client at a time, and a client trusts it for only
8.5 seconds of its own clock, a margin for clock drift. Before each write the client checks that
its lease is still good, then spends half a second preparing the write, then sends it. If the
client is paused between the check and the send (a stop-the-world garbage collection, a VM
migration), its lease runs out meanwhile, the server grants it to the other client, and the
paused client's write lands after the new holder's: two writers under one lease. No clock is
wrong and no message is lost; only a pause, which askew's `world.faults.pause` makes.
"""

import asyncio

import askew

LEASE = 10.0  # seconds the server grants, on its own clock
TRUST = 8.5  # seconds a client trusts a lease, on its own clock, from when it asked
SERVER, STORAGE = 0, 1


async def lock_server(node):
    loop = asyncio.get_running_loop()
    holder, until, token = None, 0.0, 0
    while True:
        msg = await node.recv()
        now = loop.time()
        if holder in (None, msg.src) or now >= until:
            token += 1
            holder, until = msg.src, now + LEASE
            node.send(msg.src, ("granted", token))
        else:
            node.send(msg.src, ("busy", token))


async def storage(node):
    node.writes = []  # (token, writer), in the order the writes were applied
    while True:
        msg = await node.recv()
        token, _value = msg.payload
        node.writes.append((token, msg.src))


async def client(node):
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        node.send(SERVER, "acquire")
        verdict, token = (await node.recv()).payload
        if verdict != "granted":
            await asyncio.sleep(1)
            continue
        while loop.time() < asked + TRUST:  # the lease is still ours...
            await asyncio.sleep(0.5)  # ...so prepare a write (a pause may strike here)
            node.send(STORAGE, (token, f"written by {node.id}"))


@askew.simulate(seed=10, iterations=1_000)
async def test_writes_never_go_back_to_an_older_lease(world):
    world.spawn(lock_server)
    store = world.spawn(storage)
    first = world.spawn(client)
    world.spawn(client)
    await world.clock.advance(seconds=world.random.uniform(0, 10))
    world.faults.pause(first, world.random.uniform(0, 15))  # a long GC pause
    await world.clock.advance(seconds=30)
    tokens = [token for token, _ in store.writes]
    assert tokens == sorted(tokens), f"a stale lease holder wrote after a newer one: {tokens}"
