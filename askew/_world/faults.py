# SPDX-License-Identifier: Apache-2.0
"""world.faults: crash, restart, pause, clock skew and the faults of a
node's disk. A crash is a power cut: the incarnation's tasks never run
again while the run is live (no finally, no except), kept until the run
ends so that no collector runs their cleanup; then their coroutines are
closed in the run's dead zone (World._release)."""

from __future__ import annotations

from typing import Any

from .._disk import disk as _disk
from .._loop import kinds
from .._loop.config import check_offset, check_seconds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .node import NodeHandle
    from .world import World


class Faults:
    """world.faults: crash, restart, pause and clock skew."""

    def __init__(self, world: World) -> None:
        self._world = world

    def crash(self, node: int | NodeHandle) -> None:
        """A power cut: the node runs no more code (no finally, no except);
        its timers and messages are gone, messages to it are dropped."""
        w = self._world
        node_id = w._node_id(node, "crash")
        w._check_live()
        if not w._fault_call(f"crash {node_id}"):
            self._crash(node_id)

    def _crash(self, node_id: int) -> None:
        w = self._world
        slot = w._slots[node_id]
        token = slot.token
        # Exactly this incarnation's tasks stop; kept alive until the run
        # ends, since a collected coroutine would run its finally blocks,
        # which a power cut never does. One pass over the run's live tasks
        # per crash; the node's own list holds only its dead incarnations'.
        dead = [t for t in w._loop._run_tasks() if getattr(t, "_askew_owner", -1) == token]
        w._crashed.setdefault(node_id, []).extend(dead)
        w._wire.crash(node_id)
        w._loop._threads.crash_node(token)  # its threads never run again
        w._loop._pause(node_id, 0, -1, None)  # a power cut ends any pause
        slot.token = -1
        w.log._emit(kinds.CRASH, node_id, f"crash {node_id}")
        if node_id in w._disks:
            _disk.crashed(w, node_id)

    def restart(self, node: int | NodeHandle) -> None:
        """Run the node's target again under the same id, with fresh state."""
        w = self._world
        node_id = w._node_id(node, "restart")
        w._check_live()
        if w._fault_call(f"restart {node_id}"):
            return
        if w._slots[node_id].token != -1:
            self._crash(node_id)  # one fault: its crash is not counted apart
        w._wire.restart(node_id)
        w.log._emit(kinds.RESTART, node_id, f"restart {node_id}")
        w._start(node_id)

    def pause(self, node: int | NodeHandle, seconds: float | None = None) -> _Pause:
        """A stop-the-world pause (a GC, a VM migration, SIGSTOP): from now
        the node runs nothing while its clocks run on; messages to it queue;
        on resume what came due meanwhile runs, its overdue timers in
        deadline order. With `seconds` it resumes by itself after that long;
        `async with world.faults.pause(node):` resumes at the block's end
        (with `seconds` too: whichever comes first)."""
        w = self._world
        node_id = w._node_id(node, "pause")
        if seconds is not None:
            seconds = check_seconds(seconds, "pause(seconds=...)")
            if seconds > 4.6e9:  # virtual time ends at 2**62 ns
                raise ValueError(f"pause(seconds=...) must be at most 4.6e9, got {seconds!r}")
        w._check_live()
        if w._slots[node_id].token == -1:
            raise ValueError(f"pause: node {node_id} is crashed; restart it first")
        span = "until resumed" if seconds is None else f"for {seconds:g}s"
        suppressed = w._fault_call(f"pause {node_id} {span}")
        return _Pause(w, node_id, seconds, span, suppressed)

    def skew(self, node: int | NodeHandle, *, offset: float = 0.0, drift: float = 0.0) -> None:
        """Step node's wall clock (time.time, datetime.now, CLOCK_REALTIME)
        to `offset` seconds from true time, backwards too, as NTP does, and
        let it drift by `drift` seconds per second from now on. Its monotonic
        clocks (loop.time, time.monotonic, perf_counter, CLOCK_MONOTONIC)
        never jump or stop: they run on from their reading at rate
        1 + drift, and its timers fire when they say."""
        w = self._world
        node_id = w._node_id(node, "skew")
        offset = check_offset(offset)
        if isinstance(drift, bool) or not isinstance(drift, (int, float)) or not -1 < drift < 1:
            raise ValueError(f"drift must be a number in (-1, 1) seconds per second, got {drift!r}")
        w._check_live()
        text = f"skew {node_id}: offset {offset:g}s drift {drift:g}"
        if w._fault_call(text):
            return
        w._loop._set_skew(node_id, round(offset * 1e9), round(drift * 1e9))
        w.log._emit(kinds.FAULT, node_id, text)

    def disk(
        self,
        node: int | NodeHandle,
        *,
        eio_read: float = 0.0,
        eio_write: float = 0.0,
        eio_fsync: float = 0.0,
        bitrot: float = 0.0,
        latency: float | tuple[float, float] = 0.0,
        capacity: int | None = None,
    ) -> None:
        """Faults of node's simulated disk from now on (docs/disks.md): each
        read, write or fsync fails with EIO with its probability (`eio_read`,
        `eio_write`, `eio_fsync`), a read
        returns one bit flipped with probability `bitrot`, every operation
        costs the node `latency` seconds (or uniform in a (min, max) pair)
        of its clock, and writes past `capacity` bytes held fail with
        ENOSPC. Replaces the node's earlier disk faults; all zero is none."""
        w = self._world
        node_id = w._node_id(node, "faults.disk")
        text, args = _disk.check_faults(
            w,
            node_id,
            eio_read=eio_read,
            eio_write=eio_write,
            eio_fsync=eio_fsync,
            bitrot=bitrot,
            latency=latency,
            capacity=capacity,
        )
        w._check_live()
        if not w._fault_call(text):
            _disk.apply_faults(w, node_id, text, args)


class _Pause:
    """One stop-the-world pause of one node: over after its seconds, or at
    the end of an `async with` block, whichever comes first."""

    def __init__(
        self, world: World, node_id: int, seconds: float | None, span: str, suppressed: bool
    ) -> None:
        self._world = world
        self._node_id = node_id
        self._token = world._slots[node_id].token
        # A suppressed pause is over from the start: the node never stops.
        self._over = suppressed
        self._timer: Any = None
        if suppressed:
            return
        loop = world._loop
        until_ns = -1 if seconds is None else loop._now_ns + round(seconds * 1e9)
        self._timer = loop._pause(node_id, 1, until_ns, self._resume)
        world._pauses.append(self)
        world.log._emit(kinds.FAULT, node_id, f"pause {node_id} {span}")

    @property
    def active(self) -> bool:
        """Whether the node is still held by this pause."""
        return not self._over

    def _resume(self) -> None:
        if self._over:
            return
        self._over = True
        w = self._world
        if self._timer is not None:
            self._timer.cancel()
        # A crash ended the pause already: the new incarnation never paused.
        if w._ended or w._slots[self._node_id].token != self._token:
            return
        w._loop._pause(self._node_id, -1, -1, None)
        w.log._emit(kinds.FAULT, self._node_id, f"resume {self._node_id}")

    def resume(self) -> None:
        """End the pause now: the node's held callbacks run, in order."""
        self._resume()

    async def __aenter__(self) -> _Pause:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._resume()

    def __repr__(self) -> str:
        state = "over" if self._over else "active"
        return f"<askew pause of node {self._node_id} {state}>"
