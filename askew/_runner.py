# SPDX-License-Identifier: Apache-2.0
"""The runner: @askew.simulate, iteration seeds, failure reports, replay.

`@askew.simulate(seed=S, iterations=N)` turns `async def test(world, ...)`
into a plain sync function that pytest collects like any other; its other
parameters stay fixtures. Iteration 0 runs seed S itself and iteration i a
seed derived from (S, i), so the seed a report names replays alone. One
loop is reset and reused across iterations.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import inspect
import linecache
import os
import sys
import traceback
import types
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from . import _buggify, _core
from ._config import (
    DEFAULT_CPU,
    DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TIME,
    DEFAULT_OVERSHOOT,
    RunConfig,
    check_iterations,
    check_seed,
    env_flag,
    env_iterations,
    env_knob_assignments,
    env_knobs,
    env_seed,
    strategy_note,
)
from ._determinism import scope
from ._loop import SimLoop
from ._world import (
    _KIND_ASSERT,
    _KIND_ERROR,
    LOG_KEPT,
    Event,
    World,
    event_from_entry,
    safe_repr,
)
from .errors import DeadlockError, NondeterminismError, SimulationFailure

TestFn = Callable[..., Coroutine[Any, Any, Any]]
F = TypeVar("F", bound=Callable[..., Any])
_REPORT_EVENTS = 12
_REPORT_SCAN = 256  # log entries read for a report: enough after filtering
_real_urandom = os.urandom


@dataclass(frozen=True)
class _Spec:
    seed: int | None
    iterations: int
    config: RunConfig
    check_determinism: bool


@dataclass
class _Outcome:
    failure: BaseException | None
    failed_node: int | None
    time: float
    steps: int
    trace_hash: int
    events: list[Event]


def simulate(
    seed: int | Callable[..., Any] | None = None,
    iterations: int = 100,
    *,
    strategy: str = "faithful",
    cpu: tuple[float, float] = DEFAULT_CPU,
    overshoot: tuple[float, float] = DEFAULT_OVERSHOOT,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_time: float = DEFAULT_MAX_TIME,
    executor: str = "refuse",
    check_determinism: bool = False,
) -> Any:
    """Run `async def test(world, ...)` under `iterations` seeds.

    seed: the base seed (0 <= seed < 2**64); None draws a fresh one per run
    of the test, printed on failure. ASKEW_SEED and ASKEW_ITERATIONS in the
    environment override both. strategy: "faithful" (default: only
    schedules asyncio could produce), "fifo", "interleave" or "shuffle".
    cpu / overshoot: (lo, hi) seconds of seeded virtual CPU time per callback
    and of timer lateness under "faithful". max_steps / max_time: per-run
    budgets (callbacks, virtual seconds). executor="inline" runs
    run_in_executor work at a seeded step instead of refusing it.
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
            if method:
                if not args:
                    raise TypeError(f"{fn.__qualname__} is a test method: call it on an instance")
                _sweep(types.MethodType(fn, args[0]), spec, args[1:], kwargs, base=None)
            else:
                _sweep(fn, spec, args, kwargs, base=None)

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


class Replay:
    """Replay one seed of a simulated test."""

    @staticmethod
    def run(test: Callable[..., Any], seed: int, *args: Any, **kwargs: Any) -> None:
        """Run exactly the run `seed` names (ASKEW_SEED and ASKEW_ITERATIONS
        are ignored); raises SimulationFailure as the original did."""
        check_seed(seed)
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
        _sweep(fn, spec, args, kwargs, base=seed, iterations=1)


