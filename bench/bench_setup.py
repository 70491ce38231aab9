"""Setup + teardown of one run: wall µs per iteration of an empty test.

Sides, each running an empty coroutine N times and timed from outside:

- `asyncio.run(noop())`: a fresh stock loop per run (what most suites pay);
- `asyncio.Runner(loop_factory=F)` per run, for F = stock, uvloop and
  `askew.new_event_loop`: a fresh loop per run, through the 3.11+ Runner;
- one `asyncio.Runner` reused for all N runs (the loop is kept, only the
  main task is set up and torn down) for the same three factories;
- askew's own runner, `@askew.simulate(seed=0, iterations=N)` on
  `async def test(world): pass`, reported as the *marginal* cost per
  iteration (the slope between an N/10 and an N run, so one-off decorator
  cost is excluded);
- on Python 3.12+, simloom's `run()` and simloop's `explore()` of an empty
  test, per seed.

Read `vs asyncio.run` as "times cheaper than asyncio.run"; the goal is askew's
marginal per-iteration cost at or under 10 µs.
"""

from __future__ import annotations

import asyncio
import sys

from _harness import (
    Result,
    Side,
    askew_loop,
    askew_simulate,
    compare,
    goal,
    import_peer,
    median_of,
    now_ns,
    parser,
    peers_note,
    print_goals,
    print_header,
    print_table,
    scaled,
    uvloop_loop,
    write_json,
)


async def noop() -> None:
    pass


def asyncio_run_side(n: int):
    def factory():
        def run() -> int:
            for _ in range(n):
                asyncio.run(noop())
            return n

        return run

    return factory


def runner_fresh_side(make_loop, n: int):
    def factory():
        make_loop().close()  # fail early, at setup, if the factory is missing

        def run() -> int:
            for _ in range(n):
                with asyncio.Runner(loop_factory=make_loop) as runner:
                    runner.run(noop())
            return n

        return run

    return factory


def runner_reused_side(make_loop, n: int):
    def factory():
        make_loop().close()

        def run() -> int:
            with asyncio.Runner(loop_factory=make_loop) as runner:
                for _ in range(n):
                    runner.run(noop())
            return n

        return run

    return factory


def askew_simulate_side(n: int):
    """Marginal cost: time(N) - time(N/10), divided by the 0.9 N extra runs."""

    def factory():
        simulate = askew_simulate()

        def build(iterations: int):
            @simulate(seed=0, iterations=iterations)
            async def test(world) -> None:
                pass

            return test

        small_n = max(n // 10, 1)
        small, big = build(small_n), build(n)
        small()  # warms up, and fails the bench here if simulate cannot run

        def run() -> int:
            start = now_ns()
            small()
            mid = now_ns()
            big()
            end = now_ns()
            # compare() divides the elapsed time by the ops returned; return
            # the op count that makes that quotient the slope.
            slope = ((end - mid) - (mid - start)) / (n - small_n)
            return (end - start) / slope if slope > 0 else float(n)

        return run

    return factory


def simloom_side(n: int):
    def factory():
        simloom = import_peer("simloom")

        async def test(world) -> None:
            pass

        def run() -> int:
            for seed in range(n):
                simloom.run(test, seed=seed, virtual_time=True, seed_randomness=True)
            return n

        return run

    return factory


def simloop_side(n: int):
    def factory():
        simloop = import_peer("simloop")

        async def test() -> None:
            pass

        def run() -> int:
            report = simloop.explore(test, range(n))
            if report is not None:
                raise RuntimeError(report.render())
            return n

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_setup", args)
    n = scaled(args.quick, 2_000, 200)
    n_askew = scaled(args.quick, 20_000, 2_000)
    n_peers = scaled(args.quick, 100, 20)
    repeats = args.repeats or 3
    askew_factory = lambda: askew_loop(seed=0)  # noqa: E731
    results: list[Result] = compare(
        [
            Side("asyncio.run", asyncio_run_side(n)),
            Side("Runner/run, stock", runner_fresh_side(asyncio.new_event_loop, n)),
            Side("Runner/run, uvloop", runner_fresh_side(uvloop_loop, n)),
            Side("Runner/run, askew", runner_fresh_side(askew_factory, n)),
            Side("Runner reused, stock", runner_reused_side(asyncio.new_event_loop, n)),
            Side("Runner reused, uvloop", runner_reused_side(uvloop_loop, n)),
            Side("Runner reused, askew", runner_reused_side(askew_factory, n)),
            Side("askew.simulate", askew_simulate_side(n_askew), note="marginal"),
            Side("simloom.run", simloom_side(n_peers)),
            Side("simloop.explore", simloop_side(n_peers)),
        ],
        repeats=repeats,
        quiet_gc=False,
    )
    print_table(
        "setup + teardown of an empty run",
        results,
        unit="run",
        reference="asyncio.run",
        rate="runs/s",
    )
    note = peers_note()
    if note:
        print(f"  note: {note}")
    goals = [
        goal("askew.simulate <= 10 µs/iteration (ns)", median_of(results, "askew.simulate"), 10_000)
    ]
    print_goals(goals)
    write_json(args.json, "setup", {"setup": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
