"""Callback dispatch: wall ns per callback on stock asyncio, uvloop and askew.

Two workloads, each timed from outside `run_until_complete`:

- chain: one callback re-schedules itself with `call_soon` N times, so every
  loop iteration runs exactly one callback (the loop's per-iteration cost,
  including any poll or clock read, is in the number);
- batch: one callback queues N no-op callbacks with `call_soon`, the loop
  drains them (the cost of `call_soon` plus dispatch from a full queue).

The "bare call" row is the same callback body called from a Python `for`
loop: a floor no loop can beat. Read the `vs` column as "times cheaper than
stock asyncio"; the goal compares askew with uvloop (uvloop / askew >= 1.2).
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


def chain_side(make_loop, n: int):
    def factory():
        loop = make_loop()

        def run() -> int:
            fut = loop.create_future()
            remaining = n

            def step() -> None:
                nonlocal remaining
                remaining -= 1
                if remaining:
                    loop.call_soon(step)
                else:
                    fut.set_result(None)

            loop.call_soon(step)
            loop.run_until_complete(fut)
            return n

        return run

    return factory


def batch_side(make_loop, n: int):
    def factory():
        loop = make_loop()

        def run() -> int:
            fut = loop.create_future()

            def noop() -> None:
                pass

            def fill() -> None:
                call_soon = loop.call_soon
                for _ in range(n - 1):
                    call_soon(noop)
                call_soon(fut.set_result, None)

            loop.call_soon(fill)
            loop.run_until_complete(fut)
            return n

        return run

    return factory


def bare_side(n: int):
    def factory():
        def run() -> int:
            remaining = n

            def step() -> None:
                nonlocal remaining
                remaining -= 1

            for _ in range(n):
                step()
            return n

        return run

    return factory


def loops():
    return [
        ("stock asyncio", asyncio.new_event_loop),
        ("uvloop", uvloop_loop),
        ("askew", lambda: askew_loop(seed=0)),
    ]


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_dispatch", args)
    n = scaled(args.quick, 200_000, 20_000)
    repeats = args.repeats or (3 if args.quick else 5)

    chain = compare(
        [Side(name, chain_side(make, n)) for name, make in loops()]
        + [Side("bare call (floor)", bare_side(n))],
        repeats=repeats,
    )
    print_table(
        f"call_soon chain, {n:,} callbacks, 1 per loop iteration",
        chain,
        unit="cb",
        reference="stock asyncio",
        rate="cb/s",
    )
    batch = compare(
        [Side(name, batch_side(make, n)) for name, make in loops()],
        repeats=repeats,
    )
    print_table(
        f"call_soon x{n:,} queued in one callback, then drained",
        batch,
        unit="cb",
        reference="stock asyncio",
        rate="cb/s",
    )
    goals = [
        goal("askew chain <= 150 ns/callback", median_of(chain, "askew"), 150),
        goal("askew batch <= 150 ns/callback", median_of(batch, "askew"), 150),
        goal(
            "uvloop/askew chain >= 1.2x",
            ratio(chain, "uvloop", "askew"),
            1.2,
            at_most=False,
        ),
        goal(
            "uvloop/askew batch >= 1.2x",
            ratio(batch, "uvloop", "askew"),
            1.2,
            at_most=False,
        ),
    ]
    print_goals(goals)
    write_json(args.json, "dispatch", {"chain": chain, "batch": batch}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
