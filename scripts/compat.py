# SPDX-License-Identifier: Apache-2.0
"""Compatibility survey: real asyncio libraries' own test suites, stock and wrapped.

Downloads pinned sdists from PyPI (pip download), runs each library's suite
with pytest twice in child processes (stock, then under
`askew-exec --wrap`, or `pytest -p askew --askew-wrap` where askew-exec is
missing), and writes docs/compatibility.md: tests, passes each way, escapes
grouped by the call NondeterminismError names, and wall time each way (a
measurement for the table, never an assertion). Not part of CI: it needs
PyPI. Usage: python scripts/compat.py [--seed S] [--out docs/compatibility.md]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "compat"
HANG_GUARD_S = 900


@dataclass(frozen=True)
class Library:
    name: str
    version: str
    pytest_args: tuple[str, ...] = ()
    note: str = ""


# Pure-asyncio libraries whose suites sleep or time out and run offline.
LIBRARIES = (
    Library("async-timeout", "5.0.1", note="timeouts around sleeps, pytest-asyncio"),
    Library("async-lru", "2.4.0", note="TTL caches, pytest-asyncio, warnings are errors"),
    Library("aiostream", "0.8.1", note="stream operators with timed sleeps, pytest-asyncio"),
    Library("asyncstdlib", "3.14.0", note="async builtins and itertools, own runner"),
    Library(
        "janus",
        "2.0.0",
        ("--ignore=tests/test_benchmarks.py",),
        note="sync/async queue bridge: threads by design; benchmarks need pytest-codspeed",
    ),
)
COMMON_ARGS = (
    "-p", "no:cacheprovider", "-o", "addopts=", "-o", "asyncio_default_fixture_loop_scope=function",
)  # fmt: skip


@dataclass
class Result:
    outcomes: dict[str, str] = field(default_factory=dict)  # test -> passed/failed/...
    messages: dict[str, str] = field(default_factory=dict)
    kept: set[str] = field(default_factory=set)  # ran on the suite's own loop class
    wall_s: float = 0.0
    hung: bool = False
    returncode: int = 0


def fetch(lib: Library) -> Path:
    sdists = WORK / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(sdists), f"{lib.name}=={lib.version}"],
        check=True,
    )  # fmt: skip
    stem = f"{lib.name.replace('-', '_')}-{lib.version}"
    archive = next(p for p in sdists.iterdir() if p.name.lower().startswith(stem.lower()))
    src = WORK / "src" / stem
    if src.exists():
        shutil.rmtree(src)
    src.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(src.parent, filter="data")
    found = next(p for p in src.parent.iterdir() if p.name.lower() == stem.lower())
    return found


def wrapped_prefix(seed: int) -> list[str]:
    exec_ = shutil.which("askew-exec", path=str(Path(sys.executable).parent))
    if exec_:
        return [exec_, "--wrap", "--seed", str(seed), "--", sys.executable, "-m", "pytest"]
    return [sys.executable, "-m", "pytest", "-p", "askew", "--askew-wrap", f"--askew-seed={seed}"]


def run_suite(src: Path, lib: Library, prefix: list[str], tag: str) -> Result:
    junit = WORK / f"{src.name}-{tag}.xml"
    junit.unlink(missing_ok=True)
    cmd = [*prefix, *COMMON_ARGS, *lib.pytest_args, f"--junitxml={junit}", "-q"]
    result = Result()
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True, timeout=HANG_GUARD_S)
        result.returncode = proc.returncode
    except subprocess.TimeoutExpired:
        result.hung = True
    result.wall_s = time.perf_counter() - start
    (WORK / f"{src.name}-{tag}.log").write_text(" ".join(cmd) + "\n")
    return read_junit(junit, result)


def read_junit(junit: Path, result: Result) -> Result:
    """Fill `result` with each test's outcome and message from a junit file."""
    if not junit.exists():
        return result
    for tc in ET.parse(junit).getroot().iter("testcase"):
        name = f"{tc.get('classname')}::{tc.get('name')}"
        outcome, message = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "properties":
                if any(p.get("name") == "askew_kept_loop" for p in child):
                    result.kept.add(name)
        result.outcomes[name] = outcome
        result.messages[name] = message
    return result


_ESCAPE = re.compile(r"NondeterminismError: ([\w.]+)")


def escape_kind(message: str) -> str | None:
    match = _ESCAPE.search(message)
    if match:
        return match.group(1)
    if "NondeterminismError" in message:
        return "other NondeterminismError"
    return None


@dataclass
class Row:
    lib: Library
    tests: int
    stock_passed: int
    wrapped_passed: int
    escapes: Counter[str]
    unexplained: list[str]
    deadlocks: list[str]
    stock: Result
    wrapped: Result

    @property
    def ok_share(self) -> float:
        if not self.stock_passed:
            return 1.0
        ok = self.stock_passed - len(self.unexplained) - len(self.deadlocks)
        return ok / self.stock_passed


