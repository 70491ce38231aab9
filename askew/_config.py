# SPDX-License-Identifier: Apache-2.0
"""Settings: validation of every knob, and the ASKEW_* environment, in one place.

Bad input is a ValueError or TypeError at the call that names the value and
what would be right.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

SEED_LIMIT = 2**64
STRATEGIES = ("random", "fifo", "shuffle")
EXECUTORS = ("refuse", "inline")
DEFAULT_MAX_STEPS = 10_000_000
DEFAULT_MAX_TIME = 365 * 24 * 3600.0  # one virtual year
GC_EVERY_STEPS = 10_007  # a fixed count, so collections fall on the same steps


def check_seed(seed: object, what: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{what} must be an int in [0, 2**64), not {type(seed).__name__} {seed!r}")
    if not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"{what} must be in [0, 2**64), got {seed!r}")
    return seed


def check_positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a positive int, not {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {value!r}")
    return value


def check_iterations(iterations: object, what: str = "iterations") -> int:
    return check_positive_int(iterations, what)


def check_strategy(strategy: object) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(
            f"strategy must be one of {', '.join(map(repr, STRATEGIES))}, got {strategy!r}"
        )
    assert isinstance(strategy, str)
    return strategy


def check_executor(executor: object) -> str:
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be 'refuse' or 'inline', got {executor!r}")
    assert isinstance(executor, str)
    return executor


def check_max_steps(max_steps: object) -> int:
    return check_positive_int(max_steps, "max_steps")


def check_seconds(value: object, what: str, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(value).__name__} {value!r}")
    seconds = float(value)
    if math.isnan(seconds) or math.isinf(seconds):
        raise ValueError(f"{what} must be a finite number of seconds, got {value!r}")
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{what} must be {'>=' if allow_zero else '>'} 0 seconds, got {value!r}")
    return seconds


@dataclass(frozen=True)
class RunConfig:
    """How each run of a simulation is set up; validated on construction."""

    strategy: str = "random"
    max_steps: int = DEFAULT_MAX_STEPS
    max_time: float = DEFAULT_MAX_TIME
    executor: str = "refuse"

    def __post_init__(self) -> None:
        check_strategy(self.strategy)
        check_max_steps(self.max_steps)
        check_seconds(self.max_time, "max_time", allow_zero=False)
        check_executor(self.executor)

    @property
    def max_time_ns(self) -> int:
        return min(int(self.max_time * 1e9), 2**63 - 1)


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw.strip(), 0)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def env_seed() -> int | None:
    """ASKEW_SEED, validated, or None."""
    seed = _env_int("ASKEW_SEED")
    return None if seed is None else check_seed(seed, "ASKEW_SEED")


def env_iterations() -> int | None:
    """ASKEW_ITERATIONS, validated, or None."""
    n = _env_int("ASKEW_ITERATIONS")
    return None if n is None else check_iterations(n, "ASKEW_ITERATIONS")


def env_flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 0 or 1, got {os.environ[name]!r}")
