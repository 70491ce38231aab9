# SPDX-License-Identifier: Apache-2.0
"""The ASKEW_* environment and the knobs as text: every setting a user
writes (ASKEW_SEED, --askew-seed, askew-exec --seed, ASKEW_STRATEGY...)
parsed in one place, into the checks of askew/_loop/config.py, so that one
spelling means one thing everywhere. Bad text is a ValueError naming the
variable or option and what would be right.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import math
import os
from collections.abc import Callable

from .config import (
    EXECUTORS,
    MAX_SPAN_S,
    SEED_LIMIT,
    STRATEGIES,
    SWARM_KNOBS,
    RunConfig,
    Swarm,
    check_max_steps,
    check_max_time,
    check_pct_depth,
    check_pct_steps,
    check_step_timeout,
    check_wall_epoch,
    wall_epoch_text,
)


def _int_text(text: str) -> int | None:
    """An integer as a user writes one: decimal (leading zeros too), or
    0x/0o/0b with a prefix, underscores allowed; None if it is not one."""
    for base in (10, 0):
        try:
            return int(text.strip(), base)
        except ValueError:
            pass
    return None


def parse_seed(text: str, what: str) -> int:
    """A seed written as text: ASKEW_SEED, --askew-seed and askew-exec --seed
    all come here, so 0x10 means 16 in each and -1 is refused by each."""
    value = _int_text(text)
    if value is None:
        raise ValueError(
            f"{what} must be an integer in [0, 2**64) (decimal or 0x...), got {text!r}"
        )
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"{what} must be in [0, 2**64), got {text.strip()!r}")
    return value


def env_seed() -> int | None:
    """ASKEW_SEED, validated, or None."""
    raw = os.environ.get("ASKEW_SEED", "")
    return parse_seed(raw, "ASKEW_SEED") if raw.strip() else None


def env_iterations() -> int | None:
    """ASKEW_ITERATIONS, validated, or None."""
    raw = os.environ.get("ASKEW_ITERATIONS", "")
    return parse_positive_int(raw, "ASKEW_ITERATIONS") if raw.strip() else None


TRACE_DEFAULT = 12  # recent events a failure report shows


def parse_trace(text: str, what: str) -> int | None:
    """How much of the trace a failure report shows: N events, or "all"
    (None: every event the log keeps)."""
    if text.strip().lower() == "all":
        return None
    value = _int_text(text)
    if value is None or value < 0:
        raise ValueError(f"{what} must be 'all' or a number of events >= 0, got {text!r}")
    return value


def env_trace() -> int | None:
    """ASKEW_TRACE: the recent events a report shows (None: all of them)."""
    raw = os.environ.get("ASKEW_TRACE", "")
    return parse_trace(raw, "ASKEW_TRACE") if raw.strip() else TRACE_DEFAULT


def env_views(test: str, seed: int) -> tuple[str | None, str | None]:
    """Where a failing run's views go: its HTML timeline in the folder
    ASKEW_TIMELINE names (a file per test and seed: see view_name), its
    Chrome trace JSON to the file ASKEW_TRACE_JSON names; None for one not
    asked for. `test` is the test function's qualified name."""
    folder = os.environ.get("ASKEW_TIMELINE", "").strip()
    trace_json = os.environ.get("ASKEW_TRACE_JSON", "").strip() or None
    timeline = None
    if folder:
        timeline = os.path.join(folder, f"{view_name(test)}-{seed}.html")
    return timeline, trace_json


def env_check_replay(default: bool) -> bool:
    """ASKEW_CHECK_REPLAY: whether a failing seed is re-run alone in a fresh
    world before its report (--askew-check-replay); `default` when unset (on
    under pytest and in `askew sweep`)."""
    raw = os.environ.get("ASKEW_CHECK_REPLAY", "")
    return parse_flag(raw, "ASKEW_CHECK_REPLAY") if raw.strip() else default


_VIEW_NAME_MAX = 120  # characters of a test's name kept in its file's name


