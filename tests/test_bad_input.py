# SPDX-License-Identifier: Apache-2.0
"""Bad input is a clear ValueError or TypeError naming the value, at the
call; misuse of a world (outside its node, after its run, nested runs) is a
RuntimeError that says what went wrong."""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew.errors import SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")


async def idle(node: Any) -> None:
    while True:
        await node.recv()


async def nothing(world: askew.World) -> None:
    pass


# ---- the decorator and Replay ------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "error"),
    [(-1, ValueError), (2**64, ValueError), ("1", TypeError), (1.5, TypeError), (True, TypeError)],
    ids=["negative", "too-big", "str", "float", "bool"],
)
def test_a_bad_seed_is_refused_naming_it(seed: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=re.escape(repr(seed))):
        askew.simulate(seed=seed)
    with pytest.raises(error, match=re.escape(repr(seed))):
        askew.Replay.run(nothing, seed=seed)


def test_the_largest_and_smallest_seeds_are_fine() -> None:
    run_sim(nothing, seed=0)
    run_sim(nothing, seed=2**64 - 1)


@pytest.mark.parametrize(
    ("iterations", "error"),
    [(0, ValueError), (-3, ValueError), ("10", TypeError), (2.0, TypeError)],
)
def test_bad_iterations_are_refused_naming_them(iterations: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=re.escape(repr(iterations))):
        askew.simulate(seed=1, iterations=iterations)


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"strategy": "lifo"}, ValueError, "'lifo'"),
        ({"max_steps": 0}, ValueError, "0"),
        ({"max_steps": 1.5}, TypeError, "1.5"),
        ({"max_time": -1}, ValueError, "-1"),
        ({"max_time": math.nan}, ValueError, "nan"),
        ({"max_time": 0}, ValueError, "0"),
        ({"executor": "thread"}, ValueError, "'thread'"),
        ({"check_determinism": "yes"}, TypeError, "'yes'"),
    ],
    ids=lambda v: str(v) if not isinstance(v, dict) else "-".join(map(str, v.items())),
)
def test_bad_settings_are_refused_naming_the_value(
    kwargs: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=re.escape(named)) as info:
        askew.simulate(seed=1, **kwargs)
    assert next(iter(kwargs)) in str(info.value)


def test_replay_of_something_not_simulated_is_a_type_error() -> None:
    def plain() -> None:
        pass

    with pytest.raises(TypeError, match=r"Replay.run needs a test decorated"):
        askew.Replay.run(plain, seed=1)


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("ASKEW_SEED", "abc", "'abc'"),
        ("ASKEW_SEED", "-1", "-1"),
        ("ASKEW_SEED", str(2**64), str(2**64)),
        ("ASKEW_SEED", "1.5", "'1.5'"),
        ("ASKEW_ITERATIONS", "0", "0"),
        ("ASKEW_ITERATIONS", "ten", "'ten'"),
        ("ASKEW_CHECK_DETERMINISM", "maybe", "'maybe'"),
    ],
)
def test_bad_askew_environment_is_a_value_error_naming_variable_and_value(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, named: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(named)) as info:
        run_sim(nothing)
    assert name in str(info.value)


# ---- inside a run ---------------------------------------------------------------------


def test_bad_advance_is_refused_naming_the_value() -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(ValueError, match="-1"):
            await world.clock.advance(-1)
        with pytest.raises(ValueError, match="nan"):
            await world.clock.advance(math.nan)
        with pytest.raises(TypeError, match="'soon'"):
            await world.clock.advance("soon")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="None"):
            await world.clock.advance(None)  # type: ignore[arg-type]
        await world.clock.advance(0)
        assert world.now == 0

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def test_unknown_node_ids_are_refused_naming_them() -> None:
    async def body(world: askew.World) -> None:
        a = world.spawn(idle)
        world.spawn(idle)
        for call in (
            lambda: a.send(7, ("x",)),
            lambda: world.faults.crash(7),
            lambda: world.faults.restart(7),
            lambda: world.faults.skew(7, offset=1),
            lambda: world.net.isolate(7),
            lambda: world.net.cut(0, 7),
            lambda: world.net.configure(loss=0.5, link=(7, 0)),
            lambda: world.partition({0}, {1, 7}),
        ):
            with pytest.raises(
                ValueError, match=r"unknown node id 7 \(this world's nodes: 0\.\.1\)"
            ):
                call()
        with pytest.raises(ValueError, match="unknown node id -1"):
            a.send(-1, ("x",))
        with pytest.raises(TypeError, match="'1'"):
            a.send("1", ("x",))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="True"):
            world.faults.crash(True)

    run_sim(body)


def test_a_node_of_another_world_is_refused() -> None:
    other: list[Any] = []

    async def first(world: askew.World) -> None:
        other.append(world.spawn(idle))

    async def second(world: askew.World) -> None:
        world.spawn(idle)
        with pytest.raises(ValueError, match="belongs to another world"):
            world.faults.crash(other[0])

    run_sim(first)
    run_sim(second)


