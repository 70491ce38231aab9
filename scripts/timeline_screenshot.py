#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Make docs/img/quickstart-timeline.png: run examples/quickstart.py's sweep,
take the seed its failure report names, write that run's timeline and
screenshot it in headless Chromium, the failure's hover card open (the
page's #card=failure). Usage: timeline_screenshot.py [OUT.png]"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

import quickstart  # noqa: E402

import askew  # noqa: E402


def main() -> int:
    out = Path(
        sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "img" / "quickstart-timeline.png"
    )
    os.environ.pop("ASKEW_SEED", None)
    os.environ.pop("ASKEW_ITERATIONS", None)
    try:
        quickstart.test_leader_election()
    except askew.SimulationFailure as failure:
        seed = failure.seed  # type: ignore[attr-defined]
    else:
        print("the quickstart passed: nothing to draw", file=sys.stderr)
        return 1
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "quickstart.html"
        try:
            askew.Replay.run(quickstart.test_leader_election, seed=seed, timeline=str(page))
        except askew.SimulationFailure:
            pass  # the failure is the point of the picture
        out.parent.mkdir(parents=True, exist_ok=True)
        # The browser gets no LD_PRELOAD of ours (under `make asan`,
        # libasan's keeps it from starting).
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1400,560", f"--screenshot={out.resolve()}",
             page.as_uri() + "#card=failure"],
            check=True, capture_output=True, timeout=120, env=env,
        )  # fmt: skip
    print(f"{out}: seed {seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
