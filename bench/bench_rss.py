"""Memory across a long sweep: RSS growth over 100,000 iterations of a small test.

Each side runs in a fresh child process: a warm-up batch of iterations first
(so import-time and first-use allocations, free lists and caches are paid),
then the resident set size is read, the 100,000 iterations run, and RSS is
read again. The growth is what a long `@askew.simulate` sweep would leak;
the goal is at or under 2 MB for askew.

Sides:
- askew.simulate: 100,000 iterations of a two-node ping/pong (one message
  each way, a recv with a timeout, one virtual second advanced);
- askew loop, Runner reused: the same count of `Runner.run` calls of a
  coroutine that sleeps one virtual second, on `askew.new_event_loop`;
- stock asyncio, Runner reused: the same count of runs on the stock loop,
  with `sleep(0)` since its sleeps are real (a control: growth it shows is
  the interpreter's and asyncio's, not askew's).

The two Runner sides run a fifth as many iterations as askew.simulate.

--quick runs 10,000 iterations.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys

from _harness import (
    askew_loop,
    askew_simulate,
    goal,
    now_ns,
    parser,
    print_goals,
    print_header,
    rss_kib,
    run_child,
    write_json,
)

WARMUP = 1_000
# The two Runner controls run a fifth of the iterations, to keep run_all short.
CONTROL_DIVISOR = 5
# A side that takes longer is reported as timed out rather than stalling run_all.
CHILD_TIMEOUT = 60.0


async def ponger(node):
    msg = await node.recv(timeout=5)
    if msg is not None:
        node.send(msg.src, ("pong", msg.payload[1]))


async def pinger(node, peer):
    node.send(peer, ("ping", node.id))
    node.reply = await node.recv(timeout=5)


def askew_simulate_sweep(n: int):
    simulate = askew_simulate()

    def build(iterations: int):
        @simulate(seed=0, iterations=iterations)
        async def test_ping(world):
            b = world.spawn(ponger)
            world.spawn(pinger, b.id)
            await world.clock.advance(seconds=1)

        return test_ping

    return build(WARMUP), build(n)


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def runner_sweep(make_loop, n: int, seconds: float):
    def sweep(count: int):
        def run() -> None:
            with asyncio.Runner(loop_factory=make_loop) as runner:
                for _ in range(count):
                    runner.run(_sleep(seconds))

        return run

    return sweep(WARMUP), sweep(n)


SIDES = {
    "askew.simulate": askew_simulate_sweep,
    "askew loop, Runner reused": lambda n: runner_sweep(
        lambda: askew_loop(seed=0), n // CONTROL_DIVISOR, 1.0
    ),
    # The stock loop sleeps for real, so its control run uses sleep(0).
    "stock asyncio, Runner reused": lambda n: runner_sweep(
        asyncio.new_event_loop, n // CONTROL_DIVISOR, 0.0
    ),
}


def run_side(name: str, n: int) -> dict:
    warm, sweep = SIDES[name](n)
    warm()
    gc.collect()
    before = rss_kib()
    start = now_ns()
    sweep()
    elapsed = now_ns() - start
    gc.collect()
    after = rss_kib()
    return {
        "iterations": n if name == "askew.simulate" else n // CONTROL_DIVISOR,
        "rss_before_kib": before,
        "rss_after_kib": after,
        "growth_kib": after - before,
        "us_per_iteration": elapsed
        / (n if name == "askew.simulate" else n // CONTROL_DIVISOR)
        / 1e3,
    }


def child(name: str, n: int) -> dict:
    return run_child([__file__, "--side", name, "--n", str(n)], timeout=CHILD_TIMEOUT)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--side", choices=sorted(SIDES))
    p.add_argument("--n", type=int)
    args = p.parse_args(argv)
    if args.side:
        print(json.dumps(run_side(args.side, args.n)))
        return 0
    print_header("bench_rss", args)
    n = 10_000 if args.quick else 100_000
    results = {name: child(name, n) for name in SIDES}
    print(f"\n== RSS growth over {n:,} iterations (after {WARMUP:,} warm-up)")
    print(f"  {'side':<30}{'iterations':>11}{'growth':>12}{'RSS after':>14}{'per iteration':>16}")
    for name, r in results.items():
        print(
            f"  {name:<30}{r['iterations']:>11,}{r['growth_kib'] / 1024:>9.2f} MiB"
            f"{r['rss_after_kib'] / 1024:>10.1f} MiB{r['us_per_iteration']:>13.2f} µs"
        )
    a = results["askew.simulate"]
    goals = [
        goal(
            "askew.simulate RSS growth <= 2 MB (MB)",
            a["growth_kib"] * 1024 / 1e6,
            2.0,
        )
    ]
    print_goals(goals)
    write_json(args.json, "rss", {}, goals, extra={"sides": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
