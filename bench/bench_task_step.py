"""Task step: wall ns per `await asyncio.sleep(0)` with 10 tasks ready at once.

Ten tasks each run `await asyncio.sleep(0)` M times under one `gather`; the
whole `run_until_complete` is timed from outside and divided by 10 * M steps.
A step is one resume of a task's coroutine by the loop: the task's wake-up
callback, the coroutine running to its next `await`, and the re-scheduling.
Read `vs stock asyncio` as "times cheaper than stock asyncio"; the goal is
askew at or under 0.5 µs per step and at least 2x stock.
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
    ratio,
    scaled,
    uvloop_loop,
    write_json,
)

TASKS = 10


async def _worker(m: int, delay: float) -> None:
    sleep = asyncio.sleep
    for _ in range(m):
        await sleep(delay)


async def _fan_out(tasks: int, m: int, delay: float) -> None:
    await asyncio.gather(*(_worker(m, delay) for _ in range(tasks)))


def step_side(make_loop, m: int, tasks: int = TASKS, delay: float = 0):
    """`tasks` tasks each awaiting sleep(delay) m times on a fresh loop (also
    the loop side of bench_trampoline and both sides of bench_timer)."""

    def factory():
        loop = make_loop()

        def run() -> int:
            loop.run_until_complete(_fan_out(tasks, m, delay))
            return tasks * m

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_task_step", args)
    m = scaled(args.quick, 20_000, 2_000)
    repeats = args.repeats or (3 if args.quick else 7)
    results = compare(
        [
            Side("stock asyncio", step_side(asyncio.new_event_loop, m)),
            Side("uvloop", step_side(uvloop_loop, m)),
            Side("askew", step_side(lambda: askew_loop(seed=0), m)),
        ],
        repeats=repeats,
    )
    print_table(
        f"{TASKS} tasks x {m:,} sleep(0) each",
        results,
        unit="step",
        reference="stock asyncio",
        rate="steps/s",
    )
    goals = [
        goal("askew <= 0.5 µs/step (ns)", median_of(results, "askew"), 500),
        goal(
            "stock/askew >= 2x",
            ratio(results, "stock asyncio", "askew"),
            2.0,
            at_most=False,
        ),
    ]
    print_goals(goals)
    write_json(args.json, "task_step", {"task_step": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
