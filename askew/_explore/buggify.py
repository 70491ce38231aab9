# SPDX-License-Identifier: Apache-2.0
"""Buggify points and `sometimes` marks: faults the user's own code injects,
and a record of which rare branches a sweep reached.

FoundationDB's rule: each named point is *active* or not for a whole run,
decided on its first reach (with probability ACTIVATION), and an active point
fires with its `probability` on each reach. Every decision is drawn from the
run's buggify stream (stream 8, docs/design.md §2) mixed with the point's
name, so a point's decisions depend on the seed, its name and how often it
was reached, never on other points or on the scheduling, network or user
streams. Outside a simulated run everything here is off: buggify() is False.
The runner calls run_begins() for each run and sweep_ends() after a sweep;
nothing else here touches the runner or the loop.
"""

from __future__ import annotations

import ast
import inspect
import math
import os
import sys
import weakref

# blake2b without hashlib, which loads OpenSSL (milliseconds at every start).
from _blake2 import blake2b
from dataclasses import dataclass, field
from typing import Any

from .. import _core
from .._loop.config import check_name
from .._loop.kinds import FAULT
from .._loop.nodes import TOKEN_SHIFT, node_var
from .._world.world import World

ACTIVATION = 0.25  # the chance a point is active in a run, as FoundationDB's
_MASK = (1 << 64) - 1
_TWO64 = 1 << 64


def _splitmix64(state: int) -> tuple[int, int]:
    """One splitmix64 step: (next state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


def _name_digest(name: str) -> int:
    """64 bits of the name, the same in every process (hash(str) is not)."""
    digest = blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def check_probability(probability: object, what: str) -> float:
    if isinstance(probability, bool) or not isinstance(probability, (int, float)):
        raise TypeError(
            f"{what}: probability must be a number in [0, 1], got "
            f"{type(probability).__name__} {probability!r}"
        )
    p = float(probability)
    if math.isnan(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{what}: probability must be in [0, 1], got {probability!r}")
    return p


class _Point:
    """One buggify point in one run: its own PRNG state and its activation."""

    __slots__ = ("active", "fired", "state")

    def __init__(self, stream: int, name: str) -> None:
        self.state, out = _splitmix64(stream ^ _name_digest(name))
        self.active = out < int(ACTIVATION * _TWO64)
        self.fired = 0


class _Run:
    """The buggify state of one run, made when the run first reaches a point
    or mark: a run that reaches none costs a weak reference only."""

    __slots__ = ("_stream", "marks", "points", "seed")

    def __init__(self, world: World) -> None:
        self.seed = world.seed
        self._stream: int | None = None
        self.points: dict[str, _Point] = {}
        self.marks: dict[str, bool] = {}  # sometimes: name -> ever true this run

    @property
    def stream(self) -> int:
        if self._stream is None:
            self._stream = int(_core.seed_stream(self.seed, _core.STREAM_BUGGIFY))
        return self._stream


@dataclass
class PointStats:
    """One buggify point over a sweep."""

    runs_reached: int = 0
    runs_active: int = 0
    runs_fired: int = 0
    fired: int = 0


@dataclass
class MarkStats:
    """One `sometimes` mark over a sweep."""

    runs_reached: int = 0
    runs_true: int = 0


@dataclass
class Summary:
    """What a sweep's runs reached: askew.coverage() after a sweep."""

    test: str = ""
    module: str = ""
    runs: int = 0
    points: dict[str, PointStats] = field(default_factory=dict)
    marks: dict[str, MarkStats] = field(default_factory=dict)
    # Names written in the test's module (askew.buggify("...") and
    # askew.sometimes("...") with a literal name) that no run reached.
    unreached_points: list[str] = field(default_factory=list)
    unreached_marks: list[str] = field(default_factory=list)

    @property
    def never_fired(self) -> list[str]:
        return sorted(n for n, s in self.points.items() if s.fired == 0)

    @property
    def never_true(self) -> list[str]:
        return sorted(n for n, s in self.marks.items() if s.runs_true == 0)

    def __str__(self) -> str:
        lines = [f"askew coverage of {self.test} over {self.runs} runs"]
        for name in sorted(self.points):
            s = self.points[name]
            lines.append(
                f"  buggify {name!r}: reached in {s.runs_reached} runs, active in "
                f"{s.runs_active}, fired {s.fired} times in {s.runs_fired} runs"
            )
        for name in sorted(self.marks):
            m = self.marks[name]
            lines.append(
                f"  sometimes {name!r}: reached in {m.runs_reached} runs, true in {m.runs_true}"
            )
        problems = [
            (f"buggify points written in {self.module} but never reached", self.unreached_points),
            ("buggify points never fired", self.never_fired),
            (f"sometimes marks written in {self.module} but never reached", self.unreached_marks),
            ("sometimes marks never true", self.never_true),
        ]
        for title, names in problems:
            if names:
                lines.append(f"  {title}: {', '.join(map(repr, names))}")
        return "\n".join(lines)


# The world of the run going on, weakly: the runner collects each run's
# (cyclic) world at its end, so that its leftovers report in their own
# iteration. Its buggify state, once it has any.
_world: weakref.ref[World] | None = None
_run: _Run | None = None
_sweep = Summary()
_last: Summary | None = None


