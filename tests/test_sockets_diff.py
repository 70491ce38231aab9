# SPDX-License-Identifier: Apache-2.0
"""Bad input and edges of the simulated sockets, differentially (issue 12,
"Bad input and edges"; docs/sockets.md).

Each case is one `async def` run twice: by the stock asyncio loop over real
loopback (127.0.0.1, ::1, a tmp dir for AF_UNIX), and by askew as a wrapped
test runs it (the process is one host on loopback). What it returns is the
observable outcome (an exception's type and errno, never its message; a
return value; bytes read; the callbacks a protocol saw), and the two must
be equal. askew runs each case twice in one process, so a case that leaks
into the next run shows as a difference too. Where askew refuses on
purpose (a `NondeterminismError` naming what is not built), the case says
so and the test checks the refusal. The crash and partition cases have no
stock twin: they run in a world and check what Linux would do.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from test_sockets_wrap import wrapped

from askew.errors import NondeterminismError

Case = Callable[[], Coroutine[Any, Any, Any]]
CASES: dict[str, Case] = {}
REFUSED: dict[str, Case] = {}  # askew refuses on purpose: not built, or a real lookup


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def refused(fn: Case) -> Case:
    REFUSED[fn.__name__] = fn
    return fn


def outcome(exc: BaseException) -> tuple[str, Any]:
    """An exception as the battery compares it: its type and errno."""
    return (type(exc).__name__, getattr(exc, "errno", None))


async def attempt(aw: Awaitable[Any] | Callable[[], Any]) -> Any:
    """What an awaitable or a call gives: its value, or its exception's
    outcome."""
    try:
        if callable(aw):
            return aw()
        return await aw
    except Exception as exc:
        return outcome(exc)


def _plain(value: Any) -> Any:
    """Enum members as plain ints, so either side's values compare."""
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


def on_stock(main: Case) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


# ---- names: loop.getaddrinfo and loop.getnameinfo -----------------------------------------


async def gai(host: Any, port: Any, **kwargs: Any) -> Any:
    loop = asyncio.get_running_loop()
    return _plain(await attempt(loop.getaddrinfo(host, port, **kwargs)))


async def gni(sockaddr: Any, flags: int = 0) -> Any:
    loop = asyncio.get_running_loop()
    return await attempt(loop.getnameinfo(sockaddr, flags))


BAD_PORTS = (-1, 65536, "http", "www", "abc", 3.5, None, b"80", " 80", "-1", "", 2**40, 2**70)


@case
async def getaddrinfo_of_odd_ports() -> Any:
    kinds: tuple[dict[str, Any], ...] = (
        {},
        {"type": socket.SOCK_STREAM},
        {"type": socket.SOCK_DGRAM},
        {"proto": 17},
    )
    kinds += ({"type": socket.SOCK_RAW}, {"flags": socket.AI_NUMERICSERV})
    return [await gai("127.0.0.1", p, **k) for p in BAD_PORTS for k in kinds]


@case
async def getaddrinfo_of_odd_hosts() -> Any:
    hosts: tuple[Any, ...] = (
        b"127.0.0.1",
        12345,
        "",
        "::1%bad",
        None,
        "127.1",
        "0x7f.1",
        "2130706433",
    )
    hosts += ("::1", "::ffff:127.0.0.1", "localhost", b"localhost", "LOCALHOST", 1.5)
    return [await gai(h, 80, type=socket.SOCK_STREAM) for h in hosts]


@case
async def getaddrinfo_with_odd_family_type_proto_and_flags() -> Any:
    odd: list[dict[str, Any]] = [{"family": f} for f in (99, -1, socket.AF_UNIX, "x", 2**40)]
    odd += [{"type": t} for t in (99, -1, socket.SOCK_RAW, 1.0)]
    odd += [{"proto": p} for p in (99, 6, 17, -1)]
    odd += [{"type": socket.SOCK_DGRAM, "proto": 6}, {"type": socket.SOCK_RAW, "proto": 99}]
    odd += [{"flags": f} for f in (-1, 1 << 20, socket.AI_NUMERICHOST, socket.AI_CANONNAME)]
    odd += [{"flags": socket.AI_PASSIVE}, {"family": socket.AF_INET}]
    out = []
    for kwargs in odd:
        for host in ("127.0.0.1", "localhost", None):
            out.append(await gai(host, 80, **kwargs))
    return [*out, await gai(None, None), await gai("127.0.0.1", None)]


@case
async def getnameinfo_of_bad_sockaddrs_and_flags() -> Any:
    sockaddrs: tuple[Any, ...] = (("127.0.0.1",), ("127.0.0.1", 80, 0), ("127.0.0.1", "80"))
    sockaddrs += (("127.0.0.1", -1), ("127.0.0.1", 70000), ("::1", 80, 0, 0, 0))
    sockaddrs += ((b"127.0.0.1", 80), "127.0.0.1", None, ("x.y", 80), ("127.1", 22))
    sockaddrs += (("::1", 80, 1 << 21, 0), ("127.0.0.1", 2**40), [("127.0.0.1", 80)])
    out = [await gni(sa) for sa in sockaddrs]
    for flags in (-1, 256, socket.NI_NUMERICSERV, socket.NI_DGRAM, socket.NI_NAMEREQD, "x"):
        out.append(await gni(("127.0.0.1", 123), flags))  # type: ignore[arg-type]
    numeric = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    # ::1's name is the host's /etc/hosts: only numerically here.
    return [*out, await gni(("::1", 443, 0, 0), numeric), await gni(("127.0.0.1", 443), 2)]


@refused
async def getaddrinfo_of_a_name_no_host_here_has() -> Any:
    # A real lookup (DNS) in wrap mode: refused, as every remote name is.
    return await gai("256.1.1.1", 80)


# ---- the two runs of every case ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_askew_answers_as_stock_asyncio_on_linux(name: str) -> None:
    main = CASES[name]
    expected = on_stock(main)
    first = wrapped(main)[0]
    again = wrapped(main)[0]  # a second run in the same process: nothing leaked
    assert first == expected
    assert again == expected


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_askew_refuses_what_it_does_not_simulate_by_name(name: str) -> None:
    on_stock(REFUSED[name])  # stock answers (an error or not): askew must not guess
    with pytest.raises(NondeterminismError):
        wrapped(REFUSED[name])
