# SPDX-License-Identifier: Apache-2.0
"""SimLoop's threads and executors (a mixin of askew/_loop/loop.py's class).

With executor="threads" run_in_executor (and asyncio.to_thread) runs the
work on the run's deterministic threads (askew/_loop/threads.py), and a
thread of the run may call call_soon_threadsafe. With "refuse" it is
refused; with "inline" the work runs on the loop's own thread at a seeded
step. call_soon_threadsafe from a thread that is not the run's is refused.
While inline work runs, a blocking wait on the loop's thread is refused by
name instead of hanging. The network layer reads
`inline_loop()` to find the loop whose work runs on this thread.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import contextvars
import functools
import queue
import sys
import threading
from asyncio import events, futures
from collections.abc import Callable
from typing import Any, TypeVar

from . import threads
from .refusal import raise_refusal

_T = TypeVar("_T")


# The SimLoop whose executor work runs inline right now (the running loop is
# cleared meanwhile, as a worker thread has none).
_inline_loop: Any = None


def inline_loop() -> Any:
    """The loop running inline executor work on this thread, or None."""
    loop = _inline_loop
    if loop is not None and loop._thread_id == _thread.get_ident():
        return loop
    return None


class ExecutorMethods:
    """Threads and executors on a SimLoop."""

    # SimLoop's, of which this is a part.
    _config: Any
    _thread_id: int | None
    _default_executor: Any
    _executor_shutdown_called: bool
    _threads: threads.Threads
    # The default executor a run with threads made (its threads go with the run).
    _run_executor: Any = None
    call_soon: Callable[..., Any]
    create_future: Callable[[], Any]
    _check_closed: Callable[[], None]

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        """Shut the default executor down, waiting for its threads (they run
        only with the baton, so the wait is the seed's like the rest)."""
        self._executor_shutdown_called = True
        executor = self._default_executor
        if executor is not None and threads.current() is self._threads:
            executor.shutdown(wait=True)

    # While executor work runs inline (_run_inline_work): its name, and the
    # last call_soon_threadsafe it made, which a wait that follows is named with.
    _inline_work: str | None = None
    _inline_threadsafe: str | None = None

    def call_soon_threadsafe(
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> Any:
        if self._thread_id is not None and _thread.get_ident() != self._thread_id:
            run = threads.current()
            me = run.me() if run is self._threads else None
            if run is not None and me is not None:
                made = events.Handle(callback, args, self, context)  # type: ignore[arg-type]
                run.call_soon_threadsafe(me, made)
                return made
            raise_refusal(
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
        if self._config.executor == "threads":
            return self._run_on_thread(executor, func, args)
        if self._config.executor != "inline":
            raise_refusal(
                f"run_in_executor({self._work_name(func)}) (and asyncio.to_thread) inside a "
                "simulation would run the function on a real thread, outside the seed's "
                "control. Use a coroutine, or executor='threads' (@askew.simulate, "
                "askew.new_event_loop, --askew-executor) for threads that run only when "
                "the seed says, or executor='inline' to run the work inline at a seeded step."
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

    def _run_on_thread(self, executor: Any, func: Callable[..., _T], args: Any) -> Any:
        if executor is None:
            if self._executor_shutdown_called:
                raise RuntimeError("Executor shutdown has been called")
            executor = self._default_executor
            if executor is None:
                executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio")
                self._default_executor = self._run_executor = executor
        work_queue = getattr(executor, "_work_queue", None)
        if work_queue is not None and not isinstance(work_queue, queue._PySimpleQueue):  # type: ignore[attr-defined]
            raise_refusal(
                f"run_in_executor({self._work_name(func)}) on {executor!r}, an executor made "
                "before the run: its threads would wait on real locks, outside the seed's "
                "control. Make the executor inside the run (or pass None for the loop's "
                "default one)."
            )
        return futures.wrap_future(executor.submit(func, *args), loop=self)  # type: ignore[arg-type]

    def _run_inline_work(self, ctx: contextvars.Context, func: Callable[..., _T], args: Any) -> _T:
        # The "thread" is the loop's own thread, so work that waits for the
        # loop (run_coroutine_threadsafe(...).result(), call_soon_threadsafe
        # then Event.wait, anyio's from_thread.run) would wait forever.
        # threading.Condition.wait is what Future.result, Event.wait,
        # Queue.get and Semaphore.acquire block in: while the work runs, a
        # blocking wait on this thread raises, naming the wait, instead.
        original = vars(threading.Condition)["wait"]
        loop: Any = self  # the SimLoop

        def wait(cond: threading.Condition, timeout: float | None = None) -> bool:
            inline = inline_loop() is loop
            if (timeout is not None and timeout <= 0) or not inline:
                return bool(original(cond, timeout))  # a poll, or another thread
            raise_refusal(loop._inline_wait_report(sys._getframe(1)))

        self._inline_work = self._work_name(func)
        self._inline_threadsafe = None
        setattr(threading.Condition, "wait", wait)  # noqa: B010
        # As on an executor's thread, no loop runs while the work does
        # (get_running_loop() raises: blockbuster, as aiohttp's suite runs
        # it, lets a worker block); askew's sockets still find the loop.
        global _inline_loop
        outer = _inline_loop
        _inline_loop = self
        events._set_running_loop(None)
        try:
            return ctx.run(func, *args)
        finally:
            events._set_running_loop(loop)
            _inline_loop = outer
            setattr(threading.Condition, "wait", original)  # noqa: B010
            self._inline_work = self._inline_threadsafe = None

    def _inline_wait_report(self, frame: Any) -> str:
        lines = [
            f"executor work {self._inline_work} runs inline (executor='inline'), on the "
            "event loop's own thread, and blocks there waiting for the loop or another "
            "thread; the loop cannot run while its own thread waits, so this would hang.",
            "  threading.Condition.wait()",
        ]
        while frame is not None and frame.f_code is not ExecutorMethods._run_inline_work.__code__:
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
        while isinstance(func, functools.partial):
            # asyncio.to_thread submits partial(context.run, func, *args).
            inner = func.func
            bound_to = getattr(inner, "__self__", None)
            func = func.args[0] if isinstance(bound_to, contextvars.Context) else inner
        return str(getattr(func, "__qualname__", None) or repr(func))

    def set_default_executor(self, executor: Any) -> None:
        if not isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            raise TypeError("executor must be ThreadPoolExecutor")
        self._default_executor = executor
