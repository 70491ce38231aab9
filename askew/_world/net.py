# SPDX-License-Identifier: Apache-2.0
"""world.net and world.partition: cuts between nodes (partitions, one-way
cuts, isolation) and the link model (latency, loss, duplication), globally
or per link. Every change is a fault call the shrinker may suppress, and an
event of the log."""

from __future__ import annotations

from .._loop import kinds
from .._loop.config import PPM, check_ppm, check_seconds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .node import NodeHandle
    from .world import World


class _Partition:
    def __init__(self, world: World, groups: list[list[int]]) -> None:
        self._world = world
        self._groups = groups
        self._suppressed = False

    def _apply(self) -> None:
        self._world._check_live()
        text = " | ".join("{" + ", ".join(map(str, g)) + "}" for g in self._groups)
        # A suppressed partition also skips its heal: that heal would end
        # other cuts, which the run without this partition never does.
        self._suppressed = self._world._fault_call(f"partition {text}")
        if self._suppressed:
            return
        self._world._wire.partition(self._groups)
        self._world.log._emit(kinds.PARTITION, -1, f"partition {text}")

    def _heal(self) -> None:
        if not self._world._ended and not self._suppressed:
            self._world.net.heal()

    async def __aenter__(self) -> _Partition:
        self._apply()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._heal()

    def __enter__(self) -> _Partition:
        self._apply()
        return self

    def __exit__(self, *exc: object) -> None:
        self._heal()


class Network:
    """world.net: cuts and the link model."""

    def __init__(self, world: World) -> None:
        self._world = world

    def isolate(self, node: int | NodeHandle) -> None:
        """Cut every link to and from node."""
        w = self._world
        node_id = w._node_id(node, "isolate")
        w._check_live()
        if w._fault_call(f"isolate {node_id}"):
            return
        w._wire.isolate(node_id)
        w.log._emit(kinds.PARTITION, node_id, f"isolate {node_id}")

    def cut(self, src: int | NodeHandle, dst: int | NodeHandle) -> None:
        """Cut src -> dst only (one way)."""
        w = self._world
        s, d = w._node_id(src, "cut"), w._node_id(dst, "cut")
        w._check_live()
        if w._fault_call(f"cut {s} -> {d}"):
            return
        w._wire.cut(s, d)
        w.log._emit(kinds.PARTITION, -1, f"cut {s} -> {d}")

    def heal(self) -> None:
        """Restore every link: partitions, one-way cuts and isolation."""
        w = self._world
        w._check_live()
        w._wire.heal()
        w.log._emit(kinds.HEAL, -1, "heal")

    def configure(
        self,
        *,
        latency: tuple[float, float] | None = None,
        loss: float | None = None,
        duplicate: float | None = None,
        link: tuple[int | NodeHandle, int | NodeHandle] | None = None,
    ) -> None:
        """Set the link model globally, or for the directed `link=(src, dst)`:
        latency (lo, hi) seconds, drawn uniformly; loss and duplicate as
        probabilities. What is not given keeps its current value."""
        w = self._world
        src = dst = -1
        if link is not None:
            if not isinstance(link, tuple) or len(link) != 2:
                raise TypeError(f"link must be a (src, dst) pair of node ids, got {link!r}")
            src, dst = w._node_id(link[0], "configure"), w._node_id(link[1], "configure")
        w._check_live()
        lo_ns, hi_ns, loss_ppm, dup_ppm, _cut = w._wire.link(src, dst)
        if latency is not None:
            if not isinstance(latency, tuple) or len(latency) != 2:
                raise TypeError(f"latency must be a (lo, hi) pair of seconds, got {latency!r}")
            lo = check_seconds(latency[0], "latency lo")
            hi = check_seconds(latency[1], "latency hi")
            if lo > hi:
                raise ValueError(f"latency must be (lo, hi) with lo <= hi, got {latency!r}")
            lo_ns, hi_ns = w._reshape_latency(round(lo * 1e9), round(hi * 1e9))
        if loss is not None:
            loss_ppm = check_ppm(loss, "loss")
        if duplicate is not None:
            dup_ppm = check_ppm(duplicate, "duplicate")
        where = "all links" if src < 0 else f"{src} -> {dst}"
        text = (
            f"configure {where}: latency {lo_ns / 1e9:g}..{hi_ns / 1e9:g}s, "
            f"loss {loss_ppm / PPM:g}, duplicate {dup_ppm / PPM:g}"
        )
        if w._fault_call(text):
            return
        w._wire.configure(lo_ns, hi_ns, loss_ppm, dup_ppm, src, dst)
        w.log._emit(kinds.CONFIG, -1, text)

    def stats(self) -> dict[str, int]:
        """Counts of messages sent, delivered and dropped by reason (TCP
        segments included); once the run has used a socket or a name, the
        TCP counters too (`tcp_connects`, `tcp_accepts`, ... docs/sockets.md)."""
        self._world._check_live()  # the loop holds a later run's counts by now
        stats: dict[str, int] = self._world._wire.stats()
        tcp = self._world._tcp
        if tcp is not None:
            stats.update(tcp.stats)
        return stats
