# SPDX-License-Identifier: Apache-2.0
"""Which faults mattered, and shrinking (askew/_explore/shrink.py): after a failure
under pytest the seed is re-run with each fault call suppressed in turn,
then with a one-minimal set of them kept; the report lists each fault with
its verdict, and a shrunk run replays through ASKEW_SUPPRESS or
Replay.run(..., suppress=[...])."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from conftest import echo_server

import askew
from askew._explore import shrink as _shrink
from askew.errors import SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")


async def _counter(node: Any) -> None:
    node.got = 0
    while True:
        await node.recv()
        node.got += 1


async def _needs_the_cut(world: Any) -> None:
    nodes = [world.spawn(_counter) for _ in range(3)]
    world.faults.skew(2, offset=3.0)  # #0: not needed
    world.net.cut(0, 1)  # #1: needed
    world.faults.crash(2)  # #2: not needed
    await world.clock.advance(1)
    await nodes[0].send(1, "hello")
    await world.clock.advance(1)
    assert nodes[1].got == 1


async def _needs_either(world: Any) -> None:
    nodes = [world.spawn(_counter) for _ in range(3)]
    world.net.cut(0, 1)  # #0: either this
    world.faults.crash(2)  # #1: or this
    await world.clock.advance(1)
    await nodes[0].send(1, "a")
    if world._slots[2].token != -1:
        await nodes[2].send(1, "b")
    await world.clock.advance(1)
    assert nodes[1].got == 2


@pytest.fixture(autouse=True)
def _faults_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fault search alone: the draws shrunk after it are
    # tests/explore/test_shrink_draws.py's.
    monkeypatch.setattr(_shrink, "SIMPLIFY_DRAWS", False)


def _failure(body: Any, monkeypatch: pytest.MonkeyPatch, **env: str) -> SimulationFailure:
    monkeypatch.setenv("ASKEW_SHRINK", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SimulationFailure) as info:
        askew.simulate(seed=7, iterations=1)(body)()
    return info.value


def _section(report: str) -> list[str]:
    """The report's "which faults mattered" section, its heading first."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  which faults mattered ("))
    return lines[start : lines.index("", start)]


def test_the_report_says_which_faults_mattered_and_shrinks_to_the_needed_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failure = _failure(_needs_the_cut, monkeypatch)
    section = _section(failure.report)
    assert re.match(
        r"    not needed  #0 +0\.000s  skew 2: offset 3s drift 0  \(fails the same", section[1]
    )
    assert re.match(r"    needed      #1 +0\.000s  cut 0 -> 1  \(passes without it\)", section[2])
    assert re.match(r"    not needed  #2 +0\.000s  crash 2  \(fails the same", section[3])
    assert section[4] == (
        "  in short: fails the same way without skew 2: offset 3s drift 0 (#0) at 0.000s"
        " and crash 2 (#2) at 0.000s; needs cut 0 -> 1 (#1) at 0.000s"
    )
    assert re.match(r"  shrunk: fails the same way with only #1 \(steps=\d+, was \d+\)", section[5])
    assert section[6].startswith("  replay shrunk: ASKEW_SUPPRESS=0,2 ASKEW_SEED=7 ")


def test_faults_each_unneeded_alone_shrink_to_one_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    section = _section(_failure(_needs_either, monkeypatch).report)
    assert section[1].startswith("    not needed  #0 ") and section[2].startswith(
        "    not needed  #1 "
    )
    assert section[3].startswith("  in short: fails the same way without cut 0 -> 1 (#0)")
    assert section[4].startswith("  shrunk: fails the same way with only #1 ")


