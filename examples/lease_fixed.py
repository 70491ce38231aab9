"""A lease service, fixed: the storage fences off writes made under an older lease.

The server's token grows with every grant, and the client sends it with each write. The storage
remembers the highest token it has seen and refuses any write that carries a lower one (a
fencing token). A client paused past its lease may still send its write, but the write can no
longer land after the new holder's. The client cannot make its check and its write one atomic
step, so the fix has to be where the writes land.
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
    highest = 0
    while True:
        msg = await node.recv()
        token, _value = msg.payload
        if token < highest:
            node.emit(f"refused a write from {msg.src} under stale token {token}")
            continue
        highest = token
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
