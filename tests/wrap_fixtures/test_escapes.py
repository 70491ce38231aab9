"""Tests that leave the event loop: a real socket, a thread, a subprocess."""

import asyncio
import sys
import threading


def test_echo_over_a_real_socket():
    async def main():
        async def echo(reader, writer):
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"ping\n")
            line = await reader.readline()
            writer.close()
            await writer.wait_closed()
        return line

    assert asyncio.run(main()) == b"ping\n"


def test_background_thread_sets_an_event():
    async def main():
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        threading.Thread(target=lambda: loop.call_soon_threadsafe(done.set)).start()
        await asyncio.wait_for(done.wait(), timeout=5)

    asyncio.run(main())


def test_subprocess_exit_code():
    async def main():
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        return await proc.wait()

    assert asyncio.run(main()) == 0
