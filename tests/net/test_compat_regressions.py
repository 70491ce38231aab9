# SPDX-License-Identifier: Apache-2.0
"""What the networking suites (docs/compatibility.md) found askew doing
unlike asyncio on Linux, each pinned by a test: executor work and
sendfile's file reads see no running loop, as on a worker thread or in the
kernel (aiohttp's suite runs blockbuster, which flags blocking calls where
a loop runs); a TLS server keeps asyncio's `_ssl_context` (websockets' test
helper reads it); TLS over AF_UNIX and over sock=."""

from __future__ import annotations

import asyncio
import io
import socket
from typing import Any

import pytest
from test_sockets import client, run_nodes
from test_sockets_wrap import Main, wrapped
from test_tls import PORT, client_context, server_context

from askew.errors import NondeterminismError


def _running_loop() -> Any:
    return asyncio.events._get_running_loop()


def test_executor_work_run_inline_sees_no_running_loop_as_on_a_worker_thread() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        seen = await loop.run_in_executor(None, _running_loop)
        # A socket made by the work is still the host's simulated one.
        kind = await loop.run_in_executor(None, lambda: type(socket.socket()).__name__)
        return seen, kind, _running_loop() is loop

    (seen, kind, back), _loop = wrapped(main, executor="inline")
    assert seen is None and back
    assert kind == "RawSocket"


