"""Run every benchmark in bench/ and print its table, then a summary of goals.

Each bench runs in its own child process on this interpreter (so one bench's
heap and peak RSS never colour another's), one after the other; inside each,
the sides it compares are interleaved in one run. Nothing is asserted: the
summary lists each goal as met, NOT met or n/a (a peer absent on this
Python). A bench whose askew side fails exits non-zero, and so does this
script, naming it.

    python bench/run_all.py            # full run, about 2-3 minutes
    python bench/run_all.py --quick    # small N, under 30 s
    python bench/run_all.py --json out/   # also keep each bench's JSON there
    python bench/run_all.py --only quickstart,setup

simloom and simloop need Python 3.12+; on an older interpreter their sides
are reported unavailable and the summary says to rerun with
.venv313/bin/python.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _harness import env_info, fmt_ns, now_ns, peers_note

BENCHES = [
    "dispatch",
    "task_step",
    "timer",
    "trampoline",
    "setup",
    "quickstart",
    "heartbeat",
    "scale",
    "rss",
    "sweep",
    "linearizability",
    "sockets",
    "disk",
    "threads",
    "timeline",
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small N for every bench")
    p.add_argument("--json", metavar="DIR", help="write <bench>.json files into DIR")
    p.add_argument(
        "--only", metavar="NAMES", help="comma-separated subset of: " + ", ".join(BENCHES)
    )
    args = p.parse_args(argv)
    names = BENCHES if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        p.error(f"unknown bench: {', '.join(unknown)}")

    info = env_info()
    print(
        f"askew benchmarks: Python {info['python']} ({info['executable']}), "
        f"{info['cpus']} CPUs, {'quick' if args.quick else 'default'} mode"
    )
    note = peers_note()
    if note:
        print(f"note: {note}")

    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = args.json or tempfile.mkdtemp(prefix="askew-bench-")
    os.makedirs(out_dir, exist_ok=True)
    failed: list[str] = []
    started = now_ns()
    for name in names:
        cmd = [sys.executable, os.path.join(here, f"bench_{name}.py")]
        cmd += ["--json", os.path.join(out_dir, f"{name}.json")]
        if args.quick:
            cmd.append("--quick")
        print(flush=True)
        t0 = now_ns()
        code = subprocess.call(cmd)
        took = fmt_ns(now_ns() - t0)
        if code != 0:
            failed.append(name)
            print(f"!! bench_{name} exited with status {code} after {took}")
        else:
            print(f"   (bench_{name}: {took})")

    print("\n== summary of goals (reported, not asserted)")
    for name in names:
        path = os.path.join(out_dir, f"{name}.json")
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            print(f"  {name:<12}no results")
            continue
        for g in doc.get("goals", []):
            state = {True: "met", False: "NOT met", None: "n/a"}[g["met"]]
            value = g["value"]
            print(f"  {name:<12}[{state:^7}] {g['goal']}: {value}")
    if note:
        print(f"\nnote: {note}")
    if args.json:
        print(f"JSON results in {out_dir}")
    print(f"total: {fmt_ns(now_ns() - started)}")
    if failed:
        print(f"benches that crashed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
