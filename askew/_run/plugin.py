# SPDX-License-Identifier: Apache-2.0
"""askew's pytest plugin (entry point pytest11).

--askew-seed and --askew-iterations mirror ASKEW_SEED and ASKEW_ITERATIONS
for @askew.simulate tests, which need nothing else: a simulated test is an
ordinary sync function. --askew-wrap (or ASKEW_WRAP=1, which
`askew-exec --wrap` sets) runs unmodified asyncio tests on seeded SimLoops:
askew/_run/wrapplugin.py decides per test and per phase when wrap mode's
patches are in place, runs a test that made a SimLoop under --askew-seeds N
base seeds, and ends every wrapped failure with the command that replays
it. Every option and ASKEW_* value is parsed by askew/_loop/config.py; a
bad one is a usage error naming it, and an ASKEW_* name askew does not read
is warned about. SimulatedReports adds a
simulated test's sweep to -v, keeps its failing seed for --lf, and ends an
askew failure's traceback at the user's line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import types
from collections.abc import Generator
from typing import Any

import _pytest
import pluggy
import pytest

from .._loop import preload as _preload
from .._loop.frames import PACKAGE_DIR
from .._loop.settings import (
    KNOBS,
    SETTINGS,
    check_env,
    env_flag,
    env_iterations,
    env_seeds,
    knob_text,
    parse_positive_int,
    parse_seed,
    parse_trace,
    unknown_env_variables,
    wrap_config,
)
from .._report import report as _report
from ..errors import SimulationFailure
from . import runner as _runner
from . import seeddb as _seeddb
from .wrapplugin import SeedSweep, WrapPlugin

_PLUGIN_NAME = "askew-wrap"
# stderr before pytest captures fd 2: where a death after a refusal reports.
_REPORT_FD = _preload.keep_stderr()
# The host's clock, taken before any simulation can make `time` virtual:
# the progress line reads it between a sweep's runs.
_monotonic = time.monotonic

# The plugin option of each RunConfig knob: --askew-strategy, --askew-max-steps, ...
_KNOB_OPTIONS = {name: "--askew-" + name.replace("_", "-") for name in KNOBS}


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options, one for each setting that has one (SETTINGS,
    askew/_loop/settings.py: the one table, also the documentation's)."""
    group = parser.getgroup("askew", "askew deterministic simulation")
    for setting in SETTINGS:
        if setting.option is None:
            continue
        help = f"{setting.help} (as {setting.variable})"
        if setting.metavar is None:  # a flag
            group.addoption(setting.option, action="store_true", default=False, help=help)
        else:
            group.addoption(setting.option, default=None, metavar=setting.metavar, help=help)


def _configure_shrink(config: pytest.Config) -> None:
    for option, variable in (
        ("askew_shrink", "ASKEW_SHRINK"),
        ("askew_shrink_seconds", "ASKEW_SHRINK_SECONDS"),
        ("askew_check_replay", "ASKEW_CHECK_REPLAY"),
        ("askew_db", "ASKEW_DB"),
    ):
        text = config.getoption(option, None)
        if text is not None:
            os.environ[variable] = str(text)


def pytest_cmdline_main(config: pytest.Config) -> None:
    """Before pytest's cache is read (at configure): the seeds whose process
    died after a refusal, from the records the preload left
    (docs/preload.md), become failures --lf reruns and seeds the database
    runs first."""
    if hasattr(config, "workerinput") or config.pluginmanager.is_blocked("cacheprovider"):
        return
    setting = str(config.getoption("askew_db", None) or os.environ.get("ASKEW_DB", ""))
    db = _seeddb.locate(setting, config.rootpath, True)
    if db is None:
        return
    records = _preload.take_crash_records(str(db.root / _preload.CRASH_DIR))
    records = [r for r in records if r.get("test")]
    if not records:
        return
    from _pytest.cacheprovider import Cache

    cache = Cache.for_config(config, _ispytest=True)
    lastfailed = dict(cache.get("cache/lastfailed", {}))
    ours = dict(cache.get(_LF_KEY, {}))
    for record in records:
        test, seed = record["test"], int(record["seed"])
        db.record(test, seed, [])
        lastfailed[test] = True
        ours[test] = seed
    cache.set("cache/lastfailed", lastfailed)
    cache.set(_LF_KEY, ours)


def pytest_configure(config: pytest.Config) -> None:
    try:
        _configure(config)
    except (ValueError, TypeError) as exc:
        # A bad option or ASKEW_* value is the user's to fix, not a crash.
        raise pytest.UsageError(f"askew: {exc}") from None


