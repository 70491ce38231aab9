# SPDX-License-Identifier: Apache-2.0
"""A run's configuration: RunConfig, what the loop is set up with, and the
check of every value a setting takes, with its limits and defaults. Bad
input is a ValueError or TypeError at the call that names the value and
what would be right; askew/_loop/settings.py parses the same settings from
their ASKEW_* and option spellings."""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass

from .. import _core

SEED_LIMIT = 2**64
STRATEGIES: tuple[str, ...] = _core.STRATEGIES  # the engine's, by number (ext/loop_type.c)
# The strategies whose every schedule stock asyncio could produce on some
# machine (DESIGN §2, "Faithful schedules"); the others hunt harder but may
# not, and their failure reports say so.
FAITHFUL_STRATEGIES = ("faithful", "fifo", "pct", "pctcp")
EXECUTORS = ("refuse", "inline", "threads")
DEFAULT_MAX_STEPS = 10_000_000
# Seeded virtual CPU time per callback and timer overshoot under "faithful",
# seconds, uniform in [lo, hi] (docs/design.md says why these numbers).
DEFAULT_CPU = (0.0, 20e-6)
DEFAULT_OVERSHOOT = (0.0, 100e-6)
# The largest span one knob may take: far beyond any real callback or timer
# lateness, far below where nanoseconds overflow.
MAX_SPAN_S = 3600.0
DEFAULT_MAX_TIME = 365 * 24 * 3600.0  # one virtual year
# The engine counts steps in a uint64: a budget that does not fit would wrap.
STEPS_LIMIT = 2**64
# The longest span of virtual seconds any knob may take: 2**62 ns, about 146
# years, so that a deadline (now + span) stays inside int64 nanoseconds.
SECONDS_LIMIT = 2**62 / 1e9
# A clock skew of a century either way is past any step NTP could make, and
# keeps epoch + offset + drift far inside int64 nanoseconds.
OFFSET_LIMIT = 100 * 365.25 * 24 * 3600.0
# The wall clock a run starts at (docs/design.md, "The wall epoch"): the
# extension's default, 2020-01-01T00:00:00Z, and the latest it takes, which
# leaves room for all of virtual time in int64 nanoseconds (2116-02-20).
UNIX_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
DEFAULT_WALL_EPOCH = UNIX_EPOCH + datetime.timedelta(seconds=_core.WALL_EPOCH)
WALL_EPOCH_MAX_NS: int = _core.WALL_EPOCH_MAX_NS
# PCT (docs/exploration.md): the bug depth d it aims at, and k, its estimate
# of a run's steps, over which the d - 1 priority change points are spread.
DEFAULT_PCT_DEPTH = 3
DEFAULT_PCT_STEPS = 1000
PCT_DEPTH_MAX = 64  # ASKEW_PCT_DEPTH_MAX in ext/engine/engine.h
GC_EVERY_STEPS = 10_007  # a fixed count, so collections fall on the same steps
# The step watchdog's limit, seconds of real time one step may run before it
# is reported (askew/_loop/watchdog.py): far past any step that is only
# slow on a loaded machine, short of a user's patience.
DEFAULT_STEP_TIMEOUT = 60.0


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


def check_pct_depth(depth: object, what: str = "pct_depth") -> int:
    check_positive_int(depth, what)
    assert isinstance(depth, int)
    if depth > PCT_DEPTH_MAX:
        raise ValueError(f"{what} must be at most {PCT_DEPTH_MAX}, got {depth!r}")
    return depth


def check_pct_steps(steps: object, what: str = "pct_steps") -> int:
    check_positive_int(steps, what)
    assert isinstance(steps, int)
    if steps >= STEPS_LIMIT:
        raise ValueError(f"{what} must be < 2**64, got {steps!r}")
    return steps


def check_flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__} {value!r}")
    return value


def check_name(name: object, what: str) -> str:
    """A buggify point's or a monitor's name: a non-empty str."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: the name must be a str, got {type(name).__name__} {name!r}")
    if not name:
        raise ValueError(f"{what}: the name must not be empty")
    return name


PPM = 1_000_000


def check_ppm(p: object, what: str) -> int:
    """A probability in [0, 1] as the engine takes it: parts per million."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"{what} must be a probability in [0, 1], got {p!r}")
    return round(float(p) * PPM)


def check_executor(executor: object) -> str:
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be 'threads', 'inline' or 'refuse', got {executor!r}")
    assert isinstance(executor, str)
    return executor


def check_max_steps(max_steps: object, what: str = "max_steps") -> int:
    steps = check_positive_int(max_steps, what)
    if steps >= STEPS_LIMIT:
        raise ValueError(
            f"{what} must be < 2**64 (the engine counts steps in 64 bits), got {steps}"
        )
    return steps


def check_step_timeout(value: object, what: str = "step_timeout") -> float:
    """The watchdog's limit: a finite number of real seconds, 0 for none."""
    return check_seconds(value, what)


