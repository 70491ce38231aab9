# SPDX-License-Identifier: Apache-2.0
"""Stepping back in a run: a replayed seed stopped at a step or an instant
(replay.run(stop_at=..., t=...), `askew replay --at`), where a debugger
opens with the world, its nodes, the log and the locals of the node that
ran then in scope; and the state of every node at every step of a run
(Replay.states, `askew replay --print`). A seed names one run, so the
stop falls on the same step in every replay. It only observes: the stop
is a step observer (askew/_world/monitors.py), which draws nothing, so the
run goes on to the verdict the original reached. Called by
askew/_run/runner.py's Replay and askew/_run/sweep.py's command.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

from .._loop.frames import PACKAGE_DIR
from .._loop.text import short_repr
from .._world.monitors import after_each_step
from .._world.node import NodeHandle
from .._world.world import World
from ..errors import SimulationFailure


@dataclasses.dataclass
class Moment:
    """Where a replay stopped: after step `step`, at virtual time `t`.
    `node` is the handle of the node whose step it was (None for the test
    body); `frame` the innermost frame its main task waits in, `here` that
    frame's locals (empty when it has none)."""

    world: World
    step: int
    t: float
    node: NodeHandle | None
    frame: types.FrameType | None
    here: dict[str, Any]
    nodes: list[NodeHandle]  # the world's, as they were at the stop
    log: Any  # world.log

    def __str__(self) -> str:
        who = "the test body" if self.node is None else f"node {self.node.id}"
        where = ""
        if self.frame is not None:
            code = self.frame.f_code
            where = f", waiting in {code.co_name} ({code.co_filename}:{self.frame.f_lineno})"
        return f"stopped after step {self.step} at t={self.t:.6f}s in {who}{where}"


def check_stop(stop_at: object, t: object) -> tuple[int | None, float | None]:
    """Replay's stop_at (a step, an int >= 1) and t (virtual seconds >= 0):
    at most one, each checked, the bad value named."""
    if stop_at is not None and t is not None:
        raise ValueError(f"give stop_at (a step) or t (seconds), not both: {stop_at!r}, {t!r}")
    if stop_at is not None and (
        isinstance(stop_at, bool) or not isinstance(stop_at, int) or stop_at < 1
    ):
        raise ValueError(f"stop_at must be a step number, an int >= 1, got {stop_at!r}")
    if t is not None and (
        isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0
    ):
        raise ValueError(f"t must be virtual seconds, a finite number >= 0, got {t!r}")
    return stop_at, None if t is None else float(t)


def parse_at(text: str) -> tuple[int | None, float | None]:
    """`askew replay --at`: "t=55.04" or "step=812"; ValueError naming it."""
    kind, sep, value = text.strip().partition("=")
    try:
        if sep and kind == "t":
            return check_stop(None, float(value))
        if sep and kind == "step":
            return check_stop(int(value, 10), None)
    except ValueError as exc:
        if "must be" in str(exc):
            raise
    raise ValueError(f"--at must be t=SECONDS or step=N (t=55.04, step=812), got {text!r}")


def _theirs(frame: types.FrameType) -> bool:
    """Whether a frame runs the user's code: not askew's, not the standard library's."""
    path = frame.f_code.co_filename
    return not path.startswith((PACKAGE_DIR, _STDLIB, "<frozen"))


_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _innermost(handle: NodeHandle | None) -> types.FrameType | None:
    """The innermost frame of the user's code a node's main task waits in,
    following its awaits down (past asyncio.sleep and askew's own)."""
    if handle is None:
        return None
    task = handle._slot.task
    if task is None or task.done():
        return None
    coro: Any = task.get_coro()
    frame = None
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        if _theirs(coro.cr_frame) or frame is None:
            frame = coro.cr_frame
        coro = getattr(coro, "cr_await", None)
    return frame


def debug(moment: Moment) -> None:
    """The default stop: a breakpoint() (pdb unless PYTHONBREAKPOINT says
    otherwise) with world, nodes, log, node and here in scope."""
    # Named for the debugger's scope, not used here.
    world, nodes, log, node, here = (  # noqa: F841
        moment.world,
        moment.nodes,
        moment.log,
        moment.node,
        moment.here,
    )
    sys.stderr.write(
        f"askew: {moment}\n"
        "  in scope: world, nodes, log, node (whose step it was), here (its locals), moment\n"
    )
    breakpoint()


def stop_hook(
    stop_at: int | None, t: float | None, inspect: Callable[[Moment], object]
) -> Callable[[World], None]:
    """A world hook (onerun.world_hooks) that calls `inspect` once, after the
    first step at or past the stop, in the first run it sees only (a
    failure's re-runs do not stop again)."""
    armed = [True]

    def attach(world: World) -> None:
        if not armed[0]:
            return
        armed[0] = False
        pending = [True]
        loop = world._loop

        def observe() -> None:
            if not pending[0]:
                return
            if (stop_at is not None and loop.steps >= stop_at) or (
                t is not None and world.now >= t
            ):
                pending[0] = False
                ran = loop._stepped_node
                handle = world.nodes[ran] if 0 <= ran < len(world.nodes) else None
                frame = _innermost(handle)
                here = dict(frame.f_locals) if frame is not None else {}
                now = world.now
                inspect(Moment(world, loop.steps, now, handle, frame, here, world.nodes, world.log))

        after_each_step(world, observe)

    return attach


def command(ns: Any, resolve: Callable[[str], Callable[..., Any]], replay: Any) -> int:
    """`askew replay TEST_ID --seed S [--at WHEN] [--print ATTR [--node N]]`,
    `replay` being askew.Replay (handed down: it is built on this module)."""
    try:
        test = resolve(ns.test_id)
        stop_at, t = parse_at(ns.at) if ns.at else (None, None)
    except Exception as exc:  # a bad test id (the sweep's UsageError) or --at
        sys.stderr.write(f"askew replay: error: {exc}\n")
        return 2
    out = sys.stdout
    if ns.attr is None:
        if stop_at is None and t is None:
            sys.stderr.write("askew replay: error: give --at WHEN, --print ATTR or both\n")
            return 2
        return _verdict(lambda: replay.run(test, ns.seed, stop_at=stop_at, t=t))
    if stop_at is None and t is None:
        changes = replay.states(test, ns.seed)
        shown = [c for c in changes if c.name == ns.attr and ns.node in (None, c.node)]
        for c in shown:
            out.write(f"step {c.step:>8}  t={c.t:.6f}s  node {c.node}: {c.name} = {c.value}\n")
        if not shown:
            out.write(f"no node has an attribute {ns.attr!r} in this run\n")
        return 0

    def show(moment: Moment) -> None:
        out.write(f"{moment}\n")
        for handle in moment.nodes:
            if ns.node in (None, handle.id):
                value = getattr(handle, ns.attr, "(none)")
                out.write(f"  node {handle.id}: {ns.attr} = {short_repr(value, 200)}\n")

    return _verdict(lambda: replay.run(test, ns.seed, stop_at=stop_at, t=t, on_stop=show))


def _verdict(run: Callable[[], None]) -> int:
    try:
        run()
    except SimulationFailure as failure:
        sys.stdout.write(f"the run failed: {str(failure).splitlines()[0]}\n")
        return 1
    return 0
