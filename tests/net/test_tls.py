# SPDX-License-Identifier: Apache-2.0
"""TLS and sendfile over simulated TCP (askew/_net/tls.py, docs/sockets.md
"TLS"): asyncio's own SSLProtocol over askew's transport, with the test
certificates in tests/certs/, under faults, and replayed by seed."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim
from test_sockets import client, run_nodes

import askew

CERTS = Path(__file__).resolve().parents[1] / "certs"
PORT = 443


def server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERTS / "server.pem", CERTS / "server.key")
    return ctx


def client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(CERTS / "ca.pem"))
    ctx.load_cert_chain(CERTS / "client.pem", CERTS / "client.key")
    return ctx


async def tls_echo_server(node: Any, port: int = PORT, **kwargs: Any) -> None:
    """Echo every byte back over TLS until EOF, then close."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    node.server = await asyncio.start_server(handle, None, port, ssl=server_context(), **kwargs)
    await asyncio.sleep(1e9)


async def echo_once(host: str, payload: bytes, **kwargs: Any) -> tuple[bytes, Any]:
    reader, writer = await asyncio.open_connection(host, PORT, ssl=client_context(), **kwargs)
    writer.write(payload)
    got = await reader.readexactly(len(payload))
    info = {
        name: writer.get_extra_info(name) for name in ("cipher", "peercert", "peername", "socket")
    }
    info["ssl_object"] = writer.get_extra_info("ssl_object")
    writer.close()
    await writer.wait_closed()
    return got, info


# ---- the handshake and the bytes -------------------------------------------------------


def test_a_tls_echo_over_simulated_tcp_round_trips_and_shows_asyncios_extra_info() -> None:
    payload = bytes(range(256)) * 400  # 100 KiB: many records, many segments

    async def talk(node: Any) -> Any:
        return await echo_once("node-0", payload)

    seen = run_nodes(tls_echo_server, client(talk))
    got, info = seen["result"]
    assert got == payload
    _name, version, bits = info["cipher"]
    assert version == "TLSv1.3" and bits >= 128
    assert dict(x[0] for x in info["peercert"]["subject"])["commonName"] == "node-0"
    assert isinstance(info["ssl_object"], ssl.SSLObject)
    assert info["peername"] == ("10.0.0.1", PORT)  # the TCP transport's, passed through
    assert info["socket"].family == 2
    assert seen["stats"]["tls_handshakes"] == 2 and seen["stats"]["tls_handshake_failures"] == 0
    assert seen["stats"]["tcp_bytes"] > len(payload) * 2  # ciphertext both ways


def test_create_connection_with_a_protocol_and_server_hostname_for_an_address() -> None:
    class Collect(asyncio.Protocol):
        def __init__(self) -> None:
            self.data = bytearray()
            self.done = asyncio.get_running_loop().create_future()

        def data_received(self, data: bytes) -> None:
            self.data += data
            if len(self.data) >= 5:
                self.done.set_result(bytes(self.data))

    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(
            Collect, "10.0.0.1", PORT, ssl=client_context(), server_hostname="db"
        )
        assert isinstance(transport, asyncio.Transport) and transport.get_protocol() is proto
        transport.write(b"hello")
        got = await proto.done
        transport.close()
        return got

    assert run_nodes(tls_echo_server, client(talk))["result"] == b"hello"


def test_a_name_the_certificate_does_not_carry_fails_the_handshake_and_frees_the_server() -> None:
    async def talk(node: Any) -> Any:
        with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
            await asyncio.open_connection(
                "node-0", PORT, ssl=client_context(), server_hostname="elsewhere"
            )
        await asyncio.sleep(1)
        # The server is unharmed: the next client gets through.
        return (await echo_once("node-0", b"again"))[0]

    seen = run_nodes(tls_echo_server, client(talk))
    assert seen["result"] == b"again"
    # Both ends of the failed handshake count it: the client's check, the server's alert.
    assert seen["stats"]["tls_handshake_failures"] == 2
    assert seen["stats"]["tls_handshakes"] == 2


