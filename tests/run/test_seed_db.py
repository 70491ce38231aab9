# SPDX-License-Identifier: Apache-2.0
"""The seed database (askew/_run/seeddb.py): a simulated test's failing seed is
remembered under pytest's rootdir (.askew/, or --askew-db / ASKEW_DB), the
next session runs it alone before the sweep, and it is forgotten after
passing PASSES_TO_FORGET sessions."""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_pytest

from askew._run import seeddb
from askew._run.seeddb import PASSES_TO_FORGET, SeedDB, locate

pytestmark = pytest.mark.usefixtures("clean_env")

# Fails on the seeds whose first draw is below 0.1 (iteration 0 passes for
# base seed 2), unless the file `fixed` exists.
SOURCE = """
    from pathlib import Path

    import askew

    @askew.simulate(seed=2, iterations=200)
    async def test_rare(world):
        if not Path("fixed").exists():
            assert world.random.random() >= 0.1
"""
NODEID = "test_mod.py::test_rare"


def _failing_seed(out: str) -> tuple[int, int]:
    found = re.search(r"\(seed=(\d+), iteration=(\d+),", out)
    assert found, out
    return int(found[1]), int(found[2])


def test_a_failing_seed_is_remembered_and_runs_first_in_the_next_session(
    tmp_path: Path,
) -> None:
    first = run_pytest(tmp_path, SOURCE, "--askew-db=db")
    seed, iteration = _failing_seed(first.stdout)
    assert iteration > 0
    assert SeedDB(tmp_path / "db").seeds(NODEID) == [seed]
    again = run_pytest(tmp_path, SOURCE, "--askew-db=db")
    assert _failing_seed(again.stdout) == (seed, 0)


def test_a_remembered_seed_is_forgotten_after_passing_n_sessions(tmp_path: Path) -> None:
    seed, _ = _failing_seed(run_pytest(tmp_path, SOURCE, "--askew-db=db").stdout)
    (tmp_path / "fixed").touch()
    db = SeedDB(tmp_path / "db")
    for _ in range(PASSES_TO_FORGET - 1):
        assert run_pytest(tmp_path, SOURCE, "--askew-db=db").returncode == 0
        assert db.seeds(NODEID) == [seed]
    assert run_pytest(tmp_path, SOURCE, "--askew-db=db").returncode == 0
    assert db.seeds(NODEID) == []


def test_askew_db_off_remembers_nothing(tmp_path: Path) -> None:
    run_pytest(tmp_path, SOURCE, env={"ASKEW_DB": "off"})
    run_pytest(tmp_path, SOURCE, "--askew-db=off")
    assert not (tmp_path / ".askew").exists()
    assert not any(p.name.endswith(".json") for p in tmp_path.rglob("*"))


def test_the_default_database_is_dot_askew_in_the_rootdir_unless_the_cache_is_off(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "sub" / "test_mod.py").write_text(textwrap.dedent(SOURCE))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    cmd = [sys.executable, "-m", "pytest", "-q", "test_mod.py"]
    subprocess.run(cmd, cwd=tmp_path / "sub", env=env, capture_output=True, check=False)
    assert SeedDB(tmp_path / ".askew").seeds("sub/test_mod.py::test_rare")
    # -p no:cacheprovider: a session that keeps nothing keeps no seeds.
    assert run_pytest(tmp_path / "sub", SOURCE).returncode == 1
    assert not (tmp_path / "sub" / ".askew").exists()


def test_record_keeps_the_newest_failure_last_and_counts_passes(tmp_path: Path) -> None:
    db = SeedDB(tmp_path)
    db.record("t", 5, [])
    db.record("t", 9, [])
    db.record("t", 5, [])  # failed again: its passes start over, it moves last
    assert db.seeds("t") == [9, 5]
    for _ in range(PASSES_TO_FORGET):
        db.record("t", None, [9])
    assert db.seeds("t") == [5]
    assert db.seeds("other") == []


