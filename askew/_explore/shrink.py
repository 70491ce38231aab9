# SPDX-License-Identifier: Apache-2.0
"""Which faults mattered, and the smallest fault set that still fails.

After a failure the runner hands this module a way to re-run the failing
seed with some of its faults suppressed. A fault is either a fault call
(World._fault_call: the k-th fault call of a run, counted in order of
occurrence, key k) or one of the network's own decisions on a message
(ext/engine/net.c: the loss draw dropped send N, key "drop:N", or the
duplicate draw doubled it, key "dup:N"). The claim a result makes is about
exactly those runs: "the run of this seed in which fault k does nothing";
the seed still decides every other draw (a suppressed message fault shifts
no draw of the NET stream), so what the fault's absence changes downstream
changes as it would in any run of that seed without it. Two failures are
"the same" when their failure_signature (exception type and innermost user
line) agree.

Two searches share one wall-time budget:

1. each fault alone suppressed: does the failure persist without it? Every
   fault call is tried; message faults, which a lossy run has by the
   hundred, at most MESSAGES_TRIED of them, the most recent first (the drop
   that matters is usually shortly before the failure; earlier ones were
   mostly recovered from by the program's retries).
2. a one-minimal set of faults to keep, by delta debugging's complement
   reduction: start from the faults found needed in 1 if they suffice,
   else from all, and drop chunks of halving size while the failure
   persists, down to single faults.

Then, if the test asked World.node_count for its node count, the shrunk
run is tried with the fewest nodes the test allows, then one more at a
time: the first count that fails the same way is reported (as "nodes:N"
in the shrunk run's suppress list, read back by node_count).

Last, the draws that are no fault, each kept simplified when the shrunk
run still fails the same way with it (DRAW_SHRINKS, in this order, each
tried on top of those kept): every latency at its link's minimum
("latency:min"), no CPU time or timer overshoot ("timing:zero"),
world.random drawing zeros ("random:zero"), asyncio's FIFO order across
nodes ("schedule:fifo"). A run with no fault at all is shrunk this way
too. What stays unsimplified is what the failure needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .._loop.settings import DRAW_SHRINKS, NODES_KEY, RANDOM_ZERO

# A fault: its key (call index, or "drop:N" / "dup:N"), virtual time, what.
Fault = tuple[int | str, float, str]
# A re-run: the suppressed faults -> (signature or None if it passed, steps).
Rerun = Callable[[frozenset[int | str]], tuple[str | None, int]]

_SHOWN = 24  # the fault calls the report lists one by one
# The section a failure gets instead of the analysis when its seed, re-run
# unchanged and alone, did not give its trace: every re-run without a fault
# would differ for that other reason, and read as "every fault is needed".
UNREPRODUCED = [
    "",
    "  which faults mattered: not analysed: the seed re-run unchanged did not fail "
    "the same way (see below), so no re-run without a fault could say what it did",
]
MESSAGES_TRIED = 16  # message faults tried alone, the most recent first
SIMPLIFY_DRAWS = True  # analyse()'s default: the draws after the faults
_SAID = 4  # the faults the summary sentence names per verdict


def ordered(keys: Iterable[int | str]) -> list[int | str]:
    """Fault keys as a replay line lists them: calls by index, then message
    faults by send id."""

    def rank(key: int | str) -> tuple[int, int, str]:
        if isinstance(key, int):
            return (0, key, "")
        kind, _, n = key.partition(":")
        return (2 if kind == NODES_KEY else 1, int(n), kind)

    draws = [key for key in keys if key in DRAW_SHRINKS]
    return sorted((key for key in keys if key not in draws), key=rank) + draws


def _label(key: int | str) -> str:
    return f"#{key:<2}" if isinstance(key, int) else key


@dataclass
class Analysis:
    """What the analysis of one failure found."""

    faults: list[Fault]  # the failing run's faults: calls in order, then messages
    signature: str  # the failure's
    verdicts: dict[int | str, str | None]  # fault -> signature without it (None: passed)
    kept: list[int | str] | None  # a one-minimal set that still fails; None: not found
    kept_steps: int | None  # the steps of the run with only `kept`
    steps: int  # the failing run's
    reruns: int
    seconds: float
    out_of_time: bool
    # Fewer nodes (World.node_count): (fewest, default) the test allows, and
    # the fewest that fail the same way (None: none found or not tried).
    nodes: tuple[int, int] | None = None
    nodes_kept: int | None = None
    # The draws tried simplified (DRAW_SHRINKS): key -> whether the shrunk
    # run still fails the same way with it (kept simplified).
    draws: dict[str, bool] = field(default_factory=dict)

    def suppressed(self) -> list[int | str]:
        """What the shrunk run leaves out: its skipped faults and, if it runs
        fewer nodes, "nodes:N" (empty if nothing was shrunk)."""
        if self.kept is None:
            return []
        keep = set(self.kept)
        out: list[int | str] = [key for key, _, _ in self.faults if key not in keep]
        if self.nodes_kept is not None:
            out.append(f"{NODES_KEY}:{self.nodes_kept}")
        return ordered(out) + [key for key in DRAW_SHRINKS if self.draws.get(key)]

    def verdict(self, key: int | str) -> tuple[str, str]:
        """(needed / not needed / not tried, what the run without `key` did)."""
        if key not in self.verdicts:
            return "not tried", "out of time" if self.out_of_time else "beyond the bound"
        without = self.verdicts[key]
        if without is None:
            return "needed", "passes without it"
        if without == self.signature:
            return "not needed", "fails the same way without it"
        return "needed", f"fails otherwise without it: {without}"

    def summary(self) -> str | None:
        """One sentence: which faults the failure persists without, which it
        needs (each fault tried alone)."""
        said: dict[str, list[str]] = {"not needed": [], "needed": []}
        for key, t, text in self.faults:
            word = self.verdict(key)[0]
            if word in said:
                what = text if isinstance(key, str) else f"{text} (#{key})"
                said[word].append(f"{what} at {t:.3f}s")
        parts = []
        for word, lead in (("not needed", "fails the same way without"), ("needed", "needs")):
            names = said[word][:_SAID]
            if len(said[word]) > _SAID:
                names.append(f"{len(said[word]) - _SAID} more")
            if names:
                tail = names[-1] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
                parts.append(f"{lead} {tail}")
        return "; ".join(parts) if parts else None

    def lines(self, replay: str) -> list[str]:
        """The report's section."""
        calls = [f for f in self.faults if isinstance(f[0], int)]
        messages = [f for f in self.faults if isinstance(f[0], str)]
        # No wall time here: a report is a function of its seed (the budget
        # running out is the one exception, and says so).
        what = "which faults mattered" if self.faults else "shrinking (the run has no fault)"
        head = f"  {what} ({self.reruns} re-run{'s' if self.reruns != 1 else ''}"
        head += ", out of time)" if self.out_of_time else ")"
        out = ["", head]
        shown = calls[:_SHOWN] + [f for f in messages if f[0] in self.verdicts]
        width = max((len(_label(key)) for key, _, _ in shown), default=0)
        for key, t, text in shown:
            word, why = self.verdict(key)
            out.append(f"    {word:<10}  {_label(key):<{width}} {t:8.3f}s  {text}  ({why})")
        if len(calls) > _SHOWN:
            out.append(f"    ... {len(calls) - _SHOWN} more fault calls")
        untried = sum(1 for f in messages if f[0] not in self.verdicts)
        if untried:
            out.append(
                f"    ... {untried} more message fault{'s' if untried != 1 else ''}, not tried "
                f"alone (at most {MESSAGES_TRIED} are, the most recent first)"
            )
        said = self.summary() if len(self.verdicts) > 1 else None  # one: the list says it
        if said:
            out.append(f"  in short: {said}")
        if self.nodes is not None:
            fewest, default = self.nodes
            if self.nodes_kept is not None:
                count = f"{self.nodes_kept} nodes (was {default})"
                out.append(f"  fewer nodes: fails the same way with {count}")
            elif self.kept is not None and not self.out_of_time:
                out.append(f"  fewer nodes: needs all {default} (tried down to {fewest})")
        simpler = [DRAW_WORDS[key][0] for key in DRAW_SHRINKS if self.draws.get(key)]
        if self.draws:
            needs = [DRAW_WORDS[key][1] for key in DRAW_SHRINKS if self.draws.get(key) is False]
            said = "; ".join(simpler) if simpler else "nothing: each was needed"
            out.append(f"  draws: fails the same way with {said}")
        n = len(self.faults)
        shrunk = self.nodes_kept is not None or bool(simpler)
        if self.kept is not None and (len(self.kept) < n or shrunk):
            kept = ", ".join(_label(k).strip() for k in ordered(self.kept))
            kept = f"with only {kept}" if kept else "without any fault"
            if self.nodes_kept is not None:
                kept += f" on {self.nodes_kept} nodes"
            if simpler:
                kept += ", " + ", ".join(simpler)
            out.append(
                f"  shrunk: fails the same way {kept} (steps={self.kept_steps}, was {self.steps})"
            )
            out.append(f"  replay shrunk: {replay}")
        elif self.kept is not None and n:
            out.append("  shrunk: every fault is needed")
        if self.kept is not None and self.draws:
            faults = [text for key, _, text in self.faults if key in set(self.kept)]
            needs = (
                faults[:_SAID]
                + ([f"{len(faults) - _SAID} more faults"] if len(faults) > _SAID else [])
                + needs
            )
            out.append(
                "  the smallest failing run needs: "
                + ("; ".join(needs) if needs else "none of these: the seed's schedule alone")
            )
        return out


