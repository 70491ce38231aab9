# SPDX-License-Identifier: Apache-2.0
"""Sockets in wrap mode (askew/_net/host.py's Host, docs/wrapping.md): the
process is one host reached on loopback; socketpair(), sock=, IPv6
loopback and sendfile's fallback, there and in a world's nodes."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim

import askew
from askew._loop.config import RunConfig
from askew._run import wrap as _wrap
from askew._world.log import event_from_entry
from askew.errors import NondeterminismError

Main = Callable[[], Coroutine[Any, Any, Any]]


def wrapped(
    main: Main, nodeid: str = "tests/test_x.py::test_x", base: int = 1, executor: str = "threads"
) -> Any:
    """asyncio.run(main()) as a wrapped test runs it; (result, its loop)."""
    run = _wrap.WrappedRun(nodeid, base, RunConfig(executor=executor))

    async def noted() -> Any:
        try:
            return await main()
        finally:  # a closed loop lets go of its log (SimLoop.close)
            loop = asyncio.get_running_loop()
            _logs[id(loop)] = events(loop)

    with _wrap.installed(run):
        result = asyncio.run(noted())
    assert len(run.loops) == 1
    return result, run.loops[0]


_logs: dict[int, list[str]] = {}  # a wrapped run's log, noted as its main() ended


def events(loop: Any) -> list[str]:
    if loop.is_closed():
        return _logs[id(loop)]
    return [str(event_from_entry(e)) for e in loop._log_recent(1000)]


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


async def round_trip(host: str, port: int, payload: bytes = b"ping\n") -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(payload)
    got = await reader.readexactly(len(payload))
    writer.close()
    await writer.wait_closed()
    return got


# ---- wrap mode is one host ------------------------------------------------------------------


def test_a_wrapped_loopback_server_and_client_talk_in_virtual_time() -> None:
    async def main() -> Any:
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            got = [await round_trip(h, port) for h in ("127.0.0.1", "localhost")]
            got.append(await round_trip(socket.gethostname(), port))
        return port, got

    (port, got), loop = wrapped(main)
    assert port == 32768  # the first ephemeral port, as every run
    assert got == [b"ping\n"] * 3
    assert loop.time() > 0  # the link's latency, in virtual time
    log = events(loop)
    assert any("connect 127.0.0.1:32769 -> 127.0.0.1:32768" in e for e in log)
    assert any("accept 127.0.0.1:32768 <- 127.0.0.1:32769" in e for e in log)


def test_wrapped_loopback_takes_no_time_and_a_write_past_the_window_arrives_in_pieces() -> None:
    async def main() -> Any:
        sizes: list[int] = []

        class Count(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                sizes.append(len(data))

        loop = asyncio.get_running_loop()
        server = await loop.create_server(Count, "::1", 9)
        _reader, writer = await asyncio.open_connection("::1", 9)
        first = (await asyncio.sleep(0), await asyncio.sleep(0), list(sizes))[2]
        writer.write(b"x" * 100)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        at_once = list(sizes)  # in the peer's queue before write() returned, as Linux
        for _ in range(5):
            writer.write(b"x" * 200_000)
            await writer.drain()
        await asyncio.sleep(0.1)
        server.close()
        return first, at_once, sizes

    first, at_once, sizes = wrapped(main)[0]
    assert first == [] and at_once == [100]
    assert sum(sizes) == 1_000_100 and max(sizes) <= 65536  # the window cuts each write


def test_a_remote_address_or_name_stays_refused_in_wrap_mode() -> None:
    for call, expected in (
        (lambda: asyncio.open_connection("192.0.2.1", 80), "create_connection('192.0.2.1', 80)"),
        (lambda: asyncio.open_connection("example.com", 80), "getaddrinfo('example.com')"),
        (lambda: asyncio.start_server(echo, "192.0.2.1", 80), "create_server('192.0.2.1', 80)"),
    ):

        async def main(call: Any = call) -> None:
            await call()

        with pytest.raises(NondeterminismError) as info:
            wrapped(main)
        assert str(info.value).startswith(expected)


def test_a_bare_loop_outside_wrap_mode_still_refuses_sockets() -> None:
    async def main() -> None:
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.raises(NondeterminismError, match="create_connection"):
        askew.run(main())


def test_udp_on_loopback_works_wrapped() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        got: asyncio.Future[Any] = loop.create_future()

        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport: Any) -> None:
                self.transport = transport

            def datagram_received(self, data: bytes, addr: Any) -> None:
                self.transport.sendto(data.upper(), addr)

        class Client(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: Any) -> None:
                got.set_result((data, addr))

        server, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 5353))
        client, _ = await loop.create_datagram_endpoint(Client, remote_addr=("localhost", 5353))
        client.sendto(b"hi")
        answer = await got
        client.close()
        server.close()
        return answer

    answer, _loop = wrapped(main)
    assert answer == (b"HI", ("127.0.0.1", 5353))


# ---- socketpair() ---------------------------------------------------------------------------


def test_socketpair_gives_connected_simulated_unix_stream_sockets() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        assert a.fileno() == -1 and a.family == socket.AF_UNIX and a.type == socket.SOCK_STREAM
        assert isinstance(a, socket.socket)
        await loop.sock_sendall(a, b"one")
        first = await loop.sock_recv(b, 10)
        ready = loop.create_future()
        loop.add_reader(b, ready.set_result, None)
        await loop.sock_sendall(a, b"two")
        await ready
        loop.remove_reader(b)
        second = await loop.sock_recv(b, 10)
        a.close()
        a.close()  # twice: harmless, as a real socket's
        after = await loop.sock_recv(b, 10)  # the peer closed: EOF
        b.close()
        with pytest.raises(OSError) as bad:
            await loop.sock_recv(b, 10)
        return first, second, after, bad.value.errno

    result, loop = wrapped(main)
    assert result == (b"one", b"two", b"", errno.EBADF)
    assert any("socketpair #1" in e for e in events(loop))


def test_socketpair_ends_become_transports_with_sock() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        await loop.sock_sendall(a, b"early ")  # before b has a transport
        server = Recorder()
        transport, _ = await loop.connect_accepted_socket(lambda: server, a)
        reader, writer = await asyncio.open_connection(sock=b)
        assert writer.get_extra_info("socket") is b
        transport.write(b"hello")
        transport.write_eof()
        got = await reader.read()
        writer.write(b"back")
        writer.close()
        await server.lost
        return got, bytes(server.data)

    (got, back), _loop = wrapped(main)
    assert (got, back) == (b"early hello", b"back")


def test_socketpair_of_other_families_fails_as_linux() -> None:
    async def main() -> int:
        with pytest.raises(OSError) as info:
            socket.socketpair(socket.AF_INET)
        return int(info.value.errno)

    assert wrapped(main)[0] == errno.EOPNOTSUPP


def test_socketpair_in_a_node_is_simulated_too() -> None:
    async def body(world: askew.World) -> None:
        async def node_code(node: Any) -> None:
            loop = asyncio.get_running_loop()
            a, b = socket.socketpair()
            reader, writer = await asyncio.open_connection(sock=a)
            await loop.sock_sendall(b, b"x\n")
            node.line = await reader.readline()
            writer.close()

        n = world.spawn(node_code)
        await asyncio.sleep(1)
        assert n.line == b"x\n"
        assert any("socketpair #1" in str(e) for e in world.log)

    run_sim(body)


# ---- sock= ---------------------------------------------------------------------------------


def test_the_happy_eyeballs_path_raw_connect_then_create_connection_sock_works() -> None:
    # What aiohappyeyeballs does for aiohttp's client: a socket per address,
    # loop.sock_connect, then create_connection(sock=...).
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(echo, None, 8080)
        infos = await loop.getaddrinfo("localhost", 8080, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        await loop.sock_connect(sock, address)
        reader = asyncio.StreamReader()
        transport, _ = await loop.create_connection(
            lambda: asyncio.StreamReaderProtocol(reader), sock=sock
        )
        transport.write(b"via sock=\n")
        line = await reader.readline()
        peer = transport.get_extra_info("peername")
        transport.close()
        server.close()
        return line, peer, [s.getsockname() for s in server.sockets]

    line, peer, _ = wrapped(main)[0]
    assert (line, peer) == (b"via sock=\n", ("127.0.0.1", 8080))


def test_aiohappyeyeballs_itself_connects_over_ipv6_or_ipv4_loopback() -> None:
    aiohappyeyeballs = pytest.importorskip("aiohappyeyeballs")

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(echo, "127.0.0.1", 8080)  # IPv4 only
        infos = await loop.getaddrinfo("::1", 8080, type=socket.SOCK_STREAM)
        infos += await loop.getaddrinfo("localhost", 8080, type=socket.SOCK_STREAM)
        sock = await aiohappyeyeballs.start_connection(infos, happy_eyeballs_delay=0.25)
        reader, writer = await asyncio.open_connection(sock=sock)
        writer.write(b"ping\n")
        got = await reader.readline()
        writer.close()
        server.close()
        return got, sock.family

    assert wrapped(main)[0] == (b"ping\n", socket.AF_INET)  # ::1 refused, 127.0.0.1 taken


def test_create_server_takes_a_listening_raw_socket() -> None:
    async def main() -> Any:
        listener = socket.socket(socket.AF_INET6)
        listener.bind(("::1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        server = await asyncio.start_server(echo, sock=listener)
        got = await round_trip("::1", port)
        server.close()
        return got, listener.getsockname()

    got, name = wrapped(main)[0]
    assert got == b"ping\n" and name == ("::1", 32768, 0, 0)


def test_create_datagram_endpoint_takes_a_raw_udp_socket() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 7000))
        got: asyncio.Future[bytes] = loop.create_future()

        class Take(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: Any) -> None:
                got.set_result(data)

        transport, _ = await loop.create_datagram_endpoint(Take, sock=sock)
        sender, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, remote_addr=("127.0.0.1", 7000)
        )
        sender.sendto(b"dgram")
        data = await got
        transport.close()
        sender.close()
        return data

    assert wrapped(main)[0] == b"dgram"


def test_a_real_socket_given_as_sock_is_refused_by_name() -> None:
    real = socket.socket()  # made before the loop runs: real
    try:
        for call, name in (
            (lambda: asyncio.open_connection(sock=real), "create_connection(sock=...)"),
            (lambda: asyncio.start_server(echo, sock=real), "create_server(sock=...)"),
            (
                lambda: asyncio.get_running_loop().connect_accepted_socket(asyncio.Protocol, real),
                "connect_accepted_socket(sock=...)",
            ),
        ):

            async def main(call: Any = call) -> None:
                await call()

            with pytest.raises(NondeterminismError, match=r"real socket") as info:
                wrapped(main)
            assert str(info.value).startswith(name)
    finally:
        real.close()


def test_host_and_sock_together_fail_as_asyncio() -> None:
    async def main() -> None:
        a, _b = socket.socketpair()
        with pytest.raises(ValueError, match="host/port and sock"):
            await asyncio.open_connection("localhost", 1, sock=a)
        with pytest.raises(ValueError, match="A Stream Socket was expected"):
            await asyncio.get_running_loop().create_connection(
                asyncio.Protocol, sock=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            )

    wrapped(main)


# ---- IPv6 loopback -------------------------------------------------------------------------


def test_getaddrinfo_answers_ipv6_loopback_as_decided() -> None:
    async def main() -> Any:
        loop = asyncio.get_running_loop()
        stream = socket.SOCK_STREAM
        return [
            [i[4] for i in await loop.getaddrinfo(h, 80, family=f, type=stream)]
            for h, f in (
                ("localhost", 0),
                ("localhost", socket.AF_INET6),
                ("::1", 0),
                (None, 0),
            )
        ] + [[i[4] for i in socket.getaddrinfo(None, 80, 0, stream, 0, socket.AI_PASSIVE)]]

    assert wrapped(main)[0] == [
        [("127.0.0.1", 80)],  # AF_UNSPEC: IPv4 only (docs/sockets.md says why)
        [("::1", 80, 0, 0)],
        [("::1", 80, 0, 0)],
        [("::1", 80, 0, 0), ("127.0.0.1", 80)],  # glibc sorts ::1 first (RFC 3484)
        [("0.0.0.0", 80), ("::", 80, 0, 0)],
    ]


def test_a_dual_stack_server_is_reached_on_both_loopbacks_and_families_stay_apart() -> None:
    async def main() -> Any:
        server = await asyncio.start_server(echo, None, 8000)
        names = [s.getsockname() for s in server.sockets]
        got = [await round_trip(h, 8000) for h in ("127.0.0.1", "::1")]
        v4_only = await asyncio.start_server(echo, "127.0.0.1", 8001)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("::1", 8001)
        v6 = await asyncio.start_server(echo, "::1", 8001)  # no clash across families
        got.append(await round_trip("::1", 8001))
        with pytest.raises(OSError) as clash:
            await asyncio.start_server(echo, "::", 8001)
        for s in (server, v4_only, v6):
            s.close()
        return names, got, clash.value.errno

    names, got, code = wrapped(main)[0]
    assert names == [("0.0.0.0", 8000), ("::", 8000, 0, 0)]
    assert got == [b"ping\n"] * 3 and code == errno.EADDRINUSE


def test_ipv6_loopback_reaches_a_node_itself_and_node_addresses_stay_ipv4() -> None:
    async def body(world: askew.World) -> None:
        async def node_code(node: Any) -> None:
            server = await asyncio.start_server(echo, "::1", 7)
            node.got = await round_trip("::1", 7)
            with pytest.raises(socket.gaierror):
                socket.getaddrinfo("node-0", 7, socket.AF_INET6)
            server.close()

        n = world.spawn(node_code)
        await asyncio.sleep(1)
        assert n.got == b"ping\n"

    run_sim(body)


# ---- sendfile ------------------------------------------------------------------------------


def test_sendfile_and_sock_sendfile_fall_back_to_sending(tmp_path: Any) -> None:
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)) * 400)  # 102,400 bytes: past the high-water mark

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(echo, "127.0.0.1", 9)
        reader, writer = await asyncio.open_connection("127.0.0.1", 9)
        with open(path, "rb") as f:
            sent = await loop.sendfile(writer.transport, f, 100, 50_000)
            where = f.tell()
        back = await reader.readexactly(sent)
        a, b = socket.socketpair()
        with open(path, "rb") as f:
            sent2 = await loop.sock_sendfile(a, f)
        a.close()
        received = bytearray()
        while chunk := await loop.sock_recv(b, 65536):
            received += chunk
        with open(path) as text, pytest.raises(ValueError, match="binary mode"):
            await loop.sendfile(writer.transport, text)
        writer.close()
        server.close()
        return sent, where, back, sent2, bytes(received)

    sent, where, back, sent2, received = wrapped(main)[0]
    blob = path.read_bytes()
    assert (sent, where, back) == (50_000, 50_100, blob[100:50_100])
    assert (sent2, received) == (len(blob), blob)


# ---- determinism ---------------------------------------------------------------------------

_WRAPPED_SCENARIO = """
import asyncio, json, socket, sys
sys.path.insert(0, sys.argv[1])
from test_sockets_wrap import echo, wrapped

