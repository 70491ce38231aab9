# SPDX-License-Identifier: Apache-2.0
"""A node as its code and the test see it: Node (what a node's code gets:
its id and messaging; any other attribute is its state) and NodeHandle
(what spawn returns: the id, and the state of its live incarnation). A
payload must be immutable, checked at send: a message travels by reference,
and no node may change another's copy.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from .. import _core
from .._loop import kinds
from .._loop.text import short_repr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .world import World


Message = _core.Message


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
        f"payload {short_repr(payload)} has a mutable part of type {type(payload).__name__}: "
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


class Node(_core.NodeBase):
    """What a node's code receives: its id and messaging. Any other attribute
    is the node's state, readable from the test through its handle.

    Node(world, node_id, incarnation) is NodeBase's (ext/node_type.c): it
    keeps the world, its network, the id and the token, read-only, so that
    recv(), the call of a node's receive loop, and id are C with no frame
    of askew's."""

    _askew_world: World  # NodeBase's, typed here: _core cannot name World

    # id is NodeBase's read-only getter, not a __setattr__ check: state
    # writes (node.leader = ...) are the hot path and stay plain stores.

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

    async def _recv_seen(self, timeout: float | None = None) -> Message | None:
        """recv as a coroutine that tells the receive hook (receives_seen)
        each message it returns and the frame that awaited it: what a
        timeline run receives through."""
        msg = await _RECV_PLAIN(self, timeout)
        if msg is not None and _seen is not None:
            _seen(msg, sys._getframe(1))
        return msg

    @property
    def disk(self) -> str | None:
        """The mount of this node's simulated disk (spawn(..., disk="/data")),
        or None: under it, this node's file I/O goes to its disk."""
        nd = self._askew_world._disks.get(self.id)
        return None if nd is None else nd.mount

    def emit(self, text: str) -> None:
        """Log an event of this node (shown in failure reports)."""
        world = self._askew_world
        world.log._emit(kinds.NODE, self.id, f"{self.id} {text}")


# NodeBase's recv, C (ext/node_type.c); receives_seen(None) puts it back.
_RECV_PLAIN = Node.recv
_seen: Callable[[Message, FrameType], None] | None = None


def receives_seen(hook: Callable[[Message, FrameType], None] | None) -> None:
    """While a hook is set, node.recv() runs as the coroutine
    Node._recv_seen, which calls hook(message, awaiting frame) for each
    message it returns (the timeline's await sites,
    askew/_report/timeline.py); with None it is the frameless awaitable
    again. Awaiting a coroutine adds no step: the run is the same."""
    global _seen
    _seen = hook
    setattr(Node, "recv", Node._recv_seen if hook is not None else _RECV_PLAIN)  # noqa: B010


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
