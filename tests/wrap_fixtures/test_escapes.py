"""Tests that leave the event loop: a real socket, a thread, a subprocess."""

import asyncio
import socket
import sys
import threading


def test_echo_over_a_real_socket():
    # Made before the loop runs, so real (one made inside is simulated).
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)

    async def main():
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(a, b"ping\n")
        return await loop.sock_recv(b, 5)

    with a, b:
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
