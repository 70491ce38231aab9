# SPDX-License-Identifier: Apache-2.0
"""The stdlib's thread primitives for a run with threads (askew/_loop/threads.py
owns the run's actors and the baton): askew's Lock, on which threading's own
Condition, Event, Semaphore, Barrier, queue.Queue and concurrent Futures are
built while the scope is open, and Thread.start, join and is_alive for the
run's threads. askew/_loop/patches.py installs them for a scope; they act
only while a run with threads is live, and are the stdlib's otherwise.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures.thread as _cf_thread
import queue
import sys
import threading
import time as _time
from collections.abc import Callable
from typing import Any

from .refusal import raise_refusal
from .threads import DONE, LOOP, Actor, ThreadKilled, caller, current

_real_lock = _thread.allocate_lock
_real_sleep = _time.sleep
_real_monotonic = _time.monotonic


class Lock:
    """threading.Lock for a run with threads: acquire and release are switch
    points, and a blocked acquire waits for the baton rather than the OS.
    Made by threading.Lock() (and so by Condition, Event, Semaphore,
    Barrier, queue.Queue and concurrent Futures) while the run's scope is
    open. Outside the run's actors (a thread of the host, after the run) it
    is a plain lock that polls."""

    __slots__ = ("__weakref__", "_held", "_number", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: list[int] = []
        run = current()
        self._number = 0 if run is None else next(run.lock_numbers)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        run = current()
        me = None if run is None else run.me()
        if run is None or me is None:
            return self._acquire_outside(blocking, timeout)
        run.switch(me)
        if not self._held:
            self._held = True
            return True
        if not blocking:
            return False
        remaining: float | None = None if timeout == -1 else timeout
        start = run.loop._now_ns
        while self._held:
            self._waiters.append(me)
            woke = run.block(me, f"acquire() of {self!r}", remaining)
            if me in self._waiters:
                self._waiters.remove(me)
            if not woke and self._held:
                return False
            if remaining is not None:
                remaining = max(0.0, timeout - (run.loop._now_ns - start) / 1e9)
        self._held = True
        return True

    def _acquire_outside(self, blocking: bool, timeout: float) -> bool:
        give_up = None if timeout == -1 else _real_monotonic() + timeout
        while self._held:
            if not blocking or (give_up is not None and _real_monotonic() >= give_up):
                return False
            _real_sleep(0.0005)
        self._held = True
        return True

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self._held = False
        run = current()
        waiters, self._waiters = self._waiters, []
        if run is None:
            return
        # Every waiter may take it: which one does is the seed's draw, as
        # any of them (or a newcomer) could win on a real machine.
        for aid in waiters:
            if aid == LOOP:
                run.wake_loop()
            else:
                run.wake(aid)
        me = run.me()
        if me is not None:
            run.switch(me)

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    def locked(self) -> bool:
        return self._held

    acquire_lock = acquire
    release_lock = release
    locked_lock = locked

    def _at_fork_reinit(self) -> None:
        self._held = False
        self._waiters = []

    def __repr__(self) -> str:
        state = "locked" if self._held else "unlocked"
        return f"<{state} lock #{self._number} of the run>"


def _ours() -> bool:
    """Whether the caller is an actor of a live run with threads: what it
    makes is the run's; a thread of the host's gets the real thing."""
    return caller(current()) is not None


def make_lock() -> Any:
    """threading.Lock() during a scope: askew's lock for the run's actors,
    the real one otherwise."""
    return Lock() if _ours() else _real_lock()


def _is_ours(lock: object) -> bool:
    return isinstance(lock, Lock) or isinstance(getattr(lock, "_block", None), Lock)


def make_waiter() -> Any:
    """threading._allocate_lock() during a scope. Condition.wait makes its
    waiter with it: the kind of the condition's own lock, so a condition
    made before the run (a real one another thread of the host notifies)
    waits on a real lock. Anything else is as make_lock."""
    cond = sys._getframe(1).f_locals.get("self")
    if isinstance(cond, threading.Condition):
        return Lock() if _ours() and _is_ours(cond._lock) else _real_lock()  # type: ignore[attr-defined]
    return make_lock()


def make_rlock(*args: Any, **kwargs: Any) -> Any:
    if _ours():
        return threading._PyRLock(*args, **kwargs)  # type: ignore[attr-defined]
    return _thread.RLock(*args, **kwargs)


# ---- the names a scope puts in place (askew/_loop/patches.py) -------------------

_original_join = threading.Thread.join
_original_is_alive = threading.Thread.is_alive


def _actor_of(thread: threading.Thread) -> Actor | None:
    actor: Actor | None = vars(thread).get("_askew_actor")
    return actor


def _thread_body(thread: threading.Thread) -> Callable[[], None]:
    def body() -> None:
        try:
            thread.run()
        except ThreadKilled:
            raise
        except SystemExit:
            pass
        except BaseException:
            hook = getattr(thread, "_invoke_excepthook", None)
            if hook is not None:
                hook(thread)
            else:
                threading.excepthook(threading.ExceptHookArgs((*sys.exc_info(), thread)))

    return body


def starter(refuse: Callable[[threading.Thread], None]) -> Callable[[threading.Thread], None]:
    """Thread.start during a scope: a thread of the run when a run with
    threads is live, else `refuse` (askew's refusal, or the real start
    outside a simulation)."""

    def start(self: threading.Thread) -> None:
        run = current()
        me = caller(run)
        if run is None or me is None:
            refuse(self)
            return
        if not getattr(self, "_initialized", True):
            raise RuntimeError("thread.__init__() not called")
        if _actor_of(self) is not None or self._started.is_set():  # type: ignore[attr-defined]
            raise RuntimeError("threads can only be started once")
        self._started._flag = True  # type: ignore[attr-defined]
        run.start(self, _thread_body(self))

    return start


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    actor = _actor_of(self)
    if actor is None:
        _original_join(self, timeout)
        return
    run = current()
    me = caller(run)
    if run is None or me is None or actor.state == DONE:
        return  # a thread of an ended run: it was unwound with its run
    if me == actor.id:
        raise RuntimeError("cannot join current thread")
    run.join(me, actor, self.name, None if timeout is None else max(0.0, timeout))


def _is_alive(self: threading.Thread) -> bool:
    actor = _actor_of(self)
    if actor is None:
        return bool(_original_is_alive(self))
    return actor.state != DONE


_SIMPLE_QUEUE = queue.SimpleQueue


class _SimpleQueue:
    """queue.SimpleQueue during a scope: the pure-Python one (built on the
    run's locks) in a run with threads, the C one otherwise."""

    def __new__(cls) -> Any:
        return queue._PySimpleQueue() if _ours() else _SIMPLE_QUEUE()  # type: ignore[attr-defined]


_original_run_forever = asyncio.BaseEventLoop.run_forever


def _run_forever(self: asyncio.BaseEventLoop) -> None:
    # A stock loop on a thread of the run would wait in a real select()
    # while it holds the baton: everything else would stop, for good.
    if caller(current()) not in (None, LOOP):
        raise_refusal(
            f"{type(self).__name__}.run_forever() on a thread of the run (asyncio.run, "
            "anyio's start_blocking_portal, a loop of its own on a worker): a stock event "
            "loop there waits on real I/O, outside the seed's control. Start that loop's "
            "thread before the run, or run its work as a task of the run's loop."
        )
    _original_run_forever(self)


def install(names: Any, refuse: Callable[[threading.Thread], None]) -> None:
    """Put the thread names in place on `names` (a patches.NameSwap)."""
    names.set(asyncio.BaseEventLoop, "run_forever", _run_forever)
    names.set(threading.Thread, "start", starter(refuse))
    names.set(threading.Thread, "join", _join)
    names.set(threading.Thread, "is_alive", _is_alive)
    names.set(threading, "Lock", make_lock)
    names.set(threading, "_allocate_lock", make_waiter)
    names.set(threading, "RLock", make_rlock)
    names.set(_thread, "allocate_lock", make_lock)
    names.set(queue, "SimpleQueue", _SimpleQueue)
    # The lock every ThreadPoolExecutor.submit takes, made at import: a real
    # one would block a thread for good while another holds it across a
    # thread's start.
    names.set(_cf_thread, "_global_shutdown_lock", Lock())