def test_the_shrunk_replay_reproduces_the_shrunk_run_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failure = _failure(_needs_the_cut, monkeypatch)
    shrunk = re.search(r"with only #1 \(steps=(\d+), was", failure.report)
    line = re.search(r"replay shrunk: ASKEW_SUPPRESS=([\d,]+) ASKEW_SEED=(\d+) ", failure.report)
    assert shrunk and line, failure.report
    suppress = [int(k) for k in line[1].split(",")]
    test = askew.simulate(seed=7, iterations=1)(_needs_the_cut)
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    hashes = []
    for _ in range(2):
        with pytest.raises(SimulationFailure) as info:
            askew.Replay.run(test, seed=int(line[2]), suppress=suppress)
        assert info.value.steps == int(shrunk[1])
        hashes.append(info.value.trace_hash)
    # The variables the report prints run the same run.
    monkeypatch.setenv("ASKEW_SUPPRESS", line[1])
    monkeypatch.setenv("ASKEW_SEED", line[2])
    monkeypatch.setenv("ASKEW_ITERATIONS", "1")
    with pytest.raises(SimulationFailure) as info:
        test()
    assert hashes == [info.value.trace_hash] * 2
    # Its own report names the calls it skipped in its replay line.
    assert f"replay: ASKEW_SUPPRESS={line[1]} ASKEW_SEED=7 " in info.value.report
    assert "which faults mattered" not in info.value.report


def test_a_suppressed_fault_call_does_nothing_and_later_calls_keep_their_numbers() -> None:
    seen: dict[str, Any] = {}

    async def body(world: Any) -> None:
        nodes = [world.spawn(_counter) for _ in range(2)]
        world.faults.crash(0)  # #0
        pause = world.faults.pause(1, 5.0)  # #1
        seen["pause"] = pause.active
        with world.partition({0}, {1}):  # #2, and its heal is not a fault
            pass
        seen["fired"] = askew.buggify("point", probability=1.0)  # #3 when the point is active
        seen["alive"] = world._slots[0].token != -1
        seen["calls"] = [text for _t, text in world._fault_calls]
        del nodes

    test = askew.simulate(seed=3, iterations=1)(body)
    askew.Replay.run(test, seed=3, suppress=[0, 1])
    assert seen["alive"] and not seen["pause"]
    assert seen["calls"][:3] == ["crash 0", "pause 1 for 5s", "partition {0} | {1}"]
    askew.Replay.run(test, seed=3)
    assert not seen["alive"] and seen["pause"]


def test_a_suppressed_buggify_firing_returns_false_and_keeps_later_draws() -> None:
    fired: list[list[bool]] = []

    async def body(world: Any) -> None:
        fired.append([askew.buggify("p", probability=0.5) for _ in range(40)])

    test = askew.simulate(seed=1, iterations=1)(body)
    seed = next(s for s in range(200) if _active(test, s, fired))
    plain = fired[-1]
    first = plain.index(True)
    askew.Replay.run(test, seed=seed, suppress=[0])
    assert fired[-1] == [*plain[:first], False, *plain[first + 1 :]]


def _active(test: Any, seed: int, fired: list[list[bool]]) -> bool:
    askew.Replay.run(test, seed=seed)
    return any(fired[-1])


def test_no_analysis_runs_without_faults_or_with_ASKEW_SHRINK_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_faults(world: Any) -> None:
        world.spawn(_counter)
        await world.clock.advance(1)
        raise AssertionError("no fault here")

    assert "which faults mattered" not in _failure(no_faults, monkeypatch).report
    off = _failure(_needs_the_cut, monkeypatch, ASKEW_SHRINK="0")
    assert "which faults mattered" not in off.report


def test_a_passing_sweep_never_calls_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("analysed a passing run")

    monkeypatch.setattr(_shrink, "analyse", refuse)
    monkeypatch.setenv("ASKEW_SHRINK", "1")

    async def faulty_but_fine(world: Any) -> None:
        world.spawn(_counter)
        world.faults.crash(0)
        await world.clock.advance(1)

    askew.simulate(seed=1, iterations=20)(faulty_but_fine)()


def test_the_budget_bounds_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    failure = _failure(_needs_the_cut, monkeypatch, ASKEW_SHRINK_SECONDS="1e-9")
    assert "  which faults mattered (0 re-runs, out of time)" in failure.report
    assert "not tried" in failure.report and "shrunk:" not in failure.report