def analyse(
    rerun: Rerun,
    faults: Sequence[Fault],
    signature: str,
    steps: int,
    budget: float,
    clock: Callable[[], float] = time.monotonic,
    draws: bool | None = None,
) -> Analysis:
    """Re-run a failing seed with its faults suppressed, within `budget`
    wall seconds (the re-run under way when it runs out ends); with
    `draws`, then with its draws simplified."""
    start = clock()
    # "nodes:F-D" is no fault: the test lets its run have F to D nodes.
    scale = [key for key, _, _ in faults if f"{key}".startswith(f"{NODES_KEY}:")]
    # "random:zero" is no fault either: the run drew from world.random.
    drew = any(key == RANDOM_ZERO for key, _, _ in faults)
    faults = [f for f in faults if f[0] not in scale and f[0] != RANDOM_ZERO]
    result = Analysis(list(faults), signature, {}, None, None, steps, 0, 0.0, False)
    keys = [key for key, _, _ in faults]

    # Each suppressed set is run once; suppressing nothing is the failure itself.
    seen: dict[frozenset[int | str], tuple[str | None, int]] = {frozenset(): (signature, steps)}

    def tried(suppress: frozenset[int | str]) -> tuple[str | None, int] | None:
        if suppress in seen:
            return seen[suppress]
        if clock() - start >= budget:
            result.out_of_time = True
            return None
        result.reruns += 1
        seen[suppress] = rerun(suppress)
        return seen[suppress]

    everything = frozenset(keys)
    messages = [key for key in keys if isinstance(key, str)]
    alone: list[int | str] = [key for key in keys if isinstance(key, int)]
    alone += messages[::-1][:MESSAGES_TRIED]
    for key in alone:
        got = tried(frozenset((key,)))
        if got is None:
            break
        result.verdicts[key] = got[0]
    needed = [k for k in keys if result.verdicts.get(k, signature) != signature]
    kept: list[int | str] | None = None
    kept_steps = steps
    if keys and not result.out_of_time:
        # The faults each needed alone, if they suffice together; else all.
        got = tried(everything - frozenset(needed))
        if got is not None and got[0] == signature:
            kept, kept_steps = needed, got[1]
        elif got is not None:
            kept = list(keys)
        if kept is not None:
            kept, kept_steps = _reduce(kept, kept_steps, signature, everything, tried)
    if not keys:
        kept = []
    result.kept, result.kept_steps = kept, kept_steps
    if scale and kept is not None:
        _fewer_nodes(result, str(scale[0]), tried)
    if kept is not None and (SIMPLIFY_DRAWS if draws is None else draws):
        _simpler_draws(result, tried, drew)
    result.seconds = clock() - start
    return result


