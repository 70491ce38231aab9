# SPDX-License-Identifier: Apache-2.0
"""Stepping back (askew/_run/stepping.py): Replay.run(stop_at=STEP or t=...)
stops a replayed seed after that step, with the world, its nodes and the
locals of the node that ran in scope, the same step in every replay and
without changing the run; `askew replay` does it from the command line and
prints any node attribute at any step; bad stops are refused by value."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import askew
from askew._run import stepping, sweep

pytestmark = pytest.mark.usefixtures("clean_env")


async def _counter(node: Any) -> None:
    node.count = 0
    step_size = 2
    while True:
        await asyncio.sleep(0.5)
        node.count += step_size


async def _two_counters(world: askew.World) -> None:
    a, b = world.spawn(_counter), world.spawn(_counter)
    await world.clock.advance(10)
    assert a.count + b.count < 30, "counted too far"


def _stops(**at: Any) -> list[stepping.Moment]:
    seen: list[stepping.Moment] = []
    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(_two_counters, seed=4, on_stop=seen.append, **at)
    return seen


def test_stop_at_a_step_stops_once_after_that_step_and_the_run_goes_on() -> None:
    with pytest.raises(askew.SimulationFailure) as plain:
        askew.Replay.run(_two_counters, seed=4)
    seen: list[stepping.Moment] = []
    with pytest.raises(askew.SimulationFailure) as stopped:
        askew.Replay.run(_two_counters, seed=4, stop_at=25, on_stop=seen.append)
    assert [m.step for m in seen] == [25]
    assert stopped.value.report == plain.value.report  # the same run, to the same verdict


def test_stop_at_a_time_stops_after_the_first_step_at_or_past_it() -> None:
    (moment,) = _stops(t=4.2)
    assert 4.2 <= moment.t < 4.2 + 0.5
    earlier = _stops(stop_at=moment.step - 1)[0]
    assert earlier.t < 4.2


def test_the_moment_holds_the_world_the_nodes_and_the_node_that_ran() -> None:
    seen: list[tuple[stepping.Moment, float, list[int]]] = []

    def look(moment: stepping.Moment) -> None:
        seen.append((moment, moment.world.now, [n.count for n in moment.nodes]))

    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(_two_counters, seed=4, stop_at=7, on_stop=look)
    ((moment, now, counts),) = seen
    assert now == moment.t and len(moment.nodes) == 2
    assert counts == [2, 2]  # both counted once by step 7 (tested order of seed 4)
    assert moment.node is not None  # a node's step: its coroutine's locals
    assert moment.here["step_size"] == 2
    assert moment.frame is not None and moment.frame.f_code.co_name == "_counter"
    assert f"in node {moment.node.id}, waiting in _counter (" in str(moment)


def test_a_stop_names_the_same_moment_in_every_replay() -> None:
    first, second = _stops(t=7.3)[0], _stops(t=7.3)[0]
    assert (first.step, first.t) == (second.step, second.t)
    assert [n.count for n in first.nodes] == [n.count for n in second.nodes]


def test_the_default_stop_opens_breakpoint_with_the_world_in_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scopes: list[dict[str, Any]] = []
    monkeypatch.setattr(sys, "breakpointhook", lambda: scopes.append(sys._getframe(1).f_locals))
    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(_two_counters, seed=4, stop_at=10)
    (scope,) = scopes
    assert {"world", "nodes", "log", "node", "here", "moment"} <= set(scope)
    assert scope["moment"].step == 10


@pytest.mark.parametrize(
    ("at", "words"),
    [
        ({"stop_at": 0}, "stop_at must be a step number, an int >= 1, got 0"),
        ({"stop_at": 2.5}, "stop_at must be a step number, an int >= 1, got 2.5"),
        ({"t": -1}, "t must be virtual seconds, a finite number >= 0, got -1"),
        ({"t": float("nan")}, "t must be virtual seconds, a finite number >= 0, got nan"),
        ({"stop_at": 3, "t": 1.0}, "give stop_at (a step) or t (seconds), not both"),
    ],
)
def test_a_bad_stop_is_refused_naming_the_value(at: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        askew.Replay.run(_two_counters, seed=4, **at)


def test_parse_at_takes_a_time_or_a_step_and_names_anything_else() -> None:
    assert stepping.parse_at("t=55.04") == (None, 55.04)
    assert stepping.parse_at("step=812") == (812, None)
    for bad in ("55", "t=", "x=3", "step=2.5"):
        with pytest.raises(ValueError, match=f"--at must be t=SECONDS or step=N .*got {bad!r}"):
            stepping.parse_at(bad)


_TEST = textwrap.dedent(
    """
    import asyncio, askew

    async def counter(node):
        node.count = 0
        while True:
            await asyncio.sleep(0.5)
            node.count += 2

    @askew.simulate(seed=4, iterations=1)
    async def test_counters(world):
        a, b = world.spawn(counter), world.spawn(counter)
        await world.clock.advance(10)
        assert a.count + b.count < 30, "counted too far"
    """
)


def test_askew_replay_prints_an_attribute_over_the_run_and_at_an_instant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "test_c.py").write_text(_TEST)
    monkeypatch.chdir(tmp_path)
    test_id = "test_c.py::test_counters"
    assert sweep.main(["replay", test_id, "--seed", "4", "--print", "count", "--node", "1"]) == 0
    changes = capsys.readouterr().out.splitlines()
    assert changes[0].endswith("node 1: count = 0")
    assert changes[1].endswith("node 1: count = 2")
    assert all("node 1:" in line for line in changes)
    assert sweep.main(["replay", test_id, "--seed", "4", "--at", "t=3.0", "--print", "count"]) == 1
    out = capsys.readouterr().out
    assert "stopped after step" in out and "node 0: count = " in out and "node 1: count = " in out
    assert "the run failed: " in out and "counted too far" in out
    assert sweep.main(["replay", test_id, "--seed", "4", "--at", "soon"]) == 2
    assert "--at must be t=SECONDS or step=N" in capsys.readouterr().err
