# SPDX-License-Identifier: Apache-2.0
"""aiodns inside a run (askew/_net/aiodns.py): its lookups come from the simulated
resolver, no c-ares thread starts, and the real class is back afterwards."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest
from conftest import hang_guard, run_sim

import askew
from askew.errors import NondeterminismError

aiodns = pytest.importorskip("aiodns")
pycares = pytest.importorskip("pycares")

REAL = aiodns.DNSResolver


async def idle(node: Any) -> None:
    await asyncio.sleep(1e9)


def test_aiodns_lookups_are_answered_by_the_world_without_a_thread() -> None:
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        world.spawn(idle, name="db")
        threads = threading.active_count()
        resolver = aiodns.DNSResolver(loop=asyncio.get_running_loop())
        assert isinstance(resolver, REAL)
        result = await resolver.getaddrinfo("db", port=5432, type=socket.SOCK_STREAM)
        seen["nodes"] = [(n.family, n.socktype, n.addr) for n in result.nodes]
        info = await resolver.getnameinfo(("10.0.0.1", 80))
        seen["name"] = (info.node, info.service)
        host = await resolver.gethostbyaddr("10.0.0.1")
        seen["host"] = (host.name, host.addresses)
        seen["threads"] = threading.active_count() - threads
        await resolver.close()

    run_sim(body)
    assert seen == {
        "nodes": [(socket.AF_INET, socket.SOCK_STREAM, (b"10.0.0.1", 5432))],
        "name": ("db", "http"),  # a known port by its service name, as c-ares answers
        "host": ("db", ["10.0.0.1"]),
        "threads": 0,
    }
    assert aiodns.DNSResolver is REAL


def test_an_unknown_name_fails_with_the_dns_error_c_ares_gives() -> None:
    async def body(world: askew.World) -> None:
        resolver = aiodns.DNSResolver()
        with pytest.raises(aiodns.error.DNSError) as info:
            await resolver.getaddrinfo("nowhere", port=80)
        assert info.value.args[0] == pycares.errno.ARES_ENOTFOUND
        with pytest.raises(aiodns.error.DNSError) as info:
            await resolver.gethostbyaddr("10.9.9.9")
        assert info.value.args[0] == pycares.errno.ARES_ENOTFOUND

    run_sim(body)


def test_the_deprecated_query_answers_a_records_and_no_others() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(idle, name="db")
        resolver = aiodns.DNSResolver()
        with pytest.warns(DeprecationWarning):
            records = await resolver.query("db", "A")
        assert [(r.host, r.ttl) for r in records] == [("10.0.0.1", 0)]
        with pytest.warns(DeprecationWarning), pytest.raises(aiodns.error.DNSError) as info:
            await resolver.query("db", "MX")
        assert info.value.args[0] == pycares.errno.ARES_ENODATA
        with pytest.warns(DeprecationWarning):
            host = await resolver.gethostbyname("db", socket.AF_INET)
        assert host.addresses == ["10.0.0.1"]

    run_sim(body)


def test_raw_record_queries_are_refused_naming_the_call() -> None:
    async def body(world: askew.World) -> None:
        aiodns.DNSResolver().query_dns("db", "TXT")

    with pytest.raises(NondeterminismError, match=r"query_dns\('db', 'TXT'\)"):
        run_sim(body)


def test_cancel_fails_pending_lookups_as_c_ares_does() -> None:
    async def body(world: askew.World) -> None:
        resolver = aiodns.DNSResolver()
        fut = resolver.getaddrinfo("localhost", port=80)
        resolver.cancel()
        with pytest.raises(aiodns.error.DNSError) as info:
            await fut
        assert info.value.args[0] == pycares.errno.ARES_ECANCELLED

    run_sim(body)


def test_aiohttp_async_resolver_resolves_node_names() -> None:
    resolver_mod = pytest.importorskip("aiohttp.resolver")
    assert resolver_mod.DefaultResolver is resolver_mod.AsyncResolver  # aiodns is installed
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        world.spawn(idle, name="web")
        resolver = resolver_mod.DefaultResolver()
        hosts = await resolver.resolve("web", 8080)
        seen["hosts"] = [(h["host"], h["port"], h["family"]) for h in hosts]
        with pytest.raises(OSError):
            await resolver.resolve("nowhere", 80)
        await resolver.close()

    run_sim(body)
    assert seen["hosts"] == [("10.0.0.1", 8080, socket.AF_INET)]


def test_a_resolver_made_on_another_thread_during_a_run_is_the_real_one() -> None:
    go, done = threading.Event(), threading.Event()
    made: list[Any] = []

    def other_thread() -> None:
        go.wait(hang_guard(10))
        loop = asyncio.new_event_loop()
        try:
            resolver = aiodns.DNSResolver(loop=loop)
            made.append((aiodns.DNSResolver is REAL, type(resolver) is REAL))
            loop.run_until_complete(resolver.close())
        finally:
            loop.close()
            done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()  # before the run: a thread the run does not own

    async def body(world: askew.World) -> None:
        go.set()
        assert done.wait(hang_guard(10))

    run_sim(body)
    thread.join()
    assert made == [(False, True)]  # the name is swapped, yet that thread got the real one