async def main():
    server = await asyncio.start_server(echo, None, 0)
    port = server.sockets[0].getsockname()[1]
    a, b = socket.socketpair()
    r, w = await asyncio.open_connection(sock=a)
    await asyncio.get_running_loop().sock_sendall(b, b"pair\\n")
    await r.readline()
    us = await asyncio.start_unix_server(echo, "\\0wrap")
    for host, kind in (("127.0.0.1", "tcp"), ("::1", "tcp"), ("\\0wrap", "unix")):
        if kind == "unix":
            reader, writer = await asyncio.open_unix_connection(host)
        else:
            reader, writer = await asyncio.open_connection(host, port)
        for i in range(10):
            writer.write(b"%d;" % i * 5000)
            await reader.readexactly(len(b"%d;" % i * 5000))
        writer.close()
    server.close()
    us.close()

out = []
for base in (1, 2):
    _, loop = wrapped(main, base=base)
    out.append(loop.trace_hash)
print(json.dumps(out))
"""


def test_the_same_seed_gives_the_same_wrapped_trace_across_processes_and_hash_seeds() -> None:
    first, second = json_in_hash_seeds(_WRAPPED_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] != first[1]  # and the seed does decide


def test_the_same_seed_gives_the_same_wrapped_trace_in_one_process() -> None:
    async def main() -> Any:
        server = await asyncio.start_server(echo, "localhost", 0)
        port = server.sockets[0].getsockname()[1]
        got = await round_trip("localhost", port, b"y" * 100_000)
        server.close()
        return got

    hashes = {wrapped(main, base=7)[1].trace_hash for _ in range(3)}
    assert len(hashes) == 1


class Recorder(asyncio.Protocol):
    """A protocol that keeps what it receives and says when it is lost."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


