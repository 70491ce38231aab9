# SPDX-License-Identifier: Apache-2.0
"""Refusals cannot be swallowed (issue 8, deliver 3, and items 8 and 9).

Every refusal askew makes inside a run is noted before it is raised; if user
code catches it, the run fails anyway at the end of the step, naming the
call, the task and the user's line, once. NondeterminismError is a
SimulationFailure, so `except RuntimeError` and `pytest.raises(RuntimeError)`
never catch it. A run that ended in a refusal leaves no stale stop behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_sim
from test_preload import LIB, _needs_askew, assert_ok, probe_dir, run_python

import askew
from askew import _core
from askew.errors import NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")
__all__ = ["probe_dir"]  # the fixture, shared with test_preload.py

REPO = Path(__file__).resolve().parents[2]
needs_preload = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not LIB.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)


def _line_of(marker: str) -> int:
    """The line of this file that holds `marker` (in a comment), for `at:` checks."""
    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if f"# {marker}" in text]
    assert len(hits) == 1, marker
    return hits[0]


def _start_a_thread() -> None:
    threading.Thread(target=lambda: None, name="helper").start()


def _failure_of(body: Any, **config: Any) -> SimulationFailure:
    config.setdefault("executor", "refuse")  # these claims are about refusing threads
    with pytest.raises(SimulationFailure) as info:
        run_sim(body, **config)
    return info.value


# ---- deliver 3: a caught refusal still fails the run, once ------------------------------


def test_a_caught_refusal_still_fails_the_run_once() -> None:
    went_on: list[float] = []

    async def body(world: askew.World) -> None:
        try:
            threading.Thread(target=lambda: None, name="helper").start()  # caught-thread
        except Exception:
            pass
        went_on.append(world.now)  # the step goes on to its end ...
        await asyncio.sleep(1)  # ... and the run stops there

    failure = _failure_of(body)
    assert type(failure) is NondeterminismError
    # The run ends at the step that was refused: its time, not a second later
    # (twice: the run, and its seed re-run alone before the report).
    assert len(went_on) == 2 and failure.time == went_on[0] == went_on[1] < 0.001
    refusal = failure.__cause__
    assert isinstance(refusal, NondeterminismError)
    assert refusal.task == "Task-1 running body()"
    assert refusal.where == f"{__file__}:{_line_of('caught-thread')} in body()"
    report = str(failure)
    assert report.splitlines()[0].startswith(
        "NondeterminismError: threading.Thread.start() for 'helper' inside a simulation"
    )
    for line in (
        "task: Task-1 running body()",
        f"at: {refusal.where}",
        "caught by the code under test; askew fails the run all the same",
    ):
        assert report.count(line) == 1, (line, report)


def test_a_refusal_that_propagates_fails_the_run_once_with_the_same_exception() -> None:
    loop = askew.new_event_loop(1)

    async def main() -> None:
        _start_a_thread()

    task = loop.create_task(main())
    try:
        with pytest.raises(NondeterminismError) as info:
            loop.run_until_complete(task)
    finally:
        loop.close()
    assert task.exception() is info.value  # one refusal, raised once more by the run
    text = str(info.value)
    assert text.count("task: ") == text.count("at: ") == 1
    assert "caught by" not in text


def test_a_propagated_refusal_is_reported_once_by_the_runner() -> None:
    async def body(world: askew.World) -> None:
        threading.Thread(target=lambda: None).start()  # propagated-thread

    failure = _failure_of(body)
    report = str(failure)
    where = f"at: {__file__}:{_line_of('propagated-thread')} in body()"
    assert report.count(where) == 1 and report.count("task: ") == 1
    assert "caught by" not in report


def test_a_refused_loop_call_caught_by_user_code_fails_the_run() -> None:
    async def body(world: askew.World) -> None:
        try:
            await asyncio.open_connection("127.0.0.1", 9)  # refused-connection
        except Exception:
            pass
        await asyncio.sleep(1)

    failure = _failure_of(body)
    refusal = failure.__cause__
    assert isinstance(refusal, NondeterminismError)
    assert str(refusal).startswith("create_connection('127.0.0.1', 9)")
    # asyncio's own frames (streams.py) are skipped: the line is the user's.
    assert refusal.where == f"{__file__}:{_line_of('refused-connection')} in body()"


def test_a_refusal_caught_in_a_node_names_its_task_and_node() -> None:
    async def worker(node: Any) -> None:
        try:
            _start_a_thread()
        except BaseException:
            pass
        await asyncio.sleep(5)

    async def body(world: askew.World) -> None:
        world.spawn(worker)
        await asyncio.sleep(10)

    refusal = _failure_of(body).__cause__
    assert isinstance(refusal, NondeterminismError)
    assert refusal.task is not None
    assert refusal.task.endswith("running worker() on node 0")


def test_two_refusals_in_one_step_fail_the_run_with_the_first_and_count_the_other() -> None:
    async def body(world: askew.World) -> None:
        for call in (_start_a_thread, lambda: asyncio.get_running_loop().add_reader(0, print)):
            try:
                call()
            except NondeterminismError:
                pass

    text = str(_failure_of(body))
    assert "threading.Thread.start()" in text.splitlines()[0]
    assert "(and 1 more refusal in the same step)" in text


@pytest.mark.skipif(
    _core.preload_active(), reason="under askew-exec the run's timed wait for the thread is refused"
)
def test_a_refusal_noted_on_another_thread_fails_the_run_naming_that_thread() -> None:
    # What the loop's own check (a call from another thread) does: it notes the
    # refusal through the same C function before raising it there.
    go, done = threading.Event(), threading.Event()

    def other() -> None:
        go.wait(timeout=hang_guard(60))
        try:
            _core._note_refusal(NondeterminismError("call_soon() called from another thread"))
        finally:
            done.set()

    async def main() -> None:
        go.set()
        done.wait(timeout=hang_guard(60))  # the other thread notes it during this step
        await asyncio.sleep(1)

    thread = threading.Thread(target=other, name="bystander")
    thread.start()
    try:
        with pytest.raises(NondeterminismError) as info:
            askew.run(main(), seed=2)
    finally:
        go.set()
        thread.join()
    assert "task: none: thread 'bystander', not the simulation's" in str(info.value)
    assert info.value.where is not None and "in other()" in info.value.where


def test_a_refusal_outside_a_run_is_raised_and_forgotten() -> None:
    loop = askew.new_event_loop(3)
    try:
        with pytest.raises(NondeterminismError, match="add_reader"):
            loop.add_reader(0, print)

        async def fine() -> str:
            await asyncio.sleep(1)
            return "ok"

        assert loop.run_until_complete(fine()) == "ok"
    finally:
        loop.close()


# ---- item 9: a refusal is not a RuntimeError -------------------------------------------


def test_except_runtime_error_and_pytest_raises_runtime_error_do_not_catch_a_refusal() -> None:
    assert issubclass(NondeterminismError, SimulationFailure)
    assert not issubclass(NondeterminismError, (RuntimeError, NotImplementedError))
    swallowed: list[str] = []

    async def except_runtime_error() -> None:
        try:
            _start_a_thread()
        except RuntimeError:
            swallowed.append("except RuntimeError")

    async def raises_runtime_error() -> None:
        with pytest.raises(RuntimeError):
            _start_a_thread()
        swallowed.append("pytest.raises(RuntimeError)")

    for main in (except_runtime_error, raises_runtime_error):
        with pytest.raises(NondeterminismError, match=r"Thread\.start"):
            askew.run(main(), seed=5)
    assert swallowed == []


# ---- item 8: no stale stop after a refused run -----------------------------------------


def test_a_refusal_never_carries_into_the_next_run() -> None:
    loop = askew.new_event_loop(4)

    async def refuses() -> None:
        try:
            _start_a_thread()
        except NondeterminismError:
            pass

    async def fine() -> str:
        await asyncio.sleep(0)
        return "ok"

    try:
        with pytest.raises(NondeterminismError):
            loop.run_until_complete(refuses())
        assert loop.run_until_complete(fine()) == "ok"
    finally:
        loop.close()


def test_after_a_refused_run_the_next_run_until_complete_finalizes_async_generators() -> None:
    finalized: list[str] = []
    keep: list[Any] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)
            finalized.append("finally")

    async def main() -> None:
        gen = numbers()
        keep.append(gen)
        await gen.__anext__()
        try:  # the task finishes in the step that refuses: its stop is queued
            _start_a_thread()
        except NondeterminismError:
            pass

    loop = askew.new_event_loop(6)
    try:
        with pytest.raises(NondeterminismError):
            loop.run_until_complete(main())
        loop.run_until_complete(loop.shutdown_asyncgens())
        assert loop.run_until_complete(asyncio.sleep(1, "later")) == "later"
    finally:
        loop.close()
    assert finalized == ["finally"]


_INNER = """
import asyncio, socket
import askew, pytest

