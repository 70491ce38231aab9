# SPDX-License-Identifier: Apache-2.0
"""Wrap mode: every asyncio event loop a test creates is a seeded SimLoop.

This file owns the patches that make unmodified asyncio code run on SimLoop
(`asyncio.new_event_loop`, the default policy's `new_event_loop`, and the
`loop_factory` of `asyncio.Runner`, which `asyncio.run`,
`IsolatedAsyncioTestCase`, pytest-asyncio and anyio all go through), the
per-test seed formula, and what a replay command needs. It never imports pytest: the
plugin (askew._run.plugin) decides when a test starts and opens
`installed()` around each of its phases; closing it restores every patched
name, also after an exception.

The seed of a wrapped test is `seed_stream(base, crc32(nodeid))`: the base
seed (--askew-seed / ASKEW_SEED) mixed with the CRC-32 of the test's pytest
node id, so each test has its own schedule, and one base seed replays a
whole session or any single test of it.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import socket
import zlib
from asyncio import events, runners
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import _core
from .._loop.config import RunConfig, check_seed
from .._loop.loop import SimLoop
from .._loop.patches import NameSwap, Nesting
from .._loop.settings import KNOBS, WRAP_EXECUTOR, knob_text
from .._net import host as _host
from .._net import loopio as _loopio  # noqa: F401  (the loop's sockets are the network's)
from .._net import realsock as _realsock
from .._report.report import notes, replay_command
from ..errors import NondeterminismError

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def seed_for_test(base: int, nodeid: str) -> int:
    """The seed of the wrapped test `nodeid` in a session based at `base`."""
    return int(_core.seed_stream(check_seed(base), zlib.crc32(nodeid.encode("utf-8"))))


def sweep_base(base: int, i: int) -> int:
    """The base seed of the i-th of --askew-seeds N runs: i = 0 is `base` itself."""
    return base if i == 0 else int(_core.seed_iteration(check_seed(base), i))


# What a wrapped test runs with when no option or ASKEW_* variable says otherwise.
WRAP_DEFAULTS = RunConfig(executor=WRAP_EXECUTOR)


def knob_options(config: RunConfig) -> list[str]:
    """The plugin options that turn wrap mode's defaults into `config`."""
    return [
        f"--askew-{name.replace('_', '-')}={knob_text(getattr(config, name))}"
        for name in KNOBS
        if getattr(config, name) != getattr(WRAP_DEFAULTS, name)
    ]


@dataclass
class WrappedRun:
    """One run of one test: its seeds and the loops it created."""

    nodeid: str
    base: int
    config: RunConfig = WRAP_DEFAULTS
    loops: list[SimLoop] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # loop classes left unwrapped

    @property
    def seed(self) -> int:
        return seed_for_test(self.base, self.nodeid)

    @property
    def replay(self) -> str:
        """The command that runs exactly this test under this base seed and config."""
        return replay_command(self.base, self.nodeid, wrap_options=knob_options(self.config))

    @property
    def virtual_time(self) -> float:
        """The furthest virtual clock among this test's loops, in seconds."""
        return max((loop.time() for loop in self.loops), default=0.0)

    def new_loop(self) -> SimLoop:
        # Every loop of a test gets the test's seed: the test's own code
        # decides how many loops it makes, so the k-th loop of a replay is
        # the k-th loop of the failing run.
        loop = SimLoop(self.seed, self.config)
        self.loops.append(loop)
        return loop

    def describe(self) -> str:
        n = len(self.loops)
        return (
            f"askew wrap: seed={self.seed} = seed_stream(base={self.base}, "
            f"crc32({self.nodeid!r})); {n} SimLoop{'s' if n != 1 else ''}, "
            f"virtual time reached t={self.virtual_time:.6f}s"
        )


def _policy_base() -> type[Any] | None:
    # 3.14 renames the class and deprecates policies (python/cpython#127949);
    # read the module dict so no deprecation warning fires, and do without
    # the patch if policies are gone (Runner and new_event_loop remain).
    names = vars(events)
    for name in ("_BaseDefaultEventLoopPolicy", "BaseDefaultEventLoopPolicy"):
        cls = names.get(name)
        if isinstance(cls, type) and "new_event_loop" in vars(cls):
            return cls
    return None


