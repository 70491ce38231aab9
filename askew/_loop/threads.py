# SPDX-License-Identifier: Apache-2.0
"""Deterministic threads inside a run (docs/design.md §3, "Threads").

A thread started inside a run with executor="threads" (threading.Thread,
asyncio.to_thread, run_in_executor, a ThreadPoolExecutor) is a real OS
thread that runs only while it holds the run's baton (askew._core.Baton,
ext/engine/baton.c); the loop is actor 0 and holds it otherwise. The baton
moves only at switch points: a thread's start, exit and join, every
acquire and release of the locks made inside the run (so every Condition,
Event, Semaphore, Barrier, queue.Queue and concurrent Future built on them),
time.sleep, and call_soon_threadsafe. Who runs next is the seed's draw among
the runnable actors. Timed waits are timers on the loop in virtual time.

This module owns the run's actors and the lock; askew/_loop/patches.py
puts `Lock`, `start`, `join` and `sleep` in place during a scope, and they
act only while a run with threads is in progress, so every other run is
unchanged. Never reads the host clock, never lets two actors run at once.
"""

from __future__ import annotations

import _thread
import concurrent.futures.thread as _cf_thread
import contextvars
import functools
import heapq
import itertools
import logging
import os
import sys
import threading
import time as _time
import traceback
from collections.abc import Callable
from typing import Any, SupportsIndex

from .. import _core
from ..errors import DeadlockError
from .nodes import node_var

LOOP = 0  # the loop's actor id (ext/engine/baton.h's ASKEW_BATON_HOME)
RUNNABLE: int = _core.BATON_RUNNABLE
BLOCKED: int = _core.BATON_BLOCKED
DONE: int = _core.BATON_DONE

# Before the scope's patches: what starts a real OS thread, and a real
# sleep for the rare caller outside the baton (a watchdog thread).
_current_frames = sys._current_frames  # keyed by real idents (identity.py remaps one)
_virtual: Any = _core.virtual
_cf_logger = logging.getLogger("concurrent.futures")


class ThreadKilled(SystemExit):
    """Raised at a thread's switch point when its run ends or its node
    crashed: the thread unwinds in the run's dead zone. A SystemExit, so
    threading's excepthook stays silent about it."""


class Actor:
    """One thread of a run."""

    __slots__ = (
        "id",
        "ident",
        "joiners",
        "killed",
        "name",
        "native",
        "node",
        "state",
        "thread",
        "token",
        "unwinding",
        "waits_on",
        "woke",
    )

    def __init__(self, aid: int, name: str, token: int) -> None:
        self.id = aid
        self.name = name
        self.token = token  # the node incarnation it belongs to, -1: the test body
        self.node = -1 if token < 0 else token >> _core.NODE_TOKEN_SHIFT
        self.state = BLOCKED
        self.waits_on: str | None = "its start"
        self.killed = False
        self.woke = False  # a timed wait: woken by its event rather than the timer
        self.joiners: list[int] = []
        self.ident: int | None = None
        self.thread: threading.Thread | None = None
        self.unwinding = False  # ThreadKilled raised: the rest of its switch points pass
        self.native = False  # a C thread (askew/_loop/cthreads.py), not a Python one


class _Sleeper:
    __slots__ = ("actor", "deadline_ns", "done", "handle", "seq")

    def __init__(self, deadline_ns: int, seq: int, actor: int) -> None:
        self.deadline_ns = deadline_ns
        self.seq = seq
        self.actor = actor
        self.handle: Any = None
        self.done = False

    def __lt__(self, other: _Sleeper) -> bool:
        return (self.deadline_ns, self.seq) < (other.deadline_ns, other.seq)


# The run whose threads are live in this process, or None (one simulation
# thread per process, docs/design.md §1).
_current: Threads | None = None


def current() -> Threads | None:
    return _current


def caller(run: Threads | None) -> int | None:
    """The calling actor of the live run `run`, None outside one."""
    if run is None or not _virtual.in_simulation():
        return None
    return run.me()