# ---- a refusal that cuts a runner's test short (issue 24, item 27) ---------------------------


def runner_with_a_test_task(test: Main) -> tuple[Any, Any]:
    """What anyio's and pytest-asyncio's runners do, wrapped: one long-lived
    task runs each test, and the test's task group takes a cancel as its own
    (it returns), after which the runner task waits for the next test. The
    test's outcome, and what Runner.close() raised, if anything."""
    # A thread's start is one of the refusals it is about: refused by choice.
    run = _wrap.WrappedRun("tests/test_x.py::test_cut", 1, RunConfig(executor="refuse"))
    with _wrap.installed(run):
        runner = asyncio.Runner()
        loop = runner.get_loop()
        tests: asyncio.Queue[tuple[Main, asyncio.Future[Any]]] = asyncio.Queue()

        async def runner_task() -> None:
            while True:
                test, done = await tests.get()
                try:
                    result = await test()
                except Exception as exc:
                    result = exc
                if not done.cancelled():  # as anyio's: Runner.close cancelled the caller
                    done.set_result(result)

        async def call(test: Main) -> Any:
            done = loop.create_future()
            await tests.put((test, done))
            return await done

        task = loop.create_task(runner_task())
        try:
            outcome: Any = runner.run(call(test))
        except Exception as exc:
            outcome = exc
        if isinstance(outcome, Exception) and not isinstance(outcome, NondeterminismError):
            raise outcome
        try:
            runner.close()
            closed: Any = None
        except Exception as exc:
            closed = exc
        assert task.done()
        return outcome, closed


