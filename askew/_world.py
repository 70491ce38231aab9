# SPDX-License-Identifier: Apache-2.0
"""The world a simulated test gets: nodes, the network, faults, the clock,
the run's PRNG and its log.

Node ids are 0, 1, 2... in spawn order. The code of a node runs in a context
that names it (a context variable the C loop reads on every step), so the
tasks a node creates belong to it: a crash stops all of them, a skew shifts
all their clocks. Payloads must be immutable (checked at send): a message
travels by reference, and no node may change another's copy.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import enum
import inspect
import random
import types
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from . import _core
from ._config import MESSAGE_FAULTS, NODES_KEY, check_offset, check_seconds

_node_var: contextvars.ContextVar[int] = contextvars.ContextVar("askew_node")
_CoroutineType = types.CoroutineType

# A node's token: id << _TOKEN_SHIFT | incarnation (ext/node.h).
_TOKEN_SHIFT = _core.NODE_TOKEN_SHIFT
# Log kinds: the network binding's come from C (ext/log.h); ours are
# numbered from the base C leaves to us.
_NET_SEND, _NET_DELIVERY = _core.LOG_KIND_SEND, _core.LOG_KIND_DELIVERY
(
    _KIND_WORLD,
    _KIND_NODE,
    _KIND_SPAWN,
    _KIND_CRASH,
    _KIND_RESTART,
    _KIND_PARTITION,
    _KIND_HEAL,
    _KIND_FAULT,
    _KIND_ASSERT,
    _KIND_CONFIG,
    _KIND_ERROR,
    _KIND_CONNECT,
    _KIND_ACCEPT,
    _KIND_REFUSE,
    _KIND_RESET,
    _KIND_CLOSE,
) = range(_core.LOG_KIND_WORLD_BASE, _core.LOG_KIND_WORLD_BASE + 16)
_KIND_NAMES = {
    _NET_SEND: "net",
    _NET_DELIVERY: "net",
    _KIND_WORLD: "world",
    _KIND_NODE: "node",
    _KIND_SPAWN: "spawn",
    _KIND_CRASH: "crash",
    _KIND_RESTART: "restart",
    _KIND_PARTITION: "net",
    _KIND_HEAL: "net",
    _KIND_FAULT: "fault",
    _KIND_ASSERT: "assert",
    _KIND_CONFIG: "net",
    _KIND_ERROR: "error",
    _KIND_CONNECT: "connect",
    _KIND_ACCEPT: "accept",
    _KIND_REFUSE: "refuse",
    _KIND_RESET: "reset",
    _KIND_CLOSE: "close",
}
# The name of each outcome code of ext/engine/net.h, indexed by code.
_OUTCOMES = _core.NET_OUTCOME_NAMES
_PPM = 1_000_000
LOG_KEPT = _core.LOG_KEPT  # entries the log ring keeps (ext/log.h)
# The kinds that are faults: world.log.faults() keeps them apart from the
# ring, so a report shows them however long ago they were (askew/_report.py).
_FAULT_KINDS = frozenset(
    (_KIND_CRASH, _KIND_RESTART, _KIND_PARTITION, _KIND_HEAL, _KIND_FAULT, _KIND_CONFIG)
)
FAULTS_KEPT = 1000  # the newest fault events world.log.faults() keeps

Message = _core.Message


class Event(NamedTuple):
    """One entry of world.log: virtual time, kind, node (or None), text."""

    time: float
    kind: str
    node: int | None
    text: str

    def __str__(self) -> str:
        return f"{self.time:>8.3f}s  {self.kind:<7} {self.text}"


def safe_repr(obj: object, convert: Callable[[object], object] = repr) -> str:
    """repr(obj) (or str(obj), with convert=str), or a stand-in naming its
    type when the user's __repr__/__str__ raises or returns a non-str: a
    failure report must never be replaced by an error in it."""
    try:
        text = convert(obj)
        if isinstance(text, str):
            return text
        problem = f"returned {type(text).__name__}"
    except Exception as exc:  # any user __repr__, whatever it raises
        problem = f"raised {type(exc).__name__}"
    method = "__str__" if convert is str else "__repr__"
    return f"<{type(obj).__name__} object; its {method} {problem}>"


def _short_repr(obj: object, limit: int = 48) -> str:
    text = safe_repr(obj)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digest(text: str) -> int:
    """A digest of a log text for the trace hash: the same in every process
    (Python's own hash of a str is not)."""
    return zlib.crc32(text.encode("utf-8", "backslashreplace"))


_ATOMS = (int, float, complex, str, bytes, bool, type(None), range, type(...))
_IMMUTABLE_BASES = (*_ATOMS, tuple, frozenset)


def _own_state(cls: type) -> str | None:
    """Where instances of a subclass of an immutable type keep state of their
    own (an instance __dict__ or a slot), which the sender could change after
    sending; None when they keep none (a NamedTuple's __slots__ = ())."""
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            continue
        slots = vars(klass).get("__slots__")
        if slots is None:
            return f"{klass.__name__} has no __slots__, so its instances carry a __dict__"
        names = (slots,) if isinstance(slots, str) else tuple(slots)
        state = [n for n in names if n != "__weakref__"]
        if state:
            return f"{klass.__name__} has the slots {state!r}"
    return None


def check_payload(payload: object, _depth: int = 0) -> None:
    """Refuse a payload that its sender could still change after sending."""
    cls = type(payload)
    if cls in _ATOMS or isinstance(payload, enum.Enum):
        return
    if _depth > 64:
        raise TypeError("payload nests deeper than 64 levels")
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        if getattr(payload, "__dataclass_params__").frozen:  # noqa: B009
            for field in dataclasses.fields(payload):
                check_payload(getattr(payload, field.name), _depth + 1)
            return
    if isinstance(payload, _IMMUTABLE_BASES):
        # A subclass of an immutable type is immutable only if it adds no
        # state: `class Tag(str): pass` has a __dict__ the receiver can write.
        where = _own_state(cls) if cls not in (tuple, frozenset) else None
        if where is not None:
            raise TypeError(
                f"payload of type {cls.__name__} subclasses {cls.__mro__[-2].__name__} but "
                f"can be changed after sending: {where}. Declare `__slots__ = ()` on it, "
                "or send a frozen dataclass or NamedTuple instead"
            )
        if isinstance(payload, (tuple, frozenset)):
            for item in payload:
                check_payload(item, _depth + 1)
        return
    raise TypeError(
        f"payload {_short_repr(payload)} has a mutable part of type {type(payload).__name__}: "
        "messages travel by reference, so the sender could change them in flight. Send "
        "immutable values: tuples, frozensets, str, bytes, numbers, enums, NamedTuples or "
        "frozen dataclasses."
    )


class _Sent:
    """What send/broadcast return: already done, so `await` is optional."""

    __slots__ = ()

    def __await__(self) -> Iterator[Any]:
        return iter(())

    def __repr__(self) -> str:
        return "<sent>"


_SENT = _Sent()


class Node:
    """What a node's code receives: its id and messaging. Any other attribute
    is the node's state, readable from the test through its handle."""

    def __init__(self, world: World, node_id: int, incarnation: int) -> None:
        self._askew_world = world
        self._askew_token = node_id << _TOKEN_SHIFT | incarnation

    # A property, not a __setattr__ check: state writes (node.leader = ...)
    # are the hot path and stay plain attribute stores.
    @property
    def id(self) -> int:
        """This node's id: 0, 1, 2... in spawn order."""
        return self._askew_token >> _TOKEN_SHIFT

    # By id and incarnation, not identity, for the reason NodeHandle gives.
    def __hash__(self) -> int:
        return hash(self._askew_token)

    def __repr__(self) -> str:
        return f"<askew node {self.id}>"

    def send(self, dst: int | NodeHandle, payload: Any) -> _Sent:
        """Put payload on the wire to dst now; returns an awaitable."""
        world = self._askew_world
        if world._ended:
            world._check_live()
        if dst.__class__ is not int:
            dst = world._node_id(dst, "send to")
        world._wire.send_from(self._askew_token, dst, payload)
        return _SENT

    def broadcast(self, payload: Any) -> _Sent:
        """Send payload to every other node, in id order."""
        world = self._askew_world
        if world._ended:
            world._check_live()
        world._wire.broadcast(self._askew_token, payload)
        return _SENT

    async def recv(self, timeout: float | None = None) -> Any:
        """The next message for this node, or None after `timeout` seconds."""
        world = self._askew_world
        if world._ended:
            world._check_live()
        token = self._askew_token
        got = world._wire.recv(token >> _TOKEN_SHIFT, token, timeout)
        if isinstance(got, _core.Message):
            return got
        return await got

    @property
    def disk(self) -> str | None:
        """The mount of this node's simulated disk (spawn(..., disk="/data")),
        or None: under it, this node's file I/O goes to its disk."""
        nd = self._askew_world._disks.get(self.id)
        return None if nd is None else nd.mount

    def emit(self, text: str) -> None:
        """Log an event of this node (shown in failure reports)."""
        world = self._askew_world
        world.log._emit(_KIND_NODE, self.id, f"{self.id} {text}")


class _Slot:
    """One node id across its incarnations."""

    __slots__ = ("args", "handle", "instance", "node", "target", "task", "token")

    def __init__(self, target: Any, args: tuple[Any, ...]) -> None:
        self.target = target
        self.args = args
        self.node: Node | None = None
        self.instance: Any = None
        self.task: asyncio.Task[Any] | None = None
        self.token = -1
        self.handle: NodeHandle | None = None


class NodeHandle:
    """What spawn returns: the node's id and, as attributes, its state (the
    Node for a function target, the instance for a class). After a restart
    it shows the new incarnation's state."""

    __slots__ = ("_slot", "_world", "id")

    def __init__(self, world: World, node_id: int, slot: _Slot) -> None:
        object.__setattr__(self, "_world", world)
        object.__setattr__(self, "_slot", slot)
        object.__setattr__(self, "id", node_id)

    def _target(self) -> Any:
        slot: _Slot = self._slot
        return slot.instance if slot.instance is not None else slot.node

    def __getattr__(self, name: str) -> Any:
        slot: _Slot = self._slot
        if slot.instance is not None:
            try:
                return getattr(slot.instance, name)
            except AttributeError:
                pass
        return getattr(slot.node, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "id":
            raise AttributeError("a node's id cannot change")
        setattr(self._target(), name, value)

    # Hashed by id, equal by identity: one handle per id per world, and a set
    # of handles iterates in the same order in every process (by identity,
    # its order would follow memory addresses).
    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        alive = self._world._wire.alive(self.id)[0] if not self._world._ended else None
        state = {True: "alive", False: "crashed", None: "ended"}[alive]
        return f"<askew node {self.id} {state}>"


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
        self._world.log._emit(_KIND_PARTITION, -1, f"partition {text}")

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


class Clock:
    """world.clock: let virtual time pass."""

    def __init__(self, world: World) -> None:
        self._world = world

    async def advance(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass, running everything due in them."""
        seconds = check_seconds(seconds, "advance(seconds=...)")
        self._world._check_live()
        await asyncio.sleep(seconds)


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
        w.log._emit(_KIND_PARTITION, node_id, f"isolate {node_id}")

    def cut(self, src: int | NodeHandle, dst: int | NodeHandle) -> None:
        """Cut src -> dst only (one way)."""
        w = self._world
        s, d = w._node_id(src, "cut"), w._node_id(dst, "cut")
        w._check_live()
        if w._fault_call(f"cut {s} -> {d}"):
            return
        w._wire.cut(s, d)
        w.log._emit(_KIND_PARTITION, -1, f"cut {s} -> {d}")

    def heal(self) -> None:
        """Restore every link: partitions, one-way cuts and isolation."""
        w = self._world
        w._check_live()
        w._wire.heal()
        w.log._emit(_KIND_HEAL, -1, "heal")

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
            lo_ns, hi_ns = round(lo * 1e9), round(hi * 1e9)
        if loss is not None:
            loss_ppm = _ppm(loss, "loss")
        if duplicate is not None:
            dup_ppm = _ppm(duplicate, "duplicate")
        where = "all links" if src < 0 else f"{src} -> {dst}"
        text = (
            f"configure {where}: latency {lo_ns / 1e9:g}..{hi_ns / 1e9:g}s, "
            f"loss {loss_ppm / _PPM:g}, duplicate {dup_ppm / _PPM:g}"
        )
        if w._fault_call(text):
            return
        w._wire.configure(lo_ns, hi_ns, loss_ppm, dup_ppm, src, dst)
        w.log._emit(_KIND_CONFIG, -1, text)

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


def _ppm(p: object, what: str) -> int:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"{what} must be a probability in [0, 1], got {p!r}")
    return round(float(p) * _PPM)


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
        # which a power cut never does. One pass over the loop's live tasks
        # per crash; the node's own list holds only its dead incarnations'.
        dead = [
            t
            for t in asyncio.all_tasks(w._loop)
            if getattr(t, "_askew_owner", -1) == token and not t.done()
        ]
        dead.sort(key=lambda t: getattr(t, "_askew_seq", 0))
        w._crashed.setdefault(node_id, []).extend(dead)
        w._wire.crash(node_id)
        w._loop._pause(node_id, 0, -1, None)  # a power cut ends any pause
        slot.token = -1
        w.log._emit(_KIND_CRASH, node_id, f"crash {node_id}")
        if node_id in w._disks:
            from . import _disk

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
        w.log._emit(_KIND_RESTART, node_id, f"restart {node_id}")
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
        w.log._emit(_KIND_FAULT, node_id, text)

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
        read, write or fsync fails with EIO with its probability, a read
        returns one bit flipped with probability `bitrot`, every operation
        costs the node `latency` seconds (or uniform in a (min, max) pair)
        of its clock, and writes past `capacity` bytes held fail with
        ENOSPC. Replaces the node's earlier disk faults; all zero is none."""
        from . import _disk

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
        world.log._emit(_KIND_FAULT, node_id, f"pause {node_id} {span}")

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
        w.log._emit(_KIND_FAULT, self._node_id, f"resume {self._node_id}")

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


class Log:
    """world.log: the recent events of the run, oldest first (the last
    10,000 are kept; the trace hash covers them all)."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._faults: list[Event] = []
        self._faults_seen = 0

    def emit(self, text: str) -> None:
        """Record a user event, attributed to the running node if any."""
        if not isinstance(text, str):
            raise TypeError(f"log text must be a str, got {type(text).__name__}")
        token = _node_var.get(None)
        if token is None:
            self._emit(_KIND_WORLD, -1, text)
        else:
            node = token >> _TOKEN_SHIFT
            self._emit(_KIND_NODE, node, f"{node} {text}")

    def _emit(self, kind: int, node: int, text: str) -> None:
        self._world._check_live()
        self._world._loop._log_emit(kind, node, text, _digest(text))
        if kind in _FAULT_KINDS:
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

    # ---- filtering, and the faults kept apart (askew/_report.py reads them) ----

    def events(
        self, *, node: int | NodeHandle | None = None, kind: str | Iterable[str] | None = None
    ) -> list[Event]:
        """The kept events of one node and/or of some kinds ("net", "crash",
        "fault"...), oldest first; with neither, all of them."""
        kinds = {kind} if isinstance(kind, str) else None if kind is None else set(kind)
        want = None if node is None else self._world._node_id(node, "log.events")
        self._world._check_live()
        events = []
        for entry in self._world._loop._log_recent(LOG_KEPT):
            # A message is the event of both its ends: node and peer.
            ends = (entry[2], entry[3]) if entry[1] in (_NET_SEND, _NET_DELIVERY) else (entry[2],)
            if want is None or want in ends:
                event = event_from_entry(entry)
                if kinds is None or event.kind in kinds:
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
        self._faults.append(Event(t, _KIND_NAMES[kind], None if node < 0 else node, text))


def _outcome_name(outcome: int) -> str:
    return _OUTCOMES[outcome] if 0 <= outcome < len(_OUTCOMES) else "?"


def event_from_entry(entry: tuple[int, int, int, int, int, object]) -> Event:
    t_ns, kind, node, peer, outcome, detail = entry
    name = _KIND_NAMES.get(kind, "event")
    if kind in (_NET_SEND, _NET_DELIVERY) and type(detail).__name__ == "_Segment":
        # a segment of askew/_sockets.py on the C network; kinds 5 and 6 are
        # UDP's (a datagram, a port unreachable), the rest TCP's
        name = "udp" if getattr(detail, "kind", 0) in (5, 6) else "tcp"
    if kind == _NET_SEND:
        text = f"{node} -> {peer}  {_short_repr(detail)}   {_outcome_name(outcome)}"
    elif kind == _NET_DELIVERY:
        text = f"{peer} -> {node}  {_short_repr(detail)}   {_outcome_name(outcome)}"
    else:
        text = str(detail)
    return Event(t_ns / 1e9, name, None if node < 0 else node, text)


class World:
    """Everything a simulated test can do to its simulation."""

    def __init__(self, loop: Any, seed: int, suppress: frozenset[int | str] = frozenset()) -> None:
        self._loop = loop
        self.seed = seed
        # Fault suppression (askew/_shrink.py): every fault call of the run,
        # in order, as (virtual time, what); a call whose index is in
        # `suppress` does nothing. Costs a list append per fault call.
        # "drop:N" / "dup:N" in `suppress` go to the network (see _all_faults).
        self._suppress = suppress
        self._fault_calls: list[tuple[float, str]] = []
        self._random: random.Random | None = None
        self.clock = Clock(self)
        self.net = Network(self)
        self.faults = Faults(self)
        self.log = Log(self)
        self._slots: list[_Slot] = []
        # Per node, the tasks of its crashed incarnations, in creation order.
        self._crashed: dict[int, list[asyncio.Task[Any]]] = {}
        self._pauses: list[_Pause] = []
        self._failure: BaseException | None = None
        self._failed_node: int | None = None
        self._ended = False
        self._wire: _core.Network = loop._net
        loop._set_node_var(_node_var)
        self._wire.set_payload_check(check_payload)
        # shrink3: message faults to skip, and the node count's cap (node_count).
        self._nodes_cap: int | None = None
        self._nodes_asked: tuple[int, int] | None = None  # (fewest, default)
        if any(isinstance(key, str) for key in suppress):
            for kind, name in enumerate(MESSAGE_FAULTS):
                named = (key.partition(":") for key in suppress if isinstance(key, str))
                self._wire.suppress(kind, [int(n) for k, _, n in named if k == name])
            named = (key.partition(":") for key in suppress if isinstance(key, str))
            self._nodes_cap = next((int(n) for k, _, n in named if k == NODES_KEY), None)
        # Names and TCP (askew/_sockets.py): the stack is made on first use.
        self._hostnames: list[str] = []
        self._names: dict[str, int] = {}
        self._tcp: Any = None
        # Simulated disks (askew/_disk.py), by node id: spawn(..., disk=...).
        self._disks: dict[int, Any] = {}
        from . import _disk, _sockets

        _sockets.begin(self)
        _disk.begin(self)

    def __repr__(self) -> str:
        if self._ended:
            return f"<askew world seed={self.seed} ended nodes={len(self._slots)}>"
        return f"<askew world seed={self.seed} t={self.now:.6f}s nodes={len(self._slots)}>"

    @property
    def random(self) -> random.Random:
        """A random.Random on the run's user stream (made on first use: seeding
        one costs more than a small run)."""
        if self._random is None:
            self._random = random.Random(_core.seed_stream(self.seed, _core.STREAM_USER))
        return self._random

    @property
    def now(self) -> float:
        """Virtual time, seconds since the run started."""
        if self._ended:  # the reused loop's clock is a later run's by now
            self._check_live()
        return float(self._loop._now_ns) / 1e9

    @property
    def nodes(self) -> list[NodeHandle]:
        return [s.handle for s in self._slots if s.handle is not None]

    def _fault_call(self, text: str) -> bool:
        """Count one fault call (`text` says what it does); whether this run
        suppresses it."""
        k = len(self._fault_calls)
        self._fault_calls.append((self._loop._now_ns / 1e9, text))
        return k in self._suppress

    def node_count(self, default: int, *, fewest: int = 1) -> int:
        """How many nodes to spawn: `default`, or fewer (never under `fewest`)
        when a failure's shrinking tries the run with fewer nodes. A test that
        spawns `world.node_count(5, fewest=3)` nodes lets the shrinker report
        "fails the same way with 3 nodes"; one that spawns a fixed number
        does not, since only the test knows which counts it means to hold."""
        for name, value in (("default", default), ("fewest", fewest)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"node_count: {name} must be an int, got {value!r}")
        if not 1 <= fewest <= default:
            raise ValueError(
                f"node_count needs 1 <= fewest <= default, got fewest={fewest}, default={default}"
            )
        if self._nodes_asked is None:
            self._nodes_asked = (fewest, default)
        if self._nodes_cap is None:
            return default
        return max(fewest, min(default, self._nodes_cap))

    def _all_faults(self) -> list[tuple[int | str, float, str]]:
        """shrink3: the run's faults as (key, virtual time, what): its fault
        calls (key: the index), then the network's loss drops and
        duplications (key: "drop:N" / "dup:N", N the send's id), in order;
        last "nodes:F-D" if the test let the shrinker try F to D nodes."""
        out: list[tuple[int | str, float, str]] = [
            (k, t, text) for k, (t, text) in enumerate(self._fault_calls)
        ]
        messages, _more = self._wire.faults()
        for kind, id_, sent_ns, src, dst in messages:
            what = ("drop", "duplication")[kind]
            out.append(
                (
                    f"{MESSAGE_FAULTS[kind]}:{id_}",
                    sent_ns / 1e9,
                    f"{what} of message {id_} (node {src} -> node {dst})",
                )
            )
        if self._nodes_asked is not None and self._nodes_asked[0] < self._nodes_asked[1]:
            # Not a fault: tells the shrinker it may try fewer nodes.
            fewest, default = self._nodes_asked
            out.append((f"{NODES_KEY}:{fewest}-{default}", 0.0, f"{default} nodes"))
        return out

    def _check_live(self) -> None:
        if self._ended:
            raise RuntimeError(
                "this world's run has ended: a world is only usable during its own run"
            )

    def _node_id(self, node: object, what: str) -> int:
        if isinstance(node, NodeHandle):
            if node._world is not self:
                raise ValueError(f"{what}: {node!r} belongs to another world")
            return int(node.id)
        if isinstance(node, Node):
            return int(node.id)
        if isinstance(node, bool) or not isinstance(node, int):
            raise TypeError(f"{what}: a node is an int id or a node handle, got {node!r}")
        self._wire.check_node(node, what)
        return node

    def spawn(
        self,
        target: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        disk: str | None = None,
    ) -> NodeHandle:
        """Start a node running target(node, *args) (an async function), or
        Cls(node, *args).run() for a class; returns its handle. `name` is
        its hostname (default node-<id>), which the simulated resolver
        answers with its address. `disk` is the mount of a simulated disk
        of its own (docs/disks.md): under that path its file I/O goes to a
        disk that survives its crashes as a real one would."""
        if name is not None:
            _check_hostname(name, self._names)
        mount = None
        if disk is not None:
            from . import _disk

            mount = _disk.check_mount(disk)
        if not callable(target):
            raise TypeError(
                f"spawn() needs an async function or a class with `async def run(self)`, "
                f"got {target!r}"
            )
        if isinstance(target, type) and not inspect.iscoroutinefunction(
            getattr(target, "run", None)
        ):
            raise TypeError(f"spawn({target.__name__}): the class needs an `async def run(self)`")
        self._check_live()
        node_id = int(self._wire.node_add())
        hostname = name.lower() if name is not None else f"node-{node_id}"
        self._hostnames.append(hostname)
        self._names.setdefault(hostname, node_id)
        slot = _Slot(target, args)
        self._slots.append(slot)
        slot.handle = NodeHandle(self, node_id, slot)
        text = f"spawn {node_id} {_target_name(target)}"
        if mount is not None:
            from . import _disk

            if node_id >= _disk.NODES_MAX:
                raise ValueError(f"spawn(disk=...): at most {_disk.NODES_MAX} nodes have a disk")
            self._disks[node_id] = _disk.NodeDisk(self, node_id, mount)
            text += f" disk={mount}"
        self.log._emit(_KIND_SPAWN, node_id, text)
        self._start(node_id)
        return slot.handle

    def _start(self, node_id: int) -> None:
        slot = self._slots[node_id]
        _alive, incarnation = self._wire.alive(node_id)
        node = Node(self, node_id, incarnation)
        slot.node = node
        slot.token = node._askew_token
        ctx = contextvars.copy_context()
        ctx.run(_node_var.set, slot.token)
        if isinstance(slot.target, type):
            slot.instance = ctx.run(slot.target, node, *slot.args)
            coro = ctx.run(slot.instance.run)
        else:
            slot.instance = None
            coro = ctx.run(slot.target, node, *slot.args)
        if coro.__class__ is not _CoroutineType and not inspect.isawaitable(coro):
            raise TypeError(
                f"spawn({_target_name(slot.target)}): calling it returned "
                f"{_short_repr(coro)}, not a coroutine; spawn an `async def` function"
            )
        task = self._loop.create_task(coro, name=f"node-{node_id}", context=ctx)
        slot.task = task
        token = slot.token
        task.add_done_callback(lambda t: self._node_done(node_id, token, t))

    def _node_done(self, node_id: int, token: int, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or self._slots[node_id].token != token:
            return
        exc = task.exception()
        if exc is not None and self._failure is None:
            self._failure = exc
            self._failed_node = node_id
            self._loop.stop()

    def partition(self, *groups: Iterable[int | NodeHandle]) -> _Partition:
        """`async with world.partition({0, 1}, {2, 3, 4}):` cuts the links
        between the groups and heals on exit."""
        if len(groups) < 2:
            raise ValueError(f"partition() needs at least two groups, got {len(groups)}")
        resolved: list[list[int]] = []
        seen: dict[int, int] = {}
        for g, group in enumerate(groups):
            if isinstance(group, (str, bytes)) or not isinstance(group, Iterable):
                raise TypeError(f"partition group {g} must be a set of node ids, got {group!r}")
            ids = sorted({self._node_id(n, "partition") for n in group})
            for i in ids:
                if i in seen:
                    raise ValueError(
                        f"partition groups overlap: node {i} is in group {seen[i]} and group {g}"
                    )
                seen[i] = g
            resolved.append(ids)
        return _Partition(self, resolved)

    def _owner_crashed(self, task: asyncio.Task[Any]) -> bool:
        """Whether task belongs to an incarnation that has crashed (and so
        never runs again)."""
        token = getattr(task, "_askew_owner", -1)
        if token < 0:
            return False
        node_id = token >> _TOKEN_SHIFT
        return node_id < len(self._slots) and self._slots[node_id].token != token

    def _end_pauses(self) -> None:
        """At close-down every pause ends, as the test's own process would
        resume its nodes: their cleanup runs as that of the others."""
        for pause in self._pauses:
            pause._resume()
        self._pauses.clear()

    def _end(self) -> None:
        self._ended = True
        from . import _disk, _sockets

        _sockets.end(self)
        _disk.end(self)

    def disk(self, node: int | NodeHandle) -> Any:
        """The test body's view of node's simulated disk (askew/_disk.py
        DiskView): read, exists, listdir, walk, usage, as the node sees it
        now. Outside the node, the mount path itself is the real one."""
        node_id = self._node_id(node, "disk")
        self._check_live()
        nd = self._disks.get(node_id)
        if nd is None:
            raise ValueError(f'disk: node {node_id} has no disk; spawn it with disk="/data"')
        from ._disk import DiskView

        return DiskView(self, nd)

    def address(self, node: int | NodeHandle) -> str:
        """The node's IPv4 address: 10.0.0.1 for node 0, 10.0.0.2 for node 1..."""
        from ._sockets import address_of

        return address_of(self._node_id(node, "address"))

    def hostname(self, node: int | NodeHandle) -> str:
        """The node's hostname: the `name=` given at spawn, or node-<id>."""
        return self._hostnames[self._node_id(node, "hostname")]

    def _end_run(self) -> BaseException | None:
        """End this world's run; askew._runner calls it once the test has
        returned, then ends the loop's run. Every pause ends, the tasks still
        pending are cancelled and let finish, and the coroutines of crashed
        incarnations are closed. Returns the error a node's cleanup raised."""
        self._end_pauses()
        # Tasks of crashed incarnations never run again: wait for the rest.
        stopped, raised = self._loop._cancel_pending(lambda t: not self._owner_crashed(t))
        error: BaseException | None = raised
        if stopped is not None:
            # A node whose cleanup raised stopped the loop: its error is the news.
            error = self._failure if self._failure is not None else stopped
        self._end()
        # The tasks of crashed nodes are still pending and never run again.
        # Close their coroutines here, at a fixed point after the run and with
        # the world ended, instead of leaving them to the collector: collected
        # later, they would report "Task was destroyed but it is pending!" to
        # whichever run's exception handler is set then (failing that run, or
        # a later iteration, which a replay of its seed alone would not) and
        # unwind in its middle.
        for node_id in sorted(self._crashed):
            for task in self._crashed[node_id]:
                if not task.done():
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
                    try:
                        task.get_coro().close()
                    except Exception:  # a dead node's unwinding has no one to tell
                        pass
        self._crashed.clear()
        return error

    # Exploration (askew/_monitors.py, askew/_history.py): kept together at
    # the end of the class.
    def eventually(
        self, name: str, predicate: Callable[[], Any], *, within: float, every: float | None = None
    ) -> Any:
        """Fail the run unless predicate() is true at some poll within
        `within` virtual seconds from now. It is polled every `every` seconds
        (default within / 64) and at the deadline, by timers of the world's
        loop; a predicate that raises fails the run with its exception
        chained. Returns the check (its .held, .cancel())."""
        from ._monitors import eventually

        return eventually(self, name, predicate, within, every)

    def always(self, name: str, predicate: Callable[[], Any]) -> Any:
        """Fail the run at the first step after which predicate() is false
        (or raises: then chained). Checked after every step of the run by a
        hook of the C loop, all of a world's checks in one call; it draws
        nothing and schedules nothing. Returns the check (its .cancel())."""
        from ._monitors import always

        return always(self, name, predicate)

    @property
    def history(self) -> Any:
        """The run's operation history (askew.History) on the virtual clock:
        `op = world.history.invoke(node, "write", 3)` ... `op.ok()`; check
        it with askew.check.linearizable(world.history, model)."""
        found = self.__dict__.get("_askew_history")
        if found is None:
            from ._history import History

            found = self.__dict__["_askew_history"] = History(
                lambda: self.now, lambda n: None if n is None else self._node_id(n, "history")
            )
        return found


def _check_hostname(name: object, taken: dict[str, int]) -> None:
    if not isinstance(name, str):
        raise TypeError(f"spawn(name=...) must be a str, got {name!r}")
    labels = name.split(".")
    ok = 0 < len(name) <= 253 and all(
        0 < len(label) <= 63
        and label[0] != "-"
        and label[-1] != "-"
        and all(c.isascii() and (c.isalnum() or c == "-") for c in label)
        for label in labels
    )
    if not ok or labels[-1].isdigit() or name.lower() == "localhost":
        raise ValueError(
            f"spawn(name={name!r}): a hostname is dot-separated labels of letters, digits "
            "and '-', not all digits at the end, and not 'localhost'"
        )
    if name.lower() in taken:
        raise ValueError(f"spawn(name={name!r}): node {taken[name.lower()]} has that name")


def _target_name(target: Any) -> str:
    return str(getattr(target, "__qualname__", None) or getattr(target, "__name__", target))
