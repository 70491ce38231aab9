"""Small writes with an fsync each: real tmpfs (/dev/shm) vs askew's simulated disk.

The same code runs on both sides: open a log file, then N times append a 100-byte record with
`f.write` + `f.flush()` + `os.fsync(f.fileno())`, then rename the log over another name and
fsync the directory (the WAL pattern of examples/wal_kv_fixed.py). The real side writes
under a fresh /dev/shm directory with real fsync calls (tmpfs makes them cheap: this measures
the system call path, not a device; `--real-disk` adds the same under the temporary
directory, where fsync costs what the machine's disk costs); the askew side runs it in a
node spawned with `disk="/data"`, inside one `@askew.simulate` run, so every call crosses
the patched `open` and `os` functions into the C model. Read `vs` as "times cheaper than
real tmpfs" (below 1: dearer); the figure is wall ns per fsynced record.

The peers (simloom, simloop; Python 3.12+, `.venv313/bin/python bench/bench_disk.py`) have no
file I/O interception: their `SimDisk` is an explicit key-value API, so the same code cannot
run there. Their rows run the nearest thing in their own API, one key per record: simloom's
`disk.write(key, record)` + `disk.fsync(key)`, simloop's buffered, torn disk `disk[key] =
record` + `disk.sync()`, on a bare SimDisk (no world). They show what a dictionary store
costs, not a file system; read them as a floor, not a race.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from _harness import (
    Side,
    Unavailable,
    askew_simulate,
    compare,
    import_peer,
    parser,
    print_header,
    print_table,
    ratio,
    scaled,
    write_json,
)

RECORD = b"k" * 99 + b"\n"
REAL = "real tmpfs (/dev/shm), real fsync"
DISK = "real disk (/tmp), real fsync"


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


def real_side(n: int, base: str | None):
    def factory():

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


def peer_side(name: str, n: int):
    def factory():
        peer = import_peer(name)
        keys = [f"wal/{i}" for i in range(n)]

        def run() -> int:
            disk = peer.SimDisk()
            if name == "simloom":
                for key in keys:
                    disk.write(key, RECORD)
                    disk.fsync(key)
            else:
                disk._configure(buffered=True, torn=True)
                for key in keys:
                    disk[key] = RECORD
                    disk.sync()
            return n

        return run

    return factory


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument(
        "--real-disk",
        action="store_true",
        help="also run the real side in the temporary directory (check `df -T` that it is a disk)",
    )
    args = p.parse_args(argv)
    print_header("bench_disk", args)
    n = scaled(args.quick, 20_000, 2_000)
    repeats = args.repeats or (3 if args.quick else 5)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    sides = [Side(REAL, real_side(n, shm)), Side("askew (simulated disk)", askew_side(n))]
    if args.real_disk:
        sides.append(Side(DISK, real_side(n, tempfile.gettempdir())))
    for peer in ("simloom", "simloop"):
        try:
            import_peer(peer)
        except Unavailable as exc:
            print(f"{peer}: n/a ({exc})")
            continue
        sides.append(Side(f"{peer} SimDisk (own key-value API)", peer_side(peer, n)))
    results = compare(sides, repeats=repeats)
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
