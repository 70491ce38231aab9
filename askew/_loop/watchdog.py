# SPDX-License-Identifier: Apache-2.0
"""The step watchdog: a step that runs longer than `step_timeout` seconds of
real time (a node that never yields: a missing `await` in a loop) is
reported with the seed, the node and the line it is executing, instead of a
silent hang.

It costs the step path nothing: one thread per process, started before the
first watched run makes its loop the active simulation, wakes a few times
per limit and compares the loop's step count (which the loop keeps anyway)
with what it saw last. It reads the host clock only to decide whether to
report, so it never changes a run. On a stuck step it prints the report to
the real stderr (a step stuck in C never sees an exception) and raises
StepTimeout in the loop's thread, where the spinning code fails with it.
"""

from __future__ import annotations

import _thread
import os
import sys
import time
from typing import Any

from ..errors import StepTimeout
from .frames import PACKAGE_DIR

# The host's, taken at import: inside a run these names read virtual time
# (and frames by node), and the watchdog must see the real ones.
_monotonic = time.monotonic
_current_frames = sys._current_frames
_start_thread = _thread.start_new_thread
_stderr = sys.__stderr__

# How many times per limit the thread looks: a stuck step is reported
# between 1 and 1 + 1/_LOOKS limits after it began.
_LOOKS = 4


class _Watch:
    """What the watchdog thread looks at: the loop whose run it guards (None
    between runs) and its limit."""

    def __init__(self) -> None:
        self.loop: Any = None
        self.limit = 0.0
        self.started = False
        self.wake = _thread.allocate_lock()
        self.wake.acquire()  # held: the thread's sleep is a timed acquire


_watch = _Watch()


def _forked() -> None:
    global _watch
    _watch = _Watch()  # the thread stayed in the parent


os.register_at_fork(after_in_child=_forked)


def watch(loop: Any, limit: float) -> None:
    """Guard the run `loop` is about to make (limit 0: none). Called before
    the loop becomes the active simulation, so the thread's start is
    nobody's refusal."""
    if limit <= 0:
        return
    shorter = limit < _watch.limit
    _watch.limit = limit
    _watch.loop = loop
    if not _watch.started:
        _watch.started = True
        _start_thread(_guard, (_watch,))
    elif shorter and _watch.wake.locked():
        _watch.wake.release()  # wake the thread from a longer sleep


def unwatch(loop: Any) -> None:
    """The run is over (on the loop's thread). An interruption is raised
    only while the step it was for still runs (checked under the GIL), so
    it lands in that step, or, if the step returned in that instant, at the
    loop thread's next Python line, still inside this run: the run fails
    with StepTimeout either way. It is never taken back with
    PyThreadState_SetAsyncExc(id, NULL): on 3.11 that leaves the eval
    breaker set with nothing to clear it, and the next call made under a
    profile hook (the timeline's) spins forever."""
    _watch.loop = None


def _guard(watched: _Watch) -> None:
    seen: tuple[Any, int] | None = None
    since = 0.0
    while watched is _watch:
        watched.wake.acquire(timeout=watched.limit / _LOOKS)
        loop = watched.loop
        if loop is None or not loop.is_running():
            seen = None
            continue
        now = _monotonic()
        step = (loop, loop._steps)
        if step != seen:
            seen, since = step, now
        elif now - since >= watched.limit:
            _fire(loop, step[1], now - since)
            since = now  # again after another limit, if it is still stuck


def _fire(loop: Any, steps: int, ran: float) -> None:
    frame = _current_frames().get(loop._thread_id)
    node = loop._node
    who = "the world (the test body)" if node < 0 else f"node {node}"
    report = (
        f"step timeout: a step of {who} has run for {ran:.1f} s of real time without "
        f"returning to the loop (seed={loop.seed}, t={loop._now_ns / 1e9:.6f}s, "
        f"steps={steps}), at {_where(frame)}: likely a loop that never awaits. If "
        f"the step is only slow, raise the limit (now {_watch.limit:g} s): "
        "simulate(step_timeout=...), ASKEW_STEP_TIMEOUT or --askew-step-timeout "
        "(0 turns the watchdog off)"
    )
    StepTimeout.last_report = report
    if loop._interrupt(StepTimeout, steps):
        if _stderr is not None:
            print(f"askew: {report}", file=_stderr, flush=True)


def _where(frame: Any) -> str:
    """The innermost frame outside askew (the user's line), as file:line in f()."""
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<no Python frame of the user's>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}()"
