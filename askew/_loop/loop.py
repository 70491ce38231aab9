# SPDX-License-Identifier: Apache-2.0
"""SimLoop: askew's asyncio event loop.

The hot half (call_soon, call_later, call_at, time, create_future,
create_task, the run loop) is C, in askew._core.Loop. This file adds the
rest of asyncio.AbstractEventLoop: running and stopping with the stdlib's
error messages, async generators, the exception handler API and the end of
a run (its epochs, the settling of leftover tasks and the dead zone,
docs/design.md §3). Its I/O methods are askew/_loop/hostio.py's (served by
the network layer, or refused), its threads and executors
askew/_loop/executor.py's.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import random
import sys
import types
import weakref
from asyncio import base_events, coroutines, events, futures, tasks
from collections.abc import Awaitable, Coroutine
from typing import Any, NoReturn, TypeVar

from .. import _core
from ..errors import BudgetExceeded, DeadlockError, NondeterminismError
from . import hostio, sigint, watchdog
from .config import GC_EVERY_STEPS, RunConfig, WallEpoch, check_seed, span_ns
from .executor import ExecutorMethods
from .frames import describe_wait
from .hostio import IOMethods
from .nodes import node_var
from .patches import scope
from .text import safe_repr
from .threads import Threads

_T = TypeVar("_T")

_core._configure_errors(NondeterminismError)

_HAS_EAGER = sys.version_info >= (3, 12)
_CoroutineType = types.CoroutineType
_OURS = (_core.Task, _core.Future)

# Settling a run's leftover tasks (the end of a run, docs/design.md §3):
# rounds of cancelling what is not done and letting it run, each round at
# most SETTLE_SECONDS of virtual time, all of them at most SETTLE_STEPS steps.
SETTLE_ROUNDS = 3
SETTLE_SECONDS = 60.0
SETTLE_STEPS = 100_000


class SimLoop(IOMethods, ExecutorMethods, _core.Loop, asyncio.AbstractEventLoop):  # type: ignore[misc]
    """An asyncio event loop with virtual time and a seeded schedule."""

    def __init__(self, seed: int = 0, config: RunConfig | None = None) -> None:
        self._config = config if config is not None else RunConfig()
        self._applied: tuple[Any, tuple[Any, ...]] = (None, ())
        self._task_factory: Any = None
        self._exception_handler: Any = None
        self._current_handle: Any = None
        self._asyncgens: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._asyncgens_shutdown_called = False
        self._executor_shutdown_called = False
        self._default_executor: Any = None
        self._thread_id: int | None = None
        self._own_scope = False
        self._random_state: random.Random | None = None
        self._host: Any = None  # the network layer's state on this loop (wrap mode's host)
        # The refusal that cut this loop's last run short: what runs on it
        # until one stops as asked is that run's teardown (_run_cannot_go_on).
        self._cut_by: NondeterminismError | None = None
        self.slow_callback_duration = 0.1
        # As asyncio's loops: PYTHONASYNCIODEBUG and -X dev turn debug on.
        self.set_debug(coroutines._is_debug_mode())  # type: ignore[attr-defined]
        self._apply_config()
        self._threads = Threads(self)
        self.reset(seed)

    def _apply_config(self, *, max_steps: int | None = None) -> None:
        """Hand the config to C; `max_steps` replaces both budgets with a
        step budget of its own (settling a run's leftovers after a run that
        spent them). The engine's numbers are worked out once per config
        (the wall epoch is datetime arithmetic)."""
        cfg = self._config
        if self._applied[0] is not cfg:
            self._applied = (
                cfg,
                (
                    cfg.strategy,
                    cfg.max_steps,
                    cfg.max_time_ns,
                    GC_EVERY_STEPS,
                    span_ns(cfg.cpu),
                    span_ns(cfg.overshoot),
                    cfg.pct_depth,
                    cfg.pct_steps,
                    cfg.wall_epoch_ns,
                ),
            )
        args = self._applied[1]
        if max_steps is not None:
            args = (args[0], max_steps, 0, *args[3:])
        self._configure(*args)

    # A test may replace loop.time on the instance (a mock clock): the C
    # type's attribute store tells its scheduler (ext/loop_type.c).

    def reset(self, seed: int) -> None:
        """Start a new run on this loop: clock at zero, streams from `seed`."""
        check_seed(seed)
        self._end_threads()
        self._threads.reset(seed)
        self._cut_by = None
        hostio.host_io.reset(self)  # what the host served goes with the network's reset
        self._dropping_run = True  # the old run's async generators go with it
        try:
            self._reset(seed)
        finally:
            self._dropping_run = False
        self._random_state = None
        self._main_task: asyncio.Future[Any] | None = None

    @property
    def seed(self) -> int:
        return int(self._seed)

    @property
    def steps(self) -> int:
        """Callbacks run so far in this run."""
        return int(self._steps)

    @property
    def trace_hash(self) -> int:
        """The running hash of every decision and event of this run."""
        return int(self._trace_hash)

    def __repr__(self) -> str:
        state = "closed" if self.is_closed() else "running" if self.is_running() else "idle"
        return f"<SimLoop {state} seed={self.seed} t={self.time():.6f}s steps={self.steps}>"

    # ---- running --------------------------------------------------------

    def _check_closed(self) -> None:
        if self.is_closed():
            raise RuntimeError("Event loop is closed")

    def _check_running(self) -> None:
        if self.is_running():
            raise RuntimeError("This event loop is already running")
        if events._get_running_loop() is not None:
            raise RuntimeError("Cannot run the event loop while another loop is running")

    def run_forever(self) -> None:
        self._check_closed()
        self._check_running()
        old_hooks = sys.get_asyncgen_hooks()
        self._thread_id = _thread.get_ident()
        # A Ctrl-C may land at any line: what is set up here is undone in a
        # `finally`, whole (askew/_loop/sigint.py), as far as it got done.
        try:
            sys.set_asyncgen_hooks(
                firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook
            )
            self._open_scope()
            watchdog.watch(self, self._config.step_timeout)
            if self._config.executor == "threads":
                self._threads.enter()
            try:
                self._enter()  # first: a failed enter leaves no running loop set
                events._set_running_loop(self)
                status = self._run()
            except NondeterminismError as exc:
                self._cut_by = exc  # caught or not, a refusal fails the run
                raise
            finally:
                # First, in C: a refusal the preload raises at the next line
                # (a pending call) lands nowhere once the loop has left.
                self._leave()
                events._set_running_loop(None)
            if status != _core.RUN_STOPPED:
                self._run_cannot_go_on(status)
            self._cut_by = None
        finally:
            with sigint.held():
                events._set_running_loop(None)  # again, if a Ctrl-C cut the line above
                watchdog.unwatch(self)
                self._close_scope()
                self._thread_id = None
                sys.set_asyncgen_hooks(*old_hooks)

    def _open_scope(self) -> None:
        # A bare loop (askew.new_event_loop) opens the determinism scope for
        # each run and keeps its own `random` state between them; under the
        # runner the scope is already open and the runner seeds `random`.
        self._own_scope = not scope.open
        if self._own_scope:
            scope.enter(self._config.wall_epoch_ns)
            if self._random_state is None:
                scope.reseed(self.seed)
            else:
                random.setstate(self._random_state.getstate())

    def _close_scope(self) -> None:
        if self._own_scope:
            # Kept in a Random of its own rather than as getstate()'s tuple:
            # a run then leaves no new object behind (grpclib's leak test
            # counts every object a second run adds).
            if self._random_state is None:
                self._random_state = random.Random()
            self._random_state.setstate(random.getstate())
            self._own_scope = False
            scope.exit()

    def _run_cannot_go_on(self, status: int) -> NoReturn:
        if status == _core.RUN_IDLE:
            if self._cut_by is not None:
                # The teardown of a run a refusal cut short waits for what the
                # cut run never finished (a runner's task in mid-test): that
                # is the refusal's doing, so the refusal is what it raises.
                raise self._cut_by
            raise DeadlockError(self._deadlock_report())
        if status == _core.RUN_TIME_BUDGET:
            raise BudgetExceeded(
                f"virtual time budget exceeded: the next timer lies past "
                f"max_time={self._config.max_time:g}s (seed={self.seed}, t={self.time():.6f}s, "
                f"steps={self.steps}); a loop that only sleeps forever, or raise max_time"
            )
        raise BudgetExceeded(
            f"step budget exceeded: {self.steps} callbacks ran "
            f"(max_steps={self._config.max_steps}, seed={self.seed}, t={self.time():.6f}s); "
            "likely a livelock: tasks keep waking each other without time passing"
        )

    def _deadlock_report(self) -> str:
        pending = self._run_tasks()
        lines = [
            f"deadlock: nothing is ready and no timer is pending, but the run is not done "
            f"(seed={self.seed}, t={self.time():.6f}s, steps={self.steps})"
        ]
        if not pending and not self._threads.alive():
            lines.append("  no task is pending: something waits on a future nobody will set")
        for task in pending:
            lines.append(f"  {task.get_name()} waits at {describe_wait(task)}")
        lines.extend(self._threads.report_lines())
        return "\n".join(lines)

    def run_until_complete(self, future: Awaitable[_T]) -> _T:
        __tracebackhide__ = True  # pytest: the failure is the awaited code's
        self._check_closed()
        self._check_running()
        new_task = not futures.isfuture(future)
        fut: asyncio.Future[_T]
        if new_task and type(future) is _CoroutineType:
            fut = self.create_task(future)  # ensure_future's result, minus its checks
        else:
            fut = tasks.ensure_future(future, loop=self)
        if new_task:
            fut._log_destroy_pending = False  # type: ignore[attr-defined]
            self._main_task = fut
        # asyncio's done callback stops whichever run is going when it runs.
        # When a run ends in an error raised between steps (a refusal raised
        # at the end of the step that finished `fut`, a KeyboardInterrupt),
        # the callback is already queued: it would stop the next run at once,
        # and Runner.close() would never finalize async generators. This one
        # stops only the run that armed it.
        armed = True

        def stop_this_run(_: Any) -> None:
            if armed:
                self.stop()

        fut.add_done_callback(stop_this_run)
        try:
            self.run_forever()
        except BaseException:
            if new_task and fut.done() and not fut.cancelled():
                fut.exception()  # mark it retrieved: the caller sees the error
            raise
        finally:
            armed = False
            fut.remove_done_callback(stop_this_run)
            if fut.done() and self._main_task is fut:
                # A finished task is no run's leftover: the loop keeps none
                # alive (a stock loop's second run leaves no object behind).
                self._main_task = None
        if not fut.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return fut.result()

    def close(self) -> None:
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if self.is_closed():
            return
        hostio.host_io.reset(self)
        self._end_threads()
        self._mark_closed()
        self._default_executor = None
        # issue 14: the last run's log holds its payloads, and through them
        # (a TCP segment holds its endpoint) the run's streams and state. Let
        # go of them now, so their finalizers run in the test that made them
        # rather than in whichever later test frees this loop (a failed
        # test's traceback keeps it) or collects them: "loop is closed",
        # "Event loop is closed" landing on an innocent test.
        self._log_keep(_core.LOG_KEPT)

    # ---- tasks ----------------------------------------------------------

    def set_task_factory(self, factory: Any) -> None:
        if factory is not None and not callable(factory):
            raise TypeError("task factory must be a callable or None")
        self._task_factory = factory
        self._set_task_factory_raw(factory)

    def get_task_factory(self) -> Any:
        return self._task_factory

    def _create_task_slow(
        self, coro: Any, *, name: str | None = None, context: Any = None, **kwargs: Any
    ) -> asyncio.Task[Any]:
        self._check_closed()
        factory = self._task_factory
        if _HAS_EAGER and factory is getattr(asyncio, "eager_task_factory", None):
            factory = None
            kwargs["eager_start"] = True
        if factory is None:
            # Numbered, named and owned in C, as create_task's fast path.
            made: asyncio.Task[Any] = self._make_task(
                coro, context, dict(loop=self, name=name, context=context, **kwargs)
            )
            return made
        if context is not None:
            kwargs["context"] = context
        seq = self._next_task_seq()
        task: asyncio.Task[Any] = factory(self, coro, **kwargs)
        task.set_name(f"Task-{seq}" if name is None else name)
        return task

    @staticmethod
    def _check_callback_debug(callback: Any, method: str) -> None:
        if asyncio.iscoroutinefunction(callback):
            raise TypeError(f"coroutines cannot be used with {method}()")

    def _callback_error(self, handle: Any, exc: BaseException) -> None:
        self.call_exception_handler(
            # safe_repr: a callback whose __repr__ raises must not replace
            # the exception it raised.
            {
                "message": f"Exception in callback {safe_repr(handle)}",
                "exception": exc,
                "handle": handle,
            }
        )

    # The stdlib's exception handler API works unchanged on this loop, but
    # for what an earlier run left behind.
    get_exception_handler: Any = base_events.BaseEventLoop.get_exception_handler
    set_exception_handler: Any = base_events.BaseEventLoop.set_exception_handler
    default_exception_handler: Any = base_events.BaseEventLoop.default_exception_handler
    _call_exception_handler: Any = base_events.BaseEventLoop.call_exception_handler

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        """As asyncio's, except that a call about a task or future of an
        earlier run (its finalizer: "Task was destroyed but it is pending!",
        "exception was never retrieved") is dropped and counted: it is no
        news of this run, and the seed alone would never see it."""
        for key in ("task", "future"):
            made = context.get(key)
            if isinstance(made, _OURS) and made._askew_epoch not in (0, self._epoch):
                self._note_stale()
                return
        self._call_exception_handler(context)

    # ---- async generators, shutdown ---------------------------------------

    def _asyncgen_firstiter_hook(self, agen: Any) -> None:
        if self._asyncgens_shutdown_called:
            import warnings

            warnings.warn(
                f"asynchronous generator {agen!r} was scheduled after "
                f"loop.shutdown_asyncgens() call",
                ResourceWarning,
                source=self,
                stacklevel=2,
            )
        self._asyncgens[agen] = self._epoch

    _dropping_run = False

    def _asyncgen_finalizer_hook(self, agen: Any) -> None:
        epoch = self._asyncgens.pop(agen, None)
        if epoch is not None and epoch != self._epoch:
            self._note_stale()  # an earlier run's generator: its finally is not this run's
            return
        # A generator dropped with its run (reset), or in its dead zone, is
        # dropped like the run's tasks: an aclose() task made now would never run.
        if not self.is_closed() and not self._dropping_run and not self._dead:
            self.call_soon_threadsafe(self.create_task, agen.aclose())

    async def shutdown_asyncgens(self) -> None:
        """Close the async generators still open, in first-iteration order."""
        self._asyncgens_shutdown_called = True
        if not len(self._asyncgens):
            return
        closing = list(self._asyncgens)
        self._asyncgens.clear()
        results = await tasks.gather(*[ag.aclose() for ag in closing], return_exceptions=True)
        for result, agen in zip(results, closing, strict=True):
            if isinstance(result, Exception):
                self.call_exception_handler(
                    {
                        "message": f"an error occurred during closing of "
                        f"asynchronous generator {agen!r}",
                        "exception": result,
                        "asyncgen": agen,
                    }
                )

    def _timer_handle_cancelled(self, handle: Any) -> None:
        """Called by asyncio.TimerHandle.cancel; askew's own handles need nothing."""

    # ---- the end of a run (docs/design.md §3) -------------------------------

    def _run_tasks(self) -> list[asyncio.Task[Any]]:
        """This run's pending tasks, in creation order (a task an earlier run
        left, and a task made by a user's factory, are not this run's)."""
        if self._tasks_made <= 1:  # at most the task run_until_complete made
            main = self._main_task
            return [main] if isinstance(main, asyncio.Task) and not main.done() else []
        epoch = self._epoch
        return sorted(
            (
                t
                for t in tasks.all_tasks(self)
                if not t.done() and getattr(t, "_askew_epoch", 0) in (0, epoch)
            ),
            key=lambda t: getattr(t, "_askew_seq", 0),
        )

    def _settle(self, leftovers: list[asyncio.Task[Any]]) -> list[BaseException]:
        """Cancel `leftovers` (the test body's tasks still pending when its
        verdict is in) and run until they are done, inside the run: in
        SETTLE_ROUNDS rounds, each cancelling again what is not done (3.11's
        wait_for can swallow a cancellation) and letting it run for up to
        SETTLE_SECONDS of virtual time, within SETTLE_STEPS steps in all.
        What is still pending after that is left to the dead zone. Returns
        what they raised, and what stopped the settling early: teardown,
        never a failure."""
        if not leftovers or self.is_closed():
            return []

        async def settle() -> None:
            for _ in range(SETTLE_ROUNDS):
                live = [t for t in leftovers if not t.done()]
                if not live:
                    return
                for task in live:
                    task.cancel()
                await asyncio.wait(live, timeout=SETTLE_SECONDS)

        raised: list[BaseException] = []
        self._apply_config(max_steps=SETTLE_STEPS)
        try:
            self.run_until_complete(settle())
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            raised.append(exc)
        finally:
            self._apply_config()
        for task in leftovers:  # each error retrieved, so none is logged later
            if task.done() and not task.cancelled() and task.exception() is not None:
                raised.append(task.exception())  # type: ignore[arg-type]
        return raised

    def _detach(self, task: asyncio.Task[Any]) -> BaseException | None:
        """In the dead zone: let go of a task of this run that will never run
        again (a crashed or powered-off node's, a leftover the settling did
        not finish). Its coroutine is closed as the node it ran as, so what
        a finally still does is that node's, and the task leaves asyncio's
        registry, so no later run sees it. What the closing raised."""
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        ctx = contextvars.copy_context()
        owner = getattr(task, "_askew_owner", -1)
        if owner >= 0:
            ctx.run(node_var.set, owner)
        error: BaseException | None = None
        try:
            ctx.run(task.get_coro().close)
        except Exception as exc:  # a finally that raised: teardown
            error = exc
        tasks._unregister_task(task)
        return error

    def _freeze(self) -> None:
        """Enter the run's dead zone, after its verdict and its leftovers
        settled: what user code still runs (a finally, a close, a finalizer)
        runs as inside the run, on this loop and its virtual clocks, but no
        clock moves (a time.sleep returns at once) and nothing it schedules
        runs. The dead zone lasts until the next reset; the loop is active
        only until _thaw."""
        self._set_dead(True)
        self._enter()
        events._set_running_loop(self)

    def _thaw(self) -> None:
        """Leave the dead zone: the run's threads still alive are unwound
        first (_end_threads), then the loop stops being active."""
        try:
            self._end_threads()
        finally:
            events._set_running_loop(None)
            self._leave()

    def _end_threads(self) -> None:
        """Unwind the run's threads still alive (in the dead zone when the
        runner ends the run), in creation order; the run has none after."""
        self._threads.kill_all()
        self._threads.leave()
        if self._default_executor is self._run_executor:
            self._default_executor = None
        self._run_executor = None

    def _end_run(self) -> None:
        """Drop what is left of the run once its world has ended: ready
        callbacks, timers and messages (askew._run.onerun calls it last)."""
        self._clear()


