# SPDX-License-Identifier: Apache-2.0
"""`askew sweep`: one simulated test's iterations in many worker processes.

It resolves a pytest node id by importing the test's file (as pytest's
default "prepend" import mode would, without collecting anything), cuts the
iterations [0, N) — or one blocked shard of them — into chunks, and runs
each chunk in a local worker process (or a Dask distributed task, with
--cluster) through askew._run.runner.run_iterations, the runner's own code path,
so every iteration runs the seed and the code a pytest run of the test
would. Failures stream back as chunks finish and are grouped by signature
(exception type and the user's line). Where chunks run, and what happens
when a worker dies, is askew/_run/workers.py. It never runs an iteration
in the parent process and never reads the host clock inside one;
askew/__main__.py calls main().
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .._loop.config import SEED_LIMIT
from .._loop.settings import check_env, env_seed
from .._report.report import replay_command
from . import stepping as _stepping
from .runner import Replay
from .workers import (
    ChunkResult,
    DaskPool,
    Failure,
    LocalPool,
    SweepError,
    UsageError,
    drive,
    resolve,
)

if TYPE_CHECKING:
    from .._explore.buggify import Summary

USAGE_EXIT = 2
_CHUNK_MIN, _CHUNK_MAX = 16, 256  # iterations per task: see chunks()
_CONNECT_TIMEOUT = "5s"  # for a --cluster scheduler to answer


# ---- the command line -------------------------------------------------------


def _int_arg(low: int, high: int | None, rule: str) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high], else an error naming it."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    return parse


def _shard_arg(text: str) -> tuple[int, int]:
    k_text, slash, n_text = text.partition("/")
    try:
        k, n = int(k_text, 10), int(n_text, 10)
    except ValueError:
        k = n = -1
    if not slash or k < 0:
        raise argparse.ArgumentTypeError(f"must be K/N (e.g. 1/4), got {text!r}")
    if n < 1 or not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"K/N needs N >= 1 and 1 <= K <= N, got {text!r}")
    return k, n


# The options taking a value: how each is parsed, its metavar, its help.
_VALUES: dict[str, dict[str, Any]] = {
    "--seeds": {
        "type": _int_arg(1, SEED_LIMIT, "1 <= N <= 2**64 (the iterations [0, N) are 64-bit)"),
        "metavar": "N",
        "help": "run the iterations [0, N) (N <= 2**64)",
    },
    "--base": {
        "type": _int_arg(0, SEED_LIMIT - 1, "0 <= S < 2**64"),
        "metavar": "S",
        "help": "base seed (default: ASKEW_SEED, else the test's own seed, else a fresh "
        "one; printed)",
    },
    "--workers": {
        "type": _int_arg(1, None, ">= 1"),
        "metavar": "K",
        "help": "worker processes (default: the number of CPUs)",
    },
    "--cluster": {
        "metavar": "ADDRESS",
        "help": "run on the Dask distributed scheduler at ADDRESS (tcp://host:8786) instead "
        "of local processes; needs askew-dst[cluster] and the test at the same path there",
    },
    "--shard": {
        "type": _shard_arg,
        "metavar": "K/N",
        "help": "run only the K-th of N contiguous blocks of the iterations (1 <= K <= N)",
    },
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="askew",
        description="askew: deterministic simulation testing for asyncio",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sweep = commands.add_parser(
        "sweep",
        help="run many iterations of one @askew.simulate test in worker processes",
        description="Run iterations [0, N) of one @askew.simulate test (iteration i runs "
        "seed_iteration(base, i), as under pytest) in worker processes, print each "
        "failure as it is found, and end with the failures grouped by signature. "
        "Exit status: 0 if no iteration failed, 1 if one did, 2 for a usage error, "
        "130 after Ctrl-C.",
    )
    sweep.add_argument(
        "test_id", metavar="TEST_ID", help="a pytest node id: path/to/test_x.py::test_name"
    )
    sweep.add_argument("--seeds", required=True, **_VALUES["--seeds"])
    for flag in ("--base", "--workers", "--shard", "--cluster"):
        sweep.add_argument(flag, default=None, **_VALUES[flag])
    sweep.add_argument(
        "--first",
        action="store_true",
        help="stop at the first failing iteration (the one a single process stops at)",
    )
    replay = commands.add_parser(
        "replay",
        help="replay one seed of a test, stopping at an instant or printing node state",
        description="Replay the run SEED names. With --at, stop after that step (step=N) "
        "or the first step at or past that virtual time (t=SECONDS) and open the debugger "
        "(breakpoint(): pdb unless PYTHONBREAKPOINT says otherwise) with world, nodes, log, "
        "node and its locals `here` in scope; with --print ATTR, print every change of that "
        "attribute of the nodes over the run (or, with --at, each node's value then). "
        "Exit status: 0 if the run passed, 1 if it failed, 2 for a usage error.",
    )
    replay.add_argument(
        "test_id", metavar="TEST_ID", help="a pytest node id: path/to/test_x.py::test_name"
    )
    replay.add_argument("--seed", required=True, **_VALUES["--base"] | {"help": "the seed"})
    replay.add_argument("--at", metavar="WHEN", help="t=SECONDS or step=N")
    replay.add_argument("--print", metavar="ATTR", dest="attr", help="a node attribute")
    replay.add_argument("--node", type=_int_arg(0, None, ">= 0"), help="only this node")
    return parser


@dataclass(frozen=True)
class Options:
    test_id: str
    seeds: int
    base: int | None
    workers: int
    shard: tuple[int, int] | None
    first: bool
    cluster: str | None = None


def _cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def parse_args(argv: Sequence[str]) -> Options:
    """The options of `askew sweep ...`; argparse exits 2 on a bad one."""
    ns = _parser().parse_args(list(argv))
    workers = ns.workers or _cpus()
    return Options(ns.test_id, ns.seeds, ns.base, workers, ns.shard, ns.first, ns.cluster)


# ---- the iterations ---------------------------------------------------------


def shard_range(seeds: int, shard: tuple[int, int] | None) -> tuple[int, int]:
    """The iterations shard K/N runs: the K-th of N contiguous blocks of
    [0, seeds), sizes differing by at most one."""
    if shard is None:
        return 0, seeds
    k, n = shard
    return (k - 1) * seeds // n, k * seeds // n


def chunks(start: int, stop: int, workers: int) -> Iterator[tuple[int, int]]:
    """[start, stop) in chunks for the workers: about four per worker so
    they finish together, at least _CHUNK_MIN iterations (a chunk's set-up,
    a task's round trip and a loop, is worth a few runs; see _run_chunk for
    the collection it no longer makes) and at most _CHUNK_MAX
    (failures stream back as chunks finish, and --first waits for the
    chunks running)."""
    size = max(_CHUNK_MIN, min(_CHUNK_MAX, (stop - start) // (workers * 4)))
    for a in range(start, stop, size):
        yield a, min(a + size, stop)


# ---- the parent -------------------------------------------------------------


@dataclass
class SweepResult:
    """A whole sweep as the parent saw it."""

    test_id: str
    base: int
    start: int
    stop: int
    ran: int = 0
    failures: list[Failure] = field(default_factory=list)
    coverage: Summary | None = None  # the chunks' merged
    stopped: bool = False  # --first stopped it early
    cpu: float = 0.0  # CPU seconds the workers spent running iterations
    interrupted: bool = False  # Ctrl-C (or SIGTERM) stopped it
    terminated: bool = False  # SIGTERM stopped it
    # shrink3: interleaving coverage (ASKEW_COVERAGE=1): the union of the
    # chunks' maps, and (runs, edges) as chunks came back.
    edges: int = 0
    edge_growth: list[tuple[int, int]] = field(default_factory=list)

    def groups(self) -> dict[str, list[Failure]]:
        """The failures by signature, each group's smallest seed first."""
        out: dict[str, list[Failure]] = {}
        for f in sorted(self.failures, key=lambda f: f.seed):
            out.setdefault(f.signature, []).append(f)
        return out


