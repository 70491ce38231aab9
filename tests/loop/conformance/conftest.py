# SPDX-License-Identifier: Apache-2.0
"""One conformance body, run against stock asyncio and askew's SimLoop.

Each test in this package states something asyncio promises about its loop and the primitives
built on it, and takes the `loop` fixture, which runs it once per loop kind: `stock` is
`asyncio.new_event_loop()`, the reference; `askew` is `askew.new_event_loop(seed=...)` with the
default faithful strategy and `askew-fifo` the same with strategy="fifo", so any difference from
asyncio is a failing test. A test that holds for askew alone says so with `on_loops(...)` (or
`askew_only`), which narrows the loop kinds it runs on.

The SimLoop orders independent ready callbacks by a seeded PRNG, so the bodies assert only
orderings asyncio itself promises (FIFO of `call_soon` from one caller, timers by deadline, done
callbacks of one future, FIFO waiters of a lock), never the relative order of independent tasks.
Nothing here asserts on wall-clock time: stock-loop sleeps are a few milliseconds and only ever
bound an order, never a duration.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import askew

STOCK = "stock"
ASKEW = "askew"
ASKEW_FIFO = "askew-fifo"
LOOP_KINDS = (STOCK, ASKEW, ASKEW_FIFO)

# The seed of every SimLoop here: the bodies hold for any seed, one fixed seed keeps a failure
# reproducible.
SEED = 12345

needs_312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="needs Python 3.12+")
needs_313 = pytest.mark.skipif(sys.version_info < (3, 13), reason="needs Python 3.13+")

# A tiny delay: long enough to order timers on the stock loop, short enough to keep it fast.
TICK = 0.001
# Deadlines that order tasks on the stock loop are this far apart: a loaded
# machine that deschedules the process for a few ms must not start a task
# past every deadline.
ORDER_TICK = 20 * TICK

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def on_loops(*kinds: str) -> pytest.MarkDecorator:
    """Run a test on these loop kinds only (ids stay `[stock]`, `[askew]`, `[askew-fifo]`)."""
    unknown = set(kinds) - set(LOOP_KINDS)
    if unknown:
        raise ValueError(f"unknown loop kinds {sorted(unknown)}; known: {LOOP_KINDS}")
    return pytest.mark.parametrize("loop_kind", kinds)


# What the SimLoop adds to asyncio's promises: every strategy keeps it.
askew_only = on_loops(ASKEW, ASKEW_FIFO)


def make_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new, not yet running loop of `kind`."""
    if kind == STOCK:
        return asyncio.new_event_loop()
    strategy = "fifo" if kind == ASKEW_FIFO else "faithful"
    loop: asyncio.AbstractEventLoop = askew.new_event_loop(seed=SEED, strategy=strategy)
    return loop


@pytest.fixture(params=LOOP_KINDS)
def loop_kind(request: pytest.FixtureRequest) -> str:
    """Which loop the test runs on; `on_loops` overrides the list."""
    kind: str = request.param
    return kind


@pytest.fixture
def new_loop(loop_kind: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """A factory of fresh loops of the test's kind, for `loop_factory=` and second loops."""
    return lambda: make_loop(loop_kind)


@pytest.fixture
def loop(new_loop: Callable[[], asyncio.AbstractEventLoop]) -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh loop of the test's kind; afterwards its leftover tasks are cancelled and awaited,
    its async generators shut down, and it is closed (unless the test closed it)."""
    loop = new_loop()
    yield loop
    if loop.is_closed():
        return
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


@pytest.fixture
def other_loop(
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> Iterator[asyncio.AbstractEventLoop]:
    """A second loop of the test's kind, never run; closed afterwards."""
    other = new_loop()
    yield other
    other.close()


class RecordingLoopFactory:
    """A `loop_factory` that keeps every loop it makes, in `made`."""

    def __init__(self, new_loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.new_loop = new_loop
        self.made: list[asyncio.AbstractEventLoop] = []

    def __call__(self) -> asyncio.AbstractEventLoop:
        self.made.append(self.new_loop())
        return self.made[-1]


@pytest.fixture
def loop_factory(
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> RecordingLoopFactory:
    """A loop factory of the test's kind that remembers the loops it made."""
    return RecordingLoopFactory(new_loop)


@pytest.fixture
def clock_slack(loop_kind: str) -> float:
    """How far before its deadline a timer may fire, on the loop's own clock.

    The stock loop fires timers due before `time() + clock_resolution`
    (BaseEventLoop._run_once), so it may run a timer up to one clock resolution early; a virtual
    clock has no such slack.
    """
    return time.get_clock_info("monotonic").resolution if loop_kind == STOCK else 0.0


@pytest.fixture
def handled(loop: asyncio.AbstractEventLoop) -> list[dict[str, Any]]:
    """The contexts the loop passes to its exception handler, which this installs."""
    contexts: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: contexts.append(context))
    return contexts


def asyncio_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What was logged to the `asyncio` logger."""
    return [r for r in caplog.records if r.name == "asyncio"]


def append_when_done(out: list[Any], value: Any, _future: asyncio.Future[Any]) -> None:
    """A done callback, bound with functools.partial: appends `value` to `out`."""
    out.append(value)


async def settle(steps: int = 20) -> None:
    """Yield to the loop `steps` times, so every task that is ready gets to run.

    Both loops promise that a callback already ready when a task yields runs before that
    task resumes (stock: a FIFO ready queue; SimLoop: a callback scheduled during a tick runs
    in a later tick), so this bounds progress by steps, never by wall-clock time.
    """
    for _ in range(steps):
        await asyncio.sleep(0)


async def sleep_until(deadline: float, result: Any = None) -> Any:
    """Sleep until `deadline` on the running loop's clock.

    Tests that order sleeps by their length measure them from one shared instant, so that on
    the stock loop a task that starts late under load cannot push its deadline past another's.
    """
    return await asyncio.sleep(deadline - asyncio.get_running_loop().time(), result)


async def cancel_once_started(task: asyncio.Future[Any]) -> None:
    """Let `task` reach its first await, cancel it, and check that awaiting it raises
    CancelledError."""
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def two_step_agen(on_close: Callable[[], object]) -> AsyncIterator[int]:
    """An async generator that yields 1 and 2, and calls `on_close` when it is finalized (run
    to its end, closed, or finalized by the loop's hooks)."""
    try:
        yield 1
        yield 2
    finally:
        on_close()
