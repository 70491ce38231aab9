# SPDX-License-Identifier: Apache-2.0
"""Wrap mode: an unmodified asyncio suite, run stock and under --askew-wrap.

tests/wrap_fixtures/ is a user's suite (asyncio.run, Runner,
IsolatedAsyncioTestCase, pytest-asyncio, anyio, a deadlock, escapes, a
test that depends on FIFO order). Each run is a child pytest with a junit
report; the claims are about outcomes, seeds, virtual time and report text.
Wall-clock time is never asserted; the subprocess timeout only guards
against a hang.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import askew
from askew import _core, _wrap

FIXTURES = Path(__file__).parent / "wrap_fixtures"
HANG_GUARD_S = 300
BASE = 3

ESCAPES = {
    "test_escapes.test_echo_over_a_real_socket": "create_server('127.0.0.1', 0)",
    "test_escapes.test_blocking_work_in_to_thread": "run_in_executor(",
    "test_escapes.test_background_thread_sets_an_event": "threading.Thread.start()",
    "test_escapes.test_subprocess_exit_code": "subprocess_exec(",
}
DEADLOCK = "test_deadlock.test_transfer_in_both_directions"
FLAKY = "test_flaky.test_work_beats_its_deadline"
LONG_SLEEPS = {
    "test_sleeps.test_sleeping_an_hour_finishes": 3600,
    "test_sleeps.test_a_day_of_periodic_ticks": 24 * 3600,
    "test_unittest_case.TestLongTtl.test_a_day_long_ttl_expires": 86401,
    "test_pytest_asyncio_suite.test_sleeping_an_hour_finishes": 3600,
    "test_anyio_suite.test_sleeping_an_hour_finishes": 3600,
}


@dataclass
class Case:
    outcome: str  # passed, failed, error, skipped
    message: str = ""
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    returncode: int
    output: str
    cases: dict[str, Case]

    def outcomes(self, *which: str) -> set[str]:
        return {name for name, case in self.cases.items() if case.outcome in which}


def run_fixtures(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    junit = tmp_path / f"junit-{len(list(tmp_path.iterdir()))}.xml"
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    child_env["PYTHONHASHSEED"] = "0"
    child_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "askew", "-p", "no:cacheprovider",
         f"--junitxml={junit}", "-o", "junit_family=xunit1", *args],
        cwd=FIXTURES, env=child_env, capture_output=True, text=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    cases: dict[str, Case] = {}
    for tc in ET.parse(junit).getroot().iter("testcase"):
        case = Case("passed")
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                case.outcome = {"failure": "failed"}.get(child.tag, child.tag)
                case.message = (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "properties":
                case.properties = {p.get("name", ""): p.get("value", "") for p in child}
        cases[f"{tc.get('classname')}.{tc.get('name')}"] = case
    return Run(proc.returncode, proc.stdout + proc.stderr, cases)


@pytest.fixture(scope="module")
def stock(tmp_path_factory: pytest.TempPathFactory) -> Run:
    deselect = "not slow_stock and not hangs_stock"
    return run_fixtures(tmp_path_factory.mktemp("stock"), "-m", deselect)


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_fixtures(tmp_path_factory.mktemp("wrapped"), "--askew-wrap", f"--askew-seed={BASE}")


def test_the_stock_run_passes_every_test_it_can_finish(stock: Run) -> None:
    assert stock.cases, stock.output
    # FLAKY races real time on the stock loop: a loaded machine may fail it.
    assert stock.outcomes("failed", "error") - {FLAKY} == set(), stock.output
    assert set(ESCAPES) <= stock.outcomes("passed")


def test_wrapped_tests_pass_where_stock_ones_do_except_escapes(stock: Run, wrapped: Run) -> None:
    expected_to_differ = {*ESCAPES, FLAKY}
    stock_passed = stock.outcomes("passed") - expected_to_differ
    assert stock_passed <= wrapped.outcomes("passed"), wrapped.output
    assert wrapped.outcomes("skipped") == stock.outcomes("skipped")
    assert wrapped.outcomes("failed", "error") - {FLAKY} == {*ESCAPES, DEADLOCK}, wrapped.output


def test_long_sleeps_finish_in_virtual_time(wrapped: Run) -> None:
    for name, seconds in LONG_SLEEPS.items():
        case = wrapped.cases[name]
        if case.outcome == "skipped":  # pytest-asyncio or anyio not installed
            continue
        assert case.outcome == "passed", case.message
        assert float(case.properties["askew_virtual_time"]) >= seconds


def test_each_wrapped_test_seed_is_seed_stream_of_base_and_crc32_of_nodeid(wrapped: Run) -> None:
    nodeid = "test_sleeps.py::test_sleeping_an_hour_finishes"
    case = wrapped.cases["test_sleeps.test_sleeping_an_hour_finishes"]
    expected = _core.seed_stream(BASE, zlib.crc32(nodeid.encode()))
    assert int(case.properties["askew_seed"]) == expected == _wrap.seed_for_test(BASE, nodeid)


def test_escapes_fail_with_nondeterminism_error_naming_the_call(wrapped: Run) -> None:
    for name, call in ESCAPES.items():
        case = wrapped.cases[name]
        assert case.outcome == "failed"
        assert "NondeterminismError" in case.message
        assert call in case.message


def test_a_deadlock_is_reported_with_the_waiting_tasks(wrapped: Run) -> None:
    case = wrapped.cases[DEADLOCK]
    assert "DeadlockError" in case.message
    assert re.search(r"Task-\d+ waits at .*test_deadlock\.py:\d+ in main\(\)", case.message)
    waits = re.findall(r"(Task-\d+) waits at .*locks\.py:\d+ in acquire\(\)", case.message)
    assert len(set(waits)) == 2, case.message  # both transfers, each on the other's lock


def test_every_wrapped_failure_report_ends_with_its_replay_command(wrapped: Run) -> None:
    failed = wrapped.outcomes("failed", "error")
    assert failed
    sections = re.findall(
        r"-+ askew replay -+\n(.*?)\n(?=_{3,}|={3,}|-{3,}|- generated xml)", wrapped.output, re.S
    )
    assert len(sections) == len(failed)
    for section in sections:
        last = section.strip().splitlines()[-1]
        assert re.fullmatch(rf"replay: ASKEW_SEED={BASE} pytest --askew-wrap \S+::\S+", last)
    for line in ("test_deadlock.py::test_transfer_in_both_directions",
                 "test_escapes.py::test_subprocess_exit_code"):  # fmt: skip
        assert f"ASKEW_SEED={BASE} pytest --askew-wrap {line}" in wrapped.output


def test_a_seed_sweep_reports_each_failing_seed_and_each_replays_alone(tmp_path: Path) -> None:
    nodeid = "test_flaky.py::test_work_beats_its_deadline"
    sweep = run_fixtures(tmp_path, "--askew-wrap", "--askew-seed=11", "--askew-seeds=16", nodeid)
    match = re.search(r"(\d+) of 16 seeds fail this test:", sweep.output)
    assert match, sweep.output
    failing = [int(s) for s in re.findall(r"ASKEW_SEED=(\d+) pytest --askew-wrap", sweep.output)]
    failing = list(dict.fromkeys(failing))
    assert 0 < int(match.group(1)) == len(failing) < 16
    bases = [_wrap.sweep_base(11, i) for i in range(16)]
    assert set(failing) <= set(bases)
    passing = next(b for b in bases if b not in failing)
    replay = run_fixtures(tmp_path, "--askew-wrap", nodeid, env={"ASKEW_SEED": str(failing[0])})
    assert replay.cases[FLAKY].outcome == "failed"
    assert (
        run_fixtures(tmp_path, "--askew-wrap", nodeid, env={"ASKEW_SEED": str(passing)})
        .cases[FLAKY]
        .outcome
        == "passed"
    )


def test_askew_wrap_env_turns_wrapping_on(tmp_path: Path) -> None:
    run = run_fixtures(
        tmp_path, "test_sleeps.py::test_sleeping_an_hour_finishes",
        env={"ASKEW_WRAP": "1", "ASKEW_SEED": "5"},
    )  # fmt: skip
    case = run.cases["test_sleeps.test_sleeping_an_hour_finishes"]
    assert case.outcome == "passed"
    assert float(case.properties["askew_virtual_time"]) >= 3600
    assert "askew: wrapping asyncio event loops on SimLoop, base seed 5" in run.output


def _loop_made_by_asyncio() -> asyncio.AbstractEventLoop:
    with asyncio.Runner() as runner:
        return runner.get_loop()


def test_patches_live_only_inside_installed_and_are_restored_after_an_error() -> None:
    before = (asyncio.new_event_loop, asyncio.Runner.__init__)
    run = _wrap.WrappedRun("t.py::t", base=1)
    with pytest.raises(RuntimeError), _wrap.installed(run):
        assert isinstance(_loop_made_by_asyncio(), askew.SimLoop)
        loop = asyncio.new_event_loop()
        assert isinstance(loop, askew.SimLoop) and loop.seed == run.seed
        loop.close()
        raise RuntimeError("boom")
    assert (asyncio.new_event_loop, asyncio.Runner.__init__) == before
    stock_loop = _loop_made_by_asyncio()
    assert not isinstance(stock_loop, askew.SimLoop)


def test_a_users_loop_factory_is_replaced_by_a_seeded_simloop() -> None:
    run = _wrap.WrappedRun("t.py::t", base=2)
    with _wrap.installed(run), asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        assert runner.run(asyncio.sleep(60, "done")) == "done"
        assert isinstance(runner.get_loop(), askew.SimLoop)
    assert run.virtual_time >= 60


def test_an_askew_loop_factory_is_kept_as_given() -> None:
    run = _wrap.WrappedRun("t.py::t", base=2)
    with _wrap.installed(run), asyncio.Runner(loop_factory=lambda: askew.new_event_loop(99)) as r:
        assert r.get_loop().seed == 99  # type: ignore[attr-defined]
    assert run.loops == []
