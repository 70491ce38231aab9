# SPDX-License-Identifier: Apache-2.0
"""Wrap mode: an unmodified asyncio suite, run stock and under --askew-wrap.

tests/wrap_fixtures/ is a user's suite (asyncio.run, Runner,
IsolatedAsyncioTestCase, pytest-asyncio, anyio, a deadlock, escapes,
executor work, a test that depends on FIFO order), plus two files run only
by path: sweep_cases.py (for --askew-seeds) and many_failures.py (hundreds
of failures, to time reports by hand). Each run is a child pytest with a
junit report; the claims are about outcomes, seeds, virtual time and report
text. Wall-clock time is never asserted; the subprocess timeout only guards
against a hang.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard

import askew
from askew import _core
from askew._run import wrap as _wrap

FIXTURES = Path(__file__).resolve().parents[1] / "wrap_fixtures"
HANG_GUARD_S = hang_guard(300)
BASE = 3

ESCAPES = {
    "test_escapes.test_echo_over_a_real_socket": "sock_sendall()",
    "test_escapes.test_subprocess_exit_code": "subprocess_exec(",
}
# Executor work that waits, from its "thread", for the loop: what each
# failure must name (the waits, and the call back into the loop).
WAITS_ON_LOOP = {
    "test_threads.test_worker_runs_a_coroutine_on_the_loop_and_waits": (
        "in Future.result()",
        "after call_soon_threadsafe(run_coroutine_threadsafe.<locals>.callback)",
    ),
    "test_threads.test_worker_calls_back_into_the_loop_and_waits": (
        "in Event.wait()",
        "after call_soon_threadsafe(Event.set) in test_worker_calls_back_into_the_loop",
    ),
    "test_threads.test_worker_uses_anyio_from_thread_run": (
        "in Future.result()",
        "anyio/from_thread.py",
    ),
}
# What runs on the run's deterministic threads (wrap mode's default executor):
# a thread the test starts, and executor work that waits for the loop.
THREADED = ("test_escapes.test_background_thread_sets_an_event", *WAITS_ON_LOOP)
# pytest's subtests fixture is new in pytest 9; unittest's subTest is older.
SUBTEST_KINDS = ("pytest", "unittest") if hasattr(pytest, "Subtests") else ("unittest",)
INLINE = (
    "test_threads.test_blocking_work_in_to_thread",
    "test_threads.test_blocking_work_in_the_default_executor",
)
DEADLOCK = "test_deadlock.test_transfer_in_both_directions"
FLAKY = "test_flaky.test_workers_alternate"
RACE = "test_deadline_race.test_work_beats_its_deadline"
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
    if not junit.exists():  # pytest stopped before running anything: a usage error
        return Run(proc.returncode, proc.stdout + proc.stderr, cases)
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
    # RACE races real time on the stock loop: a loaded machine may fail it.
    assert stock.outcomes("failed", "error") - {RACE} == set(), stock.output
    assert set(ESCAPES) <= stock.outcomes("passed")


def test_wrapped_tests_pass_where_stock_ones_do_except_escapes(stock: Run, wrapped: Run) -> None:
    expected_to_differ = {*ESCAPES, RACE}  # RACE: seed-dependent, by design
    stock_passed = stock.outcomes("passed") - expected_to_differ
    assert stock_passed <= wrapped.outcomes("passed"), wrapped.output
    assert wrapped.outcomes("skipped") == stock.outcomes("skipped")
    failing = wrapped.outcomes("failed", "error") - {RACE}
    assert failing == {*ESCAPES, DEADLOCK} - stock.outcomes("skipped"), failing


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


def _sweep_16_seeds(tmp_path: Path, options: tuple[str, str], nodeid: str) -> list[int]:
    """Sweep `nodeid` over 16 base seeds from 11; check that some but not all
    fail, each listed once with a replay that carries options[1]; return
    the failing base seeds."""
    sweep = run_fixtures(tmp_path, *options, "--askew-seed=11", "--askew-seeds=16", nodeid)
    match = re.search(r"(\d+) of 16 seeds fail this test:", sweep.output)
    assert match, sweep.output
    replays = re.findall(r"ASKEW_SEED=(\d+) pytest --askew-wrap (\S+) (\S+)", sweep.output)
    assert {(option, node) for _, option, node in replays} == {(options[1], nodeid)}
    failing = list(dict.fromkeys(int(seed) for seed, _, _ in replays))
    assert 0 < int(match.group(1)) == len(failing) < 16
    return failing


def test_a_seed_sweep_reports_each_failing_seed_and_each_replays_alone(tmp_path: Path) -> None:
    # FLAKY depends on asyncio's order, so only a strategy that leaves it fails.
    nodeid = "test_flaky.py::test_workers_alternate"
    options = ("--askew-wrap", "--askew-strategy=interleave")
    failing = _sweep_16_seeds(tmp_path, options, nodeid)
    bases = [_wrap.sweep_base(11, i) for i in range(16)]
    assert set(failing) <= set(bases)
    passing = next(b for b in bases if b not in failing)
    replay = run_fixtures(tmp_path, *options, nodeid, env={"ASKEW_SEED": str(failing[0])})
    assert replay.cases[FLAKY].outcome == "failed"
    again = run_fixtures(tmp_path, *options, nodeid, env={"ASKEW_SEED": str(passing)})
    assert again.cases[FLAKY].outcome == "passed"


def test_a_faithful_sweep_finds_a_timing_race_in_some_seeds_and_each_replays(
    tmp_path: Path,
) -> None:
    # RACE races a deadline against its own CPU time, as a test that is
    # flaky on slow machines does: under faithful some seeds lose, and a knob
    # that differs from its default comes back in every replay command.
    nodeid = "test_deadline_race.py::test_work_beats_its_deadline"
    options = ("--askew-wrap", "--askew-cpu=0.0,2.1e-05")
    failing = _sweep_16_seeds(tmp_path, options, nodeid)
    replay = run_fixtures(tmp_path, *options, nodeid, env={"ASKEW_SEED": str(failing[0])})
    assert replay.cases[RACE].outcome == "failed"
    assert "TimeoutError" in replay.cases[RACE].message


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


# ---- options: seeds, strategy, knobs, executor -------------------------------------


def test_a_test_relying_on_asyncio_order_passes_every_seed_under_the_default_strategy(
    tmp_path: Path,
) -> None:
    run = run_fixtures(tmp_path, "--askew-wrap", "--askew-seeds=16", "test_flaky.py")
    assert run.cases[FLAKY].outcome == "passed", run.output
    assert "16 seeds per test, strategy faithful" in run.output


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--askew-iterations=16",), {}),
        ((), {"ASKEW_ITERATIONS": "16"}),
        ((), {"ASKEW_SEEDS": "16"}),
    ],
)
def test_askew_iterations_and_askew_seeds_env_run_that_many_seeds_per_wrapped_test(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    run = run_fixtures(
        tmp_path, "--askew-wrap", "--askew-strategy=interleave", "--askew-seed=11", *args,
        "test_flaky.py", env=env,
    )  # fmt: skip
    assert "16 seeds per test" in run.output
    assert re.search(r"\d+ of 16 seeds fail this test:", run.output), run.output


def test_askew_seeds_wins_over_iterations_for_wrapped_tests(tmp_path: Path) -> None:
    run = run_fixtures(
        tmp_path, "--askew-wrap", "--askew-seeds=2", "--askew-iterations=16", "test_flaky.py"
    )
    assert "2 seeds per test" in run.output


def run_sweep(tmp_path: Path, *args: str, fail: bool = False) -> tuple[Run, list[str]]:
    log = tmp_path / "sweep.log"
    log.unlink(missing_ok=True)
    env = {"SWEEP_LOG": str(log), "SWEEP_FAIL": "1" if fail else "0"}
    run = run_fixtures(
        tmp_path, "-v", "--askew-wrap", "--askew-seeds=3", "sweep_cases.py", "test_runners.py",
        *args, env=env,
    )  # fmt: skip
    return run, log.read_text().splitlines()


def test_askew_seeds_reruns_only_tests_that_ran_on_an_askew_loop(tmp_path: Path) -> None:
    run, log = run_sweep(tmp_path)
    assert run.returncode == 0, run.output
    assert log.count("synchronous") == 1
    assert log.count("on_a_loop") == log.count("unittest_subtests") == 3
    # The module fixture outlives the sweeps and is torn down once, by the
    # synchronous test's single run, before the next module runs.
    assert log.count("module_setup") == log.count("module_teardown") == 1
    assert log[-1] == "module_teardown"


def test_askew_seeds_shows_each_subtest_once(tmp_path: Path) -> None:
    run, _ = run_sweep(tmp_path)
    for kind in SUBTEST_KINDS:
        for i in range(3):
            shown = re.findall(rf"SUBPASSED\[{kind}\] \(i={i}\)", run.output)
            assert len(shown) == 1, run.output


def test_askew_seeds_counts_a_failing_subtest_once_and_lists_its_failing_seeds(
    tmp_path: Path,
) -> None:
    run, _ = run_sweep(tmp_path, fail=True)
    for kind in SUBTEST_KINDS:
        # once as the test runs, once in the short summary
        assert len(re.findall(rf"SUBFAILED\[{kind}\] \(i=1\)", run.output)) == 2, run.output
    if "pytest" in SUBTEST_KINDS:
        assert "contains 1 failed subtest" in run.output
    assert run.output.count("3 of 3 seeds fail this test:") == len(SUBTEST_KINDS)


def test_wrap_options_reach_every_wrapped_loop(tmp_path: Path) -> None:
    hour = "test_sleeps.py::test_sleeping_an_hour_finishes"
    timed = run_fixtures(tmp_path, "--askew-wrap", "--askew-max-time=60", hour)
    message = timed.cases["test_sleeps.test_sleeping_an_hour_finishes"].message
    assert "BudgetExceeded" in message and "max_time=60s" in message
    ticks = "test_sleeps.py::test_a_day_of_periodic_ticks"
    stepped = run_fixtures(tmp_path, "--askew-wrap", "--askew-max-steps=100", ticks)
    message = stepped.cases["test_sleeps.test_a_day_of_periodic_ticks"].message
    assert "BudgetExceeded" in message and "max_steps=100" in message
    spans = run_fixtures(
        tmp_path, "--askew-wrap", "--askew-cpu=0,1e-5", "--askew-overshoot=1e-6,2e-6",
        "test_deadlock.py",
    )  # fmt: skip
    assert "(--askew-cpu=0.0,1e-05 --askew-overshoot=1e-06,2e-06)" in spans.output
    assert "--askew-cpu=0.0,1e-05 --askew-overshoot=1e-06,2e-06 test_deadlock.py::" in (
        spans.output
    )


def test_askew_executor_refuse_refuses_executor_work_naming_it(tmp_path: Path) -> None:
    run = run_fixtures(tmp_path, "--askew-wrap", "--askew-executor=refuse", "test_threads.py")
    for name in INLINE:
        assert run.cases[name].outcome == "failed"
        assert "NondeterminismError: run_in_executor(" in run.cases[name].message
    message = run.cases["test_threads.test_blocking_work_in_to_thread"].message
    assert "run_in_executor(sum)" in message  # to_thread's partial, unwrapped


def test_replay_commands_carry_the_options_the_failure_ran_with(tmp_path: Path) -> None:
    options = ("--askew-strategy=shuffle", "--askew-max-steps=5000", "--askew-executor=refuse")
    first = run_fixtures(tmp_path, "--askew-wrap", "--askew-seed=4", *options, "test_deadlock.py")
    expected = f"ASKEW_SEED=4 pytest --askew-wrap {' '.join(options)} test_deadlock.py::"
    assert expected in first.output
    line = next(ln for ln in first.output.splitlines() if ln.startswith("replay: "))
    env_word, *words = shlex.split(line.removeprefix("replay: "))
    assert words[:2] == ["pytest", "--askew-wrap"]
    again = run_fixtures(tmp_path, *words[1:], env=dict([env_word.split("=")]))
    assert again.cases[DEADLOCK].message == first.cases[DEADLOCK].message


def test_a_wrapped_replay_quotes_only_the_words_the_shell_needs_quoted() -> None:
    config = dataclasses.replace(_wrap.WRAP_DEFAULTS, strategy="fifo")
    run = _wrap.WrappedRun("tests/test_x.py::test_y[a b]", 5, config)
    assert run.replay == (
        "ASKEW_SEED=5 pytest --askew-wrap --askew-strategy=fifo 'tests/test_x.py::test_y[a b]'"
    )
    assert shlex.split(run.replay)[-1] == "tests/test_x.py::test_y[a b]"
    plain = _wrap.WrappedRun("t.py::test_z", 5)
    assert plain.replay == "ASKEW_SEED=5 pytest --askew-wrap t.py::test_z"


def test_failures_under_interleave_or_shuffle_say_asyncio_may_not_produce_the_order(
    tmp_path: Path,
) -> None:
    note = "can run callbacks in an order asyncio cannot produce"
    for strategy in ("interleave", "shuffle"):
        run = run_fixtures(
            tmp_path, "--askew-wrap", f"--askew-strategy={strategy}", "--askew-seeds=16",
            "test_flaky.py",
        )  # fmt: skip
        assert run.cases[FLAKY].outcome == "failed"
        assert f"note: strategy {strategy!r} {note}" in run.output
    for strategy in ("faithful", "fifo"):
        run = run_fixtures(
            tmp_path, "--askew-wrap", f"--askew-strategy={strategy}", "test_deadlock.py"
        )
        assert run.cases[DEADLOCK].outcome == "failed"
        assert note not in run.output


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (("--askew-strategy=random",), {}, "--askew-strategy must be one of faithful, fifo, "),
        (("--askew-cpu=5",), {}, "--askew-cpu must be LO,HI in seconds"),
        (("--askew-overshoot=2,1",), {}, "'2,1'"),
        (("--askew-max-steps=0",), {}, "--askew-max-steps must be >= 1, got '0'"),
        (("--askew-max-time=never",), {}, "--askew-max-time must be a number of seconds > 0"),
        (("--askew-executor=thread",), {}, "--askew-executor must be one of refuse, inline"),
        (("--askew-seeds=0",), {}, "--askew-seeds must be >= 1, got '0'"),
        (("--askew-seed=-1",), {}, "--askew-seed must be in [0, 2**64), got '-1'"),
        ((), {"ASKEW_STRATEGY": "random"}, "ASKEW_STRATEGY must be one of faithful"),
        ((), {"ASKEW_CPU": "1e-5"}, "ASKEW_CPU must be LO,HI in seconds"),
        ((), {"ASKEW_SEEDS": "many"}, "ASKEW_SEEDS must be a positive integer, got 'many'"),
        ((), {"ASKEW_SEED": "-1"}, "ASKEW_SEED must be in [0, 2**64), got '-1'"),
        ((), {"ASKEW_WRAP": "yes please"}, "ASKEW_WRAP must be 0 or 1, got 'yes please'"),
    ],
)
def test_bad_wrap_settings_are_a_usage_error_naming_the_value(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    wrap = () if "ASKEW_WRAP" in env else ("--askew-wrap",)
    run = run_fixtures(tmp_path, *wrap, *args, "test_flaky.py", env=env)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.output
    assert named in run.output
    assert "INTERNALERROR" not in run.output and "Traceback" not in run.output


@pytest.mark.parametrize(("args", "env"), [(("--askew-seeds=2",), {}), ((), {"ASKEW_SEEDS": "2"})])
def test_seed_sweeps_without_wrap_mode_are_a_usage_error(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    run = run_fixtures(tmp_path, *args, "test_flaky.py", env=env)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--askew-seeds (ASKEW_SEEDS) applies to wrapped tests: add --askew-wrap" in run.output


def test_a_bad_knob_without_wrap_mode_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    run = run_fixtures(tmp_path, "test_flaky.py", env={"ASKEW_STRATEGY": "random"})
    assert run.returncode == pytest.ExitCode.USAGE_ERROR
    assert "ASKEW_STRATEGY must be one of faithful, fifo, interleave, shuffle" in run.output


# ---- executor work -------------------------------------------------------------------


def test_wrap_runs_threads_and_executor_work_on_deterministic_threads_by_default(
    wrapped: Run,
) -> None:
    assert "executor threads" in wrapped.output
    for name in (*INLINE, *THREADED):
        case = wrapped.cases[name]
        assert case.outcome in ("passed", "skipped"), case.message  # skipped: no anyio


def test_inline_executor_work_waiting_on_the_loop_fails_naming_the_wait_instead_of_hanging(
    tmp_path: Path,
) -> None:
    inline = run_fixtures(tmp_path, "--askew-wrap", "--askew-executor=inline", "test_threads.py")
    assert "executor inline" in inline.output
    for name in INLINE:
        assert inline.cases[name].outcome == "passed", inline.cases[name].message
    for name, named in WAITS_ON_LOOP.items():
        case = inline.cases[name]
        if case.outcome == "skipped":  # anyio not installed
            continue
        assert case.outcome == "failed"
        assert "NondeterminismError: executor work " in case.message
        assert "so this would hang" in case.message
        for text in named:
            assert text in case.message, case.message


async def _answer() -> int:
    await asyncio.sleep(0.01)
    return 42


def test_inline_work_may_call_back_into_the_loop_when_it_does_not_wait() -> None:
    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        got: list[int] = []
        await asyncio.to_thread(lambda: loop.call_soon_threadsafe(got.append, 1))
        await asyncio.sleep(0)
        return got

    assert askew.run(main(), seed=1, executor="inline") == [1]


def test_inline_work_may_poll_without_blocking() -> None:
    async def main() -> bool:
        done = threading.Event()
        return await asyncio.to_thread(done.wait, 0)

    assert askew.run(main(), seed=1, executor="inline") is False


def test_a_wait_on_the_loop_in_inline_work_raises_and_leaves_condition_wait_as_it_was() -> None:
    wait = threading.Condition.wait

    async def main() -> int:
        loop = asyncio.get_running_loop()
        future = asyncio.run_coroutine_threadsafe(_answer(), loop)
        return await asyncio.to_thread(future.result, 5)  # a timed wait hangs as long

    with pytest.raises(askew.NondeterminismError, match=r"(?s)in Future.result\(\).*5"):
        askew.run(main(), seed=1, executor="inline")
    assert threading.Condition.wait is wait


# ---- failure reports ---------------------------------------------------------------


def _error_through_asyncio() -> pytest.ExceptionInfo[ZeroDivisionError]:
    async def divide() -> float:
        await asyncio.sleep(0)
        return 1 / 0

    with pytest.raises(ZeroDivisionError) as excinfo:
        asyncio.run(divide())
    return excinfo


def test_a_source_the_parser_fails_on_shows_its_one_line_instead_of_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPython 3.11 can raise SystemError ("AST constructor recursion depth
    mismatch") parsing a deep file; a wrapped websockets run lost 455 tests
    to the INTERNALERROR that made. The cache shows the failing line."""
    from _pytest._code import code, source

    from askew._run.wrapplugin import _StatementCache

    real = source.getstatementrange_ast

    def broken(lineno: int, source: Any, assertion: bool = False, astnode: Any = None) -> Any:
        if astnode is None and "def _error_through_asyncio" in str(source):  # this file's parse
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")
        return real(lineno, source, assertion, astnode)

    error = _error_through_asyncio()
    with monkeypatch.context() as patch:  # undone before any report of this test
        patch.setattr(source, "getstatementrange_ast", broken)
        patch.setattr(code, "getstatementrange_ast", broken)
        cache = _StatementCache()
        cache.install()
        try:
            report = str(error.getrepr())
        finally:
            cache.uninstall()
    assert "return 1 / 0" in report and "ZeroDivisionError" in report, report


