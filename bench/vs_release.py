"""This checkout against the last release, side by side: so a slower commit
shows in the run that made it.

The release is a git worktree of RELEASE (default: the first release,
b490ebd) beside the checkout (../askew-release-<ref>), made and built in
place with this interpreter on first use. Each workload runs in a child
process per side, the sides alternated round by round (release, this tree,
release, ...), so load on a shared machine falls on both alike; the table
prints each side's median and best and the ratio of the medians. Every
workload uses only API the first release has.

    python bench/vs_release.py                 # 5 rounds of each workload
    python bench/vs_release.py --rounds 3 --only quickstart,empty
    RELEASE=<commit> python bench/vs_release.py
    RELEASE_TREE=/path/to/a/built/release python bench/vs_release.py

Workloads (the figures docs/benchmarks.md's "Against the first release"
table gives): the README quickstart (seeds/s), an empty
`@askew.simulate` iteration (set-up + teardown, µs), a heartbeat
cluster's simulated hour (ms), a `sleep(0)` task step and an
`asyncio.sleep(0.01)` timer wake-up on a bare loop (ns each).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import textwrap

import bench_heartbeat
import bench_quickstart

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
RELEASE = os.environ.get("RELEASE", "b490ebd")

# Each workload: the code a child runs, which prints one JSON number (the
# unit in WORKLOADS' second field), and whether larger is better.
_PRELUDE = """
import json, sys, time
_clock = time.perf_counter  # the host's: inside a run time.* is virtual
import asyncio, askew
"""


def _source(fn: object) -> str:
    """A bench's own node code, so both sides run exactly what it runs."""
    return textwrap.dedent(inspect.getsource(fn)) + "\n"  # type: ignore[arg-type]


# 10 tasks, each awaiting asyncio.sleep(DELAY) N // 10 times, on a bare loop.
_STEPS = """
async def worker(k):
    for _ in range(k):
        await asyncio.sleep(DELAY)

async def main(k):
    await asyncio.gather(*(worker(k) for _ in range(10)))

loop = askew.new_event_loop(0)
loop.run_until_complete(main(100))
t = _clock(); loop.run_until_complete(main(N // 10)); el = _clock() - t
loop.close(); print(json.dumps(el / N * 1e9))
"""

WORKLOADS: dict[str, tuple[str, str, bool]] = {
    "quickstart": (
        _source(bench_quickstart.node_main)
        + """
def build(n):
    @askew.simulate(seed=1337, iterations=n)
    async def test_leader_election(world):
        nodes = [world.spawn(node_main, i) for i in range(5)]
        async with world.partition({0, 1}, {2, 3, 4}):
            await world.clock.advance(seconds=30)
        await world.clock.advance(seconds=30)
    return test_leader_election

build(20)()
t = _clock(); build(N)(); print(json.dumps(N / (_clock() - t)))
""",
        "seeds/s",
        True,
    ),
    "empty": (
        """
def build(n):
    @askew.simulate(seed=0, iterations=n)
    async def test(world):
        pass
    return test

build(100)()
t0 = _clock(); build(N // 10)(); t1 = _clock(); build(N)(); t2 = _clock()
print(json.dumps(((t2 - t1) - (t1 - t0)) / (N - N // 10) * 1e6))
""",
        "µs/iteration",
        False,
    ),
    "heartbeat": (
        _source(bench_heartbeat.heartbeat_node)
        + """
@askew.simulate(seed=0, iterations=1)
async def test_heartbeats(world):
    nodes = [world.spawn(heartbeat_node) for _ in range(5)]
    await world.clock.advance(seconds=N)
    assert all(len(n.last_seen) == 4 for n in nodes)

t = _clock(); test_heartbeats(); print(json.dumps((_clock() - t) * 1e3 * 3600 / N))
""",
        "ms per simulated hour",
        False,
    ),
    "task_step": (_STEPS.replace("DELAY", "0"), "ns/step", False),
    "timer": (_STEPS.replace("DELAY", "0.01"), "ns/wake-up", False),
}

SIZES = {"quickstart": 400, "empty": 5000, "heartbeat": 600, "task_step": 100_000, "timer": 50_000}


def release_tree(ref: str) -> str:
    """The release's tree: RELEASE_TREE if set, else a worktree of `ref`
    beside this checkout; its extension built in place for this Python."""
    path = os.environ.get("RELEASE_TREE") or os.path.join(
        os.path.dirname(TREE), f"askew-release-{ref}"
    )
    if not os.path.isdir(path):
        subprocess.run(["git", "-C", TREE, "worktree", "add", "--detach", path, ref], check=True)
    tag = f"_core.cpython-{sys.version_info.major}{sys.version_info.minor}"
    if not any(f.startswith(tag) for f in os.listdir(os.path.join(path, "askew"))):
        print(f"building {ref} in {path} ...", file=sys.stderr, flush=True)
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=path,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return path


def run_side(tree: str, name: str, n: int) -> float:
    code = _PRELUDE + f"N = {n}\n" + textwrap.dedent(WORKLOADS[name][0])
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0", ASKEW_CHECK_REPLAY="0")
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default=",".join(WORKLOADS))
    p.add_argument("--scale", type=float, default=1.0, help="multiply every workload's size")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"--only: unknown workload(s) {unknown}; the workloads are {', '.join(WORKLOADS)}")
    old = release_tree(RELEASE)
    print(f"this tree ({TREE}) against release {RELEASE} ({old}), Python {sys.version.split()[0]}")
    print(f"{'workload':<12} {'unit':<22} {'release':>18} {'this tree':>18} {'ratio':>7}")
    for name in names:
        n = max(1, int(SIZES[name] * args.scale))
        sides: dict[str, list[float]] = {"release": [], "tree": []}
        for _ in range(args.rounds):
            sides["release"].append(run_side(old, name, n))
            sides["tree"].append(run_side(TREE, name, n))
        unit, higher = WORKLOADS[name][1], WORKLOADS[name][2]
        med = {k: statistics.median(v) for k, v in sides.items()}
        best = {k: (max if higher else min)(v) for k, v in sides.items()}
        # The ratio reads "times better than the release" either way.
        r = med["tree"] / med["release"] if higher else med["release"] / med["tree"]
        cells = [f"{med[k]:,.1f} (best {best[k]:,.1f})" for k in ("release", "tree")]
        print(f"{name:<12} {unit:<22} {cells[0]:>18} {cells[1]:>18} {r:>6.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
