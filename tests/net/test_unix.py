# SPDX-License-Identifier: Apache-2.0
"""Simulated AF_UNIX stream sockets (askew/_net/, docs/sockets.md
"AF_UNIX"): paths and abstract names in the node's (or wrap mode's one
host's) own namespace, never the file system; as Linux at the edges."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import sys
from typing import Any

import pytest
from conftest import run_sim
from test_sockets_wrap import echo, events, wrapped

import askew


async def unix_round_trip(path: Any, payload: bytes = b"ping\n") -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(payload)
    got = await reader.readexactly(len(payload))
    writer.close()
    await writer.wait_closed()
    return got


def test_a_unix_server_and_client_talk_and_no_file_is_made(tmp_path: Any) -> None:
    path = str(tmp_path / "app.sock")

    async def main() -> Any:
        server = await asyncio.start_unix_server(echo, path)
        assert server.sockets[0].family == socket.AF_UNIX
        reader, writer = await asyncio.open_unix_connection(path)
        extra = (writer.get_extra_info("peername"), writer.get_extra_info("sockname"))
        writer.write(b"hello\n")
        line = await reader.readline()
        writer.close()
        server.close()
        return line, extra, server.sockets

    (line, extra, _), loop = wrapped(main)
    assert line == b"hello\n"
    assert extra == (path, "")  # as Linux: the client is unbound
    assert not os.path.exists(path)
    assert any(f"connect unix: -> unix:{path}" in e for e in events(loop))


def test_an_abstract_name_works_and_shows_as_at_in_the_log() -> None:
    async def main() -> Any:
        server = await asyncio.get_running_loop().create_unix_server(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), echo), "\0askew-test"
        )
        got = await unix_round_trip("\0askew-test")
        name = server.sockets[0].getsockname()
        server.close()
        return got, name

    (got, name), loop = wrapped(main)
    assert got == b"ping\n" and name == b"\0askew-test"  # bytes, as the socket module gives
    assert any("unix:@askew-test" in e for e in events(loop))


def test_binding_a_path_twice_is_eaddrinuse() -> None:
    async def main() -> Any:
        server = await asyncio.start_unix_server(echo, "/run/app.sock")
        with pytest.raises(OSError) as twice:
            await asyncio.start_unix_server(echo, "/run/app.sock")
        raw = socket.socket(socket.AF_UNIX)
        with pytest.raises(OSError) as raw_twice:
            raw.bind("/run/app.sock")
        server.close()
        again = await asyncio.start_unix_server(
            echo, "/run/app.sock"
        )  # asyncio unlinks a stale one
        again.close()
        return twice.value, raw_twice.value.errno

    twice, raw_errno = wrapped(main)[0]
    assert twice.errno == raw_errno == errno.EADDRINUSE
    assert str(twice) == "[Errno 98] Address '/run/app.sock' is already in use"


def test_connecting_to_a_missing_path_or_a_closed_server_fails_as_linux() -> None:
    async def main() -> Any:
        with pytest.raises(FileNotFoundError) as missing:
            await asyncio.open_unix_connection("/run/none.sock")
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_unix_connection("\0none")  # abstract: nothing to find
        server = await asyncio.start_unix_server(echo, "/run/app.sock")
        server.close()
        await server.wait_closed()
        with pytest.raises(OSError) as closed:
            await asyncio.open_unix_connection("/run/app.sock")
        return missing.value.errno, type(closed.value)

    missing, closed = wrapped(main)[0]
    assert missing == errno.ENOENT
    # Before 3.13 the socket file outlives its server (ECONNREFUSED); from
    # 3.13 close() removes it (ENOENT).
    expected = FileNotFoundError if sys.version_info >= (3, 13) else ConnectionRefusedError
    assert closed is expected


def test_reading_after_the_peer_closed_gives_eof_and_closing_twice_is_harmless() -> None:
    async def main() -> Any:
        async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"bye")
            writer.close()
            writer.close()

        server = await asyncio.start_unix_server(hang_up, "/run/a.sock")
        reader, writer = await asyncio.open_unix_connection("/run/a.sock")
        got = await reader.read()
        again = await reader.read()
        writer.close()
        writer.close()
        await writer.wait_closed()
        server.close()
        return got, again

    assert wrapped(main)[0] == (b"bye", b"")


def test_raw_unix_sockets_and_sock_arguments() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("/run/raw.sock")
        listener.listen()
        client = socket.socket(socket.AF_UNIX)
        await loop.sock_connect(client, "/run/raw.sock")
        conn, _addr = await loop.sock_accept(listener)
        await loop.sock_sendall(client, b"raw")
        first = await loop.sock_recv(conn, 10)
        reader, writer = await asyncio.open_unix_connection(sock=client)
        _conn_reader, conn_writer = await asyncio.open_connection(sock=conn)
        conn_writer.write(b"adopted\n")
        line = await reader.readline()
        listener.close()
        server_sock = socket.socket(socket.AF_UNIX)
        server_sock.bind("\0srv")
        server = await asyncio.start_unix_server(echo, sock=server_sock)
        via_sock = await unix_round_trip("\0srv")
        for w in (writer, conn_writer):
            w.close()
        server.close()
        return first, line, via_sock, conn.family

    assert wrapped(main)[0] == (b"raw", b"adopted\n", b"ping\n", socket.AF_UNIX)


def test_each_node_has_its_own_unix_namespace() -> None:
    async def body(world: askew.World) -> None:
        async def server(node: Any) -> None:
            await asyncio.start_unix_server(echo, "/run/db.sock")
            node.got = await unix_round_trip("/run/db.sock")
            await asyncio.sleep(1e9)

        async def other(node: Any) -> None:
            with pytest.raises(FileNotFoundError):
                await asyncio.open_unix_connection("/run/db.sock")
            node.ok = True

        s = world.spawn(server)
        await asyncio.sleep(0.1)
        o = world.spawn(other)
        await asyncio.sleep(1)
        assert s.got == b"ping\n" and o.ok
        assert world.net.stats()["tcp_accepts"] == 1

    run_sim(body)


def test_a_unix_connection_from_the_test_body_is_refused() -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(askew.NondeterminismError, match="only nodes"):
            await asyncio.open_unix_connection("/run/x.sock")

    with pytest.raises(askew.SimulationFailure):
        run_sim(body)
