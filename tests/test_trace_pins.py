# SPDX-License-Identifier: Apache-2.0
"""A seed names the same run across versions of askew: the trace hashes and
final logs of fixed programs and seeds, under every strategy, are pinned in
tests/trace_pins.json. A restructure must leave them identical; a change
that means to alter schedules re-records them on purpose:

    ASKEW_RECORD_PINS=1 python -m pytest tests/test_trace_pins.py

and says why in its commit, because every seed users have written down
then names a different run."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
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


def _current() -> dict[str, Any]:
    pins: dict[str, Any] = {}
    for strategy in STRATEGIES:
        for seed in SEEDS:
            pins[f"world {strategy} {seed}"] = _record(seed, strategy)
            pins[f"loop {strategy} {seed}"] = _bare_loop(seed, strategy)
    return pins


def test_fixed_seeds_name_the_same_runs_as_the_recorded_ones() -> None:
    current = _current()
    if os.environ.get("ASKEW_RECORD_PINS") == "1":
        PINS.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(PINS.read_text())
    changed = sorted(k for k in recorded if recorded[k] != current.get(k))
    assert not changed, f"{len(changed)} pinned runs changed, first: {changed[:3]}"
    assert set(recorded) == set(current)
