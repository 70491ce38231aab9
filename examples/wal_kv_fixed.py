"""The write-ahead-logged key-value node, fixed: fsync before acknowledging.

Each put is fsynced before its acknowledgement goes out, and the log's directory is fsynced
once after the log is created, so that the log's name is durable too. What a crash loses now
is only what was never acknowledged.
"""

import os

import askew

LOG = "/data/wal.log"


def replay():
    data = {}
    if os.path.exists(LOG):
        with open(LOG, "rb") as f:
            for line in f.read().split(b"\n"):
                key, sep, value = line.partition(b"=")
                if sep and b"\0" not in line:  # a torn record is skipped
                    data[key.decode()] = value.decode()
    return data


async def kv_server(node):
    node.data = replay()
    log = open(LOG, "ab")
    folder = os.open("/data", os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(folder)  # the log's directory entry is durable
    os.close(folder)
    while True:
        msg = await node.recv()
        _op, key, value = msg.payload
        log.write(f"{key}={value}\n".encode())
        log.flush()
        os.fsync(log.fileno())  # durable before it is acknowledged
        node.data[key] = value
        node.send(msg.src, ("ok", key))


async def client(node, server):
    node.acked = []
    for i in range(1000):
        node.send(server, ("put", f"k{i}", f"v{i}"))
        reply = await node.recv(timeout=1.0)
        if reply is not None:
            node.acked.append(reply.payload[1])


@askew.simulate(seed=1, iterations=200)
async def test_acknowledged_writes_survive_a_crash(world):
    kv = world.spawn(kv_server, disk="/data")
    writer = world.spawn(client, kv.id)
    await world.clock.advance(seconds=world.random.uniform(0.1, 1.0))
    world.faults.restart(kv)  # a power cut, then the node starts again
    await world.clock.advance(seconds=1.0)
    lost = [key for key in writer.acked if key not in kv.data]
    assert not lost, f"acknowledged writes lost in a crash: {lost[:5]}"