def _live_run() -> tuple[_Run, World] | None:
    global _run
    world = _world() if _world is not None else None
    if world is None or world._ended or _core.virtual.active_loop() is not world._loop:
        return None
    if _run is None:
        _run = _Run(world)
    return _run, world


def buggify(name: str | None = None, probability: float = 0.25) -> bool:
    """Whether to inject the fault named `name` here, now; with no name,
    the call site names it (`file.py:LINE`, the file's base name, so a
    checkout anywhere gives the same runs), as FoundationDB's BUGGY is
    named by its line.

    False outside a run of @askew.simulate (in plain code, in wrap mode, in
    another thread, after the run's end). Inside one, the point is active in
    a seeded quarter of runs (decided on its first reach) and an active
    point fires with `probability` on each reach. A firing is logged as a
    world event ("buggify NAME fired"), so it shows in failure reports and
    counts in the trace hash; a point that does not fire leaves no trace.
    """
    if name is None:
        caller = sys._getframe(1)
        name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
    else:
        check_name(name, "buggify")
    p = check_probability(probability, f"buggify({name!r})")
    live = _live_run()
    if live is None:
        return False
    run, world = live
    point = run.points.get(name)
    if point is None:
        point = run.points[name] = _Point(run.stream, name)
    if not point.active:
        return False
    point.state, out = _splitmix64(point.state)
    if p < 1.0 and out >= int(p * _TWO64):
        return False
    if world._fault_call(f"buggify {name!r} fired"):
        return False  # its draw is made all the same: later draws stay put
    point.fired += 1
    token = node_var.get(None)
    node = -1 if token is None else token >> TOKEN_SHIFT
    world.log._emit(FAULT, node, f"buggify {name!r} fired")
    return True


def sometimes(name: str, condition: Any) -> Any:
    """Record that `condition` was reached under `name`, and whether it was
    true; returns condition, so it can wrap an `if`. Never changes the run:
    it draws nothing and logs nothing. Outside a run it only returns."""
    check_name(name, "sometimes")
    live = _live_run()
    if live is not None:
        run = live[0]
        run.marks[name] = bool(condition) or run.marks.get(name, False)
    return condition


def run_begins(world: World) -> None:
    """Called by the runner as each run starts: fold the last run into the
    sweep's counts and start afresh."""
    global _world
    if _run is not None:
        _fold()
    _world = weakref.ref(world)
    _sweep.runs += 1


def _fold() -> None:
    global _run
    run, _run = _run, None
    if run is None:
        return
    for name, point in run.points.items():
        s = _sweep.points.setdefault(name, PointStats())
        s.runs_reached += 1
        s.runs_active += point.active
        s.runs_fired += point.fired > 0
        s.fired += point.fired
    for name, true in run.marks.items():
        m = _sweep.marks.setdefault(name, MarkStats())
        m.runs_reached += 1
        m.runs_true += true


def _written_calls(source: str, filename: str) -> dict[str, set[str]]:
    """The names of the buggify and sometimes calls written in `source`: a
    literal name, or for a buggify given none its call site's name, as
    buggify() makes it."""
    found: dict[str, set[str]] = {"buggify": set(), "sometimes": set()}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        kind = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if kind not in found:
            continue
        named = [k.value for k in node.keywords if k.arg == "name"]
        first = node.args[0] if node.args else named[0] if named else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found[kind].add(first.value)
        elif kind == "buggify" and (
            first is None or (isinstance(first, ast.Constant) and first.value is None)
        ):
            found[kind].add(f"{os.path.basename(filename)}:{node.lineno}")
    return found


def _written_names(fn: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The names of buggify and sometimes calls in fn's module, read once
    per module and process (every sweep of a test asks)."""
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is None:
        return frozenset(), frozenset()
    key = (module.__name__, getattr(module, "__file__", None))
    names = _written.get(key)
    if names is None:
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            source = ""
        found = _written_calls(source, str(getattr(module, "__file__", "") or ""))
        names = _written[key] = (frozenset(found["buggify"]), frozenset(found["sometimes"]))
    return names


_written: dict[tuple[str, str | None], tuple[frozenset[str], frozenset[str]]] = {}


def sweep_ends(fn: Any) -> Summary:
    """Called by the runner after a sweep: its summary, kept for
    askew.coverage() and printed to stderr when the sweep reached any point
    or mark."""
    global _sweep, _last, _world
    _fold()
    _world = None
    summary, _sweep = _sweep, Summary()
    summary.test = str(getattr(fn, "__qualname__", fn))
    summary.module = str(getattr(fn, "__module__", "?"))
    points, marks = _written_names(fn)
    summary.unreached_points = sorted(points - set(summary.points))
    summary.unreached_marks = sorted(marks - set(summary.marks))
    _last = summary
    # Only a sweep that met a point prints: the written names alone would
    # print for every test of a module that has points in one of them.
    if summary.points or summary.marks:
        print(summary, file=sys.stderr)
    return summary


def coverage() -> Summary | None:
    """The buggify and sometimes summary of the last sweep in this process
    (None before any): which points were reached, active and fired, which
    marks were reached and true, and which written ones no run reached."""
    return _last