def test_analyse_keeps_faults_needed_only_together() -> None:
    # Fails (the same way) only while calls 1 and 3 both happen.
    def rerun(suppress: frozenset[int | str]) -> tuple[str | None, int]:
        return (None if suppress & {1, 3} else "E at x.py:1"), 10 - len(suppress)

    faults: list[_shrink.Fault] = [(k, 0.0, f"f{k}") for k in range(5)]
    found = _shrink.analyse(rerun, faults, "E at x.py:1", 10, 60.0)
    assert found.kept == [1, 3] and found.suppressed() == [0, 2, 4]
    assert [found.verdict(k)[0] for k in range(5)] == ["not needed", "needed"] * 2 + ["not needed"]
    assert found.kept_steps == 7


def test_a_fault_whose_absence_fails_otherwise_counts_as_needed() -> None:
    def rerun(suppress: frozenset[int | str]) -> tuple[str | None, int]:
        return ("KeyError at y.py:2" if 0 in suppress else "E at x.py:1"), 1

    found = _shrink.analyse(rerun, [(0, 1.5, "crash 1")], "E at x.py:1", 1, 60.0)
    assert found.verdict(0) == ("needed", "fails otherwise without it: KeyError at y.py:2")


def test_bad_suppress_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    test = askew.simulate(seed=1, iterations=1)(_needs_the_cut)
    with pytest.raises(ValueError, match="suppress must be fault indices"):
        askew.Replay.run(test, seed=1, suppress=[-1])
    monkeypatch.setenv("ASKEW_SUPPRESS", "1,x")
    with pytest.raises(ValueError, match="ASKEW_SUPPRESS must be fault indices"):
        test()


def test_a_shrunk_replays_timeline_is_drawn_from_the_run_without_the_suppressed_calls(
    tmp_path: Any,
) -> None:
    test = askew.simulate(seed=7, iterations=1)(_needs_the_cut)
    with pytest.raises(SimulationFailure):
        askew.Replay.run(test, seed=7, timeline=str(tmp_path / "all.html"))
    # Without the cut (#1) the message is delivered and the run passes.
    askew.Replay.run(test, seed=7, suppress=[1], timeline=str(tmp_path / "shrunk.html"))
    whole = (tmp_path / "all.html").read_text()
    shrunk = (tmp_path / "shrunk.html").read_text()
    # The page's data writes ">" as \u003e (askew/_report/timeline.py).
    assert '"cut 0 -\\u003e 1"' in whole
    assert '"cut 0 -\\u003e 1"' not in shrunk


# ---- message faults: the network's own drops and duplications ----------------


async def _needs_a_drop(world: Any) -> None:
    nodes = [world.spawn(_counter) for _ in range(3)]
    world.net.configure(loss=0.05, link=(0, 1))  # #0: needed
    world.faults.crash(2)  # #1: not needed
    for i in range(10):
        nodes[0].send(1, i)
        await world.clock.advance(0.1)
    await world.clock.advance(1)
    assert nodes[1].got == 10


def test_the_report_names_the_dropped_message_the_failure_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_SHRINK", "1")
    test = askew.simulate(seed=1, iterations=50)(_needs_a_drop)
    with pytest.raises(SimulationFailure) as info:
        test()
    failure = info.value
    section = _section(failure.report)
    assert section[1].startswith("    needed      #0 ")
    assert section[2].startswith("    not needed  #1 ")
    drop = re.match(
        r"    needed      drop:(\d+) +[\d.]+s  drop of message \1 \(node 0 -> node 1\)"
        r"  \(passes without it\)$",
        section[3],
    )
    assert drop, failure.report
    n = int(drop[1])
    assert re.match(
        r"  in short: fails the same way without crash 2 \(#1\) at 0\.000s; needs configure 0 -> 1"
        rf".* \(#0\) at 0\.000s and drop of message {n} \(node 0 -> node 1\) at [\d.]+s$",
        section[4],
    )
    assert section[5].startswith(f"  shrunk: fails the same way with only #0, drop:{n} ")
    line = re.search(r"replay shrunk: ASKEW_SUPPRESS=1 ASKEW_SEED=(\d+) ", failure.report)
    assert line, failure.report
    seed = int(line[1])
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    # Without that one drop the run passes; the shrunk run replays exactly.
    askew.Replay.run(test, seed=seed, suppress=[f"drop:{n}"])
    hashes = set()
    for _ in range(2):
        with pytest.raises(SimulationFailure) as again:
            askew.Replay.run(test, seed=seed, suppress=[1])
        hashes.add(again.value.trace_hash)
    assert len(hashes) == 1


