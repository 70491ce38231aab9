# SPDX-License-Identifier: Apache-2.0
"""`askew sweep`'s workers (askew/_run/workers.py): chunks produced lazily
and a bounded number in flight, a chunk whose worker dies bisected to the
seed that kills it (named as a failure, everything else run), no process
of a sweep outliving its parent, and the same on a Dask cluster, where a
finished chunk is released so that a dead worker's work is not redone and
the sweep binds no address.

The process tests sweep a small test module written to tmp_path
(tests/run/sweep_target.py) in real worker processes.
"""

from __future__ import annotations

import collections
import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import hang_guard
from sweep_target import child_env, installed, options

from askew._run import sweep as _sweep
from askew._run import workers as _workers
from askew._run.runner import iteration_seed


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None) -> Iterator[Path]:
    with installed(tmp_path, monkeypatch) as path:
        yield path


def _divisible_by_7(base: int, seeds: int) -> set[int]:
    return {i for i in range(seeds) if iteration_seed(base, i) % 7 == 0}


# ---- drive: lazy, bounded, and the chunk that kills its worker ---------------------


class _Pool:
    """A pool of no processes: a chunk finishes when waited for, oldest
    first; one holding a killer iteration dies; `failing` iterations fail."""

    def __init__(
        self, slots: int, killers: frozenset[int], failing: frozenset[int], exact: bool = True
    ) -> None:
        self.slots = slots
        self.exact = exact  # False: a death is blamed on every chunk in flight, as Dask may
        self.killers = killers
        self.failing = failing
        self.running: dict[object, tuple[int, int]] = {}
        self.most = 0  # chunks in flight at once, at most
        self.deaths = 0

    def submit(self, base: int, start: int, stop: int) -> object:
        handle = object()
        self.running[handle] = (start, stop)
        self.most = max(self.most, len(self.running))
        return handle

    def wait(self, handles: list[object]) -> list[tuple[object, object]]:
        handle = handles[0]
        start, stop = self.running.pop(handle)
        if any(start <= k < stop for k in self.killers):
            self.deaths += 1
            died = [handle]
            if not self.exact:
                died += self.running
                self.running.clear()
            return [(h, _workers.Died("exit status 1")) for h in died]
        failures = [
            _workers.Failure(i, i, "AssertionError at t.py:1", "assert")
            for i in range(start, stop)
            if i in self.failing
        ]
        return [(handle, _workers.ChunkResult(start, stop, failures, None, 0.0))]

    def drop(self, handles: list[object]) -> None:
        for handle in handles:
            del self.running[handle]

    def close(self) -> None:
        pass


class _Collector:
    def __init__(self, first: bool = False) -> None:
        self.first = first
        self.taken: list[tuple[int, int]] = []
        self.failures: list[_workers.Failure] = []
        self.notes: list[str] = []

    def take(self, chunk: _workers.ChunkResult) -> bool:
        self.taken.append((chunk.start, chunk.stop))
        self.failures += chunk.failures
        return self.first and bool(chunk.failures)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def finish(self) -> None:
        pass


def test_chunks_are_made_as_they_are_needed_and_a_few_are_in_flight() -> None:
    pulled = []

    def chunks() -> Iterator[tuple[int, int]]:
        for start in range(0, 2**64, 256):  # the documented maximum
            pulled.append(start)
            yield start, start + 256

    pool = _Pool(slots=3, killers=frozenset(), failing=frozenset({256 * 40 + 7}))
    collector = _Collector(first=True)
    _workers.drive(pool, 1, chunks(), collector)  # type: ignore[arg-type]
    assert pool.most == 3
    assert len(pulled) <= 40 + 1 + 3  # up to the failing chunk, and those in flight
    assert [f.iteration for f in collector.failures] == [256 * 40 + 7]


def test_a_chunk_that_kills_its_worker_is_halved_down_to_the_seed_and_all_else_runs() -> None:
    killers = {5, 300, 301, 511}
    pool = _Pool(slots=4, killers=frozenset(killers), failing=frozenset({7, 299, 302}))
    collector = _Collector()
    _workers.drive(pool, 9, ((a, a + 16) for a in range(0, 512, 16)), collector)  # type: ignore[arg-type]
    # Every iteration was taken once: the killers as one-iteration chunks.
    ran = sorted(i for start, stop in collector.taken for i in range(start, stop))
    assert ran == list(range(512))
    died = [f for f in collector.failures if f.signature == "worker process died (exit status 1)"]
    assert sorted(f.iteration for f in died) == sorted(killers)
    assert all(f.seed == iteration_seed(9, f.iteration) for f in died)
    assert died[0].headline == "the worker process died running this seed (exit status 1)"
    assert {f.iteration for f in collector.failures} == killers | {7, 299, 302}
    # Halving: log2(16) + 1 deaths for a lone killer in a chunk of 16, a few more for neighbours.
    assert pool.deaths <= 4 * 5 + 2
    assert "running them again in halves to find the seed" in collector.notes[0]


