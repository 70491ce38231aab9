# SPDX-License-Identifier: Apache-2.0
"""askew-exec: run a command with libaskew-preload.so and askew's settings.

Appends the packaged preload to LD_PRELOAD (after any existing entry, so a
sanitizer runtime stays first), fixes PYTHONHASHSEED unless the user set
it, checks its options with askew._loop.config's parsers and passes them on as
ASKEW_* variables (which the pytest plugin reads), and execs the command,
whose exit status becomes ours. It never runs a simulation itself and never
touches the user's other environment variables.
"""

from __future__ import annotations

import functools
import os
import sys

from .._loop.preload import PreloadPathError, ld_preload_with, library_path

TYPE_CHECKING = False  # not typing's: see askew/__init__.py
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# The launcher's start-up is every askew-exec's: it imports no asyncio, no
# extension, and neither askew._loop.config (dataclasses, inspect) nor
# subprocess and json unless an option or --check needs them.

USAGE = """\
usage: askew-exec [--seed S] [--iterations N] [--wrap [wrap options]] [--] command [arg ...]
       askew-exec --check

Run `command` with askew's LD_PRELOAD library, so C code inside a simulation
sees virtual time and seeded entropy and its threads, processes, sockets and
sleeps are refused.

options:
  --seed S           base seed for every simulation, 0 <= S < 2**64 (ASKEW_SEED)
  --iterations N     iterations per simulated test, N >= 1 (ASKEW_ITERATIONS); under
                     --wrap also the seeds per wrapped test, unless --seeds is given
  --wrap             run unmodified asyncio tests on simulated loops (ASKEW_WRAP=1)
  --check            report whether the preload is live in a child python; exit 0 or 1
  -h, --help         show this help

wrap options (each needs --wrap; pytest's --askew-NAME options are the same):
  --seeds N          run every wrapped test under N base seeds (ASKEW_SEEDS)
  --strategy S       faithful (default), fifo, interleave, shuffle, pct or pctcp (ASKEW_STRATEGY)
  --cpu LO,HI        virtual CPU seconds per callback, uniform in [LO, HI] (ASKEW_CPU)
  --overshoot LO,HI  seconds a timer fires late, uniform in [LO, HI] (ASKEW_OVERSHOOT)
  --max-steps N      callbacks per loop run before BudgetExceeded (ASKEW_MAX_STEPS)
  --max-time T       virtual seconds per loop run before BudgetExceeded (ASKEW_MAX_TIME)
  --executor E       threads (default), inline or refuse (ASKEW_EXECUTOR)
  --pct-depth D      PCT's bug depth, default 3 (ASKEW_PCT_DEPTH)
  --pct-steps K      PCT's estimate of a run's steps, default 1000 (ASKEW_PCT_STEPS)
  --swarm 0|1|K=LO..HI  per seed, CPU cost, overshoot and latency inside each link's
                     range; loss=, duplicate=, latency= by name (ASKEW_SWARM)
  --wall-epoch DATE  what the wall clock reads at t=0, default 2020-01-01; ISO-8601
                     or Unix seconds (ASKEW_WALL_EPOCH)
"""

# Run in the child by --check: whatever happens, print one JSON object.
_CHECK_CODE = """\
import json
try:
    from askew._loop.preload import preload_status
    status = preload_status()
except Exception as exc:
    status = {"found": False, "active": False, "path": None,
              "self_test": f"cannot import askew: {exc!r}"}
print(json.dumps(status))
"""


class UsageError(Exception):
    """A bad command line; the message names the bad value."""


def _parse_seed(text: str, what: str) -> int:
    from .._loop.settings import parse_seed  # the one seed parser: ASKEW_SEED, --askew-seed, --seed

    return parse_seed(text, what)


def _knob_text(value: object) -> str:
    from .._loop.settings import knob_text

    return knob_text(value)


@functools.lru_cache(maxsize=1)
def _options() -> tuple[
    dict[str, tuple[str, Callable[[str, str], object]]],
    dict[str, tuple[str, Callable[[str, str], object]]],
]:
    """(the wrap options, every option taking a value): each maps to its ASKEW_*
    variable and the parser that checks the value."""
    from .._loop.settings import KNOBS, parse_positive_int

    wrap: dict[str, tuple[str, Callable[[str, str], object]]] = {
        "--seeds": ("ASKEW_SEEDS", parse_positive_int),
        **{"--" + name.replace("_", "-"): knob for name, knob in KNOBS.items()},
    }
    value: dict[str, tuple[str, Callable[[str, str], object]]] = {
        "--seed": ("ASKEW_SEED", _parse_seed),
        "--iterations": ("ASKEW_ITERATIONS", parse_positive_int),
        **wrap,
    }
    return wrap, value


def parse_args(argv: Sequence[str]) -> tuple[dict[str, str], bool, list[str]]:
    """Return (the ASKEW_* settings, whether --check was given, the command)."""
    settings: dict[str, str] = {}
    wrap_options: list[str] = []
    check = False
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        if arg == "--wrap":
            settings["ASKEW_WRAP"] = "1"
        elif arg == "--check":
            check = True
        elif arg in ("-h", "--help"):
            raise SystemExit(_print_help())
        else:
            name, eq, inline = arg.partition("=")
            wrap_table, value_table = _options()
            if name not in value_table:
                raise UsageError(f"unknown option {arg!r}")
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise UsageError(f"{name} needs a value")
            variable, parse = value_table[name]
            try:
                settings[variable] = _knob_text(parse(value, name))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            if name in wrap_table:
                wrap_options.append(name)
        i += 1
    command = args[i:]
    if wrap_options and "ASKEW_WRAP" not in settings:
        # Only wrap mode reads them: without --wrap they would change nothing.
        raise UsageError(f"{wrap_options[0]} applies to wrapped tests: add --wrap")
    if check and command:
        raise UsageError(f"--check takes no command, got {command[0]!r}")
    if not check and not command:
        raise UsageError("no command given")
    return settings, check, command


def _print_help() -> int:
    sys.stdout.write(USAGE)
    return 0


def child_environ(settings: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the command runs with."""
    env = dict(os.environ if base is None else base)
    env["LD_PRELOAD"] = ld_preload_with(env.get("LD_PRELOAD"), library_path())
    # str and bytes hash order is fixed before main() runs: only here can it be pinned.
    env.setdefault("PYTHONHASHSEED", "0")
    env.update(settings)
    return env


def _check(env: dict[str, str]) -> int:
    import json
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", _CHECK_CODE],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        status = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        detail = (proc.stderr or proc.stdout).strip() or f"exit status {proc.returncode}"
        print(f"askew-exec: preload not live: the check child failed: {detail}")
        return 1
    if status.get("active"):
        print(f"askew-exec: preload live: {status.get('path')} ({status.get('self_test')})")
        return 0
    print(f"askew-exec: preload not live: {status.get('self_test')}")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings, check, command = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        sys.stderr.write(f"askew-exec: error: {exc}\n{USAGE.splitlines()[0]}\n")
        return 2
    try:
        env = child_environ(settings)
    except PreloadPathError as exc:
        sys.stderr.write(f"askew-exec: error: {exc}\n")
        return 2
    if check:
        return _check(env)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        sys.stderr.write(f"askew-exec: command not found: {command[0]!r}\n")
        return 127
    except OSError as exc:
        sys.stderr.write(f"askew-exec: cannot run {command[0]!r}: {exc.strerror}\n")
        return 126


if __name__ == "__main__":
    sys.exit(main())
