# SPDX-License-Identifier: Apache-2.0
"""The networking suites of issue 12 (anyio, aiohttp, websockets, aioftp), stock and wrapped.

Runs each suite's tests twice in child processes, on the stock loop and
under `askew-exec --wrap`, and prints one table: tests, passed stock, passed
wrapped, and the stock-passing tests that fail wrapped, counted by reason
(the call a `NondeterminismError` names, a deadlock, a timeout, anything
else). It runs in a venv that has the suites' sources installed in
editable mode next to askew (see `setup` below, and docs/compatibility.md
for the exact versions and commands): unlike scripts/compat.py these
suites need many test dependencies, and websockets ships no tests in its
sdist. Not part of CI.

Usage:
  python scripts/compat_suites.py setup [--dir /work/compat]   # venv + sources
  /work/compat/venv/bin/python scripts/compat_suites.py run [--only NAME...] [--seed S]
      [--askew TREE] [--label before]   # another askew checkout, built in place
      [--wall-epoch 2026-01-01]         # the wrapped runs' wall epoch (askew-exec's)
  python scripts/compat_suites.py table [--label before]      # print a finished run again
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# scripts/ is not a package: compat.py's junit reader and wrapped-run prefix.
import compat

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = Path(os.environ.get("ASKEW_COMPAT_DIR", "/work/compat"))


@dataclass(frozen=True)
class Suite:
    name: str
    version: str
    src: str  # directory under DIR/src
    tests: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # pytest-asyncio's option is unknown (a config error) where it is disabled.
    common_args: tuple[str, ...] = compat.COMMON_ARGS


SUITES = (
    Suite(
        "anyio",
        "4.16.0",
        "anyio-4.16.0",
        ("tests",),
        # The asyncio backend only (trio is not installed); anyio's own
        # conftest parametrizes over backends, so select by id.
        ("-k", "not trio", "-p", "anyio", "-p", "pytest_mock", "-p", "no:asyncio", "-p", "no:trio"),
        common_args=("-p", "no:cacheprovider", "-o", "addopts="),
    ),
    Suite(
        "aiohttp",
        "3.14.5",
        "aiohttp-3.14.5",
        (
            "tests/test_client_functional.py",
            "tests/test_web_functional.py",
            "tests/test_client_ws_functional.py",
            "tests/test_web_websocket_functional.py",
            "tests/test_web_sendfile_functional.py",
            "tests/test_proxy_functional.py",
        ),
        ("-m", "not dev_mode and not autobahn and not internal"),
        (("AIOHTTP_NO_EXTENSIONS", "1"),),
    ),
    Suite(
        "websockets",
        "17.1.dev0 (git 04e599ca)",
        "websockets-git",
        ("tests/asyncio", "tests/legacy"),
    ),
    Suite(
        "aioftp",
        "0.28.3",
        "aioftp-0.28.3",
        ("tests",),
        ("-p", "no:anyio", "--import-mode=importlib"),
    ),
)
SDISTS = ("anyio==4.16.0", "aiohttp==3.14.5", "aioftp==0.28.3")
TEST_DEPS = (
    "aiodns", "pytest", "pytest-asyncio", "pytest-mock", "pytest-timeout", "pytest-xdist",
    "freezegun", "trustme", "proxy.py>=2.4.4rc5", "blockbuster", "isal", "zlib_ng",
    "gunicorn", "uvloop", "async_timeout", "siosocks", "hypothesis", "psutil", "truststore",
    "python-socks[asyncio]", "brotli", "coverage", "pytest-cov",
)  # fmt: skip
PER_TEST_TIMEOUT_S = 60


def setup(base: Path) -> None:
    """Make base/venv with askew (this checkout) and the suites installed editable."""
    sdists, src = base / "sdists", base / "src"
    sdists.mkdir(parents=True, exist_ok=True)
    src.mkdir(parents=True, exist_ok=True)
    venv = base / "venv"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(
        [*pip[:-2], "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", str(sdists),
         *SDISTS],
        check=True,
    )  # fmt: skip
    for archive in sdists.glob("*.tar.gz"):
        with tarfile.open(archive) as tar:
            tar.extractall(src, filter="data")
    if not (src / "websockets-git").exists():
        sys.exit(
            "websockets' sdist has no tests: put a checkout of its repository "
            f"(commit 04e599ca) at {src / 'websockets-git'} and run setup again"
        )
    editable = [f"-e{ROOT}", *(f"-e{src / s.src}" for s in SUITES)]
    env = {**os.environ, "AIOHTTP_NO_EXTENSIONS": "1"}
    subprocess.run([*pip, *editable, *TEST_DEPS], check=True, env=env)
    # websockets' proxy tests run mitmproxy on a helper thread (the loop-on-
    # another-thread case); it pins an older Brotli than aiohttp wants, so
    # it goes in second and aiohttp's Brotli back on top of it.
    subprocess.run([*pip, "mitmproxy"], check=True)
    subprocess.run([*pip, "brotli>=1.2"], check=True)


# Why a stock-passing test fails wrapped: the first matching pattern names it.
_REASONS = (
    (re.compile(r"NondeterminismError: (\w+(?:\.\w+)*)"), None),
    (re.compile(r"DeadlockError"), "deadlock"),
    (re.compile(r"Timeout|timed? ?out", re.I), "timeout"),
    (re.compile(r"BudgetExceeded"), "budget"),
    (re.compile(r"ConnectionRefused|ECONNREFUSED"), "connection refused"),
    (re.compile(r"gaierror"), "name lookup"),
)


def reason(message: str) -> str:
    """The table's reason: a refused call's name, a deadlock, a timeout, or
    `other` (see `detail`)."""
    for pattern, name in _REASONS:
        # A timeout counts only in the failure's own line: a traceback's
        # test names and source (test_client_close_timeout, open_timeout=)
        # mention timeouts of failures that are something else.
        match = pattern.search(detail(message) if name == "timeout" else message)
        if match:
            return name or match.group(1)
    if not message.strip() or message.startswith("missing"):
        return "missing from wrapped run"
    return "other"


def detail(message: str) -> str:
    """The first line of a failure, cut short: what `other` stands for."""
    first = next((ln for ln in message.strip().splitlines() if ln.strip()), "")
    return re.sub(r"0x[0-9a-f]+", "0x…", first.strip())[:100]


@dataclass
class Row:
    suite: Suite
    stock: compat.Result
    wrapped: compat.Result

    def passed(self, result: compat.Result) -> set[str]:
        return {n for n, o in result.outcomes.items() if o == "passed"}

    def lost(self) -> list[str]:
        """The wrapped failure message of each stock-passing test that fails wrapped."""
        names = sorted(self.passed(self.stock) - self.passed(self.wrapped))
        return [self.wrapped.messages.get(n, "missing from the wrapped run") for n in names]

    def reasons(self) -> Counter[str]:
        return Counter(reason(m) for m in self.lost())

    def others(self) -> Counter[str]:
        return Counter(detail(m) for m in self.lost() if reason(m) == "other")


def wrapped_prefix(seed: int, wall_epoch: str | None) -> list[str]:
    """The wrapped run's command: compat.py's, with the wall epoch if given."""
    prefix = compat.wrapped_prefix(seed)
    if wall_epoch is not None:
        at = prefix.index("--wrap") if "--wrap" in prefix else len(prefix)
        flag = (
            ["--wall-epoch", wall_epoch]
            if "--wrap" in prefix
            else [f"--askew-wall-epoch={wall_epoch}"]
        )
        prefix[at + 1 : at + 1] = flag
    return prefix


def run(
    base: Path,
    suite: Suite,
    seed: int,
    workers: int,
    askew: Path,
    label: str,
    wall_epoch: str | None = None,
) -> Row:
    cwd = base / "src" / suite.src
    lib = compat.Library(
        suite.name,
        suite.version,
        (
            *suite.tests,
            *suite.pytest_args,
            f"--timeout={PER_TEST_TIMEOUT_S}",
            *(("-n", str(workers)) if workers > 1 else ("-p", "no:xdist")),
        ),
    )
    compat.WORK = base / "results" / label
    compat.WORK.mkdir(parents=True, exist_ok=True)
    os.environ.update(dict(suite.env))
    # The askew the children import: this checkout, or an older one for "before".
    os.environ["PYTHONPATH"] = str(askew)
    compat.COMMON_ARGS = suite.common_args
    stock = compat.run_suite(cwd, lib, [sys.executable, "-m", "pytest"], "stock")
    wrapped = compat.run_suite(cwd, lib, wrapped_prefix(seed, wall_epoch), "wrapped")
    return Row(suite, stock, wrapped)


def read(base: Path, suite: Suite, label: str) -> Row:
    """The row of an earlier run, from its junit files."""
    results = base / "results" / label

    def result(tag: str) -> compat.Result:
        return compat.read_junit(results / f"{suite.src}-{tag}.xml", compat.Result())

    return Row(suite, result("stock"), result("wrapped"))


def render(rows: list[Row]) -> str:
    out = [
        "| suite | tests | passed stock | passed wrapped "
        "| stock-passing, failing wrapped, by reason |",
        "|---|---:|---:|---:|---|",
    ]
    for row in rows:
        reasons = ", ".join(f"{k} {n}" for k, n in row.reasons().most_common()) or "none"
        hung = " (hung)" if row.stock.hung or row.wrapped.hung else ""
        out.append(
            f"| {row.suite.name} {row.suite.version} | {len(row.stock.outcomes)} | "
            f"{len(row.passed(row.stock))} | {len(row.passed(row.wrapped))}{hung} | {reasons} |"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("setup", "run", "table"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument(
        "--askew", type=Path, default=ROOT, help="askew source tree, built in place, to test"
    )
    parser.add_argument(
        "--label", default="after", help="results/LABEL/ keeps this run's junit files"
    )
    parser.add_argument("--only", nargs="*", default=None, help="suite names to run")
    parser.add_argument(
        "--wall-epoch", default=None, help="the wrapped runs' wall epoch (default: askew's)"
    )
    args = parser.parse_args()
    if args.command == "setup":
        setup(args.dir)
        return 0
    rows = []
    for suite in SUITES:
        if args.only and suite.name not in args.only:
            continue
        if args.command == "table":  # the last run under --label, read again
            rows.append(read(args.dir, suite, args.label))
            continue
        rows.append(
            run(args.dir, suite, args.seed, args.workers, args.askew, args.label, args.wall_epoch)
        )
        print(render(rows[-1:]).splitlines()[-1], flush=True)
    print(render(rows))
    for row in rows:
        print(f"\n{row.suite.name}: the `other` failures by first line")
        for text, n in row.others().most_common(12):
            print(f"  {n:4d}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
