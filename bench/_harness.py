"""Shared timing, side discovery and reporting for the benchmarks in bench/.

Every number here is wall time read from outside the simulation: inside an
askew run `time.perf_counter` is virtual, so the clock is captured at import
(before any run can patch `time`) and only ever read around a whole run. A
bench hands `compare()` a set of *sides* (stock asyncio, uvloop, askew, peers),
each a factory that prepares the workload and returns a zero-argument callable
running it once and returning how many operations it did. The sides are run
round-robin, `repeats` times, so drift on the machine hits them all alike, and
the table shows the median and best cost per operation plus each side's ratio
to the reference side. Nothing is asserted: goals are printed as met / not met.

A side is "unavailable" only when a peer is genuinely absent: simloom or
simloop on a Python they do not support, or a peer (uvloop included) that
does not import. Anything else, and every failure of askew's own sides,
raises: the bench exits non-zero with the traceback instead of printing a
broken askew as "n/a".
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Run from a checkout (python bench/bench_x.py), the script's directory is on
# sys.path but the repository root is not; use the in-tree askew (built with
# `make`) unless an installed one is importable.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if importlib.util.find_spec("askew") is None and _REPO not in sys.path:
    sys.path.append(_REPO)

# Captured at import: a simulation may swap time.perf_counter_ns for a virtual
# clock while it runs, and this reference keeps pointing at the real one.
_perf_ns = time.perf_counter_ns

PEERS_MIN_PYTHON = (3, 12)
VENV313_HINT = ".venv313/bin/python"


class Unavailable(Exception):
    """A peer side cannot run here: it does not import on this Python. Only
    import_peer and uvloop_loop raise it; askew's own sides never do."""


Runner = Callable[[], float]
Factory = Callable[[], Runner]


@dataclass
class Side:
    name: str
    factory: Factory
    note: str = ""


@dataclass
class Result:
    name: str
    per_op_ns: list[float] = field(default_factory=list)
    unavailable: str | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.per_op_ns)

    @property
    def best(self) -> float:
        return min(self.per_op_ns)


def now_ns() -> int:
    """The real monotonic clock, whatever a simulation has done to `time`."""
    return _perf_ns()


def reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, Unavailable):
        return text
    return f"{type(exc).__name__}: {text}"


class BenchFailed(RuntimeError):
    """A bench child process failed (run_child)."""


def time_once(run: Runner, *, quiet_gc: bool = True) -> tuple[int, float]:
    """Run once; return (elapsed ns, ops).

    With `quiet_gc` (micro-benchmarks) the collector is flushed and paused
    around the run, as timeit does. Whole-run benches pass False so each side
    pays for its garbage the way it would in a user's test process.
    """
    gc.collect()
    enabled = gc.isenabled()
    if quiet_gc:
        gc.disable()
    try:
        start = _perf_ns()
        ops = run()
        elapsed = _perf_ns() - start
    finally:
        if enabled:
            gc.enable()
    return elapsed, ops


def compare(
    sides: Sequence[Side], *, repeats: int, warmup: int = 1, quiet_gc: bool = True
) -> list[Result]:
    """Run every available side `repeats` times, interleaved; ns per op each time.

    A side whose factory raises Unavailable (an absent peer) is listed as
    such; any other exception, at setup or mid-run, propagates."""
    results: list[Result] = []
    runners: list[tuple[Result, Runner]] = []
    for side in sides:
        result = Result(side.name, note=side.note)
        results.append(result)
        try:
            run = side.factory()
        except Unavailable as exc:
            result.unavailable = reason(exc)
            continue
        # A factory that sizes its workload at setup can say so here.
        result.note = getattr(run, "note", result.note)
        for _ in range(warmup):
            run()
        runners.append((result, run))
    for _ in range(repeats):
        for result, run in runners:
            elapsed, ops = time_once(run, quiet_gc=quiet_gc)
            result.per_op_ns.append(elapsed / ops if ops > 0 else float(elapsed))
    for result in results:
        if result.unavailable is None and not result.per_op_ns:
            result.unavailable = "no samples (--repeats 0)"
    return results


def fmt_ns(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:,.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:,.2f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:,.2f} ms"
    return f"{ns / 1_000_000_000:,.2f} s"


def by_name(results: Iterable[Result]) -> dict[str, Result]:
    return {r.name: r for r in results}


def median_of(results: Iterable[Result], name: str) -> float | None:
    """The median ns/op of side `name`, or None if it did not run."""
    r = by_name(results).get(name)
    return r.median if r is not None and r.per_op_ns else None


def ratio(results: Sequence[Result], slower: str, faster: str) -> float | None:
    """How many times cheaper `faster` is than `slower` (medians); None if missing."""
    named = by_name(results)
    a, b = named.get(slower), named.get(faster)
    if a is None or b is None or not a.per_op_ns or not b.per_op_ns:
        return None
    return a.median / b.median


