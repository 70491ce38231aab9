# SPDX-License-Identifier: Apache-2.0
"""SimLoop: askew's asyncio event loop.

The hot half (call_soon, call_later, call_at, time, create_future,
create_task, the run loop) is C, in askew._core.Loop. This file adds the
rest of asyncio.AbstractEventLoop: running and stopping with the stdlib's
error messages, async generators, the exception handler API, and a clear
NondeterminismError for every method that would do real I/O.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import random
import socket
import sys
import threading
import types
import weakref
from asyncio import base_events, coroutines, events, futures, tasks
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, NoReturn, TypeVar

from . import _core, _rawsock, _sockets, _tls, _udp
from ._config import (
    GC_EVERY_STEPS,
    RunConfig,
    WallEpoch,
    check_seed,
    span_ns,
)
from ._determinism import scope
from ._world import safe_repr
from .errors import BudgetExceeded, DeadlockError, NondeterminismError

_T = TypeVar("_T")

_core._configure_errors(NondeterminismError)

_HAS_EAGER = sys.version_info >= (3, 12)
_CoroutineType = types.CoroutineType


def _refuse(
    call: str, instead: str, why: str = "would do real I/O, outside the seed's control"
) -> NoReturn:
    _raise_refusal(f"{call} inside a simulation {why}. {instead}")


def _raise_refusal(message: str) -> NoReturn:
    refusal = NondeterminismError(message)
    # Noted first: if the caller catches it, the run still fails after this step.
    _core._note_refusal(refusal)
    raise refusal


_IO_HINT = (
    "Use askew's simulated network between nodes (node.send / node.recv), "
    "or run this code outside the simulation."
)


# Keyword arguments of create_connection/create_server that the simulated
# TCP accepts (with their default meaning, or no effect on a simulated
# socket); anything else set (ssl, sock, family=AF_INET6, ...) is a part not
# built yet, refused by name (docs/sockets.md).
_CONNECT_IGNORED = frozenset(
    {"local_addr", "happy_eyeballs_delay", "interleave", "all_errors", "proto", "flags"}
    | {"family", "sock", "ssl_handshake_timeout", "ssl_shutdown_timeout"}
)
_SERVE_IGNORED = frozenset(
    {"backlog", "start_serving", "reuse_address", "flags", "keep_alive", "proto", "family"}
    | {"sock", "ssl_handshake_timeout", "ssl_shutdown_timeout", "cleanup_socket"}
)
_DATAGRAM_IGNORED = frozenset({"proto", "flags", "allow_broadcast", "sock"})


# Each socket method's keywords on this Python (asyncio's signature): any
# other is asyncio's TypeError, not an option askew has yet to build.
_KEYWORDS = {
    name: frozenset(inspect.signature(getattr(asyncio.BaseEventLoop, name)).parameters)
    for name in (
        "create_connection",
        "create_server",
        "create_unix_connection",
        "create_unix_server",
        "create_datagram_endpoint",
        "connect_accepted_socket",
    )
}


def _check_keywords(method: str, kwargs: dict[str, Any]) -> None:
    for name in kwargs:
        if name not in _KEYWORDS[method]:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")


def _simulated(sock: Any, call: str) -> None:
    """A real socket is refused; only askew's simulated ones are served."""
    if not isinstance(sock, _rawsock.RawSocket):
        _refuse(call, _SOCK_HINT, f"given the real socket {safe_repr(sock)} would do real I/O")


_SOCK_HINT = (
    "Only sockets made inside the run are simulated: socket.socket() and "
    "socket.socketpair() called from a node's code or a wrapped test (docs/sockets.md)."
)


_BOTH_HOST = "host/port and sock can not be specified at the same time"
_BOTH_PATH = "path and sock can not be specified at the same time"


