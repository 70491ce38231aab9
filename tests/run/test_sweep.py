# SPDX-License-Identifier: Apache-2.0
"""`askew sweep` (worker processes, shards, failures by signature) and the
progress line and summary a pytest sweep shows.

The sweep tests import a small test module written to tmp_path, as the
command does, and run it in real worker processes; the progress line is
read from a pytest run under a pseudo-terminal.
"""

from __future__ import annotations

import fcntl
import io
import itertools
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import tomllib
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import hang_guard, run_pytest
from sweep_target import child_env, installed, options

import askew
from askew._run import sweep as _sweep
from askew._run import workers as _workers
from askew._run.runner import iteration_seed, run_iterations
from askew.errors import SimulationFailure


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None) -> Iterator[Path]:
    with installed(tmp_path, monkeypatch) as path:
        yield path


def python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run this Python in a child without the shell's ASKEW_* settings."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )


def failing_iterations(result: _sweep.SweepResult) -> set[int]:
    return {f.iteration for f in result.failures}


# ---- askew sweep ------------------------------------------------------------


def test_two_workers_fail_exactly_the_iterations_one_process_fails(target: Path) -> None:
    test_id = f"{target.name}::test_leader_election"
    result = _sweep.run_sweep(options(test_id, 60), out=io.StringIO())
    assert result.ran == 60 and result.base == 1337
    test = _sweep.resolve(test_id)
    outcomes, _ = run_iterations(test, 1337, 0, 60)
    in_process = {o.iteration for o in outcomes if o.headline is not None}
    assert failing_iterations(result) == in_process
    assert {(f.iteration, f.seed) for f in result.failures} == {
        (i, iteration_seed(1337, i)) for i in in_process
    }
    # And seed by seed through the public replay, as its command runs it.
    replayed = set()
    for i in range(60):
        try:
            askew.Replay.run(test, iteration_seed(1337, i))
        except SimulationFailure:
            replayed.add(i)
    assert replayed == in_process
    assert 0 < len(in_process) < 60  # the test is worth sweeping


def test_failures_group_by_signature_with_the_smallest_seed_of_each(target: Path) -> None:
    test_id = f"{target.name}::test_leader_election"
    out = io.StringIO()
    result = _sweep.run_sweep(options(test_id, 120, base=5), out=out)
    groups = result.groups()
    assert len(groups) == 2, groups.keys()
    for signature, members in groups.items():
        assert signature.startswith(f"AssertionError at {target.name}:")
        assert members[0].seed == min(f.seed for f in result.failures if f.signature == signature)
    text = _sweep.summary(result)
    assert "2 distinct signature(s)" in text
    assert "buggify 'split-check'" in text  # the coverage of the whole sweep
    printed = out.getvalue()
    assert printed.count("new signature:") == 2
    # Each signature's first ten as they arrive; the rest counted in the summary.
    assert printed.count("FAIL seed=") == sum(min(len(m), 10) for m in groups.values())
    assert f"{len(result.failures)} failing seed(s)" in text
    assert f"ASKEW_ITERATIONS=1 pytest '{test_id}'" in printed


def test_shards_split_the_iterations_into_contiguous_blocks() -> None:
    for seeds in (1, 7, 100, 2**64):
        for n in (1, 3, 8):
            blocks = [_sweep.shard_range(seeds, (k, n)) for k in range(1, n + 1)]
            assert blocks[0][0] == 0 and blocks[-1][1] == seeds
            assert all(a[1] == b[0] for a, b in itertools.pairwise(blocks))
            assert max(b - a for a, b in blocks) - min(b - a for a, b in blocks) <= 1