def test_a_suppressed_duplicate_arrives_once_and_later_ids_keep_their_numbers() -> None:
    seen: dict[str, Any] = {}

    async def body(world: Any) -> None:
        nodes = [world.spawn(_counter) for _ in range(2)]
        world.net.configure(duplicate=1.0)
        for i in range(5):  # ids 1, 3, 5, 7, 9: each copy takes the next id
            nodes[0].send(1, i)
        await world.clock.advance(1)
        seen["got"] = nodes[1].got
        seen["faults"] = [key for key, _t, _text in world._all_faults()]

    test = askew.simulate(seed=2, iterations=1)(body)
    askew.Replay.run(test, seed=2)
    assert seen == {"got": 10, "faults": [0, "dup:1", "dup:3", "dup:5", "dup:7", "dup:9"]}
    askew.Replay.run(test, seed=2, suppress=["dup:1", "dup:5"])
    assert seen == {"got": 8, "faults": [0, "dup:3", "dup:7", "dup:9"]}


def test_a_suppressed_drop_leaves_every_other_message_to_its_fate() -> None:
    seen: dict[str, Any] = {}

    async def body(world: Any) -> None:
        nodes = [world.spawn(_counter) for _ in range(2)]
        world.net.configure(loss=0.5)
        for i in range(40):
            nodes[0].send(1, i)
            await world.clock.advance(0.05)
        await world.clock.advance(1)
        seen["got"] = nodes[1].got
        seen["drops"] = [key for key, _t, _text in world._all_faults() if key != 0]

    test = askew.simulate(seed=5, iterations=1)(body)
    askew.Replay.run(test, seed=5)
    plain = dict(seen)
    assert len(plain["drops"]) > 5
    quiet = plain["drops"][2]
    askew.Replay.run(test, seed=5, suppress=[quiet])
    assert seen["drops"] == [k for k in plain["drops"] if k != quiet]
    assert seen["got"] == plain["got"] + 1


def test_message_faults_in_suppress_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from askew._loop.settings import parse_suppress

    assert parse_suppress("1, drop:0x11,dup:3", "x") == frozenset({1, "drop:17", "dup:3"})
    test = askew.simulate(seed=1, iterations=1)(_needs_the_cut)
    for bad in (["drop:0"], ["lose:3"], ["drop:x"], ["drop:"]):
        with pytest.raises(ValueError, match=r"message faults \(drop:N, dup:N\)"):
            askew.Replay.run(test, seed=1, suppress=bad)
    monkeypatch.setenv("ASKEW_SUPPRESS", "dup:-1")
    with pytest.raises(ValueError, match="ASKEW_SUPPRESS must be"):
        test()


def test_delta_debugging_finds_a_needed_message_fault_not_tried_alone() -> None:
    # 40 drops; only drop:3, far from the failure, matters: too early to be
    # tried alone (the 16 most recent are), found by the chunked reduction.
    faults: list[_shrink.Fault] = [(0, 0.0, "configure")]
    faults += [(f"drop:{i}", i / 10, f"drop of message {i}") for i in range(1, 41)]
    runs: list[frozenset[int | str]] = []

    def rerun(suppress: frozenset[int | str]) -> tuple[str | None, int]:
        runs.append(suppress)
        return (None if suppress & {0, "drop:3"} else "E at x.py:1"), 1

    found = _shrink.analyse(rerun, faults, "E at x.py:1", 1, 60.0)
    assert found.kept == [0, "drop:3"]
    assert found.verdict("drop:3") == ("not tried", "beyond the bound")
    assert found.verdict("drop:40")[0] == "not needed"
    # 17 alone, 1 for "the needed ones suffice?", then about 2 log2(41) halvings
    # and a last pass of single drops over the few left: far under 41 + 41.
    assert len(runs) <= 40, len(runs)
    lines = found.lines("R")
    assert "    ... 24 more message faults, not tried alone" in "\n".join(lines)


