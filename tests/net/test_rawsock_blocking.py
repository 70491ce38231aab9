# SPDX-License-Identifier: Apache-2.0
"""A simulated socket's blocking methods (docs/sockets.md, "Low-level
sockets"): what Linux does inside the call happens at once; what would have
to wait is EAGAIN/EINPROGRESS on a non-blocking socket and refused on a
blocking one, since it would stall virtual time."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

import pytest
from conftest import json_in_hash_seeds
from test_sockets import client, raw_upper_server, run_nodes
from test_sockets_wrap import events, wrapped

from askew.errors import NondeterminismError


async def upper(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data.upper())
        await writer.drain()
    writer.close()


async def until_readable(s: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(s, lambda: ready.done() or ready.set_result(None))
    await ready
    loop.remove_reader(s)


def test_a_wrapped_blocking_connect_to_a_loopback_listener_is_accepted_at_once() -> None:
    async def main() -> Any:
        server = await asyncio.start_server(upper, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            with socket.socket() as s:
                assert s.gettimeout() is None and s.getblocking()
                s.connect(("127.0.0.1", port))  # no await: over inside the call
                peer = s.getpeername()
                s.sendall(b"hello")
                await until_readable(s)
                got = s.recv(100)
        return port, peer, got

    (port, peer, got), _ = wrapped(main)
    assert peer == ("127.0.0.1", port) and got == b"HELLO"


def test_a_blocking_accept_takes_the_backlog_and_recv_returns_what_has_arrived() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        addr = listener.getsockname()
        c = socket.socket()
        c.connect(addr)
        conn, peer = listener.accept()  # the kernel had it in the backlog
        await loop.sock_sendall(c, b"ping")
        await until_readable(conn)
        got = conn.recv(2) + conn.recv_into(bytearray(0)).to_bytes(1, "big")
        rest = bytearray(10)
        n = conn.recv_into(rest)
        c.shutdown(socket.SHUT_WR)
        await until_readable(conn)
        eof = conn.recv(10)
        same = peer == c.getsockname()  # before close(): then it is EBADF, as Linux
        for s in (c, conn, listener):
            s.close()
        return same, conn.gettimeout(), got, bytes(rest[:n]), eof

    (same, timeout, got, rest, eof), _ = wrapped(main)
    assert same and timeout is None
    assert got == b"pi\x00" and rest == b"ng" and eof == b""


def test_non_blocking_calls_raise_what_linux_raises() -> None:
    async def main() -> Any:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        with pytest.raises(BlockingIOError) as empty:
            listener.accept()
        c = socket.socket()
        c.setblocking(False)
        c.connect(listener.getsockname())  # loopback: over at once even so
        with pytest.raises(BlockingIOError) as nothing:
            c.recv(10)
        refused = socket.socket()
        refused.bind(("127.0.0.2", 0))
        code = refused.connect_ex(("127.0.0.1", 1))
        for s in (c, listener, refused):
            s.close()
        return empty.value.errno, nothing.value.errno, code

    (empty, nothing, code), loop = wrapped(main)
    assert empty == errno.EAGAIN and nothing == errno.EAGAIN
    assert code == errno.ECONNREFUSED
    assert any("refuse 127.0.0.2:32770 -> 127.0.0.1:1" in e for e in events(loop))


def test_a_blocking_call_that_would_wait_is_refused_saying_why() -> None:
    async def main() -> None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with pytest.raises(NondeterminismError, match=r"no connection is waiting.*sock_accept"):
            listener.accept()
        c = socket.socket()
        c.connect(listener.getsockname())
        with pytest.raises(NondeterminismError, match=r"nothing has arrived yet.*sock_recv"):
            c.recv(10)

    with pytest.raises(NondeterminismError):  # a caught refusal still fails the run
        wrapped(main)


def test_a_unix_blocking_connect_is_at_once_and_errors_as_linux() -> None:
    async def main() -> Any:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind("/tmp/askew-blocking.sock")
        listener.listen()
        c = socket.socket(socket.AF_UNIX)
        c.connect("/tmp/askew-blocking.sock")
        conn, _ = listener.accept()
        sent = c.send(b"x" * 10)
        conn.close()
        missing = socket.socket(socket.AF_UNIX)
        with pytest.raises(FileNotFoundError):
            missing.connect("/tmp/askew-nobody.sock")
        return sent, c.getpeername()

    sent, peer = wrapped(main)[0]
    assert sent == 10 and peer == "/tmp/askew-blocking.sock"


def test_in_a_world_a_non_blocking_connect_to_another_node_completes_later() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        s = socket.socket()
        s.setblocking(False)
        with pytest.raises(BlockingIOError) as inprogress:
            s.connect(("node-0", 7))
        with pytest.raises(OSError) as already:
            s.connect(("node-0", 7))
        writable = loop.create_future()
        loop.add_writer(s, lambda: writable.done() or writable.set_result(None))
        await writable
        loop.remove_writer(s)
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        s.sendall(b"abc")
        await until_readable(s)
        got = s.recv(10)
        return inprogress.value.errno, already.value.errno, err, got

    result = run_nodes(raw_upper_server, client(talk))["result"]
    assert result == (errno.EINPROGRESS, errno.EALREADY, 0, b"ABC")


def test_in_a_world_a_blocking_connect_to_another_node_is_refused() -> None:
    async def talk(node: Any) -> None:
        socket.socket().connect(("node-0", 7))

    with pytest.raises(NondeterminismError, match=r"takes the link's latency.*sock_connect"):
        run_nodes(raw_upper_server, client(talk))


def test_in_a_world_a_node_connects_to_itself_at_once_and_a_failed_connect_is_so_error() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        listener = socket.socket()
        listener.bind(("0.0.0.0", 9))
        listener.listen()
        s = socket.socket()
        s.connect(("10.0.0.2", 9))  # its own address
        conn, _ = listener.accept()
        s.sendall(b"hi")
        await until_readable(conn)
        got = conn.recv(10)
        r = socket.socket()
        r.setblocking(False)
        with pytest.raises(BlockingIOError):
            r.connect(("node-0", 99))  # another node, nobody listening
        writable = loop.create_future()
        loop.add_writer(r, lambda: writable.done() or writable.set_result(None))
        await writable
        loop.remove_writer(r)
        return got, r.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)

    got, err = run_nodes(raw_upper_server, client(talk))["result"]
    assert got == b"hi" and err == errno.ECONNREFUSED


_SCENARIO = """
import asyncio, json, socket, sys
sys.path.insert(0, sys.argv[1])
import askew
from test_rawsock_blocking import until_readable