async def a_thread_in_a_child_task() -> None:
    import threading

    async def child() -> None:
        try:
            threading.Thread(target=print).start()
        except NondeterminismError:
            pass  # swallowed: the run fails all the same

    child_task = asyncio.ensure_future(child())
    try:
        await asyncio.sleep(1)
    except asyncio.CancelledError:
        await child_task  # a task group waits for its children, and returns


def test_a_refusal_that_cuts_a_runners_test_short_is_the_failure_and_the_runner_closes() -> None:
    """anyio's socket tests: a thread or real-socket refusal in a child task
    surfaced as a DeadlockError from Runner.close (the runner task, cut in
    mid-test, took the cancel and waited for the next test), and every later
    test of the session saw "Runner is closed". The refusal is the failure,
    and the runner closes."""
    outcome, closed = runner_with_a_test_task(a_thread_in_a_child_task)
    assert isinstance(outcome, NondeterminismError)
    assert "threading.Thread.start()" in str(outcome)
    assert closed is None
    again, closed_again = runner_with_a_test_task(lambda: asyncio.sleep(0, "fine"))
    assert (again, closed_again) == ("fine", None)


def test_a_teardown_that_deadlocks_after_a_refusal_raises_the_refusal() -> None:
    async def main() -> None:
        fut = asyncio.get_running_loop().create_future()

        async def refused() -> None:
            socket.gethostbyaddr("192.0.2.1")  # a reverse lookup: refused

        task = asyncio.ensure_future(refused())
        await fut  # nothing will set it
        del task

    run = _wrap.WrappedRun("tests/test_x.py::test_teardown", 1)
    with _wrap.installed(run):
        loop = asyncio.new_event_loop()
        try:
            with pytest.raises(NondeterminismError, match="gethostbyaddr"):
                loop.run_until_complete(main())
            # what the cut run left waits forever: its teardown says why
            with pytest.raises(NondeterminismError, match="gethostbyaddr"):
                loop.run_until_complete(asyncio.gather(*asyncio.all_tasks(loop)))
            loop.run_until_complete(asyncio.sleep(0))  # a run that ends as asked
            with pytest.raises(askew.DeadlockError):  # and then a deadlock is one
                loop.run_until_complete(loop.create_future())
        finally:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.close()


