# SPDX-License-Identifier: Apache-2.0
"""State over time (askew/_world/states.py): a failure's report lists what
each node holds at the failure and since when, from a re-run that records
it; recording leaves the run's trace as it was; values keep 200 characters;
a passing sweep records nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import askew
from askew._world import states as _states

pytestmark = pytest.mark.usefixtures("clean_env")


async def _member(node: Any, leader: int, at: float) -> None:
    node.leader = None
    node.note = "x" * 150
    await asyncio.sleep(at)
    node.leader = leader


async def _split(world: askew.World) -> None:
    a, b = world.spawn(_member, 3, 1.0), world.spawn(_member, 4, 2.5)
    await world.clock.advance(3)
    assert a.leader == b.leader


def test_the_report_says_what_each_node_holds_and_since_when() -> None:
    with pytest.raises(askew.SimulationFailure) as info:
        askew.Replay.run(_split, seed=5)
    report = info.value.report
    assert "state over time (what each node holds at the failure, since when)" in report
    lines = [line.strip() for line in report.splitlines()]
    one = next(line for line in lines if line.startswith("node 1: leader 4 since 2.5"))
    assert ", was None from 0.0" in one
    assert any(line.startswith("node 0: leader 3 since 1.0") for line in lines)
    # A value keeps its first 200 characters, not 50.
    assert f"node 0: note '{'x' * 150}' since" in report


def test_recording_the_state_leaves_the_trace_as_it_was() -> None:
    hashes: list[int] = []

    async def body(world: askew.World) -> None:
        await _split_quiet(world)
        hashes.append(world._loop.trace_hash)

    askew.Replay.run(body, seed=9)
    changes = askew.Replay.states(body, seed=9)
    assert len(hashes) == 2 and hashes[0] == hashes[1]
    assert [(c.node, c.name, c.value) for c in changes if c.name == "leader"] == [
        (0, "leader", "None"),
        (1, "leader", "None"),
        (0, "leader", "3"),
        (1, "leader", "4"),
    ]


async def _split_quiet(world: askew.World) -> None:
    world.spawn(_member, 3, 1.0)
    world.spawn(_member, 4, 2.5)
    await world.clock.advance(3)


def test_a_passing_sweep_records_no_state(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real = _states.States.__init__

    def spy(self: _states.States, world: Any) -> None:
        made.append(world)
        real(self, world)

    monkeypatch.setattr(_states.States, "__init__", spy)

    @askew.simulate(seed=1, iterations=20)
    async def test(world: askew.World) -> None:
        await _split_quiet(world)

    test()
    assert made == []


def test_states_at_gives_the_value_after_a_step() -> None:
    changes = askew.Replay.states(_split_quiet, seed=9)
    recorded = _states.States.__new__(_states.States)
    recorded.changes = changes
    set_at = next(c.step for c in changes if c.value == "3")
    assert recorded.at(0, "leader", step=set_at - 1) == "None"
    assert recorded.at(0, "leader", step=set_at) == "3"
    assert recorded.at(0, "missing") is None


class _Slotted:
    __slots__ = ("node", "value")

    def __init__(self, node: Any) -> None:
        self.node = node
        self.value = 0

    async def run(self) -> None:
        self.node.seen = 1  # the Node's own attributes still count
        await asyncio.sleep(1)


def test_a_class_node_with_slots_is_recorded_by_its_node_only() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(_Slotted)
        await world.clock.advance(2)

    changes = askew.Replay.states(body, seed=1)
    assert [(c.node, c.name, c.value) for c in changes] == [(0, "seen", "1")]
