# SPDX-License-Identifier: Apache-2.0
"""Coverage feedback: a fingerprint of each run's interleaving, and sweeps
that lean towards the swarm configurations finding new ones.

With ASKEW_COVERAGE=1 the loop keeps a 64 Ki-bit map per run (ext/coverage.c:
after each step, the pair (previous step's node and site, this step's) sets
one bit, a site being where the step's task suspended). A sweep keeps the
union of its runs' maps; a run that sets bits the union lacks found new
coverage. With swarm on, each run's swarm pattern (which knobs are on)
earns the new bits its runs found, and after a warm-up half of the
iterations run a seed drawn to have a pattern chosen in proportion to its
yield per run (the other half, the sweep's own seeds: exploration never
stops). Without swarm a seed has no neighbourhood to lean towards (each of
its streams is a hash of it), so only the growth is reported.

Deterministic: the map is built from code names and line numbers, the
choices from a PRNG seeded by the base seed, so a sweep from one base runs
the same seeds every time; each failure names its seed, which replays
alone as always.
"""

from __future__ import annotations

import random
import sys
from typing import Any

from .. import _core
from .._loop.settings import env_flag
from . import swarm as _swarm

WARMUP = 16  # iterations run as the sweep's own seeds before any steering
EXPLOIT = 0.5  # after it, the share of iterations steered to a pattern
_TRIES = 256  # far seeds classified at most, to find one with the chosen pattern
_FAR = 1 << 63  # steered seeds come from iteration indices this high up
_GROWTH_AT = (1, 10, 100, 1000, 10_000, 100_000)


def enabled() -> bool:
    """ASKEW_COVERAGE=1."""
    return env_flag("ASKEW_COVERAGE")


Pattern = tuple[bool, ...]


def pattern(seed: int) -> Pattern:
    """Which swarm knobs run `seed` has on."""
    return _swarm.flags(seed)


class Feedback:
    """One sweep's coverage: the union of its runs' maps, and the steering."""

    def __init__(self, loop: Any, base: int, swarm: bool) -> None:
        self._loop = loop
        self._base = base
        self._swarm = swarm
        self._rng = random.Random(f"askew coverage {base}")
        self.seen = 0  # the union, as an int bitmap
        self.runs = 0
        self.steered = 0
        self.growth: list[tuple[int, int]] = []  # (runs, edges) at _GROWTH_AT
        self._yield: dict[Pattern, list[int]] = {}  # pattern -> [new bits, runs]
        self._queues: dict[Pattern, list[int]] = {}  # far seeds not run yet, by pattern
        self._cursor = 0
        loop._coverage(True)

    def seed(self, i: int) -> int:
        """The seed of iteration i: the sweep's own, or one steered."""
        own = int(_core.seed_iteration(self._base, i)) if i else self._base
        if not self._swarm or i < WARMUP or self._rng.random() >= EXPLOIT:
            return own
        scored = [(p, new / runs) for p, (new, runs) in sorted(self._yield.items()) if new]
        if not scored:
            return own
        want = self._rng.choices([p for p, _ in scored], [w for _, w in scored])[0]
        # Far seeds are classified once each, in order, into queues by
        # pattern; each is run at most once.
        queue = self._queues.setdefault(want, [])
        for _ in range(_TRIES):
            if queue:
                break
            seed = int(_core.seed_iteration(self._base, _FAR + self._cursor))
            self._cursor += 1
            self._queues.setdefault(pattern(seed), []).append(seed)
        if not queue:
            return own
        self.steered += 1
        return queue.pop(0)

    def observe(self, seed: int) -> int:
        """Take the map of the run(s) of `seed` just made: the new bits."""
        raw = self._loop._coverage_take()
        bits = int.from_bytes(raw, "little") if raw else 0
        new = (bits & ~self.seen).bit_count()
        self.seen |= bits
        self.runs += 1
        if self._swarm:
            entry = self._yield.setdefault(pattern(seed), [0, 0])
            entry[0] += new
            entry[1] += 1
        if self.runs in _GROWTH_AT:
            self.growth.append((self.runs, self.seen.bit_count()))
        return new

    def summary(self) -> str:
        edges = self.seen.bit_count()
        steps = ", ".join(f"{runs}: {count}" for runs, count in self.growth)
        text = f"askew: interleaving coverage: {edges} edges after {self.runs} runs"
        text += f" (after {steps})" if steps else ""
        if self._swarm:
            text += f"; {self.steered} runs steered to productive swarm patterns"
        return text

    def report(self) -> None:
        print(self.summary(), file=sys.stderr)