def _configure(config: pytest.Config) -> None:
    progress = SweepProgress(config, _runner.observer)
    config.pluginmanager.register(progress, _PLUGIN_NAME + "-progress")
    _runner.observer = progress
    _configure_shrink(config)  # first: the report plugin reads ASKEW_DB
    _configure_report(config)
    _configure_views(config)
    seed = config.getoption("askew_seed", None)
    iterations = config.getoption("askew_iterations", None)
    if seed is not None:
        os.environ["ASKEW_SEED"] = str(parse_seed(str(seed), "--askew-seed"))
    if iterations is not None:
        os.environ["ASKEW_ITERATIONS"] = str(
            parse_positive_int(str(iterations), "--askew-iterations")
        )
    given = {name: config.getoption("askew_" + name, None) for name in KNOBS}
    given = {name: text for name, text in given.items() if text is not None}
    seeds_text = config.getoption("askew_seeds", None)
    wrapping = config.getoption("askew_wrap", False) or env_flag("ASKEW_WRAP")
    if not wrapping:
        # Only wrap mode sweeps base seeds; taking them silently would change nothing.
        if seeds_text is not None or os.environ.get("ASKEW_SEEDS", "").strip():
            raise pytest.UsageError(
                "askew: --askew-seeds (ASKEW_SEEDS) applies to wrapped tests: add "
                "--askew-wrap (or ASKEW_WRAP=1); @askew.simulate tests sweep "
                "--askew-iterations seeds"
            )
        # The knobs reach @askew.simulate tests as ASKEW_* variables, as the
        # seed does, and override the decorator's arguments.
        for name, text in given.items():
            variable, parse = KNOBS[name]
            os.environ[variable] = knob_text(parse(text, _KNOB_OPTIONS[name]))
    # Every ASKEW_* value, the options' included, parsed: a bad one is one
    # usage error now, before any test runs, not a failure of each test.
    check_env()
    if not wrapping:
        return
    options = {name: KNOBS[name][1](text, _KNOB_OPTIONS[name]) for name, text in given.items()}
    if seeds_text is not None:
        seeds = parse_positive_int(seeds_text, "--askew-seeds")
    else:
        # `askew-exec --wrap --iterations 20` means 20 runs of each test, as it
        # does for @askew.simulate: for a wrapped test that is 20 base seeds.
        seeds = env_seeds() or env_iterations() or 1
    wrap = WrapPlugin(config, seeds, wrap_config(options))
    config.pluginmanager.register(wrap, _PLUGIN_NAME)
    if wrap.seeds > 1:
        config.pluginmanager.register(SeedSweep(wrap), _PLUGIN_NAME + "-seeds")


def pytest_unconfigure(config: pytest.Config) -> None:
    # A pytest run inside a test (pytester) hands the outer run's observer back.
    progress = _runner.observer
    if isinstance(progress, SweepProgress) and progress.config is config:
        _runner.observer = progress.outer


