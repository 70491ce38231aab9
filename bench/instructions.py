"""Instructions per unit of bench/vs_release.py's workloads, counted by
valgrind's callgrind: the measure that the machine's load does not move.

Each workload runs in a child under `valgrind --tool=callgrind` at two
sizes, and the difference of the two counts over the difference of the two
sizes is its cost per unit (a quickstart seed, an empty iteration, a
simulated hour of the heartbeat cluster), with start-up and warm-up
cancelled out. PYTHONHASHSEED=0 and ASKEW_CHECK_REPLAY=0, as vs_release.py
runs them. The tree is this checkout, or the one given (built in place).

    python bench/instructions.py [--only quickstart,empty,heartbeat] [TREE]

Under valgrind a run is ~50x slower: the default sizes take a few minutes
a workload.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import vs_release

# name: (small size, large size, units per size step). The empty workload
# runs N + N // 10 iterations (vs_release.py times two sweeps), the
# heartbeat N simulated seconds, reported per hour.
SIZES: dict[str, tuple[int, int, float]] = {
    "quickstart": (50, 150, 1.0),
    "empty": (500, 1500, 1.1),
    "heartbeat": (10, 130, 1 / 3600),
}
UNITS = {"quickstart": "a seed", "empty": "an iteration", "heartbeat": "a simulated hour"}


def count(tree: str, name: str, n: int) -> int:
    """The instructions of one child running workload `name` at size n."""
    code = vs_release._PRELUDE + f"N = {n}\n" + textwrap.dedent(vs_release.WORKLOADS[name][0])
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0", ASKEW_CHECK_REPLAY="0")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/cg.out",
                sys.executable,
                "-c",
                code,
            ],
            cwd=tree,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"{name}: no instruction count in valgrind's output:\n{out.stderr}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tree", nargs="?", default=vs_release.TREE)
    p.add_argument("--only", default=",".join(SIZES))
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in SIZES]
    if unknown:
        p.error(f"--only: unknown workload(s) {unknown}; the workloads are {', '.join(SIZES)}")
    for name in names:
        small, large, per_step = SIZES[name]
        a, b = count(args.tree, name, small), count(args.tree, name, large)
        per_unit = (b - a) / ((large - small) * per_step)
        sizes = f"{small} -> {large}"
        print(f"{name}: {per_unit:,.0f} instructions {UNITS[name]} ({sizes})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
