# SPDX-License-Identifier: Apache-2.0
"""State over time: the changes of every node's public attributes
(node.leader = 4, self.term = 7: any attribute whose name does not start
with "_"), recorded after each step, only in runs that ask (a failure's
report, its timeline, Replay.values). After a node's step only that node
is read, after a step of the world every node is; a value is kept as its
repr, cut at VALUE_LIMIT characters, and recorded only when it differs
from the last one. It draws nothing, schedules nothing and logs nothing,
so a run's trace is the same tracked or not. Called by askew/_run/ (it
installs it) and read by askew/_report/ (the report's lines and the
timeline's bands).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._loop.text import short_repr
from .monitors import after_each_step

if TYPE_CHECKING:
    from .world import World

VALUE_LIMIT = 200  # characters of a value's repr kept
# Types whose objects cannot change: one seen again needs no new repr.
_IMMUTABLE = frozenset((int, float, str, bytes, bool, type(None), frozenset))
_NONE = object()


@dataclass(frozen=True)
class Change:
    """Node `node`'s attribute `name` became `value` (its repr) after step
    `step`, at virtual time `t` seconds; that step logged the run's events
    numbered [`events_from`, `events_to`) (what a report shows as the events
    that set the values nodes hold)."""

    step: int
    t: float
    node: int
    name: str
    value: str
    events_from: int = 0
    events_to: int = 0


class States:
    """The changes of one run, in order."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._last: dict[tuple[int, str], str] = {}
        self._held: dict[tuple[int, str], object] = {}  # the object last read
        self.changes: list[Change] = []
        self._logged = 0  # the run's events logged before the step just observed
        after_each_step(world, self._observe)

    def _public(self, node_id: int) -> Iterator[tuple[str, Any]]:
        slot = self._world._slots[node_id]
        for holder in (slot.node, slot.instance):
            attrs = getattr(holder, "__dict__", None)  # none: a class node with __slots__
            if attrs is None:
                continue
            for name, value in list(attrs.items()):
                if not name.startswith("_") and not callable(value):
                    yield name, value

    def _observe(self) -> None:
        w = self._world
        loop = w._loop
        ran = loop._stepped_node
        count = len(w._slots)
        nodes = range(count) if not 0 <= ran < count else (ran,)
        step, t = loop.steps, w.now
        logged_from, logged = self._logged, loop._log_count()
        self._logged = logged
        held = self._held
        for node_id in nodes:
            for name, value in self._public(node_id):
                key = (node_id, name)
                # The same immutable object as last time: unchanged, without a repr.
                if value.__class__ in _IMMUTABLE and held.get(key, _NONE) is value:
                    continue
                held[key] = value
                text = short_repr(value, VALUE_LIMIT)
                if self._last.get(key) != text:
                    self._last[key] = text
                    self.changes.append(Change(step, t, node_id, name, text, logged_from, logged))

    def at(self, node: int, name: str, *, step: int | None = None) -> str | None:
        """The value (its repr) node's attribute had after `step` (None: at
        the end), or None if it had none yet."""
        found = None
        for change in self.changes:
            if step is not None and change.step > step:
                break
            if change.node == node and change.name == name:
                found = change.value
        return found

    def latest(self) -> dict[tuple[int, str], Change]:
        """Each attribute's last change: what it holds at the end, since when."""
        return held_at(self.changes)


def held_at(changes: Sequence[Change], steps: int | None = None) -> dict[tuple[int, str], Change]:
    """Each node attribute's last change up to step `steps` (None: all of
    them): what it holds then, since when."""
    now: dict[tuple[int, str], Change] = {}
    for change in changes:
        if steps is not None and change.step > steps:
            break
        now[(change.node, change.name)] = change
    return now


def track(world: World) -> States:
    """Record world's nodes' state from now on."""
    return States(world)
