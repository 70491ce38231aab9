"""What seeing a run costs: a timeline's run against the run it shows.

Sides, one seed each, timed from outside (`askew.Replay.run`, a seed that
passes, so no report or shrinking is in it):

- `run`: the seed replayed, nothing asked;
- `states`: `Replay.states`, the seed replayed recording its nodes' state
  over time (what a failure's report and timeline read);
- `timeline`: `Replay.run(..., timeline=PATH)`: the run, then once more
  with a log that keeps all of it, its state recorded and its await sites
  noted, then the page written;
- `timeline + JSON`: the same with the Chrome trace JSON beside it.

Two workloads: the README quickstart (5 nodes) and a 20-node election
under a partition. Read "cost in runs" as (side - run) / run: what the
side adds, in runs; the goal is a timeline within 2x a run, so at most 1.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from _harness import Side, compare, goal, median_of, parser, print_goals, print_header, print_table

import askew


def election(size: int) -> Any:
    """The quickstart's election on `size` nodes, split in two for 30 s."""

    async def node_main(node: Any, index: int) -> None:
        node.leader = None
        while True:
            msg = await node.recv(timeout=5)
            if msg is None:
                node.leader = node.id
                await node.broadcast(("claim", node.id))
            elif msg.payload[0] == "claim":
                node.leader = max(node.leader or -1, msg.payload[1])

    async def test_election(world: Any) -> None:
        for i in range(size):
            world.spawn(node_main, i)
        half = set(range(size // 2))
        async with world.partition(half, set(range(size)) - half):
            await world.clock.advance(seconds=30)
        await world.clock.advance(seconds=30)  # no verdict: every seed passes

    return test_election


def sides(test: Any, seed: int, out: str) -> list[Side]:
    html, trace = os.path.join(out, "t.html"), os.path.join(out, "t.json")

    def make(**views: Any) -> Any:
        def run() -> int:
            askew.Replay.run(test, seed, **views)
            return 1

        return run

    def states() -> Any:
        def run() -> int:
            askew.Replay.states(test, seed)
            return 1

        return run

    return [
        Side("run", lambda: make()),
        Side("states", states),
        Side("timeline", lambda: make(timeline=html)),
        Side("timeline + JSON", lambda: make(timeline=html, trace_json=trace)),
    ]


def main() -> None:
    args = parser(__doc__).parse_args()
    print_header("bench_timeline", args)
    repeats = args.repeats or (3 if args.quick else 15)
    goals = []
    with tempfile.TemporaryDirectory() as out:
        for title, test in (("quickstart (5 nodes)", election(5)), ("20 nodes", election(20))):
            results = compare(sides(test, 1, out), repeats=repeats, quiet_gc=False)
            print_table(f"{title}, per run", results, unit="run", reference="run")
            base = median_of(results, "run")
            for name in ("states", "timeline", "timeline + JSON"):
                side = median_of(results, name)
                cost = None if base is None or side is None else (side - base) / base
                print(f"  {name}: costs {cost:.2f} runs" if cost is not None else f"  {name}: n/a")
                if name == "timeline":
                    goals.append(goal(f"{title}: the timeline costs at most 1 run", cost, 1.0))
    print_goals(goals)


if __name__ == "__main__":
    main()