def view_name(test: str) -> str:
    """A test's name as its timeline's file name. Under pytest, when the
    test running (PYTEST_CURRENT_TEST) is this function, its node id, so
    that each parametrization and each file's test of one name gets its own
    file: `tests/x.py::TestA::test_y[2-b]` is `tests.x.py.TestA.test_y[2-b]`.
    Any other character a file name should not hold becomes "_", and then
    a digest of the whole name follows, so two names never share a file."""
    node = os.environ.get("PYTEST_CURRENT_TEST", "").rpartition(" (")[0]  # "id (call)"
    path, _sep, name = node.partition("::")
    name = name.replace("::", ".")
    if name == test or name.startswith(test + "["):
        test = f"{path.replace('/', '.')}.{name}"
    shown = "".join(c if c.isalnum() or c in "._-[]" else "_" for c in test)
    if shown != test or len(shown) > _VIEW_NAME_MAX:
        digest = hashlib.sha256(test.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        shown = f"{shown[:_VIEW_NAME_MAX]}-{digest}"
    return shown


def env_flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 0 or 1, got {os.environ[name]!r}")


# ---- wrap mode's knobs as text ------------------------------------------------------
#
# askew-exec's flags (--strategy ...), the plugin's options (--askew-strategy ...)
# and the ASKEW_* variables that carry them to a child all go through the
# parsers below, so one value means the same thing, and is refused with the
# same words, wherever it is written. `what` names where the text came from.


def parse_positive_int(text: str, what: str) -> int:
    value = _int_text(text)
    if value is None:
        raise ValueError(f"{what} must be a positive integer, got {text!r}")
    if value < 1:
        raise ValueError(f"{what} must be >= 1, got {text!r}")
    return value


def parse_max_steps(text: str, what: str) -> int:
    return check_max_steps(parse_positive_int(text, what), what)


def parse_seconds(text: str, what: str) -> float:
    try:
        seconds = float(text.strip())
    except ValueError:
        seconds = math.nan
    if not (0.0 < seconds < math.inf):  # also false for NaN
        raise ValueError(f"{what} must be a number of seconds > 0, got {text!r}")
    return check_max_time(seconds, what)


def parse_span(text: str, what: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(p.strip()) for p in parts)
    except ValueError:  # not two numbers
        lo = hi = math.nan
    if not (0.0 <= lo <= hi <= MAX_SPAN_S):  # also false for NaN
        raise ValueError(
            f"{what} must be LO,HI in seconds with 0 <= LO <= HI <= {MAX_SPAN_S:g} "
            f"(say 0,20e-6), got {text!r}"
        )
    return lo, hi


def parse_strategy(text: str, what: str) -> str:
    if text.strip() not in STRATEGIES:
        raise ValueError(f"{what} must be one of {', '.join(STRATEGIES)}, got {text!r}")
    return text.strip()


def parse_pct_depth(text: str, what: str) -> int:
    return check_pct_depth(parse_positive_int(text, what), what)


def parse_pct_steps(text: str, what: str) -> int:
    return check_pct_steps(parse_positive_int(text, what), what)


def parse_flag(text: str, what: str) -> bool:
    word = text.strip().lower()
    if word in ("0", "false", "no", "off"):
        return False
    if word in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{what} must be 0 or 1, got {text!r}")


def parse_swarm(text: str, what: str) -> Swarm | bool:
    """Swarm written as text: 0/1 (off, the default Swarm), or knobs as
    name=lo..hi (name=off for a default one), comma separated, each over
    the defaults: "loss=0..0.2,duplicate=0..0.05"."""
    word = text.strip().lower()
    if word in ("0", "1", "false", "true", "no", "yes", "off", "on"):
        return parse_flag(word, what)
    changes: dict[str, tuple[float, float] | None] = {}
    for item in word.replace(" ", "").split(","):
        name, eq, value = item.partition("=")
        lo, dots, hi = value.partition("..")
        try:
            pair = None if value == "off" else (float(lo), float(hi))
        except ValueError:
            pair, dots = None, ""
        if name not in SWARM_KNOBS or not eq or (value != "off" and not dots):
            raise ValueError(
                f"{what} must be 0, 1, or knobs as name=lo..hi or name=off separated by "
                f"commas, the names {', '.join(SWARM_KNOBS)} (say loss=0..0.2), got {text!r}"
            )
        changes[name] = pair
    try:
        return Swarm(**changes)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: {exc}") from None


def parse_executor(text: str, what: str) -> str:
    if text.strip() not in EXECUTORS:
        raise ValueError(f"{what} must be one of {', '.join(EXECUTORS)}, got {text!r}")
    return text.strip()


def parse_wall_epoch(text: str, what: str) -> datetime.datetime:
    """An epoch written as text: Unix seconds or ISO-8601."""
    word = text.strip()
    number: float | None = _int_text(word)
    if number is None:
        try:
            number = float(word)
        except ValueError:
            number = None
    return check_wall_epoch(word if number is None else number, what)


def parse_step_timeout(text: str, what: str) -> float:
    """Seconds of real time, or 0 to switch the watchdog off."""
    try:
        seconds = float(text.strip())
    except ValueError:
        raise ValueError(
            f"{what} must be a number of seconds (0 turns the step watchdog off), got {text!r}"
        ) from None
    return check_step_timeout(seconds, what)


# RunConfig's field -> the ASKEW_* variable that carries it and its parser.
KNOBS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "strategy": ("ASKEW_STRATEGY", parse_strategy),
    "cpu": ("ASKEW_CPU", parse_span),
    "overshoot": ("ASKEW_OVERSHOOT", parse_span),
    "max_steps": ("ASKEW_MAX_STEPS", parse_max_steps),
    "max_time": ("ASKEW_MAX_TIME", parse_seconds),
    "executor": ("ASKEW_EXECUTOR", parse_executor),
    "pct_depth": ("ASKEW_PCT_DEPTH", parse_pct_depth),
    "pct_steps": ("ASKEW_PCT_STEPS", parse_pct_steps),
    "swarm": ("ASKEW_SWARM", parse_swarm),
    "wall_epoch": ("ASKEW_WALL_EPOCH", parse_wall_epoch),
    "step_timeout": ("ASKEW_STEP_TIMEOUT", parse_step_timeout),
}
# Wrap mode, as @askew.simulate, runs executor work on the run's deterministic
# threads unless told otherwise; new_event_loop keeps RunConfig's "refuse".
WRAP_EXECUTOR = "threads"


