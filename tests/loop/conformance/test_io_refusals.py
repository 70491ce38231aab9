# SPDX-License-Identifier: Apache-2.0
"""Refusals: calls that would touch the real world raise NondeterminismError naming the call.

These hold for askew alone (the stock loop does the real thing), and do not depend on the
strategy: they run on the default, faithful SimLoop only.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import askew

from .conftest import ASKEW, on_loops

pytestmark = on_loops(ASKEW)


@pytest.fixture
def socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair of real sockets, closed afterwards."""
    a, b = socket.socketpair()
    with a, b:
        yield a, b


def refused(loop: asyncio.AbstractEventLoop, name: str, make: Callable[[], Any]) -> None:
    """Run `make()` on the loop (awaiting it if it returns an awaitable); expect a refusal.

    A refusal may come at the call or from the awaitable it returns: both count.
    """

    async def attempt() -> None:
        result = make()
        if inspect.isawaitable(result):
            await result

    with pytest.raises(askew.NondeterminismError, match=re.escape(name)):
        loop.run_until_complete(attempt())


def test_nondeterminism_error_is_not_a_runtime_error_so_except_runtimeerror_misses_it(
    loop_kind: str,
) -> None:
    # A claim about the class alone: `loop_kind` only takes the module's mark.
    assert not issubclass(askew.NondeterminismError, RuntimeError)
    assert issubclass(askew.NondeterminismError, askew.SimulationFailure)


def test_run_in_executor_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(loop, "run_in_executor", lambda: loop.run_in_executor(None, sum, [1, 2]))


def test_to_thread_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    async def attempt() -> None:
        await asyncio.to_thread(sum, [1, 2])

    with pytest.raises(askew.NondeterminismError, match=r"to_thread|run_in_executor"):
        loop.run_until_complete(attempt())


def test_create_connection_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(
        loop,
        "create_connection",
        lambda: loop.create_connection(asyncio.Protocol, "127.0.0.1", 9),
    )


def test_open_connection_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(loop, "create_connection", lambda: asyncio.open_connection("127.0.0.1", 9))


def test_create_server_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(loop, "create_server", lambda: loop.create_server(asyncio.Protocol, "", 0))


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("sock_recv", (16,)),
        ("sock_sendall", (b"x",)),
        ("sock_connect", (("127.0.0.1", 9),)),
        ("sock_accept", ()),
    ],
)
def test_socket_operations_are_refused(
    loop: asyncio.AbstractEventLoop,
    socket_pair: tuple[socket.socket, socket.socket],
    method: str,
    args: tuple[Any, ...],
) -> None:
    a, _ = socket_pair
    a.setblocking(False)
    refused(loop, method, lambda: getattr(loop, method)(a, *args))


def test_add_reader_is_refused(
    loop: asyncio.AbstractEventLoop, socket_pair: tuple[socket.socket, socket.socket]
) -> None:
    a, _ = socket_pair
    refused(loop, "add_reader", lambda: loop.add_reader(a.fileno(), lambda: None))


def test_add_writer_is_refused(
    loop: asyncio.AbstractEventLoop, socket_pair: tuple[socket.socket, socket.socket]
) -> None:
    a, _ = socket_pair
    refused(loop, "add_writer", lambda: loop.add_writer(a.fileno(), lambda: None))


def test_subprocess_exec_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(loop, "subprocess_exec", lambda: asyncio.create_subprocess_exec("true"))


def test_subprocess_shell_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    refused(loop, "subprocess_shell", lambda: asyncio.create_subprocess_shell("true"))


def test_call_soon_threadsafe_from_another_thread_is_refused(
    loop: asyncio.AbstractEventLoop,
) -> None:
    caught: list[BaseException] = []
    go = threading.Event()
    finished = threading.Event()

    def other_thread() -> None:
        go.wait()
        try:
            loop.call_soon_threadsafe(lambda: None)
        except BaseException as e:
            caught.append(e)
        finally:
            finished.set()

    async def main() -> None:
        # The thread is started before the run (starting one inside is itself refused);
        # it makes its call while the loop is running, and this step blocks until it has.
        go.set()
        finished.wait()

    th = threading.Thread(target=other_thread)
    th.start()
    try:
        # The other thread caught the refusal; the run fails all the same.
        with pytest.raises(askew.NondeterminismError, match="call_soon_threadsafe"):
            loop.run_until_complete(main())
    finally:
        go.set()
        th.join()
    assert len(caught) == 1
    assert isinstance(caught[0], askew.NondeterminismError)
    assert "call_soon_threadsafe" in str(caught[0])


def test_starting_a_thread_inside_the_loop_is_refused(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        threading.Thread(target=lambda: None).start()

    with pytest.raises(askew.NondeterminismError, match=r"Thread\.start"):
        loop.run_until_complete(main())
