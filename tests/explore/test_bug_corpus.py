# SPDX-License-Identifier: Apache-2.0
"""The bug corpus of bench/bugs/: askew finds every bug within a documented
number of runs from a fixed base seed, and every fixed variant passes that
many runs, under each strategy the bench measures.

The budgets are the runs each search took at BASE when they were written
(bench/bench_bugs.py has the medians over 20 base seeds), so a strategy
that stops finding a bug, or finds it later than it did, fails here; a
fixed variant that fails is a false alarm of the strategy (or a bug in the
fix). Shrinking is off: it starts after the first failure and is not what
is measured.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import askew

BENCH = Path(__file__).resolve().parents[2] / "bench"
BASE = 13

# Runs within which each strategy finds each bug from BASE: faithful, pct,
# swarm, interleave, pctcp. Swarm's column was measured again when swarm=True
# stopped adding loss and duplication to lossless links (issue 22); pctcp's
# and reply_first's row were measured when pctcp came (issue 26).
FOUND_WITHIN = {
    "lost_update": (1, 1, 2, 1, 1),
    "stale_read": (1, 1, 1, 1, 1),
    "split_brain": (8, 8, 9, 8, 8),
    "double_spend": (6, 6, 6, 6, 28),
    "lease_pause": (2, 3, 3, 9, 2),
    "stale_cache": (4, 2, 4, 2, 4),
    "rare_branch": (4, 4, 4, 4, 4),
    "lost_ack": (1, 1, 3, 1, 1),
    "reply_first": (143, 143, 143, 143, 47),
}
STRATEGIES = ("faithful", "pct", "swarm", "interleave", "pctcp")


@pytest.fixture(autouse=True)
def corpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setenv("ASKEW_SHRINK", "0")
    yield


def bug(name: str) -> ModuleType:
    return importlib.import_module(f"bugs.{name}")


def sweep(module: ModuleType, strategy: str, runs: int, fixed: bool) -> int | None:
    """The run (1-based) of the first failure from BASE within `runs`, or None."""
    knobs: dict[str, Any] = {
        "faithful": {},
        "pct": {"strategy": "pct", **module.PCT},
        "swarm": {"swarm": True},
        "interleave": {"strategy": "interleave"},
        "pctcp": {"strategy": "pctcp", **module.PCT},
    }[strategy]

    @askew.simulate(seed=BASE, iterations=runs, **knobs)
    async def search(world: Any) -> None:
        await module.scenario(world, fixed)

    try:
        search()
    except askew.SimulationFailure as failure:
        assert failure.iteration is not None
        return failure.iteration + 1
    return None


def test_the_corpus_has_the_classic_bugs_and_a_delivery_order_one() -> None:
    import bugs

    assert set(bugs.CORPUS) == set(FOUND_WITHIN)
    assert len(bugs.CORPUS) >= 8
    for name in bugs.CORPUS:
        module = bug(name)
        assert module.PCT["pct_depth"] >= 1
        assert module.PEERS is None or isinstance(module.PEERS, str)


@pytest.mark.parametrize("name", sorted(FOUND_WITHIN))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_askew_finds_the_bug_within_its_budget(name: str, strategy: str) -> None:
    budget = FOUND_WITHIN[name][STRATEGIES.index(strategy)]
    found = sweep(bug(name), strategy, budget, fixed=False)
    assert found is not None, f"{name} under {strategy}: not found within {budget} runs"


@pytest.mark.parametrize("name", sorted(FOUND_WITHIN))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_fixed_variant_passes_as_many_runs(name: str, strategy: str) -> None:
    budget = max(FOUND_WITHIN[name][STRATEGIES.index(strategy)], 20)
    assert sweep(bug(name), strategy, budget, fixed=True) is None