class SweepProgress:
    """The live line of an @askew.simulate sweep and the per-test summary.

    On a terminal, unless -q, a sweep that runs shows one line after what
    pytest wrote for its test: seeds done of the total, seeds/s, failures,
    elapsed and remaining time, redrawn at most every INTERVAL seconds and
    erased when the sweep ends, so pytest's own line reads as without it.
    It is drawn with output capture suspended, as pytest's live logging
    does, and it needs the terminal writer's current line (a private
    attribute): without it there is no live line. Each sweep's figures go
    into its test's user_properties ("askew_sweep"), which pytest-xdist
    carries to the controller, and the terminal summary lists them.
    """

    INTERVAL = 0.2  # seconds between redraws

    def __init__(self, config: pytest.Config, outer: _runner.SweepObserver | None) -> None:
        self.config = config
        self.outer = outer
        self.item: pytest.Item | None = None
        self.rows: dict[str, list[str]] = {}  # nodeid -> its sweeps' summary lines
        self._reset(None, 0, 0)

    def _reset(self, name: str | None, base: int, total: int) -> None:
        self.name = name
        self.base = base
        self.total = total
        self.done = 0
        self.failures = 0
        self.began = _monotonic()
        self.next_draw = self.began
        self.drawn = False
        self.live = False  # whether this sweep draws a live line

    def _writer(self) -> tuple[Any, Any] | None:
        """(the terminal writer, the capture manager) when a live line is wanted."""
        if self.config.get_verbosity() < 0:
            return None
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        tw = getattr(reporter, "_tw", None)
        if reporter is None or not reporter.isatty() or not hasattr(tw, "_current_line"):
            return None
        return tw, self.config.pluginmanager.get_plugin("capturemanager")

    def _draw(self, text: str | None) -> None:
        """Show `text` after pytest's current line, or erase it (None). The
        cursor is saved where pytest's line ends (ESC 7) and restored there
        (ESC 8) before each redraw; the line never wraps. The terminal's
        width is read with capture suspended: while a test's output is
        captured, standard output is no terminal and reads as 80 columns."""
        found = self._writer()
        if found is None:
            return
        tw, capman = found
        with contextlib.nullcontext() if capman is None else capman.global_and_fixture_disabled():
            self._write(tw, text)

    def _write(self, tw: Any, text: str | None) -> None:
        line = tw._current_line
        if text is None:
            out = "\x1b8\x1b[K"
        else:
            room = tw.fullwidth - tw.width_of_current_line - 2
            if room < 20:
                return
            out = ("\x1b8\x1b[K " if self.drawn else "\x1b7 ") + text[:room]
        tw.write(out, flush=True)
        tw._current_line = line  # what pytest aligns its percentage by
        self.drawn = text is not None

    # ---- askew._runner.SweepObserver ------------------------------------------

    def sweep_begins(self, fn: Any, base: int, iterations: int) -> None:
        self._reset(getattr(fn, "__qualname__", str(fn)), base, iterations)
        self.live = self._writer() is not None

    def iteration_ends(self, iteration: int, failed: bool) -> None:
        self.done += 1
        self.failures += failed
        if not self.live:
            return
        now = _monotonic()
        if now >= self.next_draw:
            self.next_draw = now + self.INTERVAL
            self._draw(self._text(now))

    def _text(self, now: float) -> str:
        from .sweep import progress_text

        return progress_text(self.done, self.total, self.failures, now - self.began)

    def sweep_ends(self, coverage: Any) -> None:
        if self.name is None:
            return
        if self.drawn:
            self._draw(self._text(_monotonic()))  # the final count, then away
            self._draw(None)
        stopped = f", stopped at the failing iteration {self.done - 1}" if self.failures else ""
        row = f"{self.done:,} of {self.total:,} seeds from base seed {self.base}{stopped}"
        if coverage is not None and (coverage.points or coverage.marks):
            fired = sum(1 for s in coverage.points.values() if s.fired)
            true = sum(1 for m in coverage.marks.values() if m.runs_true)
            row += (
                f"; buggify points reached {len(coverage.points)}, fired {fired}; "
                f"sometimes marks reached {len(coverage.marks)}, true {true}"
            )
        if self.item is not None:
            self.item.user_properties.append(("askew_sweep", row))
        self._reset(None, 0, 0)

    # ---- pytest hooks -----------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, Any, Any]:
        self.item = item
        try:
            return (yield)
        finally:
            self.item = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        rows = [str(v) for k, v in report.user_properties if k == "askew_sweep"]
        if rows:
            self.rows[report.nodeid] = rows

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.rows or self.config.get_verbosity() < 0:
            return
        terminalreporter.write_sep("-", "askew sweeps")
        for nodeid, rows in self.rows.items():
            for row in rows:
                terminalreporter.write_line(f"{nodeid}: {row}")


# ---- reports: ASKEW_* checks, --askew-trace, -v, --lf ------------------------------


def _configure_report(config: pytest.Config) -> None:
    """The report's settings and the environment's checks, once per session."""
    _report.pytest_dirs = (str(config.rootpath), str(config.invocation_params.dir))
    trace = config.getoption("askew_trace", None)
    if trace is not None:
        parsed = parse_trace(str(trace), "--askew-trace")
        os.environ["ASKEW_TRACE"] = "all" if parsed is None else str(parsed)
    for text in unknown_env_variables():
        config.issue_config_time_warning(pytest.PytestConfigWarning(text), stacklevel=2)
    if not config.pluginmanager.has_plugin(_PLUGIN_NAME + "-report"):
        config.pluginmanager.register(SimulatedReports(config), _PLUGIN_NAME + "-report")


# ---- views of a failing run: --askew-timeline, --askew-trace-json ------------------


def _configure_views(config: pytest.Config) -> None:
    """The options become the variables the runner reads (a failing seed is
    run once more to draw it: askew/_report/timeline.py)."""
    for option, variable in (
        ("askew_timeline", "ASKEW_TIMELINE"),
        ("askew_trace_json", "ASKEW_TRACE_JSON"),
    ):
        value = config.getoption(option, None)
        if value is not None:
            os.environ[variable] = os.path.abspath(str(value))


_LF_KEY = "askew/lastfailed"  # pytest's cache: nodeid -> the seed that failed it