def test_the_shards_of_a_sweep_together_fail_what_the_whole_sweep_fails(target: Path) -> None:
    test_id = f"{target.name}::test_leader_election"
    whole = _sweep.run_sweep(options(test_id, 40, workers=1), out=io.StringIO())
    parts = [
        _sweep.run_sweep(options(test_id, 40, workers=1, shard=(k, 3)), out=io.StringIO())
        for k in (1, 2, 3)
    ]
    assert [(p.start, p.stop) for p in parts] == [(0, 13), (13, 26), (26, 40)]
    assert set().union(*map(failing_iterations, parts)) == failing_iterations(whole)


def test_first_stops_at_the_first_failing_iteration_of_all(target: Path) -> None:
    test_id = f"{target.name}::test_leader_election"
    result = _sweep.run_sweep(options(test_id, 2000, first=True), out=io.StringIO())
    assert result.stopped and len(result.failures) == 1 and result.ran < 2000
    first = result.failures[0].iteration
    outcomes, _ = run_iterations(_sweep.resolve(test_id), 1337, 0, first + 1)
    assert [o.iteration for o in outcomes if o.headline is not None] == [first]


def test_ctrl_c_ends_a_sweep_with_the_summary_of_what_ran(target: Path) -> None:
    test_id = f"{target.name}::test_leader_election"
    proc = subprocess.Popen(
        [sys.executable, "-m", "askew", "sweep", test_id, "--seeds", str(10**7), "--workers", "1"],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("FAIL seed="):  # a chunk has come back: the sweep is under way
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=hang_guard(120))
    assert proc.returncode == 130, err
    assert re.search(r"summary: [\d,]+ of iterations \[0, 10000000\) .* \(interrupted\)", out)


def test_a_method_of_a_test_class_is_swept_on_an_instance(target: Path) -> None:
    test_id = f"{target.name}::TestGroup::test_method"
    result = _sweep.run_sweep(options(test_id, 100), out=io.StringIO())
    assert result.ran == 100 and result.base == 5 and result.failures
    assert {f.seed for f in result.failures} == {
        seed for seed in (iteration_seed(5, i) for i in range(100)) if seed % 7 == 0
    }


def test_the_askew_console_script_is_the_sweep_command() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.is_file():  # a checkout
        scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    else:  # make test-installed: the wheel's metadata
        scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["askew"] == "askew._run.sweep:main"
    assert scripts["askew-exec"] == "askew._run.exec:main"


