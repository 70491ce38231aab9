# SPDX-License-Identifier: Apache-2.0
"""Failure reports: what a failed run prints, and the command that replays it.

This file owns every piece of text a failure shows a user: the headline of
a simulated test's report and the event the log keeps for it, the faults of
the run, each node's state at the failure, the tail of recent events, the
replay command of both modes (@askew.simulate and wrap), where a Ctrl-C
stopped a sweep, the notes on strategy and PYTHONHASHSEED, and the
divergence a determinism check found. It formats what the runner and the
plugin hand it and never changes a run: it reads the loop's kept log, the
world's fault list and its nodes' state, nothing else. The runner
(askew._run.runner) and the plugin (askew._run.plugin) call it.
"""

from __future__ import annotations

import dataclasses
import linecache
import operator
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._loop.config import RunConfig, wall_epoch_text
from .._loop.frames import describe_wait
from .._loop.kinds import LOG_KEPT
from .._loop.preload import preload_active
from .._loop.settings import env_knob_assignments, env_trace, strategy_note, swarm_note
from .._loop.text import safe_repr, short_repr
from .._world.log import Event, event_from_entry
from .._world.states import Change, held_at
from ..errors import BudgetExceeded, DeadlockError, SimulationFailure

if TYPE_CHECKING:
    from .._loop.loop import SimLoop
    from .._world.world import World

_REPORT_SCAN = 256  # log entries read for a default report: enough after filtering
_FAULTS_SHOWN = 12  # the newest faults a report lists
_NODES_SHOWN = 12  # the nodes a report lists, lowest ids first
_NODE_LINE = 100  # characters of one node's attributes


@dataclass
class Outcome:
    """One run as its report sees it."""

    failure: BaseException | None
    failed_node: int | None
    time: float
    steps: int
    trace_hash: int
    events: list[Event]
    # The run's fault events, however old, and how many older ones the world
    # no longer kept; each node's state at the failure (None: not taken);
    # the tasks still ready when a step budget ran out.
    faults: list[Event] = dataclasses.field(default_factory=list)
    faults_dropped: int = 0
    # Every fault of the run, in order, keyed (World._all_faults).
    fault_calls: list[tuple[int | str, float, str]] = dataclasses.field(default_factory=list)
    nodes: list[str] | None = None
    spinning: list[str] = dataclasses.field(default_factory=list)
    views: list[str] = dataclasses.field(default_factory=list)  # timeline, trace JSON
    # What user code raised after the verdict (docs/design.md §3): never a
    # failure; what earlier runs left that surfaced in this one and was
    # dropped; how many events the log had at the verdict.
    teardown: list[str] = dataclasses.field(default_factory=list)
    stale: int = 0
    log_count: int = 0
    # Whether the seed was re-run alone and gave the same trace: None if
    # not checked, else what the report says (replay_alone_lines).
    alone: list[str] | None = None
    # The nodes' state over time, from a re-run that recorded it
    # (askew/_world/states.py); None if none was made.
    states: list[Change] | None = None
    # The events that set the values nodes hold at the failure, by their
    # number in the run's log, each with the values it set
    # (askew/_report/leading.py); empty if not found.
    leading: dict[int, tuple[Event, list[str]]] = dataclasses.field(default_factory=dict)
    # How it differs from the nearest passing seed of its sweep (neighbour_lines).
    neighbour: list[str] = dataclasses.field(default_factory=list)
    # What the report hints at: the world's hints (an advance never
    # awaited); whether nodes ran and the clock moved no more than their
    # code's CPU time (nothing waited on time); node -> real files its code
    # wrote outside any simulated disk.
    hints: list[str] = dataclasses.field(default_factory=list)
    still: bool = False
    real_writes: dict[int, list[str]] = dataclasses.field(default_factory=dict)


def recent_events(loop: SimLoop, everything: bool) -> list[Event]:
    """The loop's newest logged events: enough for a report's tail (as many
    as ASKEW_TRACE asks), or all it keeps (`everything`, for comparing runs)."""
    shown = env_trace()
    scan = LOG_KEPT if everything or shown is None else min(LOG_KEPT, max(_REPORT_SCAN, 4 * shown))
    return [event_from_entry(e) for e in loop._log_recent(scan)]


