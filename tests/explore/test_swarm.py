# SPDX-License-Identifier: Apache-2.0
"""Swarm testing (simulate(swarm=True), ASKEW_SWARM): each seed switches a
seeded subset of the network and timing knobs on, drawn from stream 9; the
seed decides the configuration (in one process and across processes), a
failure report names it, and its replay runs under it again."""

from __future__ import annotations

import asyncio
import re
import textwrap
from typing import Any

import pytest
from conftest import json_in_hash_seeds
from test_determinism import scenario, trace_of

import askew
from askew._explore import swarm as _swarm
from askew._loop.settings import parse_flag, wrap_config

pytestmark = pytest.mark.usefixtures("clean_env")


def test_the_seed_decides_the_swarm_configuration() -> None:
    assert _swarm.draw(123) == _swarm.draw(123)
    draws = {_swarm.draw(seed) for seed in range(200)}
    assert len(draws) > 50
    # Each knob is on in some draws and off in others.
    for field in ("loss", "duplicate", "latency_hi", "cpu_hi", "overshoot_hi"):
        values = {getattr(d, field) for d in draws}
        assert None in values and len(values) > 1, field


def test_swarm_changes_the_runs_and_a_seed_still_names_one_run() -> None:
    plain = trace_of(22)
    swarmed = trace_of(22, swarm=True)
    assert trace_of(22, swarm=True) == swarmed
    assert swarmed != plain
    # Seed 22 draws loss 0.2 and latency up to 0.05 s: the run starts with them.
    drawn = _swarm.draw(22)
    assert (drawn.loss, drawn.latency_hi) == (0.2, 0.05)
    assert "configure all links: latency 0.0001..0.05s, loss 0.2" in swarmed[1][0]


def test_swarm_off_leaves_runs_as_they_were() -> None:
    assert trace_of(22, swarm=False) == trace_of(22)


def failing_swarm_test(seen: list[tuple[int, str]]) -> Any:
    @askew.simulate(seed=77, iterations=200, swarm=True)
    async def test(world: askew.World) -> None:
        node = world.spawn(lambda node: asyncio.sleep(0))
        got: list[Any] = []

        async def echo(node: Any) -> None:
            while True:
                msg = await node.recv()
                got.append(msg.payload)

        other = world.spawn(echo)
        for i in range(20):
            node.send(other, i)
        await world.clock.advance(2)
        seen.append((world.seed, _swarm.draw(world.seed).describe()))
        assert sorted(got) == list(range(20))  # fails under loss or duplication

    return test


def test_a_failure_names_its_swarm_configuration_and_replays_under_it() -> None:
    seen: list[tuple[int, str]] = []
    test = failing_swarm_test(seen)
    with pytest.raises(askew.SimulationFailure) as info:
        test()
    report = info.value.report
    seed, described = seen[-1]
    assert info.value.seed == seed
    assert f"note: {described}; the seed decides it: replay with swarm on" in report
    assert re.search(r"swarm configuration: .*(loss|duplicate)", report)
    with pytest.raises(askew.SimulationFailure) as again:
        askew.Replay.run(test, seed)
    assert again.value.trace_hash == info.value.trace_hash
    assert again.value.report == report.replace(
        f"iteration={info.value.iteration},", "iteration=0,"
    )


def test_askew_swarm_turns_swarm_on(monkeypatch: pytest.MonkeyPatch) -> None:
    hashes: list[int] = []

    async def body(world: askew.World) -> None:
        await scenario(world)
        hashes.append(world._loop.trace_hash)

    askew.simulate(seed=6, iterations=1, swarm=True)(body)()
    monkeypatch.setenv("ASKEW_SWARM", "1")
    askew.simulate(seed=6, iterations=1)(body)()
    assert hashes[0] == hashes[1]


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_determinism as t
    from askew._explore import swarm as _swarm
    print(json.dumps([t.trace_of(4321, swarm=True), _swarm.draw(4321).describe()]))
    """
)


def test_a_swarm_seed_gives_the_same_run_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "1", "12345"))
    assert results[0] == results[1] == results[2]
    assert results[0][1] == _swarm.draw(4321).describe()
    assert results[0][0][0] == trace_of(4321, swarm=True)[0]


@pytest.mark.parametrize("value", [1, "yes", None, 0.0])
def test_swarm_must_be_a_bool(value: Any) -> None:
    with pytest.raises(
        TypeError, match=re.escape(f"swarm must be a bool, not {type(value).__name__} {value!r}")
    ):
        askew.simulate(swarm=value)


def test_a_bad_askew_swarm_value_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=re.escape("ASKEW_SWARM must be 0 or 1, got 'maybe'")):
        parse_flag("maybe", "ASKEW_SWARM")


def test_swarm_under_wrap_mode_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match=r"swarm applies to @askew\.simulate tests"):
        wrap_config({"swarm": True})
    assert not wrap_config({"swarm": False}).swarm
