# SPDX-License-Identifier: Apache-2.0
"""The corpus on simloom and simloop: askew's world API over their hosts.

A bug's `scenario(world, fixed)` is written against askew's world. Neither
peer has nodes with a message inbox, so this adapter gives them one the way
a user porting the test would: each node is a host (simloom `world.host`,
simloop `loop.net.host`) with a UDP endpoint whose datagrams (pickled
`(src, payload)` pairs) land in an `asyncio.Queue`; `recv(timeout)` is
`asyncio.wait_for` on it. Crashes, partitions and loss map to the peers'
own faults; both peers get askew's default latency (1-10 ms) so the three
networks agree. What a peer cannot express raises `Inexpressible`: neither
has a stop-the-world pause (a host whose tasks stop while its clock runs
on; both only crash hosts). Imported on 3.12+ only (the peers need it).
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import random
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, NamedTuple

from . import _compat

PORT = 7000
LATENCY = (0.001, 0.010)  # askew's default link latency (ext/engine/net.h)


class Inexpressible(Exception):
    """The peer has no way to say what the scenario asks for."""


class Msg(NamedTuple):
    src: int
    dst: int
    payload: Any


class _Inbox(asyncio.DatagramProtocol):
    def __init__(self, dst: int, queue: asyncio.Queue[Msg]) -> None:
        self.dst = dst
        self.queue = queue

    def datagram_received(self, data: bytes, addr: Any) -> None:
        src, payload = pickle.loads(data)
        self.queue.put_nowait(Msg(src, self.dst, payload))


class PeerNode:
    """What node code receives, as askew's Node: id, send, broadcast, recv;
    any other attribute is the node's state."""

    def __init__(self, world: PeerWorld, node_id: int, transport: Any, inbox: asyncio.Queue[Msg]):
        self.id = node_id
        self._world = world
        self._transport = transport
        self._inbox = inbox

    def send(self, dst: int | PeerHandle, payload: Any) -> None:
        dst_id = dst if isinstance(dst, int) else dst.id
        data = pickle.dumps((self.id, payload))
        self._transport.sendto(data, (self._world._address(dst_id), PORT))

    def broadcast(self, payload: Any) -> None:
        for i in range(len(self._world._handles)):
            if i != self.id:
                self.send(i, payload)

    async def recv(self, timeout: float | None = None) -> Msg | None:
        if timeout is None:
            return await self._inbox.get()
        try:
            return await asyncio.wait_for(self._inbox.get(), timeout)
        except TimeoutError:
            return None


class PeerHandle:
    """What spawn returns: the id, and the current incarnation's state."""

    def __init__(self, node_id: int, target: Callable[..., Any], args: tuple[Any, ...]):
        self.id = node_id
        self._target = target
        self._args = args
        self._node: PeerNode | None = None
        self._bound = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_node"], name)


class _Clock:
    async def advance(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Faults:
    def __init__(self, world: PeerWorld) -> None:
        self._world = world

    def crash(self, node: PeerHandle) -> None:
        self._world._crash(node.id)

    def pause(self, node: PeerHandle, seconds: float | None = None) -> None:
        raise Inexpressible(
            f"{self._world.name} has no stop-the-world pause (a host whose tasks stop "
            "while its clock runs on): it can only crash a host"
        )


class _Net:
    def __init__(self, world: PeerWorld) -> None:
        self._world = world

    def configure(
        self, *, loss: float | None = None, duplicate: float | None = None, **other: Any
    ) -> None:
        if other:
            raise Inexpressible(f"net.configure({', '.join(other)}) is not ported")
        if loss is not None:
            self._world._set_link("loss", loss)
        if duplicate is not None:
            self._world._set_link("duplicate", duplicate)


class PeerWorld:
    """askew's world API, the parts the corpus uses, over a peer's hosts."""

    name = "peer"

    def __init__(self) -> None:
        self._handles: list[PeerHandle] = []
        self.clock = _Clock()
        self.faults = _Faults(self)
        self.net = _Net(self)

    # What each peer supplies.
    def _start(self, handle: PeerHandle) -> None:
        raise NotImplementedError

    def _bind_host(self, node_id: int) -> str:
        raise NotImplementedError

    def _address(self, node_id: int) -> str:
        return f"n{node_id}"

    def _crash(self, node_id: int) -> None:
        raise NotImplementedError

    def _cut(self, a: list[int], b: list[int]) -> None:
        raise NotImplementedError

    def _heal(self) -> None:
        raise NotImplementedError

    def _set_link(self, what: str, p: float) -> None:
        raise NotImplementedError

    # askew's world API.
    def spawn(self, target: Callable[..., Any], *args: Any) -> PeerHandle:
        handle = PeerHandle(len(self._handles), target, args)
        self._handles.append(handle)
        self._start(handle)
        return handle

    @contextlib.asynccontextmanager
    async def partition(self, *groups: Iterable[Any]) -> AsyncIterator[None]:
        if len(groups) != 2:
            raise Inexpressible(f"{self.name} partitions split hosts into two groups only")
        a, b = ([n if isinstance(n, int) else n.id for n in g] for g in groups)
        self._cut(a, b)
        try:
            yield
        finally:
            self._heal()

    async def _node_main(self, handle: PeerHandle) -> None:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Msg] = asyncio.Queue()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Inbox(handle.id, inbox), local_addr=(self._bind_host(handle.id), PORT)
        )
        handle._node = PeerNode(self, handle.id, transport, inbox)
        handle._bound.set()
        # askew's nodes can receive from the moment they are spawned; here a
        # datagram to an endpoint not yet bound is lost, so wait for all.
        for other in list(self._handles):
            await other._bound.wait()
        await handle._target(handle._node, *handle._args)


