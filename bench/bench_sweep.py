"""`askew sweep` on local worker processes: seeds/s with 1 and with 2 workers.

The workload is the README quickstart's leader election with nine nodes
instead of five (CPU-bound: every message is a simulated delivery), its final
check recorded rather than asserted so every seed runs to the end. The test
module is written to a temporary directory and swept by
askew._run.sweep.run_sweep exactly as `askew sweep TEST_ID --seeds N --workers K`
runs it: worker start-up (a forkserver, then one interpreter per worker
importing askew and the test) is inside the timing. Each side sweeps the same
iterations [0, N) of base seed 1337; N is sized so the one-worker sweep takes
about 10 s (2 s with --quick).

Goal: 2 workers >= 1.8x the seeds/s of 1 worker on the project's 2-core
machine, and a local Dask cluster of two one-thread workers >= 0.9x the 2
local workers. Other work on the machine moves these figures: run it when it
is idle, and read the workers' CPU per seed it prints as well.

A fourth side is the same Dask cluster with two worker settings askew cannot
set on a user's cluster (both are fixed when a worker process starts) turned
off: glibc's MALLOC_TRIM_THRESHOLD_=65536, which Dask's nanny puts in each
worker's environment (distributed.nanny.pre-spawn-environ), and the worker's
statistical profiler (distributed.worker.profile.enabled, a stack sample
every 10 ms).
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _harness import (
    Side,
    Unavailable,
    compare,
    goal,
    parser,
    print_goals,
    print_header,
    print_table,
    ratio,
    write_json,
)

_REPO = Path(__file__).resolve().parent.parent
_QUICKSTART = (_REPO / "examples" / "quickstart.py").read_text()
# Nine nodes split 4/5; the final check recorded, so every seed passes.
_EDITS = {
    "range(5)": "range(9)",
    "world.partition({0, 1}, {2, 3, 4})": "world.partition({0, 1, 2, 3}, {4, 5, 6, 7, 8})",
    "assert len({n.leader for n in nodes}) == 1": "world.agreed = len({n.leader for n in nodes})",
}


def workload() -> str:
    text = _QUICKSTART
    for old, new in _EDITS.items():
        if old not in text:
            raise RuntimeError(f"examples/quickstart.py no longer has {old!r}")
        text = text.replace(old, new)
    return text


def sweep_side(test_id, seeds, workers, cpu, cluster=None):  # type: ignore[no-untyped-def]
    """`askew sweep` on `workers` local processes, or on the Dask cluster whose
    address `cluster()` returns (started on first use, outside the timing)."""
    from askew._run import sweep as _sweep

    def factory():  # type: ignore[no-untyped-def]
        address = cluster() if cluster is not None else None
        options = _sweep.Options(test_id, seeds, 1337, workers, None, False, address)

        def run() -> int:
            result = _sweep.run_sweep(options, out=io.StringIO(), err=io.StringIO())
            if result.ran != seeds or result.failures:
                raise RuntimeError(f"the sweep ran {result.ran} of {seeds} seeds: {result}")
            cpu.append(result.cpu / seeds)
            return seeds

        run.note = f"{seeds:,} seeds/sweep"  # type: ignore[attr-defined]
        return run

    return factory


DASK = "Dask LocalCluster, 2x1"
DASK_TUNED = "Dask, no trim, no profiler"
# The worker settings of the DASK_TUNED side (see the module's docstring).
TUNED = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
}


def dask(stack: contextlib.ExitStack, config: dict[str, object] | None = None) -> str:
    """A local Dask cluster of two one-thread worker processes, its workers
    started under `config`: its address. The side is unavailable when
    distributed is not installed."""
    try:
        import dask as dask_config
        import distributed
    except ImportError as exc:
        raise Unavailable(f"distributed is not installed ({exc})") from None
    with dask_config.config.set(config or {}):
        cluster = stack.enter_context(
            # Loopback only, on ports the system picks: None still serves on 8787.
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
            )
        )
    return str(cluster.scheduler_address)


def main() -> int:
    args = parser(__doc__).parse_args()
    print_header("bench_sweep", args)
    per_seed_guess = 2e-3  # seconds, one worker; only sizes the run
    seconds = 2.0 if args.quick else 10.0
    seeds = int(seconds / per_seed_guess)
    repeats = args.repeats or (1 if args.quick else 3)
    stack = contextlib.ExitStack()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_sweep_bench.py").write_text(workload())
        cwd = os.getcwd()
        os.chdir(tmp)
        sys.path.insert(0, tmp)
        try:
            test_id = "test_sweep_bench.py::test_leader_election"
            cpu: dict[str, list[float]] = {
                "1 worker": [],
                "2 workers": [],
                DASK: [],
                DASK_TUNED: [],
            }
            sides = [
                Side("1 worker", sweep_side(test_id, seeds, 1, cpu["1 worker"])),
                Side("2 workers", sweep_side(test_id, seeds, 2, cpu["2 workers"])),
                Side(DASK, sweep_side(test_id, seeds, 2, cpu[DASK], lambda: dask(stack))),
                Side(
                    DASK_TUNED,
                    sweep_side(test_id, seeds, 2, cpu[DASK_TUNED], lambda: dask(stack, TUNED)),
                ),
            ]
            results = compare(sides, repeats=repeats, warmup=0)
        finally:
            stack.close()
            os.chdir(cwd)
            sys.path.remove(tmp)
    print_table(
        f"askew sweep, {os.cpu_count()} CPUs",
        results,
        unit="seed",
        reference="1 worker",
        rate="seeds/s",
    )
    # The workers' CPU time per seed: what the split costs, whatever else
    # the machine runs (wall time is what the goal is about).
    for name, samples in cpu.items():
        if samples:
            per_seed = statistics.median(samples) * 1e3
            print(f"  CPU in workers, {name}: {per_seed:.2f} ms/seed (median)")
    speedup = ratio(results, "1 worker", "2 workers")
    goals = [
        goal("2 workers vs 1 worker, seeds/s", speedup, 1.8, at_most=False),
        goal(
            f"{DASK} vs 2 workers, seeds/s", ratio(results, "2 workers", DASK), 0.9, at_most=False
        ),
    ]
    goals.append(
        goal(
            f"{DASK_TUNED} vs 2 workers, seeds/s",
            ratio(results, "2 workers", DASK_TUNED),
            0.9,
            at_most=False,
        )
    )
    print_goals(goals)
    write_json(args.json, "bench_sweep", {"sweep": results}, goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
