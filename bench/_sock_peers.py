# SPDX-License-Identifier: Apache-2.0
"""simloom's and simloop's sides of bench_sockets: the bench's own server and
client coroutines, run unmodified in each peer's simulation.

Each run builds a fresh simulation, as askew's side builds a world per run:
a host `server` that starts the workload's server on port 7, and a host
`client` that runs the workload's client against `server`:7 and returns its
count. Both peers get askew's default link latency (1-10 ms), so the three
networks agree, and their defaults otherwise: simloom as `@simloom.test`
runs a universe (`simloom.run`, virtual time and seeded `random` on, its
random-walk scheduler), simloop as `@sim_test` does (`simloop.explore` of
one seed). The client waits for the server's bind: in both peers a connect
looks the listener up at once, so a client scheduled first would be refused
(askew's spawn order starts the server first). Imported on 3.12+ only, by
the side factories: on an older Python `import_peer` says why the side is
unavailable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from _harness import Factory, import_peer

PORT = 7
LATENCY = (0.001, 0.010)  # askew's default link latency (ext/engine/net.h)
SEED = 1  # every simulated side runs this seed

# serve(host, port) binds the workload's server and returns; client(host,
# port, n) runs the workload and returns how many operations it did.
Serve = Callable[[Any, int], Awaitable[None]]
Client = Callable[[str, int, int], Awaitable[int]]


async def _serve(serve: Serve, host: str | None, bound: asyncio.Event) -> None:
    await serve(host, PORT)
    bound.set()


async def _client(client: Client, n: int, bound: asyncio.Event) -> int:
    await bound.wait()
    return await client("server", PORT, n)


def simloom_side(serve: Serve, client: Client, n: int) -> Factory:
    def factory() -> Callable[[], int]:
        simloom = import_peer("simloom")

        async def main(world: Any) -> int:
            world.net.set_latency(*LATENCY)
            bound = asyncio.Event()
            # simloom's listeners need an explicit host; binding the host's
            # name is also what puts `server` in its DNS.
            world.host("server").spawn(lambda: _serve(serve, "server", bound))
            task = world.host("client").spawn(lambda: _client(client, n, bound))
            return int(await task)

        def run() -> int:
            result = simloom.run(main, seed=SEED, virtual_time=True, seed_randomness=True)
            return int(result.value)

        return run

    return factory


def simloop_side(serve: Serve, client: Client, n: int) -> Factory:
    def factory() -> Callable[[], int]:
        simloop = import_peer("simloop")
        done: list[int] = []

        async def main() -> None:
            net = asyncio.get_running_loop().net  # type: ignore[attr-defined]
            net.set_defaults(latency=LATENCY)
            bound = asyncio.Event()
            # A host binding None listens on its own address, as askew's node.
            net.host("server").create_task(_serve(serve, None, bound))
            done.append(await net.host("client").create_task(_client(client, n, bound)))

        def run() -> int:
            done.clear()
            report = simloop.explore(main, [SEED], trace_tail=0)
            if report is not None:
                raise RuntimeError(f"simloop failed the workload:\n{report.render()}")
            return done[0]

        return run

    return factory