def added_by_a_second_run() -> list[str]:
    """grpclib's leak test: a new loop runs the same work twice; what the
    second run and the loop's close add to the collector's objects (the
    collector off meanwhile), as (type, repr) lines."""
    import gc

    async def work() -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()

        async def produce() -> None:
            for i in range(3):
                await queue.put(i)
                await asyncio.sleep(0)

        producer = asyncio.ensure_future(produce())
        for _ in range(3):
            await queue.get()
        await producer
        await asyncio.sleep(0.01)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(work())  # the first run makes what stays
    gc.collect()
    gc.disable()
    try:
        before = set(map(id, gc.get_objects()))
        loop.run_until_complete(work())
        loop.stop()
        loop.close()
        after = gc.get_objects()
    finally:
        gc.enable()
    added = []
    for o in after:
        if id(o) not in before and o is not before:
            added.append(f"{type(o).__name__} {repr(o)[:60]}")
    return sorted(added)


def test_a_second_run_of_a_wrapped_loop_leaves_no_new_object_behind() -> None:
    """What grpclib's leak test counts: a wrapped loop's second run adds no
    object a stock loop's does not. askew kept a fresh `random` state tuple
    and a fresh `time.tzname` tuple after every run."""
    stock = added_by_a_second_run()
    run = _wrap.WrappedRun("tests/test_x.py::test_leak", 1)
    with _wrap.installed(run):
        assert added_by_a_second_run() == stock