def test_the_base_seed_is_askew_seed_else_the_decorators(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    test_id = f"{target.name}::test_passes"
    assert _sweep.run_sweep(options(test_id, 1), out=io.StringIO()).base == 7
    monkeypatch.setenv("ASKEW_SEED", "99")
    assert _sweep.run_sweep(options(test_id, 1), out=io.StringIO()).base == 99
    assert _sweep.run_sweep(options(test_id, 1, base=3), out=io.StringIO()).base == 3
    monkeypatch.setenv("ASKEW_SEED", "abc")
    with pytest.raises(_sweep.UsageError, match="ASKEW_SEED"):
        _sweep.run_sweep(options(test_id, 1), out=io.StringIO())


@pytest.mark.parametrize(
    "variable", ["ASKEW_CHECK_DETERMINISM", "ASKEW_SUPPRESS", "ASKEW_COVERAGE"]
)
def test_a_bad_askew_value_is_a_usage_error_before_any_worker_starts(
    target: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str
) -> None:
    monkeypatch.setenv(variable, "maybe")
    assert _sweep.main(["sweep", f"{target.name}::test_passes", "--seeds", "5"]) == 2
    assert f"askew sweep: error: {variable} " in capsys.readouterr().err


def test_exit_status_is_0_without_failures_and_1_with(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _sweep.main(["sweep", f"{target.name}::test_passes", "--seeds", "20"]) == 0
    assert "no failures" in capsys.readouterr().out
    args = ["sweep", f"{target.name}::test_leader_election", "--seeds", "20", "--workers", "1"]
    assert _sweep.main(args) == 1
    assert "distinct signature" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["{mod}::nope"], "'nope'"),
        (["missing.py::test_x"], "'missing.py'"),
        (["{mod}::test_plain"], "is not an @askew.simulate test"),
        (["{mod}::node_main"], "is not an @askew.simulate test"),
        (["{mod}::test_with_fixture"], "tmp_path"),
        (["{mod}"], "path/to/test_x.py::test_name"),
        (["{mod}::test_passes", "--workers", "0"], "'0'"),
        (["{mod}::test_passes", "--shard", "3/2"], "'3/2'"),
        (["{mod}::test_passes", "--shard", "0/0"], "'0/0'"),
        (["{mod}::test_passes", "--shard", "x"], "'x'"),
        (["{mod}::test_passes", "--seeds", str(2**64 + 1)], str(2**64 + 1)),
        (["{mod}::test_passes", "--seeds", "ten"], "'ten'"),
        (["{mod}::test_passes", "--base", str(2**64)], str(2**64)),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_value(
    target: Path, capsys: pytest.CaptureFixture[str], args: list[str], named: str
) -> None:
    argv = ["sweep", *(a.format(mod=target.name) for a in args)]
    if "--seeds" not in argv:
        argv += ["--seeds", "5"]
    assert _sweep.main(argv) == 2
    assert named in capsys.readouterr().err


def test_python_dash_m_askew_runs_a_sweep(target: Path) -> None:
    proc = python("-m", "askew", "sweep", f"{target.name}::test_passes", "--seeds", "30")
    assert proc.returncode == 0, proc.stderr
    assert "30 of iterations [0, 30) run from base seed 7" in proc.stdout
    assert "\x1b" not in proc.stderr  # no progress line on a pipe


# ---- pytest: the progress line and the summary ---------------------------------

SWEPT = """\
import askew

@askew.simulate(seed=3, iterations=400)
async def test_swept(world):
    await world.clock.advance(seconds=1)
"""


def _on_a_terminal(cwd: Path, *args: str, status: int = 0, columns: int = 120) -> str:
    """Run this Python with `args` under a pseudo-terminal `columns` wide;
    its output."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in child_env().items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=hang_guard(120)) == status
    return b"".join(chunks).decode()


def _pytest_on_a_terminal(tmp_path: Path, *args: str) -> str:
    """Run pytest on SWEPT under a pseudo-terminal; its output."""
    (tmp_path / "test_mod.py").write_text(SWEPT)
    return _on_a_terminal(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "test_mod.py", *args)


def test_askew_sweep_on_a_terminal_shows_a_live_line_on_stderr(target: Path) -> None:
    test_id = f"{target.name}::test_passes"
    out = _on_a_terminal(target.parent, "-m", "askew", "sweep", test_id, "--seeds", "300")
    assert "\raskew: 300/300 seeds, " in out and " seeds/s, 0 failures, " in out
    assert "\r\x1b[K" in out  # erased before the summary


def test_a_sweep_on_a_terminal_shows_a_live_line_then_erases_it(tmp_path: Path) -> None:
    out = _pytest_on_a_terminal(tmp_path)
    # Drawn after the first seed and once more with the final count.
    assert "\x1b7 askew: 1/400 seeds, " in out
    assert "\x1b8\x1b[K askew: 400/400 seeds, " in out
    assert ", 0 failures, " in out and " elapsed, " in out and " left" in out
    # Erased before pytest writes the test's result on the same line.
    line = next(x for x in out.splitlines() if "test_mod.py" in x and "400/400" in x)
    after = line[line.rindex("\x1b8\x1b[K") :]
    assert "askew:" not in after and "." in after and "[100%]" in after
    assert "test_mod.py::test_swept: 400 of 400 seeds from base seed 3" in out


def test_the_live_line_uses_the_terminals_whole_width(tmp_path: Path) -> None:
    """Read while output is captured, the width would be 80: this line,
    after a long test path, would be cut there."""
    name = "test_a_module_named_at_such_length_that_the_live_line_ends_past_eighty.py"
    (tmp_path / name).write_text(SWEPT)
    out = _on_a_terminal(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", name, columns=200)
    drawn = re.findall(r"\x1b8\x1b\[K (askew: 400/400 seeds, [^\x1b\r\n]*)", out)
    assert drawn and drawn[0].endswith(" left"), out
    line = next(x for x in out.splitlines() if name in x and "400/400" in x)
    assert len(line[: line.index(" left")].replace("\x1b7", "").replace("\x1b8\x1b[K", "")) > 80


def test_quiet_or_a_pipe_shows_no_live_line(tmp_path: Path) -> None:
    assert "seeds/s" not in _pytest_on_a_terminal(tmp_path, "-q")
    proc = run_pytest(tmp_path, SWEPT, "-q")
    assert proc.returncode == 0 and "seeds/s" not in proc.stdout + proc.stderr
    # On a pipe without -q: no live line, and the summary lists the sweep.
    proc = python("-m", "pytest", "-p", "no:cacheprovider", "test_mod.py", cwd=tmp_path)
    assert "test_mod.py::test_swept: 400 of 400 seeds from base seed 3" in proc.stdout
    assert "seeds/s" not in proc.stdout


def test_the_summary_gives_a_sweeps_buggify_and_sometimes_coverage(tmp_path: Path) -> None:
    source = SWEPT.replace(
        "await world.clock.advance(seconds=1)",
        'if askew.buggify("slow-disk"):\n'
        "        await world.clock.advance(seconds=1)\n"
        '    askew.sometimes("late", world.now > 0.5)',
    )
    (tmp_path / "test_mod.py").write_text(source)
    proc = python("-m", "pytest", "-p", "no:cacheprovider", "test_mod.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("test_mod.py::test_swept: "))
    assert line.endswith(
        "400 of 400 seeds from base seed 3; buggify points reached 1, fired 1; "
        "sometimes marks reached 1, true 1"
    )


def test_the_summary_names_the_failing_iteration_and_the_default_stop_is_kept(
    tmp_path: Path,
) -> None:
    source = SWEPT.replace("await world.clock.advance(seconds=1)", "assert world.seed % 3")
    proc = run_pytest(tmp_path, source, "-v")
    assert proc.returncode == 1
    summary = next(x for x in proc.stdout.splitlines() if x.startswith("test_mod.py::test_swept: "))
    done = int(summary.split(": ")[1].split(" of ")[0])
    assert summary.endswith(f", stopped at the failing iteration {done - 1}")
    assert f"iteration={done - 1}," in proc.stdout


def test_the_readme_sweep_command_finds_the_quickstart_failure() -> None:
    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("askew sweep "))
    proc = python("-m", "askew", *command.split()[1:], cwd=repo)
    assert proc.returncode == 1, proc.stderr
    # The seed the README's quickstart report names, found at iteration 2.
    reported = re.search(r"^  \(seed=(\d+), iteration=(\d+),", readme, re.M)
    assert reported is not None
    assert f"FAIL seed={reported[1]} iteration={reported[2]}: " in proc.stdout
    assert "(stopped at the first failure)" in proc.stdout


def test_a_chunk_leaves_its_workers_heap_as_it_found_it(target: Path) -> None:
    """A chunk freezes the worker's heap (a Dask worker's is not the test's)
    instead of collecting it, and unfreezes it after: its garbage is there
    for the next collection, and the chunk fails what run_iterations fails."""
    import gc

    test = _sweep.resolve(f"{target.name}::test_leader_election")
    finalized: list[int] = []

    class Cycle:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            finalized.append(1)

    Cycle()  # garbage of the worker's own, before the chunk
    chunk = _workers.run_chunk(test, 42, 0, 12)
    assert finalized == []  # frozen through the chunk, not collected by it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert finalized == [1]
    outcomes, _coverage = run_iterations(test, 42, 0, 12)
    assert [f.iteration for f in chunk.failures] == [o.iteration for o in outcomes if o.headline]
