"""Tests that serve and connect on loopback: they pass stock and wrapped
(where the process is one simulated host)."""

import asyncio
import socket


async def echo(reader, writer):
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


async def round_trip(reader, writer, payload=b"ping\n"):
    writer.write(payload)
    got = await reader.readexactly(len(payload))
    writer.close()
    await writer.wait_closed()
    return got


def test_echo_over_loopback_on_an_ephemeral_port():
    async def main():
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await round_trip(*await asyncio.open_connection("127.0.0.1", port))

    assert asyncio.run(main()) == b"ping\n"


def test_echo_over_a_socketpair():
    async def main():
        a, b = socket.socketpair()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), echo), a
        )
        got = await round_trip(*await asyncio.open_connection(sock=b))
        transport.close()
        return got

    assert asyncio.run(main()) == b"ping\n"


def test_echo_over_a_unix_socket(tmp_path):
    path = str(tmp_path / "echo.sock")

    async def main():
        server = await asyncio.start_unix_server(echo, path)
        async with server:
            return await round_trip(*await asyncio.open_unix_connection(path))

    assert asyncio.run(main()) == b"ping\n"


def test_a_client_times_out_against_a_server_that_never_answers():
    async def main():
        async def mute(reader, writer):
            await asyncio.sleep(3600)

        server = await asyncio.start_server(mute, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            await asyncio.wait_for(reader.read(1), 0.5)
        except TimeoutError:
            timed_out = True
        writer.close()
        server.close()
        return timed_out

    assert asyncio.run(main())
