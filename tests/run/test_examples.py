# SPDX-License-Identifier: Apache-2.0
"""The examples, run exactly as they are on disk, the way a user runs them.

Every examples/NAME.py is run in a child `python -m pytest`. An example whose
name ends in `_fixed` must pass; any other example has a bug that its test
must find: it fails with a SimulationFailure report that names a seed and
says how to replay it, and running that replay line reproduces the same
report (all but the `iteration=` field, which is 0 on replay). The README's
example blocks must be these files, character for character.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import replay_comparable, run_all

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
# An example named after an optional library (aiohttp_*.py, the sockets extra)
# runs only where that library is installed.
OPTIONAL = ("aiohttp",)
_LIBRARY = {p: p.stem.split("_")[0] for p in EXAMPLES}
MISSING = {
    p for p, lib in _LIBRARY.items() if lib in OPTIONAL and not importlib.util.find_spec(lib)
}
BUGGY = [p for p in EXAMPLES if not p.stem.endswith("_fixed")]
FIXED = [p for p in EXAMPLES if p.stem.endswith("_fixed")]
TIMEOUT = 120
# Examples whose C code must be seen by the preload run under askew-exec: C
# code on a simulated disk (the sqlite examples), C threads (cthreads_*).
UNDER_EXEC = ("sqlite_", "cthreads_")
_HEAD = "askew.errors.SimulationFailure: "
# A run under askew-exec (UNDER_EXEC) is replayed under it.
_REPLAY = re.compile(
    r"^  replay: ASKEW_SEED=(\d+) ASKEW_ITERATIONS=1 (askew-exec )?pytest (.+)$", re.M
)
_MARKED_BLOCK = re.compile(
    r"<!--\s*example:\s*(examples/[\w.-]+\.py)\s*-->\s*\n```python\n(.*?)^```", re.S | re.M
)


def _cases(paths: list[Path]) -> list[Any]:
    skip = pytest.mark.skip(reason="needs an optional library (pip install askew-dst[sockets])")
    return [pytest.param(p, id=p.name, marks=[skip] if p in MISSING else []) for p in paths]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKEW_")}
    env.pop("PYTEST_ADDOPTS", None)
    env.update(extra)
    return env


def _command(target: str, **env: str) -> tuple[list[str], dict[str, str]]:
    under = any(f"/{prefix}" in target for prefix in UNDER_EXEC)
    exec_ = [sys.executable, "-m", "askew._run.exec"] if under else []
    argv = [*exec_, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target]
    return argv, _env(**env)


def _report(out: str) -> str:
    """The SimulationFailure report, as pytest printed it on its `E` lines."""
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("E") and _HEAD in line]
    start = heads[-1] if heads else None
    assert start is not None, f"no SimulationFailure in the output:\n{out}"
    col = lines[start].index(_HEAD)
    report = [lines[start][col:]]
    # pytest prefixes the report's lines with "E" or, when askew's frames are
    # hidden, with spaces; either way the report ends where pytest's own
    # trailer begins.
    for line in lines[start + 1 :]:
        if line.startswith(("All traceback", "===", "___")) or line[:col].strip() not in ("", "E"):
            break
        report.append(line[col:])
    return "\n".join(report).rstrip()


Runs = dict[str, tuple[int, str]]


@pytest.fixture(scope="module")
def runs() -> Runs:
    """Each example run once (each is a second or two), a few at a time."""
    commands = {p.name: _command(f"examples/{p.name}") for p in EXAMPLES if p not in MISSING}
    return run_all(commands, cwd=REPO, seconds=TIMEOUT)


@pytest.fixture(scope="module")
def replays(runs: Runs) -> Runs:
    """The replay line of each failing example's report, run as printed."""
    commands = {}
    for name, (_rc, out) in runs.items():
        replay = _REPLAY.search(_report(out)) if _HEAD in out else None
        if replay is not None:
            (target,) = shlex.split(replay[3])
            commands[name] = _command(target, ASKEW_SEED=replay[1], ASKEW_ITERATIONS="1")
    return run_all(commands, cwd=REPO, seconds=TIMEOUT)


def test_there_are_examples() -> None:
    assert {p.name for p in BUGGY} >= {
        "quickstart.py",
        "replicated_counter.py",
        "primary_backup.py",
    }
    for p in FIXED:
        assert p.with_name(p.name.replace("_fixed", "")) in BUGGY, f"{p.name} fixes nothing"


@pytest.mark.parametrize("path", _cases(FIXED))
def test_fixed_example_passes(runs: Runs, path: Path) -> None:
    rc, out = runs[path.name]
    assert rc == 0, out
    assert re.search(r"^1 passed\b", out, re.M), out


@pytest.mark.parametrize("path", _cases(BUGGY))
def test_buggy_example_fails_and_its_seed_replays(runs: Runs, replays: Runs, path: Path) -> None:
    rc, out = runs[path.name]
    assert rc == 1, out
    assert re.search(r"^1 failed\b", out, re.M), out
    report = _report(out)
    found = re.search(r"^  \(seed=(\d+), iteration=\d+, t=[\d.]+s, steps=\d+\)$", report, re.M)
    assert found, report
    assert "\n  recent events\n" in report, report
    replay = _REPLAY.search(report)
    assert replay, report
    seed, target = replay[1], shlex.split(replay[3])
    assert seed == found[1], report
    assert bool(replay[2]) == path.name.startswith(UNDER_EXEC), report
    assert len(target) == 1 and target[0].startswith(f"examples/{path.name}::test_"), report

    # The replay line, as printed: that seed alone, and the same report.
    rc2, out2 = replays[path.name]
    assert rc2 == 1, out2
    again = _report(out2)
    assert ", iteration=0," in again, again
    assert replay_comparable(again) == replay_comparable(report)


# The README and the documentation pages that show examples.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_readme_examples_are_the_files() -> None:
    if not (REPO / "README.md").is_file():
        pytest.skip("no README.md")
    shown = set()
    for page in PAGES:
        for name, block in _MARKED_BLOCK.findall(page.read_text(encoding="utf-8")):
            path = REPO / name
            assert path.is_file(), f"{page.name} shows {name}, which does not exist"
            text = path.read_text(encoding="utf-8")
            assert block == text, f"{page.name}'s block for {name} differs from the file"
            shown.add(name)
    assert "examples/quickstart.py" in shown and len(shown) >= 4, shown


def test_the_readme_shows_the_quickstart_report_as_askew_prints_it(runs: Runs) -> None:
    printed = _report(runs["quickstart.py"][1])

    # The note depends on this process's PYTHONHASHSEED, not on askew.
    def body(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("  note: ")]

    for page in (REPO / "README.md", REPO / "docs" / "index.md"):
        text = page.read_text(encoding="utf-8")
        shown = re.search(r"examples/quickstart\.py` prints it:\n\n```\n(.*?)\n```", text, re.S)
        assert shown is not None, f"{page.name} lost the quickstart report block"
        assert body(shown[1]) == body(printed), page.name
