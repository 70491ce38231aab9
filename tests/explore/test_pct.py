# SPDX-License-Identifier: Apache-2.0
"""PCT (strategy="pct"): random loop priorities with pct_depth - 1 change
points over pct_steps steps. It keeps each loop's order asyncio's, so it is
faithful; a seed names one run in one process and across processes; it
finds a depth-2 ordering bug across nodes in far fewer runs than
"faithful"; bad knobs are refused with their value named."""

from __future__ import annotations

import asyncio
import re
import textwrap
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_pytest
from test_determinism import scenario, trace_of

import askew
from askew._loop.config import RunConfig
from askew._loop.settings import parse_pct_depth

pytestmark = pytest.mark.usefixtures("clean_env")

ROUNDS = 12


def runs_to_find_depth2_bug(base: int, limit: int, **config: Any) -> int | None:
    """Runs until two nodes yielding ROUNDS times each are seen with node b
    first in the first half of the rounds and node a first in the second."""
    log: list[str] = []

    async def worker(node: Any, name: str) -> None:
        for _ in range(ROUNDS):
            log.append(name)
            await asyncio.sleep(0)

    @askew.simulate(seed=base, iterations=limit, **config)
    async def test(world: askew.World) -> None:
        log.clear()
        world.spawn(worker, "a")
        world.spawn(worker, "b")
        await world.clock.advance(1)
        firsts = log[::2]
        assert firsts != ["b"] * (ROUNDS // 2) + ["a"] * (ROUNDS // 2)

    try:
        test()
    except askew.SimulationFailure as exc:
        found = re.search(r"iteration=(\d+)", str(exc))
        assert found is not None
        return int(found.group(1)) + 1
    return None


def test_pct_finds_a_depth_2_ordering_bug_across_nodes_in_fewer_runs_than_faithful() -> None:
    # Bound: 1 / (n k^(d-1)) = 1 / (3 loops * 30 steps) per run. Over five
    # base seeds PCT needs tens of runs, faithful's coin per tick 2^-12.
    limit = 2000
    pct = [
        runs_to_find_depth2_bug(b, limit, strategy="pct", pct_depth=2, pct_steps=30)
        for b in range(1, 6)
    ]
    faithful = [runs_to_find_depth2_bug(b, limit) for b in range(1, 6)]
    assert all(n is not None and n <= 400 for n in pct), pct
    assert sorted(n or limit for n in pct)[2] * 5 < sorted(n or limit for n in faithful)[2]


def test_pct_keeps_one_loops_order_asyncios() -> None:
    # The test body is one loop: under PCT its order is asyncio's whatever the seed.
    logs = [trace_of(seed, strategy="pct")[1] for seed in range(10)]
    orders = {next(t for t in log if "order" in t).split("order ")[1] for log in logs}
    assert len(orders) == 1


def test_pct_is_faithful_and_its_failures_carry_no_strategy_note() -> None:
    assert RunConfig(strategy="pct").faithful
    with pytest.raises(askew.SimulationFailure) as info:

        @askew.simulate(seed=3, iterations=1, strategy="pct")
        async def test(world: askew.World) -> None:
            raise AssertionError("boom")

        test()
    assert "can run callbacks in an order asyncio cannot" not in info.value.report


def test_the_same_seed_under_pct_gives_the_same_trace() -> None:
    first = trace_of(42, strategy="pct", pct_depth=3, pct_steps=200)
    assert trace_of(42, strategy="pct", pct_depth=3, pct_steps=200) == first
    assert first != trace_of(42)  # another strategy, another run


def test_pct_depth_changes_the_run() -> None:
    hashes = {trace_of(7, strategy="pct", pct_depth=d, pct_steps=50)[0] for d in (1, 2, 3, 5)}
    assert len(hashes) > 1


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_determinism as t
    print(json.dumps(t.trace_of(1234, strategy="pct", pct_depth=3, pct_steps=100)))
    """
)


def test_a_pct_seed_gives_the_same_trace_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "1", "12345"))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == trace_of(1234, strategy="pct", pct_depth=3, pct_steps=100)[0]


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (0, ValueError, "pct_depth must be >= 1, got 0"),
        (-2, ValueError, "pct_depth must be >= 1, got -2"),
        (2.5, TypeError, "pct_depth must be a positive int, not float 2.5"),
        ("3", TypeError, "pct_depth must be a positive int, not str '3'"),
        (True, TypeError, "pct_depth must be a positive int, not bool True"),
        (65, ValueError, "pct_depth must be at most 64, got 65"),
    ],
)
def test_a_bad_pct_depth_is_refused_naming_the_value(value: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=re.escape(words)):
        askew.simulate(strategy="pct", pct_depth=value)


def test_a_bad_pct_steps_or_strategy_is_refused_naming_the_value() -> None:
    with pytest.raises(ValueError, match=re.escape("pct_steps must be >= 1, got 0")):
        askew.simulate(strategy="pct", pct_steps=0)
    with pytest.raises(ValueError, match=r"strategy must be one of .*'pct'.*got 'pcd'"):
        askew.simulate(strategy="pcd")
    with pytest.raises(ValueError, match=re.escape("ASKEW_PCT_DEPTH must be >= 1, got '0'")):
        parse_pct_depth("0", "ASKEW_PCT_DEPTH")
    with pytest.raises(ValueError, match=re.escape("must be a positive integer, got 'x'")):
        parse_pct_depth("x", "ASKEW_PCT_DEPTH")


def test_askew_pct_variables_override_the_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    async def body(world: askew.World) -> None:
        await scenario(world)
        seen.append(world._loop.trace_hash)

    askew.simulate(seed=5, iterations=1, strategy="pct", pct_depth=4)(body)()
    monkeypatch.setenv("ASKEW_STRATEGY", "pct")
    monkeypatch.setenv("ASKEW_PCT_DEPTH", "4")
    askew.simulate(seed=5, iterations=1, pct_depth=2)(body)()
    assert seen[0] == seen[1]


def test_pct_strategy_works_through_new_event_loop() -> None:
    loop = askew.new_event_loop(1, strategy="pct", pct_depth=2, pct_steps=10)
    try:
        assert loop.run_until_complete(asyncio.sleep(0.1, "done")) == "done"
        assert loop._strategy == "pct"
    finally:
        loop.close()


def test_the_loop_refuses_pct_knobs_out_of_range_whatever_python_checked() -> None:
    loop = askew.new_event_loop(0)
    try:
        with pytest.raises(ValueError, match=re.escape("pct_depth must be in [1, 64], got 0")):
            loop._configure("pct", 10, 0, 0, (0, 0), (0, 0), 0, 10)
        with pytest.raises(ValueError, match=re.escape("pct_steps must be >= 1, got 0")):
            loop._configure("pct", 10, 0, 0, (0, 0), (0, 0), 2, 0)
    finally:
        loop.close()


def test_the_plugin_takes_pct_options_and_refuses_bad_ones(tmp_path: Any) -> None:
    source = """
        import asyncio, askew

        @askew.simulate(seed=1, iterations=3)
        async def test_it(world):
            await asyncio.sleep(0.1)
            assert world._loop._strategy == "pct"
    """
    good = run_pytest(tmp_path, source, "--askew-strategy", "pct", "--askew-pct-depth", "4")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = run_pytest(tmp_path, source, "--askew-strategy", "pct", "--askew-pct-depth", "0")
    assert bad.returncode != 0
    assert "--askew-pct-depth must be >= 1, got '0'" in bad.stderr
