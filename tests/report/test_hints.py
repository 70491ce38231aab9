# SPDX-License-Identifier: Apache-2.0
"""Hints where a new user's slip is common: a world.clock.advance never
awaited, a run whose clock never moved, real files a node wrote outside
any simulated disk, and the replay line of a run under askew-exec."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_sim

import askew
from askew._loop.preload import LIBRARY_NAME


def _report(body: Any, seed: int = 1) -> str:
    with pytest.raises(askew.SimulationFailure) as info:
        run_sim(body, seed=seed)
    return str(info.value.report)  # type: ignore[attr-defined]


async def _listen(node: askew.NodeHandle) -> None:
    node.got = await node.recv(timeout=10)


# ---- an advance never awaited --------------------------------------------------------


def test_an_advance_never_awaited_is_named_with_what_to_write() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(_listen)
        world.clock.advance(30)  # type: ignore[unused-coroutine]
        assert world.now >= 30

    with pytest.warns(RuntimeWarning, match=r"world.clock.advance\(30\) at test_hints.py:\d+ was"):
        text = _report(body)
    assert (
        "  hint: world.clock.advance(30) at test_hints.py:" in text
        and " was never awaited, so no time passed there: write `await world.clock.advance(30)`"
        in text
    )
    assert "the virtual clock never moved" not in text  # one hint says it


def test_an_advance_used_as_a_value_says_to_await_it() -> None:
    async def body(world: askew.World) -> None:
        pending = world.clock.advance(5)
        with pytest.raises(AttributeError, match=r"write `await world.clock.advance\(5\)`"):
            pending.result()  # type: ignore[attr-defined]
        await pending

    run_sim(body)


def test_an_advance_is_a_coroutine_for_tasks_gather_and_wait_for() -> None:
    async def body(world: askew.World) -> None:
        task = asyncio.create_task(world.clock.advance(2))
        await asyncio.gather(task, world.clock.advance(1))
        await asyncio.wait_for(world.clock.advance(1), timeout=5)
        assert world.now >= 3
        with pytest.raises(ValueError, match="advance"):
            world.clock.advance(-1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_sim(body)


# ---- a clock that never moved --------------------------------------------------------


def test_a_failure_whose_clock_never_moved_says_so() -> None:
    async def body(world: askew.World) -> None:
        node = world.spawn(_listen)
        node.send(0, "hello")
        assert getattr(node, "got", None) is not None

    text = _report(body)
    assert "  hint: the virtual clock never moved past the code's own CPU time (t=" in text
    assert "to let time pass, `await world.clock.advance(seconds)`" in text


def test_a_passing_test_whose_clock_never_moved_warns_once() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(_listen)

    with pytest.warns(RuntimeWarning, match="passed, but the virtual clock never moved") as seen:
        askew.simulate(seed=1, iterations=20)(body)()
    assert len([w for w in seen if "never moved" in str(w.message)]) == 1


def test_no_clock_hint_where_time_passed_or_no_node_ran() -> None:
    async def waits(world: askew.World) -> None:
        world.spawn(_listen)
        await world.clock.advance(1)

    async def alone(world: askew.World) -> None:
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_sim(waits)
        run_sim(alone)

    async def fails(world: askew.World) -> None:
        await waits(world)
        raise AssertionError("late")

    assert "never moved" not in _report(fails)


# ---- real files a node wrote ------------------------------------------------------------


def test_the_report_names_real_files_a_node_wrote(tmp_path: Path) -> None:
    real, raw, own = tmp_path / "state.json", tmp_path / "raw.bin", tmp_path / "body.txt"

    async def writer(node: askew.NodeHandle) -> None:
        real.write_text("{}")
        os.close(os.open(raw, os.O_WRONLY | os.O_CREAT))
        assert real.read_text() == "{}"  # reading is no write

    async def body(world: askew.World) -> None:
        own.write_text("the test body's own")
        world.spawn(writer)
        await world.clock.advance(1)
        raise AssertionError("stop")

    text = _report(body)
    assert (
        f"  note: node 0 wrote real files, outside any simulated disk (not part of the "
        f"seed's run: they outlive it; give the node disk=... to simulate them): {real}, {raw}"
    ) in text
    assert str(own) not in text


def test_a_nodes_own_disk_is_no_real_write() -> None:
    async def writer(node: askew.NodeHandle) -> None:
        with open("/data/log", "w") as f:
            f.write("x")

    async def body(world: askew.World) -> None:
        world.spawn(writer, disk="/data")
        await world.clock.advance(1)
        raise AssertionError("stop")

    assert "wrote real files" not in _report(body)


# ---- the replay line under askew-exec ----------------------------------------------------


@pytest.mark.skipif(
    not (Path(askew.__file__).parent / LIBRARY_NAME).is_file(),
    reason="needs the built preload (run `make`)",
)
def test_a_run_under_askew_exec_replays_under_askew_exec(tmp_path: Path) -> None:
    (tmp_path / "test_mod.py").write_text(
        textwrap.dedent(
            """
            import askew

            @askew.simulate(seed=3, iterations=1)
            async def test_fails(world):
                await world.clock.advance(1)
                assert False
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    env.pop("LD_PRELOAD", None)
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mod.py"]
    for argv, replay in (
        (pytest_argv, "ASKEW_SEED=3 ASKEW_ITERATIONS=1 pytest 'test_mod.py::test_fails'"),
        (
            [sys.executable, "-m", "askew._run.exec", "--", *pytest_argv],
            "ASKEW_SEED=3 ASKEW_ITERATIONS=1 askew-exec pytest 'test_mod.py::test_fails'",
        ),
    ):
        proc = subprocess.run(
            argv,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=hang_guard(120),
            check=False,
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"  replay: {replay}\n" in proc.stdout, proc.stdout
