"""Deterministic threads: a baton hand-off, and a to_thread round trip.

Sides, timed from outside, per operation:

- `baton hand-off`: two Python threads pass a run's baton (askew._core.Baton)
  back and forth, each hand-off a wake-up of the other thread and a GIL
  hand-over; per hand-off;
- `lock ping-pong`: the floor beside it, the same two threads handing over
  with two plain locks (a futex wake-up each way, and the same GIL
  hand-over); per hand-off;
- `to_thread, stock`: `await asyncio.to_thread(f)` in a loop on stock asyncio;
  per round trip;
- `to_thread, askew`: the same inside `@askew.simulate` (executor="threads"):
  the worker is a real thread that runs only with the baton; per round trip.

Goals (issue 25): a hand-off at most 5 µs, and a to_thread round trip inside
a run no dearer than one on stock asyncio.
"""

from __future__ import annotations

import _thread
import asyncio
import sys
import threading

from _harness import (
    Result,
    Side,
    askew_loop,
    askew_simulate,
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


def baton_side(n: int):
    def factory():
        from askew import _core

        loop = askew_loop(seed=0)

        def run() -> int:
            baton = _core.Baton(loop)
            baton.reset(0)
            other = baton.add()

            def partner() -> None:
                baton.wait(other)
                for _ in range(n - 1):
                    baton.give(other, 0)
                baton.set(other, _core.BATON_DONE)
                baton.pass_on(other, 0)

            t = threading.Thread(target=partner)
            t.start()
            for _ in range(n):
                baton.give(0, other)
            t.join()
            return 2 * n

        return run

    return factory


def lock_side(n: int):
    def factory():
        def run() -> int:
            to_b, to_a = _thread.allocate_lock(), _thread.allocate_lock()
            to_b.acquire()
            to_a.acquire()

            def partner() -> None:
                for _ in range(n):
                    to_b.acquire()
                    to_a.release()

            t = threading.Thread(target=partner)
            t.start()
            for _ in range(n):
                to_b.release()
                to_a.acquire()
            t.join()
            return 2 * n

        return run

    return factory


def noop() -> None:
    pass


async def round_trips(n: int) -> None:
    for _ in range(n):
        await asyncio.to_thread(noop)


def stock_to_thread_side(n: int):
    def factory():
        def run() -> int:
            asyncio.run(round_trips(n))
            return n

        return run

    return factory


def askew_to_thread_side(n: int):
    def factory():
        simulate = askew_simulate()

        @simulate(seed=0, iterations=1, executor="threads")
        async def test(world) -> None:
            await round_trips(n)

        def run() -> int:
            test()
            return n

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_threads", args)
    n = scaled(args.quick, 20_000, 2_000)
    m = scaled(args.quick, 5_000, 500)
    repeats = args.repeats or 5
    handoffs: list[Result] = compare(
        [Side("lock ping-pong", lock_side(n)), Side("baton hand-off", baton_side(n))],
        repeats=repeats,
    )
    print_table(
        "a hand-off between two threads", handoffs, unit="hand-off", reference="lock ping-pong"
    )
    trips: list[Result] = compare(
        [
            Side("to_thread, stock", stock_to_thread_side(m)),
            Side("to_thread, askew", askew_to_thread_side(m)),
        ],
        repeats=repeats,
    )
    print_table("a to_thread round trip", trips, unit="round trip", reference="to_thread, stock")
    stock = median_of(trips, "to_thread, stock")
    goals = [
        goal("baton hand-off <= 5 µs (ns)", median_of(handoffs, "baton hand-off"), 5_000),
        goal(
            "to_thread in a run <= stock's (ns)",
            median_of(trips, "to_thread, askew"),
            stock if stock is not None else 0.0,
        ),
    ]
    print_goals(goals)
    write_json(args.json, "threads", {"handoffs": handoffs, "to_thread": trips}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