def test_an_unreadable_database_file_counts_as_empty(tmp_path: Path) -> None:
    db = SeedDB(tmp_path)
    db.record("t", 5, [])
    (file,) = (tmp_path / "seeds").glob("*.json")
    file.write_text("{not json")
    assert db.seeds("t") == []
    file.write_text('{"test": "another node id", "seeds": [[1, 0]]}')
    assert db.seeds("t") == []
    db.record("t", 7, [])
    assert db.seeds("t") == [7]


def test_locate_reads_off_a_path_or_the_rootdir(tmp_path: Path) -> None:
    assert locate("off", tmp_path, True) is None
    assert locate(" OFF ", tmp_path, True) is None
    given = locate("elsewhere", tmp_path, False)
    assert given is not None and given.root == Path("elsewhere")
    default = locate("", tmp_path, True)
    assert default is not None and default.root == tmp_path / ".askew"
    assert locate("", tmp_path, False) is None


def test_lf_seed_runs_first_then_the_database_seeds_then_the_sweep(tmp_path: Path) -> None:
    source = SOURCE.replace(
        "    async def test_rare(world):\n",
        "    async def test_rare(world):\n"
        "        with open('ran', 'a') as f:\n"
        "            f.write(f'{world.seed}\\n')\n",
    )
    (tmp_path / "test_mod.py").write_text(textwrap.dedent(source))
    db = SeedDB(tmp_path / ".askew")
    db.record(NODEID, 2, [])  # an older failure; base seed 2 itself passes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}

    def session(*args: str) -> list[int]:
        (tmp_path / "ran").unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-q", *args]
        subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, check=False)
        return [int(s) for s in (tmp_path / "ran").read_text().split()]

    ran = session()
    failing = ran[-1]
    assert ran[0] == 2 and failing != 2  # the remembered seed first, then the sweep
    assert db.seeds(NODEID) == [2, failing]
    assert session("--lf")[:1] == [failing]  # --lf's seed before the database's
    assert session()[:2] == [2, failing]  # without --lf: the database's, oldest first


# ---- a cache, never a reason to fail: whatever the files hold, whoever writes


def _file_of(db: SeedDB, nodeid: str) -> Path:
    db.record(nodeid, 1, [])
    (path,) = (db.root / "seeds").glob("*.json")
    return path