def test_overlapping_or_too_few_partition_groups_are_refused() -> None:
    async def body(world: askew.World) -> None:
        for _ in range(3):
            world.spawn(idle)
        with pytest.raises(ValueError, match="node 1 is in group 0 and group 1"):
            world.partition({0, 1}, {1, 2})
        with pytest.raises(ValueError, match="at least two groups, got 1"):
            world.partition({0, 1, 2})
        with pytest.raises(TypeError, match="group 1 must be a set of node ids"):
            world.partition({0}, 1)  # type: ignore[arg-type]

    run_sim(body)


def test_bad_link_settings_are_refused_naming_the_value() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(idle)
        with pytest.raises(ValueError, match=r"loss.*1.5"):
            world.net.configure(loss=1.5)
        with pytest.raises(ValueError, match=r"duplicate.*-0.1"):
            world.net.configure(duplicate=-0.1)
        with pytest.raises(ValueError, match=r"lo <= hi.*\(2, 1\)"):
            world.net.configure(latency=(2, 1))
        with pytest.raises(TypeError, match="latency"):
            world.net.configure(latency=0.1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"drift.*1.5"):
            world.faults.skew(0, drift=1.5)
        with pytest.raises(TypeError, match=r"offset.*'1'"):
            world.faults.skew(0, offset="1")  # type: ignore[arg-type]

    run_sim(body)


def test_spawning_something_that_is_not_an_async_target_is_a_type_error() -> None:
    class NoRun:
        def __init__(self, node: Any) -> None:
            pass

    class SyncRun:
        def __init__(self, node: Any) -> None:
            pass

        def run(self) -> None:
            pass

    def sync_fn(node: Any) -> None:
        pass

    async def body(world: askew.World) -> None:
        with pytest.raises(TypeError, match="got 42"):
            world.spawn(42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"spawn\(NoRun\).*async def run"):
            world.spawn(NoRun)
        with pytest.raises(TypeError, match=r"spawn\(SyncRun\).*async def run"):
            world.spawn(SyncRun)
        with pytest.raises(TypeError, match=r"sync_fn.*returned None, not a coroutine"):
            world.spawn(sync_fn)

    run_sim(body)


def test_recv_from_the_test_body_is_refused() -> None:
    async def body(world: askew.World) -> None:
        a = world.spawn(idle)
        with pytest.raises(RuntimeError, match="recv\\(\\) of node 0 called from the test body"):
            await a.recv(timeout=1)

    run_sim(body)


def test_recv_from_another_node_is_refused() -> None:
    async def thief(node: Any, victim: Any) -> None:
        try:
            await victim.recv(timeout=1)
        except RuntimeError as exc:
            node.error = str(exc)

    async def body(world: askew.World) -> None:
        victim = world.spawn(idle)
        t = world.spawn(thief, victim)
        await world.clock.advance(1)
        assert "recv() of node 0 called from node 1" in t.error

    run_sim(body)


def test_a_bad_recv_timeout_is_refused() -> None:
    async def reader(node: Any) -> None:
        try:
            await node.recv(timeout=-1)
        except ValueError as exc:
            node.error = str(exc)

    async def body(world: askew.World) -> None:
        r = world.spawn(reader)
        await world.clock.advance(1)
        assert "recv timeout" in r.error and "-1" in r.error

    run_sim(body)


def test_a_world_cannot_be_used_after_its_run_ended() -> None:
    kept: list[Any] = []

    async def body(world: askew.World) -> None:
        kept.append(world)
        kept.append(world.spawn(idle))

    run_sim(body)
    world, node = kept
    for call in (
        lambda: world.spawn(idle),
        lambda: world.log.emit("late"),
        lambda: world.net.heal(),
        lambda: world.faults.crash(0),
        lambda: node.send(0, ("late",)),
    ):
        with pytest.raises(RuntimeError, match="this world's run has ended"):
            call()
    with pytest.raises(RuntimeError, match="this world's run has ended"):
        asyncio.run(world.clock.advance(1))
    assert repr(node) == "<askew node 0 ended>"


def test_a_simulation_nested_inside_another_is_refused() -> None:
    @askew.simulate(seed=1, iterations=1)
    async def inner(world: askew.World) -> None:
        pass

    async def outer(world: askew.World) -> None:
        with pytest.raises(RuntimeError, match="cannot run inside another simulation"):
            inner()
        with pytest.raises(RuntimeError, match="cannot run inside another simulation"):
            askew.Replay.run(inner, seed=2)

    run_sim(outer)


def test_an_unwanted_payload_names_the_culprit_in_the_failure_report() -> None:
    async def body(world: askew.World) -> None:
        a, b = world.spawn(idle), world.spawn(idle)
        a.send(b, {"k": [1]})

    with pytest.raises(SimulationFailure, match=r"TypeError: payload .* type dict"):
        run_sim(body)
