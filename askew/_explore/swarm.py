# SPDX-License-Identifier: Apache-2.0
"""Swarm testing: per seed, a seeded random subset of the fault knobs on.

With simulate(swarm=True) each run draws, from its own stream (8, after
buggify's 7: docs/design.md §2), which of the network's loss, duplication
and latency spread (which is what reorders messages) and the loop's CPU cost
spread and timer overshoot are on, and how strongly. The seed decides the
draw, so a failing seed replayed with swarm on runs under the same one.
Faults that change what a test promises (crashes, pauses, partitions,
clock skew) are never injected: a test that never restarts a node would
fail on the first crash for a reason it never claimed to survive. Swarm
varies only the conditions every run is already exposed to.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._loop.config import RunConfig

# Each knob is on with probability 1/2; when on, its strength is one of these.
_LOSS = (0.01, 0.05, 0.2)
_DUPLICATE = (0.01, 0.05, 0.2)
_LATENCY_HI = (0.005, 0.05, 0.5)  # seconds, from a floor of 0.1 ms
_CPU_HI = (100e-6, 1e-3, 10e-3)
_OVERSHOOT_HI = (1e-3, 10e-3, 100e-3)


@dataclass(frozen=True)
class SwarmDraw:
    """One seed's configuration; None is "left as the test set it"."""

    loss: float | None
    duplicate: float | None
    latency_hi: float | None
    cpu_hi: float | None
    overshoot_hi: float | None

    def describe(self) -> str:
        on = [
            text
            for text, value in (
                (f"loss {self.loss}", self.loss),
                (f"duplicate {self.duplicate}", self.duplicate),
                (f"latency up to {self.latency_hi}s", self.latency_hi),
                (f"cpu up to {self.cpu_hi}s", self.cpu_hi),
                (f"overshoot up to {self.overshoot_hi}s", self.overshoot_hi),
            )
            if value is not None
        ]
        return "swarm configuration: " + (", ".join(on) if on else "every knob off")


def draw(seed: int) -> SwarmDraw:
    """The swarm configuration of run `seed`: ten draws in the order of the
    fields (on?, then how strong), from the swarm stream."""
    rng = random.Random(int(_core.seed_stream(seed, _core.STREAM_SWARM)))

    def pick(choices: tuple[float, ...]) -> float | None:
        on = rng.random() < 0.5
        value = rng.choice(choices)
        return value if on else None

    return SwarmDraw(
        pick(_LOSS), pick(_DUPLICATE), pick(_LATENCY_HI), pick(_CPU_HI), pick(_OVERSHOOT_HI)
    )


def run_config(config: RunConfig, d: SwarmDraw) -> RunConfig:
    """The loop knobs of one swarm run: `config` with the drawn spreads."""
    changes: dict[str, Any] = {"swarm_note": d.describe()}
    if d.cpu_hi is not None:
        changes["cpu"] = (config.cpu[0], max(config.cpu[1], d.cpu_hi))
    if d.overshoot_hi is not None:
        changes["overshoot"] = (config.overshoot[0], max(config.overshoot[1], d.overshoot_hi))
    return dataclasses.replace(config, **changes)


def configure_world(world: Any, d: SwarmDraw) -> None:
    """Switch the drawn network knobs on for every link, before the test
    body runs (its own net.configure calls still win)."""
    kwargs: dict[str, Any] = {}
    if d.loss is not None:
        kwargs["loss"] = d.loss
    if d.duplicate is not None:
        kwargs["duplicate"] = d.duplicate
    if d.latency_hi is not None:
        kwargs["latency"] = (min(d.latency_hi, 1e-4), d.latency_hi)
    if kwargs:
        world.net.configure(**kwargs)
