"""Timer wake-up: wall ns per `await asyncio.sleep(period)` against `sleep(0)`.

A hundred tasks each await `asyncio.sleep(period)` M times under one
`gather`, on askew's default (faithful) strategy; the same tasks awaiting
`sleep(0)` on the same kind of loop are the yardstick. A timer wake-up is
a future, a timer handle, a heap push and pop, the timer's callback and the
task's wake-up; a `sleep(0)` step is the wake-up alone. Stock asyncio's
timer side would wait in real time, so it is not run. Read `vs` as "times
cheaper than that side"; the goal is a timer wake-up at or under 1.5x a
sleep(0) step.
"""

from __future__ import annotations

import asyncio
import sys

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
    write_json,
)

TASKS = 100
PERIOD = 0.01


async def _sleeper(m: int, delay: float) -> None:
    sleep = asyncio.sleep
    for _ in range(m):
        await sleep(delay)


async def _fan_out(m: int, delay: float) -> None:
    await asyncio.gather(*(_sleeper(m, delay) for _ in range(TASKS)))


def sleep_side(m: int, delay: float):
    def factory():
        loop = askew_loop(seed=0)

        def run() -> int:
            loop.run_until_complete(_fan_out(m, delay))
            return TASKS * m

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_timer", args)
    m = scaled(args.quick, 500, 50)
    repeats = args.repeats or (3 if args.quick else 7)
    results = compare(
        [
            Side("askew sleep(0)", sleep_side(m, 0)),
            Side(f"askew sleep({PERIOD:g})", sleep_side(m, PERIOD)),
        ],
        repeats=repeats,
    )
    print_table(
        f"{TASKS} tasks x {m:,} sleeps each",
        results,
        unit="wake-up",
        reference="askew sleep(0)",
        rate="wake-ups/s",
    )
    step = median_of(results, "askew sleep(0)")
    timer = median_of(results, f"askew sleep({PERIOD:g})")
    ratio = None if step is None or timer is None else timer / step
    goals = [goal("timer wake-up / sleep(0) step <= 1.5x", ratio, 1.5)]
    print_goals(goals)
    write_json(args.json, "timer", {"timer": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
