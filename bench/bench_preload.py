# SPDX-License-Identifier: Apache-2.0
"""The preload's cost outside a simulation, measured side by side in one run.

Two measurements, each alternating the plain and preloaded sides round by
round so machine drift hits both alike:

- clock: ns per clock_gettime(CLOCK_MONOTONIC) call from C (a tiny program
  compiled here) and per time.monotonic_ns() from Python, without and with
  LD_PRELOAD=libaskew-preload.so. Goal: at most 5 ns of overhead per call.
- spawn: ms per subprocess.run(["true"]) from a process holding 1.5 GiB,
  without and with the preload (vfork must stay vfork outside a run).
- launcher: ms for `askew-exec -- python -c pass` against `python -c pass`.
- empty run: us per run of a coroutine that does nothing, on one reused
  SimLoop, without and with the preload: what entering and leaving a
  simulation costs (the preload's enter once read /proc/self/maps for the
  stack bounds on every run).
- suite: wall time of the project's pytest suite, plain and under
  askew-exec. Goal: at most 3% slower.

    python bench/bench_preload.py                 # both
    python bench/bench_preload.py --quick         # fewer rounds, clock only
    python bench/bench_preload.py --suite-args "-x tests/loop/test_preload.py"

Nothing is asserted; the goals are printed as met or NOT met.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIB = REPO / "askew" / "libaskew-preload.so"

CLOCK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    struct timespec a, b, t;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        clock_gettime(CLOCK_MONOTONIC, &t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    printf("%.3f\n", ns / n);
    return 0;
}
"""

PY_CLOCK = (
    "import time\n"
    "n = {n}\n"
    "f = time.monotonic_ns\n"
    "t0 = time.perf_counter_ns()\n"
    "for _ in range(n): f()\n"
    "print((time.perf_counter_ns() - t0) / n)\n"
)