class SimulatedReports:
    """What the plugin adds to an @askew.simulate test's pytest report: its
    base seed and seeds run (shown with -v), and the seed that failed it
    (kept in pytest's cache, so `pytest --lf` replays that seed first)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        cache = getattr(config, "cache", None)
        self.cache = cache
        self.failed: dict[str, int] = dict(cache.get(_LF_KEY, {})) if cache is not None else {}
        self.replay_first = bool(config.getoption("lf", False)) and cache is not None
        self.changed = False
        self.db = _seed_db(config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        __tracebackhide__ = True
        simulated = getattr(getattr(item, "obj", None), "_askew_test", None) is not None
        lf = self.failed.get(item.nodeid) if self.replay_first and simulated else None
        first = [] if lf is None else [lf]
        if self.db is not None and simulated:
            first += [seed for seed in self.db.seeds(item.nodeid) if seed != lf]
        _runner.sweeps.begin(first)
        if simulated:  # what a death after a refusal reports: docs/preload.md
            replay = _report.replay_command(0, item.nodeid)
            crashes = None if self.db is None else str(self.db.root / _preload.CRASH_DIR)
            replay = replay.replace("ASKEW_SEED=0 ", "ASKEW_SEED={seed} ", 1)
            _preload.note_test(item.nodeid, replay, crashes, _REPORT_FD)
        try:
            return (yield)
        finally:
            _preload.note_test(None)
            _runner.sweeps.end()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        if call.excinfo is not None and call.excinfo.errisinstance(SimulationFailure):
            _trim_to_user_frames(call.excinfo)
        report = yield
        if call.when != "call" or getattr(getattr(item, "obj", None), "_askew_test", None) is None:
            return report
        ran = _runner.sweeps.last
        if ran is not None:
            report.user_properties.append(("askew_sweep_seeds", ran))
        failure = call.excinfo.value if call.excinfo is not None else None
        if isinstance(failure, SimulationFailure) and failure.seed is not None:
            report.user_properties.append(("askew_failed_seed", failure.seed))
        if _runner.sweeps.passed:
            report.user_properties.append(("askew_first_passed", list(_runner.sweeps.passed)))
        return report

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when != "call" or not report.passed:
            return None
        ran: Any = dict(report.user_properties).get("askew_sweep_seeds")
        if ran is None:
            return None
        base, n = ran
        word = f"PASSED ({n} seed{'s' if n != 1 else ''} from base seed {base})"
        return "passed", ".", (word, {"green": True})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        if self.db is not None and not hasattr(self.config, "workerinput"):
            _remember(self.db, report)
        if self.cache is None:
            return
        seed = dict(report.user_properties).get("askew_failed_seed")
        if seed is not None:
            self.failed[report.nodeid] = int(seed)  # type: ignore[call-overload]
            self.changed = True
        elif report.passed and self.failed.pop(report.nodeid, None) is not None:
            self.changed = True

    def pytest_sessionfinish(self) -> None:
        if self.changed and self.cache is not None and not hasattr(self.config, "workerinput"):
            self.cache.set(_LF_KEY, self.failed)


def _seed_db(config: pytest.Config) -> _seeddb.SeedDB | None:
    """The session's seed database: --askew-db / ASKEW_DB, else .askew/ in
    the rootdir unless pytest's cache is off (-p no:cacheprovider: a
    session that keeps nothing across runs keeps no seeds either)."""
    setting = os.environ.get("ASKEW_DB", "")
    on = getattr(config, "cache", None) is not None
    return _seeddb.locate(setting, config.rootpath, on)


def _remember(db: _seeddb.SeedDB, report: pytest.TestReport) -> None:
    """A simulated test's outcome into the seed database (under xdist, once,
    in the controller, which sees every worker's reports)."""
    props = dict(report.user_properties)
    failed: Any = props.get("askew_failed_seed")
    passed: Any = props.get("askew_first_passed", [])
    if failed is not None or passed:
        db.record(report.nodeid, None if failed is None else int(failed), list(passed))


_NOT_USER = (
    PACKAGE_DIR,
    *(
        os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep
        for m in (asyncio, pytest, _pytest, pluggy)
    ),
)


def _trim_to_user_frames(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """End a failure askew raised (a deadlock, a spent budget, a refusal in
    a wrapped test) at the user's innermost frame, so pytest's last frame is
    the line that ran the loop, not asyncio's runner and askew's loop. The
    exception's own traceback is cut (pytest re-reads the raw chain)."""
    last_user = None
    tb: types.TracebackType | None = excinfo.tb
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_NOT_USER):
            last_user = tb
        tb = tb.tb_next
    if last_user is not None and last_user.tb_next is not None:
        last_user.tb_next = None
        excinfo.traceback = excinfo.traceback.__class__(excinfo.tb)