def test_failure_reports_read_the_same_and_parse_each_source_once_per_session() -> None:
    from _pytest._code import code, source

    from askew._run.wrapplugin import _StatementCache

    original = source.getstatementrange_ast
    errors = [_error_through_asyncio() for _ in range(3)]
    plain = [str(e.getrepr()) for e in errors]
    cache = _StatementCache()
    cache.install()
    try:
        assert code.getstatementrange_ast is not original  # else pytest changed under us
        first = str(errors[0].getrepr())
        parsed = cache.parsed
        rest = [str(e.getrepr()) for e in errors[1:]]
    finally:
        cache.uninstall()
    assert [first, *rest] == plain
    assert parsed >= 2  # this file and asyncio's
    assert cache.parsed == parsed
    assert source.getstatementrange_ast is code.getstatementrange_ast is original


def test_formatted_failures_leave_no_parsed_module_behind() -> None:
    """The session keeps each module's statement lines, not its AST: a
    large module's AST is some 100,000 objects every collection walks, and
    a suite that collects after each test (aiohttp's) paid for them at
    every test once a failure had been formatted."""
    import ast
    import gc

    from askew._run.wrapplugin import _StatementCache

    def parsed_nodes() -> int:
        gc.collect()
        return sum(isinstance(o, ast.AST) for o in gc.get_objects())

    errors = [_error_through_asyncio() for _ in range(3)]
    cache = _StatementCache()
    cache.install()
    try:
        before = parsed_nodes()
        for error in errors:
            str(error.getrepr())
        assert cache.parsed >= 2  # this file and asyncio's, parsed once each
        assert parsed_nodes() - before < 100  # none of their nodes kept
    finally:
        cache.uninstall()


@pytest.mark.parametrize("module", ["asyncio.base_events", "inspect"])
def test_the_statement_lines_are_the_ones_pytest_finds(module: str) -> None:
    """Where pytest keeps no memo of them (before 9.2), the cache finds the
    lines itself and hands pytest a node of one `pass` a line: the ranges
    of every line of a large module are the ones a parse gives."""
    import ast
    import importlib
    import inspect

    from _pytest._code import source

    from askew._run import wrapplugin

    text = inspect.getsource(importlib.import_module(module))
    tree = ast.parse(text)
    memo = getattr(source, "_statement_linenos", None)
    if memo is not None:
        assert wrapplugin._statement_lines(tree) == memo(ast.parse(text))
    original = source.getstatementrange_ast
    walked = wrapplugin._StatementCache()._wrap(original, None)
    parsed = source.Source(text)
    lines = range(0, len(parsed.lines), 29)
    want = [original(n, parsed, False, tree)[1:] for n in lines]
    assert [walked(n, parsed)[1:] for n in lines] == want
