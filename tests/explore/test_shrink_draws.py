# SPDX-License-Identifier: Apache-2.0
"""Shrinking the draws that are no fault (askew/_explore/shrink.py, last
step): every latency at its link's minimum, no CPU time or overshoot,
world.random drawing zeros, asyncio's FIFO order across nodes; each kept
only when the run still fails the same way. A failing run with no fault
call is shrunk too, its report says what the smallest failing run needs,
and the shrunk run replays from the printed command, failing the same way."""

from __future__ import annotations

import asyncio
import re
import textwrap
from typing import Any

import pytest
from conftest import run_pytest

import askew
from askew._loop.settings import parse_suppress

pytestmark = pytest.mark.usefixtures("clean_env")


def test_every_latency_is_its_links_minimum_in_a_latency_min_run() -> None:
    seen: list[float] = []

    async def body(world: askew.World) -> None:
        async def echo(node: Any) -> None:
            while True:
                msg = await node.recv()
                seen.append(world.now - msg.sent_at)
                if msg.payload < 20:
                    node.send(msg.src, msg.payload + 1)

        a, b = world.spawn(echo), world.spawn(echo)
        world.net.configure(latency=(0.002, 0.009), link=(a, b))
        a.send(b.id, 0)
        await world.clock.advance(1)

    askew.Replay.run(body, seed=3, suppress=["latency:min"])
    one_way = sorted(set(round(s, 9) for s in seen))
    # a -> b at 2 ms (its configured minimum), b -> a at the default 1 ms,
    # each plus at most the CPU time the receiving step took.
    assert len(seen) == 21
    assert all(0.001 <= s < 0.0011 or 0.002 <= s < 0.0021 for s in seen), seen
    assert one_way[0] < 0.0011 and one_way[-1] >= 0.002


def test_world_random_draws_zeros_and_no_method_loops_in_a_random_zero_run() -> None:
    got: list[Any] = []

    async def body(world: askew.World) -> None:
        r = world.random
        got.extend(
            [r.random(), r.randint(3, 9), r.choice("xyz"), r.uniform(2, 5),
             r.normalvariate(7, 1), r.gauss(1, 2), r.betavariate(1, 3), r.gammavariate(2, 3)]
        )  # fmt: skip

    askew.Replay.run(body, seed=3, suppress=["random:zero"])
    assert got == [0.0, 3, "x", 2.0, 7, 1, 0.25, 6]


def test_timing_zero_and_schedule_fifo_set_the_runs_timing() -> None:
    seen: list[tuple[str, float]] = []

    async def body(world: askew.World) -> None:
        await asyncio.sleep(0.5)
        seen.append((world._loop._strategy, world.now))

    askew.Replay.run(body, seed=3, suppress=["timing:zero"])
    askew.Replay.run(body, seed=3, suppress=["schedule:fifo"])
    askew.Replay.run(body, seed=3)
    assert seen[0] == ("faithful", 0.5)  # no overshoot
    assert seen[1] == ("fifo", 0.5)
    assert seen[2][0] == "faithful" and seen[2][1] > 0.5  # the sweep's own again


_NO_FAULT = textwrap.dedent(
    """
    import asyncio, askew

    # A quota of one, checked then taken across an await: two clients that
    # both check before either takes it exceed it. No fault is involved.
    async def server(node):
        node.taken = 0
        while True:
            msg = await node.recv()
            if msg.payload == "check":
                node.send(msg.src, node.taken < 1)
            else:
                node.taken += 1

    async def client(node, server_id):
        node.send(server_id, "check")
        ok = (await node.recv()).payload
        if ok:
            node.send(server_id, "take")

    @askew.simulate(seed=2, iterations=200)
    async def test_quota(world):
        s = world.spawn(server)
        for _ in range(2):
            world.spawn(client, s.id)
        await world.clock.advance(1)
        assert s.taken <= 1, f"quota exceeded: {s.taken}"
    """
)


def test_a_failure_with_no_fault_is_shrunk_and_its_shrunk_replay_fails_the_same_way(
    tmp_path: Any,
) -> None:
    first = run_pytest(tmp_path, _NO_FAULT, env={"ASKEW_SHRINK": "1"})
    assert first.returncode == 1, first.stdout
    out = first.stdout
    assert "shrinking (the run has no fault)" in out
    assert "the smallest failing run needs: " in out
    shrunk = re.search(r"replay shrunk: ASKEW_SUPPRESS=(\S+) ASKEW_SEED=(\d+)", out)
    assert shrunk is not None, out
    assert set(shrunk.group(1).split(",")) <= {
        "latency:min", "timing:zero", "random:zero", "schedule:fifo"
    }  # fmt: skip
    headline = re.search(r"SimulationFailure: (.*)", out)
    assert headline is not None
    again = run_pytest(
        tmp_path,
        _NO_FAULT,
        env={
            "ASKEW_SHRINK": "0",
            "ASKEW_SUPPRESS": shrunk.group(1),
            "ASKEW_SEED": shrunk.group(2),
            "ASKEW_ITERATIONS": "1",
        },
    )
    assert again.returncode == 1
    assert f"SimulationFailure: {headline.group(1)}" in again.stdout


_OTHERWISE = textwrap.dedent(
    """
    import askew

    async def receiver(node):
        node.got = await node.recv()

    @askew.simulate(seed=5, iterations=1)
    async def test_late(world):
        a, b = world.spawn(receiver), world.spawn(receiver)
        a.send(b.id, "x")
        await world.clock.advance(0.0015)
        assert not hasattr(b, "got"), "arrived within 1.5 ms"
        assert False, "arrived late"
    """
)


def test_a_simplified_draw_that_changes_the_failure_is_not_kept(tmp_path: Any) -> None:
    # Drawn from 1-10 ms, the message is late (the last line fails); at the
    # link's minimum, 1 ms, it is on time and the line before fails: another
    # signature, so the latency stays drawn and the report says it is needed.
    result = run_pytest(tmp_path, _OTHERWISE, env={"ASKEW_SHRINK": "1"})
    assert result.returncode == 1, result.stdout
    assert 'SimulationFailure: assert False, "arrived late"' in result.stdout
    needs = re.search(r"the smallest failing run needs: (.*)", result.stdout)
    assert needs is not None and "latencies spread in their range" in needs.group(1)
    assert "replay shrunk: " not in result.stdout or "latency:min" not in result.stdout


def test_the_suppress_list_takes_the_draw_keys_and_refuses_others() -> None:
    assert parse_suppress("0,latency:min,schedule:fifo", "s") == {0, "latency:min", "schedule:fifo"}
    with pytest.raises(ValueError, match=r"simplified draws \(latency:min, timing:zero"):
        parse_suppress("latency:max", "ASKEW_SUPPRESS")
