# SPDX-License-Identifier: Apache-2.0
"""The exceptions askew raises.

A failing iteration raises `SimulationFailure` (an `AssertionError`, so
pytest reports a test failure) carrying the seed that replays it. What
askew cannot control inside a run raises `NondeterminismError` (a
`NotImplementedError`, so libraries that probe for support degrade).
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "DeadlockError",
    "NondeterminismError",
    "SimulationFailure",
]


class SimulationFailure(AssertionError):
    """An iteration of a simulation failed; `seed` replays it alone."""

    seed: int | None = None
    iteration: int | None = None
    time: float | None = None
    steps: int | None = None
    trace_hash: int | None = None
    report: str = ""
    replay: str = ""

    def __str__(self) -> str:
        return self.report or super().__str__()


class DeadlockError(SimulationFailure):
    """Nothing is ready, no timer is pending, and the run is not finished."""


class BudgetExceeded(SimulationFailure):
    """A run used up its step or virtual-time budget: likely a livelock."""


class NondeterminismError(NotImplementedError):
    """Something inside a simulation would escape the seed's control."""
