# SPDX-License-Identifier: Apache-2.0
"""`make demo`: run the README quickstart as a user would, show its report,
and say in one line whether the demo worked.

The quickstart has a bug by design, so its pytest run fails; the demo works
when that failure is askew's report with a seed and a replay line. Exit 0
then, 1 otherwise (the quickstart passed, or failed in some other way).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = "examples/quickstart.py"
_SEED = re.compile(r"\(seed=(\d+), iteration=(\d+), t=")
_REPLAY = re.compile(r"^\W*replay: (.+)$", re.M)


def main() -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", QUICKSTART],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    print(proc.stdout, end="")
    seed, replay = _SEED.search(proc.stdout), _REPLAY.search(proc.stdout)
    if proc.returncode == 1 and seed is not None and replay is not None:
        print(
            f"\ndemo: it worked. The test above failed on purpose: askew found the "
            f"quickstart's bug at seed {seed[1]} (iteration {seed[2]}).\n"
            f"demo: replay that run alone with:  {replay[1]}"
        )
        return 0
    print(f"\ndemo: askew did not report the quickstart's bug (pytest exited {proc.returncode})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