def new_event_loop(
    seed: int = 0,
    *,
    strategy: str = "faithful",
    cpu: tuple[float, float] | None = None,
    overshoot: tuple[float, float] | None = None,
    max_steps: int | None = None,
    max_time: float | None = None,
    executor: str = "refuse",
    pct_depth: int | None = None,
    pct_steps: int | None = None,
    wall_epoch: WallEpoch | None = None,
    step_timeout: float | None = None,
) -> SimLoop:
    """A SimLoop for `seed`: virtual time and a seeded order. Usable as a
    loop_factory for asyncio.run, asyncio.Runner, pytest-asyncio and anyio.
    The keywords are simulate()'s (strategy, cpu, overshoot, max_steps,
    max_time, executor, pct_depth, pct_steps, wall_epoch, step_timeout: see
    there); None keeps a knob's default."""
    kwargs: dict[str, Any] = {"strategy": strategy, "executor": executor}
    for name, value in (
        ("cpu", cpu),
        ("overshoot", overshoot),
        ("max_steps", max_steps),
        ("max_time", max_time),
        ("pct_depth", pct_depth),
        ("pct_steps", pct_steps),
        ("wall_epoch", wall_epoch),
        ("step_timeout", step_timeout),
    ):
        if value is not None:
            kwargs[name] = value
    return SimLoop(check_seed(seed), RunConfig(**kwargs))


def run(main: Coroutine[Any, Any, _T], *, seed: int = 0, **kwargs: Any) -> _T:
    """asyncio.run() on a SimLoop."""
    with asyncio.Runner(loop_factory=lambda: new_event_loop(seed, **kwargs)) as runner:
        return runner.run(main)
