# SPDX-License-Identifier: Apache-2.0
"""askew's pytest plugin (entry point pytest11).

--askew-seed and --askew-iterations mirror ASKEW_SEED and ASKEW_ITERATIONS
for @askew.simulate tests, which need nothing else: a simulated test is an
ordinary sync function. --askew-wrap (or ASKEW_WRAP=1, which
`askew-exec --wrap` sets) runs unmodified asyncio tests on seeded SimLoops:
this file decides per test and per phase when askew._wrap's patches are in
place (never outside a test's setup, call or teardown), runs a test under
--askew-seeds N base seeds, and ends every wrapped failure with the command
that replays it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

from . import _wrap
from ._config import check_iterations, check_seed, env_flag, env_seed
from ._wrap import WrappedRun

_PLUGIN_NAME = "askew-wrap"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("askew", "askew deterministic simulation")
    group.addoption(
        "--askew-seed",
        type=int,
        default=None,
        help="base seed for @askew.simulate tests and for --askew-wrap (as ASKEW_SEED)",
    )
    group.addoption(
        "--askew-iterations",
        type=int,
        default=None,
        help="iterations per @askew.simulate test (as ASKEW_ITERATIONS)",
    )
    group.addoption(
        "--askew-wrap",
        action="store_true",
        default=False,
        help="run every asyncio event loop a test creates on a seeded askew SimLoop "
        "(also on when ASKEW_WRAP=1)",
    )
    group.addoption(
        "--askew-seeds",
        type=int,
        default=None,
        metavar="N",
        help="with --askew-wrap: run every test under N base seeds and report each "
        "failing seed with its replay command",
    )


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("askew_seed", None)
    iterations = config.getoption("askew_iterations", None)
    if seed is not None:
        os.environ["ASKEW_SEED"] = str(check_seed(seed, "--askew-seed"))
    if iterations is not None:
        os.environ["ASKEW_ITERATIONS"] = str(check_iterations(iterations, "--askew-iterations"))
    seeds = config.getoption("askew_seeds", None)
    if seeds is not None:
        check_iterations(seeds, "--askew-seeds")
    if config.getoption("askew_wrap", False) or env_flag("ASKEW_WRAP"):
        wrap = WrapPlugin(config, seeds or 1)
        config.pluginmanager.register(wrap, _PLUGIN_NAME)
        if wrap.seeds > 1:
            config.pluginmanager.register(SeedSweep(wrap), _PLUGIN_NAME + "-seeds")
    elif seeds is not None:
        raise pytest.UsageError("--askew-seeds needs --askew-wrap (or ASKEW_WRAP=1)")


def _session_base(config: pytest.Config) -> int:
    # An xdist worker takes the controller's base, so the whole session
    # shares one seed; otherwise ASKEW_SEED, else a fresh one for this run.
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and "askew_wrap_base" in workerinput:
        return check_seed(int(workerinput["askew_wrap_base"]))
    seed = env_seed()
    if seed is not None:
        return seed
    return int.from_bytes(os.urandom(8), "little")


class WrapPlugin:
    """The hooks of wrap mode, registered only when it is on."""

    def __init__(self, config: pytest.Config, seeds: int) -> None:
        self.base = _session_base(config)
        self.seeds = seeds
        self.run: WrappedRun | None = None
        self.failures: list[tuple[str, int, int]] = []  # (nodeid, base, seed)
        self.kept: dict[str, int] = {}  # a suite's own loop class -> tests that used it

    def _begin(self, item: pytest.Item, base: int) -> WrappedRun:
        self.run = WrappedRun(item.nodeid, base)
        return self.run

    # ---- session ---------------------------------------------------------

    def pytest_report_header(self) -> str:
        per_test = f", {self.seeds} seeds per test" if self.seeds > 1 else ""
        return (
            f"askew: wrapping asyncio event loops on SimLoop, base seed {self.base}{per_test} "
            "(test seed = seed_stream(base, crc32(nodeid)))"
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: hand the controller's base seed to each worker."""
        node.workerinput["askew_wrap_base"] = self.base

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for cls, n in self.kept.items():
            terminalreporter.write_line(
                f"askew: {n} test(s) ran on the suite's own loop class {cls}, not wrapped "
                "(only stock asyncio, uvloop and winloop loops are replaced)"
            )
        if not self.failures:
            return
        terminalreporter.write_sep("=", "askew: replay wrapped failures")
        for nodeid, base, seed in dict.fromkeys(self.failures):
            terminalreporter.write_line(
                f"{nodeid} (seed={seed}): {_wrap.replay_command(base, nodeid)}"
            )

    # ---- one test ---------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, Any, None]:
        self._begin(item, self.base)
        try:
            yield
        finally:
            self.run = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, None]:
        yield from self._patched()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        yield from self._patched()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, None]:
        yield from self._patched()

    def _patched(self) -> Generator[None, Any, None]:
        if self.run is None:
            yield
            return
        with _wrap.installed(self.run):
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        run = self.run
        report: pytest.TestReport = outcome.get_result()
        if run is None:
            return
        if run.kept and report.when == "call":
            kept = ", ".join(dict.fromkeys(run.kept))
            item.user_properties.append(("askew_kept_loop", kept))
            self.kept[kept] = self.kept.get(kept, 0) + 1
        if not run.loops:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            item.user_properties.append(("askew_seed", run.seed))
            item.user_properties.append(("askew_virtual_time", f"{run.virtual_time:.6f}"))
        if report.failed:
            self.failures.append((item.nodeid, run.base, run.seed))
            report.sections.append(("askew replay", _replay_text(run)))


class SeedSweep:
    """--askew-seeds N: one test's whole protocol (setup, call, teardown) under
    N base seeds, `sweep_base(base, i)`, reported as one test.

    Each run rebuilds function-scoped fixtures, so a loop made by a fixture
    (pytest-asyncio's runner) gets that run's seed. If any run fails, the
    reports of the first failing run are logged, the failing one listing
    every failing seed with its replay command; otherwise the last run's.
    """

    def __init__(self, wrap: WrapPlugin) -> None:
        self.wrap = wrap

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        from _pytest.runner import runtestprotocol

        wrap = self.wrap
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        first_failed: list[pytest.TestReport] | None = None
        reports: list[pytest.TestReport] = []
        failing: list[WrappedRun] = []
        for i in range(wrap.seeds):
            last = i == wrap.seeds - 1
            run = wrap._begin(item, _wrap.sweep_base(wrap.base, i))
            # Between runs, tear down only the function's own fixtures: the
            # chain of the item's parent is what the next run needs again.
            upto: Any = nextitem if last else item.parent
            reports = runtestprotocol(item, log=False, nextitem=upto)
            if any(r.failed for r in reports):
                failing.append(run)
                if first_failed is None:
                    first_failed = reports
        wrap.run = None
        shown = first_failed if first_failed is not None else reports
        if failing:
            summary = [f"{len(failing)} of {wrap.seeds} seeds fail this test:"]
            summary += [f"  seed={run.seed}: {run.replay}" for run in failing]
            for report in shown:
                if report.failed:
                    report.sections.append(("askew seeds", "\n".join(summary)))
                    break
        for report in shown:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


def _replay_text(run: WrappedRun) -> str:
    lines = [run.describe()]
    if sys.flags.hash_randomization and os.environ.get("PYTHONHASHSEED", "random") == "random":
        lines.append(
            "note: PYTHONHASHSEED is random in this process, so str and bytes sets may "
            "iterate in another order on replay; run under askew-exec or set PYTHONHASHSEED=0"
        )
    lines.append(f"replay: {run.replay}")
    return "\n".join(lines)