def env_seeds() -> int | None:
    """ASKEW_SEEDS (base seeds per wrapped test), validated, or None."""
    raw = os.environ.get("ASKEW_SEEDS", "")
    return parse_positive_int(raw, "ASKEW_SEEDS") if raw.strip() else None


def env_knobs() -> dict[str, object]:
    """The RunConfig fields set by ASKEW_* variables, parsed; unset ones are absent."""
    values: dict[str, object] = {}
    for field_name, (variable, parse) in KNOBS.items():
        raw = os.environ.get(variable, "")
        if raw.strip():
            values[field_name] = parse(raw, variable)
    return values


def wrap_config(options: dict[str, object]) -> RunConfig:
    """A wrapped test's RunConfig: `options` (already parsed) over the ASKEW_*
    variables over wrap mode's defaults."""
    values = {"executor": WRAP_EXECUTOR, **env_knobs(), **options}
    if values.get("swarm"):
        # Swarm sets the world's network per seed; a wrapped test has no world.
        raise ValueError(
            "swarm applies to @askew.simulate tests, not to wrapped ones (they have no "
            "world whose network it could configure): drop --askew-swarm / ASKEW_SWARM"
        )
    return RunConfig(**values)  # type: ignore[arg-type]


def strategy_note(config: RunConfig) -> str | None:
    """What a failure report says of a strategy that can leave asyncio's orders."""
    if config.faithful:
        return None
    return (
        f"strategy {config.strategy!r} can run callbacks in an order asyncio cannot "
        "produce; if this fails only under it, the order may be impossible, not a bug "
        "(sweep the test under the faithful strategy to tell)"
    )


def swarm_note(config: RunConfig) -> str | None:
    """What a failure report says of the swarm configuration it ran under."""
    if config.swarm_note is None or not isinstance(config.swarm, Swarm):
        return None
    return (
        f"{config.swarm_note}; the seed decides it: replay with the same swarm "
        f"(ASKEW_SWARM={config.swarm.text()})"
    )


