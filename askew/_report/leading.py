# SPDX-License-Identifier: Apache-2.0
"""The events that led to a failure: for each value a node holds at the
failure (askew/_world/states.py), the event of the step that set it. A
report's tail of recent events often begins after them (the quickstart's
leaders were chosen seconds before its assertion), so the report shows
these beside the tail, each marked with the value it set. It reads a run's
kept log and its recorded changes, nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._world.log import Event
from .._world.states import Change, held_at

LEADING_SHOWN = 8  # values whose setting event a report shows


def _chosen(held: dict[tuple[int, str], Change]) -> list[Change]:
    """The values worth an event, at most LEADING_SHOWN: first those of an
    attribute the nodes disagree on at the failure (a split, the likely
    subject of the assertion), then the latest set."""
    values: dict[str, set[str]] = {}
    for (_node, name), change in held.items():
        values.setdefault(name, set()).add(change.value)
    ranked = sorted(held.values(), key=lambda c: (len(values[c.name]) < 2, -c.step))
    return ranked[:LEADING_SHOWN]


def _setting_event(change: Change, events: Sequence[Event], first: int) -> int | None:
    """The number of the event that set `change`: what its node received in
    that step, else the first thing the step logged for it (a claim sent
    on a timeout), else the node's last event before the step. None when
    the kept log no longer holds it."""
    lo, hi = max(change.events_from, first), min(change.events_to, first + len(events))
    mine = [k for k in range(lo, hi) if events[k - first].node == change.node]
    received = [k for k in mine if events[k - first].text.endswith("delivered")]
    if received:
        return received[-1]
    if mine:  # its first message that went out, else its first event
        sent = [k for k in mine if "dropped" not in events[k - first].text]
        return (sent or mine)[0]
    for k in range(min(change.events_from, first + len(events)) - 1, first - 1, -1):
        if events[k - first].node == change.node:
            return k
    return None


def leading_events(
    changes: Sequence[Change] | None, steps: int, events: Sequence[Event], first: int
) -> dict[int, list[str]]:
    """Event number -> the values it set ("node 2: leader 4"), for the
    values nodes hold at the failure (after step `steps`). `events` are
    the run's kept events up to its verdict, the first numbered `first`."""
    if not changes:
        return {}
    marks: dict[int, list[str]] = {}
    for change in sorted(_chosen(held_at(changes, steps)), key=lambda c: (c.node, c.name)):
        k = _setting_event(change, events, first)
        if k is not None:
            marks.setdefault(k, []).append(f"node {change.node}: {change.name} {change.value}")
    return marks
