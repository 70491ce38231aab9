"""A key-value store over plain asyncio streams, replicated to a backup over TCP.

The primary serves `SET key value` lines from clients and forwards each write to the
backup on a TCP connection, acknowledging the client once `await writer.drain()` returns.
But drain() only means the bytes left asyncio's buffer: they may still sit in the kernel,
or wait on a partitioned link to be retransmitted. Cut the backup off, crash the primary,
and the backup takes over without writes the client was told had succeeded.
"""

import asyncio

import askew


async def backup(node):
    node.data = {}

    async def replicate(reader, writer):
        while line := await reader.readline():
            _, key, value = line.decode().split()
            node.data[key] = value

    await asyncio.start_server(replicate, None, 7000)
    await asyncio.sleep(3600)


async def primary(node):
    node.data = {}
    while True:  # the backup may not be listening yet
        try:
            _, to_backup = await asyncio.open_connection("backup", 7000)
            break
        except ConnectionRefusedError:
            await asyncio.sleep(0.1)

    async def serve(reader, writer):
        while line := await reader.readline():
            _, key, value = line.decode().split()
            node.data[key] = value
            to_backup.write(line)
            await to_backup.drain()  # the bug: sent is not received
            writer.write(b"OK\n")
            await writer.drain()

    await asyncio.start_server(serve, None, 6379)
    await asyncio.sleep(3600)


async def client(node, delays):
    node.acked = []
    await asyncio.sleep(0.5)
    reader, writer = await asyncio.open_connection("primary", 6379)
    for key, delay in enumerate(delays):
        await asyncio.sleep(delay)
        writer.write(f"SET k{key} v{key}\n".encode())
        try:
            if await asyncio.wait_for(reader.readline(), 1) == b"OK\n":
                node.acked.append(f"k{key}")
        except TimeoutError:
            pass


@askew.simulate(seed=2024, iterations=200)
async def test_acked_writes_survive_failover(world):
    b = world.spawn(backup, name="backup")
    p = world.spawn(primary, name="primary")
    c = world.spawn(client, [world.random.uniform(0, 0.5) for _ in range(10)])
    await world.clock.advance(seconds=world.random.uniform(0.5, 3))
    async with world.partition({p, c}, {b}):  # the backup is cut off for a while
        await world.clock.advance(seconds=world.random.uniform(0, 2))
        world.faults.crash(p)  # and the primary dies before the link heals
    await world.clock.advance(seconds=5)
    lost = [key for key in c.acked if key not in b.data]
    assert not lost, f"acknowledged writes lost: {lost}"
