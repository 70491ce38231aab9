# SPDX-License-Identifier: Apache-2.0
"""Collection for askew's own suite.

tests/wrap_fixtures/ is a stand-alone user suite (its own pytest.ini) that
tests/run/test_wrap.py runs in subprocesses, stock and wrapped; it holds tests
that hang or fail on purpose, so the main run never collects it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import askew
from askew._loop.settings import _DEVELOPER_VARIABLES

collect_ignore = ["wrap_fixtures"]
# Under `make asan` the extension needs libasan first in LD_PRELOAD; these
# suites run children with an LD_PRELOAD of their own, which cannot load it.
# The preload's own Check suite still runs there, under UBSan.
if os.environ.get("ASKEW_ASAN"):
    collect_ignore += ["run/test_exec.py", "loop/test_preload.py"]
    collect_ignore += [f"loop/test_preload_{area}.py" for area in ("clocks", "entropy")]
    collect_ignore += [f"loop/test_preload_{area}.py" for area in ("identity", "network")]
    collect_ignore += ["loop/test_preload_refusals.py", "loop/test_preload_threads.py"]

# ---- hang guards ------------------------------------------------------------------

# Every wall-clock limit the suite sets (a child process, a Check test) is a
# guard against a hang, never a check of speed: generous, and multiplied by
# HANG_GUARD_SCALE (default 1; e.g. HANG_GUARD_SCALE=5 on a machine that other
# work keeps busy). CONTRIBUTING.md documents it.
HANG_GUARD_SCALE = float(os.environ.get("HANG_GUARD_SCALE", "") or 1)
# Children started together run at most this many at a time, so that a
# module of subprocess tests does not bury a two-core machine under twenty.
CHILDREN_AT_ONCE = max(1, os.cpu_count() or 1)


def hang_guard(seconds: float) -> float:
    """A wall-clock limit of `seconds` on a quiet machine, as scaled here."""
    return seconds * HANG_GUARD_SCALE


def replay_comparable(report: str) -> str:
    """A sweep's failure report as a replay of its seed prints it: its
    iteration aside (0 on replay), and without the sweep's nearest passing
    seed (a replay has no sweep to take one from)."""
    report = re.sub(r"\n\n  nearest passing seed \(.*?(?=\n\n|$)", "", report, flags=re.S)
    return re.sub(r"\biteration=\d+", "iteration=_", report)


def run_all(
    commands: dict[str, tuple[list[str], dict[str, str]]], *, cwd: Path, seconds: float
) -> dict[str, tuple[int, str]]:
    """Run each command (argv, environment), at most CHILDREN_AT_ONCE at a
    time, each under the hang guard of `seconds`; name -> (exit status,
    stdout and stderr together)."""

    def run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=hang_guard(seconds),
            check=False,
        )
        return proc.returncode, proc.stdout

    with concurrent.futures.ThreadPoolExecutor(CHILDREN_AT_ONCE) as pool:
        futures = {name: pool.submit(run, *command) for name, command in commands.items()}
        return {name: future.result() for name, future in futures.items()}


# ---- helpers for the runner, world and determinism suites ----------------------


def _askew_env() -> list[str]:
    """The ASKEW_* variables set in this process that change a run: every
    one but the developer's build and test switches (ASKEW_ASAN, ...), which
    the suite itself reads. A shell's ASKEW_SUPPRESS or ASKEW_SHRINK_SECONDS,
    or one that a plugin option of this session set, would otherwise reach
    the runs of tests that set none (a suppressed run is not shrunk)."""
    return [k for k in os.environ if k.startswith("ASKEW_") and k not in _DEVELOPER_VARIABLES]


REPO = Path(__file__).resolve().parents[1]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child askew runs in: no ASKEW_* variable or
    LD_PRELOAD of this session's (but libasan under `make asan`), the
    checkout on PYTHONPATH, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKEW_")}
    if not os.environ.get("ASKEW_ASAN"):  # under `make asan`, libasan stays first
        env.pop("LD_PRELOAD", None)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def run_exec(
    args: list[str], *, preload: bool = True, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`args` in a child, under askew-exec unless `preload` is false."""
    cmd = [sys.executable, "-m", "askew._run.exec", *args] if preload else args
    return subprocess.run(
        cmd,
        env=child_env(**env),
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
        check=False,
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ASKEW_* settings from the shell that runs the suite."""
    for name in _askew_env():
        monkeypatch.delenv(name)


def run_sim(body: Callable[..., Any], seed: int = 0, **config: Any) -> None:
    """Run `async def body(world)` once, as seed `seed`."""
    askew.simulate(seed=seed, iterations=1, **config)(body)()


def run_pytest(
    tmp_path: Path, source: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Write `source` as tmp_path/test_mod.py and run pytest on it in a child."""
    (tmp_path / "test_mod.py").write_text(textwrap.dedent(source))
    dropped = {*_askew_env(), "PYTEST_CURRENT_TEST"}
    child_env = {k: v for k, v in os.environ.items() if k not in dropped}
    child_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mod.py", *args],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )


def json_in_hash_seeds(code: str, *args: str, hash_seeds: tuple[str, ...]) -> list[Any]:
    """Run `python -c code DIR *args` once per PYTHONHASHSEED value and
    return what each printed, parsed as JSON: for determinism across
    processes. DIR is the calling test module's folder (the code puts it on
    sys.path to import its helpers); tests/ is on PYTHONPATH for conftest
    and the suite's top-level modules."""
    here = str(Path(sys._getframe(1).f_globals["__file__"]).resolve().parent)
    tests = str(Path(__file__).resolve().parent)
    results = []
    for hash_seed in hash_seeds:
        path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": path}
        env.pop("PYTEST_CURRENT_TEST", None)
        proc = subprocess.run(
            [sys.executable, "-c", code, here, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=hang_guard(300),
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout))
    return results


# ---- a node's servers that tests in several layers share ---------------------


async def echo_server(node: Any, port: int = 7) -> None:
    """Echo every byte back until EOF, then close."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    node.server = await asyncio.start_server(handle, None, port)
    await asyncio.sleep(1e9)