def test_a_server_requiring_a_client_certificate_refuses_a_client_without_one() -> None:
    async def strict_server(node: Any) -> None:
        ctx = server_context()
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(CERTS / "ca.pem")

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer = writer.get_extra_info("peercert")
            writer.write(dict(x[0] for x in peer["subject"])["commonName"].encode())
            await writer.drain()
            writer.close()

        node.server = await asyncio.start_server(handle, None, PORT, ssl=ctx)
        await asyncio.sleep(1e9)

    async def talk(node: Any) -> Any:
        reader, writer = await asyncio.open_connection("node-0", PORT, ssl=client_context())
        name = await reader.read()
        bare = ssl.create_default_context(cafile=str(CERTS / "ca.pem"))
        reader, writer = await asyncio.open_connection("node-0", PORT, ssl=bare)
        # TLS 1.3: the client's handshake ends first. asyncio's SSLProtocol
        # closes the server's side without flushing the alert: the client
        # reads an EOF, as it does over real sockets.
        assert await reader.read() == b""
        writer.close()
        return name

    seen = run_nodes(strict_server, client(talk))
    assert seen["result"] == b"askew client"
    assert seen["stats"]["tls_handshake_failures"] == 1  # the server's


def test_start_tls_upgrades_a_plain_connection_on_both_sides() -> None:
    async def starttls_server(node: Any) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            assert await reader.readline() == b"STARTTLS\n"
            writer.write(b"GO\n")
            await writer.drain()
            await writer.start_tls(server_context())  # server_side: a server's writer
            writer.write((await reader.readline()).upper())
            await writer.drain()
            writer.close()

        node.server = await asyncio.start_server(handle, None, 25)
        await asyncio.sleep(1e9)

    async def talk(node: Any) -> Any:
        reader, writer = await asyncio.open_connection("node-0", 25)
        writer.write(b"STARTTLS\n")
        assert await reader.readline() == b"GO\n"
        await writer.start_tls(client_context(), server_hostname="node-0")
        assert writer.get_extra_info("ssl_object") is not None
        writer.write(b"secret\n")
        got = await reader.readline()
        writer.close()
        return got

    seen = run_nodes(starttls_server, client(talk))
    assert seen["result"] == b"SECRET\n" and seen["stats"]["tls_handshakes"] == 2


def test_loop_start_tls_with_a_protocol_returns_the_tls_transport() -> None:
    class Echo(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.write(data)

    async def upgrade_server(node: Any) -> None:
        loop = asyncio.get_running_loop()

        class Plain(asyncio.Protocol):
            def connection_made(self, transport: Any) -> None:
                async def up() -> None:
                    echo = Echo()
                    tls = await loop.start_tls(transport, echo, server_context(), server_side=True)
                    echo.connection_made(tls)

                node.upgrade = asyncio.ensure_future(up())

        node.server = await loop.create_server(Plain, None, 26)
        await asyncio.sleep(1e9)

    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_connection(asyncio.Protocol, "node-0", 26)
        with pytest.raises(TypeError, match="sslcontext is expected"):
            await loop.start_tls(transport, asyncio.Protocol(), True)
        reader = asyncio.StreamReader()
        proto = asyncio.StreamReaderProtocol(reader)
        tls = await loop.start_tls(transport, proto, client_context(), server_hostname="node-0")
        proto.connection_made(tls)
        tls.write(b"ping")
        got = await reader.readexactly(4)
        tls.close()
        return got

    assert run_nodes(upgrade_server, client(talk))["result"] == b"ping"


# ---- timeouts and faults ---------------------------------------------------------------


async def silent_server(node: Any) -> None:
    """Accepts TCP and never says a word: a TLS handshake waits forever.
    It keeps its writers: from 3.13 a StreamWriter closes its transport
    when collected."""
    node.writers = []
    node.server = await asyncio.start_server(lambda r, w: node.writers.append(w), None, PORT)
    await asyncio.sleep(1e9)


def test_the_handshake_timeout_fires_in_virtual_time() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ConnectionError) as info:
            await asyncio.open_connection(
                "node-0", PORT, ssl=client_context(), ssl_handshake_timeout=7.5
            )
        return type(info.value).__name__, loop.time() - start

    seen = run_nodes(silent_server, client(talk))
    kind, after = seen["result"]
    assert kind == "ConnectionAbortedError"
    assert 7.5 <= after < 7.6
    assert seen["stats"]["tls_handshake_failures"] == 1


def test_the_default_handshake_timeout_is_asyncios_sixty_seconds() -> None:
    async def talk(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ConnectionAbortedError):
            await asyncio.open_connection("node-0", PORT, ssl=client_context())
        return loop.time() - start

    after = run_nodes(silent_server, client(talk))["result"]
    assert 60 <= after < 60.1