# What a report says of each simplified draw: kept simplified, and needed.
DRAW_WORDS = {
    "latency:min": ("every latency at its link's minimum", "latencies spread in their range"),
    "timing:zero": ("no CPU time or timer overshoot", "time that callbacks take"),
    "random:zero": ("world.random drawing zeros", "its own world.random draws"),
    "schedule:fifo": ("asyncio's FIFO order across nodes", "an order of steps other than FIFO"),
}


def _simpler_draws(
    result: Analysis,
    tried: Callable[[frozenset[int | str]], tuple[str | None, int] | None],
    drew: bool,
) -> None:
    """Each of DRAW_SHRINKS on top of the shrunk run and the draws kept so
    far: kept when the run still fails the same way (world.random's only
    if the run drew from it)."""
    for key in DRAW_SHRINKS:
        if key == RANDOM_ZERO and not drew:
            continue
        base = frozenset(result.suppressed())
        got = tried(base | {key})
        if got is None:
            return
        result.draws[key] = got[0] == result.signature
        if result.draws[key]:
            result.kept_steps = got[1]


def _fewer_nodes(
    result: Analysis,
    scale: str,
    tried: Callable[[frozenset[int | str]], tuple[str | None, int] | None],
) -> None:
    """With the shrunk run's faults left out, try the fewest nodes the test
    allows first, then one more at a time, up to one fewer than it had: the
    first count that fails the same way is the shrunk run's."""
    fewest, _, default = scale.partition(":")[2].partition("-")
    result.nodes = (int(fewest), int(default))
    base = frozenset(result.suppressed())
    for count in range(int(fewest), int(default)):
        got = tried(base | {f"{NODES_KEY}:{count}"})
        if got is None:
            return
        if got[0] == result.signature:
            result.nodes_kept, result.kept_steps = count, got[1]
            return


def _reduce(
    kept: list[int | str],
    kept_steps: int,
    signature: str,
    everything: frozenset[int | str],
    tried: Callable[[frozenset[int | str]], tuple[str | None, int] | None],
) -> tuple[list[int | str], int]:
    """Delta debugging's complement reduction: drop chunks of `kept` (half
    of it, then quarters, ... then single faults) while the run keeping the
    rest fails the same way; passes at chunk size 1 repeat until one drops
    nothing, so the result is one-minimal unless the budget ran out."""
    size = max(1, len(kept) // 2)
    while kept:
        changed, i = False, 0
        while i < len(kept):
            fewer = kept[:i] + kept[i + size :]
            got = tried(everything - frozenset(fewer))
            if got is None:
                return kept, kept_steps
            if got[0] == signature:
                kept, kept_steps, changed = fewer, got[1], True
            else:
                i += size
        if size == 1 and not changed:
            break
        size = max(1, size // 2)
    return kept, kept_steps