def _sweep(
    fn: TestFn,
    spec: _Spec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    base: int | None,
    iterations: int | None = None,
) -> None:
    __tracebackhide__ = True
    if _core.virtual.active_loop() is not None:
        raise RuntimeError(
            f"{fn.__qualname__}: a simulation cannot run inside another simulation "
            "(do not call a simulated test from a simulated test)"
        )
    if base is None:
        base = env_seed()
        if base is None:
            base = spec.seed
        if base is None:
            base = int.from_bytes(_real_urandom(8), "little")
        iterations = env_iterations() or spec.iterations
    check = spec.check_determinism or env_flag("ASKEW_CHECK_DETERMINISM")
    n = iterations or spec.iterations
    # ASKEW_STRATEGY and the other knob variables (the plugin's options) override
    # the decorator's arguments, as ASKEW_SEED does.
    config = dataclasses.replace(spec.config, **env_knobs())  # type: ignore[arg-type]
    loop = SimLoop(base, config)
    gc.collect()
    scope.enter()
    gc.freeze()  # what exists now is never scanned by the collections below
    try:
        for i in range(n):
            seed = base if i == 0 else int(_core.seed_iteration(base, i))
            outcome = _run_once(loop, fn, seed, args, kwargs, check)
            if check:
                again = _run_once(loop, fn, seed, args, kwargs, check)
                if again.trace_hash != outcome.trace_hash:
                    raise NondeterminismError(_divergence(fn, seed, i, outcome, again))
            if outcome.failure is not None:
                raise _failure(fn, seed, i, outcome, config) from outcome.failure
    finally:
        loop.close()
        gc.unfreeze()
        scope.exit()
        _buggify.sweep_ends(fn)


def _run_once(
    loop: SimLoop,
    fn: TestFn,
    seed: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    want_events: bool = False,
) -> _Outcome:
    __tracebackhide__ = True
    loop.reset(seed)
    scope.reseed(seed)
    world = World(loop, seed)
    _buggify.run_begins(world)
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    failure: BaseException | None = None
    try:
        loop.run_until_complete(fn(world, *args, **kwargs))
    except (KeyboardInterrupt, SystemExit):
        _teardown(loop, world)
        raise
    except BaseException as exc:
        failure = exc
    if world._failure is not None:
        failure = world._failure
    time, steps = loop._now_ns / 1e9, loop.steps
    if failure is not None:
        # A refusal is a SimulationFailure (an AssertionError) but no assert failed.
        refused = isinstance(failure, NondeterminismError)
        kind = _KIND_ASSERT if isinstance(failure, AssertionError) and not refused else _KIND_ERROR
        world.log._emit(kind, -1, _event_text(failure, world._failed_node))
    # Formatting the log costs more than a small run: only for a report or a
    # comparison. The log stays in the loop until its next reset.
    events = _recent_events(loop, want_events) if failure is not None or want_events else None
    trace_hash = loop.trace_hash
    teardown_error = _teardown(loop, world)
    failed_node = world._failed_node
    # Collect this run's garbage now, while its exception handler is set: the
    # world is cyclic (nodes point back at it), so an unretrieved task
    # exception in node state would otherwise surface in a later iteration,
    # which its seed replayed alone would not reproduce.
    del world
    gc.collect()
    if failure is None:
        failure = teardown_error
    if failure is None and errors:
        failure = _unhandled(errors[0])
    loop.set_exception_handler(None)
    if events is None:
        events = _recent_events(loop, False) if failure is not None else []
    return _Outcome(failure, failed_node, time, steps, trace_hash, events)


def _recent_events(loop: SimLoop, everything: bool) -> list[Event]:
    entries = loop._log_recent(LOG_KEPT if everything else _REPORT_SCAN)
    return [event_from_entry(e) for e in entries]