hashes = []

async def node_main(node):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 5))
    listener.listen()
    for i in range(5):
        c = socket.socket()
        c.connect(("127.0.0.1", 5))
        conn, _ = listener.accept()
        c.sendall(b"%d," % i * 3000)
        await until_readable(conn)
        conn.recv(100)
        c.close()
        conn.close()

async def body(world):
    world.net.configure(loss=0.1)
    world.spawn(node_main)
    await asyncio.sleep(30)
    hashes.append([world.log.hash, world.net.stats()])

for seed in (1, 2):
    askew.simulate(seed=seed, iterations=1)(body)()
print(json.dumps(hashes))
"""


def test_blocking_calls_give_the_same_trace_across_processes_and_hash_seeds() -> None:
    first, second = json_in_hash_seeds(_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] != first[1]  # and the seed does decide


def test_a_send_takes_what_fits_the_buffer_and_a_sendall_past_it_waits() -> None:
    async def main() -> Any:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        c = socket.socket()
        c.connect(listener.getsockname())
        c.setblocking(False)
        sent = []
        with pytest.raises(BlockingIOError) as full:
            while True:  # the peer's window, then the send buffer, fill
                sent.append(c.send(b"x" * 200_000))
        c.setblocking(True)
        with pytest.raises(NondeterminismError, match="do not fit the send buffer"):
            c.sendall(b"z")
        seen.append((sent, full.value.errno))

    seen: list[Any] = []
    with pytest.raises(NondeterminismError):  # a caught refusal still fails the run
        wrapped(main)
    assert seen == [([65536, 65536], errno.EAGAIN)]


def test_blocking_datagram_calls_answer_at_once_when_a_datagram_is_queued() -> None:
    async def main() -> Any:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
        v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        v.connect(u.getsockname())
        v.send(b"one")
        sent = v.sendto(b"two", u.getsockname())
        await until_readable(u)
        data, addr = u.recvfrom(10)
        await until_readable(u)
        buf = bytearray(10)
        n, _ = u.recvfrom_into(buf)
        u.setblocking(False)
        with pytest.raises(BlockingIOError):
            u.recv(10)
        return data, addr == v.getsockname(), bytes(buf[:n]), sent

    assert wrapped(main)[0] == (b"one", True, b"two", 3)


def test_a_stream_bind_to_port_zero_picks_the_ephemeral_port_at_once() -> None:
    async def main() -> Any:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            bound = s.getsockname()
            s.listen()
            return bound, s.getsockname()

    bound, listening = wrapped(main)[0]
    assert bound == listening == ("127.0.0.1", 32768)