def _sock_arg(call: str, kwargs: dict[str, Any], ignored: frozenset[str], clash: str | None) -> Any:
    """The sock= argument, if given: checked as asyncio does (`clash` is
    the ValueError when an address came too) and simulated, or refused."""
    sock = kwargs.get("sock")
    if sock is None:
        return None
    _refuse_unbuilt(call, kwargs, ignored)
    if clash is not None:
        raise ValueError(clash)
    _simulated(sock, call.split(" ", 1)[0].split("(", 1)[0] + "(sock=...)")
    return sock


def _refuse_unbuilt(call: str, kwargs: dict[str, Any], ignored: frozenset[str]) -> None:
    for name, value in kwargs.items():
        # None or False is the option left off (reuse_port=False, as anyio
        # passes it): nothing to build.
        if name in ignored or value is None or value is False:
            continue
        if name == "family" and value in (0, socket.AF_INET, socket.AF_UNSPEC):
            continue
        _refuse(
            call,
            "Simulated TCP covers IPv4 streams, IPv6 loopback, TLS and sock= with a "
            "simulated socket; reuse_port and the like are not built yet (docs/sockets.md).",
            f"with {name}={value!r} is not simulated yet",
        )


async def _connect(stack: _sockets.Stack, protocol_factory: Any, tls: Any, connect: Any) -> Any:
    """create_connection and its unix twin, by address: `connect(factory)`
    is the one plain connect, with every argument the call took; TLS runs
    its handshake over that very connect (askew/_tls.py), so it reaches the
    same address the plain call would (family= was once lost there)."""
    if tls is not None:
        return await _tls.create_connection(stack, protocol_factory, tls, connect)
    return await connect(protocol_factory)


async def _given_stream(sock: Any, protocol_factory: Any, tls: Any) -> Any:
    """create_connection(sock=...) and its unix twin: a transport over the
    given simulated socket, with TLS if asked (askew/_tls.py)."""
    if tls is not None:
        return await _tls.adopt(sock, protocol_factory, tls)
    return _rawsock.adopt_stream(sock, protocol_factory)


async def _given_listener(
    sock: Any, protocol_factory: Any, backlog: int, start_serving: bool, tls: Any
) -> Any:
    """create_server(sock=...) and its unix twin: a server on the given
    simulated listening socket, with TLS if asked."""
    if tls is not None:
        return await _tls.serve(sock, protocol_factory, backlog, start_serving, tls)
    return await _rawsock.serve(sock, protocol_factory, backlog, start_serving)