def _teardown(loop: SimLoop, world: World) -> BaseException | None:
    """Cancel what is still pending, in creation order, and let it finish."""
    error: BaseException | None = None
    world._end_pauses()
    # The main task is done by now: with no other task made, none is pending.
    pending = (
        sorted(
            (t for t in asyncio.all_tasks(loop) if not t.done()),
            key=lambda t: getattr(t, "_askew_seq", 0),
        )
        if loop._tasks_made > 1
        else []
    )
    if pending and not loop.is_closed():
        for task in pending:
            task.cancel()

        # Tasks of crashed incarnations never run again: wait for the rest.
        live = [t for t in pending if not world._owner_crashed(t)]

        async def settle() -> None:
            for _ in range(1000):
                if all(t.done() for t in live):
                    return
                await asyncio.sleep(0)

        # A run that failed on its step or time budget has spent it: lift both
        # while the cancelled tasks finish (settle() is bounded on its own).
        loop._apply_config(budgets=False)
        try:
            loop.run_until_complete(settle())
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            # A node whose cleanup raised stopped the loop: its error is the news.
            error = world._failure if world._failure is not None else exc
        finally:
            loop._apply_config()
        for task in pending:
            if task.done() and not task.cancelled() and task.exception() is not None:
                error = error or task.exception()
    world._end()
    # The tasks of crashed nodes are still pending and never run again. Close
    # their coroutines here, at a fixed point after the run and with the world
    # ended, instead of leaving them to the collector: collected later, they
    # would report "Task was destroyed but it is pending!" to whichever run's
    # exception handler is set then (failing that run, or a later iteration,
    # which a replay of its seed alone would not) and unwind in its middle.
    for node_id in sorted(world._crashed):
        for task in world._crashed[node_id]:
            if not task.done():
                task._log_destroy_pending = False  # type: ignore[attr-defined]
                try:
                    task.get_coro().close()
                except Exception:  # a dead node's unwinding has no one to tell
                    pass
    world._crashed.clear()
    loop._clear()
    return error


def _unhandled(context: dict[str, Any]) -> BaseException:
    exc = context.get("exception")
    if isinstance(exc, BaseException):
        return exc
    return SimulationFailure(str(context.get("message", "an error reached the exception handler")))


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


def _event_text(exc: BaseException, node: int | None) -> str:
    if isinstance(exc, AssertionError) and not isinstance(exc, SimulationFailure):
        msg = [line.strip() for line in _safe_str(exc).strip().splitlines()]
        if not msg:
            return _assert_source(exc) or "assertion failed"
        # pytest's rewritten message: "assert 2 == 1" then "+  where 2 = len({3, 4})".
        where = next((m.lstrip("+ ").strip() for m in msg[1:] if m.startswith("+")), None)
        return f"{msg[0]} ({where})" if where and msg[0].startswith("assert ") else msg[0]
    return _headline(exc, node)


def replay_command(fn: TestFn, seed: int) -> str:
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "")
    if nodeid:
        nodeid = nodeid.rsplit(" (", 1)[0]
        knobs = "".join(word + " " for word in env_knob_assignments())
        return f"{knobs}ASKEW_SEED={seed} ASKEW_ITERATIONS=1 pytest '{nodeid}'"
    return f"askew.Replay.run({fn.__qualname__}, seed={seed})"


def _failure(
    fn: TestFn, seed: int, iteration: int, outcome: _Outcome, config: RunConfig
) -> SimulationFailure:
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
    replay = replay_command(fn, seed)
    lines += ["", f"  replay: {replay}"]
    note = strategy_note(config)
    if note:
        lines.append(f"  note: {note}")
    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED", "random") == "random":
        lines.append(
            "  note: PYTHONHASHSEED is random in this process, so str and bytes sets may "
            "iterate in another order on replay; run under askew-exec or set PYTHONHASHSEED=0"
        )
    cls = type(exc) if isinstance(exc, SimulationFailure) else SimulationFailure
    failure = cls(lines[0])
    failure.report = "\n".join(lines)
    failure.seed = seed
    failure.iteration = iteration
    failure.time = outcome.time
    failure.steps = outcome.steps
    failure.trace_hash = outcome.trace_hash
    failure.replay = replay
    return failure


def _divergence(fn: TestFn, seed: int, iteration: int, a: _Outcome, b: _Outcome) -> str:
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