def node_states(world: World) -> list[str]:
    """Each node's state as a report line: its id, whether it is alive,
    crashed, paused or done, and its handle's public attributes in short
    reprs. Read at the failure, before the run is torn down."""
    paused = {p._node_id for p in world._pauses if p.active}
    lines = []
    for node_id, slot in enumerate(world._slots):
        try:
            alive, incarnation = world._wire.alive(node_id)
        except Exception:  # the loop is gone: the state is what the node holds
            alive, incarnation = True, 0
        task = slot.task
        if not alive:
            state = "crashed"
        elif node_id in paused:
            state = "paused"
        elif task is not None and task.done():
            error = None if task.cancelled() else task.exception()
            state = "done" if error is None else f"raised {type(error).__name__}"
        else:
            state = "alive"
        if incarnation:
            state += f" (incarnation {incarnation})"
        target = slot.instance if slot.instance is not None else slot.node
        attrs = vars(target) if hasattr(target, "__dict__") else {}
        shown = ", ".join(
            f"{name}={short_repr(value)}"
            for name, value in attrs.items()
            if not name.startswith("_")
        )
        if len(shown) > _NODE_LINE:
            shown = shown[: _NODE_LINE - 4] + " ..."
        lines.append(f"{node_id:>4}  {state:<8} {shown}".rstrip())
    return lines


def spinning_tasks(loop: SimLoop) -> list[str]:
    """The tasks still ready to run when a step budget ran out (the ones
    that kept each other busy), each with the line it is at."""
    ready = [t for t in loop._run_tasks() if getattr(t, "_fut_waiter", None) is None]
    return [f"{t.get_name()} at {describe_wait(t)}" for t in ready]


def teardown_line(what: BaseException | dict[str, Any]) -> str:
    """One line of a run's teardown log: an exception user code raised
    after the verdict, or an exception-handler call (asyncio's context)."""
    if isinstance(what, BaseException):
        return _headline(what, None)
    message = safe_repr(what.get("message", "exception handler called"), str)
    exc = what.get("exception")
    return f"{message}: {_headline(exc, None)}" if isinstance(exc, BaseException) else message


def _safe_str(exc: BaseException) -> str:
    """str(exc), surviving an exception whose __str__ (or a __repr__ it
    calls) raises: the report of a failure must survive any user code."""
    return safe_repr(exc, str)


def _headline(exc: BaseException, node: int | None, spinning: Sequence[str] = ()) -> str:
    """The report's first line. askew's own failures (a deadlock, a budget)
    are the report's exception type already, so their line is their message
    alone; anything a node raised, an assert too, says which node."""
    if isinstance(exc, AssertionError) and not isinstance(exc, SimulationFailure):
        source = _assert_source(exc)
        if not source:
            msg = _safe_str(exc).strip().splitlines()
            source = f"AssertionError: {msg[0]}" if msg else "AssertionError"
        elif node is not None:
            source = f"AssertionError: {source}"
        return f"node {node} raised {source}" if node is not None else source
    text = _safe_str(exc).strip().splitlines()
    if isinstance(exc, (DeadlockError, BudgetExceeded)):
        line = text[0] if text else type(exc).__name__
    else:
        line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    if isinstance(exc, BudgetExceeded) and spinning:
        more = f" and {len(spinning) - 1} more" if len(spinning) > 1 else ""
        line += f"; still ready: {spinning[0]}{more}"
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
    """The shell command that reruns the test `nodeid` under `seed`, under
    askew-exec when this process runs under its preload (C code saw the
    preload's world there: without it the replay would be another run).

    A simulated test (wrap_options None) reruns the one run `seed` names:
    one iteration, with the knob variables of this environment before it,
    since they override the decorator's arguments; its node id is always
    quoted. A wrapped test reruns under the base seed `seed` (its own seed
    follows from the node id) with `wrap_options`, its knobs as plugin
    options; its words are quoted where the shell needs it.
    """
    pytest = "askew-exec pytest" if preload_active() else "pytest"
    if wrap_options is None:
        knobs = "".join(word + " " for word in env_knob_assignments())
        return f"{knobs}ASKEW_SEED={seed} ASKEW_ITERATIONS=1 {pytest} '{nodeid}'"
    words = ["--askew-wrap", *wrap_options, nodeid]
    return f"ASKEW_SEED={seed} {pytest} " + " ".join(map(shlex.quote, words))


