# SPDX-License-Identifier: Apache-2.0
"""Properties of the fault model over random programs of skews, pauses,
crashes and restarts: each node's clocks follow their formulas, and a crash
changes nothing for the other nodes but the crashed node's silence."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
from conftest import run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")

EPOCH = 1577836800


async def clock_reader(node: Any, reads: list[tuple[float, float, float, float]]) -> None:
    loop = asyncio.get_running_loop()
    pace = random.Random(node.id)
    while True:
        reads.append((node._askew_world.now, loop.time(), time.monotonic(), time.time()))
        await asyncio.sleep(pace.uniform(0.05, 0.7))


class _Model:
    """The clocks of one node as the contract states them, in floats."""

    def __init__(self) -> None:
        # (t_skew, monotonic reading at t_skew, offset, drift), oldest first
        self.segments: list[tuple[float, float, float, float]] = [(0.0, 0.0, 0.0, 0.0)]

    def _at(self, t: float) -> tuple[float, float, float, float]:
        return next(s for s in reversed(self.segments) if s[0] <= t)

    def mono(self, t: float) -> float:
        base, mono_base, _offset, drift = self._at(t)
        return mono_base + (1 + drift) * (t - base)

    def wall(self, t: float) -> float:
        base, _mono_base, offset, drift = self._at(t)
        return EPOCH + t + offset + drift * (t - base)

    def skew(self, t: float, offset: float, drift: float) -> None:
        self.segments.append((t, self.mono(t), offset, drift))


@pytest.mark.parametrize("seed", range(12))
def test_random_fault_programs_keep_every_nodes_clocks_on_their_formulas(seed: int) -> None:
    reads: dict[int, list[tuple[float, float, float, float]]] = {0: [], 1: [], 2: []}
    models = {i: _Model() for i in reads}

    async def body(world: askew.World) -> None:
        nodes = [world.spawn(clock_reader, reads[i]) for i in range(3)]
        for _ in range(25):
            victim = world.random.choice(nodes)
            op = world.random.choice(("skew", "pause", "crash", "restart", "advance"))
            if op == "skew":
                offset, drift = world.random.uniform(-100, 100), world.random.uniform(-0.9, 0.9)
                world.faults.skew(victim, offset=offset, drift=drift)
                models[victim.id].skew(world.now, offset, drift)
            elif op == "pause" and "alive" in repr(victim):
                world.faults.pause(victim, world.random.uniform(0, 3))
            elif op == "crash" and "alive" in repr(victim):
                world.faults.crash(victim)
            elif op == "restart":
                world.faults.restart(victim)
            await world.clock.advance(world.random.uniform(0, 1.5))

    run_sim(body, seed=seed)
    for node_id, node_reads in reads.items():
        model = models[node_id]
        monos = [m for _, _, m, _ in node_reads]
        assert monos == sorted(monos), f"node {node_id}'s monotonic clock went back"
        for now, loop_time, mono, wall in node_reads:
            assert loop_time == mono
            assert mono == pytest.approx(model.mono(now), abs=1e-6)
            assert wall == pytest.approx(model.wall(now), abs=1e-6)


async def chatter(node: Any, heard: dict[int, list[tuple[float, int, Any]]], n: int) -> None:
    """Sends to the others on its own seeded pace; records what it hears."""
    pace = random.Random(node.id)
    heard[node.id] = []

    async def listen() -> None:
        while True:
            msg = await node.recv()
            heard[node.id].append((node._askew_world.now, msg.src, msg.payload))

    listener = asyncio.create_task(listen())
    for i in range(1_000):
        await asyncio.sleep(pace.uniform(0, 0.3))
        if getattr(node, "silent", False):
            continue
        node.send(pace.choice([d for d in range(n) if d != node.id]), (node.id, i))
    await listener


@pytest.mark.parametrize("seed", range(8))
def test_a_crash_leaves_the_other_nodes_as_if_the_crashed_node_fell_silent(seed: int) -> None:
    # Same seed twice, under fifo (no CPU-time draws, so a node's own steps
    # shape no one else's timing): once node 2 crashes at t, once it only
    # stops sending at t. What every other node hears must be identical.
    n = 5
    outcomes: list[dict[int, list[tuple[float, int, Any]]]] = []
    for crash in (True, False):
        heard: dict[int, list[tuple[float, int, Any]]] = {}

        async def body(world: askew.World, crash: bool = crash, heard: Any = heard) -> None:
            nodes = [world.spawn(chatter, heard, n) for _ in range(n)]
            await world.clock.advance(world.random.uniform(0.5, 3))
            if crash:
                world.faults.crash(nodes[2])
            else:
                nodes[2].silent = True
            await world.clock.advance(5)

        run_sim(body, seed=seed, strategy="fifo")
        outcomes.append({k: v for k, v in heard.items() if k != 2})
    crashed, silent = outcomes
    assert sum(len(v) for v in crashed.values()) > 20
    assert crashed == silent