def _hostile_value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any shape, with the integers a seed cannot be."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([-1, 2**64, 2**64 + 5, -(2**70), 0, 7, 2**64 - 1, PASSES_TO_FORGET])
    if kind == 1:
        return rng.choice([True, False, None, 1.5, float("1e308"), "7", ""])
    if kind == 2:
        return [rng.choice([-1, 0, 3, 2**64]), rng.choice([0, 1, -1, 2, 99, True])]
    if kind == 3:
        return rng.randrange(2**64)
    if kind == 4:
        return "\ud800" if rng.random() < 0.5 else "x" * rng.randrange(50)
    if kind == 5:
        return [rng.randrange(2**64), rng.randrange(PASSES_TO_FORGET)]
    if kind == 6:
        return [_hostile_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 7:
        return {"test": "t", "seeds": [_hostile_value(rng, depth + 1) for _ in range(3)]}
    return {str(rng.random()): _hostile_value(rng, depth + 1)}


def _hostile_contents(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    if kind == 1:
        depth = rng.choice([1000, 10**5, 10**6])
        return b"[" * depth + b"]" * depth  # past the parser's recursion limit
    if kind == 2:
        return b'{"test": "t", "seeds": ' + b"[" * 10**5 + b"]" * 10**5 + b"}"
    if kind == 3:
        return json.dumps(_hostile_value(rng)).encode()
    rows = [_hostile_value(rng) for _ in range(rng.randrange(60))]
    return json.dumps({"test": "t", "seeds": rows}).encode()


def test_any_file_content_reads_as_valid_seeds_or_none_and_records_over_it(
    tmp_path: Path,
) -> None:
    rng = random.Random(24)
    for k in range(300):
        db = SeedDB(tmp_path / str(k))
        path = _file_of(db, "t")
        path.write_bytes(_hostile_contents(rng))
        seeds = db.seeds("t")  # never raises
        assert all(type(s) is int and 0 <= s < 2**64 for s in seeds)
        assert len(seeds) == len(set(seeds)) <= seeddb.KEPT
        db.record("t", 11, seeds[:1])  # nor does a record over it
        assert db.seeds("t")[-1] == 11


def test_out_of_range_seeds_in_the_file_are_left_out_and_the_session_runs(
    tmp_path: Path,
) -> None:
    db = SeedDB(tmp_path / "db")
    path = _file_of(db, NODEID)
    rows = [[2**64, 0], [-1, 0], [True, 0], [5, -1], [6, PASSES_TO_FORGET], [7, 0]]
    path.write_text(json.dumps({"test": NODEID, "seeds": rows}))
    assert db.seeds(NODEID) == [7]
    (tmp_path / "fixed").touch()  # the test passes on every seed it is given
    proc = run_pytest(tmp_path, SOURCE, "--askew-db=db")
    assert proc.returncode == 0, proc.stdout


def test_deeply_nested_json_counts_as_empty(tmp_path: Path) -> None:
    db = SeedDB(tmp_path)
    path = _file_of(db, "t")
    path.write_text('{"test": "t", "seeds": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert db.seeds("t") == []
    db.record("t", 4, [])
    assert db.seeds("t") == [4]


def test_a_file_too_big_or_not_a_regular_file_counts_as_empty(tmp_path: Path) -> None:
    db = SeedDB(tmp_path)
    path = _file_of(db, "t")
    rows = [[1, 0]] + [[2, 0]] * (seeddb.READ_MAX // 6)
    path.write_text(json.dumps({"test": "t", "seeds": rows}))
    assert db.seeds("t") == []
    path.unlink()
    os.mkfifo(path)  # a read would wait for a writer forever
    assert db.seeds("t") == []
    path.unlink()
    path.mkdir()
    assert db.seeds("t") == []
    db.record("t", 3, [])  # cannot replace a directory: keeps nothing, raises nothing


def test_a_test_keeps_its_newest_seeds_only(tmp_path: Path) -> None:
    db = SeedDB(tmp_path)
    for seed in range(seeddb.KEPT + 5):
        db.record("t", seed, [])
    assert db.seeds("t") == list(range(5, seeddb.KEPT + 5))


_RECORDER = """
import sys, time
from pathlib import Path
from askew._run.seeddb import SeedDB
root, first, count, go = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():  # start together
    time.sleep(0.001)
db = SeedDB(root)
for seed in range(first, first + count):
    db.record("test_mod.py::test_x", seed, [])
"""


@pytest.mark.parametrize("race", range(3))  # a lost seed needs a close race: try a few
def test_concurrent_sessions_lose_no_seed(tmp_path: Path, race: int) -> None:
    sessions, each = 4, seeddb.KEPT // 4
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RECORDER, str(tmp_path), str(k * 1000), str(each), str(go)]
        )
        for k in range(sessions)
    ]
    go.touch()
    assert [p.wait(timeout=hang_guard(120)) for p in procs] == [0] * sessions
    kept = SeedDB(tmp_path).seeds("test_mod.py::test_x")
    assert sorted(kept) == [k * 1000 + i for k in range(sessions) for i in range(each)]
    assert not list((tmp_path / "seeds").glob(".*.tmp"))  # no temporary file left


def test_a_lock_held_too_long_keeps_nothing_and_fails_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = SeedDB(tmp_path)
    db.record("t", 1, [])
    monkeypatch.setattr(seeddb, "LOCK_WAIT", 0.05)
    with open(tmp_path / "seeds" / "lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another session, stuck mid-record
        db.record("t", 2, [])
    assert db.seeds("t") == [1]
    db.record("t", 2, [])
    assert db.seeds("t") == [1, 2]