# ---- fewer nodes: World.node_count ---------------------------------------------


async def _overload(world: Any) -> None:
    n = world.node_count(6, fewest=2)
    nodes = [world.spawn(_counter) for _ in range(n)]
    world.faults.skew(n - 1, offset=1.0)  # #0: not needed
    for node in nodes[1:]:
        node.send(0, "hi")
    await world.clock.advance(1)
    assert nodes[0].got <= 2  # fails from 4 nodes on


def test_a_test_that_asks_node_count_is_shrunk_to_the_fewest_nodes_that_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failure = _failure(_overload, monkeypatch)
    section = _section(failure.report)
    assert section[0] == "  which faults mattered (4 re-runs)"
    # One fault: no "in short" line, the list says it.
    assert section[2] == "  fewer nodes: fails the same way with 4 nodes (was 6)"
    assert re.match(
        r"  shrunk: fails the same way without any fault on 4 nodes \(steps=\d+, was \d+\)$",
        section[3],
    )
    assert section[4].startswith("  replay shrunk: ASKEW_SUPPRESS=0,nodes:4 ASKEW_SEED=7 ")
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    test = askew.simulate(seed=7, iterations=1)(_overload)
    with pytest.raises(SimulationFailure) as info:
        askew.Replay.run(test, seed=7, suppress=[0, "nodes:4"])
    assert "  nodes\n     0  alive    got=3\n" in info.value.report
    assert "     4 " not in info.value.report.split("recent events")[0]
    askew.Replay.run(test, seed=7, suppress=["nodes:3"])  # passes with 3


def test_node_count_is_the_default_outside_shrinking_and_checks_its_arguments() -> None:
    got: list[int] = []

    async def body(world: Any) -> None:
        got.append(world.node_count(5, fewest=3))
        got.append(world.node_count(2))
        for bad, error in (
            ({"default": 0}, ValueError),
            ({"default": 3, "fewest": 4}, ValueError),
            ({"default": True}, TypeError),
            ({"default": 3, "fewest": 1.0}, TypeError),
        ):
            with pytest.raises(error, match="node_count"):
                world.node_count(**bad)

    askew.simulate(seed=1, iterations=1)(body)()
    assert got == [5, 2]
    askew.Replay.run(askew.simulate(seed=1, iterations=1)(body), seed=1, suppress=["nodes:1"])
    assert got[2:] == [3, 1]  # capped, never under fewest


def test_a_failing_test_that_needs_all_its_nodes_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def needs_six(world: Any) -> None:
        nodes = [world.spawn(_counter) for _ in range(world.node_count(6, fewest=4))]
        world.faults.skew(0, offset=1.0)
        assert len(nodes) < 6

    section = _section(_failure(needs_six, monkeypatch).report)
    assert "  fewer nodes: needs all 6 (tried down to 4)" in section


def test_a_dropped_tcp_segment_is_a_message_fault_and_suppressing_it_delivers_it() -> None:
    payload = b"".join(b"%06d" % i for i in range(500))
    seen: dict[str, Any] = {}

    async def body(world: Any) -> None:
        world.spawn(echo_server)
        world.net.configure(loss=0.3)
        got: list[bytes] = []

        async def send_all(node: Any) -> None:
            reader, writer = await asyncio.open_connection("node-0", 7)
            writer.write(payload)
            writer.write_eof()
            got.append(await reader.read())

        world.spawn(send_all)
        await world.clock.advance(120)
        seen["got"] = got
        seen["drops"] = [key for key, _t, _text in world._all_faults() if key != 0]

    test = askew.simulate(seed=4, iterations=1)(body)
    askew.Replay.run(test, seed=4)
    assert seen["got"] == [payload] and seen["drops"]
    first = seen["drops"][0]
    askew.Replay.run(test, seed=4, suppress=[first])
    assert seen["got"] == [payload] and first not in seen["drops"]
