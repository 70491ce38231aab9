# SPDX-License-Identifier: Apache-2.0
"""The seed database (askew/_run/seeddb.py): a simulated test's failing seed is
remembered under pytest's rootdir (.askew/, or --askew-db / ASKEW_DB), the
next session runs it alone before the sweep, and it is forgotten after
passing PASSES_TO_FORGET sessions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_pytest

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
    (file,) = (tmp_path / "seeds").iterdir()
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
