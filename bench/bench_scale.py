"""Scale: 10,000 nodes with 1,000,000 messages in flight vs a small cluster.

Each of N nodes puts P messages on the wire in its first step (so all N x P
are in flight at once, before any latency timer fires), then receives the P
messages addressed to it; destinations are shifted so every node gets exactly
P. Throughput is delivered messages per wall second, timed from outside the
run. The big case is 10,000 x 100 = 1,000,000 messages in one run; the small
case is 10 x 100 messages, repeated over enough iterations of
`@askew.simulate` to deliver as many messages in total. Each case runs in a
fresh child process (interleaved: small, big, small, big, ...) so its peak
RSS (`resource.getrusage`) is its own.

Read `big / small` as the big case's throughput relative to the small one
(1.00 = no slow-down with size); goals: at or above 0.8, and peak RSS at or
under 1 GB. askew only: the peers' pure-Python networks would take minutes
for a million messages. --quick uses 1,000 nodes (100,000 messages).
"""

from __future__ import annotations

import json
import sys

from _harness import (
    askew_simulate,
    goal,
    now_ns,
    parser,
    peak_rss_kib,
    print_goals,
    print_header,
    rss_kib,
    run_child,
    write_json,
)

PER_NODE = 100
# A child that takes longer is reported as timed out rather than stalling run_all.
CHILD_TIMEOUT = 90.0


async def scale_node(node, n_nodes, per_node):
    node.received = 0
    for k in range(per_node):
        node.send((node.id + 1 + k % (n_nodes - 1)) % n_nodes, k)
    while node.received < per_node:
        await node.recv()
        node.received += 1


def run_case(n_nodes: int, iterations: int) -> dict:
    """In the child: run the case, return throughput and memory figures."""
    base_kib = rss_kib()
    simulate = askew_simulate()
    delivered = [0]

    @simulate(seed=0, iterations=iterations)
    async def test_scale(world):
        nodes = [world.spawn(scale_node, n_nodes, PER_NODE) for _ in range(n_nodes)]
        await world.clock.advance(seconds=600)
        delivered[0] += sum(n.received for n in nodes)

    start = now_ns()
    test_scale()
    elapsed = now_ns() - start
    expected = n_nodes * PER_NODE * iterations
    return {
        "nodes": n_nodes,
        "iterations": iterations,
        "delivered": delivered[0],
        "expected": expected,
        "elapsed_ns": elapsed,
        "msgs_per_s": delivered[0] / (elapsed / 1e9) if elapsed else 0.0,
        "base_rss_kib": base_kib,
        "peak_rss_kib": peak_rss_kib(),
    }


def child(n_nodes: int, iterations: int) -> dict:
    return run_child([__file__, "--case", str(n_nodes), str(iterations)], timeout=CHILD_TIMEOUT)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--case", nargs=2, type=int, metavar=("NODES", "ITERATIONS"))
    args = p.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(*args.case)))
        return 0
    print_header("bench_scale", args)
    big_nodes = 1_000 if args.quick else 10_000
    small_nodes = 10
    small_iterations = big_nodes // small_nodes
    repeats = args.repeats or 1
    runs: dict[str, list[dict]] = {"small": [], "big": []}
    for _ in range(repeats):
        runs["small"].append(child(small_nodes, small_iterations))
        runs["big"].append(child(big_nodes, 1))

    def summary(name: str) -> dict:
        best = max(runs[name], key=lambda r: r["msgs_per_s"])
        ok = all(r["delivered"] == r["expected"] for r in runs[name])
        print(
            f"  {name:<8}{best['nodes']:>8,} nodes x {PER_NODE} msgs x "
            f"{best['iterations']:>5,} it   {best['msgs_per_s']:>14,.0f} msgs/s   "
            f"peak RSS {best['peak_rss_kib'] / 1024:>8,.1f} MiB   "
            f"{'all delivered' if ok else 'NOT all delivered'}"
        )
        return best

    print(f"\n== {big_nodes * PER_NODE:,} messages in flight vs a {small_nodes}-node cluster")
    small, big = summary("small"), summary("big")
    scale = big["msgs_per_s"] / small["msgs_per_s"]
    print(f"  big / small throughput: {scale:.2f}")
    goals = [
        goal("big / small throughput >= 0.8", scale, 0.8, at_most=False),
        goal("big case peak RSS <= 1 GB (MiB)", big["peak_rss_kib"] / 1024, 1024),
    ]
    print_goals(goals)
    write_json(args.json, "scale", {}, goals, extra={"runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
