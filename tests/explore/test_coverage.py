# SPDX-License-Identifier: Apache-2.0
"""Coverage feedback (askew/_explore/coverage.py, ext/coverage.c): a per-run map of
(node, site) step transitions that changes nothing in the run, is the same
in every process, grows over a sweep, and, with swarm on, steers a sweep to
the swarm patterns that found new edges, deterministically."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import askew
from askew import _core
from askew._explore import coverage as _coverage
from askew._run import onerun as _onerun
from askew._run import runner as _runner

pytestmark = pytest.mark.usefixtures("clean_env")


async def _relay(node: Any) -> None:
    node.got = 0
    while True:
        msg = await node.recv()
        node.got += 1
        if msg.payload < 6:
            node.send((node.id + 1) % 3, msg.payload + 1)


async def _ring(world: Any) -> None:
    nodes = [world.spawn(_relay) for _ in range(3)]
    nodes[0].send(1, 0)
    nodes[2].send(0, 3)
    await asyncio.sleep(0.001)
    await world.clock.advance(1)


def _map_of(seed: int, on: bool) -> tuple[bytes | None, int]:
    """The coverage map and trace hash of one run of _ring."""
    loop = _runner.SimLoop(seed, _runner.RunConfig())
    try:
        loop._coverage(on)
        outcome = _onerun.run_once(loop, _ring, seed, (), {})
        return loop._coverage_take(), outcome.trace_hash
    finally:
        loop.close()


def test_coverage_changes_nothing_in_the_run_and_is_off_by_default() -> None:
    cov, hash_on = _map_of(5, True)
    off, hash_off = _map_of(5, False)
    assert hash_on == hash_off
    assert off is None
    assert cov is not None and len(cov) == 65536 // 8
    assert 10 < int.from_bytes(cov, "little").bit_count() < 200


def test_the_map_is_a_function_of_the_seed_in_every_process() -> None:
    root = Path(__file__).resolve().parents[2]
    tests = root / "tests"
    code = (
        f"import hashlib, sys; sys.path[:0] = [{str(tests / 'explore')!r}, {str(tests)!r}];"
        "from test_coverage import _map_of;"
        "print(hashlib.sha256(_map_of(5, True)[0]).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            # The parent's environment (under `make asan`, its LD_PRELOAD of
            # libasan) with another hash seed.
            env={**os.environ, "PYTHONHASHSEED": str(h), "PYTHONPATH": str(root)},
            cwd=root,
        ).stdout.strip()
        for h in (1, 2)
    }
    here = _map_of(5, True)[0]
    assert here is not None
    assert digests == {hashlib.sha256(here).hexdigest()}
    assert _map_of(6, True)[0] != here or _map_of(7, True)[0] != here


def test_a_sweep_reports_its_coverage_growth(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASKEW_COVERAGE", "1")
    askew.simulate(seed=1, iterations=20)(_ring)()
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("askew: interleaving coverage:"))
    assert " after 20 runs (after 1: " in line and ", 10: " in line
    counts = [int(p.split(": ")[1]) for p in line.split("(after ")[1].rstrip(")").split(", ")]
    assert counts == sorted(counts) and counts[0] > 0


def _seeds_run(monkeypatch: pytest.MonkeyPatch, swarm: bool, coverage: str) -> list[int]:
    seeds: list[int] = []

    async def body(world: Any) -> None:
        seeds.append(world.seed)
        await _ring(world)

    monkeypatch.setenv("ASKEW_COVERAGE", coverage)
    askew.simulate(seed=3, iterations=60, swarm=swarm)(body)()
    return seeds


def test_steering_is_deterministic_and_only_with_swarm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own = [3] + [int(_core.seed_iteration(3, i)) for i in range(1, 60)]
    assert _seeds_run(monkeypatch, False, "0") == own
    assert _seeds_run(monkeypatch, False, "1") == own  # no swarm: no neighbourhood
    assert _seeds_run(monkeypatch, True, "0") == own
    steered = _seeds_run(monkeypatch, True, "1")
    assert steered == _seeds_run(monkeypatch, True, "1")
    assert steered[: _coverage.WARMUP] == own[: _coverage.WARMUP]
    assert steered != own and len(set(steered)) == len(steered)


def test_a_steered_seed_has_the_pattern_it_was_chosen_for() -> None:
    loop = _runner.SimLoop(1, _runner.RunConfig())
    try:
        feedback = _coverage.Feedback(loop, 1, swarm=True)
        # Only one pattern ever found anything: every steered seed has it.
        for i in range(_coverage.WARMUP):
            feedback.observe(feedback.seed(i))
        want = _coverage.pattern(1)
        feedback._yield = {want: [5, 1]}
        steered = [feedback.seed(i) for i in range(_coverage.WARMUP, _coverage.WARMUP + 40)]
        own = {int(_core.seed_iteration(1, i)) for i in range(_coverage.WARMUP + 40)}
        chosen = [s for s in steered if s not in own]
        assert len(chosen) > 10 and feedback.steered == len(chosen)
        assert all(_coverage.pattern(s) == want for s in chosen)
    finally:
        loop.close()


# ---- the measurement in docs/exploration.md ------------------------------------


async def _last_writer(node: Any) -> None:
    node.value, node.seen = None, 0
    while True:
        msg = await node.recv()
        node.value, node.seen = msg.payload, node.seen + 1


async def reorder_and_dup(world: Any) -> None:
    """A duplicate of an old write landing after a new one: needs latency
    spread and duplication together, which a Swarm names (SWARM)."""
    nodes = [world.spawn(_last_writer) for _ in range(2)]
    nodes[0].send(1, "old")
    await world.clock.advance(0.002)
    nodes[0].send(1, "new")
    await world.clock.advance(3)
    assert not (nodes[1].value == "old" and nodes[1].seen >= 3)


# What swarm=True varied before it kept to each test's contract (issue 22).
SWARM = askew.Swarm(latency=(1e-4, 0.5), loss=(0.01, 0.2), duplicate=(0.01, 0.2))


def runs_to_first_failure(body: Any, base: int, limit: int) -> int | None:
    """Runs of a swarm sweep from `base` to its first failure (None: none in
    `limit`); ASKEW_COVERAGE decides whether it steers. For 20 bases:
    [runs_to_first_failure(reorder_and_dup, 1000 + b, 2000) for b in range(20)]."""
    test = askew.simulate(seed=base, iterations=limit, swarm=SWARM)(body)
    try:
        test()
    except askew.SimulationFailure as exc:
        return (exc.iteration or 0) + 1
    return None


def test_the_measured_case_is_found_with_feedback_on_and_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    for mode in ("0", "1"):
        monkeypatch.setenv("ASKEW_COVERAGE", mode)
        found = runs_to_first_failure(reorder_and_dup, 1000, 400)
        assert found is not None and found <= 400


def test_askew_sweep_chunks_carry_their_coverage_to_the_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from askew._run import sweep as _sweep

    test = askew.simulate(seed=1, iterations=20)(_ring)
    edges: list[int] = []
    _runner.run_iterations(test, 1, 0, 20, edges)
    assert edges == []  # off unless asked for
    monkeypatch.setenv("ASKEW_COVERAGE", "1")
    _runner.run_iterations(test, 1, 0, 20, edges)
    _runner.run_iterations(test, 1, 20, 40, edges)
    assert len(edges) == 2 and edges[0].bit_count() > 10
    result = _sweep.SweepResult("t.py::t", 1, 0, 40, ran=40)
    for n, part in zip((20, 40), edges, strict=True):
        result.edges |= part
        result.edge_growth.append((n, result.edges.bit_count()))
    line = _sweep.summary(result).splitlines()[-1]
    assert line == (
        f"  interleaving coverage: {result.edges.bit_count()} edges (runs: edges, as chunks"
        f" came back: 20: {edges[0].bit_count()}, 40: {result.edges.bit_count()})"
    )
