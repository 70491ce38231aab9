# SPDX-License-Identifier: Apache-2.0
"""Generated world programs replay exactly (issue 11, "Also").

Random programs of nodes that send, broadcast, receive with timeouts, sleep,
spawn child tasks and log, under a test body that advances time, partitions,
crashes and restarts, skews, pauses and reconfigures the network, are each
run twice in this process and, for a sample, in child processes under
different PYTHONHASHSEED values: the trace hash and the log must be the same
every time. Bounded here (a few seconds); ASKEW_FUZZ_PROGRAMS=N runs more.
"""

from __future__ import annotations

import asyncio
import os
import random
import textwrap
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")

PROGRAMS = int(os.environ.get("ASKEW_FUZZ_PROGRAMS", "40"))
STRATEGIES = ("faithful", "fifo", "interleave", "shuffle")

NODE_OPS = ("send", "broadcast", "recv", "sleep", "child", "emit", "sleep0")
WORLD_OPS = ("advance", "partition", "crash", "restart", "skew", "pause", "configure")


def make_program(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    nodes = rng.randint(2, 5)
    return {
        "strategy": STRATEGIES[seed % len(STRATEGIES)],
        "nodes": [
            [(rng.choice(NODE_OPS), rng.random()) for _ in range(rng.randint(2, 8))]
            for _ in range(nodes)
        ],
        "world": [(rng.choice(WORLD_OPS), rng.random()) for _ in range(rng.randint(3, 10))],
    }


async def node_main(node: Any, ops: list[tuple[str, float]], peers: int) -> None:
    rng = node._askew_world.random
    for round_ in range(1_000):
        for op, x in ops:
            if op == "send":
                node.send(int(x * peers), ("m", node.id, round_))
            elif op == "broadcast":
                node.broadcast(("b", node.id, round_))
            elif op == "recv":
                msg = await node.recv(timeout=x)
                if msg is not None:
                    node.emit(f"got {msg.payload} from {msg.src}")
            elif op == "sleep":
                await asyncio.sleep(x * rng.random())
            elif op == "sleep0":
                await asyncio.sleep(0)
            elif op == "child":

                async def child(tag: int = round_, delay: float = x) -> None:
                    await asyncio.sleep(delay)
                    node.emit(f"child {tag} done at {asyncio.get_running_loop().time():.6f}")

                node.children = getattr(node, "children", [])
                node.children.append(asyncio.get_running_loop().create_task(child()))
            elif op == "emit":
                node.emit(f"round {round_} t={asyncio.get_running_loop().time():.6f}")
        await asyncio.sleep(0.05)


def program_body(program: dict[str, Any]) -> Any:
    async def body(world: askew.World) -> None:
        peers = len(program["nodes"])
        handles = [world.spawn(node_main, ops, peers) for ops in program["nodes"]]
        crashed: set[int] = set()
        for op, x in program["world"]:
            target = handles[int(x * peers)]
            if op == "advance":
                await world.clock.advance(x * 2)
            elif op == "partition":
                cut = int(x * (peers - 1)) + 1
                async with world.partition(set(range(cut)), set(range(cut, peers))):
                    await world.clock.advance(x)
            elif op == "crash" and target.id not in crashed:
                world.faults.crash(target)
                crashed.add(target.id)
            elif op == "restart" and target.id in crashed:
                world.faults.restart(target)
                crashed.discard(target.id)
            elif op == "skew":
                world.faults.skew(target, offset=(x - 0.5) * 10, drift=(x - 0.5) / 10)
            elif op == "pause" and target.id not in crashed:
                world.faults.pause(target, x)
            elif op == "configure":
                world.net.configure(latency=(0.0, x / 10), loss=x / 5, duplicate=x / 10)
        await world.clock.advance(1)
        world.log.emit(f"now {world.now:.9f}")

    return body


def trace_of(seed: int) -> tuple[int, list[str]]:
    program = make_program(seed)
    out: list[tuple[int, list[str]]] = []
    body = program_body(program)

    async def recorded(world: askew.World) -> None:
        await body(world)
        out.append((world.log.hash, [str(e) for e in world.log]))

    run_sim(recorded, seed=seed, strategy=program["strategy"])
    return out[0]


def test_generated_world_programs_replay_identically_in_one_process() -> None:
    distinct = set()
    for seed in range(PROGRAMS):
        first = trace_of(seed)
        assert trace_of(seed) == first, f"program {seed} diverged on its second run"
        assert len(first[1]) > 3
        distinct.add(first[0])
    assert len(distinct) == PROGRAMS  # the programs are not all alike


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_generated_programs as t
    print(json.dumps([t.trace_of(seed) for seed in range(int(sys.argv[2]))]))
    """
)


def test_generated_world_programs_replay_identically_across_hash_seeds() -> None:
    count = min(PROGRAMS, 12)
    results = json_in_hash_seeds(_CHILD, str(count), hash_seeds=("0", "1", "4242"))
    assert results[0] == results[1] == results[2]
    assert [h for h, _ in results[0]] == [trace_of(seed)[0] for seed in range(count)]