class SimLoop(_core.Loop, asyncio.AbstractEventLoop):  # type: ignore[misc]
    """An asyncio event loop with virtual time and a seeded schedule."""

    def __init__(self, seed: int = 0, config: RunConfig | None = None) -> None:
        self._config = config if config is not None else RunConfig()
        self._task_factory: Any = None
        self._exception_handler: Any = None
        self._current_handle: Any = None
        self._asyncgens: weakref.WeakKeyDictionary[Any, None] = weakref.WeakKeyDictionary()
        self._asyncgens_shutdown_called = False
        self._executor_shutdown_called = False
        self._default_executor: Any = None
        self._thread_id: int | None = None
        self._own_scope = False
        self._random_state: Any = None
        self._host: Any = None  # wrap mode's one-host socket stack (askew/_sockets.py)
        self.slow_callback_duration = 0.1
        # As asyncio's loops: PYTHONASYNCIODEBUG and -X dev turn debug on.
        self.set_debug(coroutines._is_debug_mode())  # type: ignore[attr-defined]
        self._apply_config()
        self.reset(seed)

    def _apply_config(self, *, budgets: bool = True) -> None:
        """Hand the config to C; budgets=False lifts the step and time
        budgets (teardown after a run that spent them)."""
        cfg = self._config
        self._configure(
            cfg.strategy,
            cfg.max_steps if budgets else 0,
            cfg.max_time_ns if budgets else 0,
            GC_EVERY_STEPS,
            span_ns(cfg.cpu),
            span_ns(cfg.overshoot),
            cfg.pct_depth,
            cfg.pct_steps,
            cfg.wall_epoch_ns,
        )

    # A test may replace loop.time on the instance (a mock clock), as it can
    # on asyncio's loop, whose scheduler then obeys it: so does this one.
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "time":
            self._set_time_view(value)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        if name == "time":
            self._set_time_view(None)

    def reset(self, seed: int) -> None:
        """Start a new run on this loop: clock at zero, streams from `seed`."""
        check_seed(seed)
        _sockets.drop_host(self)  # its node goes with the network's reset
        self._dropping_run = True  # the old run's async generators go with it
        try:
            self._reset(seed)
        finally:
            self._dropping_run = False
        self._random_state = None

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
        self._thread_id = threading.get_ident()
        sys.set_asyncgen_hooks(
            firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook
        )
        self._open_scope()
        try:
            self._enter()  # first: a failed enter leaves no running loop set
            events._set_running_loop(self)
            try:
                status = self._run()
            finally:
                self._leave()
                events._set_running_loop(None)
            if status != _core.RUN_STOPPED:
                self._run_cannot_go_on(status)
        finally:
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
                random.setstate(self._random_state)

    def _close_scope(self) -> None:
        if self._own_scope:
            self._random_state = random.getstate()
            self._own_scope = False
            scope.exit()

    def _run_cannot_go_on(self, status: int) -> NoReturn:
        if status == _core.RUN_IDLE:
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
        pending = sorted(
            (t for t in tasks.all_tasks(self) if not t.done()),
            key=lambda t: getattr(t, "_askew_seq", 0),
        )
        lines = [
            f"deadlock: nothing is ready and no timer is pending, but the run is not done "
            f"(seed={self.seed}, t={self.time():.6f}s, steps={self.steps})"
        ]
        if not pending:
            lines.append("  no task is pending: something waits on a future nobody will set")
        for task in pending:
            lines.append(f"  {task.get_name()} waits at {describe_wait(task)}")
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
        if not fut.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return fut.result()

    def close(self) -> None:
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if self.is_closed():
            return
        _sockets.drop_host(self)
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

    # The stdlib's exception handler API works unchanged on this loop.
    get_exception_handler: Any = base_events.BaseEventLoop.get_exception_handler
    set_exception_handler: Any = base_events.BaseEventLoop.set_exception_handler
    default_exception_handler: Any = base_events.BaseEventLoop.default_exception_handler
    call_exception_handler: Any = base_events.BaseEventLoop.call_exception_handler

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
        self._asyncgens[agen] = None

    _dropping_run = False

    def _asyncgen_finalizer_hook(self, agen: Any) -> None:
        self._asyncgens.pop(agen, None)
        # A generator dropped with its run (reset) is dropped like the run's
        # tasks: an aclose() task made now would be dropped unawaited.
        if not self.is_closed() and not self._dropping_run:
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

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        """Nothing to do: a simulation never starts executor threads."""
        self._executor_shutdown_called = True

    # ---- threads and executors ------------------------------------------------

    # While executor work runs inline (_run_inline_work): its name, and the
    # last call_soon_threadsafe it made, which a wait that follows is named with.
    _inline_work: str | None = None
    _inline_threadsafe: str | None = None

    def call_soon_threadsafe(
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> Any:
        if self._thread_id is not None and threading.get_ident() != self._thread_id:
            _raise_refusal(
                "call_soon_threadsafe() from another thread while a simulation runs: "
                "that thread's timing is outside the seed's control. Do the work in a task."
            )
        if self._inline_work is not None:
            caller = sys._getframe(1)
            self._inline_threadsafe = (
                f"call_soon_threadsafe({self._work_name(callback)}) in {self._where(caller)}"
            )
        handle: Any = self.call_soon(callback, *args, context=context)
        return handle

    def run_in_executor(self, executor: Any, func: Callable[..., _T], *args: Any) -> Any:
        self._check_closed()
        if self._config.executor != "inline":
            _raise_refusal(
                f"run_in_executor({self._work_name(func)}) (and asyncio.to_thread) inside a "
                "simulation would run the function on a real thread, outside the seed's "
                "control. Use a coroutine, or @askew.simulate(executor='inline') / "
                "askew.new_event_loop(executor='inline') / --askew-executor=inline to run "
                "executor work inline at a seeded step."
            )
        fut = self.create_future()
        ctx = contextvars.copy_context()

        def run_inline() -> None:
            if fut.cancelled():
                return
            try:
                result = self._run_inline_work(ctx, func, args)
            except BaseException as exc:
                if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                    raise
                fut.set_exception(exc)
            else:
                fut.set_result(result)

        self.call_soon(run_inline)
        return fut

    def _run_inline_work(self, ctx: contextvars.Context, func: Callable[..., _T], args: Any) -> _T:
        # The "thread" is the loop's own thread, so work that waits for the
        # loop (run_coroutine_threadsafe(...).result(), call_soon_threadsafe
        # then Event.wait, anyio's from_thread.run) would wait forever.
        # threading.Condition.wait is what Future.result, Event.wait,
        # Queue.get and Semaphore.acquire block in: while the work runs, a
        # blocking wait on this thread raises, naming the wait, instead.
        original = vars(threading.Condition)["wait"]
        loop = self

        def wait(cond: threading.Condition, timeout: float | None = None) -> bool:
            inline = _sockets.inline_loop is loop and threading.get_ident() == loop._thread_id
            if (timeout is not None and timeout <= 0) or not inline:
                return bool(original(cond, timeout))  # a poll, or another thread
            _raise_refusal(loop._inline_wait_report(sys._getframe(1)))

        self._inline_work = self._work_name(func)
        self._inline_threadsafe = None
        setattr(threading.Condition, "wait", wait)  # noqa: B010
        # As on an executor's thread, no loop runs while the work does
        # (get_running_loop() raises: blockbuster, as aiohttp's suite runs
        # it, lets a worker block); askew's sockets still find the loop.
        outer = _sockets.inline_loop
        _sockets.inline_loop = self
        events._set_running_loop(None)
        try:
            return ctx.run(func, *args)
        finally:
            events._set_running_loop(self)
            _sockets.inline_loop = outer
            setattr(threading.Condition, "wait", original)  # noqa: B010
            self._inline_work = self._inline_threadsafe = None

    def _inline_wait_report(self, frame: Any) -> str:
        lines = [
            f"executor work {self._inline_work} runs inline (executor='inline'), on the "
            "event loop's own thread, and blocks there waiting for the loop or another "
            "thread; the loop cannot run while its own thread waits, so this would hang.",
            "  threading.Condition.wait()",
        ]
        while frame is not None and frame.f_code is not SimLoop._run_inline_work.__code__:
            if frame.f_code.co_filename != contextvars.__file__:
                lines.append(f"  in {self._where(frame)}")
            frame = frame.f_back
        if self._inline_threadsafe is not None:
            lines.append(f"  after {self._inline_threadsafe}")
        lines.append(
            "Await the coroutine instead of reaching the loop from a thread; code that "
            "needs a real thread cannot run wrapped."
        )
        return "\n".join(lines)

    @staticmethod
    def _where(frame: Any) -> str:
        return f"{frame.f_code.co_qualname}() at {frame.f_code.co_filename}:{frame.f_lineno}"

    @staticmethod
    def _work_name(func: Any) -> str:
        import functools  # here, so this helper stays beside the methods it serves

        while isinstance(func, functools.partial):
            # asyncio.to_thread submits partial(context.run, func, *args).
            inner = func.func
            bound_to = getattr(inner, "__self__", None)
            func = func.args[0] if isinstance(bound_to, contextvars.Context) else inner
        return str(getattr(func, "__qualname__", None) or repr(func))

    def set_default_executor(self, executor: Any) -> None:
        import concurrent.futures

        if not isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            raise TypeError("executor must be ThreadPoolExecutor")
        self._default_executor = executor

    # ---- names and TCP: simulated inside a world (askew/_sockets.py) ----------

    async def getaddrinfo(
        self,
        host: Any,
        port: Any,
        *,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> Any:
        stack = _sockets.active(self)
        if stack is None:
            _refuse(f"getaddrinfo({host!r}, {port!r})", _IO_HINT)
        return stack.names.getaddrinfo(host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: Any, flags: int = 0) -> Any:
        stack = _sockets.active(self)
        if stack is None:
            _refuse(f"getnameinfo({sockaddr!r})", _IO_HINT)
        return stack.names.getnameinfo(sockaddr, flags)

    def _socket_stack(
        self, call: str, kwargs: dict[str, Any], ignored: frozenset[str]
    ) -> _sockets.Stack:
        """The running world's socket stack (TCP and UDP alike); a refusal
        outside a world (a bare loop, wrap mode) or for an option not built
        yet."""
        stack = _sockets.active(self)
        if stack is None:
            _refuse(call, _IO_HINT)
        _refuse_unbuilt(call, kwargs, ignored)
        return stack

    async def create_connection(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        _check_keywords("create_connection", kwargs)
        call = f"create_connection({host!r}, {port!r}) (and asyncio.open_connection)"
        tls = _tls.take_options(kwargs, host, server_side=False)  # TLS: askew/_tls.py
        clash = _BOTH_HOST if host is not None or port is not None else None
        sock = _sock_arg(call, kwargs, _CONNECT_IGNORED, clash)
        if sock is not None:
            return await _given_stream(sock, protocol_factory, tls)
        stack = self._socket_stack(call, kwargs, _CONNECT_IGNORED)
        local, family = kwargs.get("local_addr"), kwargs.get("family", 0)
        proto, flags = kwargs.get("proto", 0), kwargs.get("flags", 0)
        all_errors = bool(kwargs.get("all_errors", False))

        def connect(factory: Any) -> Any:
            return _sockets.create_connection(
                stack, factory, host, port, local, family, proto, flags, all_errors
            )

        return await _connect(stack, protocol_factory, tls, connect)

    async def create_server(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        _check_keywords("create_server", kwargs)
        call = f"create_server({host!r}, {port!r}) (and asyncio.start_server)"
        tls = _tls.take_options(kwargs, host, server_side=True)  # TLS: askew/_tls.py
        backlog = kwargs.get("backlog", _sockets.BACKLOG_DEFAULT)
        start_serving = kwargs.get("start_serving", True)
        clash = _BOTH_HOST if host is not None or port is not None else None
        sock = _sock_arg(call, kwargs, _SERVE_IGNORED, clash)
        if sock is not None:
            return await _given_listener(sock, protocol_factory, backlog, start_serving, tls)
        stack = self._socket_stack(call, kwargs, _SERVE_IGNORED)
        if tls is not None:
            protocol_factory = _tls.server_factory(stack, protocol_factory, tls)
        server = await _sockets.create_server(
            stack,
            protocol_factory,
            host,
            port,
            backlog,
            start_serving,
            kwargs.get("family", 0),
            None if tls is None else tls.context,
        )
        if kwargs.get("keep_alive"):  # 3.13: on the listeners, so every accept inherits it
            for listening in server.sockets:
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return server

    async def create_unix_connection(
        self, protocol_factory: Any, path: Any = None, **kwargs: Any
    ) -> Any:
        _check_keywords("create_unix_connection", kwargs)
        call = f"create_unix_connection({path!r}) (and asyncio.open_unix_connection)"
        tls = _tls.take_unix_options(kwargs, server_side=False)
        sock = _sock_arg(call, kwargs, _CONNECT_IGNORED, _BOTH_PATH if path is not None else None)
        if sock is not None:
            return await _given_stream(sock, protocol_factory, tls)
        stack = self._socket_stack(call, kwargs, _CONNECT_IGNORED)
        if path is None:
            raise ValueError("no path and sock were specified")

        def connect(factory: Any) -> Any:
            return _sockets.create_unix_connection(stack, factory, path)

        return await _connect(stack, protocol_factory, tls, connect)

    async def create_unix_server(
        self, protocol_factory: Any, path: Any = None, **kwargs: Any
    ) -> Any:
        _check_keywords("create_unix_server", kwargs)
        call = f"create_unix_server({path!r}) (and asyncio.start_unix_server)"
        tls = _tls.take_unix_options(kwargs, server_side=True)
        backlog = kwargs.get("backlog", _sockets.BACKLOG_DEFAULT)
        start_serving = kwargs.get("start_serving", True)
        sock = _sock_arg(call, kwargs, _SERVE_IGNORED, _BOTH_PATH if path is not None else None)
        if sock is not None:
            return await _given_listener(sock, protocol_factory, backlog, start_serving, tls)
        stack = self._socket_stack(call, kwargs, _SERVE_IGNORED)
        if path is None:
            raise ValueError("path was not specified, and no sock specified")
        if tls is not None:
            protocol_factory = _tls.server_factory(stack, protocol_factory, tls)
        return await _sockets.create_unix_server(
            stack,
            protocol_factory,
            path,
            backlog,
            start_serving,
            None if tls is None else tls.context,
        )

    async def create_datagram_endpoint(
        self, protocol_factory: Any, local_addr: Any = None, remote_addr: Any = None, **kwargs: Any
    ) -> Any:
        _check_keywords("create_datagram_endpoint", kwargs)
        call = f"create_datagram_endpoint({local_addr!r}, {remote_addr!r})"
        addressed = local_addr is not None or remote_addr is not None
        clash = "socket modifier keyword arguments can not be used when sock is specified."
        sock = _sock_arg(call, kwargs, _DATAGRAM_IGNORED, clash if addressed else None)
        if sock is not None:
            return await _rawsock.adopt_datagram(sock, protocol_factory)
        stack = self._socket_stack(call, kwargs, _DATAGRAM_IGNORED)
        return await _udp.create_datagram_endpoint(
            stack,
            protocol_factory,
            local_addr,
            remote_addr,
            kwargs.get("family", 0),
            kwargs.get("reuse_port"),
            kwargs.get("allow_broadcast"),
            kwargs.get("proto") or 0,
        )

    async def connect_accepted_socket(self, protocol_factory: Any, sock: Any, **kwargs: Any) -> Any:
        _check_keywords("connect_accepted_socket", kwargs)
        kwargs["sock"] = sock
        given = _sock_arg("connect_accepted_socket()", kwargs, _CONNECT_IGNORED, None)
        return _rawsock.adopt_stream(given, protocol_factory)

    async def sendfile(
        self,
        transport: Any,
        file: Any,
        offset: int = 0,
        count: Any = None,
        *,
        fallback: bool = True,
    ) -> Any:
        # Plain and TLS transports alike (askew/_tls.py).
        return await _tls.sendfile(self, transport, file, offset, count, fallback)

    async def start_tls(self, transport: Any, protocol: Any, sslcontext: Any, **kwargs: Any) -> Any:
        return await _tls.start_tls(self, transport, protocol, sslcontext, **kwargs)

    async def connect_read_pipe(self, protocol_factory: Any, pipe: Any) -> Any:
        _refuse("connect_read_pipe()", _IO_HINT)

    async def connect_write_pipe(self, protocol_factory: Any, pipe: Any) -> Any:
        _refuse("connect_write_pipe()", _IO_HINT)

    async def subprocess_shell(self, protocol_factory: Any, cmd: Any, **kwargs: Any) -> Any:
        _refuse(
            f"subprocess_shell({cmd!r}) (and asyncio.create_subprocess_shell)",
            "A subprocess runs outside the simulation: fake it with a node, or run it outside.",
        )

    async def subprocess_exec(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        _refuse(
            f"subprocess_exec{args!r} (and asyncio.create_subprocess_exec)",
            "A subprocess runs outside the simulation: fake it with a node, or run it outside.",
        )

    # A simulated socket (askew/_rawsock.py: socket.socket() on a world's
    # node) is served; anything else is a real fd and refused as before.

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:
        if not isinstance(fd, _rawsock.RawSocket):
            _refuse(f"add_reader({fd!r})", "File descriptors are real I/O. " + _IO_HINT)
        _rawsock.watch(fd, "r", callback, args)

    def add_writer(self, fd: Any, callback: Any, *args: Any) -> None:
        if not isinstance(fd, _rawsock.RawSocket):
            _refuse(f"add_writer({fd!r})", "File descriptors are real I/O. " + _IO_HINT)
        _rawsock.watch(fd, "w", callback, args)

    def remove_reader(self, fd: Any) -> bool:
        return isinstance(fd, _rawsock.RawSocket) and _rawsock.unwatch(fd, "r")

    def remove_writer(self, fd: Any) -> bool:
        return isinstance(fd, _rawsock.RawSocket) and _rawsock.unwatch(fd, "w")

    async def sock_recv(self, sock: Any, nbytes: int) -> Any:
        _simulated(sock, "sock_recv()")
        return await _rawsock.sock_recv(sock, nbytes)

    async def sock_recv_into(self, sock: Any, buf: Any) -> Any:
        _simulated(sock, "sock_recv_into()")
        return await _rawsock.sock_recv_into(sock, buf)

    async def sock_recvfrom(self, sock: Any, bufsize: int) -> Any:
        _simulated(sock, "sock_recvfrom()")
        return await _rawsock.sock_recvfrom(sock, bufsize)

    async def sock_recvfrom_into(self, sock: Any, buf: Any, nbytes: int = 0) -> Any:
        _simulated(sock, "sock_recvfrom_into()")
        return await _rawsock.sock_recvfrom_into(sock, buf, nbytes)

    async def sock_sendall(self, sock: Any, data: Any) -> Any:
        _simulated(sock, "sock_sendall()")
        return await _rawsock.sock_sendall(sock, data)

    async def sock_sendto(self, sock: Any, data: Any, address: Any) -> Any:
        _simulated(sock, "sock_sendto()")
        return await _rawsock.sock_sendto(sock, data, address)

    async def sock_connect(self, sock: Any, address: Any) -> Any:
        _simulated(sock, f"sock_connect({address!r})")
        return await _rawsock.sock_connect(sock, address)

    async def sock_accept(self, sock: Any) -> Any:
        _simulated(sock, "sock_accept()")
        return await _rawsock.sock_accept(sock)

    async def sock_sendfile(
        self, sock: Any, file: Any, offset: int = 0, count: Any = None, *, fallback: bool = True
    ) -> Any:
        _simulated(sock, "sock_sendfile()")
        return await _rawsock.sock_sendfile(sock, file, offset, count, fallback)

    def add_signal_handler(self, sig: int, callback: Any, *args: Any) -> None:
        _refuse(
            f"add_signal_handler({sig!r})",
            "Signals arrive at real, unrepeatable moments; askew does not simulate them yet.",
        )

    def remove_signal_handler(self, sig: int) -> bool:
        return False

    def _timer_handle_cancelled(self, handle: Any) -> None:
        """Called by asyncio.TimerHandle.cancel; askew's own handles need nothing."""

    def _cancel_pending(
        self, waits_for: Callable[[asyncio.Task[Any]], bool]
    ) -> tuple[BaseException | None, BaseException | None]:
        """Cancel the run's pending tasks, in creation order, and run until
        those `waits_for` accepts have finished (World._end_run calls it).
        Returns what stopped that run early, if anything, and the first
        error a cancelled task finished with."""
        # The main task is done by now: with no other task made, none is pending.
        if self._tasks_made <= 1 or self.is_closed():
            return None, None
        pending = sorted(
            (t for t in asyncio.all_tasks(self) if not t.done()),
            key=lambda t: getattr(t, "_askew_seq", 0),
        )
        if not pending:
            return None, None
        for task in pending:
            task.cancel()
        live = [t for t in pending if waits_for(t)]

        async def settle() -> None:
            for _ in range(1000):
                if all(t.done() for t in live):
                    return
                await asyncio.sleep(0)

        stopped: BaseException | None = None
        # A run that failed on its step or time budget has spent it: lift both
        # while the cancelled tasks finish (settle() is bounded on its own).
        self._apply_config(budgets=False)
        try:
            self.run_until_complete(settle())
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            stopped = exc
        finally:
            self._apply_config()
        raised: BaseException | None = None
        for task in pending:  # every error is retrieved, so none is logged later
            if task.done() and not task.cancelled() and task.exception() is not None:
                raised = raised or task.exception()
        return stopped, raised

    def _end_run(self) -> None:
        """Drop what is left of the run once its world has ended: ready
        callbacks, timers and messages (askew._runner calls it last)."""
        self._clear()


def describe_wait(task: asyncio.Task[Any]) -> str:
    """Where a pending task is suspended: the innermost frame outside asyncio
    (the user's line), the innermost frame if that differs, and what it awaits."""
    coro: Any = task.get_coro()
    frames = []
    awaited: Any = None
    while coro is not None:
        f = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if f is None:
            break
        frames.append(f)
        nxt = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        if nxt is None or not (hasattr(nxt, "cr_frame") or hasattr(nxt, "gi_frame")):
            awaited = nxt
            break
        coro = nxt
    if not frames:
        return "<no frame>"
    asyncio_dir = asyncio.__file__.rsplit("/", 1)[0] + "/"
    user = [f for f in frames if not f.f_code.co_filename.startswith(asyncio_dir)]
    shown = user[-1] if user else frames[-1]
    where = _frame_text(shown)
    if shown is not frames[-1]:
        where += f" (in {_frame_text(frames[-1])})"
    waiting = getattr(task, "_fut_waiter", None) or awaited
    if waiting is not None:
        where += f", awaiting {_short(waiting)}"
    return where


def _frame_text(frame: Any) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}()"


def _short(obj: Any) -> str:
    text = safe_repr(obj)  # a deadlock report must survive any user __repr__
    return text if len(text) <= 120 else text[:117] + "..."


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
) -> SimLoop:
    """A SimLoop for `seed`: virtual time and a seeded order. Usable as a
    loop_factory for asyncio.run, asyncio.Runner, pytest-asyncio and anyio.
    The keywords are simulate()'s; None keeps a knob's default."""
    kwargs: dict[str, Any] = {"strategy": strategy, "executor": executor}
    for name, value in (
        ("cpu", cpu),
        ("overshoot", overshoot),
        ("max_steps", max_steps),
        ("max_time", max_time),
        ("pct_depth", pct_depth),
        ("pct_steps", pct_steps),
        ("wall_epoch", wall_epoch),
    ):
        if value is not None:
            kwargs[name] = value
    return SimLoop(check_seed(seed), RunConfig(**kwargs))


def run(main: Coroutine[Any, Any, _T], *, seed: int = 0, **kwargs: Any) -> _T:
    """asyncio.run() on a SimLoop."""
    with asyncio.Runner(loop_factory=lambda: new_event_loop(seed, **kwargs)) as runner:
        return runner.run(main)
