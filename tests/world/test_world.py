# SPDX-License-Identifier: Apache-2.0
"""The world a simulated test gets: every row of DESIGN §4's table.

Nodes and their handles, messaging, payload immutability, the clock, the
run's PRNG, partitions and cuts, the link model, the log and net stats.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, NamedTuple

import pytest
from conftest import run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")


async def sink(node: Any) -> None:
    """Collect every message as (recv time, Message) until told to stop."""
    node.got = []
    while True:
        msg = await node.recv()
        node.got.append((asyncio.get_running_loop().time(), msg))


def kinds_and_texts(world: askew.World) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in world.log]


# ---- spawn -----------------------------------------------------------------


def test_spawned_functions_get_ids_in_order_and_their_state_is_read_through_the_handle() -> None:
    async def worker(node: Any, factor: int) -> None:
        node.value = node.id * factor
        await asyncio.sleep(1)
        node.value += 1

    async def body(world: askew.World) -> None:
        handles = [world.spawn(worker, 10) for _ in range(3)]
        assert [h.id for h in handles] == [0, 1, 2]
        await world.clock.advance(0.5)
        assert [h.value for h in handles] == [0, 10, 20]
        await world.clock.advance(1)
        assert [h.value for h in handles] == [1, 11, 21]
        handles[0].note = "set from the test"
        assert handles[0].note == "set from the test"

    run_sim(body)


def test_spawning_a_class_awaits_its_run_and_the_handle_proxies_to_the_instance() -> None:
    class Replica:
        def __init__(self, node: Any, name: str) -> None:
            self.node = node
            self.name = name
            self.state = "new"

        async def run(self) -> None:
            self.state = "running"
            await asyncio.sleep(2)
            self.state = f"done {self.node.id}"

        def describe(self) -> str:
            return f"{self.name}:{self.state}"

    async def body(world: askew.World) -> None:
        a, b = world.spawn(Replica, "a"), world.spawn(Replica, "b")
        assert (a.id, b.id) == (0, 1)
        await world.clock.advance(1)
        assert (a.state, b.describe()) == ("running", "b:running")
        await world.clock.advance(2)
        assert (a.state, b.state) == ("done 0", "done 1")

    run_sim(body)


def test_tasks_a_node_creates_belong_to_it_and_stop_when_it_crashes() -> None:
    async def parent(node: Any) -> None:
        node.ticks = 0

        async def child() -> None:
            while True:
                await asyncio.sleep(1)
                node.ticks += 1

        node.child = asyncio.create_task(child())
        await asyncio.Event().wait()

    async def body(world: askew.World) -> None:
        p = world.spawn(parent)
        await world.clock.advance(3.5)
        assert p.ticks == 3
        world.faults.crash(p)
        await world.clock.advance(10)
        assert p.ticks == 3

    run_sim(body)


# ---- messaging ------------------------------------------------------------


def test_send_and_broadcast_work_bare_and_awaited() -> None:
    async def talker(node: Any) -> None:
        node.send(1, ("bare", 0))
        await node.send(1, ("awaited", 0))
        node.broadcast(("bare-all", 0))
        await node.broadcast(("awaited-all", 0))

    async def body(world: askew.World) -> None:
        world.spawn(talker)
        listeners = [world.spawn(sink) for _ in range(2)]
        await world.clock.advance(1)
        assert sorted(m.payload[0] for _, m in listeners[0].got) == [
            "awaited",
            "awaited-all",
            "bare",
            "bare-all",
        ]
        assert sorted(m.payload[0] for _, m in listeners[1].got) == ["awaited-all", "bare-all"]

    run_sim(body)


def test_broadcast_reaches_every_other_node_and_not_the_sender() -> None:
    async def body(world: askew.World) -> None:
        nodes = [world.spawn(sink) for _ in range(4)]
        nodes[2].broadcast(("hi",))
        await world.clock.advance(1)
        assert [len(n.got) for n in nodes] == [1, 1, 0, 1]
        assert {m.src for n in nodes for _, m in n.got} == {2}

    run_sim(body)


def test_recv_returns_a_message_with_src_dst_payload_and_sent_at_or_none_on_timeout() -> None:
    async def receiver(node: Any) -> None:
        node.first = await node.recv(timeout=5)
        node.second = await node.recv(timeout=5)
        node.timed_out_at = asyncio.get_running_loop().time()

    async def body(world: askew.World) -> None:
        world.spawn(receiver)
        r = world.nodes[0]
        sender = world.spawn(sink)
        await world.clock.advance(2)
        sender.send(r, ("ping", 7))
        await world.clock.advance(10)
        msg = r.first
        assert isinstance(msg, askew.Message)
        assert (msg.src, msg.dst, msg.payload, msg.sent_at) == (1, 0, ("ping", 7), 2.0)
        assert r.second is None
        assert msg.sent_at + 5 <= r.timed_out_at < msg.sent_at + 6

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_messages_sent_before_recv_wait_in_the_inbox() -> None:
    async def late(node: Any) -> None:
        await asyncio.sleep(5)
        node.got = [(await node.recv(timeout=0)).payload for _ in range(2)]

    async def body(world: askew.World) -> None:
        r = world.spawn(late)
        s = world.spawn(sink)
        s.send(r, ("a",))
        await world.clock.advance(1)
        s.send(r, ("b",))
        await world.clock.advance(10)
        assert sorted(r.got) == [("a",), ("b",)]

    run_sim(body)


def test_recv_receives_when_awaited_once_as_the_coroutine_it_replaces_did() -> None:
    """node.recv() is an awaitable: it takes nothing from the inbox until
    awaited (handed to ensure_future, in that task's first step), and is
    awaited once."""

    async def late(node: Any) -> None:
        unawaited = node.recv()
        await asyncio.sleep(2)
        assert "not awaited" in repr(unawaited)
        got = node.recv(timeout=0)
        node.first = (await got).payload  # the message sent at t=1: still queued
        with pytest.raises(RuntimeError, match="cannot reuse an already awaited recv"):
            await got
        node.later = asyncio.ensure_future(node.recv(timeout=5))
        node.waited = (await node.later).payload

    async def body(world: askew.World) -> None:
        r = world.spawn(late)
        s = world.spawn(sink)
        await world.clock.advance(1)
        s.send(r, "a")
        await world.clock.advance(2)
        assert r.first == "a"
        s.send(r, "b")
        await world.clock.advance(1)
        assert r.waited == "b"

    run_sim(body)


# ---- payloads ---------------------------------------------------------------


class Point(NamedTuple):
    x: int
    y: int


@dataclasses.dataclass(frozen=True)
class Frozen:
    name: str
    tags: frozenset[str]


@dataclasses.dataclass
class Thawed:
    name: str


@pytest.mark.parametrize(
    ("payload", "type_name"),
    [
        ([1, 2], "list"),
        ({"a": 1}, "dict"),
        ({1, 2}, "set"),
        (bytearray(b"x"), "bytearray"),
        (("ok", [1]), "list"),
        (Frozen("f", frozenset({"x"})), None),
        (Thawed("t"), "Thawed"),
    ],
    ids=["list", "dict", "set", "bytearray", "nested-list", "frozen-ok", "thawed"],
)
def test_mutable_payloads_are_refused_with_a_type_error_naming_the_type(
    payload: Any, type_name: str | None
) -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        if type_name is None:
            a.send(b, payload)
            return
        with pytest.raises(TypeError, match=rf"mutable part of type {type_name}\b"):
            a.send(b, payload)
        with pytest.raises(TypeError, match=rf"type {type_name}\b"):
            a.broadcast(payload)

    run_sim(body)


def test_immutable_payloads_arrive_as_the_same_objects() -> None:
    payloads = [
        ("tuple", 1, 2.5, None, b"x"),
        frozenset({1, 2}),
        Frozen("f", frozenset({"a"})),
        Point(1, 2),
        "text",
        42,
    ]

    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.configure(latency=(0.01, 0.01))
        for p in payloads:
            a.send(b, p)
            await world.clock.advance(1)
        assert [m.payload for _, m in b.got] == payloads
        assert all(m.payload is p for (_, m), p in zip(b.got, payloads, strict=True))

    run_sim(body)


# ---- time and randomness ------------------------------------------------------


def test_world_now_is_virtual_seconds_and_clock_advance_moves_it_exactly() -> None:
    async def body(world: askew.World) -> None:
        assert world.now == 0.0
        await world.clock.advance(seconds=30)
        assert world.now == 30.0
        await world.clock.advance(0.25)
        assert world.now == 30.25
        await asyncio.sleep(1)
        assert world.now == 31.25
        assert asyncio.get_running_loop().time() == world.now

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_clock_advance_runs_everything_due_within_it() -> None:
    async def body(world: askew.World) -> None:
        fired: list[float] = []
        loop = asyncio.get_running_loop()
        for delay in (5, 1, 3, 10, 10.5):
            loop.call_later(delay, lambda: fired.append(world.now))
        await world.clock.advance(10)
        assert sorted(fired) == [1, 3, 5, 10]

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def _draws(seed: int, busy: bool) -> list[float]:
    out: list[float] = []

    async def spinner(node: Any) -> None:
        while True:
            await asyncio.sleep(0.001 * (node.id + 1))

    async def body(world: askew.World) -> None:
        if busy:
            for _ in range(5):
                world.spawn(spinner)
            world.net.configure(latency=(0.0, 0.5), loss=0.3)
            await world.clock.advance(1)
        out.extend(world.random.random() for _ in range(5))

    run_sim(body, seed=seed)
    return out


def test_world_random_is_deterministic_per_seed_and_independent_of_scheduling() -> None:
    quiet = _draws(11, busy=False)
    assert _draws(11, busy=False) == quiet
    assert _draws(11, busy=True) == quiet
    assert _draws(12, busy=False) != quiet


# ---- partitions and cuts ---------------------------------------------------------


def test_partition_cuts_links_between_groups_and_heals_on_exit() -> None:
    async def body(world: askew.World) -> None:
        n = [world.spawn(sink) for _ in range(4)]
        async with world.partition({0, 1}, {n[2], 3}):
            n[0].send(2, ("across",))
            n[3].send(1, ("across back",))
            n[0].send(1, ("within",))
            n[2].send(3, ("within",))
            await world.clock.advance(1)
        n[0].send(2, ("after heal",))
        await world.clock.advance(1)
        assert [m.payload for _, m in n[1].got] == [("within",)]
        assert [m.payload for _, m in n[3].got] == [("within",)]
        assert [m.payload for _, m in n[2].got] == [("after heal",)]
        texts = kinds_and_texts(world)
        assert ("net", "partition {0, 1} | {2, 3}") in texts
        assert ("net", "0 -> 2  ('across',)   dropped: partitioned") in texts
        assert ("net", "3 -> 1  ('across back',)   dropped: partitioned") in texts
        assert ("net", "heal") in texts

    run_sim(body)


def test_partition_works_as_a_plain_context_manager_too() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        with world.partition({0}, {1}):
            a.send(b, ("x",))
            await world.clock.advance(1)
        assert b.got == []
        a.send(b, ("y",))
        await world.clock.advance(1)
        assert [m.payload for _, m in b.got] == [("y",)]

    run_sim(body)


def test_a_one_way_cut_drops_one_direction_only() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.cut(a, b)
        a.send(b, ("a to b",))
        b.send(a, ("b to a",))
        await world.clock.advance(1)
        assert b.got == []
        assert [m.payload for _, m in a.got] == [("b to a",)]
        assert ("net", "cut 0 -> 1") in kinds_and_texts(world)
        assert world.net.stats()["partitioned"] == 1

    run_sim(body)


def test_isolate_cuts_a_node_off_both_ways_and_heal_restores_it() -> None:
    async def body(world: askew.World) -> None:
        n = [world.spawn(sink) for _ in range(3)]
        world.net.isolate(n[1])
        n[0].send(1, ("in",))
        n[1].send(2, ("out",))
        n[0].send(2, ("bystanders",))
        await world.clock.advance(1)
        assert n[1].got == []
        assert [m.payload for _, m in n[2].got] == [("bystanders",)]
        world.net.heal()
        n[0].send(1, ("in again",))
        n[1].send(2, ("out again",))
        await world.clock.advance(1)
        assert [m.payload for _, m in n[1].got] == [("in again",)]
        assert [m.payload for _, m in n[2].got] == [("bystanders",), ("out again",)]
        texts = kinds_and_texts(world)
        assert ("net", "isolate 1") in texts and ("net", "heal") in texts

    run_sim(body)


# ---- the link model -----------------------------------------------------------


def test_latency_bounds_hold_between_sent_at_and_receive_time() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.configure(latency=(0.2, 0.7))
        for _ in range(40):
            a.send(b, ("m",))
            await world.clock.advance(0.05)
        await world.clock.advance(1)
        delays = [t - m.sent_at for t, m in b.got]
        assert len(delays) == 40
        assert all(0.2 - 1e-9 <= d <= 0.7 + 1e-9 for d in delays)
        assert max(delays) - min(delays) > 0.1  # drawn, not fixed
        order = [m.sent_at for _, m in b.got]
        assert order != sorted(order)  # reordering follows from latency

    run_sim(body, seed=3)


def test_loss_one_drops_everything_with_reason_lost() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.configure(loss=1)
        for i in range(5):
            a.send(b, ("m", i))
        await world.clock.advance(1)
        assert b.got == []
        assert world.net.stats()["lost"] == 5
        lost = [e for e in world.log if e.text.endswith("dropped: lost")]
        assert len(lost) == 5

    run_sim(body)


def test_duplicate_one_delivers_every_message_twice() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.configure(duplicate=1)
        a.send(b, ("m", 1))
        await world.clock.advance(1)
        assert [m.payload for _, m in b.got] == [("m", 1), ("m", 1)]
        assert world.net.stats()["duplicated"] == 1

    run_sim(body)


def test_a_per_link_model_applies_to_that_directed_link_only() -> None:
    async def body(world: askew.World) -> None:
        a, b, c = world.spawn(sink), world.spawn(sink), world.spawn(sink)
        world.net.configure(latency=(0.0, 0.0))
        world.net.configure(loss=1, link=(a, b))
        world.net.configure(latency=(3.0, 3.0), link=(0, 2))
        a.send(b, ("lost",))
        b.send(a, ("reverse",))
        a.send(c, ("slow",))
        await world.clock.advance(10)
        assert b.got == []
        assert [m.payload for _, m in a.got] == [("reverse",)]
        ((t, m),) = c.got
        assert m.payload == ("slow",) and t - m.sent_at == pytest.approx(3.0)

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_configure_keeps_what_it_is_not_given() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(sink), world.spawn(sink)
        world.net.configure(latency=(1.0, 1.0))
        world.net.configure(duplicate=1)
        a.send(b, ("m",))
        await world.clock.advance(2)
        assert [t - m.sent_at for t, m in b.got] == [pytest.approx(1.0)] * 2

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


# ---- the log and stats -----------------------------------------------------------


def test_the_log_records_every_kind_of_event_with_time_kind_node_and_text() -> None:
    async def chatty(node: Any) -> None:
        node.emit("hello from the node")
        await node.recv()

    async def body(world: askew.World) -> None:
        a = world.spawn(chatty)
        b = world.spawn(sink)
        world.log.emit("hello from the test")
        await world.clock.advance(1)
        a.send(b, ("one",))
        await world.clock.advance(1)
        async with world.partition({0}, {1}):
            a.send(b, ("two",))
            await world.clock.advance(1)
        world.faults.crash(b)
        a.send(b, ("three",))
        await world.clock.advance(1)
        world.faults.restart(b)
        await world.clock.advance(1)
        events = list(world.log)
        assert len(world.log) == len(events)
        texts = [(e.kind, e.node, e.text) for e in events]
        assert ("spawn", 0, f"spawn 0 {chatty.__qualname__}") in texts
        assert ("world", None, "hello from the test") in texts
        assert ("node", 0, "0 hello from the node") in texts
        assert ("net", 0, "0 -> 1  ('one',)   sent") in texts
        assert ("net", 1, "0 -> 1  ('one',)   delivered") in texts
        assert ("net", None, "partition {0} | {1}") in texts
        # a cut link drops at send (logged as the sender's), a crashed node at delivery
        assert ("net", 0, "0 -> 1  ('two',)   dropped: partitioned") in texts
        assert ("net", None, "heal") in texts
        assert ("crash", 1, "crash 1") in texts
        assert ("net", 1, "0 -> 1  ('three',)   dropped: crashed") in texts
        assert ("restart", 1, "restart 1") in texts
        times = [e.time for e in events]
        assert times == sorted(times) and times[-1] <= world.now
        user = next(e for e in events if e.text == "hello from the test")
        assert str(user) == "   0.000s  world   hello from the test"

    run_sim(body)


def test_log_emit_from_a_node_task_is_attributed_to_that_node() -> None:
    async def n(node: Any) -> None:
        await asyncio.sleep(1)
        node._askew_world.log.emit("from inside")

    async def body(world: askew.World) -> None:
        world.spawn(n)
        world.spawn(n)
        await world.clock.advance(2)
        mine = sorted((e.node, e.text) for e in world.log if e.kind == "node")
        assert mine == [(0, "0 from inside"), (1, "1 from inside")]

    run_sim(body)


def test_net_stats_count_sent_delivered_and_drops_by_reason() -> None:
    async def body(world: askew.World) -> None:
        n = [world.spawn(sink) for _ in range(3)]
        n[0].send(1, ("ok",))
        n[0].send(2, ("ok",))
        world.net.isolate(2)
        n[0].send(2, ("cut",))
        world.net.heal()
        world.faults.crash(1)
        n[0].send(1, ("crashed",))
        world.net.configure(loss=1, link=(0, 2))
        n[0].send(2, ("lost",))
        await world.clock.advance(1)
        assert world.net.stats() == {
            "sent": 5,
            "duplicated": 0,
            "delivered": 1,
            "crashed": 2,
            "partitioned": 1,
            "lost": 1,
            "in_flight": 0,
        }

    run_sim(body)
