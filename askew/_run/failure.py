# SPDX-License-Identifier: Apache-2.0
"""A failure's identity and its report's replay: the signature that groups
failures (and tells a shrunk run's bug from another), the replay line of a
run with fault calls suppressed, and the section the fault analysis adds
(askew/_explore/shrink.py)."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterable

from .._explore import shrink as _shrink
from .._loop.frames import PACKAGE_DIR
from ..errors import SimulationFailure

_NOT_USER = (PACKAGE_DIR, os.path.dirname(os.__file__) + os.sep)


def failure_signature(failure: BaseException) -> str:
    """The exception type of a failure and the innermost line of the user's
    code its traceback passed through (askew's and the stdlib's frames
    skipped): `AssertionError at tests/test_x.py:21`."""
    exc = failure.__cause__ if failure.__cause__ is not None else failure
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        name = os.path.abspath(frame.filename)
        if not name.startswith(_NOT_USER):
            return f"{type(exc).__qualname__} at {os.path.relpath(name)}:{frame.lineno}"
    return type(exc).__qualname__


def suppressed_replay(replay: str, suppress: Iterable[int | str]) -> str:
    """`replay` (a report's replay line) with the faults `suppress` skipped."""
    keys = _shrink.ordered(suppress)
    if replay.endswith(")"):  # askew.Replay.run(test, seed=S)
        return f"{replay[:-1]}, suppress=[{','.join(map(repr, keys))}])"
    return f"ASKEW_SUPPRESS={','.join(map(str, keys))} {replay}"


def set_replay(failure: SimulationFailure, replay: str) -> None:
    failure.report = failure.report.replace(
        f"\n  replay: {failure.replay}", f"\n  replay: {replay}"
    )
    failure.replay = replay


def analyse_faults(
    failure: SimulationFailure,
    calls: list[tuple[int | str, float, str]],
    budget: float,
    run: Callable[[frozenset[int | str]], SimulationFailure | None],
) -> None:
    """Which of the failing run's fault calls mattered, and a smaller fault
    set that fails the same way (askew/_explore/shrink.py), `run` re-running its
    seed with some calls suppressed: the section goes into the report,
    before the replay line."""
    signature = failure_signature(failure)

    def rerun(suppress: frozenset[int | str]) -> tuple[str | None, int]:
        again = run(suppress)
        if again is None:
            return None, 0
        return failure_signature(again), again.steps or 0

    found = _shrink.analyse(rerun, calls, signature, failure.steps or 0, budget)
    insert_section(failure, found.lines(suppressed_replay(failure.replay, found.suppressed())))


def insert_section(failure: SimulationFailure, section: list[str]) -> None:
    """Put a section into the report before its replay lines (the one that
    says whether it replays alone, the replay command)."""
    replay = f"\n  replay: {failure.replay}"
    head, sep, tail = failure.report.partition("\n\n  replays alone:")
    if sep:
        failure.report = head + "\n" + "\n".join(section) + sep + tail
    else:
        failure.report = failure.report.replace(
            "\n" + replay, "\n" + "\n".join(section) + "\n" + replay
        )
