# SPDX-License-Identifier: Apache-2.0
"""The shapes a node's receive loop waits in: `await node.recv(timeout=...)`,
`asyncio.wait_for` and `asyncio.timeout` around a recv, `asyncio.sleep`.
They run no Python frame of askew's own (node.recv is C, ext/node_type.c),
and each keeps its meaning: a message already waiting, a timeout, a
cancelled recv whose message is kept, a restarted node's fresh recv.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import sys
import weakref
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import pytest
from conftest import run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")

ASKEW_DIR = os.path.dirname(os.path.abspath(askew.__file__)) + os.sep


async def plain(node: Any) -> Any:
    return await node.recv(timeout=5)


async def with_wait_for(node: Any) -> Any:
    try:
        return await asyncio.wait_for(node.recv(), 5)
    except TimeoutError:
        return None


async def with_timeout(node: Any) -> Any:
    try:
        async with asyncio.timeout(5):
            return await node.recv()
    except TimeoutError:
        return None


async def sleeping(node: Any) -> Any:
    await asyncio.sleep(1)
    return "slept"


SHAPES: list[Callable[[Any], Awaitable[Any]]] = [plain, with_wait_for, with_timeout, sleeping]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__)
def test_a_receive_loop_runs_no_python_frame_of_askews_own(
    shape: Callable[[Any], Awaitable[Any]],
) -> None:
    """A profile hook, installed for the receiving node's task only, sees
    the node's own code and asyncio's, and nothing under askew/: waiting,
    timing out and waking are C all the way (issue 23)."""
    askew_frames: list[str] = []

    async def receiver(node: Any) -> None:
        task = asyncio.current_task()

        def hook(frame: FrameType, event: str, arg: Any) -> None:
            code = frame.f_code
            if (
                event == "call"
                and code.co_filename.startswith(ASKEW_DIR)
                and asyncio.current_task() is task
            ):
                askew_frames.append(f"{code.co_filename}:{code.co_name}")

        node.got = []
        outer = sys.getprofile()
        sys.setprofile(hook)
        try:
            for _ in range(3):  # a message waiting, one arriving, a timeout
                node.got.append(await shape(node))
        finally:
            sys.setprofile(outer)

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        s = world.spawn(idle)
        s.send(r, "early")
        await world.clock.advance(3)
        s.send(r, "later")
        await world.clock.advance(20)
        expected = ["slept"] * 3 if shape is sleeping else ["early", "later", None]
        assert [getattr(m, "payload", m) for m in r.got] == expected

    run_sim(body)
    assert askew_frames == []


async def idle(node: Any) -> None:
    await asyncio.sleep(3600)


@pytest.mark.parametrize("shape", [plain, with_wait_for, with_timeout], ids=lambda s: s.__name__)
def test_every_wait_shape_times_out_at_its_deadline_and_then_receives_again(
    shape: Callable[[Any], Awaitable[Any]],
) -> None:
    async def receiver(node: Any) -> None:
        loop = asyncio.get_running_loop()
        node.first = await shape(node)
        node.timed_out_at = loop.time()
        node.second = await shape(node)

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        s = world.spawn(idle)
        await world.clock.advance(7)
        assert r.first is None and r.timed_out_at == 5.0
        s.send(r, ("after", 7))
        await world.clock.advance(1)
        assert r.second.payload == ("after", 7) and r.second.src == 1

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_a_message_that_comes_after_a_cancelled_recv_waits_for_the_next_one() -> None:
    """wait_for cancels the recv it gave up on; the message that arrives
    later is not lost with it but queued for the next recv."""

    async def receiver(node: Any) -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(node.recv(), 1)
        await asyncio.sleep(4)
        node.got = await node.recv(timeout=0)

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        s = world.spawn(idle)
        await world.clock.advance(3)
        s.send(r, "kept")
        await world.clock.advance(5)
        assert r.got.payload == "kept"

    run_sim(body)


def test_cancelling_the_task_that_waits_in_recv_lets_another_task_receive() -> None:
    async def receiver(node: Any) -> None:
        waiting = asyncio.ensure_future(node.recv())
        await asyncio.sleep(1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        node.got = await asyncio.ensure_future(node.recv(timeout=10))

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        s = world.spawn(idle)
        await world.clock.advance(2)
        s.send(r, "to the second task")
        await world.clock.advance(1)
        assert r.got.payload == "to the second task"

    run_sim(body)


def test_a_restarted_node_receives_through_its_new_incarnation() -> None:
    async def receiver(node: Any) -> None:
        node.got = []
        while True:
            msg = await node.recv(timeout=5)
            node.got.append(None if msg is None else msg.payload)

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        s = world.spawn(idle)
        s.send(r, "before")
        await world.clock.advance(1)
        assert r.got == ["before"]
        world.faults.crash(r)
        s.send(r, "while down")
        await world.clock.advance(1)
        world.faults.restart(r)
        s.send(r, "after")
        await world.clock.advance(1)
        assert r.got == ["after"]

    run_sim(body)


def test_recv_takes_one_timeout_positionally_or_by_keyword_and_nothing_else() -> None:
    async def receiver(node: Any) -> None:
        node.results = [await node.recv(0), await node.recv(timeout=0)]
        for call, match in [
            (lambda: node.recv(1, 2), "at most 1 argument"),
            (lambda: node.recv(timeout=1, other=2), "at most 1 argument"),
            (lambda: node.recv(tmeout=1), "unexpected keyword argument 'tmeout'"),
        ]:
            with pytest.raises(TypeError, match=match):
                call()

    async def body(world: askew.World) -> None:
        r = world.spawn(receiver)
        await world.clock.advance(1)
        assert r.results == [None, None]

    run_sim(body)


def test_a_nodes_world_and_token_are_read_only_to_its_code() -> None:
    async def writer(node: Any) -> None:
        for name in ("_askew_world", "_askew_token", "id"):
            with pytest.raises(AttributeError):
                setattr(node, name, None)
        node.state = "plain attributes stay writable"

    async def body(world: askew.World) -> None:
        w = world.spawn(writer)
        await world.clock.advance(1)
        assert w.state == "plain attributes stay writable"

    run_sim(body)


def test_wake_ups_run_as_their_own_node_across_more_nodes_than_the_loop_remembers() -> None:
    """A timer's wake-up reaches its task from outside the task's context:
    the loop finds the node from a small memory of contexts (ext/node.h,
    eight of them). With twelve nodes ticking, a crash still stops exactly
    the crashed incarnations, and a restart ticks as the new one."""

    async def ticker(node: Any) -> None:
        node.ticks = 0
        while True:
            await asyncio.sleep(1)
            node.ticks += 1

    async def body(world: askew.World) -> None:
        nodes = [world.spawn(ticker) for _ in range(12)]
        await world.clock.advance(5.5)
        for n in nodes[::2]:
            world.faults.crash(n)
        await world.clock.advance(5)
        assert [n.ticks for n in nodes] == [5, 10] * 6
        world.faults.restart(nodes[0])  # at 10.5: ticks at 11.5 and 12.5
        await world.clock.advance(2.25)
        assert [n.ticks for n in nodes] == [2, 12] + [5, 12] * 5

    run_sim(body, strategy="fifo")


def test_the_loop_keeps_no_context_alive_by_remembering_it() -> None:
    async def waker(node: Any) -> None:
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        node.ref = weakref.ref(ctx)
        fut = loop.create_future()
        # Handed its context from another one: looked up, and remembered.
        contextvars.Context().run(loop.call_soon, fut.set_result, "woke", context=ctx)
        node.got = await fut
        del ctx

    async def body(world: askew.World) -> None:
        w = world.spawn(waker)
        await world.clock.advance(1)
        assert w.got == "woke"
        gc.collect()
        assert w.ref() is None

    run_sim(body)