def test_a_seed_is_named_once_it_dies_alone_where_a_death_is_blamed_on_all() -> None:
    pool = _Pool(4, frozenset({5, 70}), frozenset({9}), exact=False)
    collector = _Collector()
    _workers.drive(pool, 9, ((a, a + 16) for a in range(0, 128, 16)), collector)  # type: ignore[arg-type]
    ran = sorted(i for start, stop in collector.taken for i in range(start, stop))
    assert ran == list(range(128))  # each once, the innocent neighbours of a death included
    assert sorted(f.iteration for f in collector.failures) == [5, 9, 70]


def test_an_interrupted_sweep_drops_every_chunk_in_flight() -> None:
    class Interrupting(_Collector):
        def take(self, chunk: _workers.ChunkResult) -> bool:
            raise KeyboardInterrupt

    pool = _Pool(4, frozenset(), frozenset())
    with pytest.raises(KeyboardInterrupt):
        _workers.drive(pool, 9, ((a, a + 16) for a in range(0, 2**20, 16)), Interrupting())  # type: ignore[arg-type]
    assert pool.most == 4 and pool.running == {}  # the other three dropped


class _Future:
    def __init__(self, status: str, value: object = None) -> None:
        self.status = status
        self.key = status
        self.value = value
        self.released = False

    def result(self) -> object:
        return self.value

    def exception(self) -> object:
        return self.value

    def release(self) -> None:
        self.released = True


class _Distributed:
    """What DaskPool uses of distributed: wait (everything is done) and KilledWorker."""

    class KilledWorker(Exception):
        pass

    @staticmethod
    def wait(handles: list[_Future], return_when: str) -> tuple[set[_Future], set[_Future]]:
        return set(handles), set()


class _Client:
    def nthreads(self) -> dict[str, int]:
        return {"tcp://a": 1, "tcp://b": 2}


def test_a_dask_task_is_read_released_and_its_workers_death_told_apart() -> None:
    pool = _workers.DaskPool(_Client(), _Distributed, "t.py::test_x")
    assert (pool.slots, pool.exact) == (6, False)  # two a thread; a death may be another's
    chunk = _workers.ChunkResult(0, 16, [], None, 0.0)
    futures = [
        _Future("finished", chunk),
        _Future("error", _Distributed.KilledWorker("died")),
        _Future("cancelled"),  # by the cluster: run again
        _Future("lost"),  # its result went with a worker: run again
    ]
    got = dict(pool.wait(list(futures)))
    assert got[futures[0]] is chunk
    assert got[futures[1]] == _workers.Died("every Dask worker that ran it died")
    assert got[futures[2]] is None and got[futures[3]] is None
    assert all(f.released for f in futures)  # nothing of it stays on the cluster
    with pytest.raises(_workers.SweepError, match="a Dask task raised: ValueError"):
        pool.wait([_Future("error", ValueError("a bug"))])


def test_first_stops_at_a_killing_seed_before_any_later_failure() -> None:
    pool = _Pool(slots=2, killers=frozenset({40}), failing=frozenset({41, 900}))
    collector = _Collector(first=True)
    _workers.drive(pool, 9, ((a, a + 16) for a in range(0, 2**20, 16)), collector)  # type: ignore[arg-type]
    assert min(f.iteration for f in collector.failures) == 40
    assert len(collector.taken) < 12  # those in flight when it was found, no more


# ---- local worker processes: a killing seed, a dying worker, the parent's death ---


def test_a_local_worker_that_dies_loses_no_iteration(target: Path) -> None:
    (target.parent / "armed").touch()
    err = io.StringIO()
    result = _sweep.run_sweep(
        options(f"{target.name}::test_kills_its_process_once", 40), out=io.StringIO(), err=err
    )
    assert (target.parent / "killed").exists()  # a worker died running iteration 5
    assert result.ran == 40 and not result.failures
    assert (
        "a worker process died (exit status 1) running iterations [0, 16); running them "
        "again in halves to find the seed" in err.getvalue()
    )


