"""One simulated hour of a 5-node heartbeat cluster: wall ms per simulated hour.

Each node broadcasts a heartbeat every virtual second from a task of its own
and records, per peer, when it last heard from it: 5 x 4 x 3,600 = 72,000
messages and ~18,000 timer firings per simulated hour. One run is timed from
outside the simulation, including the runner's setup and teardown. In
--quick mode a shorter span is simulated and scaled to an hour (the cost is
linear in simulated time here), which the table notes; the peers simulate
a quarter hour, scaled, in the default mode too.

Sides: askew (`world.spawn`, `node.broadcast`, `node.recv`), and on Python
3.12+ the same cluster on simloom and simloop, written as UDP endpoints
(`create_datagram_endpoint`, one `sendto` per peer, an `asyncio.Queue` inbox)
with 0.5-20 ms link latency. A stock loop would need a real hour, so there
is no stock side. Each side also checks that every node heard every peer in
the last few virtual seconds, so a side that silently sent nothing cannot
look fast. Read `vs` as "times cheaper than that side"; the goal is askew at
or under 50 ms per simulated hour.
"""

from __future__ import annotations

import asyncio
import sys

from _harness import (
    Result,
    Side,
    askew_simulate,
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
    write_json,
)

NODES = 5
PORT = 7001
LATENCY = (0.0005, 0.020)
HOUR = 3600.0


def _check_fresh(last_seen_maps: list[dict], now: float, what: str) -> None:
    """Every node must have heard every peer within the last 3 virtual s."""
    for index, seen in enumerate(last_seen_maps):
        if len(seen) != NODES - 1 or min(seen.values()) < now - 3.0:
            raise RuntimeError(f"{what}: node {index} has stale or missing peers: {seen}")


# --- askew ---------------------------------------------------------------


async def heartbeat_node(node):
    node.last_seen = {}

    async def beat():
        while True:
            node.broadcast(("heartbeat", node.id))
            await asyncio.sleep(1)

    beater = asyncio.get_running_loop().create_task(beat())
    try:
        while True:
            msg = await node.recv()
            node.last_seen[msg.src] = msg.sent_at
    finally:
        beater.cancel()


def askew_side(seconds: float):
    def factory():
        simulate = askew_simulate()

        @simulate(seed=0, iterations=1)
        async def test_heartbeats(world):
            nodes = [world.spawn(heartbeat_node) for _ in range(NODES)]
            await world.clock.advance(seconds=seconds)
            _check_fresh([n.last_seen for n in nodes], world.now, "askew")

        def run() -> float:
            test_heartbeats()
            return seconds / HOUR

        return run

    return factory


# --- peers: UDP endpoints ----------------------------------------------------


class _Inbox(asyncio.DatagramProtocol):
    def __init__(self, queue: asyncio.Queue) -> None:
        self.queue = queue

    def datagram_received(self, data: bytes, addr) -> None:
        self.queue.put_nowait((data, addr))


async def _udp_heartbeat_node(
    last_seen: dict, index: int, names: list[str], bind_host: str
) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: _Inbox(inbox), local_addr=(bind_host, PORT)
    )
    peers = [(name, PORT) for i, name in enumerate(names) if i != index]
    beat_msg = b"heartbeat %d" % index

    async def beat() -> None:
        while True:
            for peer in peers:
                transport.sendto(beat_msg, peer)
            await asyncio.sleep(1)

    beater = loop.create_task(beat())
    try:
        while True:
            data, _addr = await inbox.get()
            last_seen[int(data.split()[1])] = loop.time()
    finally:
        beater.cancel()


def simloom_side(seconds: float):
    def factory():
        simloom = import_peer("simloom")
        names = [f"n{i}" for i in range(NODES)]

        async def test_heartbeats(world) -> None:
            seen: list[dict] = [{} for _ in names]
            for name in names:
                # Name every node up front: simloom resolves a sendto target
                # through its DNS, which learns a name only when it binds.
                world.net.dns.register(name)
            for i, name in enumerate(names):
                world.host(name).spawn(
                    lambda i=i, name=name: _udp_heartbeat_node(seen[i], i, names, name)
                )
            await world.sleep(seconds)
            _check_fresh(seen, world.time, "simloom")

        def run() -> float:
            simloom.run(test_heartbeats, seed=0, virtual_time=True, seed_randomness=True)
            return seconds / HOUR

        return run

    return factory


def simloop_side(seconds: float):
    def factory():
        simloop = import_peer("simloop")
        names = [f"n{i}" for i in range(NODES)]

        async def test_heartbeats() -> None:
            loop = asyncio.get_running_loop()
            loop.net.set_defaults(latency=LATENCY)
            seen: list[dict] = [{} for _ in names]
            for i, name in enumerate(names):
                loop.net.host(name).create_task(_udp_heartbeat_node(seen[i], i, names, "0.0.0.0"))
            await asyncio.sleep(seconds)
            _check_fresh(seen, loop.time(), "simloop")

        def run() -> float:
            report = simloop.explore(test_heartbeats, [0])
            if report is not None:
                raise RuntimeError(report.render())
            return seconds / HOUR

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_heartbeat", args)
    seconds = 360.0 if args.quick else HOUR
    # The peers take seconds per simulated hour; a quarter hour, scaled,
    # keeps run_all inside its budget (cost is linear in simulated time).
    peer_seconds = 360.0 if args.quick else 900.0
    repeats = args.repeats or 2

    def note(span: float) -> str:
        return "" if span == HOUR else f"{span:.0f} s simulated, scaled to 1 h"

    results: list[Result] = compare(
        [
            Side("askew", askew_side(seconds), note=note(seconds)),
            Side("simloom", simloom_side(peer_seconds), note=note(peer_seconds)),
            Side("simloop", simloop_side(peer_seconds), note=note(peer_seconds)),
        ],
        repeats=repeats,
        warmup=0 if not args.quick else 1,
        quiet_gc=False,
    )
    print_table(
        "5-node heartbeat cluster, 1 simulated hour",
        results,
        unit="hour",
        reference=None,
    )
    for peer in ("simloom", "simloop"):
        x = ratio(results, peer, "askew")
        if x is not None:
            print(f"  askew vs {peer}: {x:,.1f}x cheaper")
    peer_note = peers_note()
    if peer_note:
        print(f"  note: {peer_note}")
    askew_ns = median_of(results, "askew")
    goals = [
        goal("askew <= 50 ms per simulated hour (ms)", askew_ns / 1e6 if askew_ns else None, 50)
    ]
    print_goals(goals)
    write_json(args.json, "heartbeat", {"heartbeat": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