def _finite_seconds(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(value).__name__} {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if math.isnan(seconds) or math.isinf(seconds):
        raise ValueError(f"{what} must be a finite number of seconds, got {value!r}")
    return seconds


def check_seconds(value: object, what: str, *, allow_zero: bool = True) -> float:
    seconds = _finite_seconds(value, what)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{what} must be {'>=' if allow_zero else '>'} 0 seconds, got {value!r}")
    if seconds > SECONDS_LIMIT:
        raise ValueError(
            f"{what} must be at most {SECONDS_LIMIT:.4g} seconds (2**62 ns, ~146 years: "
            f"virtual time is int64 nanoseconds), got {value!r}"
        )
    return seconds


def check_max_time(value: object, what: str = "max_time") -> float:
    """A time budget: finite, at least 1 ns. Any larger value is allowed and
    means "until virtual time ends" (2**62 ns; see RunConfig.max_time_ns)."""
    seconds = _finite_seconds(value, what)
    if seconds <= 0:
        raise ValueError(f"{what} must be > 0 seconds, got {value!r}")
    # 0 ns would mean "no budget" to the engine: a tiny budget must not
    # silently become an unbounded one.
    if seconds < 1.0 and round(seconds * 1e9) < 1:
        raise ValueError(f"{what} must be at least 1e-09 seconds (one nanosecond), got {value!r}")
    return seconds


def check_offset(value: object, what: str = "offset") -> float:
    """A clock-skew offset in seconds, either sign, within OFFSET_LIMIT."""
    seconds = _finite_seconds(value, what)
    if abs(seconds) > OFFSET_LIMIT:
        raise ValueError(
            f"{what} must be within +/-{OFFSET_LIMIT:.4g} seconds (a century) so the "
            f"skewed clock stays in range, got {value!r}"
        )
    return seconds


WallEpoch = datetime.datetime | datetime.date | float | str


def wall_epoch_text(epoch: datetime.datetime) -> str:
    """An epoch as ISO-8601 UTC text, as it is written back (2026-01-01T00:00:00Z)."""
    return epoch.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def _iso_epoch(text: str, what: str) -> datetime.datetime:
    """An ISO-8601 date (midnight UTC) or a datetime with a UTC offset or Z."""
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        pass
    else:
        return datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{what} must be Unix seconds or an ISO-8601 date or datetime "
            f"(2026-01-01, 2026-01-01T00:00:00Z), got {text!r}"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(
            f"{what} must name its time zone: {text!r} has none (add Z for UTC: {text}Z)"
        )
    return moment


def check_wall_epoch(value: object, what: str = "wall_epoch") -> datetime.datetime:
    """The date a run's wall clock starts at, as an aware UTC datetime:
    from Unix seconds (int or float), ISO-8601 text, a date (midnight UTC)
    or an aware datetime. From 1970-01-01 on, and early enough that the
    epoch plus all of virtual time fits int64 nanoseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, datetime.date)):
        raise TypeError(
            f"{what} must be Unix seconds, an ISO-8601 string or a timezone-aware "
            f"datetime, not {type(value).__name__} {value!r}"
        )
    if isinstance(value, (int, float)):
        seconds = _finite_seconds(value, what)
        if not 0 <= seconds <= WALL_EPOCH_MAX_NS / 1e9:
            raise ValueError(_epoch_range(what, value))
        epoch = UNIX_EPOCH + datetime.timedelta(seconds=value)
    elif isinstance(value, str):
        epoch = _iso_epoch(value.strip(), what)
    elif isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"{what} must be a timezone-aware datetime (tzinfo=datetime.UTC), "
                f"got the naive {value!r}"
            )
        epoch = value
    else:  # a date: its midnight, UTC
        epoch = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.UTC)
    try:
        epoch = epoch.astimezone(datetime.UTC)
    except OverflowError:  # an offset that takes it past year 1 or 9999
        raise ValueError(_epoch_range(what, value)) from None
    if not 0 <= epoch_ns(epoch) <= WALL_EPOCH_MAX_NS:
        raise ValueError(_epoch_range(what, value))
    return epoch


def epoch_ns(epoch: datetime.datetime) -> int:
    """An aware datetime as Unix nanoseconds, exactly."""
    return (epoch - UNIX_EPOCH) // datetime.timedelta(microseconds=1) * 1000


def _epoch_range(what: str, value: object) -> str:
    latest = UNIX_EPOCH + datetime.timedelta(microseconds=WALL_EPOCH_MAX_NS // 1000)
    return (
        f"{what} must be from 1970-01-01T00:00:00Z to {wall_epoch_text(latest)} (the epoch "
        f"plus 2**62 ns of virtual time must fit int64 nanoseconds), got {value!r}"
    )


def check_span(value: object, what: str) -> tuple[float, float]:
    """A (lo, hi) pair of seconds with 0 <= lo <= hi <= MAX_SPAN_S."""
    return check_range(value, what, MAX_SPAN_S, "seconds")


def span_ns(span: tuple[float, float]) -> tuple[int, int]:
    return round(span[0] * 1e9), round(span[1] * 1e9)


def check_range(value: object, what: str, limit: float, unit: str) -> tuple[float, float]:
    """A (lo, hi) pair with 0 <= lo <= hi <= limit."""
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)
    ):
        raise TypeError(f"{what} must be a pair (lo, hi) of {unit}, not {value!r}")
    lo, hi = (float(v) for v in value)
    if not (0.0 <= lo <= hi <= limit):  # also false for NaN
        raise ValueError(f"{what} must satisfy 0 <= lo <= hi <= {limit:g} {unit}, got {value!r}")
    return lo, hi


# What Swarm varies, in the order of its fields and of its draws: the
# knobs' units and limits (their ASKEW_SWARM spelling is the field name).
SWARM_KNOBS: dict[str, tuple[str, float]] = {
    "cpu": ("seconds", MAX_SPAN_S),
    "overshoot": ("seconds", MAX_SPAN_S),
    "latency": ("seconds", MAX_SPAN_S),
    "loss": ("probability", 1.0),
    "duplicate": ("probability", 1.0),
}


@dataclass(frozen=True)
class Swarm:
    """What swarm varies per seed (docs/exploration.md, "Swarm"): each knob
    given a (lo, hi) range is on in half the seeds, at a strength drawn from
    that range. The defaults vary only what leaves a test's promise intact:
    the upper bound of each callback's CPU cost (`cpu`) and of a timer's
    overshoot (`overshoot`); and every link's latency is reshaped inside the
    range the test gave it. `latency` (every link's range drawn inside
    this one, which may lie outside the test's), `loss` and `duplicate`
    change what a test on a lossless default link was promised: they are
    opt-in, by name. None switches a knob off."""

    cpu: tuple[float, float] | None = (100e-6, 10e-3)
    overshoot: tuple[float, float] | None = (1e-3, 100e-3)
    latency: tuple[float, float] | None = None
    loss: tuple[float, float] | None = None
    duplicate: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for name, (unit, limit) in SWARM_KNOBS.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_range(value, f"Swarm({name})", limit, unit))

    def text(self) -> str:
        """As ASKEW_SWARM and --askew-swarm spell it: 1 for the defaults,
        else each knob as name=lo..hi, a default one switched off as name=off."""
        default = Swarm()
        words = []
        for name in SWARM_KNOBS:
            value = getattr(self, name)
            if value != getattr(default, name):
                words.append(
                    f"{name}=off" if value is None else f"{name}={value[0]!r}..{value[1]!r}"
                )
        return ",".join(words) or "1"


def check_swarm(value: object) -> Swarm | None:
    """simulate(swarm=...): True (the default Swarm), False, or a Swarm."""
    if isinstance(value, Swarm):
        return value
    if isinstance(value, bool):
        return Swarm() if value else None
    raise TypeError(f"swarm must be a bool or an askew.Swarm, not {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class RunConfig:
    """How each run of a simulation is set up; validated on construction."""

    strategy: str = "faithful"
    cpu: tuple[float, float] = DEFAULT_CPU
    overshoot: tuple[float, float] = DEFAULT_OVERSHOOT
    max_steps: int = DEFAULT_MAX_STEPS
    max_time: float = DEFAULT_MAX_TIME
    executor: str = "refuse"
    pct_depth: int = DEFAULT_PCT_DEPTH
    pct_steps: int = DEFAULT_PCT_STEPS
    # True is Swarm(); kept as the Swarm, or False when off.
    swarm: bool | Swarm = False
    # Any form check_wall_epoch takes; kept as an aware UTC datetime.
    wall_epoch: WallEpoch = DEFAULT_WALL_EPOCH
    # Seconds of real time a step may run before the watchdog reports it; 0: off.
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    # Set by askew._explore.swarm on the config of one swarm run: its report line.
    swarm_note: str | None = None

    def __post_init__(self) -> None:
        check_strategy(self.strategy)
        # Normalised to float pairs, so a list or ints compare and print alike.
        object.__setattr__(self, "cpu", check_span(self.cpu, "cpu"))
        object.__setattr__(self, "overshoot", check_span(self.overshoot, "overshoot"))
        check_max_steps(self.max_steps)
        check_max_time(self.max_time)
        check_executor(self.executor)
        check_pct_depth(self.pct_depth)
        check_pct_steps(self.pct_steps)
        object.__setattr__(self, "swarm", check_swarm(self.swarm) or False)
        object.__setattr__(self, "wall_epoch", check_wall_epoch(self.wall_epoch))
        object.__setattr__(self, "step_timeout", check_step_timeout(self.step_timeout))

    @property
    def faithful(self) -> bool:
        """Whether every schedule of this strategy is one asyncio could produce."""
        return self.strategy in FAITHFUL_STRATEGIES

    @property
    def wall_epoch_utc(self) -> datetime.datetime:
        """What the run's wall clocks read at virtual time 0."""
        assert isinstance(self.wall_epoch, datetime.datetime)  # by __post_init__
        return self.wall_epoch

    @property
    def wall_epoch_ns(self) -> int:
        return epoch_ns(self.wall_epoch_utc)

    @property
    def max_time_ns(self) -> int:
        # >= 1 by check_max_time; a budget past the end of virtual time is that end.
        if self.max_time >= SECONDS_LIMIT:
            return 2**62
        return round(self.max_time * 1e9)