def test_a_partition_stalls_a_tls_connection_which_flows_after_the_heal() -> None:
    out: dict[str, Any] = {}

    async def talk(node: Any) -> None:
        reader, writer = await asyncio.open_connection("node-0", PORT, ssl=client_context())
        out["streams"] = reader, writer
        out["first"] = await echo_on(reader, writer, b"before")

    async def echo_on(reader: Any, writer: Any, data: bytes) -> bytes:
        writer.write(data)
        return bytes(await reader.readexactly(len(data)))

    async def body(world: askew.World) -> None:
        world.spawn(tls_echo_server)
        world.spawn(talk)
        await asyncio.sleep(1)
        assert out["first"] == b"before"
        reader, writer = out["streams"]
        with world.partition({0}, {1}):
            pending = asyncio.ensure_future(echo_on(reader, writer, b"during"))
            await asyncio.sleep(20)
            assert not pending.done()  # stalled: retransmitted, never answered
        assert await asyncio.wait_for(pending, 120) == b"during"
        assert world.net.stats()["tcp_retransmits"] > 0
        writer.close()

    run_sim(body)


def test_a_crash_of_the_tls_server_resets_the_client_after_the_restart() -> None:
    out: dict[str, Any] = {}

    async def talk(node: Any) -> None:
        reader, writer = await asyncio.open_connection("node-0", PORT, ssl=client_context())
        writer.write(b"a")
        assert await reader.readexactly(1) == b"a"
        out["streams"] = reader, writer

    async def body(world: askew.World) -> None:
        world.spawn(tls_echo_server)
        world.spawn(talk)
        await asyncio.sleep(1)
        world.faults.crash(0)
        reader, writer = out["streams"]
        writer.write(b"b")
        await asyncio.sleep(5)
        assert not reader.at_eof()
        world.faults.restart(0)
        await asyncio.sleep(30)
        with pytest.raises(ConnectionResetError):
            await reader.read(1)

    run_sim(body)


# ---- the connect's arguments: the TLS call connects as the plain one -------------------


