"""A key-value node on sqlite that commits with PRAGMA synchronous=OFF.

Each put is one committed sqlite transaction, acknowledged once commit()
returns. With synchronous=OFF sqlite never calls fsync: the commit sits in
the operating system's page cache, so a power cut can take committed rows
with it (or tear the file). Run under askew-exec, libsqlite3's own open,
pwrite and fsync go to the node's simulated disk (spawn(..., disk="/data")),
whose crash keeps only what was synced plus a seeded subset of the rest.
journal_mode=TRUNCATE keeps the journal file between transactions, so a
commit is made by truncating it, which FULL syncs.

    askew-exec pytest examples/sqlite_node.py
"""

import sqlite3

import askew

DB = "/data/kv.db"
SYNCHRONOUS = "OFF"


def open_db():
    db = sqlite3.connect(DB, isolation_level=None)
    db.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    db.execute("PRAGMA journal_mode=TRUNCATE")
    db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)")
    return db


async def kv_server(node):
    db = open_db()
    node.data = dict(db.execute("SELECT k, v FROM kv"))
    while True:
        msg = await node.recv()
        _op, key, value = msg.payload
        with db:  # one transaction, committed when the block ends
            db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, value))
        node.data[key] = value
        node.send(msg.src, ("ok", key))


async def client(node, server):
    node.acked = []
    for i in range(1000):
        node.send(server, ("put", f"k{i}", f"v{i}"))
        reply = await node.recv(timeout=1.0)
        if reply is not None:
            node.acked.append(reply.payload[1])


@askew.simulate(seed=1, iterations=50)
async def test_committed_rows_survive_a_crash(world):
    kv = world.spawn(kv_server, disk="/data")
    writer = world.spawn(client, kv.id)
    await world.clock.advance(seconds=world.random.uniform(0.1, 1.0))
    world.faults.restart(kv)  # a power cut, then the node starts again
    await world.clock.advance(seconds=1.0)
    lost = [key for key in writer.acked if key not in kv.data]
    assert not lost, f"committed rows lost in a crash: {lost[:5]}"