def print_table(
    title: str,
    results: Sequence[Result],
    *,
    unit: str,
    reference: str | None = None,
    rate: str | None = None,
) -> None:
    """Print median/best per op, and `reference`'s median / each side's median.

    A ratio above 1 means the side is that many times cheaper than the
    reference. `rate` adds a column of operations per second under that name.
    """
    print(f"\n== {title}")
    named = by_name(results)
    ref = named.get(reference) if reference else None
    ref_ok = ref is not None and bool(ref.per_op_ns)
    head = f"  {'side':<26}{'median/' + unit:>16}{'best/' + unit:>16}"
    if rate:
        head += f"{rate:>14}"
    if ref_ok:
        head += f"{'vs ' + str(reference):>22}"
    print(head)
    for r in results:
        if r.unavailable is not None:
            print(f"  {r.name:<26}unavailable: {r.unavailable}")
            continue
        line = f"  {r.name:<26}{fmt_ns(r.median):>16}{fmt_ns(r.best):>16}"
        if rate:
            line += f"{1e9 / r.median:>14,.0f}"
        if ref_ok and ref is not None:
            line += f"{ref.median / r.median:>21.2f}x"
        if r.note:
            line += f"  ({r.note})"
        print(line)


@dataclass
class Goal:
    text: str
    met: bool | None  # None: not measurable in this run
    detail: str = ""


def goal(text: str, value: float | None, target: float, *, at_most: bool = True) -> Goal:
    """A reported (never asserted) target: value <= target, or >= with at_most=False."""
    if value is None:
        return Goal(text, None, "not measured")
    met = value <= target if at_most else value >= target
    return Goal(text, met, f"{value:,.2f}")


def print_goals(goals: Sequence[Goal]) -> None:
    if not goals:
        return
    print("  goals (reported, not asserted):")
    for g in goals:
        state = {True: "met", False: "NOT met", None: "n/a"}[g.met]
        print(f"    [{state:^7}] {g.text}: {g.detail}")


def env_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def print_header(name: str, args: argparse.Namespace) -> None:
    info = env_info()
    mode = "quick" if getattr(args, "quick", False) else "default"
    print(f"# {name}: Python {info['python']} ({info['executable']}), {mode} mode")


def peers_note() -> str | None:
    """Why simloom/simloop cannot run on this interpreter, or None."""
    if sys.version_info < PEERS_MIN_PYTHON:
        return (
            f"simloom and simloop need Python 3.12+; this is "
            f"{platform.python_version()}. Run with {VENV313_HINT} to include them."
        )
    return None


def write_json(
    path: str | None,
    bench: str,
    tables: dict[str, Sequence[Result]],
    goals: Sequence[Goal] = (),
    extra: dict[str, Any] | None = None,
) -> None:
    if not path:
        return
    doc: dict[str, Any] = {"bench": bench, "env": env_info(), "tables": {}, "goals": []}
    for title, results in tables.items():
        doc["tables"][title] = {
            r.name: (
                {"unavailable": r.unavailable}
                if r.unavailable is not None
                else {
                    "median_ns_per_op": r.median,
                    "best_ns_per_op": r.best,
                    "samples_ns_per_op": r.per_op_ns,
                    **r.extra,
                }
            )
            for r in results
        }
    doc["goals"] = [{"goal": g.text, "met": g.met, "value": g.detail} for g in goals]
    if extra:
        doc.update(extra)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)


def parser(description: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(description or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small N, for a smoke run")
    p.add_argument("--repeats", type=int, default=None, help="timed repeats per side")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return p


def rss_kib() -> int:
    """Resident set size now, in KiB (Linux /proc; falls back to the peak)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            resident_pages = int(fh.read().split()[1])
        return resident_pages * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return peak_rss_kib()


def peak_rss_kib() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


# --- sides shared by several benches -------------------------------------


def askew_loop(seed: int = 0) -> Any:
    import askew  # askew's own sides: an import error is a failure, never "n/a"

    return askew.new_event_loop(seed=seed)


def askew_simulate() -> Any:
    import askew

    return askew.simulate


def uvloop_loop() -> Any:
    return import_peer("uvloop", min_python=None).new_event_loop()


def import_peer(name: str, min_python: tuple[int, int] | None = PEERS_MIN_PYTHON) -> Any:
    """The peer module `name`, or Unavailable if it cannot import on this
    Python. Only a missing module counts: a peer that is installed but
    fails to import raises."""
    if min_python is not None and sys.version_info < min_python:
        raise Unavailable(f"{name} needs Python 3.12+ (run with {VENV313_HINT})")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the peer is there, something it needs is not
            raise
        raise Unavailable(f"{name} is not installed for this Python ({reason(exc)})") from exc


def scaled(quick: bool, default: int, small: int) -> int:
    return small if quick else default


def calibrate(build: Callable[[int], Callable[[], object]], cap: int, seconds: float) -> int:
    """How many iterations of `build(n)()` fit in about `seconds`, at most `cap`.

    Keeps a slow side (say, a debug build) from stretching a bench past its
    time budget: a 20-iteration probe is timed and the count scaled from it.
    """
    probe = 20
    start = _perf_ns()
    build(probe)()
    per = max((_perf_ns() - start) / probe, 1.0)
    return int(min(cap, max(probe, seconds * 1e9 / per)))


def run_child(argv: list[str], timeout: float) -> dict[str, Any]:
    """Run `python <argv>` and parse the JSON object on its last stdout line;
    BenchFailed if the child times out, fails or prints no result."""
    import subprocess

    try:
        out = subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchFailed(f"{' '.join(argv)}: timed out after {timeout:.0f} s") from exc
    if out.returncode != 0:
        raise BenchFailed(
            f"{' '.join(argv)}: exited {out.returncode}\n{(out.stderr or out.stdout).strip()}"
        )
    try:
        doc: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise BenchFailed(f"{' '.join(argv)}: printed no result") from exc
    return doc
