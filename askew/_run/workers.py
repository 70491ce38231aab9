# SPDX-License-Identifier: Apache-2.0
"""Where `askew sweep`'s chunks run: worker processes of this machine, or
Dask tasks on a cluster, a bounded number at a time.

It owns the worker's side (the test found from its node id, a chunk run
through askew._run.runner.run_iterations) and the parent's: `drive` takes
chunks from a lazy iterator, keeps at most a pool's `slots` in flight, and
hands each finished chunk to the sweep's collector. A chunk whose worker
dies is run again in halves, and a half that dies again is halved again,
until the one iteration that kills its worker is named as a failure with
its seed; every other iteration runs. A local worker also watches its
parent: when the parent is gone (SIGKILL, a CI timeout) it exits at once,
so no process of a sweep outlives it. askew/_run/sweep.py (the command)
calls drive with one of the two pools.
"""

from __future__ import annotations

import collections
import gc
import importlib
import inspect
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .runner import iteration_seed, run_iterations

if TYPE_CHECKING:
    from .._explore.buggify import Summary


class UsageError(Exception):
    """A bad command line or test id; the message names the bad value."""


class SweepError(Exception):
    """The sweep cannot go on (a worker raised, or workers die before
    running anything); the message says what was not run."""


# ---- the test ---------------------------------------------------------------


def _import_path(path: Path) -> Any:
    """Import a test file as pytest's "prepend" mode does: the directory above
    its topmost package (or its own directory) goes first on sys.path."""
    root = path.parent
    names = [path.stem]
    while (root / "__init__.py").is_file():
        names.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(".".join(names))


def resolve(test_id: str) -> Callable[..., Any]:
    """The @askew.simulate test a pytest node id names, bound to an instance
    for a method of a test class; UsageError if there is none."""
    file, sep, rest = test_id.partition("::")
    if not sep or not rest:
        raise UsageError(f"test id {test_id!r} must be path/to/test_x.py::test_name")
    if "[" in rest:
        raise UsageError(f"test id {test_id!r}: parametrized tests cannot be swept")
    path = Path(file).resolve()
    if not path.is_file() or path.suffix != ".py":
        raise UsageError(f"test id {test_id!r}: no Python file {file!r}")
    try:
        obj = _import_path(path)
    except Exception as exc:
        raise UsageError(f"test id {test_id!r}: importing {file} failed: {exc!r}") from exc
    owner: Any = None
    for name in rest.split("::"):
        if inspect.isclass(obj):
            owner = obj
        obj = getattr(obj, name, None)
        if obj is None:
            raise UsageError(f"test id {test_id!r}: {file} has no {name!r}")
    spec = getattr(obj, "_askew_spec", None)
    if spec is None or not callable(obj):
        raise UsageError(f"test id {test_id!r} is not an @askew.simulate test")
    if owner is not None:
        obj = obj.__get__(owner(), owner)
    fixtures = [p for p in inspect.signature(obj).parameters if p != "self"]
    if fixtures:
        raise UsageError(
            f"test id {test_id!r} takes pytest fixtures ({', '.join(fixtures)}): "
            "askew sweep runs tests that take only the world"
        )
    return obj  # type: ignore[no-any-return]


# ---- a chunk ----------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """One failing iteration, as the parent prints and groups it."""

    iteration: int
    seed: int
    signature: str
    headline: str
    # None: not checked (ASKEW_CHECK_REPLAY=0, or the seed killed its worker)
    replays_alone: bool | None = None


@dataclass
class ChunkResult:
    start: int
    stop: int
    failures: list[Failure]
    coverage: Summary | None  # None for the iteration that killed its worker
    cpu: float  # CPU seconds the worker spent on the chunk
    edges: int = 0  # shrink3: its runs' interleaving coverage (ASKEW_COVERAGE)


def run_chunk(test: Callable[..., Any], base: int, start: int, stop: int) -> ChunkResult:
    """Iterations [start, stop) of `test` in this process."""
    # Read outside the runs: inside one, askew's scope makes time virtual.
    began = time.process_time()
    # A worker's heap that is not the test's (a Dask worker's: ~57,000
    # objects) is frozen first, so that the runner's collections inside the
    # range scan only what is new. Its garbage is left to the collections
    # between chunks (the runner unfreezes everything at the range's end).
    gc.freeze()
    edges: list[int] = []
    outcomes, coverage = run_iterations(test, base, start, stop, edges)
    cpu = time.process_time() - began
    failures = [
        Failure(o.iteration, o.seed, o.signature or "", o.headline or "", o.replays_alone)
        for o in outcomes
        if o.headline is not None
    ]
    return ChunkResult(start, stop, failures, coverage, cpu, edges[0] if edges else 0)