# (pytest's rootdir, the directory pytest was started in), set by the plugin:
# a node id is relative to the rootdir, a command line to where it is typed.
pytest_dirs: tuple[str, str] | None = None


def _from_invocation_dir(nodeid: str) -> str:
    """`nodeid` with its path made relative to the directory pytest was run
    from, so the replay command selects the test typed where the run was."""
    if pytest_dirs is None:
        return nodeid
    root, here = pytest_dirs
    path, sep, rest = nodeid.partition("::")
    if root == here or not path:
        return nodeid
    return os.path.relpath(os.path.join(root, path), here) + sep + rest


def _simulated_replay(qualname: str, seed: int) -> str:
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "")
    if nodeid:
        return replay_command(seed, _from_invocation_dir(nodeid.rsplit(" (", 1)[0]))
    return f"askew.Replay.run({qualname}, seed={seed})"


def _certificate_note(failure: BaseException | None, config: RunConfig) -> str | None:
    """A certificate refused as not yet valid or expired was checked
    against the run's wall clock (under askew-exec): name its date and the
    option that moves it. Looks along the failure's chain of causes."""
    ssl = sys.modules.get("ssl")  # not imported: no certificate was checked
    seen: set[int] = set()
    exc = failure
    while ssl is not None and exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError):
            why = str(getattr(exc, "verify_message", "") or _safe_str(exc))
            if "not yet valid" in why or "expired" in why:
                day = wall_epoch_text(config.wall_epoch_utc).removesuffix("T00:00:00Z")
                return (
                    f"the simulation's wall clock reads {day} (plus virtual time), where "
                    f"the {why}; set wall_epoch= (ASKEW_WALL_EPOCH, --askew-wall-epoch) "
                    "to a date inside its validity"
                )
        exc = exc.__cause__ or exc.__context__
    return None


def hints(outcome: Outcome) -> list[str]:
    """What the report suggests about a common slip: a world.clock.advance
    never awaited (the world's hints), a clock that never moved."""
    found = list(outcome.hints)
    if outcome.still and not any("never awaited" in h for h in found):
        found.append(still_clock_text(outcome.time, outcome.steps))
    return found


def still_clock_text(time: float, steps: int) -> str:
    """A run whose nodes ran while the virtual clock moved no more than
    their code's own CPU time: nothing in it waited on time."""
    return (
        f"the virtual clock never moved past the code's own CPU time (t={time:.6f}s "
        f"over {steps} steps): nothing waited on time, so what a node would do "
        "after a timeout, a sleep or a message's latency never came; "
        "to let time pass, `await world.clock.advance(seconds)`"
    )


def real_write_notes(writes: dict[int, list[str]]) -> list[str]:
    """One note per node whose code wrote real files, outside any
    simulated disk: they are no part of the seed's run (a replay finds
    them as the last run left them) and they outlive it."""
    return [
        f"node {node} wrote real files, outside any simulated disk (not part of the "
        f"seed's run: they outlive it; give the node disk=... to simulate them): "
        + ", ".join(paths)
        for node, paths in writes.items()
    ]


def notes(config: RunConfig, failure: BaseException | None = None) -> list[str]:
    """What a report adds about replaying: an unfaithful strategy, a random
    hash seed; and about the failure: a certificate the wall epoch refused."""
    notes = []
    for note in (strategy_note(config), swarm_note(config), _certificate_note(failure, config)):
        if note:
            notes.append(note)
    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED", "random") == "random":
        notes.append(
            "PYTHONHASHSEED is random in this process, so str and bytes sets may "
            "iterate in another order on replay; run under askew-exec or set PYTHONHASHSEED=0"
        )
    return notes


