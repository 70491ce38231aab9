"""Sockets: the same asyncio client and server on real loopback, askew, simloom and simloop.

The same client and server coroutines (asyncio streams, and a
`DatagramProtocol` pair for UDP) run on every side:

- round trip: a client writes `ping\\n` and reads the server's `pong\\n`, N times
  on one connection (wall ns per round trip);
- bulk: a client writes N bytes in 64 KiB writes and the server reads them to
  EOF (wall ns per KiB, throughput in MiB/s);
- UDP round trip: a client sends a `ping` datagram to an echo endpoint and
  waits for the echo, N times (wall ns per round trip).

Stock asyncio talks over real 127.0.0.1 sockets; askew runs one world with a
server node and a client node (askew/_net/: each segment crosses the C
network with the default 1-10 ms virtual latency, which costs no wall time);
simloom 0.5 and simloop 0.2 (3.12+) run one simulation per run with a server
host and a client host at the same latency (bench/_sock_peers.py). Every
simulated side builds its world afresh on each run, setup included.

The round-trip table has two more sides, the floor: the same ping loop and
pong server over an in-memory transport pair whose write() hands the bytes
to the peer protocol with one `loop.call_soon`, with asyncio's own
StreamReader, StreamWriter and StreamReaderProtocol on top, once on the stock
loop and once on askew's (`askew.run`). That is what the streams and the loop
cost with a transport that costs nothing: askew's side, which adds a network
to the same loop, cannot beat `floor, askew loop`, so that row's ratio to
loopback is the most the 3x goal can get.

Read the `vs` column as "times cheaper than stock asyncio"; the goals ask
askew for >= 3x the round trips per wall second of real loopback and >= 10x
those of simloom and of simloop.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import Any

from _harness import (
    Factory,
    Side,
    askew_simulate,
    compare,
    goal,
    parser,
    peers_note,
    print_goals,
    print_header,
    print_table,
    ratio,
    scaled,
    write_json,
)
from _sock_peers import PORT, SEED, simloom_side, simloop_side

CHUNK = 64 * 1024
STOCK = "stock asyncio (loopback)"
FLOOR_NOTE = "floor: streams over a zero-cost transport"
FLOOR_STOCK = "floor, stock loop"
FLOOR_ASKEW = "floor, askew loop"


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
    return await ping(*await asyncio.open_connection(host, port), n)


async def ping(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> int:
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
            await serve(handler, None, PORT)
            await asyncio.sleep(1e9)

        async def client_node(node) -> None:
            done.append(await client("server", PORT, n))

        async def body(world) -> None:
            world.spawn(server_node, name="server")
            world.spawn(client_node)
            while not done:
                await asyncio.sleep(0.5)

        test = simulate(seed=SEED, iterations=1)(body)

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


async def serve(handler: Any, host: str | None, port: int) -> None:
    """Start a simulated side's server on (host, port) and return: a streams
    handler's TCP server, or the UDP echo endpoint when `handler` is UdpEcho
    (host None binds every address)."""
    if handler is UdpEcho:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(UdpEcho, local_addr=(host or "0.0.0.0", port))
    else:
        await asyncio.start_server(handler, host, port)


class MemoryTransport(asyncio.Transport):
    """One end of an in-memory connection that costs nothing: write() hands
    the bytes to the other end's protocol with one `loop.call_soon`, and
    write_eof()/close() its eof_received the same way. No buffer, no flow
    control, no copy beyond the bytes() a real transport makes too."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self._loop = loop
        self._protocol = protocol
        self.peer: MemoryTransport | None = None
        self._eof_sent = False
        self._closing = False

    def write(self, data: Any) -> None:
        assert self.peer is not None
        self._loop.call_soon(self.peer._protocol.data_received, bytes(data))

    def write_eof(self) -> None:
        assert self.peer is not None
        if not self._eof_sent:
            self._eof_sent = True
            self._loop.call_soon(self.peer._protocol.eof_received)

    def can_write_eof(self) -> bool:
        return True

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self.write_eof()
        self._loop.call_soon(self._protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self._closing

    def pause_reading(self) -> None:
        pass  # the ping loop never lets 128 KiB pile up unread

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def memory_connection(
    handler: Any,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A client's (reader, writer) connected over MemoryTransport to a server
    running `handler`, built as asyncio.open_connection and start_server build
    theirs (StreamReaderProtocol on both ends)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(loop=loop)
    client = asyncio.StreamReaderProtocol(reader, loop=loop)
    server = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), handler, loop=loop)
    client_end = MemoryTransport(loop, client)
    server_end = MemoryTransport(loop, server)
    client_end.peer, server_end.peer = server_end, client_end
    server.connection_made(server_end)
    client.connection_made(client_end)
    return reader, asyncio.StreamWriter(client_end, client, reader, loop)


async def floor_ping(n: int) -> int:
    return await ping(*memory_connection(pong_server), n)


def floor_side(run_loop: Any, n: int) -> Factory:
    """The ping loop over MemoryTransport, one fresh loop per run (`run_loop`
    is asyncio.run or askew.run)."""

    def factory():
        def run() -> int:
            return int(run_loop(floor_ping(n)))

        return run

    return factory


def askew_run(coro: Any) -> Any:
    import askew  # askew's own side: an import error is a failure, never "n/a"

    return askew.run(coro, seed=SEED)


def side_by_side(
    title: str,
    workload: tuple,
    repeats: int,
    *,
    unit: str,
    udp: bool = False,
    extra: tuple[Side, ...] = (),
) -> list:
    """Run `workload` (server handler, client, size) on every side; print the table."""
    handler, client, size = workload
    served = functools.partial(serve, handler)
    sides = [
        Side(STOCK, udp_stock_side(size) if udp else stock_side(*workload)),
        Side("askew", askew_side(*workload)),
        Side("simloom", simloom_side(served, client, size)),
        Side("simloop", simloop_side(served, client, size)),
        *extra,
    ]
    results = compare(sides, repeats=repeats)
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
        extra=(
            Side(FLOOR_STOCK, floor_side(asyncio.run, n), FLOOR_NOTE),
            Side(FLOOR_ASKEW, floor_side(askew_run, n), FLOOR_NOTE),
        ),
    )
    bulk = side_by_side(
        f"bulk transfer, {n_bytes // 2**20} MiB in 64 KiB writes",
        (sink_server, bulk_client, n_bytes),
        repeats,
        unit="KiB",
    )
    udp = side_by_side(
        f"UDP request/response, {n:,} datagram round trips",
        (UdpEcho, udp_ping_client, n),
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
        *(
            goal(
                f"askew round trips per wall second >= 10x {peer}",
                ratio(rtt, peer, "askew"),
                10.0,
                at_most=False,
            )
            for peer in ("simloom", "simloop")
        ),
    ]
    note = peers_note()
    if note:
        print(f"  note: {note}")
    print_goals(goals)
    write_json(
        args.json, "sockets", {"round_trip": rtt, "bulk": bulk, "udp_round_trip": udp}, goals
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
