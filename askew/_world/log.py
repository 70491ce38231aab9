# SPDX-License-Identifier: Apache-2.0
"""world.log: the run's events as the C loop's log ring keeps them (the
newest LOG_KEPT entries; the trace hash covers them all), each as an Event,
and the run's fault events kept apart however old, for the report."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .. import _core
from .._loop import kinds
from .._loop.kinds import LOG_KEPT
from .._loop.nodes import TOKEN_SHIFT, node_var
from .._loop.text import digest, short_repr
from .._net.tcp import ICMP, UDP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .node import NodeHandle
    from .world import World


FAULTS_KEPT = 1000  # the newest fault events world.log.faults() keeps


class Event(NamedTuple):
    """One entry of world.log: virtual time, kind, node (or None), text."""

    time: float
    kind: str
    node: int | None
    text: str

    def __str__(self) -> str:
        return f"{self.time:>8.3f}s  {self.kind:<7} {self.text}"


class Log:
    """world.log: the recent events of the run, oldest first (the last
    10,000 are kept; the trace hash covers them all)."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._faults: list[Event] = []
        self._faults_seen = 0

    def emit(self, text: str) -> None:
        """Record a user event whose detail is `text` (a str), attributed to
        the running node if any (kind "node"), else to the world ("world")."""
        if not isinstance(text, str):
            raise TypeError(f"log text must be a str, got {type(text).__name__}")
        token = node_var.get(None)
        if token is None:
            self._emit(kinds.WORLD, -1, text)
        else:
            node = token >> TOKEN_SHIFT
            self._emit(kinds.NODE, node, f"{node} {text}")

    def _emit(self, kind: int, node: int, text: str) -> None:
        self._world._check_live()
        self._world._loop._log_emit(kind, node, text, digest(text))
        if kind in kinds.FAULTS:
            self._keep_fault(kind, node, text)

    def recent(self, n: int = LOG_KEPT) -> list[Event]:
        """The newest n events, oldest first."""
        # The loop is reused: after the run, its log is a later run's.
        self._world._check_live()
        return [event_from_entry(e) for e in self._world._loop._log_recent(n)]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.recent())

    def __len__(self) -> int:
        self._world._check_live()
        return min(int(self._world._loop._log_count()), LOG_KEPT)

    @property
    def hash(self) -> int:
        """The run's trace hash so far."""
        self._world._check_live()
        return int(self._world._loop._trace_hash)

    # ---- filtering, and the faults kept apart (askew/_report/report.py reads them) ----

    def events(
        self, *, node: int | NodeHandle | None = None, kind: str | Iterable[str] | None = None
    ) -> list[Event]:
        """The kept events of one `node` and/or of some kinds (`kind`: "net",
        "crash", "fault"..., or several), oldest first; with neither, all of them."""
        wanted = {kind} if isinstance(kind, str) else None if kind is None else set(kind)
        want = None if node is None else self._world._node_id(node, "log.events")
        self._world._check_live()
        events = []
        for entry in self._world._loop._log_recent(LOG_KEPT):
            # A message is the event of both its ends: node and peer.
            ends = (
                (entry[2], entry[3])
                if entry[1] in (kinds.NET_SEND, kinds.NET_DELIVERY)
                else (entry[2],)
            )
            if want is None or want in ends:
                event = event_from_entry(entry)
                if wanted is None or event.kind in wanted:
                    events.append(event)
        return events

    def faults(self) -> list[Event]:
        """The run's fault events (partitions, heals, cuts, link changes,
        crashes, restarts, pauses, skews, buggify firings), oldest first,
        however old: the newest FAULTS_KEPT of them."""
        return list(self._faults)

    @property
    def faults_dropped(self) -> int:
        """How many older fault events faults() no longer holds."""
        return self._faults_seen - len(self._faults)

    def _keep_fault(self, kind: int, node: int, text: str) -> None:
        self._faults_seen += 1
        if len(self._faults) >= FAULTS_KEPT:
            del self._faults[0]
        t = float(self._world._loop._now_ns) / 1e9
        self._faults.append(Event(t, kinds.NAMES[kind], None if node < 0 else node, text))


def _outcome_name(outcome: int) -> str:
    return kinds.OUTCOMES[outcome] if 0 <= outcome < len(kinds.OUTCOMES) else "?"


def event_from_entry(entry: tuple[int, int, int, int, int, object]) -> Event:
    t_ns, kind, node, peer, outcome, detail = entry
    name = kinds.NAMES.get(kind, "event")
    if kind in (kinds.NET_SEND, kinds.NET_DELIVERY) and isinstance(detail, _core.Segment):
        # a segment of the simulated sockets on the C network: a datagram or
        # a port unreachable is UDP's, the rest TCP's
        name = "udp" if detail.kind in (UDP, ICMP) else "tcp"
    if kind == kinds.NET_SEND:
        text = f"{node} -> {peer}  {short_repr(detail)}   {_outcome_name(outcome)}"
    elif kind == kinds.NET_DELIVERY:
        text = f"{peer} -> {node}  {short_repr(detail)}   {_outcome_name(outcome)}"
    else:
        text = str(detail)
    return Event(t_ns / 1e9, name, None if node < 0 else node, text)
