# SPDX-License-Identifier: Apache-2.0
"""world.eventually and world.always: checks that fail the run while it goes.

eventually is a liveness check: its predicate is polled by timers of the
world's own loop (never a node's: a crash does not stop them) every `every`
virtual seconds (default: within / 64) and at the deadline. A poll is a
callback like any other, so adding a check changes the run's schedule,
deterministically.

always is a safety check: the C loop calls one hook after every step of the
run (ext/loop_run.c, call_step_hook), which calls every predicate of the world in
turn. It schedules nothing and draws nothing, so adding a check leaves the
run's schedule and trace as they were. A violation raises out of the step
loop at once, so the run ends at the step that broke the property.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from .._loop.config import check_name, check_seconds
from .._loop.text import safe_repr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .world import World

POLLS = 64  # polls per `within` when `every` is not given


class PropertyViolation(AssertionError):
    """A world.always check that failed after a step, a world.eventually
    check that did not hold by its deadline, or either's predicate raising
    (then chained as its __cause__)."""


def _describe(predicate: Callable[[], Any]) -> str:
    name = getattr(predicate, "__qualname__", None)
    return name if isinstance(name, str) else safe_repr(predicate)


class _Eventually:
    def __init__(
        self,
        world: World,
        name: str,
        predicate: Callable[[], Any],
        within: float,
        every: float,
    ) -> None:
        self._world = world
        self.name = name
        self._predicate = predicate
        self.started = world.now
        self.deadline = self.started + within
        self._every = every
        self.held_at: float | None = None
        self._timer: Any = None
        # An empty context: the polls run as the world, not as the node that
        # asked (whose crash would silence them).
        self._context = contextvars.Context()
        self._schedule()

    @property
    def held(self) -> bool:
        return self.held_at is not None

    def _schedule(self) -> None:
        loop = self._world._loop
        when = min(loop.time() + self._every, self.deadline)
        self._timer = loop.call_at(when, self._poll, context=self._context)

    def cancel(self) -> None:
        """Stop checking (the check neither passes nor fails)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _poll(self) -> None:
        self._timer = None
        w = self._world
        if w._ended or w._failure is not None:
            return
        what = f"eventually {self.name!r} ({_describe(self._predicate)})"
        try:
            ok = bool(self._predicate())
        except (KeyboardInterrupt, SystemExit):
            raise  # a request to stop, as from any callback
        except BaseException as exc:  # CancelledError, GeneratorExit, the user's own
            self._fail(PropertyViolation(f"{what}: the predicate raised {exc!r}"), exc)
            return
        now = w.now
        if ok:
            self.held_at = now
            return
        if now >= self.deadline:
            self._fail(
                PropertyViolation(
                    f"{what} did not hold within {self.deadline - self.started:g}s "
                    f"(checked from t={self.started:.6f}s to t={now:.6f}s)"
                ),
                None,
            )
            return
        self._schedule()

    def _fail(self, exc: PropertyViolation, cause: BaseException | None) -> None:
        w = self._world
        exc.__cause__ = cause
        w._failure = exc
        w._failed_node = None
        w._loop.stop()

    def __repr__(self) -> str:
        state = f"held at t={self.held_at:.6f}s" if self.held_at is not None else "pending"
        return f"<askew eventually {self.name!r} by t={self.deadline:.6f}s {state}>"


class _Always:
    """One world.always check; the world's _AlwaysSet calls it."""

    def __init__(self, checks: _AlwaysSet, name: str, predicate: Callable[[], Any]) -> None:
        self._checks = checks
        self.name = name
        self.predicate = predicate

    def cancel(self) -> None:
        """Stop checking it."""
        if self in self._checks.checks:
            self._checks.checks.remove(self)

    def __repr__(self) -> str:
        return f"<askew always {self.name!r}>"


class _AlwaysSet:
    """Every always check of a world, called by the loop after each step."""

    def __init__(self, world: World) -> None:
        self._world = world
        self.checks: list[_Always] = []
        # Observers of every step that are no check (askew/_world/states.py,
        # Replay's stop_at): called first, and until the world ends.
        self.observers: list[Callable[[], None]] = []
        self._stopped = False  # a predicate raised KeyboardInterrupt or SystemExit

    def __call__(self) -> None:
        w = self._world
        if w._ended or self._stopped:
            return
        for observe in self.observers:
            observe()
        if w._failure is not None:
            return
        for check in tuple(self.checks):
            try:
                ok = bool(check.predicate())
            except (KeyboardInterrupt, SystemExit):
                # A request to stop, not a verdict on the run: it goes up as
                # from any step, and the checks stay quiet while the run
                # ends (a predicate raising again there would abort the
                # teardown and leave its tasks and coroutines unfinished).
                self._stopped = True
                raise
            except BaseException as exc:  # CancelledError, GeneratorExit, the user's own
                self._fail(check, "raised " + safe_repr(exc), exc)
            if not ok:
                self._fail(check, "did not hold", None)

    def _fail(self, check: _Always, what: str, cause: BaseException | None) -> None:
        w = self._world
        exc = PropertyViolation(
            f"always {check.name!r} ({_describe(check.predicate)}) {what} after step "
            f"{w._loop.steps} at t={w.now:.6f}s"
        )
        exc.__cause__ = cause
        w._failure = exc
        w._failed_node = None
        raise exc


def _step_hook(world: World) -> _AlwaysSet:
    checks = world.__dict__.get("_askew_always")
    if checks is None:
        checks = world.__dict__["_askew_always"] = _AlwaysSet(world)
        world._loop._set_step_hook(checks)
    return checks


def after_each_step(world: World, observe: Callable[[], None]) -> None:
    """Call observe() after every step of world's run, until it ends. It
    must draw nothing and schedule nothing, as a check must not."""
    _step_hook(world).observers.append(observe)


def always(world: World, name: str, predicate: Callable[[], Any]) -> _Always:
    check_name(name, "always")
    if not callable(predicate):
        raise TypeError(f"always({name!r}): the predicate must be callable, got {predicate!r}")
    world._check_live()
    checks = _step_hook(world)
    check = _Always(checks, name, predicate)
    checks.checks.append(check)
    return check


def eventually(
    world: World,
    name: str,
    predicate: Callable[[], Any],
    within: float,
    every: float | None,
) -> _Eventually:
    check_name(name, "eventually")
    if not callable(predicate):
        raise TypeError(f"eventually({name!r}): the predicate must be callable, got {predicate!r}")
    within = check_seconds(within, f"eventually({name!r}, within=...)")
    if every is None:
        every = max(within / POLLS, 1e-9)
    else:
        every = check_seconds(every, f"eventually({name!r}, every=...)", allow_zero=False)
    world._check_live()
    return _Eventually(world, name, predicate, within, every)