class _Patches:
    """Saves and restores the asyncio names wrap mode replaces."""

    def __init__(self) -> None:
        self.run: WrappedRun | None = None
        self._nesting = Nesting()
        self._names = NameSwap()
        self._thread: int | None = None  # the test's thread (see _elsewhere)

    def install(self) -> None:
        if not self._nesting.enter():
            return
        self._thread = _thread.get_ident()
        try:
            self._names.set(events, "new_event_loop", self._new_event_loop)
            self._names.set(asyncio, "new_event_loop", self._new_event_loop)
            policy = _policy_base()
            if policy is not None:
                self._names.set(policy, "new_event_loop", _policy_new_event_loop)
            self._names.set(runners.Runner, "__init__", self._runner_init())
            self._names.set(runners, "_cancel_all_tasks", _cancel_all_tasks)
            # A real socket refused at the test's own simulated server says so.
            loops = self._loops
            real = socket.socket
            self._names.set(real, "connect", _realsock.checked_connect(real.connect, loops))
            self._names.set(
                real, "connect_ex", _realsock.checked_connect_ex(real.connect_ex, loops)
            )
        except BaseException:
            self.restore()  # the outermost install failed: undo what it did
            raise

    def restore(self) -> None:
        if self._nesting.exit():
            self._names.undo()

    def _loops(self) -> list[SimLoop]:
        return list(self.run.loops) if self.run is not None else []

    # ---- wrap threads (compat brief): loops made on other threads stay stock ----

    def _elsewhere(self) -> bool:
        """True on a thread other than the test's: a helper thread running its
        own `asyncio.run` (websockets' proxy tests, a server fixture) makes a
        real loop, because a SimLoop there would share nothing with the
        test's loop and its thread is already outside the seed's control
        (docs/compatibility.md, "Loops on other threads")."""
        return self._thread is not None and _thread.get_ident() != self._thread

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._elsewhere():
            return asyncio.SelectorEventLoop()  # what asyncio's Unix policy makes
        run = self.run
        assert run is not None, "askew wrap patches installed without a test"
        return run.new_loop()

    # ---- end wrap threads ----

    def _new_event_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop()

    def _runner_init(self) -> Callable[..., None]:
        original = vars(runners.Runner)["__init__"]
        patches = self

        def __init__(
            runner: Any, *, debug: bool | None = None, loop_factory: LoopFactory | None = None
        ) -> None:
            # loop_factory=None keeps asyncio's path (new_event_loop, which is
            # patched, and set_event_loop); a user's factory (uvloop, a
            # pytest_asyncio_loop_factories entry, anyio's loop_factory) is
            # replaced if it makes a stock loop (see _replaceable).
            if loop_factory is not None:
                loop_factory = patches._swap_factory(loop_factory)
            original(runner, debug=debug, loop_factory=loop_factory)

        return __init__

    def _swap_factory(self, factory: LoopFactory) -> LoopFactory:
        def make() -> asyncio.AbstractEventLoop:
            loop = factory()
            if isinstance(loop, SimLoop) or self._elsewhere():  # wrap threads: kept
                return loop
            if not _replaceable(loop):
                # A suite's own loop class (aiostream's TimeTrackingTestLoop)
                # is part of what it tests: keep it, and say so in the report.
                if self.run is not None:
                    self.run.kept.append(_qualname(type(loop)))
                return loop
            loop.close()
            return self._loop()

        return make


_STOCK_LOOP_MODULES = ("asyncio", "uvloop", "winloop")
_original_cancel_all_tasks = runners._cancel_all_tasks  # type: ignore[attr-defined]
# How many times Runner.close cancels what is left of a run a refusal cut short.
_CANCEL_ROUNDS = 8


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio.Runner.close's cancellation of the tasks left. After a refusal
    cut a SimLoop's run short, a task may be in mid-test (anyio's and
    pytest-asyncio's runners run every test inside one long-lived task): it
    takes the cancel as the test's and waits for the next test, which the
    stock loop would never have left it doing. It is cancelled again, a
    bounded number of times, so that the runner closes (the next test gets a
    fresh one, not "Runner is closed") and the refusal stays the failure."""
    cut = getattr(loop, "_cut_by", None) if isinstance(loop, SimLoop) else None
    if cut is None:
        _original_cancel_all_tasks(loop)
        return
    for _ in range(_CANCEL_ROUNDS):
        try:
            _original_cancel_all_tasks(loop)
            return
        except NondeterminismError as exc:
            if exc is not cut:
                raise


def _replaceable(loop: asyncio.AbstractEventLoop) -> bool:
    """A stock asyncio loop or a drop-in replacement for one (uvloop, winloop)."""
    module = type(loop).__module__
    return module.split(".", 1)[0] in _STOCK_LOOP_MODULES


def _qualname(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _policy_new_event_loop(policy: Any) -> asyncio.AbstractEventLoop:
    # Installed as a method of the default policy class, so a policy object
    # captured before the test (pytest-asyncio's session-scoped
    # event_loop_policy fixture, asyncio.get_event_loop() on 3.11) makes
    # SimLoops too.
    return _patches._loop()


_patches = _Patches()


@contextlib.contextmanager
def installed(run: WrappedRun) -> Iterator[WrappedRun]:
    """Patch asyncio so every loop made inside is one of `run`'s SimLoops;
    restore everything on exit, also when the body raises."""
    previous = _patches.run
    _patches.run = run
    _host.wrapped = True  # a SimLoop gets a one-host stack on its first socket call
    _patches.install()
    try:
        yield run
    finally:
        _patches.restore()
        _patches.run = previous
        _host.wrapped = previous is not None


def wrapped_replay(run: WrappedRun, failure: BaseException | None = None) -> str:
    """The "askew replay" section of a wrapped test's failure."""
    lines = [run.describe()]
    lines += [f"note: {note}" for note in notes(run.config, failure)]
    lines.append(f"replay: {run.replay}")
    return "\n".join(lines)