def _faults_section(outcome: Outcome) -> list[str]:
    faults = outcome.faults
    earlier = outcome.faults_dropped + max(0, len(faults) - _FAULTS_SHOWN)
    lines = ["", "  faults"]
    if earlier:
        lines.append(f"    ... {earlier} earlier")
    lines += [f"  {e}" for e in faults[-_FAULTS_SHOWN:]] or ["    (none)"]
    return lines


def _nodes_section(outcome: Outcome) -> list[str]:
    nodes = outcome.nodes
    if nodes is None:
        return ["", "  nodes", "    (their state was gone when the failure surfaced)"]
    if not nodes:
        return []
    lines = ["", "  nodes", *(f"  {line}" for line in nodes[:_NODES_SHOWN])]
    if len(nodes) > _NODES_SHOWN:
        lines.append(f"    ... {len(nodes) - _NODES_SHOWN} more")
    return lines


def _teardown_section(outcome: Outcome) -> list[str]:
    if not outcome.teardown:
        return []
    lines = ["", "  teardown (after the verdict: logged, never a failure)"]
    lines += [f"    {line}" for line in outcome.teardown[:_FAULTS_SHOWN]]
    if len(outcome.teardown) > _FAULTS_SHOWN:
        lines.append(f"    ... {len(outcome.teardown) - _FAULTS_SHOWN} more")
    return lines


_STATES_PER_NODE = 8  # attributes a node lists in "state over time"


def state_lines(changes: list[Change] | None, steps: int) -> list[str]:
    """The report's "state over time": each node's public attributes at the
    failure (after step `steps`), since when, and what each held before."""
    if not changes:
        return []
    now: dict[tuple[int, str], Change] = {}
    before: dict[tuple[int, str], Change] = {}
    for change in changes:
        if change.step > steps:
            break
        key = (change.node, change.name)
        if key in now:
            before[key] = now[key]
        now[key] = change
    by_node: dict[int, list[Change]] = {}
    for (node, _name), change in sorted(now.items()):
        by_node.setdefault(node, []).append(change)
    lines = ["", "  state over time (what each node holds at the failure, since when)"]
    for node in sorted(by_node)[:_NODES_SHOWN]:
        held = sorted(by_node[node], key=lambda c: -c.step)  # the latest change first
        for change in held[:_STATES_PER_NODE]:
            was = before.get((node, change.name))
            earlier = "" if was is None else f", was {was.value} from {was.t:.6f}s"
            lines.append(
                f"    node {node}: {change.name} {change.value} since {change.t:.6f}s{earlier}"
            )
        if len(held) > _STATES_PER_NODE:
            lines.append(f"    node {node}: ... {len(held) - _STATES_PER_NODE} more attributes")
    if len(by_node) > _NODES_SHOWN:
        lines.append(f"    ... {len(by_node) - _NODES_SHOWN} more nodes")
    return lines


def _events_section(outcome: Outcome) -> list[str]:
    leading = outcome.leading
    first = outcome.log_count - len(outcome.events)
    # A message delivered shows once, as its delivery, unless its send set a value.
    shown = [
        (first + k, e)
        for k, e in enumerate(outcome.events)
        if first + k in leading or not (e.kind == "net" and e.text.endswith("   sent"))
    ]
    wanted = env_trace()
    tail = shown if wanted is None else shown[-wanted:] if wanted else []
    lines = ["", "  recent events"]
    if len(tail) < len(shown):
        lines.append("    ... earlier ones: --askew-trace=N or --askew-trace=all")
    if not wanted and wanted is not None:
        return [*lines, "    (none)"]
    # The events that set what nodes hold, older than the tail, before it.
    start = tail[0][0] if tail else outcome.log_count
    rows = [(k, event) for k, (event, _) in sorted(leading.items()) if k < start] + tail
    previous = None
    for k, event in rows:
        if previous is not None and k > previous + 1 and previous < start:
            lines.append("    ...")
        marks = leading.get(k)
        lines.append(f"  {event}" + (f"   [sets {'; '.join(marks[1])}]" if marks else ""))
        previous = k
    return lines if rows else [*lines, "    (none)"]


