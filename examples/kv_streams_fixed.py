"""kv_streams.py, fixed: the primary acknowledges a write only once the backup has.

Each forwarded write carries a sequence number and the backup answers `ACK seq` after
applying it. The primary waits for that answer (up to 0.5 s) before telling the client OK;
without it the client hears ERR, so every acknowledged write is on the backup.
"""

import asyncio

import askew


async def backup(node):
    node.data = {}

    async def replicate(reader, writer):
        while line := await reader.readline():
            seq, key, value = line.decode().split()
            node.data[key] = value
            writer.write(f"ACK {seq}\n".encode())

    await asyncio.start_server(replicate, None, 7000)
    await asyncio.sleep(3600)


async def primary(node):
    node.data = {}
    while True:  # the backup may not be listening yet
        try:
            from_backup, to_backup = await asyncio.open_connection("backup", 7000)
            break
        except ConnectionRefusedError:
            await asyncio.sleep(0.1)
    seq = 0

    async def acked_by_backup(want):
        while True:  # skip the late answers to writes that already timed out
            if await from_backup.readline() == f"ACK {want}\n".encode():
                return

    async def serve(reader, writer):
        nonlocal seq
        while line := await reader.readline():
            _, key, value = line.decode().split()
            seq += 1
            to_backup.write(f"{seq} {key} {value}\n".encode())
            try:
                await asyncio.wait_for(acked_by_backup(seq), 0.5)
            except TimeoutError:
                writer.write(b"ERR\n")
                continue
            node.data[key] = value
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