closed = []

async def numbers():
    try:
        yield 1
        yield 2
    finally:
        closed.append(True)

def test_a_runner_closes_its_async_generators_after_a_preload_refusal():
    keep = []
    async def main():
        gen = numbers()
        keep.append(gen)
        await gen.__anext__()
        try:
            socket.socket()  # refused by the preload: PermissionError, and recorded
        except OSError:
            pass
    runner = asyncio.Runner(loop_factory=lambda: askew.new_event_loop(7))
    with pytest.raises(askew.NondeterminismError, match=r"socket\\(\\) was refused"):
        runner.run(main())
    runner.close()  # shutdown_asyncgens runs to its end: no stale stop
    assert closed == [True]
"""


@needs_preload
def test_under_askew_exec_a_preload_refusal_does_not_stop_the_next_run_at_once(
    tmp_path: Path,
) -> None:
    _needs_askew()
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(_INNER))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "askew._run.exec", "--"),
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("--rootdir", str(tmp_path), "test_inner.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    for noise in ("destroyed but it is pending", "never retrieved", "Event loop stopped"):
        assert noise not in proc.stdout + proc.stderr


# ---- preload refusals go through the same slot -----------------------------------------


@needs_preload
def test_a_caught_preload_refusal_fails_the_run_once(probe_dir: Path) -> None:
    _needs_askew()
    out = run_python(
        """
