# SPDX-License-Identifier: Apache-2.0
"""`make demo` (scripts/demo.py): the quickstart's failure is the demo
working, and the demo says so in its last lines, with the seed it found and
the command that replays that run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import hang_guard

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "scripts" / "demo.py"


@pytest.mark.skipif(not DEMO.exists(), reason="needs the source tree (scripts/)")
def test_the_demo_ends_saying_it_found_the_bug_and_how_to_replay_it() -> None:
    proc = subprocess.run(
        [sys.executable, str(DEMO)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.rstrip().splitlines()[-2:]
    found = re.fullmatch(r"demo: it worked\. .* at seed (\d+) \(iteration \d+\)\.", last[0])
    assert found, last
    assert last[1] == (
        f"demo: replay that run alone with:  ASKEW_SEED={found[1]} ASKEW_ITERATIONS=1 "
        "pytest 'examples/quickstart.py::test_leader_election'"
    )
    assert "1 failed" in proc.stdout  # the quickstart's own test, as pytest printed it