def env_knob_assignments() -> list[str]:
    """The ASKEW_* knob variables set in this environment, as VAR=value words
    for a replay command (they override the decorator, so replay needs them)."""
    return [f"{KNOBS[name][0]}={knob_text(value)}" for name, value in env_knobs().items()]


def knob_text(value: object) -> str:
    """A parsed knob as its ASKEW_* variable or option spells it (a span as LO,HI)."""
    if isinstance(value, tuple):
        return ",".join(map(repr, value))
    if isinstance(value, Swarm):
        return value.text()
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return wall_epoch_text(value)
    return str(value)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One ASKEW_* variable a user sets: the pytest plugin's option that
    sets it too (None: none), that option's metavar (None: a flag), the
    keyword of simulate() or Replay.run that says the same in code, and
    what it does. SETTINGS is the one table: the plugin makes its options
    from it and the documentation's table of settings is generated from it."""

    variable: str
    option: str | None
    metavar: str | None
    keyword: str | None
    help: str


# The knobs' meanings: the plugin's --askew-<knob> options (wrap mode) and
# the documentation read them; a knob's keyword is its RunConfig field.
_KNOB_HELP = {
    "strategy": ("S", "faithful (default), fifo, interleave, shuffle, pct or pctcp"),
    "cpu": ("LO,HI", "virtual CPU seconds each callback costs, uniform in [LO, HI]"),
    "overshoot": ("LO,HI", "seconds a timer fires after its deadline, uniform in [LO, HI]"),
    "max_steps": ("N", "callbacks per loop run before BudgetExceeded"),
    "max_time": ("SECONDS", "virtual seconds per loop run before BudgetExceeded"),
    "executor": (
        "E",
        "threads (the default: deterministic threads), inline (executor work runs at a "
        "loop step) or refuse",
    ),
    "pct_depth": ("D", "the bug depth PCT aims at (default 3)"),
    "pct_steps": ("K", "PCT's estimate of a run's steps (default 1000)"),
    "swarm": (
        "0|1|KNOB=LO..HI,...",
        "per seed, a seeded subset of CPU cost, overshoot and latency inside each link's "
        "range; loss, duplicate, latency beyond it by name (loss=0..0.2)",
    ),
    "wall_epoch": ("DATE", "what the wall clock reads at t=0: 2026-01-01 or Unix seconds"),
    "step_timeout": ("SECONDS", "real seconds one step may run before it is reported; 0: off"),
}

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "ASKEW_SEED",
        "--askew-seed",
        "SEED",
        "seed",
        "base seed for @askew.simulate tests and for --askew-wrap, 0 <= SEED < 2**64, "
        "decimal or 0x...",
    ),
    Setting(
        "ASKEW_ITERATIONS",
        "--askew-iterations",
        "N",
        "iterations",
        "iterations per @askew.simulate test; with --askew-wrap also the seeds per wrapped "
        "test unless --askew-seeds is given",
    ),
    Setting(
        "ASKEW_TRACE",
        "--askew-trace",
        "N|all",
        None,
        "recent events a failure report shows: N (default 12) or all the log keeps",
    ),
    Setting(
        "ASKEW_TIMELINE",
        "--askew-timeline",
        "DIR",
        "timeline",
        "write a failing run's HTML timeline into DIR",
    ),
    Setting(
        "ASKEW_TRACE_JSON",
        "--askew-trace-json",
        "FILE",
        "trace_json",
        "write a failing run's Chrome trace-event JSON to FILE",
    ),
    Setting(
        "ASKEW_WRAP",
        "--askew-wrap",
        None,
        None,
        "run every asyncio event loop a test creates on a seeded askew SimLoop (1 to turn on)",
    ),
    Setting(
        "ASKEW_SEEDS",
        "--askew-seeds",
        "N",
        None,
        "with --askew-wrap: run every test that makes a SimLoop under N base seeds and report "
        "each failing seed with its replay command",
    ),
    Setting(
        "ASKEW_SHRINK",
        "--askew-shrink",
        "0|1",
        None,
        "after a failure, re-run its seed without each fault and shrink its fault set "
        "(default 1 under pytest)",
    ),
    Setting(
        "ASKEW_SHRINK_SECONDS",
        "--askew-shrink-seconds",
        "SECONDS",
        None,
        "wall-time budget of that analysis per failure (default 10)",
    ),
    Setting(
        "ASKEW_CHECK_REPLAY",
        "--askew-check-replay",
        "0|1",
        None,
        "after a failure, re-run its seed alone in a fresh world and say whether it replays "
        "alone (default 1 under pytest)",
    ),
    Setting(
        "ASKEW_DB",
        "--askew-db",
        "PATH|off",
        None,
        "where failing seeds are remembered and tried first next time (default .askew/ in "
        "the rootdir)",
    ),
    *(
        Setting(
            variable,
            "--askew-" + field.replace("_", "-"),
            _KNOB_HELP[field][0],
            field,
            "with --askew-wrap: " + _KNOB_HELP[field][1],
        )
        for field, (variable, _parse) in KNOBS.items()
    ),
    Setting(
        "ASKEW_CHECK_DETERMINISM",
        None,
        None,
        "check_determinism",
        "run every seed twice and fail naming the first event where the two runs differ "
        "(1 to turn on)",
    ),
    Setting(
        "ASKEW_SUPPRESS",
        None,
        None,
        "suppress",
        "skip these fault calls of the run (indices, drop:N, dup:N, nodes:N): the replay "
        "line of a shrunk failure sets it",
    ),
    Setting(
        "ASKEW_COVERAGE",
        None,
        None,
        None,
        "coverage feedback: each run's fingerprint steers the sweep's swarm draws "
        "(1 to turn on; docs/exploration.md)",
    ),
    Setting(
        "ASKEW_DEBUG",
        None,
        None,
        None,
        "the preload prints what it does to stderr, on lines that start askew-preload:",
    ),
    Setting(
        "ASKEW_PRELOAD_UNRESOLVED",
        None,
        None,
        None,
        "the preload's self-test switch: the named interposers (poll,select,...) act as if "
        "libc had no such function",
    ),
)


