"""TCP request/response and bulk transfer: stock asyncio over real loopback vs askew.

The same client and server coroutines (asyncio streams) run on both sides:

- round trip: a client writes `ping\\n` and reads the server's `pong\\n`, N times
  on one connection (wall ns per round trip);
- bulk: a client writes N bytes in 64 KiB writes and the server reads them to
  EOF (wall ns per KiB, throughput in MiB/s);
- UDP round trip: a client sends a `ping` datagram to an echo endpoint and
  waits for the echo, N times (wall ns per round trip).

Stock asyncio talks over real 127.0.0.1 sockets; askew runs one world with a
server node and a client node (askew/_sockets.py: each segment crosses the C
network with the default 1-10 ms virtual latency, which costs no wall time).
Read the `vs` column as "times cheaper than stock asyncio"; the goal asks
askew for >= 3x the round trips per wall second of real loopback.
"""

from __future__ import annotations

import asyncio
import sys

from _harness import (
    Side,
    askew_simulate,
    compare,
    goal,
    parser,
    print_goals,
    print_header,
    print_table,
    ratio,
    scaled,
    write_json,
)

CHUNK = 64 * 1024
STOCK = "stock asyncio (loopback)"


async def pong_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while await reader.readline():
        writer.write(b"pong\n")
    writer.close()


async def sink_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while await reader.read(CHUNK):
        pass
    writer.close()


async def finish(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close and wait for the server to close: its handler is done then."""
    writer.write_eof()
    await reader.read()
    writer.close()
    await writer.wait_closed()


async def ping_client(host: str, port: int, n: int) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    for _ in range(n):
        writer.write(b"ping\n")
        await reader.readline()
    await finish(reader, writer)
    return n


async def bulk_client(host: str, port: int, n_bytes: int) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    chunk = b"b" * CHUNK
    for _ in range(n_bytes // CHUNK):
        writer.write(chunk)
        await writer.drain()
    await finish(reader, writer)
    return n_bytes // 1024


def stock_side(handler, client, n: int):
    def factory():
        def run() -> int:
            async def main() -> int:
                server = await asyncio.start_server(handler, "127.0.0.1", 0)
                port = server.sockets[0].getsockname()[1]
                async with server:
                    return await client("127.0.0.1", port, n)

            return asyncio.run(main())

        return run

    return factory


def askew_side(handler, client, n: int):
    def factory():
        simulate = askew_simulate()
        done: list[int] = []

        async def server_node(node) -> None:
            if handler is udp_serve:
                await udp_serve(None, 7)
            else:
                await asyncio.start_server(handler, None, 7)
            await asyncio.sleep(1e9)

        async def client_node(node) -> None:
            done.append(await client("server", 7, n))

        async def body(world) -> None:
            world.spawn(server_node, name="server")
            world.spawn(client_node)
            while not done:
                await asyncio.sleep(0.5)

        test = simulate(seed=1, iterations=1)(body)

        def run() -> int:
            done.clear()
            test()
            return done[0]

        return run

    return factory


class UdpEcho(asyncio.DatagramProtocol):
    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        self.transport.sendto(data, addr)


class UdpPinger(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.waiter: asyncio.Future[bytes] | None = None

    def datagram_received(self, data: bytes, addr) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(data)


async def udp_ping_client(host: str, port: int, n: int) -> int:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(UdpPinger, remote_addr=(host, port))
    for _ in range(n):
        proto.waiter = loop.create_future()
        transport.sendto(b"ping")
        await proto.waiter
    transport.close()
    return n


def udp_stock_side(n: int):
    def factory():
        def run() -> int:
            async def main() -> int:
                loop = asyncio.get_running_loop()
                server, _ = await loop.create_datagram_endpoint(
                    UdpEcho, local_addr=("127.0.0.1", 0)
                )
                port = server.get_extra_info("sockname")[1]
                try:
                    return await udp_ping_client("127.0.0.1", port, n)
                finally:
                    server.close()

            return asyncio.run(main())

        return run

    return factory


async def udp_serve(host: object, port: int) -> None:
    loop = asyncio.get_running_loop()
    await loop.create_datagram_endpoint(UdpEcho, local_addr=("0.0.0.0", port))


def side_by_side(
    title: str, workload: tuple, repeats: int, *, unit: str, udp: bool = False
) -> list:
    """Run `workload` (server handler, client, size) on both sides; print the table."""
    stock = udp_stock_side(workload[2]) if udp else stock_side(*workload)
    results = compare([Side(STOCK, stock), Side("askew", askew_side(*workload))], repeats=repeats)
    print_table(title, results, unit=unit, reference=STOCK, rate=f"{unit}/s")
    return results


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_sockets", args)
    n = scaled(args.quick, 20_000, 2_000)
    n_bytes = scaled(args.quick, 64 * 1024 * 1024, 8 * 1024 * 1024)
    repeats = args.repeats or (3 if args.quick else 5)
    rtt = side_by_side(
        f"request/response, {n:,} round trips on one connection",
        (pong_server, ping_client, n),
        repeats,
        unit="rtt",
    )
    bulk = side_by_side(
        f"bulk transfer, {n_bytes // 2**20} MiB in 64 KiB writes",
        (sink_server, bulk_client, n_bytes),
        repeats,
        unit="KiB",
    )
    udp = side_by_side(
        f"UDP request/response, {n:,} datagram round trips",
        (udp_serve, udp_ping_client, n),
        repeats,
        unit="rtt",
        udp=True,
    )
    goals = [
        goal(
            "askew round trips per wall second >= 3x real loopback",
            ratio(rtt, STOCK, "askew"),
            3.0,
            at_most=False,
        ),
    ]
    print_goals(goals)
    write_json(
        args.json, "sockets", {"round_trip": rtt, "bulk": bulk, "udp_round_trip": udp}, goals
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