class _Watched(io.BytesIO):
    """A file that notes the running loop at each read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.loops: list[Any] = []

    def read(self, n: int | None = -1) -> bytes:
        self.loops.append(_running_loop())
        return super().read(n)


def test_sendfile_reads_the_file_with_no_running_loop_as_the_kernel_does() -> None:
    content = bytes(range(256)) * 300

    async def main() -> Any:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        f = _Watched(content)
        sent = await asyncio.get_running_loop().sendfile(writer.transport, f)
        writer.close()
        server.close()
        return sent, f.loops

    (sent, loops), _loop = wrapped(main)
    assert sent == len(content)
    assert loops and all(loop is None for loop in loops)


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.read(100))
    await writer.drain()
    writer.close()


def test_a_tls_server_keeps_asyncios_ssl_context_serving_and_sockets() -> None:
    ctx = server_context()

    async def main() -> Any:
        tls = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=ctx)
        plain = await asyncio.start_server(_echo, "127.0.0.1", 0)
        seen = (tls._ssl_context, plain._ssl_context, tls._serving, tls._sockets)  # type: ignore[attr-defined]
        tls.close()
        plain.close()
        return seen, tls._serving, tls._sockets  # type: ignore[attr-defined]

    ((tls_ctx, plain_ctx, serving, sockets), after, gone), _loop = wrapped(main)
    assert tls_ctx is ctx and plain_ctx is None
    assert serving is True and len(sockets) == 1
    assert (after, gone) == (False, None)


def test_tls_over_a_unix_socket_and_over_a_listening_sock() -> None:
    async def main() -> Any:
        unix = await asyncio.start_unix_server(_echo, "/tmp/askew-tls.sock", ssl=server_context())
        r, w = await asyncio.open_unix_connection(
            "/tmp/askew-tls.sock", ssl=client_context(), server_hostname="node-0"
        )
        w.write(b"over unix")
        got = [await r.read(), unix._ssl_context is not None]  # type: ignore[attr-defined]
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        server = await asyncio.start_server(_echo, sock=listening, ssl=server_context())
        r, w = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context(), server_hostname="node-0"
        )
        w.write(b"over sock=")
        got += [await r.read(), server._ssl_context is not None]  # type: ignore[attr-defined]
        try:
            await asyncio.open_unix_connection("/tmp/askew-tls.sock", ssl=client_context())
        except ValueError as exc:
            got.append(str(exc))
        return got

    got, _loop = wrapped(main)
    assert got == [
        b"over unix",
        True,
        b"over sock=",
        True,
        "you have to pass server_hostname when using ssl",
    ]


def test_tls_client_over_a_connected_sock_in_a_world() -> None:
    async def talk(node: Any) -> Any:
        s = socket.socket()
        await asyncio.get_running_loop().sock_connect(s, ("10.0.0.1", PORT))
        r, w = await asyncio.open_connection(sock=s, ssl=client_context(), server_hostname="node-0")
        w.write(b"adopted")
        return await r.read()

    async def serve(node: Any) -> None:
        node.server = await asyncio.start_server(_echo, None, PORT, ssl=server_context())
        await asyncio.sleep(1e9)

    assert run_nodes(serve, client(talk))["result"] == b"adopted"


# -- real sockets made before the run (anyio's server_sock fixtures, websockets'
# and aiohttp's proxies on another thread's real loop) ---------------------------


def _refused_by_name(connect: Main, real: socket.socket) -> str:
    """The run's failure: the refusal is noted, so it fails the run even
    where the code under test catches it."""
    with pytest.raises(NondeterminismError) as refused:
        wrapped(connect)
    real.close()
    return str(refused.value)


def test_a_connect_to_a_real_listener_made_before_the_run_names_it_instead_of_refusing() -> None:
    real = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    real.bind(("127.0.0.1", 0))
    real.listen()
    port = real.getsockname()[1]
    message = _refused_by_name(lambda: asyncio.open_connection("127.0.0.1", port), real)
    assert f"connect to 127.0.0.1:{port}" in message
    assert "a real socket of this process" in message and f"{port})" in message


def test_a_blocking_connect_of_a_simulated_socket_to_a_real_listener_names_it() -> None:
    real = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    real.bind(("::", 0))  # the IPv6 wildcard takes IPv4 connects too
    real.listen()
    port = real.getsockname()[1]

    async def connect() -> None:
        with socket.socket() as sock:
            sock.connect(("127.0.0.1", port))

    assert "a real socket of this process" in _refused_by_name(connect, real)


def test_a_unix_connect_to_a_real_listener_made_before_the_run_names_it() -> None:
    real = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    real.bind(b"\0askew-compat-regressions")
    real.listen()
    message = _refused_by_name(
        lambda: asyncio.open_unix_connection("\0askew-compat-regressions"), real
    )
    assert "connect to unix:'\\x00askew-compat-regressions'" in message


def test_a_connect_nothing_listens_on_is_still_refused_as_linux_refuses_it() -> None:
    real = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    real.bind(("127.0.0.1", 0))  # bound, not listening: nothing to name
    port = real.getsockname()[1]

    async def main() -> None:
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)

    wrapped(main)
    real.close()


# -- abort() closes as asyncio's transport does on Linux (websockets' handshake
# timeout, aiohttp's test_stalled_parser_outlives_connection_lost) -------------


async def _abort_after(data: bytes, unread: bool) -> bytes | str:
    """A server that answers data and aborts; what the client reads: the
    bytes up to EOF, or the reset."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if unread:
            writer.transport.pause_reading()  # the request stays in the receive queue
            await asyncio.sleep(0.1)
        else:
            await reader.readexactly(len(b"request"))
        writer.write(data)
        writer.transport.abort()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"request")
    try:
        return await reader.read()
    except ConnectionResetError:
        return "reset"
    finally:
        writer.close()
        server.close()


def test_abort_with_nothing_unread_ends_with_a_fin_the_peer_reads_eof() -> None:
    # asyncio's abort() closes the socket; with no unread bytes Linux sends
    # a FIN, and what the window took before is still delivered.
    result, _loop = wrapped(lambda: _abort_after(b"response", unread=False))
    assert result == b"response"


def test_abort_with_unread_bytes_resets_the_connection_as_linux_close_does() -> None:
    result, _loop = wrapped(lambda: _abort_after(b"response", unread=True))
    assert result == "reset"


# -- the socket object's surface that blocking clients reach for (urllib and
# http.client in run_in_executor: websockets' legacy HTTP tests; anyio's
# from_socket(fd) and blocking TLS servers) ----------------------------------------


