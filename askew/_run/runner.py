# SPDX-License-Identifier: Apache-2.0
"""The runner: @askew.simulate, iteration seeds, replay.

`@askew.simulate(seed=S, iterations=N)` turns `async def test(world, ...)`
into a plain sync function that pytest collects like any other; its other
parameters stay fixtures. Iteration 0 runs seed S itself and iteration i a
seed derived from (S, i), so the seed a report names replays alone. One
loop is reset and reused across iterations. A run ends through the
world's and the loop's own methods (World._power_off and _release, around
SimLoop._freeze, the dead zone; then SimLoop._end_run); its
report is askew._report's. run_iterations runs a range of a test's
iterations the same way for `askew sweep` (askew._run.sweep), and the pytest
plugin follows each sweep through `observer` (its progress line).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import inspect
import io
import os
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .. import _core
from .._disk import files as _disk_files
from .._explore import buggify as _buggify
from .._explore import coverage as _coverage
from .._explore import shrink as _shrink
from .._loop import sigint
from .._loop.config import (
    DEFAULT_CPU,
    DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TIME,
    DEFAULT_OVERSHOOT,
    DEFAULT_PCT_DEPTH,
    DEFAULT_PCT_STEPS,
    DEFAULT_STEP_TIMEOUT,
    DEFAULT_WALL_EPOCH,
    SEED_LIMIT,
    RunConfig,
    Swarm,
    WallEpoch,
    check_iterations,
    check_seed,
)
from .._loop.loop import SimLoop
from .._loop.patches import NameSwap, scope
from .._loop.settings import (
    env_check_replay,
    env_flag,
    env_iterations,
    env_knobs,
    env_seed,
    env_shrink,
    env_suppress,
    parse_suppress,
)
from .._report.report import (
    interrupted,
)
from .._world.states import Change, States
from .._world.world import end_unfinished
from ..errors import NondeterminismError, SimulationFailure
from . import stepping as _stepping
from .failure import analyse_faults, failure_signature, insert_section
from .onerun import TestFn, hooked, interrupts_kept, recording, run_iteration

F = TypeVar("F", bound=Callable[..., Any])
_real_urandom = os.urandom


@dataclass(frozen=True)
class _Spec:
    seed: int | None
    iterations: int
    config: RunConfig
    check_determinism: bool


def simulate(
    seed: int | Callable[..., Any] | None = None,
    iterations: int = 100,
    *,
    strategy: str = "faithful",
    cpu: tuple[float, float] = DEFAULT_CPU,
    overshoot: tuple[float, float] = DEFAULT_OVERSHOOT,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float = DEFAULT_MAX_TIME,
    executor: str = "threads",
    pct_depth: int = DEFAULT_PCT_DEPTH,
    pct_steps: int = DEFAULT_PCT_STEPS,
    swarm: bool | Swarm = False,
    wall_epoch: WallEpoch = DEFAULT_WALL_EPOCH,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    check_determinism: bool = False,
) -> Any:
    """Run `async def test(world, ...)` under `iterations` seeds.

    seed: the base seed (0 <= seed < 2**64); None draws a fresh one per run
    of the test, printed on failure. ASKEW_SEED and ASKEW_ITERATIONS in the
    environment override both. strategy: "faithful" (default: only
    schedules asyncio could produce), "fifo", "pct" (faithful too: PCT's
    random loop priorities aiming at bugs of depth pct_depth, with change
    points spread over pct_steps steps), "pctcp" (faithful too: the
    latency of each message follows its chain's priority inside the link's
    range, with change points spread over pct_steps sends), "interleave" or
    "shuffle".
    swarm: True (askew.Swarm()) or an askew.Swarm: each seed also varies a
    seeded subset of what leaves the test's promise intact (CPU cost,
    overshoot, each link's latency inside its range), and of the knobs the
    Swarm names (loss, duplication, latency beyond the range;
    docs/exploration.md, "Swarm"); the report names the configuration.
    cpu / overshoot: (lo, hi) seconds of seeded virtual CPU time per callback
    and of timer lateness under "faithful". max_steps / max_time: per-run
    budgets (callbacks, virtual seconds). executor: "threads" (default:
    threads, to_thread and run_in_executor run on real threads that take
    turns as the seed says), "inline" (executor work runs at a seeded step
    on the loop's thread) or "refuse".
    wall_epoch: the date the wall clocks (time.time, datetime.now, C's
    CLOCK_REALTIME under askew-exec) read at virtual time 0: Unix seconds,
    ISO-8601 ("2026-01-01") or an aware datetime; 2020-01-01 by default.
    step_timeout: seconds of real time one step may run (a loop that never
    awaits) before the run fails with StepTimeout naming the seed, the node
    and the line; 0 switches the watchdog off. It never changes a run.
    check_determinism runs every seed twice.
    """
    # Used bare (@askew.simulate) it receives the test itself. Only a function
    # is taken for that: anything else given as the seed (a class, say) is a
    # bad seed and is refused as one.
    if inspect.isroutine(seed):
        return simulate()(seed)
    base = None if seed is None else check_seed(seed)
    check_iterations(iterations)
    if not isinstance(check_determinism, bool):
        raise TypeError(f"check_determinism must be a bool, got {check_determinism!r}")
    spec = _Spec(
        base,
        iterations,
        RunConfig(
            strategy=strategy,
            cpu=cpu,
            overshoot=overshoot,
            max_steps=max_steps,
            max_time=max_time,
            executor=executor,
            pct_depth=pct_depth,
            pct_steps=pct_steps,
            swarm=swarm,
            wall_epoch=wall_epoch,
            step_timeout=step_timeout,
        ),
        check_determinism,
    )

    def decorate(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(
                f"@askew.simulate needs an `async def` test; {getattr(fn, '__qualname__', fn)!r} "
                "is not a coroutine function"
            )
        params = list(inspect.signature(fn).parameters.values())
        # A test method (pytest's test classes): the world comes after self,
        # and the instance pytest passes is bound before the world is.
        method = bool(params) and params[0].name == "self"
        at = 1 if method else 0
        if len(params) <= at or params[at].kind not in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.VAR_POSITIONAL,  # async def test(*args) takes it too
        ):
            raise TypeError(
                f"@askew.simulate: {fn.__qualname__} must take the world as its first "
                "parameter (after self, for a method): async def test(world, ...)"
            )

        def test(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True  # pytest shows the user's frames, not askew's
            target: TestFn = fn
            if method:
                if not args:
                    raise TypeError(f"{fn.__qualname__} is a test method: call it on an instance")
                target, args = types.MethodType(fn, args[0]), args[1:]
            if env_seed() is None:
                # The seeds that failed before (pytest --lf's, then the seed
                # database's), each alone, before the sweep.
                for first in sweeps.first:
                    _sweep(target, spec, args, kwargs, base=first, iterations=1)
                    sweeps.passed.append(first)
            _sweep(target, spec, args, kwargs, base=None)

        # Copy the names by hand: functools.wraps would set __wrapped__, and
        # pytest would then read the async signature, world included.
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(test, attr, getattr(fn, attr, None))
        test.__dict__.update(getattr(fn, "__dict__", {}))
        # pytest sees the parameters but the world: its fixtures (a *args
        # that takes the world stays, and asks pytest for nothing).
        kept = params[:at] + (
            params[at:] if params[at].kind is params[at].VAR_POSITIONAL else params[at + 1 :]
        )
        signature = inspect.signature(fn).replace(parameters=kept)
        test.__signature__ = signature  # type: ignore[attr-defined]
        test._askew_test = fn  # type: ignore[attr-defined]
        test._askew_spec = spec  # type: ignore[attr-defined]
        return test  # type: ignore[return-value]

    return decorate


class SweepRecord:
    """What the pytest plugin and a simulated test tell each other of the
    test's sweep: the seeds to run alone first (pytest --lf's seed that
    failed last time, then the seed database's, askew/_run/seeddb.py) and those
    of them that passed, and the (base seed, seeds run) of its last sweep
    that passed, for its -v line. Outside pytest all stay empty."""

    def __init__(self) -> None:
        self.first: list[int] = []
        self.passed: list[int] = []
        self.last: tuple[int, int] | None = None

    def begin(self, first: list[int]) -> None:
        self.first, self.passed, self.last = first, [], None

    def end(self) -> None:
        self.first = []


sweeps = SweepRecord()


class Replay:
    """Replay one seed of a simulated test."""

    @staticmethod
    def run(
        test: Callable[..., Any],
        seed: int,
        *args: Any,
        timeline: str | None = None,
        trace_json: str | None = None,
        suppress: Iterable[int | str] = (),
        stop_at: int | None = None,
        t: float | None = None,
        on_stop: Callable[[_stepping.Moment], object] | None = None,
        **kwargs: Any,
    ) -> None:
        """Run exactly the run `seed` names of `test` (a function decorated
        with @askew.simulate, or a bare `async def test(world, ...)`), with
        `args` and `kwargs` after the world as the test takes them
        (ASKEW_SEED and ASKEW_ITERATIONS are ignored); raises
        SimulationFailure as the original did.
        timeline / trace_json: write the run's HTML timeline / Chrome trace
        JSON to these paths, whether it passes or fails.
        suppress: the fault calls (by index, in order of occurrence) and the
        message faults ("drop:17", "dup:17") the run skips, as a shrunk
        failure's report names them.
        stop_at (a step) or t (virtual seconds): after that step, or the
        first step at or past t, call on_stop(moment) (default: a
        breakpoint() with world, nodes, log, node and its locals `here` in
        scope), then let the run go on to its verdict."""
        stop, at = _stepping.check_stop(stop_at, t)
        if stop is not None or at is not None:
            with hooked(_stepping.stop_hook(stop, at, on_stop or _stepping.debug)):
                Replay.run(
                    test,
                    seed,
                    *args,
                    timeline=timeline,
                    trace_json=trace_json,
                    suppress=suppress,
                    **kwargs,
                )
            return
        check_seed(seed)
        skipped = parse_suppress(",".join(map(str, suppress)), "suppress")
        fn = getattr(test, "_askew_test", None)
        spec = getattr(test, "_askew_spec", None)
        if fn is not None and inspect.ismethod(test):  # Replay.run(TestX().test_y, ...)
            fn = types.MethodType(fn, test.__self__)
        if fn is None or spec is None:
            if not inspect.iscoroutinefunction(test):
                raise TypeError(
                    f"Replay.run needs a test decorated with @askew.simulate or an async "
                    f"function taking the world, got {test!r}"
                )
            fn, spec = test, _Spec(None, 1, RunConfig(), False)
        # Neither path given: a failure's views follow ASKEW_TIMELINE / _TRACE_JSON.
        views = None if timeline is None and trace_json is None else (timeline, trace_json)
        _sweep(fn, spec, args, kwargs, base=seed, iterations=1, views=views, suppress=skipped)

    @staticmethod
    def states(
        test: Callable[..., Any],
        seed: int,
        *args: Any,
        suppress: Iterable[int | str] = (),
        **kwargs: Any,
    ) -> list[Change]:
        """The run `seed` names, replayed to record its nodes' state over
        time: every change of a public attribute, in order (step, t, node,
        name, the value's repr), whether the run passes or fails."""
        got: list[States] = []

        with hooked(recording(got)), contextlib.suppress(SimulationFailure):
            Replay.run(test, seed, *args, suppress=suppress, **kwargs)
        return got[0].changes if got else []


def iteration_seed(base: int, i: int) -> int:
    """The seed of iteration i of a sweep from `base`: iteration 0 runs the
    base itself, so the seed a report names replays alone."""
    return base if i == 0 else int(_core.seed_iteration(base, i))


class SweepObserver(Protocol):
    """What follows a sweep as it runs (the plugin's progress line and
    summary): told of the sweep's start, each iteration, and its end."""

    def sweep_begins(self, fn: TestFn, base: int, iterations: int) -> None: ...

    def iteration_ends(self, iteration: int, failed: bool) -> None: ...

    def sweep_ends(self, coverage: _buggify.Summary | None) -> None: ...


# Set by the pytest plugin; None (the default, and outside pytest) costs
# one comparison per iteration.
observer: SweepObserver | None = None


@dataclass(frozen=True)
class IterationOutcome:
    """One iteration of run_iterations, as plain data: a failure's exception
    (and the run it holds on to) is not kept, so a long range stays small."""

    iteration: int
    seed: int
    headline: str | None = None  # the report's first line; None if the run passed
    report: str | None = None  # the report a pytest run would show
    signature: str | None = None  # what groups failures: failure_signature()
    replays_alone: bool | None = None  # None: not checked (ASKEW_CHECK_REPLAY=0)


@contextlib.contextmanager
def _sweeping(
    fn: TestFn,
    config: RunConfig,
    base: int,
    coverage: list[_buggify.Summary],
    print_coverage: bool = True,
) -> Iterator[SimLoop]:
    """One loop for a sweep's runs, with the collector frozen around them;
    the sweep's buggify summary is appended to `coverage` at its end."""
    if _core.virtual.active_loop() is not None:
        raise RuntimeError(
            f"{fn.__qualname__}: a simulation cannot run inside another simulation "
            "(do not call a simulated test from a simulated test)"
        )
    loop = SimLoop(base, config)
    # Garbage made before the sweep must not be finalized inside one of its
    # runs. Freezing is what ensures it: the collector never scans frozen
    # objects, so older cycles wait until the sweep ends. Only the young
    # generations are collected first (a full collection of a large heap
    # cost most of a one-run sweep); the old one is collected as usual
    # between sweeps.
    gc.collect(1)
    disk_names = NameSwap()
    # A Ctrl-C may land at any line: the scope is closed only if it was
    # opened, and the end is done whole (askew/_loop/sigint.py).
    outer = scope.depth
    try:
        scope.enter(config.wall_epoch_ns)
        gc.freeze()  # what exists now is never scanned by the collections below
        _disk_files.install(disk_names)  # file I/O under a node's mount (askew/_disk/files.py)
        yield loop
    finally:
        with sigint.held():
            try:
                end_unfinished()
                disk_names.undo()
                loop.set_exception_handler(None)
                with interrupts_kept():
                    loop.close()
                    # issue 14: what the loop let go of is collected here, in
                    # this test, while only this test's objects are unfrozen
                    # (a cheap collection).
                    gc.collect()
            finally:
                gc.unfreeze()
                if scope.depth > outer:
                    scope.exit()
        with (
            contextlib.nullcontext()
            if print_coverage
            else contextlib.redirect_stderr(io.StringIO())
        ):
            coverage.append(_buggify.sweep_ends(fn))


def _sweep(
    fn: TestFn,
    spec: _Spec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    base: int | None,
    iterations: int | None = None,
    views: tuple[str | None, str | None] | None = None,
    suppress: frozenset[int | str] | None = None,
) -> None:
    __tracebackhide__ = True
    # A run with calls suppressed is a shrunk run's replay: not analysed again.
    if suppress is None:
        suppress = env_suppress()
    budget = 0.0 if suppress else env_shrink()
    if base is None:
        base = env_seed()
        if base is None:
            base = spec.seed
        if base is None:
            base = int.from_bytes(_real_urandom(8), "little")
        iterations = env_iterations() or spec.iterations
    check = spec.check_determinism or env_flag("ASKEW_CHECK_DETERMINISM")
    # The replay-alone check: on by default under pytest; the fault
    # analysis needs its re-run, so it runs whenever the analysis would.
    alone = env_check_replay("PYTEST_CURRENT_TEST" in os.environ) or budget > 0
    n = iterations or spec.iterations
    # ASKEW_STRATEGY and the other knob variables (the plugin's options) override
    # the decorator's arguments, as ASKEW_SEED does.
    config = dataclasses.replace(spec.config, **env_knobs())  # type: ignore[arg-type]
    watch = observer
    coverage: list[_buggify.Summary] = []
    i, seed = 0, base
    feedback: _coverage.Feedback | None = None  # shrink3: ASKEW_COVERAGE
    sweeping = _sweeping(fn, config, base, coverage)
    try:
        with sweeping as loop:
            if watch is not None:
                watch.sweep_begins(fn, base, n)
            if _coverage.enabled() and n > 1:
                feedback = _coverage.Feedback(loop, base, bool(config.swarm))
            passed: tuple[int, int] | None = None  # the sweep's last passing iteration
            for i in range(n):
                seed = feedback.seed(i) if feedback else iteration_seed(base, i)
                # The nearest passing seed a failure is compared with: the
                # one before, or for the first the next (if it passes).
                if i == 0 and n > 1 and feedback is None:
                    passed = (1, iteration_seed(base, 1))
                calls: list[tuple[int | str, float, str]] = []
                failure = run_iteration(
                    loop,
                    fn,
                    seed,
                    i,
                    args,
                    kwargs,
                    check,
                    config,
                    views,
                    suppress,
                    calls,
                    alone,
                    states=True,
                    neighbour=passed,
                )
                passed = (i, seed)
                if feedback is not None:
                    feedback.observe(seed)
                if watch is not None:
                    watch.iteration_ends(i, failure is not None)
                if failure is not None:
                    # With no fault, its draws are still shrunk; a refusal is
                    # no bug of timing, and replays whatever the draws.
                    refused = isinstance(failure, NondeterminismError)
                    analyse = budget > 0 and (bool(calls) or not refused)
                    if analyse and not failure.replays_alone:
                        # Re-runs without a fault say what the fault did only
                        # if the run without none is this one (issue 24).
                        insert_section(failure, _shrink.UNREPRODUCED)
                    elif analyse:
                        analyse_faults(
                            failure,
                            calls,
                            budget,
                            # Re-runs draw no timeline: (None, None) asks for none.
                            functools.partial(
                                run_iteration,
                                loop,
                                fn,
                                seed,
                                i,
                                args,
                                kwargs,
                                False,
                                config,
                                (None, None),
                            ),
                        )
                    raise failure from failure.__cause__
        sweeps.last = (base, n)
    except KeyboardInterrupt as exc:
        # Ctrl-C: say where the sweep stopped, and stop.
        exc.args = (interrupted(fn, base, i, n, seed, exc),)
        raise
    finally:
        # A Ctrl-C just after the sweep's set-up, before its block began,
        # leaves it at its `yield`: its end runs here.
        sweeping.gen.close()
        if feedback is not None:
            feedback.report()
        # Also after a failure or Ctrl-C: the progress line must go.
        if watch is not None:
            watch.sweep_ends(coverage[0] if coverage else None)


def run_iterations(
    test: Callable[..., Any], base: int, start: int, stop: int, edges: list[int] | None = None
) -> tuple[list[IterationOutcome], _buggify.Summary]:
    """Run iterations [start, stop) of the simulated test `test` (a function
    decorated with @askew.simulate, taking no fixtures) from base seed
    `base`, through the same code a pytest run takes, without stopping at a
    failure: each iteration's outcome and the buggify/sometimes coverage of
    the range. The knob variables (ASKEW_STRATEGY, ...) apply as they do
    under pytest; ASKEW_SEED and ASKEW_ITERATIONS do not. `askew sweep`'s
    workers call it on their share of a sweep. With ASKEW_COVERAGE=1 and
    `edges` given, the union of the runs' coverage maps is appended to it
    (shrink3: askew/_explore/coverage.py; no steering here)."""
    fn = getattr(test, "_askew_test", None)
    spec: _Spec | None = getattr(test, "_askew_spec", None)
    if fn is None or spec is None:
        raise TypeError(f"run_iterations needs a test decorated with @askew.simulate, got {test!r}")
    if inspect.ismethod(test):
        fn = types.MethodType(fn, test.__self__)
    check_seed(base, "base")
    if not 0 <= start <= stop <= SEED_LIMIT:
        raise ValueError(f"iterations [{start}, {stop}) are not a range within [0, 2**64]")
    check = spec.check_determinism or env_flag("ASKEW_CHECK_DETERMINISM")
    alone = env_check_replay(True)  # a sweep prints no seed it did not check
    config = dataclasses.replace(spec.config, **env_knobs())  # type: ignore[arg-type]
    outcomes: list[IterationOutcome] = []
    coverage: list[_buggify.Summary] = []
    sweeping = _sweeping(fn, config, base, coverage, print_coverage=False)
    try:
        with sweeping as loop:
            feedback = (
                _coverage.Feedback(loop, base, False)
                if edges is not None and _coverage.enabled()
                else None
            )
            for i in range(start, stop):
                seed = iteration_seed(base, i)
                try:
                    failure = run_iteration(loop, fn, seed, i, (), {}, check, config, alone=alone)
                except NondeterminismError as exc:
                    failure = exc
                if feedback is not None:
                    feedback.observe(seed)
                if failure is None:
                    outcomes.append(IterationOutcome(i, seed))
                    continue
                report = getattr(failure, "report", None) or str(failure)
                outcome = IterationOutcome(
                    i,
                    seed,
                    report.splitlines()[0],
                    report,
                    failure_signature(failure),
                    getattr(failure, "replays_alone", None),
                )
                outcomes.append(outcome)
                del failure  # its traceback holds the run: collect it with the run
            if feedback is not None and edges is not None:
                edges.append(feedback.seen)
    finally:
        sweeping.gen.close()  # as in _sweep: its end runs even after a Ctrl-C at its start
    return outcomes, coverage[0]
