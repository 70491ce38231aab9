# SPDX-License-Identifier: Apache-2.0
"""C code on a node's simulated disk: sqlite3 inside a node under askew-exec.

Each test runs a small program in a child through `python -m askew._run.exec`
(what the askew-exec script calls), as tests/run/test_exec.py does, with the
mount at an empty real directory so that a test can prove the real file
system stays untouched. Without the preload, sqlite3.connect on a mount is
refused with an error naming askew-exec.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_exec

from askew._loop.preload import LIBRARY_NAME

LIB = REPO / "askew" / LIBRARY_NAME

pytestmark = pytest.mark.skipif(not LIB.is_file(), reason="needs the built preload (run `make`)")


def _program(tmp_path: Path, body: str, *, preload: bool = True, **env: str) -> str:
    """Run `body` (after _HEADER, with MOUNT, an empty real directory, as the
    disk's mount) in a child; its stdout, after checking it exited 0 and left
    MOUNT empty."""
    mount = tmp_path / "mnt"
    mount.mkdir(exist_ok=True)
    script = tmp_path / "program.py"
    script.write_text(f"MOUNT = {str(mount)!r}\n" + _HEADER + textwrap.dedent(body))
    proc = run_exec([sys.executable, str(script)], preload=preload, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(mount.iterdir()) == [], "the real directory under the mount was written"
    return proc.stdout


_HEADER = """
import asyncio, os, sqlite3
import askew
"""
# One node, `node`, with its disk at MOUNT, run for a second of one iteration.
_NODE_MAIN = """
@askew.simulate(seed=3, iterations=1)
async def main(world):
    world.spawn(node, disk=MOUNT)
    await asyncio.sleep(1)
"""
# ... run under the preload.
_UNDER_PRELOAD = _NODE_MAIN + "\nassert askew.preload_active()\nmain()\n"
# Run main and print the first line of its failure.
_FIRST_LINE = """
try:
    main()
except askew.SimulationFailure as exc:
    print(str(exc).splitlines()[0])
"""


def test_sqlite_inside_a_node_keeps_its_rows_on_the_simulated_disk_only(tmp_path: Path) -> None:
    out = _program(
        tmp_path,
        """
async def node(n):
    db = sqlite3.connect(MOUNT + "/db")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    db.executemany("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)])
    db.commit()
    db.close()
    again = sqlite3.connect(MOUNT + "/db")
    print("rows", again.execute("SELECT v FROM t ORDER BY k").fetchall())
    print("files", sorted(os.listdir(MOUNT)))
"""
        + _UNDER_PRELOAD,
    )
    assert "rows [('a',), ('b',)]" in out, out
    assert "files ['db']" in out, out


def test_python_and_sqlite_in_one_node_read_each_others_files(tmp_path: Path) -> None:
    out = _program(
        tmp_path,
        """
async def node(n):
    db = sqlite3.connect(MOUNT + "/a.db")
    db.execute("CREATE TABLE t (v TEXT)")
    db.execute("INSERT INTO t VALUES ('from sqlite')")
    db.commit()
    db.close()
    with open(MOUNT + "/a.db", "rb") as f:  # Python reads what sqlite wrote
        image = f.read()
    print("header", image[:15])
    with open(MOUNT + "/b.db", "wb") as f:  # and writes what sqlite reads
        f.write(image)
    print("copy", sqlite3.connect(MOUNT + "/b.db").execute("SELECT v FROM t").fetchall())
"""
        + _NODE_MAIN
        + """
main()
""",
    )
    assert "header b'SQLite format 3'" in out, out
    assert "copy [('from sqlite',)]" in out, out


def test_a_descriptor_python_opened_is_one_c_code_can_lock(tmp_path: Path) -> None:
    out = _program(
        tmp_path,
        """
import fcntl

async def node(n):
    fd = os.open(MOUNT + "/f", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"abc")
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # C's fcntl, Python's descriptor
    print("mode", fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR)
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)  # nothing to change on a file
    fcntl.lockf(fd, fcntl.LOCK_UN)
    os.close(fd)
"""
        + _NODE_MAIN
        + """
main()
""",
    )
    assert "mode True" in out, out


def test_mmap_of_a_simulated_file_fails_the_run_naming_mmap(tmp_path: Path) -> None:
    out = _program(
        tmp_path,
        """
async def node(n):
    db = sqlite3.connect(MOUNT + "/db")
    db.execute("PRAGMA mmap_size=1048576")
    db.execute("CREATE TABLE t (v TEXT)")
    db.commit()
    db.execute("SELECT * FROM t").fetchall()
"""
        + _NODE_MAIN
        + _FIRST_LINE
        + """""",
    )
    assert "NondeterminismError: mmap" in out and "simulated disk cannot serve" in out, out


def test_c_code_of_a_node_without_that_disk_is_refused_not_sent_to_the_real_disk(
    tmp_path: Path,
) -> None:
    out = _program(
        tmp_path,
        """
async def owner(n):
    await asyncio.sleep(10)

async def other(n):
    sqlite3.connect(MOUNT + "/db").execute("CREATE TABLE t (v TEXT)")

@askew.simulate(seed=3, iterations=1)
async def main(world):
    world.spawn(owner, disk=MOUNT)
    world.spawn(other)
    await asyncio.sleep(1)
"""
        + _FIRST_LINE
        + """""",
    )
    assert "NondeterminismError" in out and "another node's mount" in out, out


def test_c_code_of_the_test_body_under_a_mount_is_refused(tmp_path: Path) -> None:
    out = _program(
        tmp_path,
        """
async def owner(n):
    await asyncio.sleep(10)

@askew.simulate(seed=3, iterations=1)
async def main(world):
    world.spawn(owner, disk=MOUNT)
    sqlite3.connect(MOUNT + "/db").execute("CREATE TABLE t (v TEXT)")
"""
        + _FIRST_LINE,
    )
    assert "NondeterminismError" in out and "code outside every node" in out, out


def test_without_the_preload_sqlite_connect_on_a_mount_is_refused_naming_askew_exec(
    tmp_path: Path,
) -> None:
    out = _program(
        tmp_path,
        """
async def node(n):
    sqlite3.connect(MOUNT + "/db")
"""
        + _NODE_MAIN
        + """
assert not askew.preload_active()"""
        + _FIRST_LINE
        + """print("outside", sqlite3.connect(":memory:").execute("SELECT 1").fetchone())
""",
        preload=False,
    )
    assert "NondeterminismError: sqlite3.connect(" in out and "askew-exec" in out, out
    assert "outside (1,)" in out, out


_HASHES = """
async def kv(n):
    db = sqlite3.connect(MOUNT + "/db", isolation_level=None)
    try:  # a crash may tear the unsynced file: that outcome replays too
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE IF NOT EXISTS t (v BLOB)")
        n.rows = db.execute("SELECT count(*) FROM t").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        n.rows = repr(exc)
        return
    while True:
        with db:
            db.execute("INSERT INTO t VALUES (?)", (os.urandom(700),))
        await asyncio.sleep(0.01)

@askew.simulate(seed=int(os.environ["SEED"]), iterations=1)
async def main(world):
    node = world.spawn(kv, disk=MOUNT)
    await world.clock.advance(seconds=0.5)
    world.faults.restart(node)
    await world.clock.advance(seconds=0.1)
    print("rows", node.rows, "trace", hex(world._loop.trace_hash), "log", world.log.hash)

main()
"""


def test_a_sqlite_node_that_crashes_replays_exactly_across_processes(tmp_path: Path) -> None:
    # One mount path for every run: it is in the world log, and so in the hash.
    outs = [
        _program(tmp_path, _HASHES, SEED="11", PYTHONHASHSEED=hash_seed)
        for hash_seed in ("0", "1", "2")
    ]
    assert re.search(r"^rows .+ trace 0x[0-9a-f]+ log -?\d+$", outs[0], re.M), outs[0]
    assert outs[0] == outs[1] == outs[2]
    assert _program(tmp_path, _HASHES, SEED="12") != outs[0]


@pytest.mark.parametrize(
    ("example", "passes"), [("sqlite_node.py", False), ("sqlite_node_fixed.py", True)]
)
def test_synchronous_off_loses_committed_rows_in_a_crash_and_full_does_not(
    example: str, passes: bool
) -> None:
    proc = run_exec(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"examples/{example}"]
    )
    out = proc.stdout + proc.stderr
    if passes:
        assert proc.returncode == 0 and "1 passed" in out, out
        return
    assert proc.returncode == 1 and "committed rows lost in a crash" in out, out
    replay = re.search(
        r"^\s*replay: ASKEW_SEED=(\d+) ASKEW_ITERATIONS=1 askew-exec pytest '?([^'\s]+)'?$",
        out,
        re.M,
    )
    assert replay, out
    again = run_exec(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", replay[2]],
        ASKEW_SEED=replay[1],
        ASKEW_ITERATIONS="1",
    )
    assert again.returncode == 1 and "committed rows lost in a crash" in again.stdout, again.stdout


def test_c_code_resolves_paths_on_the_disk_as_linux_does(tmp_path: Path) -> None:
    """The cases of tests/disk/pathcases.py through libc (the preload's
    interposers, the engine's one resolver): the same answers on the real
    file system outside the run and on the node's disk inside it."""
    real = tmp_path / "real"
    real.mkdir()
    out = _program(
        tmp_path,
        f"""
import json, sys
sys.path.insert(0, {str(REPO / "tests" / "disk")!r})
from pathcases import LibcCalls, outcomes

expected = outcomes({str(real)!r}, LibcCalls())

async def node(n):
    got = outcomes(MOUNT, LibcCalls())
    differ = {{k: (expected[k], got[k]) for k in expected if expected[k] != got[k]}}
    print("differ", json.dumps(differ))
    print("cases", len(expected))
"""
        + _UNDER_PRELOAD,
    )
    assert "differ {}" in out, out
    assert "cases 434" in out, out


def test_a_node_that_crashed_inside_a_transaction_writes_again_after_its_restart(
    tmp_path: Path,
) -> None:
    """The dead incarnation's connection stays alive in the process (its
    coroutine is kept), and sqlite keeps every connection's locks in one
    table per process, keyed by (device, inode): the restarted node got
    "database is locked". A crash makes the disk a new device, so what the
    dead incarnation held is its own."""
    out = _program(
        tmp_path,
        """
async def node(n):
    db = sqlite3.connect(MOUNT + "/db", isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS t (v)")
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t VALUES (1)")
    await asyncio.sleep(10)  # the crash comes here, inside the transaction
    db.execute("COMMIT")
    n.rows = db.execute("SELECT count(*) FROM t").fetchone()[0]

@askew.simulate(seed=3, iterations=1)
async def main(world):
    h = world.spawn(node, disk=MOUNT)
    await asyncio.sleep(1)
    world.faults.restart(h)
    await asyncio.sleep(20)
    print("rows", h.rows)

assert askew.preload_active()
main()
""",
    )
    assert "rows 1" in out, out


def test_sqlite_temporary_files_go_to_the_nodes_disk_not_the_hosts(tmp_path: Path) -> None:
    """VACUUM, a sort that spills and a TEMP table write temporary files
    (etilqs_*) in $SQLITE_TMPDIR or /var/tmp: a node's are on its disk.
    Shown by the disk's capacity: the TEMP table does not fit beside the
    database, where on the host it would."""
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    out = _program(
        tmp_path,
        """
async def node(n):
    db = sqlite3.connect(MOUNT + "/db", isolation_level=None)
    db.execute("PRAGMA cache_size=20")  # spill to a temporary file early
    db.execute("CREATE TABLE t (v)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO t VALUES (?)", [(os.urandom(700),) for _ in range(400)])
    db.execute("COMMIT")
    n.sorted = len(db.execute("SELECT v FROM t ORDER BY v").fetchall())
    db.execute("VACUUM")
    try:
        db.execute("CREATE TEMP TABLE big AS SELECT v FROM t, (SELECT 1 UNION SELECT 2 "
                   "UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6)")
        n.temp = "fitted"
    except sqlite3.OperationalError as exc:
        n.temp = str(exc)
    n.files = sorted(os.listdir(MOUNT))

@askew.simulate(seed=3, iterations=1)
async def main(world):
    h = world.spawn(node, disk=MOUNT)
    world.faults.disk(h, capacity=2_000_000)  # the database twice, not the TEMP table too
    await asyncio.sleep(1)
    print("sorted", h.sorted, "temp", h.temp, "files", h.files)

assert askew.preload_active()
main()
""",
        SQLITE_TMPDIR=str(host_tmp),
    )
    assert "sorted 400 temp database or disk is full files ['db']" in out, out
    assert list(host_tmp.iterdir()) == []
