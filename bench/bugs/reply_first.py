# SPDX-License-Identifier: Apache-2.0
"""A reply seen before its question: a thread forwarded hop by hop outruns the broadcast.

A discussion board replicates posts by broadcast, with no causal order:
each node shows a post the moment it arrives. Node 0 posts a question to
everyone; node 1 answers it once it sees it; node 2 adds to node 1's
answer, node 3 to node 2's, each broadcasting as it goes. A reader (node
4) that shows an answer before the post it answers shows a thread out of
order. The bug shows when the whole thread overtakes the question: the
chain of three replies must beat one direct message, which independent
latencies rarely do (three draws from 1-10 ms summing under one, about
1.5 % of runs). Fixed: a node holds a post until the post it answers is
shown. The check: every node shows every post, and the reader shows the
question before the thread's last answer.
"""

from __future__ import annotations

from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 30}
PEERS = None

NODES = 5
REPLIERS = (1, 2, 3)  # node n answers the post of node n - 1
READER = 4


async def member(node: Any, fixed: bool) -> None:
    node.shown = []
    held: list[tuple[int, int | None]] = []
    if node.id == 0:
        node.shown.append(0)
        for dst in range(NODES):
            if dst != node.id:
                node.send(dst, (0, None))
    while True:
        msg = await node.recv()
        held.append(msg.payload)
        progress = True
        while progress:
            progress = False
            for post, answers in list(held):
                if fixed and answers is not None and answers not in node.shown:
                    continue
                held.remove((post, answers))
                node.shown.append(post)
                progress = True
                if node.id in REPLIERS and post == node.id - 1:
                    node.shown.append(node.id)
                    for dst in range(NODES):
                        if dst != node.id:
                            node.send(dst, (node.id, post))


async def scenario(world: Any, fixed: bool) -> None:
    world.net.configure(loss=0, duplicate=0)
    nodes = [world.spawn(member, fixed) for _ in range(NODES)]
    await world.clock.advance(1)
    for n in nodes:
        assert sorted(n.shown) == list(range(len(REPLIERS) + 1)), f"node {n.id}: {n.shown}"
    order = nodes[READER].shown
    assert order.index(0) < order.index(REPLIERS[-1]), f"the reader shows {order}"
