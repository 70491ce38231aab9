"""Per-step overhead of a loop over a bare coroutine trampoline.

The floor: a Python loop that round-robins `coro.send(None)` over K
coroutines, each of which awaits a trivial awaitable that yields once per
step, M times. That is the least any scheduler written around CPython
coroutines can do per step. The same K x M steps then run as asyncio tasks
doing `await asyncio.sleep(0)` on each loop. Read the `floor / side` ratio in
the last table as "times the trampoline's cost per step" (lower is better);
the goal is askew within 1.5x of the trampoline.
"""

from __future__ import annotations

import asyncio
import sys
import types

from _harness import (
    Side,
    askew_loop,
    compare,
    goal,
    median_of,
    parser,
    print_goals,
    print_header,
    print_table,
    scaled,
    uvloop_loop,
    write_json,
)
from bench_task_step import step_side


@types.coroutine
def _yield_once():
    yield


async def _stepper(m: int) -> None:
    for _ in range(m):
        await _yield_once()


def trampoline_side(k: int, m: int):
    def factory():
        def run() -> int:
            coros = [_stepper(m) for _ in range(k)]
            sends = [c.send for c in coros]
            while sends:
                alive = []
                append = alive.append
                for send in sends:
                    try:
                        send(None)
                    except StopIteration:
                        continue
                    append(send)
                sends = alive
            return k * m

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_trampoline", args)
    k = 10
    m = scaled(args.quick, 20_000, 2_000)
    repeats = args.repeats or (3 if args.quick else 7)
    results = compare(
        [
            Side("bare trampoline (floor)", trampoline_side(k, m)),
            Side("askew", step_side(lambda: askew_loop(seed=0), m, k)),
            Side("uvloop", step_side(uvloop_loop, m, k)),
            Side("stock asyncio", step_side(asyncio.new_event_loop, m, k)),
        ],
        repeats=repeats,
    )
    print_table(
        f"{k} coroutines x {m:,} steps",
        results,
        unit="step",
        rate="steps/s",
    )
    floor = median_of(results, "bare trampoline (floor)")
    print("  side / trampoline (x the floor's cost per step, lower is better):")
    for r in results:
        if r.per_op_ns and floor and r.name != "bare trampoline (floor)":
            print(f"    {r.name:<24}{r.median / floor:>8.2f}x")
    askew_ns = median_of(results, "askew")
    goals = [
        goal(
            "askew / trampoline <= 1.5x",
            askew_ns / floor if askew_ns and floor else None,
            1.5,
        )
    ]
    print_goals(goals)
    write_json(args.json, "trampoline", {"trampoline": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
