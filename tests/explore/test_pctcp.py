# SPDX-License-Identifier: Apache-2.0
"""PCTCP (strategy="pctcp"): priorities over chains of messages, realised
as latencies inside each link's range. It is faithful (every delivery
order one in-range latencies produce, so its reports carry no strategy
note); a seed names one run in one process and across processes; it finds
a bug that needs a whole chain of messages to overtake one message in far
fewer runs than "faithful"; it leaves the existing strategies' runs as
they were (tests/test_trace_pins.py)."""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import json_in_hash_seeds
from test_determinism import trace_of

import askew
from askew._loop.config import RunConfig

pytestmark = pytest.mark.usefixtures("clean_env")

BENCH = Path(__file__).resolve().parents[2] / "bench"


def runs_to_reply_first(base: int, limit: int, **knobs: Any) -> int | None:
    sys.path.insert(0, str(BENCH))
    try:
        from bugs import reply_first
    finally:
        sys.path.remove(str(BENCH))

    @askew.simulate(seed=base, iterations=limit, **knobs)
    async def search(world: askew.World) -> None:
        await reply_first.scenario(world, False)

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            search()
    except askew.SimulationFailure as failure:
        assert failure.iteration is not None
        return failure.iteration + 1
    return None


def test_pctcp_finds_a_thread_overtaking_its_question_far_sooner_than_faithful(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three hops must beat one: about 1.5 % of faithful runs, a pair of
    # priorities under pctcp (bench/bench_bugs.py has the medians).
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    pctcp = [
        runs_to_reply_first(b, 200, strategy="pctcp", pct_depth=2, pct_steps=30) for b in range(5)
    ]
    faithful = [runs_to_reply_first(b, 300) for b in range(5)]
    assert all(n is not None for n in pctcp), pctcp
    median = sorted(n or 10**9 for n in pctcp)[2]
    assert median * 5 < sorted(n or 300 for n in faithful)[2], (pctcp, faithful)


def test_pctcp_is_faithful_and_its_failures_carry_no_strategy_note() -> None:
    assert RunConfig(strategy="pctcp").faithful
    with pytest.raises(askew.SimulationFailure) as info:

        @askew.simulate(seed=3, iterations=1, strategy="pctcp")
        async def test(world: askew.World) -> None:
            raise AssertionError("boom")

        test()
    assert "can run callbacks in an order asyncio cannot" not in info.value.report


def test_every_pctcp_latency_lies_in_the_links_configured_range() -> None:
    seen: list[float] = []

    @askew.simulate(seed=11, iterations=20, strategy="pctcp", cpu=(0, 0), overshoot=(0, 0))
    async def test(world: askew.World) -> None:
        async def echo(node: Any) -> None:
            while True:
                msg = await node.recv()
                seen.append(world.now - msg.sent_at)
                if msg.payload < 30:
                    node.send(msg.src, msg.payload + 1)

        world.net.configure(latency=(0.004, 0.006))
        a, b = world.spawn(echo), world.spawn(echo)
        world.net.configure(latency=(0.001, 0.002), link=(a, b))
        a.send(b.id, 0)
        b.send(a.id, 0)
        await world.clock.advance(2)

    test()
    assert len(seen) > 500
    assert all(0.001 - 1e-9 <= s <= 0.006 + 1e-9 for s in seen), (min(seen), max(seen))
    assert max(seen) > 0.0035 and min(seen) < 0.0025  # both links were used


def test_the_same_seed_under_pctcp_gives_the_same_trace() -> None:
    first = trace_of(42, strategy="pctcp", pct_depth=3, pct_steps=20)
    assert trace_of(42, strategy="pctcp", pct_depth=3, pct_steps=20) == first
    assert first != trace_of(42)  # another strategy, another run


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_determinism as t
    print(json.dumps(t.trace_of(1234, strategy="pctcp", pct_depth=3, pct_steps=20)))
    """
)


def test_a_pctcp_seed_gives_the_same_trace_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "12345"))
    assert results[0] == results[1]
    assert results[0][0] == trace_of(1234, strategy="pctcp", pct_depth=3, pct_steps=20)[0]
