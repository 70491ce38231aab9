# SPDX-License-Identifier: Apache-2.0
"""Failure reports: what a failed run prints, and the command that replays it.

This file owns every piece of text a failure shows a user: the headline of
a simulated test's report and the event the log keeps for it, the tail of
recent events, the replay command of both modes (@askew.simulate and wrap),
the notes on strategy and PYTHONHASHSEED, and the divergence a determinism
check found. It formats what the runner and the plugin hand it and never
changes a run: it reads the loop's kept log and nothing else of it. The
runner (askew._runner) and the plugin (askew._pytest_plugin) call it.
"""

from __future__ import annotations

import linecache
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._config import RunConfig, env_knob_assignments, strategy_note, swarm_note
from ._world import LOG_KEPT, Event, event_from_entry, safe_repr
from .errors import DeadlockError, SimulationFailure

if TYPE_CHECKING:
    from ._loop import SimLoop
    from ._wrap import WrappedRun

_REPORT_EVENTS = 12
_REPORT_SCAN = 256  # log entries read for a report: enough after filtering


@dataclass
class Outcome:
    """One run as its report sees it."""

    failure: BaseException | None
    failed_node: int | None
    time: float
    steps: int
    trace_hash: int
    events: list[Event]


def recent_events(loop: SimLoop, everything: bool) -> list[Event]:
    """The loop's newest logged events: enough for a report's tail, or all it
    keeps (`everything`, for comparing two runs)."""
    entries = loop._log_recent(LOG_KEPT if everything else _REPORT_SCAN)
    return [event_from_entry(e) for e in entries]


def _safe_str(exc: BaseException) -> str:
    """str(exc), surviving an exception whose __str__ (or a __repr__ it
    calls) raises: the report of a failure must survive any user code."""
    return safe_repr(exc, str)


def _headline(exc: BaseException, node: int | None) -> str:
    if isinstance(exc, AssertionError) and not isinstance(exc, SimulationFailure):
        source = _assert_source(exc)
        if source:
            return source
        msg = _safe_str(exc).strip().splitlines()
        return f"AssertionError: {msg[0]}" if msg else "AssertionError"
    text = _safe_str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return f"node {node} raised {line}" if node is not None else line


def _assert_source(exc: BaseException) -> str | None:
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        line = linecache.getline(frame.filename, frame.lineno or 0).strip()
        if line.startswith("assert"):
            return line
    return None


def event_text(exc: BaseException, node: int | None) -> str:
    """The text the log keeps for a run's failure."""
    if isinstance(exc, AssertionError) and not isinstance(exc, SimulationFailure):
        msg = [line.strip() for line in _safe_str(exc).strip().splitlines()]
        if not msg:
            return _assert_source(exc) or "assertion failed"
        # pytest's rewritten message: "assert 2 == 1" then "+  where 2 = len({3, 4})".
        where = next((m.lstrip("+ ").strip() for m in msg[1:] if m.startswith("+")), None)
        return f"{msg[0]} ({where})" if where and msg[0].startswith("assert ") else msg[0]
    return _headline(exc, node)


def replay_command(seed: int, nodeid: str, *, wrap_options: Sequence[str] | None = None) -> str:
    """The shell command that reruns the test `nodeid` under `seed`.

    A simulated test (wrap_options None) reruns the one run `seed` names:
    one iteration, with the knob variables of this environment before it,
    since they override the decorator's arguments; its node id is always
    quoted. A wrapped test reruns under the base seed `seed` (its own seed
    follows from the node id) with `wrap_options`, its knobs as plugin
    options; its words are quoted where the shell needs it.
    """
    if wrap_options is None:
        knobs = "".join(word + " " for word in env_knob_assignments())
        return f"{knobs}ASKEW_SEED={seed} ASKEW_ITERATIONS=1 pytest '{nodeid}'"
    words = ["pytest", "--askew-wrap", *wrap_options, nodeid]
    return f"ASKEW_SEED={seed} " + " ".join(map(shlex.quote, words))


def _simulated_replay(qualname: str, seed: int) -> str:
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "")
    if nodeid:
        return replay_command(seed, nodeid.rsplit(" (", 1)[0])
    return f"askew.Replay.run({qualname}, seed={seed})"


def _notes(config: RunConfig) -> list[str]:
    """What a report adds about replaying: an unfaithful strategy, a random hash seed."""
    notes = []
    for note in (strategy_note(config), swarm_note(config)):
        if note:
            notes.append(note)
    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED", "random") == "random":
        notes.append(
            "PYTHONHASHSEED is random in this process, so str and bytes sets may "
            "iterate in another order on replay; run under askew-exec or set PYTHONHASHSEED=0"
        )
    return notes


def simulation_failure(
    fn: Callable[..., Any], seed: int, iteration: int, outcome: Outcome, config: RunConfig
) -> SimulationFailure:
    """The SimulationFailure a simulated test raises, its report attached."""
    exc = outcome.failure
    assert exc is not None
    lines = [
        _headline(exc, outcome.failed_node),
        f"  (seed={seed}, iteration={iteration}, t={outcome.time:.6f}s, steps={outcome.steps})",
    ]
    if isinstance(exc, DeadlockError) or (
        isinstance(exc, SimulationFailure) and "\n" in _safe_str(exc)
    ):
        lines += ["", *("  " + line for line in _safe_str(exc).splitlines()[1:])]
    shown = [e for e in outcome.events if not (e.kind == "net" and e.text.endswith("   sent"))]
    lines += ["", "  recent events"]
    lines += [f"  {e}" for e in shown[-_REPORT_EVENTS:]] or ["    (none)"]
    replay = _simulated_replay(fn.__qualname__, seed)
    lines += ["", f"  replay: {replay}"]
    lines += [f"  note: {note}" for note in _notes(config)]
    cls = type(exc) if isinstance(exc, SimulationFailure) else SimulationFailure
    report = cls(lines[0])
    report.report = "\n".join(lines)
    report.seed = seed
    report.iteration = iteration
    report.time = outcome.time
    report.steps = outcome.steps
    report.trace_hash = outcome.trace_hash
    report.replay = replay
    return report


def wrapped_replay(run: WrappedRun) -> str:
    """The "askew replay" section of a wrapped test's failure."""
    lines = [run.describe()]
    lines += [f"note: {note}" for note in _notes(run.config)]
    lines.append(f"replay: {run.replay}")
    return "\n".join(lines)


def divergence(fn: Callable[..., Any], seed: int, iteration: int, a: Outcome, b: Outcome) -> str:
    """Where two runs of one seed first differ (the determinism check's message)."""
    where = "their logs agree; they diverge in scheduling decisions"
    for k, (x, y) in enumerate(zip(a.events, b.events, strict=False)):
        if x != y:
            where = f"first difference at logged event #{k}:\n    run 1: {x}\n    run 2: {y}"
            break
    else:
        if len(a.events) != len(b.events):
            # The first event the shorter run lacks, taken from the longer run.
            k = min(len(a.events), len(b.events))
            longer, which = (a, 1) if len(a.events) > len(b.events) else (b, 2)
            where = f"run {which} logged more events, starting with #{k}: {longer.events[k]}"
    return (
        f"{fn.__qualname__}: seed {seed} (iteration {iteration}) ran twice with different "
        f"traces (hash {a.trace_hash:#018x} vs {b.trace_hash:#018x}); {where}\n"
        "  something outside askew's control decides the schedule: a real clock, thread, "
        "identity hash or global state carried between runs"
    )
