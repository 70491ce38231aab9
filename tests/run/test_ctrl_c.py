# SPDX-License-Identifier: Apache-2.0
"""A Ctrl-C is never swallowed: wherever SIGINT lands in a run, its
teardown included, the run stops with KeyboardInterrupt naming the seed.

Python drops an exception raised in a finalizer, a weakref callback or a
generator closed by the collector ("Exception ignored in"); a run's end
collects its garbage, so a signal that lands there would be lost. These
tests land one at every point of a run and at those places on purpose.
"""

from __future__ import annotations

import _thread
import asyncio
import gc
import os
import signal
import socket
import sys
import time
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew._disk import disk as _disk
from askew._loop.patches import scope
from askew._net import host as _host


@pytest.fixture(autouse=True)
def python_sigint() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt here, as in a plain pytest run (a
    pytest-xdist worker may have set its own handler)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class Cycle:
    """Garbage only the collector frees: at the end of the run."""

    def __init__(self, on_del: Any = None) -> None:
        self.me = self
        self.on_del = on_del

    def __del__(self) -> None:
        if self.on_del is not None:
            self.on_del()


# Only while a test runs may a finalizer raise: garbage of these tests that
# outlives them (held by a traceback) must not interrupt a later test.
_ARMED = [False]


@pytest.fixture(autouse=True)
def armed() -> Iterator[None]:
    _ARMED[0] = True
    try:
        yield
    finally:
        _ARMED[0] = False
        gc.collect()


def _interrupt() -> None:
    if _ARMED[0]:
        raise KeyboardInterrupt


async def _node(node: askew.NodeHandle) -> None:
    held = Cycle()
    try:
        while True:
            await node.recv(timeout=1)
            node.send(1 - node.id, "ping")
    finally:
        held.on_del = None


async def _body(world: askew.World) -> None:
    for _ in range(2):
        world.spawn(_node)

    async def leftover() -> None:
        try:
            await asyncio.sleep(100)
        finally:
            sum(range(3))

    world.leftover = asyncio.ensure_future(leftover())
    litter = Cycle()
    weakref.finalize(litter, sum, range(3))
    await world.clock.advance(2)


@pytest.mark.parametrize(
    "where",
    [
        lambda: Cycle(_interrupt),
        lambda: weakref.finalize(Cycle(), _interrupt),
    ],
    ids=["a finalizer", "a weakref callback"],
)
def test_a_ctrl_c_in_a_finalizer_at_a_runs_end_stops_the_run(where: Any) -> None:
    async def body(world: askew.World) -> None:
        world.held = where()
        await world.clock.advance(1)

    with pytest.raises(KeyboardInterrupt, match=r"stopped at iteration 0 of 1, seed=4 "):
        run_sim(body, seed=4)


def test_a_ctrl_c_at_any_call_or_return_of_a_run_stops_it_with_its_seed() -> None:
    """SIGINT's handler run at every 25th point of a run where CPython runs
    one (a function's entry and a builtin's return: a profile hook counts
    them and calls the handler set at that moment where its count comes
    up; CPython never runs one at a Python function's return), teardown
    included: every run stops, says which seed it was, and leaves the
    process as it found it (no patch, no open scope)."""
    calls = 0
    checks = ("call", "c_return")

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event in checks

    def host() -> list[object]:
        names = [os.fork, time.monotonic, _thread.start_new_thread, socket.socket.connect]
        # No world of a stopped run stays current: its network would answer
        # a later wrapped test's sockets, its disks a later file call.
        return [*names, scope.open, _host.current_world(), _disk.current_world(), _host.wrapped]

    run_sim(_body, seed=9)  # what is imported or cached on first use, once
    before = host()
    sys.setprofile(count)
    try:
        run_sim(_body, seed=9)
    finally:
        sys.setprofile(None)
    points = calls
    assert points > 1000
    swallowed, altered = [], []
    for point in range(1, points, 25):
        calls = 0

        def interrupt_at(frame: FrameType, event: str, arg: Any, point: int = point) -> None:
            nonlocal calls
            calls += event in checks
            if calls == point and event in checks:  # the signal's handler runs here
                signal.getsignal(signal.SIGINT)(signal.SIGINT, frame)

        sys.setprofile(interrupt_at)
        try:
            run_sim(_body, seed=9)
        except KeyboardInterrupt as exc:
            assert "seed=9" in str(exc) or not str(exc), exc
        else:
            swallowed.append(point)
        finally:
            sys.setprofile(None)
        if host() != before:
            altered.append(point)
            break
    assert (swallowed, altered) == ([], [])
