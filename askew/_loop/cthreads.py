# SPDX-License-Identifier: Apache-2.0
"""C threads of a run under askew-exec (docs/design.md §3, "Threads";
docs/preload.md, "C threads").

A thread C code starts with pthread_create inside a run with
executor="threads" is an actor of the run's baton, as a Python thread of the
run is (askew/_loop/threads.py): the preload's trampoline waits for the
baton before the thread's code runs, and each of its switch points
(pthread_create, its exit, pthread_join, the pthread mutex, condvar and
semaphore calls, its sleeps), and each of the loop's while the run has C
threads, comes here through the extension's thread hook
(ext/preload_thread.c) with the GIL, on the thread that makes it, which
holds the baton. `serve` answers as the hook's contract says
(preload/askew_preload.h): 0, or a negative errno. Never waits but on the
baton, never reads the host clock.
"""

from __future__ import annotations

import _thread
import errno
import os

from .. import _core
from ..errors import DeadlockError
from .nodes import node_var
from .preload import symbolize
from .threads import DONE, LOOP, RUNNABLE, Actor, ThreadKilled, Threads, current

# The hook's operations and kinds, as the extension exports them.
CREATE, START, BEGIN = _core.THREAD_CREATE, _core.THREAD_START, _core.THREAD_BEGIN
SWITCH, BLOCK, WAKE = _core.THREAD_SWITCH, _core.THREAD_BLOCK, _core.THREAD_WAKE
JOIN, EXIT = _core.THREAD_JOIN, _core.THREAD_EXIT
KILLED, DEADLOCK = _core.THREAD_KILLED, _core.THREAD_DEADLOCK
MUTEX, COND, SEM, SLEEP = _core.SYNC_MUTEX, _core.SYNC_COND, _core.SYNC_SEM, _core.SYNC_SLEEP
_KIND_NAMES = {MUTEX: "mutex", COND: "condition variable", SEM: "semaphore"}
ALL = _core.THREAD_WAKE_ALL


def serve(
    op: int,
    me: int,
    target: int,
    kind: int,
    key: int,
    release: int,
    timeout_ns: int,
    count: int,
    status: int,
    holder: int,
    call: str,
    path: str,
    offset: int,
) -> int:
    """One switch point of a C thread (or of the loop while the run has C
    threads), from the preload's thread hook."""
    run = current()
    if run is None:
        # A run with no threads (executor="inline" or "refuse"), or one that
        # has ended: no C thread may start, and one still here ends (the
        # loop's own call just goes on).
        if op == CREATE:
            return -errno.EAGAIN
        return 0 if me == LOOP else KILLED
    try:
        if op == CREATE:
            return _create(run, me)
        if op == START:
            return _start(run, me, target, status)
        if op == BEGIN:
            return _begin(run, me)
        if op == SWITCH:
            run.switch(me)
        elif op == BLOCK:
            what = _describe(run, kind, key, timeout_ns, holder, call, _where(path, offset))
            return _block(run, me, kind, key, release, timeout_ns, what)
        elif op == WAKE:
            _wake(run, key, count)
            run.switch(me)
        elif op == JOIN:
            _join(run, me, target, f"{call}() of thread {{}}{_where(path, offset)}")
        elif op == EXIT:
            run._exit(run.actors[me])
        return 0
    except ThreadKilled:
        return KILLED
    except DeadlockError as exc:
        # Raised on the loop, inside C code that cannot take an exception:
        # the call fails, and the run fails with this at the step's end
        # (once: the C code may wait again, on what can never come).
        if not run.deadlocked:
            run.deadlocked = True
            _core._note_refusal(exc)
        return DEADLOCK


def _create(run: Threads, me: int) -> int:
    parent = run.actors.get(me)
    token = parent.token if parent is not None else node_var.get(-1)
    aid = int(run.baton.add())
    number = sum(1 for a in run.actors.values() if a.native) + 1
    actor = Actor(aid, f"C thread {number}", token)
    actor.native = True
    run.actors[aid] = actor
    run.started += 1
    run._take_sleep()
    return aid


def _start(run: Threads, me: int, aid: int, status: int) -> int:
    actor = run.actors[aid]
    if status != 0:
        run._set(aid, DONE)  # pthread_create failed: it never runs
        run.switch(me)
        return 0
    actor.waits_on = None
    run._set(aid, RUNNABLE)
    if me == LOOP:
        run._want_step()
    run.switch(me)
    return 0


def _begin(run: Threads, me: int) -> int:
    actor = run.actors[me]
    run.baton.wait(me)
    actor.ident = _thread.get_ident()
    run.by_ident[actor.ident] = actor
    run.loop._node = actor.node
    if actor.killed:
        actor.unwinding = True
        return KILLED
    return 0


def _number(run: Threads, key: int) -> int:
    number = run.cnumbers.get(key)
    if number is None:
        number = run.cnumbers[key] = len(run.cnumbers) + 1
    return number


def _describe(
    run: Threads, kind: int, key: int, timeout_ns: int, holder: int, call: str, where: str
) -> str:
    if kind == SLEEP:
        what = f"{call}({timeout_ns / 1e9:g} s)"
    else:
        what = f"{call}() of {_KIND_NAMES.get(kind, 'object')} #{_number(run, key)}"
        if holder == LOOP:
            what += " held by the event loop"
        elif holder in run.actors:
            what += f" held by thread {run.actors[holder].name!r}"
    return what + where


def _where(path: str, offset: int) -> str:
    """The C caller for a report (", called from libx.so(fn+0x1c)"), or ""."""
    if not path:
        return ""
    name = symbolize(path, offset) or f"+{offset:#x}"
    return f", called from {os.path.basename(path)}({name})"


def _join(run: Threads, me: int, target: int, what: str) -> None:
    actor = run.actors.get(target)
    if actor is None or actor.state == DONE:
        run.switch(me)
        return
    actor.joiners.append(me)
    try:
        run.block(me, what.format(repr(actor.name)))
    finally:
        if me in actor.joiners:
            actor.joiners.remove(me)


def _block(
    run: Threads, me: int, kind: int, key: int, release: int, timeout_ns: int, what: str
) -> int:
    if release:
        _wake(run, release, ALL)
    waiters = None
    if key:
        waiters = run.cwaiters.setdefault(key, [])
        waiters.append(me)
    try:
        woke = run.block(me, what, None if timeout_ns < 0 else timeout_ns / 1e9)
    finally:
        if waiters is not None:
            if me in waiters:
                waiters.remove(me)
            if not waiters:
                run.cwaiters.pop(key, None)
    return 0 if woke else -errno.ETIMEDOUT


def _wake(run: Threads, key: int, count: int) -> None:
    waiters = run.cwaiters.get(key)
    if not waiters:
        return
    woken = waiters[:count]
    del waiters[:count]
    if not waiters:
        del run.cwaiters[key]
    for aid in woken:
        if aid == LOOP:
            run.wake_loop()
        else:
            run.wake(aid)


__all__ = ["serve"]
