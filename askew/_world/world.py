# SPDX-License-Identifier: Apache-2.0
"""The world a simulated test gets: nodes, the network, faults, the clock,
the run's PRNG and its log, its monitors and its operation history.

Node ids are 0, 1, 2... in spawn order. The code of a node runs in a context
that names it (a context variable the C loop reads on every step), so the
tasks a node creates belong to it: a crash stops all of them, a skew shifts
all their clocks. The world starts and ends the run's network stack
(askew/_net/host.py) and disks (askew/_disk/), and its node handles, faults,
network and log are the modules beside this one.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import random
import types
from collections.abc import Callable, Iterable
from typing import Any

from .. import _core
from .._disk import disk as _disk
from .._disk.view import DiskView
from .._loop import identity, kinds
from .._loop.nodes import node_var
from .._loop.settings import LATENCY_MIN, MESSAGE_FAULTS, NODES_KEY, RANDOM_ZERO
from .._loop.text import short_repr
from .._net import host as _host
from .._net import loopio as _loopio  # noqa: F401  (the loop's sockets are the network's)
from .._net.addr import address_of
from .clock import Clock
from .draws import Zeros
from .faults import Faults, _Pause
from .history import History
from .log import Log
from .monitors import always, eventually
from .net import Network, _Partition
from .node import Node, NodeHandle, _Slot, check_payload

_CoroutineType = types.CoroutineType
_HINTS_KEPT = 5  # the failure report's hints, at most


class World:
    """Everything a simulated test can do to its simulation."""

    def __init__(self, loop: Any, seed: int, suppress: frozenset[int | str] = frozenset()) -> None:
        self._loop = loop
        self.seed = seed
        # Fault suppression (askew/_explore/shrink.py): every fault call of the run,
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
        # Per node, the tasks of its crashed incarnations, in creation order:
        # held so that no collector closes them (and runs their finally)
        # before the run's dead zone does.
        self._crashed: dict[int, list[asyncio.Task[Any]]] = {}
        self._pauses: list[_Pause] = []
        self._failure: BaseException | None = None
        self._failed_node: int | None = None
        self._ended = False
        self._powered_off = False  # the verdict is in (_power_off)
        self._pending: list[asyncio.Task[Any]] | None = None  # _power_off's, for _release
        # Swarm's window (a, b) of every latency range a link is given, as
        # fractions of it (askew/_explore/swarm.py); None: the range as given.
        self._latency_window: tuple[float, float] | None = None
        self._wire: _core.Network = loop._net
        loop._set_node_var(node_var)
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
        # A shrunk run's simplified draws (askew/_explore/shrink.py): every
        # latency at its link's minimum, world.random drawing zeros.
        self._latency_min = LATENCY_MIN in suppress
        self._random_zero = RANDOM_ZERO in suppress
        if self._latency_min:
            lo_ns, _hi, loss_ppm, dup_ppm, _cut = self._wire.link(-1, -1)
            self._wire.configure(lo_ns, lo_ns, loss_ppm, dup_ppm, -1, -1)
        # Names and TCP (askew/_net/host.py): the stack is made on first use.
        self._hostnames: list[str] = []
        self._names: dict[str, int] = {}
        self._tcp: Any = None
        # Simulated disks (askew/_disk/), by node id: spawn(..., disk=...).
        self._disks: dict[int, Any] = {}
        # What the failure report hints at (a call that was never awaited):
        # distinct texts, the first few.
        self._hints: list[str] = []
        _host.begin(self)
        _disk.begin(self)

    def _hint(self, text: str) -> None:
        if len(self._hints) < _HINTS_KEPT and text not in self._hints:
            self._hints.append(text)

    def __repr__(self) -> str:
        if self._ended:
            return f"<askew world seed={self.seed} ended nodes={len(self._slots)}>"
        return f"<askew world seed={self.seed} t={self.now:.6f}s nodes={len(self._slots)}>"

    @property
    def random(self) -> random.Random:
        """A random.Random on the run's user stream (made on first use: seeding
        one costs more than a small run)."""
        if self._random is None:
            made = Zeros if self._random_zero else random.Random
            self._random = made(_core.seed_stream(self.seed, _core.STREAM_USER))
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
        then "nodes:F-D" if the test let the shrinker try F to D nodes, and
        "random:zero" if it drew from world.random."""
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
        if self._random is not None:
            # Not a fault either: the run drew from world.random, which a
            # shrunk run may try drawing zeros.
            out.append((RANDOM_ZERO, 0.0, "world.random"))
        return out

    def _reshape_latency(self, lo_ns: int, hi_ns: int) -> tuple[int, int]:
        """A link's latency range as the run draws from it: under swarm, the
        seed's window of it (never outside it); else the range itself. A
        shrunk run with every latency at its minimum: the range's minimum."""
        if self._latency_min:
            return lo_ns, lo_ns
        if self._latency_window is None:
            return lo_ns, hi_ns
        a, b = self._latency_window
        return lo_ns + round((hi_ns - lo_ns) * a), lo_ns + round((hi_ns - lo_ns) * b)

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
        identity.name_node(node_id, hostname)  # what its gethostname() says
        self._names.setdefault(hostname, node_id)
        slot = _Slot(target, args)
        self._slots.append(slot)
        slot.handle = NodeHandle(self, node_id, slot)
        text = f"spawn {node_id} {_target_name(target)}"
        if mount is not None:
            if node_id >= _disk.NODES_MAX:
                raise ValueError(f"spawn(disk=...): at most {_disk.NODES_MAX} nodes have a disk")
            self._disks[node_id] = _disk.NodeDisk(self, node_id, mount)
            text += f" disk={mount}"
        self.log._emit(kinds.SPAWN, node_id, text)
        self._start(node_id)
        return slot.handle

    def _start(self, node_id: int) -> None:
        slot = self._slots[node_id]
        _alive, incarnation = self._wire.alive(node_id)
        node = Node(self, node_id, incarnation)
        slot.node = node
        slot.token = node._askew_token
        ctx = contextvars.copy_context()
        ctx.run(node_var.set, slot.token)
        if isinstance(slot.target, type):
            slot.instance = ctx.run(slot.target, node, *slot.args)
            coro = ctx.run(slot.instance.run)
        else:
            slot.instance = None
            coro = ctx.run(slot.target, node, *slot.args)
        if coro.__class__ is not _CoroutineType and not inspect.isawaitable(coro):
            raise TypeError(
                f"spawn({_target_name(slot.target)}): calling it returned "
                f"{short_repr(coro)}, not a coroutine; spawn an `async def` function"
            )
        task = self._loop.create_task(coro, name=f"node-{node_id}", context=ctx)
        slot.task = task
        token = slot.token
        task.add_done_callback(lambda t: self._node_done(node_id, token, t))

    def _node_done(self, node_id: int, token: int, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or self._slots[node_id].token != token or self._powered_off:
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

    def disk(self, node: int | NodeHandle) -> Any:
        """The test body's view of node's simulated disk (askew/_disk/view.py
        DiskView): read, exists, listdir, walk, usage, as the node sees it
        now. Outside the node, the mount path itself is the real one."""
        node_id = self._node_id(node, "disk")
        self._check_live()
        nd = self._disks.get(node_id)
        if nd is None:
            raise ValueError(f'disk: node {node_id} has no disk; spawn it with disk="/data"')
        return DiskView(self, nd)

    def address(self, node: int | NodeHandle) -> str:
        """The node's IPv4 address: 10.0.0.1 for node 0, 10.0.0.2 for node 1..."""
        return address_of(self._node_id(node, "address"))

    def hostname(self, node: int | NodeHandle) -> str:
        """The node's hostname: the `name=` given at spawn, or node-<id>."""
        return self._hostnames[self._node_id(node, "hostname")]

    def _power_off(self) -> list[BaseException]:
        """The first half of the end of this world's run, once its verdict is
        in (askew._run.onerun calls it; docs/design.md §3): every node stops
        as a crash stops it, its pauses end with it, and the test body's
        leftover tasks are cancelled and settle inside the run. Returns what
        they raised: teardown, never a failure."""
        loop = self._loop
        self._powered_off = True
        for pause in self._pauses:
            pause._over = True
            if pause._timer is not None:
                pause._timer.cancel()
        self._pauses.clear()
        for node_id, slot in enumerate(self._slots):
            if slot.token != -1:
                self._wire.crash(node_id)
                loop._pause(node_id, 0, -1, None)  # a power cut ends any pause
                slot.token = -1
        pending = loop._run_tasks()
        leftovers = [t for t in pending if getattr(t, "_askew_owner", -1) < 0]
        # Without leftovers nothing runs before _release: the list holds.
        self._pending = None if leftovers else pending
        return list(loop._settle(leftovers))

    def _release(self) -> list[BaseException]:
        """The second half, in the run's dead zone (SimLoop._freeze: time
        stands still, a crashed node's sends are dropped): every task of the
        run that will not run again has its coroutine closed, as the node it
        ran as, and leaves asyncio's registry; then the world ends. The
        network ends first, so that a stream a closed coroutine lets go of
        is not "unclosed"; a node's disk last, so that what a finally writes
        lands on the simulated disk (which ends with the world), never on
        the host's. Returns what the closing raised."""
        loop = self._loop
        _host.end(self)
        pending = loop._run_tasks() if self._pending is None else self._pending
        self._pending = None
        raised = [error for task in pending if (error := loop._detach(task))]
        self._crashed.clear()
        self._ended = True
        _disk.end(self)
        return raised

    # The world's checks and history (askew/_world/monitors.py, history.py): kept together at
    # the end of the class.
    def eventually(
        self, name: str, predicate: Callable[[], Any], *, within: float, every: float | None = None
    ) -> Any:
        """Fail the run unless predicate() is true at some poll within
        `within` virtual seconds from now; the failure names the check by
        `name`. It is polled every `every` seconds
        (default within / 64) and at the deadline, by timers of the world's
        loop; a predicate that raises fails the run with its exception
        chained. Returns the check (its .held, .cancel())."""
        return eventually(self, name, predicate, within, every)

    def always(self, name: str, predicate: Callable[[], Any]) -> Any:
        """Fail the run at the first step after which predicate() is false
        (or raises: then chained), naming the check by `name`. Checked
        after every step of the run by a hook of the C loop, all of a
        world's checks in one call; it draws nothing and schedules nothing.
        Returns the check (its .cancel())."""
        return always(self, name, predicate)

    @property
    def history(self) -> Any:
        """The run's operation history (askew.History) on the virtual clock:
        `op = world.history.invoke(node, "write", 3)` ... `op.ok()`; check
        it with askew.check.linearizable(world.history, model)."""
        found = self.__dict__.get("_askew_history")
        if found is None:
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
    lowered = name.lower()
    if lowered.startswith("node-") and lowered[5:].isdigit():
        # node-N is node N's default name, spawned yet or not: a custom one
        # would take it from that node (and its timeline file).
        raise ValueError(
            f"spawn(name={name!r}): names node-<number> are the default names of nodes "
            f"(node-{int(lowered[5:])} is node {int(lowered[5:])}'s); pick another"
        )
    if lowered in taken:
        raise ValueError(f"spawn(name={name!r}): node {taken[name.lower()]} has that name")


def _target_name(target: Any) -> str:
    return str(getattr(target, "__qualname__", None) or getattr(target, "__name__", target))


def end_unfinished() -> None:
    """End, whole, a world whose run a Ctrl-C stopped before its end ran
    (between World() and its teardown, or halfway through the teardown):
    left current, its network would answer a later wrapped test's sockets
    and its disks a later file call. The sweep's end calls this with SIGINT
    held (askew/_run/runner.py); the ends are idempotent."""
    for world in (_host.current_world(), _disk.current_world()):
        if world is not None:
            _host.end(world)
            _disk.end(world)
            world._ended = True
