# SPDX-License-Identifier: Apache-2.0
"""askew.buggify, askew.sometimes, the sweep's coverage summary and
world.eventually."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

import askew
from askew._explore.buggify import ACTIVATION

SEEDS = 200


def _run(body: Any, seed: int = 1, iterations: int = 1) -> list[dict[str, Any]]:
    """Run `body(world)` under a sweep; per run, what it left in `seen`."""
    runs: list[dict[str, Any]] = []

    @askew.simulate(seed=seed, iterations=iterations)
    async def test(world: askew.World) -> None:
        seen: dict[str, Any] = {"seed": world.seed}
        runs.append(seen)
        await body(world, seen)
        events = world.log.recent()
        seen["hash"] = world.log.hash
        seen["events"] = events
        seen["now"] = world.now

    test()
    return runs


async def _reach_often(world: askew.World, seen: dict[str, Any]) -> None:
    async def node(n: Any) -> None:
        for _ in range(20):
            if askew.buggify("slow path", 0.5):
                seen["fired"] = seen.get("fired", 0) + 1
            await asyncio.sleep(0.1)

    world.spawn(node)
    world.spawn(node)
    await world.clock.advance(5)


def test_buggify_is_false_outside_a_run() -> None:
    assert askew.buggify("anything", 1.0) is False
    assert askew.sometimes("anything", 3) == 3


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_a_probability_outside_zero_to_one_is_refused_naming_it(bad: float) -> None:
    with pytest.raises(ValueError, match=r"buggify\('p'\): probability must be in \[0, 1\]"):
        askew.buggify("p", bad)


@pytest.mark.parametrize("bad", ["0.5", None, True])
def test_a_probability_that_is_not_a_number_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match="probability must be a number"):
        askew.buggify("p", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", [askew.buggify, lambda n: askew.sometimes(n, True)])
def test_names_must_be_non_empty_strings(call: Any) -> None:
    with pytest.raises(TypeError, match="the name must be a str"):
        call(3)
    with pytest.raises(ValueError, match="must not be empty"):
        call("")


def test_the_same_seed_fires_the_same_points_the_same_number_of_times() -> None:
    first = [(r["seed"], r.get("fired", 0), r["hash"]) for r in _run(_reach_often, 5, 30)]
    again = [(r["seed"], r.get("fired", 0), r["hash"]) for r in _run(_reach_often, 5, 30)]
    assert first == again
    assert any(fired for _, fired, _ in first) and not all(fired for _, fired, _ in first)


def test_a_point_is_active_in_a_seeded_quarter_of_runs_and_fires_only_there() -> None:
    runs = _run(_reach_often, 11, SEEDS)
    summary = askew.coverage()
    assert summary is not None and summary.runs == SEEDS
    stats = summary.points["slow path"]
    assert stats.runs_reached == SEEDS
    # Binomial(200, 0.25): mean 50, sd 6.1; the seeds are fixed, so this is exact.
    assert abs(stats.runs_active - SEEDS * ACTIVATION) < 25
    assert stats.runs_fired == sum(1 for r in runs if r.get("fired"))
    assert stats.runs_fired <= stats.runs_active
    # Active runs fire about half their 40 reaches: never all, never none.
    fired = [r["fired"] for r in runs if r.get("fired")]
    assert all(0 < f < 40 for f in fired) and abs(sum(fired) / len(fired) - 20) < 5


def test_probability_one_fires_on_every_reach_of_an_active_point_and_zero_never() -> None:
    async def body(world: askew.World, seen: dict[str, Any]) -> None:
        seen["always"] = [askew.buggify("always", 1.0) for _ in range(10)]
        seen["never"] = [askew.buggify("never", 0.0) for _ in range(10)]

    runs = _run(body, 3, 40)
    assert {tuple(r["always"]) for r in runs} == {(True,) * 10, (False,) * 10}
    assert all(not any(r["never"]) for r in runs)


def _events_but_buggify(run: dict[str, Any]) -> list[Any]:
    return [e for e in run["events"] if not e.text.startswith("buggify ")]


def _with_and_without(probe: Any, seed: int) -> tuple[list[Any], list[Any]]:
    """The runs of one workload with `probe()` called at each step, and without."""

    async def without(world: askew.World, seen: dict[str, Any]) -> None:
        await _workload(world, lambda: None)

    async def with_probe(world: askew.World, seen: dict[str, Any]) -> None:
        await _workload(world, probe)

    return _run(with_probe, seed, 20), _run(without, seed, 20)


def test_a_point_that_never_fires_leaves_the_trace_hash_unchanged() -> None:
    probed, plain = _with_and_without(lambda: askew.buggify("silent", 0.0), 8)
    assert [r["hash"] for r in plain] == [r["hash"] for r in probed]


def test_a_firing_point_whose_answer_is_ignored_adds_only_its_own_log_lines() -> None:
    # Honest scope: a point draws from its own stream, so the scheduling,
    # network and user streams are untouched; its "fired" lines enter the log
    # and so the trace hash, but every other event is the same, at the same time.
    probed, plain = _with_and_without(lambda: askew.buggify("loud", 1.0), 9)
    assert any(len(p["events"]) > len(q["events"]) for p, q in zip(probed, plain, strict=True))
    for p, q in zip(probed, plain, strict=True):
        assert _events_but_buggify(p) == q["events"]
        assert p["now"] == q["now"]


async def _workload(world: askew.World, probe: Any) -> None:
    async def pinger(node: Any) -> None:
        for i in range(10):
            probe()
            node.send((node.id + 1) % 3, ("ping", i, world.random.random()))
            await asyncio.sleep(world.random.uniform(0, 0.1))

    async def sink(node: Any) -> None:
        while True:
            await node.recv()

    for _ in range(2):
        world.spawn(pinger)
    world.spawn(sink)
    world.net.configure(loss=0.2, latency=(0.001, 0.05))
    await world.clock.advance(3)


def test_adding_a_point_does_not_change_the_decisions_of_another() -> None:
    async def one(world: askew.World, seen: dict[str, Any]) -> None:
        seen["a"] = [askew.buggify("a", 0.5) for _ in range(30)]

    async def two(world: askew.World, seen: dict[str, Any]) -> None:
        seen["a"] = []
        for _ in range(30):
            askew.buggify("b", 0.5)
            seen["a"].append(askew.buggify("a", 0.5))

    assert [r["a"] for r in _run(one, 4, 40)] == [r["a"] for r in _run(two, 4, 40)]


def test_a_fired_point_shows_in_the_failure_report() -> None:
    @askew.simulate(seed=2, iterations=100)
    async def test(world: askew.World) -> None:
        lost = askew.buggify("drop the write", 1.0)
        stored = None if lost else "v"
        assert stored == "v"

    with pytest.raises(askew.SimulationFailure) as info:
        test()
    assert "fault   buggify 'drop the write' fired" in info.value.report


def test_the_summary_lists_points_never_fired_and_marks_never_true() -> None:
    @askew.simulate(seed=1, iterations=10)
    async def test(world: askew.World) -> None:
        askew.buggify("never fires", 0.0)
        assert askew.sometimes("rare branch", world.random.random() < 0.0) is False
        assert askew.sometimes("common branch", "yes") == "yes"

    test()
    summary = askew.coverage()
    assert summary is not None
    assert summary.never_fired == ["never fires"]
    assert summary.never_true == ["rare branch"]
    assert summary.marks["common branch"].runs_true == 10
    text = str(summary)
    assert "buggify points never fired: 'never fires'" in text
    assert "sometimes marks never true: 'rare branch'" in text


def test_the_summary_lists_points_written_in_the_test_module_that_no_run_reached() -> None:
    @askew.simulate(seed=1, iterations=3)
    async def test(world: askew.World) -> None:
        if world.now < 0:  # never: the point below is written but not reached
            askew.buggify("unreachable point")
            askew.sometimes("unreachable mark", True)

    test()
    summary = askew.coverage()
    assert summary is not None
    assert "unreachable point" in summary.unreached_points
    assert "unreachable mark" in summary.unreached_marks


# world.eventually


def test_eventually_passes_once_the_predicate_has_held_even_if_it_stops_holding() -> None:
    @askew.simulate(seed=1, iterations=20)
    async def test(world: askew.World) -> None:
        state = {"up": False}

        async def flap(node: Any) -> None:
            await asyncio.sleep(2)
            state["up"] = True
            await asyncio.sleep(1)
            state["up"] = False

        world.spawn(flap)
        check = world.eventually("service up", lambda: state["up"], within=5)
        await world.clock.advance(10)
        assert check.held

    test()


def test_eventually_fails_the_run_at_its_deadline_naming_the_predicate() -> None:
    def leader_elected() -> bool:
        return False

    @askew.simulate(seed=1, iterations=1)
    async def test(world: askew.World) -> None:
        world.eventually("a leader", leader_elected, within=5)
        await world.clock.advance(60)

    with pytest.raises(askew.SimulationFailure) as info:
        test()
    failure = info.value
    assert "eventually 'a leader' (" in str(failure) and "leader_elected" in str(failure)
    assert "did not hold within 5s" in str(failure)
    assert 5.0 <= failure.time < 5.1  # the run stops at the deadline, not at 60 s


def test_a_predicate_that_raises_fails_the_run_with_its_exception_chained() -> None:
    @askew.simulate(seed=1, iterations=1)
    async def test(world: askew.World) -> None:
        world.eventually("sane", lambda: 1 / 0, within=5)
        await world.clock.advance(10)

    with pytest.raises(askew.SimulationFailure) as info:
        test()
    violation = info.value.__cause__
    assert violation is not None and "the predicate raised ZeroDivisionError" in str(violation)
    assert isinstance(violation.__cause__, ZeroDivisionError)


def test_eventually_survives_the_crash_of_the_node_that_asked() -> None:
    @askew.simulate(seed=1, iterations=1)
    async def test(world: askew.World) -> None:
        async def asker(node: Any) -> None:
            world.eventually("never", lambda: False, within=3)
            await asyncio.sleep(100)

        a = world.spawn(asker)
        await world.clock.advance(1)
        world.faults.crash(a)
        await world.clock.advance(10)

    with pytest.raises(askew.SimulationFailure, match="eventually 'never'"):
        test()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"within": -1}, ValueError, "within=...\\) must be >= 0"),
        ({"within": "5"}, TypeError, "within"),
        ({"within": 5, "every": 0}, ValueError, "every=...\\) must be > 0"),
    ],
)
def test_eventually_refuses_bad_arguments(kwargs: dict[str, Any], error: type, match: str) -> None:
    @askew.simulate(seed=1, iterations=1)
    async def test(world: askew.World) -> None:
        with pytest.raises(error, match=match):
            world.eventually("x", lambda: True, **kwargs)
        with pytest.raises(TypeError, match="must be callable"):
            world.eventually("x", True, within=1)  # type: ignore[arg-type]

    test()


def test_a_sweep_that_met_a_point_prints_its_summary_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @askew.simulate(seed=1, iterations=4)
    async def test(world: askew.World) -> None:
        askew.buggify("printed point", 1.0)

    test()
    err = capsys.readouterr().err
    assert "askew coverage of " in err and "over 4 runs" in err
    assert "buggify 'printed point': reached in 4 runs" in err


def test_a_sweep_that_met_no_point_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    @askew.simulate(seed=1, iterations=4)
    async def test(world: askew.World) -> None:
        await world.clock.advance(1)

    test()
    assert capsys.readouterr().err == ""


def test_a_buggify_with_no_name_is_named_by_its_call_site() -> None:
    async def body(world: askew.World, seen: dict[str, Any]) -> None:
        seen["fired"] = [askew.buggify(probability=1.0) for _ in range(3)]
        seen["line"] = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]

    runs = _run(body, iterations=40)
    name = f"test_buggify.py:{runs[0]['line']}"
    fired = [r for r in runs if any(r["fired"])]
    assert fired and len(fired) < len(runs)  # active in some runs, as a named point is
    for r in fired:
        assert r["fired"] == [True, True, True]
        assert [e.text for e in r["events"] if e.kind == "fault"] == [f"buggify {name!r} fired"] * 3
    summary = askew.coverage()
    assert summary is not None and name in summary.points


def test_unnamed_points_written_but_never_reached_are_listed_by_their_site() -> None:
    from askew._explore.buggify import _written_calls

    source = (
        "import askew\n"
        "def f():\n"
        "    if askew.buggify():\n"
        "        pass\n"
        "    askew.buggify(name='named')\n"
        "    askew.buggify(None, 0.5)\n"
        "    askew.sometimes('mark', True)\n"
    )
    found = _written_calls(source, "/somewhere/else/module.py")
    assert found == {"buggify": {"module.py:3", "named", "module.py:6"}, "sometimes": {"mark"}}
