# SPDX-License-Identifier: Apache-2.0
"""Swarm testing (simulate(swarm=True), askew.Swarm, ASKEW_SWARM): each seed
varies a seeded subset of CPU cost, overshoot and each link's latency inside
its range, and of the knobs a Swarm names (loss, duplication, latency beyond
the range), drawn from stream 9; the seed decides the configuration (in one
process and across processes), a failure report names it, and its replay
runs under it again. swarm=True never breaks a promise the test was given."""

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
from askew._loop.settings import parse_swarm, wrap_config

pytestmark = pytest.mark.usefixtures("clean_env")


OPT_IN = askew.Swarm(loss=(0.01, 0.2), duplicate=(0.01, 0.2), latency=(0.001, 0.5))


def test_the_seed_decides_the_swarm_configuration() -> None:
    assert _swarm.draw(123) == _swarm.draw(123)
    draws = {_swarm.draw(seed, OPT_IN) for seed in range(200)}
    assert len(draws) > 50
    # Each knob is on in some draws and off in others.
    for field in ("cpu_hi", "overshoot_hi", "window", "latency", "loss", "duplicate"):
        values = {getattr(d, field) for d in draws}
        assert None in values and len(values) > 1, field
    # A knob the Swarm does not name is never on, and naming one moves no other.
    for seed in range(200):
        plain, named = _swarm.draw(seed), _swarm.draw(seed, OPT_IN)
        assert plain.loss is plain.duplicate is plain.latency is None
        assert (plain.cpu_hi, plain.overshoot_hi, plain.window) == (
            named.cpu_hi,
            named.overshoot_hi,
            named.window,
        )


def test_swarm_keeps_each_links_latency_inside_the_range_the_test_gave_it() -> None:
    # Seed 4 draws the window 80%..88% of each range: the scenario's own
    # (0, 0.2) s becomes 0.160..0.177 s, and the default 1..10 ms link 8.2..8.9 ms.
    assert _swarm.draw(4).window is not None
    plain = trace_of(4)
    swarmed = trace_of(4, swarm=True)
    assert trace_of(4, swarm=True) == swarmed
    assert swarmed != plain
    configured = [e for e in swarmed[1] if "configure all links" in e]
    assert "latency 0.00821414..0.00894528s, loss 0, duplicate 0" in configured[0]
    assert "latency 0.160314..0.176562s, loss 0.1, duplicate 0.05" in configured[1]


def test_swarm_true_never_loses_or_duplicates_a_message_on_a_lossless_link() -> None:
    seen: list[tuple[int, str]] = []
    askew.simulate(seed=77, iterations=200, swarm=True)(echo_test(seen))()
    assert len(seen) == 200


def test_swarm_off_leaves_runs_as_they_were() -> None:
    assert trace_of(22, swarm=False) == trace_of(22)


def echo_test(seen: list[tuple[int, str]], swarm: askew.Swarm | bool = True) -> Any:
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
        seen.append((world.seed, _swarm.draw(world.seed, swarm).describe()))
        assert sorted(got) == list(range(20))  # fails under loss or duplication

    return test


def failing_swarm_test(seen: list[tuple[int, str]]) -> Any:
    return askew.simulate(seed=77, iterations=200, swarm=OPT_IN)(echo_test(seen, OPT_IN))


def test_a_failure_names_its_swarm_configuration_and_replays_under_it() -> None:
    seen: list[tuple[int, str]] = []
    test = failing_swarm_test(seen)
    with pytest.raises(askew.SimulationFailure) as info:
        test()
    report = info.value.report
    seed, described = seen[-1]
    assert info.value.seed == seed
    assert f"note: {described}; the seed decides it: replay with the same swarm (" in report
    assert "(ASKEW_SWARM=latency=0.001..0.5,loss=0.01..0.2,duplicate=0.01..0.2)" in report
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


@pytest.mark.parametrize("value", [1, "yes", None, 0.0, {"loss": (0, 1)}])
def test_swarm_must_be_a_bool_or_a_swarm(value: Any) -> None:
    want = f"swarm must be a bool or an askew.Swarm, not {type(value).__name__} {value!r}"
    with pytest.raises(TypeError, match=re.escape(want)):
        askew.simulate(swarm=value)


@pytest.mark.parametrize(
    ("knobs", "error", "match"),
    [
        ({"loss": (0, 1.5)}, ValueError, "Swarm(loss) must satisfy 0 <= lo <= hi <= 1 probability"),
        ({"cpu": (0.2, 0.1)}, ValueError, "Swarm(cpu) must satisfy 0 <= lo <= hi <= 3600 seconds"),
        ({"latency": 0.5}, TypeError, "Swarm(latency) must be a pair (lo, hi) of seconds, not 0.5"),
    ],
)
def test_a_bad_swarm_range_is_refused_naming_the_knob(
    knobs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=re.escape(match)):
        askew.Swarm(**knobs)


def test_askew_swarm_spells_a_swarm_as_its_text_and_back() -> None:
    assert parse_swarm("1", "ASKEW_SWARM") is True
    assert parse_swarm("off", "ASKEW_SWARM") is False
    parsed = parse_swarm("loss=0..0.2, cpu=off", "ASKEW_SWARM")
    assert parsed == askew.Swarm(loss=(0, 0.2), cpu=None)
    assert isinstance(parsed, askew.Swarm)
    assert parse_swarm(parsed.text(), "ASKEW_SWARM") == parsed
    assert OPT_IN == parse_swarm(OPT_IN.text(), "ASKEW_SWARM")


@pytest.mark.parametrize("text", ["maybe", "loss=0.2", "lost=0..0.2", "loss=0..2"])
def test_a_bad_askew_swarm_text_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match=r"ASKEW_SWARM"):
        parse_swarm(text, "ASKEW_SWARM")


def test_swarm_under_wrap_mode_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match=r"swarm applies to @askew\.simulate tests"):
        wrap_config({"swarm": True})
    assert not wrap_config({"swarm": False}).swarm