def settings_table() -> str:
    """SETTINGS as a Markdown table, for the documentation site."""
    rows = [
        "| variable | pytest option | keyword | what it does |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS:
        option = (
            "" if s.option is None else f"`{s.option}" + (f" {s.metavar}`" if s.metavar else "`")
        )
        keyword = "" if s.keyword is None else f"`{s.keyword}=`"
        rows.append(f"| `{s.variable}` | {option} | {keyword} | {s.help.replace('|', '&#124;')} |")
    return "\n".join(rows) + "\n"


# The Makefile's and the test suite's own switches.
_DEVELOPER_VARIABLES = frozenset(
    {
        "ASKEW_ASAN",
        "ASKEW_SANITIZE",
        "ASKEW_DEBUG_BUILD",
        "ASKEW_FUZZ_PROGRAMS",
        "ASKEW_RECORD_PINS",
        "ASKEW_TEST_INSTALLED",
    }
)

# Every ASKEW_* variable askew reads (the package, the preload, askew-exec)
# and the developer's build and test switches: any other ASKEW_* name in the
# environment is likely a typo, and the plugin warns naming the closest.
ENV_VARIABLES = frozenset({*(s.variable for s in SETTINGS), *_DEVELOPER_VARIABLES})


def unknown_env_variables() -> list[str]:
    """One warning per ASKEW_* variable in the environment that askew does
    not read, naming the closest one it does."""
    import difflib  # only when a variable is unknown: not on every session's start

    warnings = []
    for name in sorted(os.environ):
        if not name.startswith("ASKEW_") or name in ENV_VARIABLES:
            continue
        # Compared without the common prefix, which would make any two close.
        names = {known[6:]: known for known in ENV_VARIABLES}
        close = difflib.get_close_matches(name[6:], sorted(names), n=1, cutoff=0.6)
        hint = f"did you mean {names[close[0]]}?" if close else "askew ignores it"
        warnings.append(f"askew does not read the environment variable {name}: {hint}")
    return warnings


# The ASKEW_* variables whose value is free text (a path, the preload's and
# the developer's switches): every other one askew reads, check_env parses.
FREE_TEXT_VARIABLES = frozenset(
    {
        "ASKEW_TIMELINE",
        "ASKEW_TRACE_JSON",
        "ASKEW_DB",
        "ASKEW_DEBUG",
        "ASKEW_PRELOAD_UNRESOLVED",
        *_DEVELOPER_VARIABLES,
    }
)


def check_env() -> None:
    """Parse every ASKEW_* value a run reads, so that a bad one is one
    ValueError naming it when a session or a sweep starts (the plugin and
    `askew sweep` call this), never a failure of each test that reads it."""
    env_seed()
    env_iterations()
    env_seeds()
    env_trace()
    env_knobs()
    env_shrink()
    env_suppress()
    env_check_replay(True)
    for name in ("ASKEW_WRAP", "ASKEW_CHECK_DETERMINISM", "ASKEW_COVERAGE"):
        env_flag(name)


# ---- shrinking and fault analysis (askew/_explore/shrink.py) ----

SHRINK_SECONDS_DEFAULT = 10.0  # the wall-time budget of one failure's analysis


# The network's own faults a suppression can name, by the send's id:
# "drop:17" (the loss draw dropped message 17), "dup:17" (it was duplicated).
MESSAGE_FAULTS = ("drop", "dup")  # index = the engine's ASKEW_NET_FAULT_* kind
# And "nodes:3": World.node_count gives at most 3 (the shrinker's fewer nodes).
NODES_KEY = "nodes"
# The draws a shrunk run simplifies (askew/_explore/shrink.py), as its
# suppress list names them, in the order they are tried: every latency at
# its link's minimum; no CPU time or timer overshoot; world.random drawing
# zeros; asyncio's FIFO order across nodes.
LATENCY_MIN, TIMING_ZERO, RANDOM_ZERO, SCHEDULE_FIFO = (
    "latency:min",
    "timing:zero",
    "random:zero",
    "schedule:fifo",
)
DRAW_SHRINKS = (LATENCY_MIN, TIMING_ZERO, RANDOM_ZERO, SCHEDULE_FIFO)


def parse_suppress(text: str, what: str) -> frozenset[int | str]:
    """The faults a run skips, written as text: fault-call indices and
    message faults, "3,7,drop:17,dup:20" (empty: none)."""
    out: set[int | str] = set()
    for word in text.replace(" ", "").split(","):
        if not word:
            continue
        if word in DRAW_SHRINKS:
            out.add(word)
            continue
        kind, colon, rest = word.partition(":")
        index = _int_text(rest if colon else word)
        known = (*MESSAGE_FAULTS, NODES_KEY)
        if index is None or index < 0 or (colon and (kind not in known or index < 1)):
            raise ValueError(
                f"{what} must be fault indices, message faults (drop:N, dup:N), a "
                f"node count (nodes:N) and simplified draws ({', '.join(DRAW_SHRINKS)}) "
                f"separated by commas, got {text!r}"
            )
        out.add(f"{kind}:{index}" if colon else index)
    return frozenset(out)


def env_suppress() -> frozenset[int | str]:
    """ASKEW_SUPPRESS: the fault calls a replayed run skips (askew/_explore/shrink.py)."""
    return parse_suppress(os.environ.get("ASKEW_SUPPRESS", ""), "ASKEW_SUPPRESS")


def env_shrink() -> float:
    """The wall-time budget in seconds for analysing a failure (0: none).

    On by default under pytest only (PYTEST_CURRENT_TEST set); ASKEW_SHRINK=0
    turns it off, ASKEW_SHRINK=1 on anywhere; ASKEW_SHRINK_SECONDS sets the
    budget."""
    raw = os.environ.get("ASKEW_SHRINK", "").strip()
    on = parse_flag(raw, "ASKEW_SHRINK") if raw else "PYTEST_CURRENT_TEST" in os.environ
    seconds = os.environ.get("ASKEW_SHRINK_SECONDS", "").strip()
    budget = parse_seconds(seconds, "ASKEW_SHRINK_SECONDS") if seconds else SHRINK_SECONDS_DEFAULT
    return budget if on else 0.0