def actor_number() -> int:
    """The calling thread's number in the live run (1, 2, ... in start
    order), 0 for the loop's thread and any thread that is not the run's:
    what askew/_loop/identity.py adds to the node's thread ids."""
    run = _current
    actor = None if run is None else run.by_ident.get(_thread.get_ident())
    return 0 if actor is None else actor.id


class Threads:
    """A loop's threads: its actors, the baton, timed waits, and what the
    threads ask of the loop (run on the loop's own thread when it next holds
    the baton)."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.baton = _core.Baton(loop)
        self.actors: dict[int, Actor] = {}
        self.by_ident: dict[int, Actor] = {}
        self.requests: list[Callable[[], None]] = []
        self.sleepers: list[_Sleeper] = []
        self.sleeper_seq = itertools.count()
        self.lock_numbers = itertools.count(1)
        self.step_queued = False
        self.loop_blocked_on: str | None = None
        self.started = 0
        self.home: int | None = None  # the loop's thread, from the run's first step
        # C threads' waits (askew/_loop/cthreads.py): the actors waiting on
        # each object's address, in the order they began, and each object's
        # number in this run (for reports that replay).
        self.cwaiters: dict[int, list[int]] = {}
        self.cnumbers: dict[int, int] = {}
        self.deadlocked = False
        self.reset(0)

    # ---- the run ----------------------------------------------------------

    def reset(self, seed: int) -> None:
        """A new run; the last one's threads are all gone (kill_all)."""
        self.baton.reset(seed)
        self.actors.clear()
        self.by_ident.clear()
        self.requests.clear()
        self.sleepers.clear()
        self.lock_numbers = itertools.count(1)
        self.step_queued = False
        self.loop_blocked_on = None
        self.started = 0
        self.cwaiters.clear()
        self.cnumbers.clear()
        self.deadlocked = False  # a C call on the loop met a deadlock (cthreads.py)

    def enter(self) -> None:
        """The run has threads from now until it ends (leave)."""
        global _current
        self.home = _thread.get_ident()
        _current = self

    @staticmethod
    def _take_sleep() -> None:
        # From a run's first thread: time.sleep in a thread is a timed wait;
        # the loop's stays the scope's (it consumes virtual time), and a run
        # that starts no thread never sees this.
        global _sleep_before
        if _time.sleep is not _sleep:
            _sleep_before = _time.sleep
            _time.sleep = _sleep

    def leave(self) -> None:
        global _current
        if _current is self:
            _current = None
            if _time.sleep is _sleep:
                _time.sleep = _sleep_before

    @property
    def switches(self) -> int:
        """Hand-offs of the baton this run."""
        return int(self.baton.handoffs)

    def me(self) -> int | None:
        """The calling actor: LOOP, a thread's id, or None for a thread that
        is not the run's (it runs outside the baton)."""
        ident = _thread.get_ident()
        if ident == self.home:
            return LOOP
        actor = self.by_ident.get(ident)
        return None if actor is None else actor.id

    def _set(self, aid: int, state: int) -> None:
        if aid != LOOP:
            actor = self.actors[aid]
            if actor.state == DONE:
                return
            actor.state = state
        self.baton.set(aid, state)

    def wake(self, aid: int) -> None:
        """Make a blocked actor runnable (a lock released, a timer fired)."""
        if aid == LOOP:
            self.baton.set(LOOP, RUNNABLE)
            self.loop_blocked_on = None
            return
        actor = self.actors[aid]
        if actor.state != BLOCKED or actor.killed:
            return
        actor.woke = True
        actor.waits_on = None
        self._set(aid, RUNNABLE)
        if self.me() == LOOP:
            self._want_step()

    def _runnable_threads(self) -> bool:
        return any(a.state == RUNNABLE for a in self.actors.values())

    def _want_step(self) -> None:
        # The loop gives a runnable thread its chance at a step boundary: a
        # handle in its ready queue, behind what is ready now, as a thread's
        # wake-up is behind what the loop is doing.
        if not self.step_queued:
            self.step_queued = True
            self.loop.call_soon(self._step)

    def _step(self) -> None:
        self.step_queued = False
        self.switch(LOOP, offer=True)
        if self._runnable_threads():
            self._want_step()

    # ---- switch points -------------------------------------------------------

    def switch(self, me: int, *, offer: bool = False) -> None:
        """A switch point of `me`, which holds the baton: the seed draws who
        runs next among the runnable actors (a runnable `me` mostly keeps
        it; with `offer`, the loop's step for its threads, it does not), and
        this returns once `me` runs again. A blocked `me` (block) returns
        when it was woken and drawn."""
        if not self.actors:
            return  # no thread yet: nothing to switch to, nothing drawn
        if me != LOOP and self.actors[me].killed:
            self._kill_here(self.actors[me])
            return
        saved_node = self.loop._node if me == LOOP else None
        holder = -1 if offer else me
        while True:
            nxt = self.baton.pick(holder)
            if nxt is None:
                if me == LOOP:
                    self._loop_stuck()
                    continue
                nxt = LOOP  # the loop is blocked too: it lets time pass, or reports
            if nxt == me:
                break
            self.baton.give(me, nxt)
            if me == LOOP:
                self.loop._node = saved_node
                self._drain()
                if self.loop_blocked_on is None:
                    break
            else:
                actor = self.actors[me]
                self.loop._node = actor.node
                if actor.killed:
                    self._kill_here(actor)
                    return
                if actor.state == RUNNABLE:
                    break

    @staticmethod
    def _kill_here(actor: Actor) -> None:
        # The first switch point after the kill raises; the ones its unwinding
        # passes (a finally's lock) go on without a switch.
        if not actor.unwinding:
            actor.unwinding = True
            raise ThreadKilled()

    def block(self, me: int, what: str, timeout: float | None = None) -> bool:
        """`me` waits for `what` (a lock, a join, a sleep) until another
        actor wakes it, or `timeout` virtual seconds pass: True when woken,
        False on timeout."""
        sleeper = None
        if timeout is not None:
            sleeper = self._sleep_until(me, max(0.0, timeout))
        if me == LOOP:
            self.loop_blocked_on = what
            self.baton.set(LOOP, BLOCKED)
            self.switch(LOOP)
            woke = sleeper is None or not sleeper.done or self.loop_woke
            self.loop_woke = False
        else:
            actor = self.actors[me]
            if actor.unwinding:
                raise ThreadKilled()  # an unwinding thread cannot wait
            actor.waits_on = what
            actor.woke = False
            self._set(me, BLOCKED)
            self.switch(me)
            woke = actor.woke
        if sleeper is not None and not sleeper.done:
            self._cancel_sleeper(sleeper)
        return woke

    loop_woke = False

    def wake_loop(self) -> None:
        self.loop_woke = True
        self.wake(LOOP)

    def _sleep_until(self, me: int, seconds: float) -> _Sleeper:
        deadline = int(self.loop._now_ns) + round(seconds * 1e9)
        sleeper = _Sleeper(deadline, next(self.sleeper_seq), me)
        heapq.heappush(self.sleepers, sleeper)
        token = self.actors[me].token if me != LOOP else -1
        self._ask_loop(lambda: self._arm(sleeper, token))
        return sleeper

    def _arm(self, sleeper: _Sleeper, token: int) -> None:
        if sleeper.done:
            return
        ctx = _context_of(token)
        delay = max(0, sleeper.deadline_ns - int(self.loop._now_ns)) / 1e9
        sleeper.handle = self.loop.call_later(delay, self._fire, sleeper, context=ctx)

    def _fire(self, sleeper: _Sleeper) -> None:
        if sleeper.done:
            return
        sleeper.done = True
        self.sleepers.remove(sleeper)
        heapq.heapify(self.sleepers)
        if sleeper.actor == LOOP:
            self.wake(LOOP)
            return
        actor = self.actors[sleeper.actor]
        if actor.state == BLOCKED and not actor.killed:
            actor.waits_on = None
            self._set(actor.id, RUNNABLE)
            if self.me() == LOOP:
                self._want_step()

    def _cancel_sleeper(self, sleeper: _Sleeper) -> None:
        sleeper.done = True
        if sleeper in self.sleepers:
            self.sleepers.remove(sleeper)
            heapq.heapify(self.sleepers)
        if sleeper.handle is not None:
            sleeper.handle.cancel()

    def _loop_stuck(self) -> None:
        """The loop blocks inside a callback and no actor can run: time
        passes to the earliest timed wait (as it does while a real loop
        blocks), or it is a deadlock."""
        self._drain()
        if not self.sleepers:
            self.baton.set(LOOP, RUNNABLE)
            what = self.loop_blocked_on
            self.loop_blocked_on = None
            raise DeadlockError(self.report(f"the event loop blocks in {what}"))
        sleeper = self.sleepers[0]
        ahead = sleeper.deadline_ns - int(self.loop._now_ns)
        if ahead > 0:
            _virtual.sleep(ahead / 1e9)
        if sleeper.handle is not None:
            sleeper.handle.cancel()
        sleeper.handle = None
        self._fire(sleeper)

    def _ask_loop(self, request: Callable[[], None]) -> None:
        if self.me() == LOOP:
            request()
        else:
            self.requests.append(request)

    def _drain(self) -> None:
        while self.requests:
            self.requests.pop(0)()

    def call_soon_threadsafe(self, me: int, handle: Any) -> None:
        """A thread hands the loop a callback: queued when the loop next
        holds the baton, then a switch point."""

        def schedule() -> None:
            if not handle.cancelled():
                self.loop.call_soon(handle._callback, *handle._args, context=handle._context)

        self._ask_loop(schedule)
        self.switch(me)

    # ---- threads ------------------------------------------------------------

    def start(self, thread: threading.Thread, body: Callable[[], None]) -> Actor:
        """Start `thread` (its run is `body`) as an actor of this run: a real
        OS thread, parked until the seed first hands it the baton."""
        me = self.me()
        assert me is not None
        self._take_sleep()
        aid = int(self.baton.add())
        actor = Actor(aid, thread.name, node_var.get(-1))
        self.actors[aid] = actor
        actor.thread = thread
        thread._askew_actor = actor  # type: ignore[attr-defined]
        self.started += 1
        ctx = _context_of(actor.token)
        self.baton.start(functools.partial(self._run_actor, actor, thread, body, ctx))
        actor.waits_on = None
        self._set(aid, RUNNABLE)
        if me == LOOP:
            self._want_step()
        self.switch(me)
        return actor

    def _run_actor(
        self, actor: Actor, thread: threading.Thread, body: Callable[[], None], ctx: Any
    ) -> None:
        self.baton.wait(actor.id)
        actor.ident = _thread.get_ident()
        self.by_ident[actor.ident] = actor
        self.loop._node = actor.node
        try:
            if not actor.killed:
                thread._ident = actor.ident  # type: ignore[attr-defined]
                threading._active[actor.ident] = thread  # type: ignore[attr-defined]
                ctx.run(body)
        except ThreadKilled:
            pass
        finally:
            threading._active.pop(actor.ident, None)  # type: ignore[attr-defined]
            # What the stdlib asks of a thread that ended (3.11 and 3.12's join,
            # concurrent.futures' exit handler) is true of it.
            thread._is_stopped = True  # type: ignore[attr-defined]
            _cf_thread._threads_queues.pop(thread, None)  # type: ignore[attr-defined]
            self._exit(actor)

    def _exit(self, actor: Actor) -> None:
        for joiner in actor.joiners:
            if joiner == LOOP:
                self.wake_loop()
            else:
                self.wake(joiner)
        actor.joiners.clear()
        self.baton.set(actor.id, DONE)
        actor.state = DONE
        del self.by_ident[actor.ident]  # type: ignore[arg-type]
        if actor.killed:
            self.baton.pass_on(actor.id, LOOP)  # back to the loop that ends it
            return
        nxt = self.baton.pick(-1)
        self.baton.pass_on(actor.id, LOOP if nxt is None else nxt)

    def join(self, me: int, actor: Actor, name: str, timeout: float | None) -> None:
        if actor.state == DONE:
            self.switch(me)
            return
        actor.joiners.append(me)
        self.block(me, f"join() of thread {name!r}", timeout)
        if me in actor.joiners:
            actor.joiners.remove(me)

    def sleep(self, me: int, seconds: float) -> None:
        self.block(me, f"time.sleep({seconds!r})", seconds)

    # ---- the end of a run ------------------------------------------------------

    def crash_node(self, token: int) -> None:
        """The threads of a crashed incarnation run no more: they never get
        the baton again until the run's end unwinds them (kill_all)."""
        for actor in self.actors.values():
            if actor.state != DONE and actor.token == token:
                actor.killed = True
                self._set(actor.id, BLOCKED)

    def kill_all(self) -> None:
        """On the loop, at the run's end: unwind every thread still alive, in
        creation order; each raises ThreadKilled at its switch point and
        hands the baton back when it has exited."""
        if not self.actors:
            return
        saved_node = self.loop._node
        self.enter()
        quiet = _cf_logger.disabled
        _cf_logger.disabled = True  # a worker logs what unwinds it as an error
        try:
            self._shut_executors()
            for aid in sorted(self.actors):
                actor = self.actors[aid]
                if actor.state == DONE:
                    continue
                actor.killed = True
                self.baton.give(LOOP, aid)
        finally:
            _cf_logger.disabled = quiet
            self.loop._node = saved_node
            self.leave()
        self.requests.clear()
        for sleeper in self.sleepers:
            if sleeper.handle is not None:
                sleeper.handle.cancel()
        self.sleepers.clear()

    def _shut_executors(self) -> None:
        """The idle workers of the run's thread pools leave as a shut-down
        pool's do: each pool marked shut down, a None in its queue."""
        queues: list[Any] = []
        for actor in self.alive():
            thread = actor.thread
            if thread is None or getattr(thread, "_target", None) is not _cf_thread._worker:
                continue
            ref, work_queue = thread._args[:2]  # type: ignore[attr-defined]
            executor = ref()
            if executor is not None:
                executor._shutdown = True
            if all(q is not work_queue for q in queues):
                queues.append(work_queue)
        for work_queue in queues:
            work_queue.put(None)
        while self._runnable_threads():
            self.switch(LOOP)

    def alive(self) -> list[Actor]:
        return [a for a in self.actors.values() if a.state != DONE]

    def report(self, headline: str) -> str:
        loop = self.loop
        lines = [
            f"deadlock: {headline}, and no thread can run "
            f"(seed={loop.seed}, t={loop.time():.6f}s, steps={loop.steps})"
        ]
        lines.extend(self.report_lines())
        return "\n".join(lines)

    def report_lines(self) -> list[str]:
        """Each live thread with what it waits on and its stack, as a
        goroutine dump has them."""
        frames = _current_frames()
        lines: list[str] = []
        for actor in self.alive():
            lines.append(f"  thread {actor.name!r} waits on {actor.waits_on or 'the baton'}")
            frame = frames.get(actor.ident) if actor.ident is not None else None
            for entry in traceback.extract_stack(frame)[-8:] if frame is not None else []:
                if entry.filename in _OWN_FILES:
                    continue
                lines.append(f"    {entry.filename}:{entry.lineno} in {entry.name}")
        return lines


# askew's own frames, left out of a thread's stack in a report.
_OWN_FILES = {__file__, os.path.join(os.path.dirname(__file__), "cthreads.py")}


def _context_of(token: int) -> contextvars.Context:
    """A fresh context that runs as node incarnation `token` (none if < 0)."""
    ctx = contextvars.Context()
    if token >= 0:
        ctx.run(node_var.set, token)
    return ctx


# What time.sleep was when a run with threads began (the scope's).
_sleep_before: Callable[[float | SupportsIndex], None] = _time.sleep


def _sleep(secs: float | SupportsIndex) -> None:
    run = _current
    me = caller(run)
    if run is None or me is None or me == LOOP:
        _sleep_before(secs)
        return
    seconds = float(secs)  # not a number: float()'s TypeError
    if seconds != seconds or seconds < 0:
        raise ValueError("sleep length must be non-negative")
    run.sleep(me, seconds)