import asyncio, json, socket, askew
went_on = []
async def main():
    try:
        socket.socket()  # PermissionError from the preload, caught
    except BaseException:
        pass
    went_on.append(True)
    await asyncio.sleep(1)
try:
    askew.run(main(), seed=8)
    print(json.dumps({"raised": None}))
except askew.NondeterminismError as e:
    print(json.dumps({"raised": str(e), "task": e.task, "where": e.where}))
""",
        pythonpath=probe_dir,
    )
    r = json.loads(assert_ok(out))
    text = r["raised"]
    assert text is not None and text.startswith("socket() was refused inside the simulation")
    assert text.count("socket() was refused") == 1 and text.count("task: ") == 1
    assert r["task"] == "Task-1 running main()"
    assert r["where"] is not None and r["where"].startswith("<string>:")


@needs_preload
def test_a_preload_refusal_seen_only_at_the_end_of_its_step_says_its_line_is_not_known(
    probe_dir: Path,
) -> None:
    # A C callback refuses and returns straight to the loop: no Python frame
    # of the caller's runs before the step's end, where the run fails.
    _needs_askew()
    out = run_python(
        """
import asyncio, askew, _askew_probe as p
async def main():
    asyncio.get_running_loop().call_soon(p.pthread_create)
    await asyncio.sleep(0)
    await asyncio.sleep(1)
try:
    askew.run(main(), seed=9)
except askew.NondeterminismError as e:
    print(str(e))
""",
        pythonpath=probe_dir,
    )
    text = assert_ok(out)
    assert text.startswith("pthread_create() was refused inside the simulation")
    assert "task: none (between callbacks)" in text
    assert "at: not known (no Python code ran between the refused call and the end" in text
