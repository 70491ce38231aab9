# SPDX-License-Identifier: Apache-2.0
"""Wrap mode under pytest (--askew-wrap): per test and per phase, when wrap
mode's patches are in place (never outside a test's setup, call or
teardown); each wrapped test's seed from the session's base; a test that
made a SimLoop run again under --askew-seeds N base seeds, its subtests and
reports kept apart per seed; and every wrapped failure ended with the
command that replays it. The plugin (askew/_run/plugin.py) registers it.
"""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Callable, Generator
from typing import Any

import pytest

from .._loop.config import RunConfig, check_seed
from .._loop.patches import NameSwap
from .._loop.settings import env_seed
from . import wrap as _wrap
from .wrap import WrappedRun, wrapped_replay


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

    def __init__(self, config: pytest.Config, seeds: int, run_config: RunConfig) -> None:
        self.base = _session_base(config)
        self.seeds = seeds
        self.config = run_config
        self.run: WrappedRun | None = None
        self.failures: list[tuple[str, int, int]] = []  # (nodeid, base, seed)
        self.kept: dict[str, int] = {}  # a suite's own loop class -> tests that used it
        self._statements = _StatementCache()

    def _begin(self, item: pytest.Item, base: int) -> WrappedRun:
        self.run = WrappedRun(item.nodeid, base, self.config)
        return self.run

    # ---- session ---------------------------------------------------------

    def pytest_report_header(self) -> str:
        per_test = f", {self.seeds} seeds per test" if self.seeds > 1 else ""
        knobs = " ".join(_wrap.knob_options(self.config))
        return (
            f"askew: wrapping asyncio event loops on SimLoop, base seed {self.base}{per_test}, "
            f"strategy {self.config.strategy}, executor {self.config.executor}"
            f"{' (' + knobs + ')' if knobs else ''} "
            "(test seed = seed_stream(base, crc32(nodeid)))"
        )

    def pytest_sessionstart(self) -> None:
        self._statements.install()

    def pytest_unconfigure(self) -> None:
        self._statements.uninstall()

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
        # One line per test: a test swept under --askew-seeds lists all its
        # failing seeds in its own report ("askew seeds") already.
        by_test: dict[str, list[tuple[int, int]]] = {}
        for nodeid, base, seed in dict.fromkeys(self.failures):
            by_test.setdefault(nodeid, []).append((base, seed))
        for nodeid, runs in by_test.items():
            base, seed = runs[0]
            more = f" ({len(runs)} failing seeds, all in its report)" if len(runs) > 1 else ""
            terminalreporter.write_line(
                f"{nodeid} (seed={seed}){more}: {WrappedRun(nodeid, base, self.config).replay}"
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
            failure = call.excinfo.value if call.excinfo is not None else None
            report.sections.append(("askew replay", wrapped_replay(run, failure)))


class SeedSweep:
    """--askew-seeds N: one test's whole protocol (setup, call, teardown) under
    N base seeds, `sweep_base(base, i)`, reported as one test.

    Each run rebuilds function-scoped fixtures, so a loop made by a fixture
    (pytest-asyncio's runner) gets that run's seed. A run that made no
    SimLoop ends the sweep: a synchronous test, or one on a loop a wider
    fixture made for an earlier test, runs the same under every base seed.
    If any run fails, the reports of the first failing run are logged, the
    failing one listing every failing seed with its replay command;
    otherwise the last run's. Subtest reports are held back and only the
    logged run's are shown, so N runs never show a subtest N times.
    """

    def __init__(self, wrap: WrapPlugin) -> None:
        self.wrap = wrap
        self.nextitem: pytest.Item | None = None
        self.last = False  # whether the run in progress is the sweep's last
        self.held: list[Any] = []  # reports logged during the run in progress
        self.brief = False  # whether this run's reports are never shown

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        from _pytest.runner import runtestprotocol

        wrap = self.wrap
        session = item.session
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        counts = _failed_subtest_counts(item.config)
        counts_before = dict(counts or {})
        shown: tuple[list[pytest.TestReport], list[Any]] | None = None
        failing: list[WrappedRun] = []
        self.nextitem = nextitem
        # An instance attribute over Session.gethookproxy, deleted below.
        hookproxy = session.gethookproxy
        setattr(session, "gethookproxy", lambda path: _Held(self, hookproxy(path)))  # noqa: B010
        try:
            for i in range(wrap.seeds):
                run = wrap._begin(item, _wrap.sweep_base(wrap.base, i))
                self.last = i == wrap.seeds - 1
                self.held = []
                self.brief = bool(failing)
                # Teardown stops at the item's parent (teardown_exact only
                # reads its chain), so the next run finds the wider fixtures
                # it needs; pytest_runtest_teardown below finishes the
                # teardown once a run turns out to be the last.
                upto: Any = item.parent
                reports = runtestprotocol(item, log=False, nextitem=upto)
                if any(r.failed for r in (*reports, *self.held)):  # a failed subtest too
                    failing.append(run)
                if shown is None and (failing or self.last):
                    shown = (reports, self.held)
                if self.last:
                    break
        finally:
            delattr(session, "gethookproxy")
            wrap.run = None
        assert shown is not None
        reports, held = shown
        if failing:
            summary = [f"{len(failing)} of {wrap.seeds} seeds fail this test:"]
            summary += [f"  seed={run.seed}: {run.replay}" for run in failing]
            for report in (*held, *reports):
                if report.failed:
                    report.sections.append(("askew seeds", "\n".join(summary)))
                    break
        if counts is not None:
            # Every run added its failed subtests; count the shown run's alone.
            for key in [k for k, n in counts.items() if n != counts_before.get(k, 0)]:
                counts[key] = counts_before.get(key, 0) + sum(1 for r in held if r.failed)
        for report in reports:
            if report.when == "call":
                for sub in held:
                    item.ihook.pytest_runtest_logreport(report=sub)
                held = []
            item.ihook.pytest_runtest_logreport(report=report)
        for sub in held:  # a setup that failed after a subtest
            item.ihook.pytest_runtest_logreport(report=sub)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> pytest.TestReport | None:
        if (
            not self.brief
            or call.excinfo is None
            or call.excinfo.errisinstance(pytest.skip.Exception)
        ):
            return None
        # A failure after the first failing run is counted, never shown:
        # skip formatting its traceback, which can cost far more than the run.
        return pytest.TestReport(
            item.nodeid,
            item.location,
            {},
            "failed",
            call.excinfo.exconly(),
            call.when,  # type: ignore[arg-type]
            duration=call.duration,
            start=call.start,
            stop=call.stop,
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:
            run = self.wrap.run
            # A run that made no SimLoop is the last: another base seed
            # would not change it. Then the teardown pytest would have done
            # (up to the next item) is done now, inside this phase, so its
            # errors are this test's teardown errors as usual.
            session = item.session
            if run is not None and (not run.loops or session.shouldfail or session.shouldstop):
                self.last = True
            if self.last:
                item.session._setupstate.teardown_exact(self.nextitem)


class _Held:
    """The hooks of one path during a sweep, except that what a test logs
    itself (subtests do, as each finishes) is held for the end of the sweep."""

    def __init__(self, sweep: SeedSweep, hooks: Any) -> None:
        self._sweep = sweep
        self._hooks = hooks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hooks, name)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self._sweep.held.append(report)


def _failed_subtest_counts(config: pytest.Config) -> dict[Any, int] | None:
    # pytest's subtests fixture counts failed subtests per test in a stash
    # and fails the test's own report by that count.
    try:
        from _pytest.subtests import failed_subtests_key
    except ImportError:  # pytest < 9 has no built-in subtests
        return None
    counts: dict[Any, int] | None = config.stash.get(failed_subtests_key, None)
    return counts


class _StatementCache:
    """Parse each source file once per session while formatting failures,
    and keep of the parse only what pytest reads: the sorted line numbers
    of its statements.

    pytest re-parses and walks the whole module of every traceback entry
    for every failure report (its AST cache lives for one report); a
    wrapped suite that fails hundreds of tests through anyio's or
    asyncio's large modules spent most of its time there. Keeping the
    parsed modules for the session cost more than it saved in a suite that
    collects garbage often: a large module's AST is some 100,000 objects
    the collector walks at every collection, and aiohttp's suite calls
    gc.collect() after each test (98 s of CPU wrapped against 54 stock).
    A tuple of ints is one object the collector soon stops tracking. The
    line numbers go back to pytest on a stand-in node: its memo of them
    (pytest 9.2's `_statement_linenos`), or one `pass` per statement line
    for a pytest that walks the node. Keyed by the source text, so a
    changed file is parsed anew; installed only if pytest's function
    still has the signature it is written against and the stand-in gives
    the ranges a parse does on a sample (otherwise failures format as
    slowly as stock).
    """

    _MAX_FILES = 256  # a tuple of a module's statement lines is a few KB

    def __init__(self) -> None:
        self._names = NameSwap()
        self._lines: dict[str, tuple[int, ...]] = {}
        self.parsed = 0  # sources parsed since install (for the tests)

    def install(self) -> None:
        try:
            from _pytest._code import code, source
        except ImportError:
            return
        original = vars(source).get("getstatementrange_ast")
        if original is None or list(inspect.signature(original).parameters) != [
            "lineno",
            "source",
            "assertion",
            "astnode",
        ]:
            return
        memo = vars(source).get("_statement_linenos")
        cached = self._wrap(original, memo)
        if not _same_ranges(original, cached, source.Source):
            return
        self._lines.clear()
        self.parsed = 0
        for module in (source, code):
            if vars(module).get("getstatementrange_ast") is original:
                self._names.set(module, "getstatementrange_ast", cached)

    def uninstall(self) -> None:
        self._names.undo()
        self._lines.clear()

    def _wrap(
        self, original: Callable[..., Any], memo: Callable[[ast.AST], list[int]] | None
    ) -> Callable[..., Any]:
        lines = self._lines
        stand_in = _memo_stand_in if memo is not None else _walked_stand_in

        def getstatementrange_ast(
            lineno: int, source: Any, assertion: bool = False, astnode: ast.AST | None = None
        ) -> Any:
            if astnode is None:
                text = "\n".join(source.lines)  # what pytest parses: str(source)
                known = lines.get(text)
                if known is None:
                    try:
                        tree, start, end = original(lineno, source, assertion)
                    except SystemError:
                        # CPython 3.11's "AST constructor recursion depth
                        # mismatch" on a deep file: show the one line
                        # rather than end the session in an INTERNALERROR.
                        return ast.Module(body=[], type_ignores=[]), lineno, lineno + 1
                    self.parsed += 1
                    if len(lines) >= self._MAX_FILES:
                        del lines[next(iter(lines))]
                    known = lines[text] = tuple(memo(tree) if memo else _statement_lines(tree))
                    return stand_in(known), start, end
                astnode = stand_in(known)
            return original(lineno, source, assertion, astnode)

        return getstatementrange_ast


def _statement_lines(tree: ast.AST) -> list[int]:
    """The sorted 0-based line numbers pytest (before 9.2) finds in a
    module: each statement's and except clause's, its decorators', and the
    line before a finally or else block."""
    values = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.stmt, ast.ExceptHandler)):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                values += [d.lineno - 1 for d in node.decorator_list]
            values.append(node.lineno - 1)
            for name in ("finalbody", "orelse"):
                block = getattr(node, name, None)
                if block:
                    values.append(block[0].lineno - 2)
    return sorted(values)


