# SPDX-License-Identifier: Apache-2.0
"""Running a script under askew-exec in a child process, for the suites of
what C code and Python see inside a run (tests/loop/test_preload_*.py).

Each script prints one JSON value on its last line; `run_exec` hands back
the process and `result` that value. This pytest process may not carry the
preload, and a test that enters a run must not leave anything behind, so
every run happens in a child; the timeout is a hang guard only.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard

import askew

LIB = Path(askew.__file__).resolve().parent / "libaskew-preload.so"
TIMEOUT = hang_guard(120)
# What the child must not inherit from the shell that runs the suite.
_DROP = ("LD_PRELOAD", "PYTEST_CURRENT_TEST", "PYTHONHASHSEED")

needs_preload = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not LIB.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKEW_") and k not in _DROP}
    env.update(extra)
    return env


# Prepended to every script: `run_once(body)` runs `body(world)` (a function
# or an async one) in one simulated run and returns {"value": what it
# returned} or {"refused": the first line of the refusal that failed it}.
PREAMBLE = """\
import inspect as _inspect
import askew as _askew

def run_once(body, seed=1):
    out = {}
    @_askew.simulate(seed=seed, iterations=1)
    async def test(world):
        value = body(world)
        out["value"] = await value if _inspect.isawaitable(value) else value
    try:
        test()
    except _askew.NondeterminismError as exc:
        return {"refused": str(exc).splitlines()[0]}
    return out
"""


def run_argv(
    argv: list[str], *, cwd: Path | None = None, preload: bool = True, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`argv` (a python command line) under askew-exec, or without it."""
    if preload:
        argv = [sys.executable, "-m", "askew._run.exec", "--", *argv]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=child_env(**extra),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def run_exec(
    code: str, *args: str, cwd: Path | None = None, preload: bool = True, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -c code *args`, after PREAMBLE, under askew-exec (or without it)."""
    script = PREAMBLE + textwrap.dedent(code)
    return run_argv([sys.executable, "-c", script, *args], cwd=cwd, preload=preload, **extra)


def result(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON value the child printed last; the child must have exited 0."""
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_json(code: str, *args: str, **kwargs: Any) -> Any:
    return result(run_exec(code, *args, **kwargs))


@functools.cache
def _built_cxx_probe() -> Path | None:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        return None
    out = Path(tempfile.mkdtemp(prefix="askew-cxx-")) / "libprobe_cxx.so"
    source = Path(__file__).resolve().parents[1] / "c" / "probe_cxx.cc"
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(out), str(source)], check=True)
    return out


def cxx_probe() -> Path:
    """tests/c/probe_cxx.cc built into a library for ctypes, once per session."""
    built = _built_cxx_probe()
    if built is None:
        pytest.skip("needs a C++ compiler")
    return built
