# SPDX-License-Identifier: Apache-2.0
"""A seed names the same run across versions of askew: the trace hashes and
final logs of fixed programs and seeds, under every strategy, are pinned in
tests/trace_pins.json. A restructure must leave them identical; a change
that means to alter schedules re-records them on purpose:

    ASKEW_RECORD_PINS=1 python -m pytest tests/test_trace_pins.py

and says why in its commit, because every seed users have written down
then names a different run. The pins are kept per CPython minor version (a
seed replays on the same one, docs/determinism.md); recording writes the
running version's. The runs cover the world (scheduling, the
message network and every fault), a bare loop, and the host's resources:
TCP streams, UDP and a simulated disk across a crash."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")

PINS = Path(__file__).with_name("trace_pins.json")
SEEDS = (0, 1, 1337, 2**63 + 5)
STRATEGIES = ("faithful", "fifo", "interleave", "shuffle")


async def _member(node: Any, peers: int) -> None:
    node.heard = []
    node.leader = None
    while True:
        msg = await node.recv(timeout=0.5)
        if msg is None:
            node.leader = node.id
            await node.broadcast(("claim", node.id, time.time()))
        else:
            node.heard.append(msg.src)
            if msg.payload[0] == "claim":
                node.leader = max(node.leader or -1, msg.payload[1])
                node.send(msg.src, ("ack", os.urandom(2).hex()))


async def everything(world: askew.World) -> None:
    """Scheduling, latency, loss, duplication, partitions, cuts, crashes,
    restarts, pauses, skew, time, entropy and the random module."""
    nodes = [world.spawn(_member, 5) for _ in range(5)]
    world.net.configure(latency=(0.001, 0.05), loss=0.05, duplicate=0.05)
    order: list[int] = []

    async def worker(i: int) -> None:
        for _ in range(3):
            await asyncio.sleep(random.random() / 100)
            order.append(i)

    async with asyncio.TaskGroup() as tg:
        for i in range(4):
            tg.create_task(worker(i))
    world.log.emit(f"order {order}")
    world.faults.skew(nodes[1], offset=0.25, drift=1e-3)
    async with world.partition({0, 1}, {2, 3, 4}):
        await world.clock.advance(3)
    world.net.cut(nodes[2], nodes[3])
    down = world.random.randrange(5)
    world.faults.crash(nodes[down])
    async with world.faults.pause(nodes[4], 0.7):
        await world.clock.advance(1)
    world.net.heal()
    world.faults.restart(nodes[down])
    await world.clock.advance(3)
    world.log.emit(f"leaders {[n.leader for n in nodes]}")
    world.log.emit(f"heard {[len(n.heard) for n in nodes]}")


def _record(seed: int, strategy: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        await everything(world)
        lines = "\n".join(str(e) for e in world.log)
        out["hash"] = hex(world.log.hash)
        out["log"] = hashlib.sha256(lines.encode()).hexdigest()[:16]
        out["steps_and_time"] = f"{len(world.log)} {world.now:.9f}"

    run_sim(body, seed=seed, strategy=strategy)
    return out


def _bare_loop(seed: int, strategy: str) -> dict[str, Any]:
    loop = askew.new_event_loop(seed, strategy=strategy)
    seen: list[str] = []

    async def ping(i: int) -> None:
        for k in range(3):
            await asyncio.sleep(0.001 * ((i + k) % 3))
            seen.append(f"{i}.{k}@{loop.time():.6f}")

    async def main() -> None:
        await asyncio.gather(*(ping(i) for i in range(4)))

    try:
        loop.run_until_complete(main())
        return {"hash": hex(loop.trace_hash), "seen": " ".join(seen)}
    finally:
        loop.close()


async def _kv_server(node: Any) -> None:
    """A TCP key-value server over asyncio streams, with a write-ahead log
    on its simulated disk (fsynced every other put)."""
    log = open("/data/wal", "ab")
    node.puts = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                log.write(line)
                log.flush()
                node.puts += 1
                if node.puts % 2 == 0:
                    os.fsync(log.fileno())
                writer.write(b"ok " + line)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "0.0.0.0", 7000)
    async with server:
        await server.serve_forever()


async def _kv_client(node: Any, server: int) -> None:
    node.acked = 0
    while True:
        try:
            reader, writer = await asyncio.open_connection(f"node-{server}", 7000)
            for i in range(40):
                writer.write(f"k{i}={os.urandom(4).hex()}\n".encode())
                await asyncio.wait_for(reader.readline(), timeout=0.5)
                node.acked += 1
            writer.close()
            return
        except (TimeoutError, OSError):
            await asyncio.sleep(0.1)


async def _udp_peer(node: Any, peers: range) -> None:
    got: list[bytes] = []

    class Peer(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: Any) -> None:
            got.append(data)

    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(Peer, local_addr=("0.0.0.0", 9000))
    for k in range(5):
        for p in peers:
            if p != node.id:
                transport.sendto(f"{node.id}:{k}".encode(), (f"node-{p}", 9000))
        await asyncio.sleep(0.01)
    node.got = len(got)


async def sockets_and_disk(world: askew.World) -> None:
    """TCP streams and UDP over a lossy network, a disk, a crash and a
    restart in the middle of the traffic."""
    world.net.configure(latency=(0.001, 0.02), loss=0.05, duplicate=0.02)
    kv = world.spawn(_kv_server, disk="/data")
    clients = [world.spawn(_kv_client, kv.id) for _ in range(2)]
    first = len(world.nodes)
    peers = [world.spawn(_udp_peer, range(first, first + 3)) for _ in range(3)]
    await world.clock.advance(0.3)
    world.faults.crash(kv)
    await world.clock.advance(0.2)
    world.faults.restart(kv)
    await world.clock.advance(3)
    world.log.emit(f"acked {[c.acked for c in clients]} udp {[p.got for p in peers]}")
    world.log.emit(f"wal {len(world.disk(kv).read('/data/wal'))}")


def _record_sockets(seed: int, strategy: str) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        await sockets_and_disk(world)
        lines = "\n".join(str(e) for e in world.log)
        out["hash"] = hex(world.log.hash)
        out["log"] = hashlib.sha256(lines.encode()).hexdigest()[:16]
        out["steps_and_time"] = f"{len(world.log)} {world.now:.9f}"

    run_sim(body, seed=seed, strategy=strategy)
    return out


def _current() -> dict[str, Any]:
    pins: dict[str, Any] = {}
    for strategy in STRATEGIES:
        for seed in SEEDS:
            pins[f"world {strategy} {seed}"] = _record(seed, strategy)
            pins[f"loop {strategy} {seed}"] = _bare_loop(seed, strategy)
            pins[f"sockets {strategy} {seed}"] = _record_sockets(seed, strategy)
    return pins


def test_fixed_seeds_name_the_same_runs_as_the_recorded_ones() -> None:
    # A seed names one run per CPython minor version (docs/determinism.md:
    # asyncio's primitives take a different number of steps in each), so
    # each version has its own pins; a version without any is recorded once.
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    pins = json.loads(PINS.read_text())
    current = _current()
    if os.environ.get("ASKEW_RECORD_PINS") == "1":
        pins[version] = current
        PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    if version not in pins:
        pytest.skip(f"no pins recorded for Python {version}: ASKEW_RECORD_PINS=1 records them")
    recorded = pins[version]
    changed = sorted(k for k in recorded if recorded[k] != current.get(k))
    assert not changed, f"{len(changed)} pinned runs changed, first: {changed[:3]}"
    assert set(recorded) == set(current)