def test_a_simulated_socket_answers_so_type_and_reads_through_makefile_after_close() -> None:
    async def main() -> Any:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        kinds = [
            server.getsockopt(socket.SOL_SOCKET, name)
            for name in (socket.SO_TYPE, socket.SO_DOMAIN, socket.SO_ACCEPTCONN)
        ]
        client = socket.socket()
        client.connect(server.getsockname())
        conn, _peer = server.accept()
        client.sendall(b"line one\nrest")
        client.close()
        await asyncio.sleep(0.01)  # the bytes and the FIN arrive
        file = conn.makefile("rb")
        conn.close()  # as http.client: the file keeps the socket open
        read = [file.readline(), file.read()]
        file.close()
        server.close()
        return kinds, read, repr(conn)

    (kinds, read, closed), _loop = wrapped(main)
    assert kinds == [socket.SOCK_STREAM, socket.AF_INET, 1]
    assert read == [b"line one\n", b"rest"]
    assert "[closed]" in closed


def test_a_blocking_read_in_inline_executor_work_is_refused_naming_the_work() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        address = server.sockets[0].getsockname()

        def fetch() -> bytes:  # what urllib.request.urlopen does underneath
            with socket.create_connection(address) as sock:
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                return sock.makefile("rb").readline()

        await asyncio.get_running_loop().run_in_executor(None, fetch)

    with pytest.raises(NondeterminismError, match=r"recv_into\(\).*executor work .*fetch"):
        wrapped(main, executor="inline")


def test_blocking_tls_on_a_simulated_socket_is_refused_by_name() -> None:
    import ssl

    async def main() -> None:
        ssl.create_default_context().wrap_socket(socket.socket(), server_hostname="x")

    with pytest.raises(NondeterminismError, match=r"wrap_socket\(\) on a simulated socket"):
        wrapped(main)


def test_rebuilding_a_socket_from_a_simulated_sockets_fileno_is_refused_by_name() -> None:
    async def main() -> None:
        socket.socket(fileno=socket.socket().detach())

    with pytest.raises(NondeterminismError, match=r"socket\.socket\(fileno=-1\)"):
        wrapped(main)


def test_a_connect_cancelled_in_the_step_its_handshake_completes_closes_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # aiohttp's test_request_body_closed_on_cancellation: the server, which
    # accepted, must read EOF, as it does once asyncio closes the socket.
    from askew._net import endpoint as _endpoint

    async def main() -> bytes:
        got: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            got.set_result(await reader.read())
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        task = asyncio.create_task(asyncio.open_connection("127.0.0.1", port))
        established = _endpoint.Endpoint._established

        def then_cancel(ep: Any, peer: Any) -> None:
            established(ep, peer)
            task.cancel()  # before the connecting task runs on

        monkeypatch.setattr(_endpoint.Endpoint, "_established", then_cancel)
        with pytest.raises(asyncio.CancelledError):
            await task
        data = await asyncio.wait_for(got, 1)
        server.close()
        return data

    assert wrapped(main)[0] == b""


def test_a_real_socket_refused_at_the_tests_own_simulated_server_names_it() -> None:
    # websockets' legacy test_explicit_socket: the synchronous test body, run
    # between run_until_complete calls, connects a real socket.
    from askew._run import wrap as _wrap

    run = _wrap.WrappedRun("tests/test_x.py::test_x", 1)
    with _wrap.installed(run):
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(asyncio.start_server(lambda r, w: None, "127.0.0.1", 0))
        address = server.sockets[0].getsockname()
        with socket.socket() as real, pytest.raises(NondeterminismError) as refused:
            real.connect(address)
        with socket.socket() as real, pytest.raises(NondeterminismError):
            real.connect_ex(address)
        server.close()
        loop.close()
    assert "simulated server of this wrapped test" in str(refused.value)
    assert "connect" not in vars(socket.socket)  # the patch went with the test


def test_a_simulated_socket_closed_after_its_loop_closed_closes_quietly() -> None:
    # anyio's sock_or_fd_factory: a finalizer closes the socket after the
    # test's loop is gone; socket.close() never raises.
    async def main() -> list[socket.socket]:
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.socket()
        client.connect(server.getsockname())
        datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        datagram.bind(("127.0.0.1", 0))
        return [server, client, datagram]

    socks, loop = wrapped(main)
    assert loop.is_closed()
    for sock in socks:
        sock.close()
        assert "[closed]" in repr(sock)
