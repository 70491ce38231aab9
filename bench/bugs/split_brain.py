# SPDX-License-Identifier: Apache-2.0
"""Split brain: two leaders in one term, from a candidate that also votes.

Raft-style election among three nodes. Node 0 leads at first and
heartbeats; the test crashes it. The others time out after a random
150-300 ms, start a term, vote for themselves and ask for votes; a node
grants one vote per term. The bug: a candidate does not record the vote it
gave itself, so when both time out close together (within a message's
latency) each grants the other its vote, and each counts two of three:
two leaders in the same term. Fixed: the candidate records its own vote.
The check: at most one node ever became leader of each term.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 300}
PEERS = None

N, HEARTBEAT = 3, 0.05


def timeout() -> float:
    return random.uniform(0.15, 0.3)


async def raft(node: Any, leaders: dict[int, set[int]], fixed: bool) -> None:
    term, voted_for, votes = 0, None, 0
    leader = node.id == 0
    loop = asyncio.get_running_loop()
    deadline = next_beat = loop.time()
    deadline += timeout()
    while True:
        if leader and loop.time() >= next_beat:
            node.broadcast(("beat", term))
            next_beat = loop.time() + HEARTBEAT
        wait = (next_beat if leader else deadline) - loop.time()
        msg = await node.recv(timeout=max(wait, 0))
        if msg is None:
            if not leader:  # election timeout: stand for the next term
                term += 1
                voted_for = node.id if fixed else None  # the bug: its own vote forgotten
                votes = 1
                node.broadcast(("vote?", term))
                deadline = loop.time() + timeout()
            continue
        kind, their_term = msg.payload
        if their_term > term:  # a newer term: follow it
            term, voted_for, votes, leader = their_term, None, 0, False
        if kind == "beat" and their_term == term and not leader:
            deadline = loop.time() + timeout()
        elif kind == "vote?" and their_term == term and voted_for in (None, msg.src):
            voted_for = msg.src
            node.send(msg.src, ("vote", term))
            deadline = loop.time() + timeout()
        elif kind == "vote" and their_term == term and not leader:
            votes += 1
            if votes > N // 2:
                leader = True
                leaders.setdefault(term, set()).add(node.id)


async def scenario(world: Any, fixed: bool) -> None:
    leaders: dict[int, set[int]] = {0: {0}}
    nodes = [world.spawn(raft, leaders, fixed) for _ in range(N)]
    await world.clock.advance(0.1)
    world.faults.crash(nodes[0])
    await world.clock.advance(1)
    split = {t: sorted(ids) for t, ids in leaders.items() if len(ids) > 1}
    assert not split, f"split brain: two leaders in one term {split}"
