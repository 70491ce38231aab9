# SPDX-License-Identifier: Apache-2.0
"""The README's Python snippets (and those of the documentation pages its
longer sections moved to) that are not whole example files run as printed.

The quickstart and the examples are checked against examples/ by
test_examples.py; here the loop-factory snippet and the replay call run
with the names they assume (`main`, `test_leader_election`) defined.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import askew
from askew._loop.config import DEFAULT_CPU, DEFAULT_OVERSHOOT

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
# The pages the README's longer sections moved to.
PAGES = [README, *(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md")))]


def _block_containing(text: str) -> str:
    for page in PAGES:
        for block in re.findall(r"```python\n(.*?)```", page, re.S):
            if text in block:
                return str(block)
    raise AssertionError(f"no python block of README.md or docs/ contains {text!r}")


def _quickstart() -> Any:
    """examples/quickstart.py, imported."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import quickstart
    finally:
        sys.path.pop(0)
    return quickstart


def _reported_seed() -> int:
    """The seed of the quickstart report the README prints."""
    reported = re.search(r"^  \(seed=(\d+), iteration=\d+,", README, re.M)
    assert reported is not None, "README.md lost the quickstart report"
    return int(reported[1])


def test_the_loop_factory_snippet_runs_main_in_virtual_time() -> None:
    snippet = _block_containing("loop_factory=lambda: askew.new_event_loop(seed=7)")
    seen: list[float] = []

    async def main() -> None:
        await asyncio.sleep(3600)
        seen.append(asyncio.get_running_loop().time())

    if sys.version_info < (3, 12):  # asyncio.run takes loop_factory from 3.12
        snippet = "\n".join(line for line in snippet.splitlines() if "asyncio.run(" not in line)
    exec(snippet, {"asyncio": asyncio, "askew": askew, "main": main})
    # A little more than the hour: the wake-up overshoot and CPU time of the
    # faithful strategy, never less.
    late = DEFAULT_OVERSHOOT[1] + 3 * DEFAULT_CPU[1]
    assert seen and all(3600.0 < t <= 3600.0 + late for t in seen)


def test_the_replay_call_reproduces_the_quickstart_failure() -> None:
    snippet = _block_containing("askew.Replay.run(")
    namespace: dict[str, Any] = {
        "askew": askew,
        "test_leader_election": _quickstart().test_leader_election,
    }
    seed = _reported_seed()
    assert f"seed={seed})" in snippet
    with pytest.raises(askew.SimulationFailure) as failure:
        exec(snippet, namespace)
    assert failure.value.seed == seed
    assert f"(seed={seed}, iteration=0," in str(failure.value)


def test_see_a_run_shows_what_it_says(tmp_path: Path) -> None:
    """The README's "See a run": the call it names writes the timeline, the
    screenshot it shows exists, and the values it reads off it are the
    quickstart's failing run's."""
    section = README.split("## See a run", 1)[1].split("\n## ", 1)[0]
    assert 'timeline="run.html"' in section
    image = re.search(r"!\[[^]]*\]\(([^)]+)\)", section)
    assert image is not None and (REPO / image[1]).is_file()
    test, seed = _quickstart().test_leader_election, _reported_seed()
    page = tmp_path / "run.html"
    with pytest.raises(askew.SimulationFailure):
        askew.Replay.run(test, seed=seed, timeline=str(page))
    assert "leader" in page.read_text(encoding="utf-8")
    held = {c.node: c.value for c in askew.Replay.states(test, seed) if c.name == "leader"}
    assert "nodes 2 and 4 keep leader 4 while 0, 1 and 3 agree on 3" in " ".join(section.split())
    assert held == {0: "3", 1: "3", 2: "4", 3: "3", 4: "4"}
