# SPDX-License-Identifier: Apache-2.0
"""The events that led to a failure and the nearest passing seed
(askew/_report/leading.py, report.neighbour_lines): a report shows the
event that set each value nodes hold at the failure, however far before
the tail it was; a failure in a sweep is compared with the nearest seed of
the sweep that passed, and its timeline says the same."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

import askew
from askew._report.leading import LEADING_SHOWN, leading_events
from askew._world.log import Event
from askew._world.states import Change

pytestmark = pytest.mark.usefixtures("clean_env")


async def _keeper(node: Any) -> None:
    """Holds the first value it receives and never lets go."""
    node.value = None
    msg = await node.recv()
    node.value = msg.payload


async def _chatter(node: Any, peer: int) -> None:
    for k in range(40):  # far more events than a report's tail shows
        await node.send(peer, ("noise", k))
        await asyncio.sleep(0.1)


async def _sender(node: Any, to: int, payload: Any, at: float) -> None:
    await asyncio.sleep(at)
    await node.send(to, payload)


async def _early_value(world: askew.World) -> None:
    keeper = world.spawn(_keeper)
    world.spawn(_chatter, 2)
    world.spawn(_chatter, 1)
    world.spawn(_sender, 0, "stale", 0.5)
    await world.clock.advance(10)
    assert keeper.value == "fresh"


def test_the_event_that_set_a_held_value_shows_though_the_tail_began_after_it() -> None:
    with pytest.raises(askew.SimulationFailure) as info:
        askew.Replay.run(_early_value, seed=3)
    report = info.value.report
    events = report.split("recent events")[1].split("\n\n")[0]
    lines = events.splitlines()
    marked = [line for line in lines if "[sets node 0: value 'stale']" in line]
    assert len(marked) == 1, events
    assert "'stale'" in marked[0] and "delivered" in marked[0]
    # It is older than the tail: a gap separates it from the newest events.
    tail_start = lines.index(marked[0]) + 1
    assert lines[tail_start].strip() == "...", events
    assert "assert 'stale' == 'fresh'" in lines[-1], events


def _change(step: int, node: int, name: str, value: str, span: tuple[int, int]) -> Change:
    return Change(step, step / 10, node, name, value, *span)


def _ev(node: int | None, text: str) -> Event:
    return Event(0.0, "net", node, text)


def test_the_setting_event_is_what_the_step_received_else_what_it_sent_else_the_one_before() -> (
    None
):
    events = [
        _ev(1, "0 -> 1  'a'   delivered"),  # 10
        _ev(2, "2 -> 0  'x'   dropped: partitioned"),  # 11: node 2's step, dropped first
        _ev(2, "2 -> 1  'x'   sent"),  # 12
        _ev(1, "1 -> 0  'b'   sent"),  # 13: node 1's step sends, then receives
        _ev(1, "2 -> 1  'x'   delivered"),  # 14
    ]
    changes = [
        _change(1, 2, "leader", "2", (11, 13)),  # a timeout's claim: its first message out
        _change(2, 1, "leader", "2", (13, 15)),  # what the step received
        _change(3, 0, "seen", "1", (15, 15)),  # nothing logged in its step: node 0 had none
        _change(4, 3, "v", "1", (2, 5)),  # its step is older than the kept log
    ]
    marks = leading_events(changes, 10, events, 10)
    assert marks == {12: ["node 2: leader 2"], 14: ["node 1: leader 2"]}
    # A node's last event before its step, when the step logged none of its own.
    changes.append(_change(5, 1, "count", "7", (15, 15)))
    assert leading_events(changes, 10, events, 10)[14] == ["node 1: count 7", "node 1: leader 2"]
    # Only values held at the failure (after step 1: node 2's claim).
    assert leading_events(changes, 1, events, 10) == {12: ["node 2: leader 2"]}


def test_values_the_nodes_disagree_on_come_first() -> None:
    events = [_ev(n % 3, f"e{n} delivered") for n in range(40)]
    # 3 nodes, one attribute they agree on (changed last) and one they do not.
    changes = [_change(k, k % 3, "split", str(k % 3), (k, k + 1)) for k in range(3)]
    changes += [_change(10 + k, k % 3, f"same{k}", "1", (10 + k, 11 + k)) for k in range(12)]
    marks = leading_events(changes, 99, events, 0)
    shown = [m for ms in marks.values() for m in ms]
    assert len(shown) == LEADING_SHOWN
    assert {"node 0: split 0", "node 1: split 1", "node 2: split 2"} <= set(shown)


async def _flaky(world: askew.World) -> None:
    """Fails on the seeds whose draw is odd: a node's value tells which."""
    node = world.spawn(_keeper)
    world.spawn(_sender, 0, world.random.randrange(4), 1.0)
    await world.clock.advance(2)
    assert node.value % 2 == 0


def test_a_failure_in_a_sweep_names_the_nearest_passing_seed_and_how_it_differs(
    tmp_path: Path,
) -> None:
    test = askew.simulate(seed=11, iterations=200)(_flaky)
    os.environ["ASKEW_TIMELINE"] = str(tmp_path)
    try:
        with pytest.raises(askew.SimulationFailure) as info:
            test()
    finally:
        del os.environ["ASKEW_TIMELINE"]
    failure = info.value
    report = failure.report
    iteration = failure.iteration
    section = report.split("nearest passing seed")[1].split("\n\n")[0]
    nearest = iteration - 1 if iteration else 1
    assert section.startswith(f" (iteration {nearest}, seed="), section
    lines = section.splitlines()
    held = next(line for line in lines if line.strip().startswith("node 0: value"))
    here, there = held.split(": value ")[1].split(" here, ")
    assert int(here) % 2 == 1 and int(there.removesuffix(" there")) % 2 == 0
    assert "first different event" in section or "the same events, then" in section
    # Its seed passes: replayed alone it raises nothing.
    seed = int(section.split("seed=")[1].split(")")[0])
    askew.Replay.run(_flaky, seed=seed)
    # The timeline names it too.
    page = next(tmp_path.iterdir()).read_text()
    assert "<pre id=compared>nearest passing seed" in page


def test_no_comparison_when_no_seed_nearby_passes_nor_for_a_single_seed() -> None:
    async def always(world: askew.World) -> None:
        node = world.spawn(_keeper)
        await world.clock.advance(1)
        assert node.value == "never"

    with pytest.raises(askew.SimulationFailure) as info:
        askew.simulate(seed=1, iterations=5)(always)()
    assert info.value.iteration == 0
    assert "nearest passing seed" not in info.value.report
    with pytest.raises(askew.SimulationFailure) as info:
        askew.Replay.run(_flaky, seed=_failing_seed())
    assert "nearest passing seed" not in info.value.report


def _failing_seed() -> int:
    with pytest.raises(askew.SimulationFailure) as info:
        askew.simulate(seed=11, iterations=200)(_flaky)()
    return info.value.seed