def best_of(repeat: int, src: Path, lib: Library, prefix: list[str], tag: str) -> Result:
    """Outcomes of the first run; the fastest wall time of `repeat` runs, since
    a one-shot time of a two-second suite is mostly machine noise."""
    result = run_suite(src, lib, prefix, tag)
    for _ in range(repeat - 1):
        if result.hung:
            break
        result.wall_s = min(result.wall_s, run_suite(src, lib, prefix, tag).wall_s)
    return result


def survey(lib: Library, seed: int, repeat: int) -> Row:
    src = fetch(lib)
    stock = best_of(repeat, src, lib, [sys.executable, "-m", "pytest"], "stock")
    wrapped = best_of(repeat, src, lib, wrapped_prefix(seed), "wrapped")
    escapes: Counter[str] = Counter()
    unexplained, deadlocks = [], []
    for name, outcome in stock.outcomes.items():
        if outcome != "passed" or wrapped.outcomes.get(name) == "passed":
            continue
        message = wrapped.messages.get(name, "missing from the wrapped run")
        kind = escape_kind(message)
        if kind is not None:
            escapes[kind] += 1
        elif "DeadlockError" in message:
            deadlocks.append(name)
        else:
            unexplained.append(name)
    return Row(
        lib,
        tests=len(stock.outcomes),
        stock_passed=sum(o == "passed" for o in stock.outcomes.values()),
        wrapped_passed=sum(o == "passed" for o in wrapped.outcomes.values()),
        escapes=escapes,
        unexplained=unexplained,
        deadlocks=deadlocks,
        stock=stock,
        wrapped=wrapped,
    )


def render(rows: list[Row], seed: int, repeat: int) -> str:
    py = ".".join(map(str, sys.version_info[:3]))
    out = [
        "# Compatibility: real asyncio suites under `--askew-wrap`",
        "",
        "Generated by `python scripts/compat.py` (not part of CI: it downloads sdists from",
        f"PyPI). Python {py}, base seed {seed}; each library's own pytest suite runs twice,",
        'stock and wrapped (`askew-exec --wrap`), in child processes. "OK" counts the',
        "stock-passing tests that pass wrapped or fail with a `NondeterminismError` naming",
        "the escape; the goal is at least 95% for every library, no hang, and wrapped no",
        f"slower. Wall times are the best of {repeat} runs each, for orientation only: on",
        "the survey machine, repeated runs of one two-second suite vary by about a second",
        'either way, so only the sleep-heavy suites show a real difference. "On own',
        'loop" counts tests that ran on a loop class the suite supplies itself (through',
        "`pytest_asyncio_loop_factories`); wrap mode keeps such loops, so those tests ran",
        "unwrapped. Escape names starting with `clock_nanosleep`/`sem_` come from",
        "askew-exec's preload refusing a blocking C call (`time.sleep`, a lock wait).",
        "",
        "| library | tests | passed stock | passed wrapped | OK | escapes (tests, by call) "
        "| other failures | on own loop | wall stock | wall wrapped |",
        "|---|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for row in rows:
        escapes = ", ".join(f"`{k}` {n}" for k, n in sorted(row.escapes.items())) or "none"
        other = len(row.unexplained) + len(row.deadlocks)
        hung = " (hung)" if row.stock.hung or row.wrapped.hung else ""
        out.append(
            f"| {row.lib.name} {row.lib.version} | {row.tests} | {row.stock_passed} | "
            f"{row.wrapped_passed} | {100 * row.ok_share:.1f}% | {escapes} | {other}{hung} | "
            f"{len(row.wrapped.kept)} | "
            f"{row.stock.wall_s:.1f} s | {row.wrapped.wall_s:.1f} s |"
        )
    out += ["", "## Notes per library", ""]
    for row in rows:
        out.append(f"- **{row.lib.name}** ({row.lib.note}).")
        for name in row.deadlocks:
            out.append(f"  - deadlock reported: `{name}`")
        for name in row.unexplained:
            first = row.wrapped.messages.get(name, "").strip().splitlines()[:1]
            out.append(f"  - fails wrapped without naming an escape: `{name}`: {first}")
        for kind in sorted(row.escapes):
            example = next(
                (
                    msg.split("NondeterminismError: ", 1)[1].splitlines()[0]
                    for name, msg in row.wrapped.messages.items()
                    if escape_kind(msg) == kind and "NondeterminismError: " in msg
                ),
                "",
            )
            out.append(f"  - `{kind}` ({row.escapes[kind]}): {example[:200]}")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "compatibility.md")
    parser.add_argument("--repeat", type=int, default=3, help="runs per wall time (best of)")
    parser.add_argument("--only", nargs="*", default=None, help="library names to run")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    rows = []
    for lib in LIBRARIES:
        if args.only and lib.name not in args.only:
            continue
        row = survey(lib, args.seed, args.repeat)
        rows.append(row)
        print(
            f"{lib.name}: {row.tests} tests, stock {row.stock_passed} passed "
            f"({row.stock.wall_s:.1f} s), wrapped {row.wrapped_passed} passed "
            f"({row.wrapped.wall_s:.1f} s), OK {100 * row.ok_share:.1f}%, "
            f"escapes {dict(row.escapes)}, unexplained {row.unexplained}, "
            f"deadlocks {row.deadlocks}",
            flush=True,
        )
    args.out.write_text(render(rows, args.seed, args.repeat))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