def _env(preload: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(LIB)
    return env


def _ns_per_call(argv: list[str], preload: bool) -> float:
    out = subprocess.run(argv, env=_env(preload), capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def _side_by_side(name: str, argv: list[str], rounds: int) -> tuple[float, float]:
    plain: list[float] = []
    pre: list[float] = []
    for _ in range(rounds):
        plain.append(_ns_per_call(argv, False))
        pre.append(_ns_per_call(argv, True))
    p, q = min(plain), min(pre)
    print(
        f"  {name:<28} plain {p:8.2f} ns   preload {q:8.2f} ns   "
        f"overhead {q - p:+7.2f} ns   ratio {q / p:5.3f}   "
        f"(best of {rounds}; medians {statistics.median(plain):.2f} / "
        f"{statistics.median(pre):.2f})"
    )
    return p, q


def bench_clock(rounds: int, calls: int) -> float:
    cc = shutil.which(os.environ.get("CC", "cc"))
    print("clock_gettime outside a simulation (ns per call)")
    overhead = 0.0
    if cc is not None:
        with tempfile.TemporaryDirectory() as tmp:
            src, exe = Path(tmp) / "clock.c", Path(tmp) / "clock"
            src.write_text(CLOCK_C)
            subprocess.run([cc, "-O2", "-o", str(exe), str(src)], check=True)
            p, q = _side_by_side("C clock_gettime(MONOTONIC)", [str(exe), str(calls)], rounds)
            overhead = q - p
    else:
        print("  (no C compiler: C side skipped)")
    code = PY_CLOCK.format(n=calls // 5)
    _side_by_side("Python time.monotonic_ns()", [sys.executable, "-c", code], rounds)
    return overhead


SPAWN_PY = (
    "import subprocess, time\n"
    "big = bytearray(1536 << 20)\n"
    "for i in range(0, len(big), 4096): big[i] = 1\n"
    "subprocess.run(['true'])\n"
    "n = {n}; t0 = time.perf_counter()\n"
    "for _ in range(n): subprocess.run(['true'])\n"
    "print((time.perf_counter() - t0) / n * 1e9)\n"
)


def bench_spawn(rounds: int) -> None:
    print("subprocess.run(['true']) from a 1.5 GiB process, outside a simulation")
    p, q = _side_by_side("subprocess.run", [sys.executable, "-c", SPAWN_PY.format(n=10)], rounds)
    print(f"  = {p / 1e6:.2f} ms plain, {q / 1e6:.2f} ms with the preload")


EMPTY_RUN_PY = (
    "import time, askew\n"
    "loop = askew.new_event_loop(seed=1)\n"
    "async def noop(): pass\n"
    "for _ in range(200): loop.run_until_complete(noop())\n"
    "n = {n}; t0 = time.perf_counter_ns()\n"  # read outside every run: real time
    "for _ in range(n): loop.run_until_complete(noop())\n"
    "print((time.perf_counter_ns() - t0) / n)\n"
)


def bench_empty_run(rounds: int) -> float:
    print("an empty run on a reused SimLoop (enter, one step, leave)")
    p, q = _side_by_side(
        "run_until_complete(noop())", [sys.executable, "-c", EMPTY_RUN_PY.format(n=3000)], rounds
    )
    print(f"  = {p / 1e3:.1f} us plain, {q / 1e3:.1f} us with the preload")
    return q / p


def _wall_ms(argv: list[str], n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, env=_env(False), check=True, capture_output=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_launcher(rounds: int) -> None:
    print("askew-exec start-up (median wall ms)")
    plain = _wall_ms([sys.executable, "-c", "pass"], 3 * rounds)
    exe = [sys.executable, "-m", "askew._run.exec", "--", sys.executable, "-c", "pass"]
    launched = _wall_ms(exe, 3 * rounds)
    print(
        f"  python -c pass {plain:6.1f} ms   askew-exec -- python -c pass {launched:6.1f} ms   "
        f"launcher {launched - plain:+6.1f} ms"
    )


def _run_suite(argv: list[str], preload: bool) -> float:
    cmd = argv
    if preload:
        cmd = [sys.executable, "-m", "askew._run.exec", "--", *argv]
    env = _env(False)
    env.setdefault("PYTHONHASHSEED", "0")  # the same hash seed on both sides
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        # A failing suite is not a timing: stop, on either side.
        side = "under askew-exec" if preload else "plain"
        tail = "\n".join((proc.stdout.strip() or proc.stderr.strip()).splitlines()[-20:])
        raise RuntimeError(f"the suite {side} exited {proc.returncode}:\n{tail}")
    return elapsed


def bench_suite(rounds: int, suite_args: str) -> float:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *shlex.split(suite_args),
    ]
    print(f"pytest suite: {' '.join(argv[1:])} (wall seconds)")
    plain: list[float] = []
    pre: list[float] = []
    for _ in range(rounds):
        plain.append(_run_suite(argv, False))
        pre.append(_run_suite(argv, True))
    p, q = statistics.median(plain), statistics.median(pre)
    print(
        f"  plain {p:7.2f} s   askew-exec {q:7.2f} s   ratio {q / p:5.3f}   "
        f"(median of {rounds}; best {min(plain):.2f} / {min(pre):.2f})"
    )
    return q / p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds; skip the suite")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--suite-rounds", type=int, default=3)
    ap.add_argument("--suite-args", default="tests", help="arguments for pytest (default: tests)")
    ap.add_argument("--no-suite", action="store_true")
    args = ap.parse_args()
    if not LIB.is_file():
        print(f"no preload at {LIB}: run `make` first", file=sys.stderr)
        return 2
    rounds = args.rounds or (3 if args.quick else 9)
    calls = 2_000_000 if args.quick else 20_000_000
    overhead = bench_clock(rounds, calls)
    bench_spawn(max(3, rounds // 3))
    bench_launcher(rounds)
    run_ratio = bench_empty_run(rounds)
    goals = [
        ("clock_gettime overhead <= 5 ns", overhead <= 5.0, f"{overhead:+.2f} ns"),
        ("an empty run <= 3% slower", run_ratio <= 1.03, f"ratio {run_ratio:.3f}"),
    ]
    if not (args.quick or args.no_suite):
        ratio = bench_suite(args.suite_rounds, args.suite_args)
        goals.append(("askew-exec pytest <= 3% slower", ratio <= 1.03, f"ratio {ratio:.3f}"))
    print("goals")
    for name, met, value in goals:
        print(f"  {name:<34} {'met' if met else 'NOT met':<8} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
