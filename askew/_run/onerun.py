# SPDX-License-Identifier: Apache-2.0
"""One run of a test on a reused loop, to its end (docs/design.md §3: the
verdict, then the teardown and the dead zone), and one iteration of a sweep
around it: the determinism check, the replay-alone check, the views a
failure writes."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
import warnings
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from .._disk import disk as _disk
from .._explore import buggify as _buggify
from .._explore import swarm as _swarm
from .._loop import kinds
from .._loop.config import (
    RunConfig,
)
from .._loop.loop import SimLoop
from .._loop.patches import scope
from .._loop.settings import (
    SCHEDULE_FIFO,
    TIMING_ZERO,
    env_views,
)
from .._report import timeline as _timeline
from .._report.leading import leading_events
from .._report.report import (
    Outcome,
    divergence,
    event_text,
    first_difference,
    neighbour_lines,
    node_states,
    own_cause,
    recent_events,
    replay_alone_lines,
    simulation_failure,
    spinning_tasks,
    still_clock_text,
    teardown_line,
)
from .._world.log import Event, event_from_entry
from .._world.states import Change, States, track
from .._world.world import World
from ..errors import BudgetExceeded, NondeterminismError, SimulationFailure
from .failure import set_replay, suppressed_replay

TestFn = Callable[..., Coroutine[Any, Any, Any]]
_STILL_S = 0.001  # a clock that never got this far never moved (docs/design.md §5)

# Called with each run's world as it starts (Replay's stop_at and values,
# the tracked re-runs below); empty, it costs one truth test a run.
world_hooks: list[Callable[[World], None]] = []


def run_iteration(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    i: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    check: bool,
    config: RunConfig,
    views: tuple[str | None, str | None] | None = None,
    suppress: frozenset[int | str] = frozenset(),
    calls: list[tuple[int | str, float, str]] | None = None,
    alone: bool = False,
    states: bool = False,
    neighbour: tuple[int, int] | None = None,
) -> SimulationFailure | None:
    """Run iteration i (seed `seed`, the fault calls `suppress` skipped);
    its report if it failed, and the run's fault calls added to `calls`.
    With `alone`, a failure is first re-run alone in a fresh world and its
    report says whether it replays alone, and with `states` that re-run
    records its nodes' state over time for the report (no run is added for
    it); with `neighbour` (an iteration and its seed, the nearest of the
    sweep), that seed is run too and the report says how the failure
    differs from it if it passes. A determinism check that finds two
    traces raises NondeterminismError."""
    __tracebackhide__ = True
    run_config, drawn = _seed_config(config, seed, suppress)
    # The run's configuration, and the sweep's own again after a shrunk run
    # (a swarm's next run sets its own): written out rather than as a
    # context manager, since this is every iteration's path.
    configured = run_config is not config
    if configured:
        loop._config = run_config
        loop._apply_config()
    try:
        outcome = run_once(loop, fn, seed, args, kwargs, check, drawn, suppress)
        if check:
            again = run_once(loop, fn, seed, args, kwargs, check, drawn, suppress)
            if again.trace_hash != outcome.trace_hash:
                raise NondeterminismError(divergence(fn, seed, i, outcome, again))
        if outcome.failure is None:
            if outcome.still and i == 0:
                _warn_still(fn, outcome)
            write_views(loop, fn, seed, args, kwargs, drawn, outcome, views, suppress)
            return None
        same: bool | None = None
        if alone:
            # Its first re-run records the state over time too: that changes
            # nothing a trace sees (askew/_world/states.py).
            recorded: list[States] = []
            with hooked(recording(recorded) if states else None):
                same, outcome.alone = _replay_alone(
                    loop, fn, seed, args, kwargs, run_config, drawn, suppress, outcome
                )
            outcome.states = recorded[0].changes if recorded else None
        if outcome.states and same:
            # `loop` still holds the failed run's log; the re-run that
            # recorded the states was the same run.
            kept, first = _verdict_log(loop, outcome)
            marks = leading_events(outcome.states, outcome.steps, kept, first)
            outcome.leading = {k: (kept[k - first], m) for k, m in marks.items()}
            if neighbour is not None:
                outcome.neighbour = _neighbour(
                    loop, fn, neighbour, args, kwargs, config, suppress, outcome, kept, first
                )
        written = write_views(loop, fn, seed, args, kwargs, drawn, outcome, views, suppress)
        if calls is not None:
            calls.extend(outcome.fault_calls)
        failure = simulation_failure(
            fn, seed, i, dataclasses.replace(outcome, views=written), run_config
        )
        failure.__cause__ = own_cause(outcome.failure)
        failure.replays_alone = same
        if suppress:  # its replay names the calls it skipped
            set_replay(failure, suppressed_replay(failure.replay, suppress))
        return failure
    finally:
        if configured and not config.swarm:
            loop._config = config
            loop._apply_config()


def _seed_config(
    config: RunConfig, seed: int, suppress: frozenset[int | str]
) -> tuple[RunConfig, _swarm.SwarmDraw | None]:
    """The configuration `seed` runs with (a swarm's seed draws its own, a
    shrunk run's is simpler) and the swarm's draw, if any."""
    run_config, drawn = config, None
    if config.swarm:  # the seed decides the configuration
        drawn = _swarm.draw(seed, config.swarm)
        run_config = _swarm.run_config(config, drawn)
    return _simplified(run_config, suppress), drawn


def _neighbour(
    loop: SimLoop,
    fn: TestFn,
    neighbour: tuple[int, int],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    config: RunConfig,
    suppress: frozenset[int | str],
    failed: Outcome,
    kept: list[Event],
    first: int,
) -> list[str]:
    """The report's lines on the nearest passing seed of the sweep: run it
    once, recording its state; how the failed run (its kept log `kept`,
    numbered from `first`, still on `loop`) differs from it. Nothing if
    that seed fails too."""
    iteration, seed = neighbour
    run_config, drawn = _seed_config(config, seed, suppress)
    recorded: list[States] = []
    current = loop._config  # the failed run's, which its views run with next
    loop._config = run_config
    loop._apply_config()
    try:
        with hooked(recording(recorded)):
            passed = run_once(loop, fn, seed, args, kwargs, False, drawn, suppress)
    finally:
        loop._config = current
        loop._apply_config()
    if passed.failure is not None or not recorded:
        return []
    theirs, their_first = _verdict_log(loop, passed)
    return neighbour_lines(
        iteration,
        seed,
        (failed.states or [], failed.steps, kept, first),
        (recorded[0].changes, passed.steps, theirs, their_first),
    )


def _simplified(config: RunConfig, suppress: frozenset[int | str]) -> RunConfig:
    """The run's configuration with a shrunk run's simplified timing
    (askew/_explore/shrink.py): no CPU time or overshoot; asyncio's FIFO
    order across nodes. The same object when it asks for neither."""
    if TIMING_ZERO in suppress:
        config = dataclasses.replace(config, cpu=(0.0, 0.0), overshoot=(0.0, 0.0))
    if SCHEDULE_FIFO in suppress:
        config = dataclasses.replace(config, strategy="fifo")
    return config


def _warn_still(fn: TestFn, outcome: Outcome) -> None:
    """A passing test whose first run's nodes ran with a clock that never
    moved is warned once (decision: its report would say so had it failed;
    passing, a warning, since a test may mean to check the first instant)."""
    warnings.warn(
        f"{fn.__qualname__} passed, but {still_clock_text(outcome.time, outcome.steps)}",
        RuntimeWarning,
        stacklevel=1,
    )


def _replay_alone(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    config: RunConfig,
    drawn: _swarm.SwarmDraw | None,
    suppress: frozenset[int | str],
    first: Outcome,
) -> tuple[bool, list[str]]:
    """Re-run a failed seed alone, on a fresh loop of its own: whether it
    gave the same trace, and the report's lines saying so. If it did not,
    the two logs (`loop` still holds the failed run's) name the first event
    that differs, and one more run alone tells state left by earlier runs
    (the two alone runs agree) from a run that is not deterministic at all."""

    def alone() -> tuple[Outcome, list[Event], int]:
        fresh = SimLoop(seed, config)
        try:
            got = run_once(fresh, fn, seed, args, kwargs, False, drawn, suppress)
            return got, *_verdict_log(fresh, got)
        finally:
            fresh.set_exception_handler(None)
            fresh.close()

    again, events, start = alone()
    if again.trace_hash == first.trace_hash:
        return True, replay_alone_lines(True)
    here, here_start = _verdict_log(loop, first)
    third = alone()[0]
    where = first_difference(here, here_start, events, start)
    failed = again.failure is not None
    return False, replay_alone_lines(False, where, failed, third.trace_hash == again.trace_hash)


def _verdict_log(loop: SimLoop, outcome: Outcome) -> tuple[list[Event], int]:
    """The events `loop` logged in `outcome`'s run up to its verdict (what
    it logged at its end is left out), and the number of the first."""
    kept = loop._log_recent(kinds.LOG_KEPT)
    after = loop._log_count() - outcome.log_count
    if after > 0:
        kept = kept[:-after]
    return [event_from_entry(e) for e in kept], outcome.log_count - len(kept)


def write_views(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    drawn: _swarm.SwarmDraw | None,
    outcome: Outcome,
    views: tuple[str | None, str | None] | None,
    suppress: frozenset[int | str] = frozenset(),
) -> list[str]:
    """The timeline and trace JSON of this run, if asked for (Replay.run's
    paths, or for a failure ASKEW_TIMELINE / ASKEW_TRACE_JSON): the seed is
    run once more with a log that keeps all of it. Their paths."""
    if views is None:
        if outcome.failure is None:
            return []
        views = env_views(fn.__qualname__, seed)
    if views == (None, None):
        return []
    loop._log_keep(_timeline.TIMELINE_KEPT)
    try:
        # Await sites are noted in this run only (askew/_report/timeline.py, Sites).
        with _timeline.Sites(loop, __file__) as sites:
            changes = tracked_run(loop, fn, seed, args, kwargs, drawn, suppress)
        if outcome.states is None:  # the report's, as this run recorded them
            outcome.states = changes
        title = f"{fn.__qualname__} seed={seed}"
        return _timeline.write(loop, title, *views, sites.sites, changes, outcome.neighbour)
    finally:
        loop._log_keep(kinds.LOG_KEPT)


def tracked_run(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    drawn: _swarm.SwarmDraw | None,
    suppress: frozenset[int | str],
) -> list[Change]:
    """Run the seed once more, recording its nodes' state over time
    (askew/_world/states.py): the changes, in order."""
    runs: list[States] = []
    with hooked(recording(runs)):
        run_once(loop, fn, seed, args, kwargs, False, drawn, suppress)
    return runs[0].changes if runs else []


@contextlib.contextmanager
def hooked(hook: Callable[[World], None] | None) -> Iterator[None]:
    """`hook` (if any) called with each run's world while the block runs."""
    if hook is not None:
        world_hooks.append(hook)
    try:
        yield
    finally:
        if hook is not None:
            world_hooks.remove(hook)


def recording(into: list[States]) -> Callable[[World], None]:
    """A world hook that records the state over time of the first run it sees."""

    def hook(world: World) -> None:
        if not into:
            into.append(track(world))

    return hook


def run_once(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    want_events: bool = False,
    swarm: _swarm.SwarmDraw | None = None,
    suppress: frozenset[int | str] = frozenset(),
) -> Outcome:
    """One run of `fn` under `seed` on `loop`, to its end (docs/design.md §3):
    the verdict is fixed when the test body returns or raises (or a node
    raised before), and what the run's end does after it (its leftovers
    settling, the dead zone, the collection of its garbage) is teardown,
    logged in the outcome and never its failure."""
    __tracebackhide__ = True
    loop.reset(seed)
    scope.reseed(seed)
    world = World(loop, seed, suppress)
    _buggify.run_begins(world)
    for hook in world_hooks:
        hook(world)
    if swarm is not None:
        _swarm.configure_world(world, swarm)
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    failure: BaseException | None = None
    teardown: list[str] = []
    # A Ctrl-C that lands in a finalizer or a weakref callback while the
    # run goes on reaches sys.unraisablehook only: kept, it stops the run
    # when the loop returns.
    kept: list[BaseException] = []
    unraisable = sys.unraisablehook
    sys.unraisablehook = _unraisable_to(None, kept, unraisable)
    try:
        try:
            loop.run_until_complete(fn(world, *args, **kwargs))
        finally:
            sys.unraisablehook = unraisable
        if kept:
            raise kept[0]
    except (KeyboardInterrupt, SystemExit):
        _teardown(loop, [world], teardown)
        raise
    except BaseException as exc:
        failure = exc
    if world._failure is not None:
        failure = world._failure
    if failure is None and errors:
        failure = _unhandled(errors[0])
    time, steps = world.now, loop.steps
    # Nodes ran, and the clock moved no more than their code's CPU time, nor
    # as far as the default link's shortest latency (a wide swarmed CPU
    # range could cover seconds of timers).
    still = bool(world._slots) and time <= min(steps * loop._config.cpu[1], _STILL_S)
    hints, real_writes = list(world._hints), _disk.real_writes()
    nodes: list[str] | None = None
    spinning: list[str] = []
    if failure is not None:
        # A refusal is a SimulationFailure (an AssertionError) but no assert failed.
        refused = isinstance(failure, NondeterminismError)
        kind = kinds.ASSERT if isinstance(failure, AssertionError) and not refused else kinds.ERROR
        world.log._emit(kind, -1, event_text(failure, world._failed_node))
        # The state at the failure, before the run's end stops and unwinds it.
        nodes = node_states(world)
        if isinstance(failure, BudgetExceeded):
            spinning = spinning_tasks(loop)
    # Formatting the log costs more than a small run: only for a report or a
    # comparison. The log stays in the loop until its next reset.
    events = recent_events(loop, want_events) if failure is not None or want_events else []
    trace_hash, log_count = loop.trace_hash, loop._log_count()
    faults, faults_dropped = world.log._faults, world.log.faults_dropped
    fault_calls = world._all_faults()  # shrink3: with the network's message faults
    failed_node = world._failed_node
    # The world is cyclic (nodes point back at it): only _teardown, which
    # collects the run's garbage in its dead zone, may still hold it.
    ending = [world]
    del world
    _teardown(loop, ending, teardown, collect=True)
    loop._end_run()
    # Until the next run sets its own, what reaches the handler is this
    # run's leftovers, after its end (the log's payloads freed at the next
    # reset): dropped, as the dead zone drops it.
    loop.set_exception_handler(_after_the_run)
    return Outcome(
        failure,
        failed_node,
        time,
        steps,
        trace_hash,
        events,
        faults=faults,
        faults_dropped=faults_dropped,
        fault_calls=fault_calls,
        nodes=nodes,
        spinning=spinning,
        teardown=teardown,
        stale=loop._stale,
        log_count=log_count,
        hints=hints,
        still=still,
        real_writes=real_writes,
    )


def _teardown(loop: SimLoop, ending: list[World], log: list[str], collect: bool = False) -> None:
    """End the run of the world `ending` holds (it lets go of it): power
    off, then the dead zone, in which, with `collect`, the run's garbage is
    collected, so that what it held (an unretrieved exception, a pending
    task) is finalized now and not in a later iteration, which its seed
    replayed alone would not see.

    What user code does meanwhile reaches no one but `log`: what reaches
    the exception handler and an exception a finalizer raised
    (sys.unraisablehook: under -W error, a stream a closed coroutine let go
    of warns "unclosed" in its __del__) are teardown lines, never an error
    of the test that is running (pytest turns an unraisable into one); a
    Ctrl-C that landed in a finalizer still stops the run (it is raised
    again when the teardown ends, as interrupts_kept does). A warning that
    is no error is left to the warning filters: it fails nothing, and
    pytest lists it (decision: catching warnings cost 15 µs a run). Written
    out rather than as context managers: this is every run's path."""
    world = ending.pop()
    kept: list[BaseException] = []
    unraisable = _unraisable_to(log, kept, None)
    loop.set_exception_handler(lambda _loop, context: log.append(teardown_line(context)))
    hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    try:
        log.extend(map(teardown_line, world._power_off()))
        loop._freeze()
        try:
            log.extend(map(teardown_line, world._release()))
            del world
            if collect:
                _collect_the_run()
        finally:
            loop._thaw()
    finally:
        sys.unraisablehook = hook
        if kept:
            raise kept[0]


def _unraisable_to(
    log: list[str] | None, kept: list[BaseException], hook: Callable[[Any], None] | None
) -> Callable[[Any], None]:
    """A sys.unraisablehook that keeps a KeyboardInterrupt or SystemExit in
    `kept` (a signal that landed in a finalizer, a weakref callback or a
    generator's close, where Python can only print "Exception ignored"),
    and writes anything else as a teardown line to `log` (with no log, to
    `hook`)."""

    def unraisable(what: Any) -> None:
        exc = what.exc_value
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            kept.append(exc)
        elif log is None:
            if hook is not None:
                hook(what)
        else:
            said = what.err_msg or "Exception ignored"
            log.append(said if exc is None else f"{said}: {teardown_line(exc)}")

    return unraisable


@contextlib.contextmanager
def interrupts_kept(log: list[str] | None = None) -> Iterator[None]:
    """sys.unraisablehook for the block, so that a Ctrl-C is never
    swallowed: a KeyboardInterrupt or SystemExit that reached the hook (a
    signal that landed in a finalizer, a weakref callback or a generator's
    close, where Python can only print "Exception ignored") is raised again
    when the block ends. Anything else a finalizer raised is a teardown line
    in `log`, or with no log goes to the hook that was set."""
    kept: list[BaseException] = []
    hook = sys.unraisablehook
    sys.unraisablehook = _unraisable_to(log, kept, hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        if kept:
            raise kept[0]


def _collect_the_run() -> None:
    """Collect what the run let go of. The collector is off during a sweep
    (the loop's fixed-step collections are of the youngest generation), so
    the run's objects are in the two young generations and collecting those
    is enough, at a third of a full collection's cost (which also empties
    the interpreter's free lists). What survived an earlier run's end (a
    payload the log held until the next reset) is old by now: a full
    collection every FULL_EVERY runs, and after a run whose code collected
    the oldest generation itself, keeps its garbage from piling up
    (decision: it is finalized in a later run's dead zone, where nothing
    counts, as it already was when it outlived its own run)."""
    old = gc.get_stats()[2]["collections"]
    _collections[1] += 1
    if old != _collections[0] or _collections[1] >= FULL_EVERY:
        gc.collect()
        _collections[:] = [gc.get_stats()[2]["collections"], 0]
    else:
        gc.collect(1)


# A full collection at the end of one run in FULL_EVERY.
FULL_EVERY = 64
# The oldest generation's collection count after the last full collection
# here, and the runs ended since.
_collections = [-1, 0]


def _after_the_run(loop: SimLoop, context: dict[str, Any]) -> None:
    """The exception handler between two runs of a sweep: nobody's news."""


def _unhandled(context: dict[str, Any]) -> BaseException:
    exc = context.get("exception")
    if isinstance(exc, BaseException):
        return exc
    return SimulationFailure(str(context.get("message", "an error reached the exception handler")))
