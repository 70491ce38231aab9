# SPDX-License-Identifier: Apache-2.0
"""Which faults mattered, and the smallest fault set that still fails.

After a failure the runner hands this module a way to re-run the failing
seed with some of its fault calls suppressed (World._fault_call: the k-th
fault call of a run, counted in order of occurrence, does nothing when k
is in the run's suppressed set). The claim a result makes is about exactly
those runs: "the run of this seed in which fault call k does nothing"; the
seed still decides every other draw, so what the fault's absence changes
downstream (later scheduling, latencies drawn for other messages) changes
as it would in any run of that seed without the fault. Two failures are
"the same" when their failure_signature (exception type and innermost user
line) agree.

Two searches share one wall-time budget:

1. each fault call alone suppressed: does the failure persist without it?
2. a one-minimal set of fault calls to keep (delta debugging at its finest
   granularity: start from the calls found needed in 1, else from all,
   and drop calls one at a time while the failure persists).

Only calls are counted: the drops and duplications the network draws per
message are not faults that can be suppressed one by one (yet): a link's
loss is suppressed as a whole with the net.configure call that set it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A re-run: the suppressed fault calls -> (signature or None if it passed, steps).
Rerun = Callable[[frozenset[int]], tuple[str | None, int]]

_SHOWN = 24  # the fault calls the report lists one by one


@dataclass
class Analysis:
    """What the analysis of one failure found."""

    calls: list[tuple[float, str]]  # the failing run's fault calls, in order
    signature: str  # the failure's
    verdicts: dict[int, str | None]  # call -> signature without it (None: passed)
    kept: list[int] | None  # a one-minimal set of calls that still fails; None: not found
    kept_steps: int | None  # the steps of the run with only `kept`
    steps: int  # the failing run's
    reruns: int
    seconds: float
    out_of_time: bool

    def suppressed(self) -> list[int]:
        """The calls the shrunk run skips (empty if nothing was shrunk)."""
        if self.kept is None:
            return []
        keep = set(self.kept)
        return [k for k in range(len(self.calls)) if k not in keep]

    def verdict(self, k: int) -> tuple[str, str]:
        """(needed / not needed / not tried, what the run without call k did)."""
        if k not in self.verdicts:
            return "not tried", "out of time"
        without = self.verdicts[k]
        if without is None:
            return "needed", "passes without it"
        if without == self.signature:
            return "not needed", "fails the same way without it"
        return "needed", f"fails otherwise without it: {without}"

    def lines(self, replay: str) -> list[str]:
        """The report's section."""
        n = len(self.calls)
        # No wall time here: a report is a function of its seed (the budget
        # running out is the one exception, and says so).
        head = f"  which faults mattered ({self.reruns} re-run{'s' if self.reruns != 1 else ''}"
        head += ", out of time)" if self.out_of_time else ")"
        out = ["", head]
        for k, (t, text) in enumerate(self.calls[:_SHOWN]):
            word, why = self.verdict(k)
            out.append(f"    {word:<10}  #{k:<2} {t:8.3f}s  {text}  ({why})")
        if n > _SHOWN:
            out.append(f"    ... {n - _SHOWN} more")
        if self.kept is not None and len(self.kept) < n:
            kept = ", ".join(f"#{k}" for k in self.kept)
            kept = f"with only {kept}" if kept else "without any fault"
            out.append(
                f"  shrunk: fails the same way {kept} (steps={self.kept_steps}, was {self.steps})"
            )
            out.append(f"  replay shrunk: {replay}")
        elif self.kept is not None:
            out.append("  shrunk: every fault is needed")
        return out


def analyse(
    rerun: Rerun,
    calls: Sequence[tuple[float, str]],
    signature: str,
    steps: int,
    budget: float,
    clock: Callable[[], float] = time.monotonic,
) -> Analysis:
    """Re-run a failing seed with its fault calls suppressed, within
    `budget` wall seconds (the re-run under way when it runs out ends)."""
    start = clock()
    n = len(calls)
    result = Analysis(list(calls), signature, {}, None, None, steps, 0, 0.0, False)

    # Each suppressed set is run once; suppressing nothing is the failure itself.
    seen: dict[frozenset[int], tuple[str | None, int]] = {frozenset(): (signature, steps)}

    def tried(suppress: frozenset[int]) -> tuple[str | None, int] | None:
        if suppress in seen:
            return seen[suppress]
        if clock() - start >= budget:
            result.out_of_time = True
            return None
        result.reruns += 1
        seen[suppress] = rerun(suppress)
        return seen[suppress]

    everything = frozenset(range(n))
    for k in range(n):
        got = tried(frozenset((k,)))
        if got is None:
            break
        result.verdicts[k] = got[0]
    needed = [k for k in range(n) if result.verdicts.get(k, signature) != signature]
    kept: list[int] | None = None
    kept_steps = steps
    if n and not result.out_of_time:
        # The calls each needed alone, if they suffice together; else all.
        got = tried(everything - frozenset(needed))
        if got is not None and got[0] == signature:
            kept, kept_steps = needed, got[1]
        elif got is not None:
            kept = list(range(n))
        for k in list(kept or ()):
            assert kept is not None
            fewer = [c for c in kept if c != k]
            got = tried(everything - frozenset(fewer))
            if got is None:
                break
            if got[0] == signature:
                kept, kept_steps = fewer, got[1]
    if n == 0:
        kept = []
    result.kept, result.kept_steps = kept, kept_steps
    result.seconds = clock() - start
    return result