class SimloomWorld(PeerWorld):
    name = "simloom"

    def __init__(self, world: Any) -> None:
        super().__init__()
        self._world = world
        self._hosts: list[Any] = []
        world.net.set_latency(*LATENCY)

    def _start(self, handle: PeerHandle) -> None:
        host = self._world.host(self._address(handle.id))
        self._hosts.append(host)
        host.spawn(lambda: self._node_main(handle))

    def _bind_host(self, node_id: int) -> str:
        return self._address(node_id)

    def _crash(self, node_id: int) -> None:
        self._hosts[node_id].crash()

    def _cut(self, a: list[int], b: list[int]) -> None:
        self._world.net.partition([self._hosts[i] for i in a], [self._hosts[i] for i in b])

    def _heal(self) -> None:
        self._world.net.heal()

    def _set_link(self, what: str, p: float) -> None:
        percent = round(p * 100)
        if percent != p * 100:
            raise Inexpressible(f"simloom's datagram {what} is a whole percent, not {p}")
        if what == "loss":
            self._world.net.set_datagram_loss(percent)
        else:
            self._world.net.set_datagram_duplication(percent)


class SimloopWorld(PeerWorld):
    name = "simloop"

    def __init__(self) -> None:
        super().__init__()
        self._net = asyncio.get_running_loop().net  # type: ignore[attr-defined]
        self._net.set_defaults(latency=LATENCY)

    def _start(self, handle: PeerHandle) -> None:
        host = self._net.host(self._address(handle.id))
        host.create_task(self._node_main(handle))

    def _bind_host(self, node_id: int) -> str:
        return "0.0.0.0"

    def _crash(self, node_id: int) -> None:
        self._net.crash(self._address(node_id))

    def _cut(self, a: list[int], b: list[int]) -> None:
        self._net.partition([self._address(i) for i in a], [self._address(i) for i in b])

    def _heal(self) -> None:
        self._net.heal()

    def _set_link(self, what: str, p: float) -> None:
        if what == "loss":
            self._net.set_defaults(drop=p)
        else:
            self._net.set_defaults(duplicate=p)


def _simloom_buggify(name: str, probability: float) -> bool:
    import simloom

    return bool(simloom.sometimes(name, round(probability * 100)))


def _coin(name: str, probability: float) -> bool:
    # simloop has no buggify: a user writes a coin on the run's seeded
    # random module (seeded from simloop's per-run stream below).
    return random.random() < probability


def simloom_first_failure(
    module: Any, fixed: bool, start_seed: int, cap: int, scheduler: str | None = None
) -> int | None:
    """Runs simloom takes to the first failure of the bug (seeds from
    start_seed on), or None if none of `cap` runs failed."""
    import simloom

    async def main(world: Any) -> None:
        await module.scenario(SimloomWorld(world), fixed)

    old = _compat.use(_simloom_buggify)
    try:
        found = simloom.explore(
            main,
            runs=cap,
            start_seed=start_seed,
            stop_on_failure=True,
            scheduler=scheduler,
            virtual_time=True,
            seed_randomness=True,  # what @simloom.test sets: `random` is the tape's
        )
    finally:
        _compat.use(old)
    if not found.failed:
        return None
    _raise_if_inexpressible(found.first_failure.error)
    return int(found.runs)


def simloop_first_failure(
    module: Any, fixed: bool, start_seed: int, cap: int, policy: str = "random", depth: int = 3
) -> int | None:
    """Runs simloop takes to the first failure of the bug, or None."""
    import simloop

    async def main() -> None:
        random.seed(simloop.sim.random.getrandbits(64))
        await module.scenario(SimloopWorld(), fixed)

    old = _compat.use(_coin)
    try:
        report = simloop.explore(
            main, range(start_seed, start_seed + cap), trace_tail=0, policy=policy, pct_depth=depth
        )
    finally:
        _compat.use(old)
    if report is None:
        return None
    _raise_if_inexpressible(report.exception)
    return int(report.seeds_passed) + 1


def _raise_if_inexpressible(error: BaseException | None) -> None:
    """A run that failed because the port cannot be written is no finding."""
    while error is not None:
        if isinstance(error, Inexpressible):
            raise error
        error = error.__cause__ or error.__context__
