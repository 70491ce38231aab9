"""The README quickstart (leader election) swept over many seeds: seeds/s, one core.

Five nodes each wait up to 5 s for a message; on a timeout a node claims
leadership and broadcasts the claim, and a node that hears a claim adopts the
larger id. The test partitions {0, 1} from {2, 3, 4} for 30 virtual seconds,
heals, lets 30 more pass, then checks that everyone agrees on one leader.
The quickstart's final `assert` would stop the sweep at the first seed that
splits the cluster, so every side here *records* the outcome instead; the
fraction of seeds that ended with one leader is printed as a sanity check
that the sides simulate comparable runs.

The same scenario is written against each tool's public API:

- askew: the quickstart exactly as printed (`@askew.simulate`, `world.spawn`,
  `node.recv(timeout=5)`, `node.broadcast`, `world.partition`,
  `world.clock.advance`), with askew's default network model.
- simloom (3.12+): `@simloom.test(runs=N)` with a `world`; five `world.host`s,
  each binding a UDP endpoint (`loop.create_datagram_endpoint`) whose
  datagrams land in an `asyncio.Queue`; recv is `asyncio.wait_for(q.get(),
  5)`; broadcast is one `sendto` per peer (payload encoded as bytes, since the
  wire is bytes); the partition is `world.net.partition` / `heal` around
  `world.sleep(30)`. simloom's default latency (0.5-20 ms) is used.
- simloop (3.12+): `@sim_test(seeds=N)`; `loop.net.host(name).create_task`,
  the same UDP-endpoint node, `loop.net.partition` / `heal` around
  `asyncio.sleep(30)`. simloop's default latency is zero, so it is set to
  simloom's 0.5-20 ms with `loop.net.set_defaults`.

Neither peer has a message-level recv with a timeout or a node handle that
holds state, so the nearest equivalents are a datagram queue with `wait_for`
and a small per-node state object; partitions drop datagrams on both.

Read `vs simloom` / `vs simloop` as "times more seeds per second than that
peer". Goals: askew at or above 2,000 seeds/s and at least 10x both peers.
The peers only run on Python 3.12+ (run with .venv313/bin/python). askew's
sweep is sized from a 20-seed probe to take about 2 s (0.5 s with --quick),
capped at 5,000 seeds, so a slow build cannot blow the time budget.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

from _harness import (
    Result,
    Side,
    askew_simulate,
    calibrate,
    compare,
    goal,
    import_peer,
    median_of,
    parser,
    peers_note,
    print_goals,
    print_header,
    print_table,
    ratio,
    scaled,
    write_json,
)

PORT = 7000
LATENCY = (0.0005, 0.020)  # simloom's default link latency, used for both peers

# --- askew: the README quickstart, with the final assert recorded ----------


async def node_main(node, index):
    node.leader = None
    while True:
        msg = await node.recv(timeout=5)
        if msg is None:
            node.leader = node.id  # timed out, claim leadership
            await node.broadcast(("claim", node.id))
        elif msg.payload[0] == "claim":
            node.leader = max(node.leader or -1, msg.payload[1])


def askew_side(cap: int, seconds: float, outcomes: Counter):
    def factory():
        simulate = askew_simulate()

        def build(iterations: int):
            @simulate(seed=1337, iterations=iterations)
            async def test_leader_election(world):
                nodes = [world.spawn(node_main, i) for i in range(5)]

                async with world.partition({0, 1}, {2, 3, 4}):
                    await world.clock.advance(seconds=30)

                await world.clock.advance(seconds=30)
                outcomes["askew", len({n.leader for n in nodes}) == 1] += 1

            return test_leader_election

        iterations = calibrate(build, cap, seconds)
        test_leader_election = build(iterations)

        def run() -> int:
            test_leader_election()
            return iterations

        run.note = f"{iterations:,} seeds/sweep"
        return run

    return factory


# --- the same scenario on a UDP endpoint, shared by both peers -------------


class _NodeState:
    def __init__(self) -> None:
        self.leader: int | None = None


class _Inbox(asyncio.DatagramProtocol):
    def __init__(self, queue: asyncio.Queue) -> None:
        self.queue = queue

    def datagram_received(self, data: bytes, addr) -> None:
        self.queue.put_nowait(data)


async def _udp_node(state: _NodeState, index: int, names: list[str], bind_host: str) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: _Inbox(inbox), local_addr=(bind_host, PORT)
    )
    peers = [(name, PORT) for i, name in enumerate(names) if i != index]
    state.leader = None
    while True:
        try:
            data = await asyncio.wait_for(inbox.get(), 5)
        except TimeoutError:
            data = None
        if data is None:
            state.leader = index  # timed out, claim leadership
            claim = b"claim %d" % index
            for peer in peers:
                transport.sendto(claim, peer)
        else:
            kind, _, who = data.partition(b" ")
            if kind == b"claim":
                state.leader = max(state.leader or -1, int(who))


def simloom_side(runs: int, outcomes: Counter):
    def factory():
        simloom = import_peer("simloom")
        names = [f"n{i}" for i in range(5)]

        @simloom.test(runs=runs)
        async def test_leader_election(world):
            hosts = [world.host(name) for name in names]
            states = [_NodeState() for _ in names]
            for i, host in enumerate(hosts):
                host.spawn(lambda i=i, name=names[i]: _udp_node(states[i], i, names, name))

            world.net.partition(hosts[:2], hosts[2:])
            await world.sleep(30)
            world.net.heal()

            await world.sleep(30)
            outcomes["simloom", len({s.leader for s in states}) == 1] += 1

        settings = simloom.Settings(shrink_enabled=False)

        def run() -> int:
            test_leader_election(settings)
            return runs

        return run

    return factory


def simloop_side(seeds: int, outcomes: Counter):
    def factory():
        simloop = import_peer("simloop")
        names = [f"n{i}" for i in range(5)]

        @simloop.sim_test(seeds=seeds)
        async def test_leader_election():
            loop = asyncio.get_running_loop()
            loop.net.set_defaults(latency=LATENCY)
            hosts = [loop.net.host(name) for name in names]
            states = [_NodeState() for _ in names]
            for i, host in enumerate(hosts):
                host.create_task(_udp_node(states[i], i, names, "0.0.0.0"))

            loop.net.partition(names[:2], names[2:])
            await asyncio.sleep(30)
            loop.net.heal()

            await asyncio.sleep(30)
            outcomes["simloop", len({s.leader for s in states}) == 1] += 1

        def run() -> int:
            test_leader_election()
            return seeds

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_quickstart", args)
    n_askew = scaled(args.quick, 5_000, 500)
    n_peers = scaled(args.quick, 60, 20)
    repeats = args.repeats or (2 if args.quick else 3)
    outcomes: Counter = Counter()
    results: list[Result] = compare(
        [
            Side("askew", askew_side(n_askew, 0.5 if args.quick else 2.0, outcomes)),
            Side("simloom", simloom_side(n_peers, outcomes), note=f"{n_peers:,} seeds/sweep"),
            Side("simloop", simloop_side(n_peers, outcomes), note=f"{n_peers:,} seeds/sweep"),
        ],
        repeats=repeats,
        quiet_gc=False,
    )
    print_table(
        "quickstart leader election, 5 nodes, 60 virtual s per seed",
        results,
        unit="seed",
        reference=None,
        rate="seeds/s",
    )
    for r in results:
        agreed, split = outcomes[r.name, True], outcomes[r.name, False]
        if agreed + split:
            r.extra["one_leader_fraction"] = agreed / (agreed + split)
            print(f"  {r.name}: one leader in {agreed / (agreed + split):.1%} of seeds run")
    for peer in ("simloom", "simloop"):
        x = ratio(results, peer, "askew")
        if x is not None:
            print(f"  askew vs {peer}: {x:,.1f}x the seeds/s")
    note = peers_note()
    if note:
        print(f"  note: {note}")
    askew_ns = median_of(results, "askew")
    goals = [
        goal("askew >= 2,000 seeds/s", 1e9 / askew_ns if askew_ns else None, 2_000, at_most=False),
        goal("askew / simloom >= 10x", ratio(results, "simloom", "askew"), 10, at_most=False),
        goal("askew / simloop >= 10x", ratio(results, "simloop", "askew"), 10, at_most=False),
    ]
    print_goals(goals)
    write_json(args.json, "quickstart", {"quickstart": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
