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
from bench_task_step import step_side

TASKS = 100
PERIOD = 0.01


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_timer", args)
    m = scaled(args.quick, 500, 50)
    repeats = args.repeats or (3 if args.quick else 7)
    results = compare(
        [
            Side("askew sleep(0)", step_side(askew_loop, m, TASKS)),
            Side(f"askew sleep({PERIOD:g})", step_side(askew_loop, m, TASKS, PERIOD)),
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
