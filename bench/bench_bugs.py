"""Finding bugs: runs and wall time to the first failure, askew against simloom and simloop.

Each bug of the corpus in bench/bugs/ (one module each: a protocol, the
check that catches it, a `fixed` flag) is searched for from 20 base seeds
(3 with --quick). One attempt is one sweep from a base seed, stopped at the
first failing run or after a cap of runs; it reports the runs it took and
its wall time, set-up and the failure's report included. The tables give
the median over the base seeds (a miss counts as infinitely slow, so a
median is "not found" when half the attempts missed) and how many found it.

Sides:
- askew, five ways: `faithful` (the default), `pct` (the bug module's
  depth and step estimate), `swarm` (faithful with a seeded fault
  configuration per seed), `interleave` and `pctcp` (message chains'
  priorities as latencies, the same knobs as `pct`); `@askew.simulate(seed=base,
  iterations=cap)` and the `SimulationFailure`'s iteration.
- simloom 0.5 (3.12+): `simloom.explore(runs=cap, start_seed=...)` with its
  default random scheduler, as `@simloom.test` runs it (virtual time, seeded
  `random`).
- simloop 0.2 (3.12+): `simloop.explore(seeds)` with its default random
  policy.
- On a bug of depth 3 or more, each peer's PCT too (simloom
  `scheduler="pct:auto,d=3"`, simloop `policy="pct", pct_depth=3`).
The peers run the same scenario through bench/bugs/_peers.py (askew's
world API over their hosts and UDP endpoints, latency set to askew's
default 1-10 ms). A bug a peer cannot express is listed with the reason.
Shrinking is off on every side: it starts after the first failure.

Goal (reported, not asserted): askew finds every bug, and its wall time to
the first failure is >= 10x better than each peer's on every bug both find.
The ratio is the peer's median wall time over askew's default (faithful).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import bugs
from _harness import goal, parser, peers_note, print_goals, print_header, write_json

STRATEGIES: dict[str, dict[str, Any]] = {
    "faithful": {},
    "pct": {"strategy": "pct"},  # plus the bug module's PCT knobs
    "swarm": {"swarm": True},
    "interleave": {"strategy": "interleave"},
    "pctcp": {"strategy": "pctcp"},  # plus the bug module's PCT knobs
}
PEERS = ("simloom", "simloop")
PEER_SEED_STRIDE = 1_000_000  # peer attempt b explores seeds [b * stride, ...)


def askew_attempt(module: Any, strategy: str, base: int, cap: int) -> int | None:
    """Runs askew takes from base seed `base` to the first failure, or None."""
    import askew

    knobs = dict(STRATEGIES[strategy])
    if strategy in ("pct", "pctcp"):
        knobs.update(module.PCT)

    @askew.simulate(seed=base, iterations=cap, **knobs)
    async def search(world: Any) -> None:
        await module.scenario(world, False)

    try:
        # The buggify summary each sweep prints is not this bench's output.
        with contextlib.redirect_stderr(io.StringIO()):
            search()
    except askew.SimulationFailure as failure:
        return int(failure.iteration) + 1  # type: ignore[arg-type]
    return None


def peer_attempt(module: Any, peer: str, base: int, cap: int, pct: bool = False) -> int | None:
    """Runs the peer takes to the first failure (its default random
    scheduler, or with `pct` its own PCT at the bug's depth), or None."""
    from bugs import _peers

    start = base * PEER_SEED_STRIDE
    depth = module.PCT["pct_depth"]
    if peer == "simloom":
        scheduler = f"pct:auto,d={depth}" if pct else None
        return _peers.simloom_first_failure(module, False, start, cap, scheduler)
    policy = "pct" if pct else "random"
    return _peers.simloop_first_failure(module, False, start, cap, policy, depth)


class Row:
    """One side's attempts on one bug."""

    def __init__(self, side: str, cap: int) -> None:
        self.side = side
        self.cap = cap
        self.runs: list[float] = []  # math.inf for a miss
        self.wall: list[float] = []
        self.unavailable: str | None = None

    def add(self, runs: int | None, seconds: float) -> None:
        self.runs.append(math.inf if runs is None else runs)
        self.wall.append(math.inf if runs is None else seconds)

    @property
    def found(self) -> int:
        return sum(r != math.inf for r in self.runs)

    def median_wall(self) -> float | None:
        if self.unavailable or not self.wall:
            return None
        m = statistics.median(self.wall)
        return None if m == math.inf else m

    def cells(self, fixed_cost: float) -> str:
        if self.unavailable:
            return f"{self.side:<16} {self.unavailable}"
        runs = statistics.median(self.runs)
        if runs == math.inf:
            return (
                f"{self.side:<16} not found within {self.cap:,} runs in "
                f"{len(self.runs) - self.found} of {len(self.runs)} attempts"
            )
        wall = self.median_wall()
        assert wall is not None
        lo = min(self.runs)
        hi = max(self.runs)
        span = f"{lo:g}-{'miss' if hi == math.inf else f'{hi:g}'}"
        # What a run costs once the attempt's set-up is paid (an estimate:
        # medians of wall time and of runs need not come from one attempt).
        per_run = max(wall - fixed_cost, 0) / runs
        return (
            f"{self.side:<16} {runs:>7g} runs ({span}), {wall * 1e3:>9.1f} ms, "
            f"found {self.found}/{len(self.runs)}; ~{per_run * 1e3:.2f} ms/run after set-up"
        )

    def as_json(self) -> dict[str, Any]:
        if self.unavailable:
            return {"unavailable": self.unavailable}
        return {
            "cap": self.cap,
            "runs": [None if r == math.inf else r for r in self.runs],
            "wall_s": [None if w == math.inf else w for w in self.wall],
            "median_wall_s": self.median_wall(),
            "found": self.found,
        }


class _Empty:
    """A test that passes at once: what an attempt costs before any bug."""

    PCT = {"pct_depth": 1, "pct_steps": 10}

    @staticmethod
    async def scenario(world: Any, fixed: bool) -> None:
        world.spawn(_idle)
        await world.clock.advance(0.001)


async def _idle(node: Any) -> None:
    await node.recv()


def fixed_costs(seeds: int, peers: bool) -> dict[str, float]:
    """The median wall time of a one-run attempt at an empty test, per side:
    the set-up and tear-down every attempt pays, whatever it finds."""
    attempts: dict[str, Callable[[int], int | None]] = {
        "askew": lambda b: askew_attempt(_Empty, "faithful", b, 1)
    }
    if peers:
        for peer in PEERS:
            attempts[peer] = lambda b, pe=peer: peer_attempt(_Empty, pe, b, 1)
    # The empty test never fails: count each attempt as one run found.
    rows = {side: Row(side, 1) for side in attempts}
    measure([(rows[side], lambda b, f=f: f(b) or 1) for side, f in attempts.items()], seeds)
    return {side: statistics.median(row.wall) for side, row in rows.items()}


def measure(sides: list[tuple[Row, Callable[[int], int | None]]], seeds: int) -> None:
    """Each base seed on every side in turn, so that the machine's load,
    which moves by the minute here, falls on all sides alike."""
    for base in range(seeds):
        for row, attempt in sides:
            start = time.perf_counter()
            runs = attempt(base)
            row.add(runs, time.perf_counter() - start)
        print(".", end="", flush=True)
    print()


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--seeds", type=int, default=None, help="base seeds per side (default 20)")
    p.add_argument("--only", metavar="BUGS", help="comma-separated subset of the corpus")
    args = p.parse_args(argv)
    print_header("bench_bugs", args)
    seeds = args.seeds or (3 if args.quick else 20)
    cap_askew = 200 if args.quick else 2_000
    cap_peer = 20 if args.quick else 100
    names = args.only.split(",") if args.only else list(bugs.CORPUS)
    note = peers_note()
    print(
        f"  median over {seeds} base seeds; caps: askew {cap_askew:,} runs, "
        f"peers {cap_peer:,} runs per attempt"
    )
    costs = fixed_costs(seeds, note is None) if names else {}
    print(
        "  fixed cost of an attempt (one passing run of a one-node test, median): "
        + ", ".join(f"{side} {s * 1e3:.1f} ms" for side, s in costs.items())
    )
    goals = []
    doc: dict[str, Any] = {"fixed_cost_s": costs}
    all_found = True
    for name in names:
        module = importlib.import_module(f"bugs.{name}")
        print(f"\n## {name}: {module.__doc__.splitlines()[0]}")
        rows: list[Row] = []
        sides: list[tuple[Row, Callable[[int], int | None]]] = []
        for strategy in STRATEGIES:
            row = Row(f"askew {strategy}" if strategy != "faithful" else "askew", cap_askew)
            rows.append(row)
            sides.append((row, lambda b, s=strategy, m=module: askew_attempt(m, s, b, cap_askew)))
        # PCT is the peers' answer to deep ordering bugs: on those, their PCT too.
        deep = module.PCT["pct_depth"] >= 3
        for peer, pct in [(p, False) for p in PEERS] + [(p, True) for p in PEERS if deep]:
            row = Row(f"{peer} pct" if pct else peer, cap_peer)
            rows.append(row)
            if note:
                row.unavailable = "needs Python 3.12+"
            elif module.PEERS:
                row.unavailable = f"cannot express it: {module.PEERS}"
            else:
                sides.append(
                    (row, lambda b, pe=peer, m=module, x=pct: peer_attempt(m, pe, b, cap_peer, x))
                )
        measure(sides, seeds)
        for row in rows:
            print(f"  {row.cells(costs.get(row.side.split()[0], 0.0))}")
        askew_wall = rows[0].median_wall()
        all_found = all_found and askew_wall is not None
        for row in rows[len(STRATEGIES) :]:
            peer_wall = row.median_wall()
            if askew_wall and peer_wall:
                x = peer_wall / askew_wall
                print(f"  askew vs {row.side}: {x:,.1f}x faster to the first failure")
                goals.append(goal(f"{name}: askew / {row.side} >= 10x", x, 10, at_most=False))
        doc[name] = {row.side: row.as_json() for row in rows}
    if note:
        print(f"\n  note: {note}")
    goals.insert(0, goal("askew finds every bug", 1.0 if all_found else 0.0, 1.0, at_most=False))
    print()
    print_goals(goals)
    write_json(args.json, "bugs", {}, goals, {"bugs": doc, "seeds": seeds})
    return 0


if __name__ == "__main__":
    sys.exit(main())