async def _until_eof(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()
    writer.close()


async def _connect_outcome(host: str, port: int, tls: bool, family: int) -> tuple[Any, ...]:
    """What open_connection(host, port, family=family) gives, over TLS or
    not: the peer's address and the socket's family, or the error's type
    and errno."""
    extra: dict[str, Any] = {"ssl": client_context(), "server_hostname": "localhost"} if tls else {}
    try:
        _reader, writer = await asyncio.open_connection(host, port, family=family, **extra)
    except OSError as exc:
        return type(exc).__name__, exc.errno
    peer = writer.get_extra_info("peername")[0]
    sock_family = socket.AddressFamily(writer.get_extra_info("socket").family).name
    writer.close()
    await writer.wait_closed()
    return "connected", peer, sock_family


async def _family_scenario() -> list[tuple[Any, ...]]:
    """Plain and TLS listeners on ::1 and on 127.0.0.1 (ephemeral ports),
    and a connect to each with every family=, with TLS and without: one row
    per call. Runs on stock asyncio (real loopback) and in a node alike."""
    servers, ports = [], {}
    for host in ("::1", "127.0.0.1"):
        for tls in (False, True):
            ctx = server_context() if tls else None
            server = await asyncio.start_server(_until_eof, host, 0, ssl=ctx)
            servers.append(server)
            ports[host, tls] = server.sockets[0].getsockname()[1]
    # ::1 to the IPv4 listener's port: nobody listens there on IPv6.
    targets = (("::1", "::1"), ("::1", "127.0.0.1"), ("127.0.0.1", "127.0.0.1"))
    rows = []
    try:
        for tls in (False, True):
            for host, listener in targets:
                for family in (socket.AF_UNSPEC, socket.AF_INET, socket.AF_INET6):
                    got = await _connect_outcome(host, ports[listener, tls], tls, family)
                    rows.append((tls, host, listener, family.name, *got))
    finally:
        for server in servers:
            server.close()
            await server.wait_closed()
    return rows


def _without_tls_flag(rows: list[tuple[Any, ...]], tls: bool) -> list[tuple[Any, ...]]:
    return [row[1:] for row in rows if row[0] is tls]


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


def test_tls_create_connection_honours_family_as_the_plain_call_does() -> None:
    rows = run_nodes(client(lambda node: _family_scenario()))["result"]
    assert _without_tls_flag(rows, True) == _without_tls_flag(rows, False)
    # family=AF_INET6 with an IPv4 literal is glibc's EAI_ADDRFAMILY, TLS or not.
    assert (True, "127.0.0.1", "127.0.0.1", "AF_INET6", "gaierror", socket.EAI_ADDRFAMILY) in rows


@pytest.mark.skipif(not _ipv6_loopback(), reason="needs IPv6 loopback (::1) on this host")
def test_the_family_scenario_gives_stock_asyncios_answers_on_real_loopback() -> None:
    stock = asyncio.run(_family_scenario())
    assert _without_tls_flag(stock, True) == _without_tls_flag(stock, False)
    assert run_nodes(client(lambda node: _family_scenario()))["result"] == stock


def test_tls_to_localhost_with_family_af_inet6_reaches_ipv6_or_is_refused_as_plain() -> None:
    async def talk(node: Any) -> Any:
        # Dual-stack listeners (host None: 0.0.0.0 and ::), and IPv4-only ones.
        for port, tls in ((8080, False), (8443, True)):
            ctx = server_context() if tls else None
            node.dual = await asyncio.start_server(_until_eof, None, port, ssl=ctx)
            node.v4 = await asyncio.start_server(_until_eof, "127.0.0.1", port + 1, ssl=ctx)
        rows = []
        for port, tls in ((8080, False), (8443, True)):
            for listener in (port, port + 1):
                rows.append(await _connect_outcome("localhost", listener, tls, socket.AF_INET6))
        return rows

    rows = run_nodes(client(talk))["result"]
    # localhost asked for AF_INET6 is ::1 (docs/sockets.md): the dual-stack
    # listener answers there, the IPv4-only one is refused; TLS changes neither.
    reached = ("connected", "::1", "AF_INET6")
    refused = ("ConnectionRefusedError", errno.ECONNREFUSED)
    assert rows == [reached, refused, reached, refused]


# ---- bad arguments, as asyncio's --------------------------------------------------------


def test_bad_tls_arguments_fail_as_asyncio() -> None:
    async def bad(node: Any) -> str:
        with pytest.raises(TypeError, match="ssl argument must be an SSLContext or None"):
            await asyncio.start_server(lambda r, w: None, None, PORT, ssl=True)
        with pytest.raises(ValueError, match="ssl_handshake_timeout is only meaningful with ssl"):
            await asyncio.start_server(lambda r, w: None, None, PORT, ssl_handshake_timeout=1)
        with pytest.raises(ValueError, match="server_hostname is only meaningful with ssl"):
            await asyncio.open_connection("node-0", 7, server_hostname="x")
        with pytest.raises(ValueError, match="ssl_shutdown_timeout is only meaningful with ssl"):
            await asyncio.open_connection("node-0", 7, ssl_shutdown_timeout=1)
        with pytest.raises(ValueError, match="ssl_handshake_timeout should be a positive number"):
            await asyncio.open_connection(
                "node-0", PORT, ssl=client_context(), ssl_handshake_timeout=0
            )
        assert node._askew_world.net.stats()["tcp_connects"] == 0  # all before connecting
        return "ok"

    assert run_nodes(tls_echo_server, client(bad))["result"] == "ok"


# ---- sendfile -----------------------------------------------------------------------------


def _sendfile_scenario(tmp_path: Path, tls: bool) -> Any:
    blob = tmp_path / "blob.bin"
    content = hashlib.sha256(b"seed").digest() * 10_000  # 320 KB: flow control engages
    blob.write_bytes(content)

    async def sink(node: Any) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            node.got = await reader.read()
            writer.close()

        ctx = server_context() if tls else None
        node.server = await asyncio.start_server(handle, None, PORT, ssl=ctx)
        await asyncio.sleep(1e9)

    async def send(node: Any) -> Any:
        loop = asyncio.get_running_loop()
        ctx = client_context() if tls else None
        _reader, writer = await asyncio.open_connection("node-0", PORT, ssl=ctx)
        with blob.open("rb") as f:
            sent = await loop.sendfile(writer.transport, f, offset=32, count=200_000)
            where = f.tell()
            if tls:
                with pytest.raises(RuntimeError, match="fallback is disabled"):
                    await loop.sendfile(writer.transport, f, fallback=False)
            else:  # a plain simulated socket sends "natively", as Linux does
                sent += await loop.sendfile(writer.transport, f, fallback=False)
        writer.write(b"!")  # the user's protocol is back after the transfer
        writer.close()
        await writer.wait_closed()
        while not hasattr(node._askew_world.nodes[0], "got"):
            await asyncio.sleep(0.1)
        return sent, where, node._askew_world.nodes[0].got

    seen = run_nodes(sink, client(send))
    return content, seen["result"]


def test_sendfile_on_a_plain_simulated_connection_sends_the_file_natively_or_not(
    tmp_path: Path,
) -> None:
    content, (sent, where, got) = _sendfile_scenario(tmp_path, tls=False)
    assert where == 200_032 and sent == len(content) - 32
    assert got == content[32:] + b"!"


def test_sendfile_over_tls_uses_asyncios_fallback(tmp_path: Path) -> None:
    content, (sent, where, got) = _sendfile_scenario(tmp_path, tls=True)
    assert (sent, where) == (200_000, 200_032)
    assert got == content[32:200_032] + b"!"


# ---- determinism ----------------------------------------------------------------------------

# The scenario prints, per seed, the trace hash and a digest of every byte
# the TLS layer wrote to the simulated sockets (the ciphertext).
_SCENARIO = """
import asyncio, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import askew
from askew._net import endpoint as _endpoint
from test_tls import client_context, echo_once, tls_echo_server

wire = hashlib.sha256()
write = _endpoint.Endpoint.write
def recording(self, data):
    wire.update(bytes(data))
    return write(self, data)
_endpoint.Endpoint.write = recording

async def talk(node):
    for i in range(3):
        await echo_once("node-0", b"%d" % i * 3000)

out = []
async def body(world):
    world.net.configure(loss=0.05)
    world.spawn(tls_echo_server)
    world.spawn(talk)
    await asyncio.sleep(60)
    out.append([world.log.hash, world.net.stats()["tls_handshakes"], wire.hexdigest()])

for seed in (1, 2, 1):
    wire = hashlib.sha256()
    askew.simulate(seed=seed, iterations=1)(body)()
print(json.dumps(out))
"""


def test_the_same_seed_gives_the_same_tls_trace_in_one_process_and_across_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _child_preload(monkeypatch, False)  # even when pytest runs under askew-exec
    first, second = json_in_hash_seeds(_SCENARIO, hash_seeds=("0", "4242"))
    hashes = [[h, n] for h, n, _ in first]
    assert hashes == [[h, n] for h, n, _ in second]
    assert hashes[0] == hashes[2] and hashes[0] != hashes[1]  # replays, and the seed decides
    assert hashes[0][1] == 6
    # Without the preload OpenSSL's randomness is the host's: the bytes differ,
    # the trace (counts, lengths, times) does not.
    assert first[0][2] != second[0][2]


_PRELOAD = Path(askew.__file__).resolve().parent / "libaskew-preload.so"


def _child_preload(monkeypatch: pytest.MonkeyPatch, preload: bool) -> None:
    """The LD_PRELOAD the children get: askew's preload or none, after
    libasan's under `make asan` (whose extension needs libasan first)."""
    kept = os.environ.get("LD_PRELOAD", "").split() if os.environ.get("ASKEW_ASAN") else []
    libraries = [p for p in kept if p != str(_PRELOAD)] + ([str(_PRELOAD)] if preload else [])
    if libraries:
        monkeypatch.setenv("LD_PRELOAD", " ".join(libraries))
    else:
        monkeypatch.delenv("LD_PRELOAD", raising=False)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _PRELOAD.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)