def test_seeds_that_kill_their_worker_are_failures_named_with_their_replay_lines(
    target: Path,
) -> None:
    test_id = f"{target.name}::test_kills_its_worker_on_two_seeds"
    out = io.StringIO()
    result = _sweep.run_sweep(options(test_id, 60), out=out, err=io.StringIO())
    assert result.ran == 60  # everything else ran
    by_iteration = {f.iteration: f for f in result.failures}
    assert set(by_iteration) == {5, 30} | _divisible_by_7(11, 60)
    assert by_iteration[5].signature == "worker process died (exit status 1)"
    # Under `make asan`, ASan's handler reports the segfault and exits 1.
    asan = bool(os.environ.get("ASKEW_ASAN"))
    segv = "exit status 1" if asan else "killed by SIGSEGV"
    assert by_iteration[30].signature == f"worker process died ({segv})"
    printed = out.getvalue()
    for i in (5, 30):
        seed = iteration_seed(11, i)
        assert (
            f"FAIL seed={seed} iteration={i}: the worker process died running this seed" in printed
        )
        assert f"replay: ASKEW_SEED={seed} ASKEW_ITERATIONS=1 pytest '{test_id}'" in printed
    summary = _sweep.summary(result)
    assert f"worker process died ({segv}): {2 if asan else 1} seed(s)" in summary


