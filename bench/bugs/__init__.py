# SPDX-License-Identifier: Apache-2.0
"""A corpus of classic distributed-systems bugs, each written as an askew test.

Each module is one bug: a small protocol, the check that catches it, and a
`fixed` flag that turns the bug off. What a module defines:

- `async def scenario(world, fixed: bool) -> None`: the test body. It
  spawns the nodes, injects the faults the bug needs and asserts the
  property the bug breaks. It uses only askew's world API
  (`world.spawn`, `node.send/recv`, `world.clock.advance`,
  `world.faults`, `world.partition`, `world.net.configure`) and
  `bugs.buggify`, so that `bugs._peers` can run the same body on simloom
  and simloop through a small adapter.
- `PCT`: the `pct_depth` / `pct_steps` that fit the bug (its depth, and
  about its run's steps), for `strategy="pct"`.
- `PEERS`: None when both peers can express the bug, else the reason they
  cannot.

bench/bench_bugs.py measures runs and wall time to the first failure;
tests/explore/test_bug_corpus.py checks that askew finds every bug and that every
fixed variant passes.
"""

from __future__ import annotations

from ._compat import buggify

# The corpus, in the order the bench prints it.
CORPUS = (
    "lost_update",
    "stale_read",
    "split_brain",
    "double_spend",
    "lease_pause",
    "stale_cache",
    "rare_branch",
    "lost_ack",
    "reply_first",
)

__all__ = ["CORPUS", "buggify"]