def test_under_askew_exec_the_tls_bytes_themselves_replay_across_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What askew-exec does for a child: the preload in LD_PRELOAD (the hash
    # seed is set per child by json_in_hash_seeds).
    _child_preload(monkeypatch, True)
    first, second = json_in_hash_seeds(_SCENARIO, hash_seeds=("0", "4242"))
    assert first == second
    assert first[0] == first[2]  # ciphertext included: OpenSSL drew from the run's entropy


_VALIDITY = """
import asyncio, json, ssl, sys
sys.path.insert(0, sys.argv[1])
import askew
from test_tls import PORT

cert, key = sys.argv[2], sys.argv[3]
def fresh_server():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx

async def serve(node):
    node.writers = []
    node.server = await asyncio.start_server(
        lambda r, w: node.writers.append(w), None, PORT, ssl=fresh_server()
    )
    await asyncio.sleep(1e9)

out = []
async def talk(node):
    ctx = ssl.create_default_context(cafile=cert)
    try:
        await asyncio.open_connection("node-0", PORT, ssl=ctx)
        out.append("ok")
    except ssl.SSLCertVerificationError as exc:
        out.append(exc.verify_message)

async def body(world):
    world.spawn(serve)
    world.spawn(talk)
    await asyncio.sleep(5)

askew.simulate(seed=1, iterations=1)(body)()
print(json.dumps(out[0]))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _PRELOAD.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)
def test_certificates_are_checked_against_virtual_time_under_askew_exec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    # Issued yesterday by the host's clock: after the virtual epoch (2020).
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node-0")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("node-0")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "c.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    seen = {}
    for preload in (False, True):
        _child_preload(monkeypatch, preload)
        files = (str(tmp_path / "c.pem"), str(tmp_path / "c.key"))
        seen[preload] = json_in_hash_seeds(_VALIDITY, *files, hash_seeds=("0",))[0]
    # OpenSSL reads the clock in C: the host's without the preload, the
    # run's virtual wall clock (2020-01-01 + run time) with it.
    assert seen == {False: "ok", True: "certificate is not yet valid"}
