# SPDX-License-Identifier: Apache-2.0
"""The exceptions askew raises.

A failing iteration raises `SimulationFailure` (an `AssertionError`, so
pytest reports a test failure) carrying the seed that replays it. What
askew cannot control inside a run raises `NondeterminismError`, a
`SimulationFailure` too.

Why a refusal is a `SimulationFailure` and not, as it was, a
`NotImplementedError`: that made it a `RuntimeError`, and code under test
catches `RuntimeError` all the time (`except RuntimeError`,
`pytest.raises(RuntimeError, match=...)`), so a refusal became a silently
different program or a confusing regex mismatch. The old reason, letting
libraries that probe for support degrade, no longer holds either: a refused
call fails its run even when caught (see below), so degrading cannot turn
the run green. A refusal means the run depends on something outside the
seed; a green run would be a lie and a red one must name the cause, which
is what every `SimulationFailure` is: a failed run, with its seed. Code
under test almost never catches `AssertionError`, and `except Exception`,
which nothing can avoid, does not help it either: askew notes each refusal
before raising it and raises it again after the step when it was caught,
naming the call, the task and the user's line, once.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "DeadlockError",
    "NondeterminismError",
    "SimulationFailure",
    "StepTimeout",
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
    # Whether the seed, re-run alone in a fresh world, gave the same trace
    # (None: not checked); the report's "replays alone" line says the same.
    replays_alone: bool | None = None

    def __str__(self) -> str:
        return self.report or super().__str__()


class DeadlockError(SimulationFailure):
    """Nothing is ready, no timer is pending, and the run is not finished."""


class BudgetExceeded(SimulationFailure):
    """A run used up its step or virtual-time budget: likely a livelock."""


class StepTimeout(BudgetExceeded):
    """One step ran longer than the step watchdog's real-time limit
    (`step_timeout`): likely a loop that never awaits."""

    # The watchdog's report of the step it stopped. The interpreter raises
    # the class itself in the loop's thread, calling it with no arguments.
    last_report = "a step ran past the step watchdog's limit (step_timeout)"

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or (type(self).last_report,)))


class NondeterminismError(SimulationFailure):
    """Something inside a simulation would escape the seed's control, so askew refused it.

    `task` is the task that made the refused call (its repr, or why there was
    none) and `where` the user's line, "file:line in function()": the innermost
    frame outside askew and the standard library. Both are also in the message.
    They are None on errors askew raises outside a run (check_determinism's).
    """

    task: str | None = None
    where: str | None = None