def _merge(total: Summary | None, part: Summary) -> Summary:
    from .._explore.buggify import MarkStats, PointStats

    if total is None:
        return part
    total.runs += part.runs
    for name, p in part.points.items():
        t = total.points.setdefault(name, PointStats())
        for attr in ("runs_reached", "runs_active", "runs_fired", "fired"):
            setattr(t, attr, getattr(t, attr) + getattr(p, attr))
    for name, m in part.marks.items():
        u = total.marks.setdefault(name, MarkStats())
        u.runs_reached += m.runs_reached
        u.runs_true += m.runs_true
    total.unreached_points = sorted(set(total.unreached_points) - set(total.points))
    total.unreached_marks = sorted(set(total.unreached_marks) - set(total.marks))
    return total


def _default_base(test: Callable[..., Any]) -> int:
    """Without --base: ASKEW_SEED (as `askew-exec --seed` sets it), else the
    decorator's seed, else a fresh one, as a pytest run picks its base."""
    seed = env_seed()
    if seed is None:
        seed = test._askew_spec.seed  # type: ignore[attr-defined]
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    return int(seed)


class _Progress:
    """A live line on a terminal's stderr: iterations done, rate, failures."""

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total = total
        self.stream = stream
        self.live = stream.isatty()
        self.began = time.monotonic()
        self.shown = False

    def update(self, done: int, failures: int) -> None:
        if not self.live:
            return
        elapsed = max(time.monotonic() - self.began, 1e-9)
        self.stream.write("\r" + progress_text(done, self.total, failures, elapsed) + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def progress_text(done: int, total: int, failures: int, elapsed: float) -> str:
    """The progress line: seeds done of total, seeds/s, failures, elapsed, remaining."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = f"{(total - done) / rate:.0f}s left" if rate > 0 else "? left"
    fails = f"{failures} failure{'s' if failures != 1 else ''}"
    return (
        f"askew: {done:,}/{total:,} seeds, {rate:,.0f} seeds/s, {fails}, "
        f"{elapsed:.0f}s elapsed, {left}"
    )


def run_sweep(
    options: Options, out: IO[str] | None = None, err: IO[str] | None = None
) -> SweepResult:
    """Run the sweep `options` describe, printing to `out` (stdout) as
    failures arrive, notes and the progress line to `err` (stderr)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        check_env()  # a bad ASKEW_* value: one usage error, before any worker starts
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    test = resolve(options.test_id)  # a usage error here, before any worker starts
    base = options.base if options.base is not None else _default_base(test)
    start, stop = shard_range(options.seeds, options.shard)
    result = SweepResult(options.test_id, base, start, stop)
    shard = f" (shard {options.shard[0]}/{options.shard[1]})" if options.shard else ""
    where = (
        f"on the Dask cluster {options.cluster}"
        if options.cluster is not None
        else f"in {options.workers} worker process(es)"
    )
    print(
        f"askew sweep {options.test_id}: iterations [{start}, {stop}){shard} of base seed "
        f"{base} {where}",
        file=out,
        flush=True,
    )
    if start == stop:
        return result
    collector = _Collector(result, options, out, err)
    try:
        if options.cluster is not None:
            _on_cluster(options, result, collector)
        else:
            pool = LocalPool(options.workers, options.test_id)
            try:
                drive(pool, base, chunks(start, stop, options.workers), collector)
            finally:
                pool.close()
    except KeyboardInterrupt as exc:
        result.interrupted = True  # the summary says what ran
        result.terminated = isinstance(exc, Terminated)
    finally:
        collector.close()
    return result


def _on_cluster(options: Options, result: SweepResult, collector: _Collector) -> None:
    """The chunks as tasks of the Dask cluster at options.cluster (see DaskPool)."""
    try:
        # Typed as Any: distributed is optional and ships no complete hints.
        distributed: Any = importlib.import_module("distributed")
    except ImportError:
        raise UsageError(
            "--cluster needs Dask distributed: pip install 'askew-dst[cluster]'"
        ) from None
    try:
        # A client connects and listens on nothing: the sweep binds no address.
        client = distributed.Client(options.cluster, timeout=_CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(
            f"--cluster {options.cluster!r}: no Dask scheduler reachable there ({exc})"
        ) from None
    with client:
        pool = DaskPool(client, distributed, options.test_id)
        pieces = chunks(result.start, result.stop, pool.threads)
        drive(pool, result.base, pieces, collector)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout, `kill PID`): the sweep stops as after Ctrl-C,
    prints what ran, and exits 143."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


_SHOWN_PER_SIGNATURE = 10  # failures printed as they arrive; the rest are counted


class _Collector:
    """What the parent does with each finished chunk, whoever ran it: count
    it, merge its coverage, print its failures (every signature's first
    _SHOWN_PER_SIGNATURE), and say whether the sweep should stop (--first)."""

    def __init__(self, result: SweepResult, options: Options, out: IO[str], err: IO[str]):
        self.result = result
        self.options = options
        self.out = out
        self.err = err
        self.progress = _Progress(result.stop - result.start, err)
        self.shown: dict[str, int] = {}

    def take(self, chunk: ChunkResult) -> bool:
        result = self.result
        result.ran += chunk.stop - chunk.start
        result.cpu += chunk.cpu
        if chunk.coverage is not None:
            result.coverage = _merge(result.coverage, chunk.coverage)
        if chunk.edges:  # shrink3
            result.edges |= chunk.edges
            result.edge_growth.append((result.ran, result.edges.bit_count()))
        if self.options.first:
            # Printed by finish(): only the first failing iteration counts.
            result.failures += chunk.failures[:1]
            result.stopped = bool(result.failures)
            self.progress.update(result.ran, len(result.failures))
            return result.stopped
        for failure in chunk.failures:
            self.progress.clear()
            self._print(failure)
            result.failures.append(failure)
        self.progress.update(result.ran, len(result.failures))
        return False

    def finish(self) -> None:
        """The end of the chunks: under --first, the first failure of all."""
        result = self.result
        if self.options.first and result.failures:
            result.failures = [min(result.failures, key=lambda f: f.iteration)]
            self.progress.clear()
            self._print(result.failures[0])

    def _print(self, failure: Failure) -> None:
        n = self.shown.get(failure.signature, 0)
        self.shown[failure.signature] = n + 1
        if n > _SHOWN_PER_SIGNATURE:
            return
        if n == _SHOWN_PER_SIGNATURE:
            print(
                f"  (further failures of {failure.signature} are counted, not shown)",
                file=self.out,
                flush=True,
            )
            return
        lines = [f"FAIL seed={failure.seed} iteration={failure.iteration}: {failure.headline}"]
        if n == 0:
            lines.append(f"  new signature: {failure.signature}")
        lines.append(_alone_line(failure))
        lines.append(f"  replay: {replay_command(failure.seed, self.options.test_id)}")
        print("\n".join(lines), file=self.out, flush=True)

    def note(self, text: str) -> None:
        self.progress.clear()
        print(f"askew sweep: {text}", file=self.err, flush=True)

    def close(self) -> None:
        self.progress.clear()


def _alone_line(failure: Failure) -> str:
    """Whether the seed was checked to replay alone: a sweep prints no seed
    as reproducible that it did not check."""
    if failure.signature.startswith("worker process died"):
        return "  replays alone: not checked (it killed its worker)"
    if failure.replays_alone is None:
        return "  replays alone: not checked (ASKEW_CHECK_REPLAY=0)"
    if failure.replays_alone:
        return "  replays alone: yes"
    return "  replays alone: NO: alone it runs otherwise (state left by an earlier iteration?)"


def summary(result: SweepResult) -> str:
    """The end of a sweep: seeds run, failures by signature, coverage."""
    lines = [
        f"askew sweep summary: {result.ran:,} of iterations [{result.start}, {result.stop}) "
        f"run from base seed {result.base}"
        + (" (stopped at the first failure)" if result.stopped else "")
        + (" (terminated)" if result.terminated else " (interrupted)" if result.interrupted else "")
    ]
    groups = result.groups()
    if not groups:
        lines.append("  no failures")
    else:
        lines.append(
            f"  {len(result.failures)} failing seed(s), {len(groups)} distinct signature(s):"
        )
    for sig, members in groups.items():
        first = members[0]
        lines.append(
            f"  {sig}: {len(members)} seed(s), smallest seed {first.seed} "
            f"(iteration {first.iteration}): {first.headline}"
        )
        lines.append(f"  {_alone_line(first)}")
        lines.append(f"    replay: {replay_command(first.seed, result.test_id)}")
    coverage = result.coverage
    if coverage is not None and (coverage.points or coverage.marks):
        lines.extend(str(coverage).splitlines())
    if result.edges:  # shrink3: askew/_explore/coverage.py
        growth = ", ".join(f"{runs:,}: {edges}" for runs, edges in result.edge_growth)
        lines.append(
            f"  interleaving coverage: {result.edges.bit_count()} edges "
            f"(runs: edges, as chunks came back: {growth})"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        if args[:1] == ["replay"]:
            return _stepping.command(_parser().parse_args(args), resolve, Replay)
        options = parse_args(args)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    # SIGTERM (a CI timeout, `kill PID`) stops the sweep as Ctrl-C does: the
    # summary is printed and the workers end with it.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_sweep(options)
    except UsageError as exc:
        sys.stderr.write(f"askew sweep: error: {exc}\n")
        return USAGE_EXIT
    except SweepError as exc:
        sys.stderr.write(f"askew sweep: {exc}\n")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(summary(result), flush=True)
    if result.interrupted:  # the shell's status for the signal
        return 128 + (signal.SIGTERM if result.terminated else signal.SIGINT)
    return 1 if result.failures else 0
