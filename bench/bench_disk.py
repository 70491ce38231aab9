"""Small writes with an fsync each: real tmpfs (/dev/shm) vs askew's simulated disk.

The same code runs on both sides: open a log file, then N times append a 100-byte record with
`f.write` + `f.flush()` + `os.fsync(f.fileno())`, then rename the log over another name and
fsync the directory (the WAL pattern of examples/wal_kv_fixed.py). The real side writes
under a fresh /dev/shm directory with real fsync calls (tmpfs makes them cheap: this measures
the system call path, not a device); the askew side runs it in a node spawned with
`disk="/data"`, inside one `@askew.simulate` run, so every call crosses the patched `open`
and `os` functions into the C model. Read `vs` as "times cheaper than real tmpfs" (below 1:
dearer); the figure is wall ns per fsynced record.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from _harness import (
    Side,
    askew_simulate,
    compare,
    parser,
    print_header,
    print_table,
    ratio,
    scaled,
    write_json,
)

RECORD = b"k" * 99 + b"\n"
REAL = "real tmpfs (/dev/shm), real fsync"


def appender(folder: str, n: int) -> int:
    """The workload: n fsynced appends, then a rename made durable."""
    log = os.path.join(folder, "wal.log")
    with open(log, "ab") as f:
        for _ in range(n):
            f.write(RECORD)
            f.flush()
            os.fsync(f.fileno())
    os.replace(log, os.path.join(folder, "wal.old"))
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
    os.unlink(os.path.join(folder, "wal.old"))
    return n


def real_side(n: int):
    def factory():
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None

        def run() -> int:
            folder = tempfile.mkdtemp(prefix="askew-bench-disk-", dir=base)
            try:
                return appender(folder, n)
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        return run

    return factory


def askew_side(n: int):
    def factory():
        simulate = askew_simulate()
        done: list[int] = []

        async def node(node) -> None:
            done.append(appender("/data", n))

        async def body(world) -> None:
            world.spawn(node, disk="/data")
            await world.clock.advance(1)

        test = simulate(seed=1, iterations=1)(body)

        def run() -> int:
            done.clear()
            test()
            return done[0]

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    print_header("bench_disk", args)
    n = scaled(args.quick, 20_000, 2_000)
    repeats = args.repeats or (3 if args.quick else 5)
    results = compare(
        [Side(REAL, real_side(n)), Side("askew (simulated disk)", askew_side(n))],
        repeats=repeats,
    )
    print_table(
        f"{n:,} appends of 100 bytes, each flushed and fsynced",
        results,
        unit="fsync",
        reference=REAL,
        rate="fsync/s",
    )
    r = ratio(results, REAL, "askew (simulated disk)")
    if r is not None:
        print(f"askew does {r:.2f}x the fsynced appends per wall second of real tmpfs")
    write_json(args.json, "disk", {"fsync_append": results}, [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
