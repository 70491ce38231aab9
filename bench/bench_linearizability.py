"""Linearizability checker throughput: operations checked per second.

Histories are generated here, no simulation and no peers needed: clients
issue operations back to back, each taking effect at a random instant
inside its [invoke, return] interval, so the history is linearizable by
construction; the "bug" variant changes the result of one read near the
end, so the checker must search the whole history and then bisect for the
shortest failing prefix. The pathological case is many writes that all
overlap and a read of a value none wrote: every subset of the writes is a
distinct search state, so the checker must give up with "unknown" at its
timeout instead of hanging. Wall time is measured around the checker only.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import random
import sys
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if importlib.util.find_spec("askew") is None and _REPO not in sys.path:
    sys.path.append(_REPO)

from askew import History, check  # noqa: E402


def generated(ops: int, clients: int, keys: int, seed: int, bug: bool = False) -> History:
    """A register (keys == 0) or kv (keys > 0) history of `ops` operations."""
    rng = random.Random(seed)
    now = [0.0] * clients
    planned = []  # (effect time, invoke, return, client, name, value)
    for n in range(ops):
        c = rng.randrange(clients)
        start = now[c] + rng.uniform(0, 1)
        end = start + rng.uniform(0.1, 3)
        now[c] = end
        key = rng.randrange(keys) if keys else None
        name = "write" if rng.random() < 0.5 else "read"
        value = n if name == "write" else None
        planned.append((rng.uniform(start, end), start, end, c, name, value, key))
    state: dict[object, object] = {}
    rows = []
    for _effect, start, end, c, name, value, key in sorted(planned):
        if name == "write":
            state[key] = value
            result = None
        else:
            result = state.get(key)
        if keys:
            value = key if name == "read" else (key, value)
        rows.append((c, name, value, result, start, end))
    if bug:
        last_read = max(i for i, r in enumerate(rows) if r[1] == "read")
        c, name, value, result, start, end = rows[last_read]
        rows[last_read] = (c, name, value, -1, start, end)
    return History.of(rows)


def overlapping(writes: int, read: object) -> History:
    rows = [(i, "write", i, None, 0.0, 10.0) for i in range(writes)]
    rows.append((writes, "read", None, read, 11.0, 12.0))
    return History.of(rows)


def pathological(writes: int) -> History:
    return overlapping(writes, -1)


RESULTS: list[dict[str, object]] = []


def measure(label: str, history: History, model: check.Model, timeout: float) -> None:
    start = time.perf_counter()
    found = check.linearizable(history, model, timeout=timeout)
    took = time.perf_counter() - start
    rate = len(history) / took if took else float("inf")
    RESULTS.append({"case": label, "ops": len(history), "verdict": found.verdict, "seconds": took})
    print(
        f"{label:<44} {len(history):>6} ops  {found.verdict:<17} {took:8.3f} s  "
        f"{rate:>10,.0f} ops/s  {found.steps:>9} steps"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller histories")
    p.add_argument("--timeout", type=float, default=5.0, help="pathological case's timeout")
    p.add_argument(
        "--json", metavar="PATH", help="also write the results as JSON (bench/run_all.py)"
    )
    args = p.parse_args(argv)
    n = 1_000 if args.quick else 5_000
    print(f"bench_linearizability: python {sys.version.split()[0]}, {n} operations per case")
    measure("register, 5 clients", generated(n, 5, 0, 1), check.register(), 600)
    measure("register, 5 clients, one bad read", generated(n, 5, 0, 1, True), check.register(), 600)
    measure("register, 10 clients", generated(n, 10, 0, 2), check.register(), 600)
    measure("kv, 50 keys, 10 clients (by key)", generated(n, 10, 50, 3), check.kv(), 600)
    measure("kv, 50 keys, 10 clients, one bad read", generated(n, 10, 50, 3, True), check.kv(), 600)
    measure(
        f"pathological: 40 overlapping writes, {args.timeout:g} s timeout",
        pathological(40),
        dataclasses.replace(check.register(), view=None),
        args.timeout,
    )
    # The wall (issue 26): n writes overlapping on one register, then a read
    # of a value nobody wrote, or of one of them; the search alone against
    # the register checks that come first (askew/_explore/registers.py).
    search_only = dataclasses.replace(check.register(), view=None)
    for writes in (12, 16, 1000):
        for read, what in ((-1, "unwritten"), (3, "written")):
            history = overlapping(writes, read)
            measure(f"{writes} overlapping writes, {what} read", history, check.register(), 600)
            if writes <= 16:
                measure(
                    f"{writes} overlapping writes, {what} read, search only",
                    history,
                    search_only,
                    args.timeout,
                )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"bench": "linearizability", "results": RESULTS, "goals": []}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