def test_first_stops_at_a_seed_that_kills_its_worker(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", f"{target.name}::test_kills_its_worker_on_two_seeds", "--seeds", "60"]
    assert _sweep.main([*argv, "--first", "--workers", "1"]) == 1
    first = min({5} | _divisible_by_7(11, 60))
    assert f"FAIL seed={iteration_seed(11, first)} iteration={first}:" in capsys.readouterr().out


def test_workers_that_die_before_finding_the_test_end_the_sweep_saying_so(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (target.parent / "die_in_workers").write_text(str(os.getpid()))
    argv = ["sweep", f"{target.name}::test_passes", "--seeds", "40", "--workers", "1"]
    assert _sweep.main(argv) == 1
    err = capsys.readouterr().err
    assert "worker processes died 4 times in a row before finding the test" in err
    assert "(the last: exit status 7)" in err


def _session(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry))
    return found


# A hang guard, not a speed claim: the workers exit as their parent's end of
# a pipe closes, and the forkserver and the resource tracker follow them.
_OUTLIVE_GUARD = hang_guard(60)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_process_of_a_sweep_outlives_its_parent(target: Path, sig: signal.Signals) -> None:
    test_id = f"{target.name}::test_leader_election"
    proc = subprocess.Popen(
        [sys.executable, "-m", "askew", "sweep", test_id, "--seeds", str(10**7), "--workers", "2"],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its session holds every process of the sweep
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("FAIL seed="):  # a chunk has come back: the sweep is under way
            break
    running = _session(proc.pid)
    assert len(running) >= 5  # the parent, the forkserver, the resource tracker, 2 workers
    proc.send_signal(sig)
    out, _err = proc.communicate(timeout=hang_guard(120))
    if sig == signal.SIGTERM:  # stopped as after Ctrl-C: the summary, then 128 + 15
        assert proc.returncode == 143
        assert "(terminated)" in out
    else:
        assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + _OUTLIVE_GUARD
    while _session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _session(proc.pid) == []


def _under_4_gib() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.skipif(bool(os.environ.get("ASKEW_ASAN")), reason="ASan reserves more address space")
def test_the_documented_maximum_of_seeds_starts_at_once(target: Path) -> None:
    """--seeds 2**64 lists no chunk ahead (3.9 million futures for 1e9
    seeds, and this one never started): with --first it stops at the
    first failure, in a process held to 4 GiB."""
    test_id = f"{target.name}::test_leader_election"
    proc = subprocess.run(
        [sys.executable, "-m", "askew", "sweep", test_id, "--seeds", str(2**64), "--first"],
        cwd=target.parent,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
        check=False,
        preexec_fn=_under_4_gib,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"of iterations [0, {2**64}) run from base seed 1337 (stopped at" in proc.stdout


# ---- --cluster: Dask distributed ------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[str]:
    """A local Dask cluster of two one-thread worker processes: its address.
    It binds the loopback address only, on ports the system picks (its
    dashboard's 8787 by default, which parallel runs would fight over)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        yield cluster.scheduler_address


def test_a_dask_cluster_fails_exactly_the_iterations_local_processes_fail(
    target: Path, dask_cluster: str
) -> None:
    test_id = f"{target.name}::test_leader_election"
    on_cluster = _sweep.run_sweep(options(test_id, 60, cluster=dask_cluster), out=io.StringIO())
    local = _sweep.run_sweep(options(test_id, 60), out=io.StringIO())
    assert on_cluster.ran == 60
    assert on_cluster.failures and sorted(on_cluster.failures, key=lambda f: f.iteration) == sorted(
        local.failures, key=lambda f: f.iteration
    )


def test_a_worker_that_dies_on_the_cluster_loses_no_iteration(
    target: Path, dask_cluster: str
) -> None:
    (target.parent / "armed").touch()
    result = _sweep.run_sweep(
        options(f"{target.name}::test_kills_its_process_once", 40, cluster=dask_cluster),
        out=io.StringIO(),
    )
    assert (target.parent / "killed").exists()  # a worker died running iteration 5
    assert result.ran == 40 and not result.failures


def test_an_unreachable_cluster_is_a_usage_error_naming_it(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    argv = ["sweep", f"{target.name}::test_passes", "--seeds", "5"]
    assert _sweep.main([*argv, "--cluster", "tcp://127.0.0.1:9"]) == 2
    assert "'tcp://127.0.0.1:9'" in capsys.readouterr().err


_LOGGER = """
import os, time
import askew

REAL_MONOTONIC, REAL_SLEEP = time.monotonic, time.sleep  # taken before any run
GUARD = {guard}

def _taken():
    try:
        return sum(map(int, open("taken").read().split()))
    except OSError:
        return 0

# The dying iteration blocks its step on purpose, for as long as the
# parent takes (minutes on a busy machine): the step watchdog is the
# test's own guard, GUARD.
@askew.simulate(seed=13, step_timeout=GUARD)
async def test_logs_its_runs(world):
    with open("runs", "a") as f:
        f.write(f"{world.seed}\\n")
    # Iteration 600 waits (outside the run's clock: a real sleep of the
    # host's, before the run's patches) until the parent has taken every
    # chunk before its own, then ends its process, once.
    if world.seed == askew._core.seed_iteration(13, 600) and not os.path.exists("killed"):
        open("killed", "w").close()
        deadline = REAL_MONOTONIC() + GUARD
        while REAL_MONOTONIC() < deadline and _taken() < 560:
            REAL_SLEEP(0.05)
        os._exit(1)
"""


def test_after_a_dask_worker_dies_only_the_chunk_it_ran_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dask_cluster: str
) -> None:
    """Finished chunks are released as they come back: a dead worker's
    results are not recomputed (20-27 % of the seeds ran twice when every
    finished chunk's future was kept to the end)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "test_logger.py").write_text(_LOGGER.replace("{guard}", str(hang_guard(300))))
    take = _sweep._Collector.take

    def taking(self: _sweep._Collector, chunk: _workers.ChunkResult) -> bool:
        with open(tmp_path / "taken", "a") as f:  # what the dying worker waits for
            f.write(f"{chunk.stop - chunk.start}\n")
        return take(self, chunk)

    monkeypatch.setattr(_sweep._Collector, "take", taking)
    result = _sweep.run_sweep(
        options("test_logger.py::test_logs_its_runs", 640, cluster=dask_cluster),
        out=io.StringIO(),
    )
    sys.modules.pop("test_logger", None)
    assert (tmp_path / "killed").exists() and result.ran == 640 and not result.failures
    iteration = {iteration_seed(13, i): i for i in range(640)}
    runs = collections.Counter(iteration[int(s)] for s in (tmp_path / "runs").read_text().split())
    assert set(runs) == set(range(640))
    # Chunks of 80 (640 / (2 threads x 4)): only the dead worker's, [560, 640), ran twice.
    assert {i for i, n in runs.items() if n > 1} <= set(range(560, 640))
    assert max(runs.values()) == 2


_LISTENING = """
import json, os, sys
from askew._run import sweep

def listening(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        link = os.readlink(f"/proc/{pid}/fd/{fd}") if os.path.exists(f"/proc/{pid}/fd/{fd}") else ""
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for row in open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                found.append(cols[1])
    return found

seen = []
take = sweep._Collector.take
def spy(self, chunk):
    seen.append(listening(os.getpid()))
    return take(self, chunk)
sweep._Collector.take = spy
status = sweep.main(["sweep", sys.argv[1], "--seeds", "40", "--cluster", sys.argv[2]])
print(json.dumps([status, seen]))
"""


def test_a_cluster_sweep_listens_on_no_address(target: Path, dask_cluster: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _LISTENING, f"{target.name}::test_passes", dask_cluster],
        cwd=target.parent,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
        check=False,
    )
    status, seen = json.loads(proc.stdout.splitlines()[-1])
    assert status == 0 and seen, proc.stderr
    assert all(addresses == [] for addresses in seen)