def killed(base: int, iteration: int, reason: str) -> ChunkResult:
    """The outcome of the iteration whose run kills its worker: a failure."""
    failure = Failure(
        iteration,
        iteration_seed(base, iteration),
        f"worker process died ({reason})",
        f"the worker process died running this seed ({reason})",
    )
    return ChunkResult(iteration, iteration + 1, [failure], None, 0.0)


# ---- the parent: chunks in flight, and the one that kills its worker ----------


@dataclass(frozen=True)
class Died:
    """A chunk's worker died running it."""

    reason: str  # "killed by SIGSEGV", "exit status 1", Dask's account


class Pool(Protocol):
    """Where chunks run: at most `slots` at once; `wait` blocks until one
    or more finish and gives each one's outcome (None: not run, its worker
    never started; run it again). `exact`: a death it reports is always
    the chunk's own."""

    slots: int
    exact: bool

    def submit(self, base: int, start: int, stop: int) -> object: ...

    def wait(self, handles: list[object]) -> list[tuple[object, ChunkResult | Died | None]]: ...

    def drop(self, handles: list[object]) -> None: ...

    def close(self) -> None: ...


class Collector(Protocol):
    def take(self, chunk: ChunkResult) -> bool: ...  # True: --first stops here

    def note(self, text: str) -> None: ...

    def finish(self) -> None: ...


def drive(pool: Pool, base: int, chunks: Iterable[tuple[int, int]], collector: Collector) -> None:
    """Run `chunks` (a lazy iterator: a sweep of 2**64 iterations never
    lists them) on `pool`, at most pool.slots in flight, handing each to
    `collector` as it finishes. Chunks start in order, so once one fails
    under --first (take is True) only the chunks before its first failure
    can hold an earlier one: those run on, the later ones are dropped, and
    the sweep reports the first failing iteration of all, as one process
    would. A chunk whose worker dies is split in two and both halves run
    before any new chunk; a dying chunk of one iteration is that
    iteration's failure (see killed), once it has died running alone where
    the pool cannot tell whose death a death is (Dask blames every task a
    dying worker holds)."""
    upcoming: Iterator[tuple[int, int]] = iter(chunks)
    again: collections.deque[tuple[int, int]] = collections.deque()  # halves of a dead chunk
    suspects: collections.deque[tuple[int, int]] = collections.deque()  # each to run alone
    running: dict[object, tuple[int, int]] = {}
    alone: object = None  # the suspect running with nothing beside it
    stop_at: int | None = None  # --first: the first failing iteration found
    try:
        while True:
            if stop_at is not None:
                suspects = collections.deque(p for p in suspects if p[0] <= stop_at)
            if suspects:
                if not running:
                    piece = suspects.popleft()
                    alone = pool.submit(base, *piece)
                    running[alone] = piece
            while not suspects and len(running) < pool.slots:
                fresh = not again
                next_piece = again.popleft() if again else next(upcoming, None)
                if next_piece is None:
                    break
                piece = next_piece
                if stop_at is not None and piece[0] > stop_at:  # never needed
                    if fresh:  # a new chunk: every one after it is later still
                        upcoming = iter(())
                    continue
                running[pool.submit(base, *piece)] = piece
            if not running:
                break
            for handle, outcome in sorted(pool.wait(list(running)), key=lambda d: running[d[0]]):
                start, stop = running.pop(handle)
                if stop_at is not None and start > stop_at:
                    continue
                if outcome is None:
                    again.appendleft((start, stop))
                    continue
                if isinstance(outcome, Died):
                    if stop - start > 1:
                        mid = (start + stop) // 2
                        again.extendleft([(mid, stop), (start, mid)])
                        collector.note(
                            f"a worker process died ({outcome.reason}) running iterations "
                            f"[{start}, {stop}); running them again in halves to find the seed"
                        )
                        continue
                    if not (pool.exact or handle is alone):
                        suspects.append((start, stop))
                        continue
                    outcome = killed(base, start, outcome.reason)
                if collector.take(outcome):
                    first = min(f.iteration for f in outcome.failures)
                    stop_at = first if stop_at is None else min(stop_at, first)
                    late = [h for h, piece in running.items() if piece[0] > stop_at]
                    pool.drop(late)
                    for h in late:
                        del running[h]
    except BaseException:  # Ctrl-C, SIGTERM, an error: nothing in flight is wanted
        pool.drop(list(running))
        raise
    collector.finish()