def simulation_failure(
    fn: Callable[..., Any], seed: int, iteration: int, outcome: Outcome, config: RunConfig
) -> SimulationFailure:
    """The SimulationFailure a simulated test raises, its report attached."""
    exc = outcome.failure
    assert exc is not None
    lines = [
        _headline(exc, outcome.failed_node, outcome.spinning),
        f"  (seed={seed}, iteration={iteration}, t={outcome.time:.6f}s, steps={outcome.steps})",
    ]
    if isinstance(exc, DeadlockError) or (
        isinstance(exc, SimulationFailure) and "\n" in _safe_str(exc)
    ):
        lines += ["", *("  " + line for line in _safe_str(exc).splitlines()[1:])]
    if len(outcome.spinning) > 1:
        lines += ["", "  still ready", *(f"    {t}" for t in outcome.spinning[:_NODES_SHOWN])]
    lines += _faults_section(outcome)
    lines += _nodes_section(outcome)
    lines += state_lines(outcome.states, outcome.steps)
    lines += _events_section(outcome)
    lines += outcome.neighbour
    lines += _teardown_section(outcome)
    replay = _simulated_replay(fn.__qualname__, seed)
    lines += ["", *(outcome.alone or []), f"  replay: {replay}"]
    lines += [f"  {_view_name(path)}: {path}" for path in outcome.views]
    lines += [f"  hint: {hint}" for hint in hints(outcome)]
    lines += [f"  note: {note}" for note in notes(config, exc)]
    lines += [f"  note: {note}" for note in real_write_notes(outcome.real_writes)]
    if outcome.stale:
        lines.append(
            f"  note: {outcome.stale} leftover(s) of earlier runs on this loop (a callback, "
            "a finalizer) surfaced in this run and were dropped, not charged to it"
        )
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


def first_difference(a: Sequence[Event], a_start: int, b: Sequence[Event], b_start: int) -> str:
    """Where two runs' logs first differ, each given as its kept events and
    the number of the first of them (a ring keeps only the newest)."""
    start = max(a_start, b_start)
    xs, ys = a[start - a_start :], b[start - b_start :]
    k = _first_split(xs, ys)
    if k is None:
        return "their logs agree; they diverge in scheduling decisions"
    if k < min(len(xs), len(ys)):
        return f"first divergent event #{start + k}:\n    here:  {xs[k]}\n    alone: {ys[k]}"
    longer, which = (xs, "here") if len(xs) > len(ys) else (ys, "alone")
    return f"the run {which} logged more events, from #{start + k}: {longer[k]}"


def _first_split(
    xs: Sequence[Event],
    ys: Sequence[Event],
    same: Callable[[Event, Event], bool] = operator.eq,
) -> int | None:
    """Where two runs' events first differ (by `same`), or where the shorter
    ends: an index into both; None if they are the same events."""
    for k, (x, y) in enumerate(zip(xs, ys, strict=False)):
        if not same(x, y):
            return k
    return None if len(xs) == len(ys) else min(len(xs), len(ys))


_NEIGHBOUR_SHOWN = 6  # values a report compares with the nearest passing seed

# A run as the nearest-passing-seed comparison reads it: its state changes,
# its steps at the verdict, its kept events up to it and the first's number.
RunView = tuple[Sequence[Change], int, Sequence[Event], int]