def _memo_stand_in(lines: tuple[int, ...]) -> ast.AST:
    node = ast.Module(body=[], type_ignores=[])
    node._pytest_statement_linenos = list(lines)  # type: ignore[attr-defined]
    return node


def _walked_stand_in(lines: tuple[int, ...]) -> ast.AST:
    # Made for one call and dropped: nothing of it outlives the report.
    body: list[ast.stmt] = [ast.Pass(lineno=n + 1, col_offset=0) for n in lines]
    return ast.Module(body=body, type_ignores=[])


_SAMPLE = """\
import functools


@functools.cache
@functools.wraps(print)
def decorated(a,
              b):
    try:
        x = (a +
             b)
    except ValueError:  # a comment
        pass
    else:

        x = 2
    finally:
        x = 3
    for i in range(3):
        x += i
    else:
        x -= 1
    while x:
        x = 0
    else:
        pass
    with open("f") as f:
        return f.read()


class C:
    async def m(self):
        async for y in self:
            await y
        return [
            z for z in ()
        ]
"""


def _same_ranges(original: Callable[..., Any], cached: Callable[..., Any], make: Any) -> bool:
    """Whether the cached function gives every line of a sample the range
    a parse gives it, first and cached alike."""
    sample = make(_SAMPLE)
    lines = range(len(sample.lines))
    try:
        want = [original(n, sample)[1:] for n in lines]
        return all([cached(n, sample)[1:] for n in lines] == want for _ in range(2))
    except Exception:
        return False