# ---- local worker processes ---------------------------------------------------

_ORPHANED = 3  # a worker's exit status when its parent ended the sweep or went away


def _watch_parent(alive: multiprocessing.connection.Connection) -> None:
    """A worker's watchdog thread: the parent never writes to `alive`, so a
    read returns only when the parent's end closes, because the parent
    ended the sweep or died. Either way nothing will read this worker's
    work: it exits at once, even mid-chunk."""
    try:
        alive.recv()
    except (EOFError, OSError):
        pass
    os._exit(_ORPHANED)


def _lane_main(
    work: multiprocessing.connection.Connection,
    alive: multiprocessing.connection.Connection,
    test_id: str,
    cwd: str,
) -> None:
    """A local worker: ("ready", None) once the test is found, then chunks
    (base, start, stop) in and ("done", ChunkResult) or ("error", text)
    out, until the parent sends None or goes away."""
    # Ctrl-C on a terminal reaches the whole process group: the parent
    # alone handles it (it stops the sweep and prints what ran).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Started before any run (a simulation refuses new threads); it only
    # waits in a read, so runs never see it.
    threading.Thread(target=_watch_parent, args=(alive,), daemon=True).start()
    os.chdir(cwd)
    try:
        test = resolve(test_id)
    except BaseException:
        work.send(("error", traceback.format_exc()))
        return
    work.send(("ready", None))
    while (job := work.recv()) is not None:
        try:
            work.send(("done", run_chunk(test, *job)))
        except BaseException:
            work.send(("error", traceback.format_exc()))
            return


class _Lane:
    """One worker process and its work pipe."""

    def __init__(self, context: Any, alive: Any, test_id: str, cwd: str) -> None:
        self.conn, theirs = context.Pipe()
        self.process = context.Process(
            target=_lane_main, args=(theirs, alive, test_id, cwd), daemon=True
        )
        self.process.start()
        theirs.close()  # the worker's alone now: the pipe closes when it dies
        self.ready = False  # it found the test: a death from now on is its chunk's

    def end(self) -> str:
        """Reap the worker (gone, or going); how it ended."""
        self.process.join(5)
        code = self.process.exitcode
        if code is None:  # closed its pipe yet lives on
            self.process.kill()
            self.process.join()
            code = self.process.exitcode
        self.conn.close()
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"


_START_DEATHS = 3  # workers that die before finding the test, before a sweep gives up


class LocalPool:
    """Worker processes of this machine, one chunk in flight on each, so
    that the chunk a dead worker ran is known and is all it lost. Workers
    start from a fresh interpreter (forkserver: nothing of this process is
    inherited, and no fork of a threaded parent); str and bytes hash order
    is fixed in them as askew-exec fixes it, unless set."""

    def __init__(self, workers: int, test_id: str) -> None:
        os.environ.setdefault("PYTHONHASHSEED", "0")
        self._context = multiprocessing.get_context("forkserver")
        # The server imports the runner once; each worker forks with it loaded.
        self._context.set_forkserver_preload(["askew._run.workers"])
        self.slots = workers
        self.exact = True  # a worker runs one chunk at a time
        self._test_id = test_id
        self._cwd = os.getcwd()
        # Each worker holds the reading end; this process alone the writing one.
        self._alive_r, self._alive_w = self._context.Pipe(duplex=False)
        self._idle: list[_Lane] = []
        self._busy: dict[_Lane, tuple[int, int]] = {}
        self._start_deaths = 0

    def submit(self, base: int, start: int, stop: int) -> object:
        while True:
            if self._idle:
                lane = self._idle.pop()
            else:
                lane = _Lane(self._context, self._alive_r, self._test_id, self._cwd)
            try:
                lane.conn.send((base, start, stop))
            except OSError:  # it died while idle: another one
                lane.end()
                continue
            self._busy[lane] = (start, stop)
            return lane

    def wait(self, handles: list[object]) -> list[tuple[object, ChunkResult | Died | None]]:
        """Finished chunks: a result, Died (its worker died running it), or
        None (its worker died before it could start it: run it again)."""
        by_fd = {lane.conn: lane for lane in self._busy}
        by_fd.update({lane.process.sentinel: lane for lane in self._busy})
        ready = {by_fd[r] for r in multiprocessing.connection.wait(list(by_fd))}
        done: list[tuple[object, ChunkResult | Died | None]] = []
        for lane in ready:
            try:
                kind, value = lane.conn.recv() if lane.conn.poll() else ("died", None)
            except (EOFError, OSError):
                kind, value = "died", None
            if kind == "ready":
                lane.ready = True
                self._start_deaths = 0
            elif kind == "done":
                del self._busy[lane]
                self._idle.append(lane)
                done.append((lane, value))
            elif kind == "error":
                start, stop = self._busy[lane]
                raise SweepError(f"a worker raised running iterations [{start}, {stop}):\n{value}")
            else:  # the pipe closed: the worker died
                del self._busy[lane]
                reason = lane.end()
                if lane.ready:
                    done.append((lane, Died(reason)))
                    continue
                self._start_deaths += 1
                if self._start_deaths > _START_DEATHS:
                    raise SweepError(
                        f"worker processes died {self._start_deaths} times in a row before "
                        f"finding the test (the last: {reason})"
                    )
                done.append((lane, None))
        return done

    def drop(self, handles: list[object]) -> None:
        for lane in handles:
            assert isinstance(lane, _Lane)
            if self._busy.pop(lane, None) is None:  # already ended, or idle again
                continue
            lane.process.kill()  # its chunk is not wanted: a worker is cheap to start
            lane.end()

    def close(self) -> None:
        """End every worker: with the alive pipe closed each exits at once."""
        self._alive_w.close()
        for lane in [*self._idle, *self._busy]:
            lane.end()
        self._alive_r.close()
        self._idle.clear()
        self._busy.clear()


