# SPDX-License-Identifier: Apache-2.0
"""Swarm testing within the test's contract: per seed, a seeded subset of
the knobs an askew.Swarm names, at seeded strengths.

With simulate(swarm=True) (askew.Swarm() and its defaults) each run draws,
from its own stream (9, docs/design.md §2), whether the loop's CPU cost per
callback and its timer overshoot are widened and how far, and whether every
link's latency is reshaped: drawn from a seeded window inside the range
the test gave that link, never outside it. None of these changes what a
test was promised: a message on a lossless link still arrives, a timer
still fires, only when differs, as it could on a real machine. Loss,
duplication and latency beyond a link's range do change it, so they are
opt-in, by name (askew.Swarm(loss=(0, 0.2), ...)); crashes, pauses,
partitions and clock skew are the test's own to inject (docs/exploration.md
says why). The seed decides the draw, so a failing seed replayed with the
same Swarm runs under the same configuration.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._loop.config import RunConfig, Swarm


@dataclass(frozen=True)
class SwarmDraw:
    """One seed's configuration; None is "left as the test set it"."""

    cpu_hi: float | None
    overshoot_hi: float | None
    # The window of each link's latency range its draws come from, as
    # fractions (a, b) of that range.
    window: tuple[float, float] | None
    latency: tuple[float, float] | None
    loss: float | None
    duplicate: float | None

    def describe(self) -> str:
        def g(x: float) -> str:
            return f"{x:.3g}"

        on = [
            text
            for text, value in (
                (f"cpu up to {g(self.cpu_hi or 0)}s", self.cpu_hi),
                (f"overshoot up to {g(self.overshoot_hi or 0)}s", self.overshoot_hi),
                (
                    "latency in {:.0%}..{:.0%} of each link's range".format(
                        *(self.window or (0, 1))
                    ),
                    self.window,
                ),
                (
                    "latency {}..{}s on every link".format(*map(g, self.latency or (0, 0))),
                    self.latency,
                ),
                (f"loss {g(self.loss or 0)}", self.loss),
                (f"duplicate {g(self.duplicate or 0)}", self.duplicate),
            )
            if value is not None
        ]
        return "swarm configuration: " + (", ".join(on) if on else "every knob off")


def _strength(span: tuple[float, float], u: float) -> float:
    """A point of `span` for the uniform draw u: log-uniform when the span
    is of seconds or probabilities above zero, so a small strength is as
    likely as a large one; uniform from zero."""
    lo, hi = span
    return lo * (hi / lo) ** u if lo > 0 else lo + (hi - lo) * u


def _draws(seed: int) -> tuple[list[bool], list[list[float]]]:
    """Run `seed`'s fourteen draws from the swarm stream, always all of them,
    in this order: for the CPU bound, the overshoot bound, the reshaping
    window, the latency, loss and duplication, whether it is on, then its
    strength (the window and the latency take two). So a knob a Swarm
    switches on or off never moves another's draws."""
    rng = random.Random(int(_core.seed_stream(seed, _core.STREAM_SWARM)))
    flags, draws = [], []
    for width in (1, 1, 2, 2, 1, 1):
        flags.append(rng.random() < 0.5)
        draws.append([rng.random() for _ in range(width)])
    return flags, draws


def flags(seed: int) -> tuple[bool, ...]:
    """Which knobs run `seed` switches on where its Swarm names them (the
    pattern coverage feedback leans towards, askew/_explore/coverage.py)."""
    return tuple(_draws(seed)[0])


def draw(seed: int, swarm: Swarm | bool = True) -> SwarmDraw:
    """The configuration of run `seed` under `swarm` (True: askew.Swarm())."""
    knobs = Swarm() if swarm is True else swarm
    flags, draws = _draws(seed)
    if not isinstance(knobs, Swarm):
        return SwarmDraw(None, None, None, None, None, None)

    def pick(k: int, span: tuple[float, float] | None) -> float | None:
        return _strength(span, draws[k][0]) if span is not None and flags[k] else None

    window = (min(draws[2]), max(draws[2])) if flags[2] else None
    latency = None
    if knobs.latency is not None and flags[3]:
        a, b = sorted(_strength(knobs.latency, u) for u in draws[3])
        latency = (a, b)
    return SwarmDraw(
        pick(0, knobs.cpu),
        pick(1, knobs.overshoot),
        window,
        latency,
        pick(4, knobs.loss),
        pick(5, knobs.duplicate),
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
    """Set the drawn network knobs on every link before the test body runs,
    and leave the latency window with the world, which reshapes each range
    the test gives a link later (World._reshape_latency). The test's own
    net.configure calls win over the rest."""
    kwargs: dict[str, Any] = {}
    if d.loss is not None:
        kwargs["loss"] = d.loss
    if d.duplicate is not None:
        kwargs["duplicate"] = d.duplicate
    if d.latency is not None:
        kwargs["latency"] = d.latency
    elif d.window is not None:
        lo_ns, hi_ns = world._wire.link(-1, -1)[:2]
        kwargs["latency"] = (lo_ns / 1e9, hi_ns / 1e9)
    world._latency_window = d.window
    if kwargs:
        world.net.configure(**kwargs)