def neighbour_lines(iteration: int, seed: int, here: RunView, there: RunView) -> list[str]:
    """The report's comparison with the nearest passing seed of the sweep
    (iteration `iteration`, `seed`): the values the nodes hold at the end
    that differ, and the first event that differs, times aside (two seeds'
    latencies differ from the start; what happens in what order is the
    news)."""
    mine, theirs = held_at(here[0], here[1]), held_at(there[0], there[1])
    lines = [
        "",
        f"  nearest passing seed (iteration {iteration}, seed={seed}): how this run differs",
    ]
    differ = [
        f"    node {node}: {name} {mine[node, name].value} here, "
        f"{theirs[node, name].value if (node, name) in theirs else 'never set'} there"
        for node, name in sorted(mine)
        if (node, name) not in theirs or theirs[node, name].value != mine[node, name].value
    ]
    lines += differ[:_NEIGHBOUR_SHOWN]
    if len(differ) > _NEIGHBOUR_SHOWN:
        lines.append(f"    ... {len(differ) - _NEIGHBOUR_SHOWN} more values")
    if not differ:
        lines.append("    its nodes end holding the same values")
    _, _, a, a_first = here
    _, _, b, b_first = there
    start = max(a_first, b_first)
    xs, ys = a[start - a_first :], b[start - b_first :]
    k = _first_split(xs, ys, lambda x, y: x[1:] == y[1:])  # times aside
    if k is None:
        return lines
    if k < min(len(xs), len(ys)):
        return [
            *lines,
            f"    first different event, #{start + k}:",
            f"      here:  {xs[k]}",
            f"      there: {ys[k]}",
        ]
    which, longer = ("here", xs) if len(xs) > len(ys) else ("there", ys)
    return [*lines, f"    the same events, then {which} #{start + k}: {longer[k]}"]


def replay_alone_lines(
    same: bool,
    where: str = "",
    again_failed: bool = True,
    alone_twice_agree: bool = True,
) -> list[str]:
    """The report's "replays alone" line: the seed re-run alone, in a fresh
    world, gave this run's trace; or how it did not, and the likely cause."""
    if same:
        return ["  replays alone: yes"]
    what = "fails otherwise" if again_failed else "passes"
    cause = (
        "state left by an earlier iteration (module globals, caches, class attributes, "
        "or the process state docs/determinism.md lists as not reset)"
        if alone_twice_agree
        else "the run is not deterministic even alone (a real clock, a thread, an identity "
        "hash: run it with ASKEW_CHECK_DETERMINISM=1)"
    )
    return [
        f"  replays alone: no: alone, in a fresh world, it {what}; {where}",
        f"  likely cause: {cause}",
    ]


def _view_name(path: str) -> str:
    return "trace json" if path.endswith(".json") else "timeline"


def interrupted(
    fn: Callable[..., Any], base: int, iteration: int, n: int, seed: int, exc: BaseException
) -> str:
    """What a KeyboardInterrupt in a sweep says: where the sweep stopped."""
    own = _safe_str(exc).strip()
    return (
        f"{own + '; ' if own else ''}askew: {fn.__qualname__} stopped at iteration "
        f"{iteration} of {n}, seed={seed} (base seed {base}); this seed alone: "
        f"{_simulated_replay(fn.__qualname__, seed)}"
    )


def own_cause(failure: BaseException) -> BaseException:
    """What a report is chained to: the failure itself; a deadlock or a
    spent budget without its traceback, which is askew's loop alone (no
    user frame) and all of whose news the report already has."""
    if isinstance(failure, (DeadlockError, BudgetExceeded)):
        failure.__traceback__ = None
    return failure


def divergence(fn: Callable[..., Any], seed: int, iteration: int, a: Outcome, b: Outcome) -> str:
    """Where two runs of one seed first differ (the determinism check's message)."""
    where = "their logs agree; they diverge in scheduling decisions"
    k = _first_split(a.events, b.events)
    if k is not None and k < min(len(a.events), len(b.events)):
        x, y = a.events[k], b.events[k]
        where = f"first difference at logged event #{k}:\n    run 1: {x}\n    run 2: {y}"
    elif k is not None:
        # The first event the shorter run lacks, taken from the longer run.
        longer, which = (a, 1) if len(a.events) > len(b.events) else (b, 2)
        where = f"run {which} logged more events, starting with #{k}: {longer.events[k]}"
    return (
        f"{fn.__qualname__}: seed {seed} (iteration {iteration}) ran twice with different "
        f"traces (hash {a.trace_hash:#018x} vs {b.trace_hash:#018x}); {where}\n"
        "  something outside askew's control decides the schedule: a real clock, thread, "
        "identity hash or global state carried between runs"
    )