# ---- Dask tasks ------------------------------------------------------------------

_cluster_tests: dict[tuple[str, str], Callable[..., Any]] = {}
_cluster_lock = threading.Lock()


def cluster_chunk(test_id: str, cwd: str, base: int, start: int, stop: int) -> ChunkResult:
    """A chunk on a Dask worker: the test resolved from the sweep's working
    directory (the same path there) once per worker process. One chunk at a
    time per process: a simulation owns its process's askew state, and a
    Dask worker may run several tasks in threads."""
    with _cluster_lock:
        here = os.getcwd()
        os.chdir(cwd)  # node ids, signatures and replay paths are cwd-relative
        try:
            key = (test_id, cwd)
            if key not in _cluster_tests:
                _cluster_tests[key] = resolve(test_id)
            return run_chunk(_cluster_tests[key], base, start, stop)
        finally:
            os.chdir(here)


class DaskPool:
    """Chunks as tasks of a Dask cluster, two per worker thread in flight
    (one running, one queued). A finished task is released as soon as its
    result is read, so the scheduler keeps no result on a worker: when a
    worker dies, only the tasks it was running run again (the scheduler
    re-runs them, up to distributed.scheduler.allowed-failures times; a
    task that kills every worker it meets comes back as KilledWorker)."""

    def __init__(self, client: Any, distributed: Any, test_id: str) -> None:
        self._client = client
        self._distributed = distributed
        self._test_id = test_id
        self._cwd = os.getcwd()
        self.threads = max(1, sum(client.nthreads().values()))
        self.slots = 2 * self.threads
        # A dying worker's queued tasks are blamed for its death as well.
        self.exact = False

    def submit(self, base: int, start: int, stop: int) -> object:
        return self._client.submit(
            cluster_chunk, self._test_id, self._cwd, base, start, stop, pure=False
        )

    def wait(self, handles: list[object]) -> list[tuple[object, ChunkResult | Died | None]]:
        done, _pending = self._distributed.wait(handles, return_when="FIRST_COMPLETED")
        finished: list[tuple[object, ChunkResult | Died | None]] = []
        for future in done:
            if future.status == "finished":
                finished.append((future, future.result()))
            elif future.status == "error":
                exc = future.exception()
                if not isinstance(exc, self._distributed.KilledWorker):
                    raise SweepError(f"a Dask task raised: {exc!r}") from exc
                finished.append((future, Died("every Dask worker that ran it died")))
            else:  # cancelled by the cluster, or lost with a worker: run it again
                finished.append((future, None))
            future.release()
        return finished

    def drop(self, handles: list[object]) -> None:
        self._client.cancel(handles)

    def close(self) -> None:
        pass  # the client's `with` block ends it
