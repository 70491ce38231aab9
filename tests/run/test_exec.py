# SPDX-License-Identifier: Apache-2.0
"""askew-exec: its command line, the environment it hands on, and running
real programs (bash, coreutils, pytest with xdist workers and a
pytest-timeout thread) under the preload.

The command line is tested in process; everything that runs a command does
so in a child, through `python -m askew._run.exec`, which is what the
`askew-exec` script calls.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import hang_guard

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.find_spec("askew")
assert _spec is not None and _spec.submodule_search_locations is not None
ASKEW_DIR = Path(next(iter(_spec.submodule_search_locations)))
LIB = ASKEW_DIR / "libaskew-preload.so"
TIMEOUT = hang_guard(300)

needs_lib = pytest.mark.skipif(not LIB.is_file(), reason="needs the built preload (run `make`)")


def _cli_importable() -> bool:
    proc = subprocess.run(
        [sys.executable, "-c", "import askew._run.exec"], capture_output=True, timeout=TIMEOUT
    )
    return proc.returncode == 0


needs_cli = pytest.mark.skipif(not _cli_importable(), reason="askew does not import yet")


def askew_exec(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    if env is None:
        base = dict(os.environ)
        base.pop("LD_PRELOAD", None)
    else:
        base = env
    return subprocess.run(
        [sys.executable, "-m", "askew._run.exec", *args],
        env=base,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


# ---- the command line, in process ------------------------------------------------


@needs_cli
class TestCommandLine:
    def test_settings_become_askew_environment_variables(self) -> None:
        from askew._run.exec import parse_args

        settings, check, command = parse_args(
            ["--seed", "42", "--iterations=7", "--wrap", "--", "pytest", "-x"]
        )
        assert settings == {"ASKEW_SEED": "42", "ASKEW_ITERATIONS": "7", "ASKEW_WRAP": "1"}
        assert not check
        assert command == ["pytest", "-x"]

    def test_askew_exec_accepts_seeds(self) -> None:
        from askew._run.exec import parse_args

        settings, _, command = parse_args(["--wrap", "--seeds", "20", "pytest"])
        assert settings == {"ASKEW_WRAP": "1", "ASKEW_SEEDS": "20"}
        assert command == ["pytest"]

    def test_wrap_options_become_askew_environment_variables(self) -> None:
        from askew._run.exec import parse_args

        settings, _, _ = parse_args(
            ["--wrap", "--strategy", "shuffle", "--cpu=0,2e-5", "--overshoot", " 1e-6 , 1e-4",
             "--max-steps=5000", "--max-time", "60", "--executor=refuse", "pytest"]
        )  # fmt: skip
        assert settings == {
            "ASKEW_WRAP": "1",
            "ASKEW_STRATEGY": "shuffle",
            "ASKEW_CPU": "0.0,2e-05",
            "ASKEW_OVERSHOOT": "1e-06,0.0001",
            "ASKEW_MAX_STEPS": "5000",
            "ASKEW_MAX_TIME": "60.0",
            "ASKEW_EXECUTOR": "refuse",
        }

    def test_the_command_starts_at_the_first_non_option(self) -> None:
        from askew._run.exec import parse_args

        assert parse_args(["python", "--seed", "3"])[2] == ["python", "--seed", "3"]

    @pytest.mark.parametrize(
        ("argv", "named"),
        [
            (["--seed", "-1", "true"], "'-1'"),
            (["--seed", str(2**64), "true"], str(2**64)),
            (["--seed", "abc", "true"], "'abc'"),
            (["--iterations", "0", "true"], "'0'"),
            (["--iterations"], "--iterations needs a value"),
            (["--wrap", "--seeds", "0", "true"], "--seeds must be >= 1, got '0'"),
            (["--wrap", "--strategy", "random", "true"], "faithful, fifo, interleave, shuffle"),
            (["--wrap", "--cpu", "5", "true"], "--cpu must be LO,HI in seconds"),
            (["--wrap", "--overshoot=2,1", "true"], "got '2,1'"),
            (["--wrap", "--max-steps", "1.5", "true"], "--max-steps must be a positive integer"),
            (["--wrap", "--max-time", "-1", "true"], "--max-time must be a number of seconds > 0"),
            (["--wrap", "--executor", "thread", "true"], "must be one of refuse, inline"),
            (["--seeds", "3", "true"], "--seeds applies to wrapped tests: add --wrap"),
            (["--executor", "inline", "true"], "--executor applies to wrapped tests: add --wrap"),
            (["--frobnicate", "true"], "'--frobnicate'"),
            ([], "no command"),
            (["--check", "true"], "'true'"),
        ],
    )
    def test_bad_arguments_are_a_usage_error_naming_the_value(
        self, argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from askew._run.exec import main

        assert main(argv) == 2
        err = capsys.readouterr().err
        assert named in err
        assert err.startswith("askew-exec: error: ")

    def test_ld_preload_keeps_existing_entries_first(self) -> None:
        from askew._loop.preload import ld_preload_with

        assert ld_preload_with(None, "/a/lib.so") == "/a/lib.so"
        assert ld_preload_with("/asan.so", "/a/lib.so") == "/asan.so:/a/lib.so"
        assert ld_preload_with("/x.so /y.so", "/a/lib.so") == "/x.so:/y.so:/a/lib.so"
        assert ld_preload_with("/a/lib.so:/x.so", "/a/lib.so") == "/a/lib.so:/x.so"

    @pytest.mark.parametrize("bad", ["/tmp/my env/askew/lib.so", "/opt/a:b/lib.so"])
    def test_a_path_ld_preload_cannot_carry_is_refused_by_name(self, bad: str) -> None:
        from askew._loop.preload import PreloadPathError, check_preload_path

        with pytest.raises(PreloadPathError, match=bad.replace("/", ".")):
            check_preload_path(bad)

    @needs_lib
    def test_pythonhashseed_is_fixed_unless_the_user_set_it(self) -> None:
        from askew._run.exec import child_environ

        assert child_environ({}, base={})["PYTHONHASHSEED"] == "0"
        assert child_environ({}, base={"PYTHONHASHSEED": "123"})["PYTHONHASHSEED"] == "123"


# ---- running commands ------------------------------------------------------------------


@needs_cli
@needs_lib
def test_the_command_gets_the_preload_settings_and_its_exit_status_is_ours() -> None:
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    env.pop("LD_PRELOAD", None)
    proc = askew_exec(
        "--seed",
        "5",
        "--iterations",
        "3",
        "--wrap",
        "--",
        sys.executable,
        "-c",
        "import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in "
        "('LD_PRELOAD', 'PYTHONHASHSEED', 'ASKEW_SEED', 'ASKEW_ITERATIONS', 'ASKEW_WRAP')}));"
        " sys.exit(7)",
        env=env,
    )
    assert proc.returncode == 7, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen == {
        "LD_PRELOAD": str(LIB),
        "PYTHONHASHSEED": "0",
        "ASKEW_SEED": "5",
        "ASKEW_ITERATIONS": "3",
        "ASKEW_WRAP": "1",
    }


@needs_cli
@needs_lib
def test_check_reports_a_live_preload() -> None:
    proc = askew_exec("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "preload live" in proc.stdout and str(LIB) in proc.stdout


@needs_cli
@needs_lib
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_check_reports_another_preload_that_comes_first(tmp_path: Path) -> None:
    shadow = tmp_path / "libshadow.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(shadow), str(REPO / "tests/c/probe_shadow.c"), "-ldl"],
        check=True,
    )
    proc = askew_exec("--check", env=dict(os.environ, LD_PRELOAD=str(shadow)))
    assert proc.returncode == 1
    assert "not live" in proc.stdout and "libshadow.so" in proc.stdout


@needs_cli
@needs_lib
def test_a_package_path_with_a_space_is_refused_naming_it(tmp_path: Path) -> None:
    pkg = tmp_path / "with space" / "askew"
    for name in ("_run/exec.py", "_loop/config.py", "_loop/preload.py", "libaskew-preload.so"):
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ASKEW_DIR / name, pkg / name)
    for init in ("__init__.py", "_run/__init__.py", "_loop/__init__.py"):
        (pkg / init).write_text("")
    env = dict(os.environ, PYTHONPATH=str(pkg.parent))
    proc = askew_exec("true", env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert str(pkg / "libaskew-preload.so") in proc.stderr
    assert "space" in proc.stderr


@needs_cli
@needs_lib
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_and_coreutils_run_unchanged_under_askew_exec(tmp_path: Path) -> None:
    script = "set -e; date +%Y >/dev/null; ls / >/dev/null; echo b a | tr ' ' '\\n' | sort"
    script += "; sleep 0.01; mktemp -p . >/dev/null; wc -l < /etc/hostname >/dev/null; echo done"
    plain = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    under = askew_exec("--", "bash", "-c", script, cwd=tmp_path)
    assert under.returncode == plain.returncode == 0
    assert under.stdout == plain.stdout == "a\nb\ndone\n"
    assert under.stderr == ""


@needs_cli
@needs_lib
def test_a_missing_command_exits_127() -> None:
    proc = askew_exec("askew-no-such-command-here")
    assert proc.returncode == 127
    assert "askew-no-such-command-here" in proc.stderr


_INNER_TEST = """
import os, threading, time

def test_worker_has_the_preload():
    assert os.environ["LD_PRELOAD"].endswith("libaskew-preload.so")
    assert os.environ["PYTHONHASHSEED"] == "0"
    import askew
    assert askew.preload_active()

def test_real_time_outside_a_run():
    assert time.time() > 1.6e9

def test_simulation_under_a_watchdog_thread():
    import askew
    async def main():
        return time.time()
    assert askew.run(main(), seed=3, strategy="fifo") == askew._core.WALL_EPOCH
    assert threading.active_count() >= 1
"""


def _pytest_under_askew(tmp_path: Path, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(_INNER_TEST))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(REPO)) if p)
    return askew_exec(
        "--",
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp_path),
        *pytest_args,
        str(tmp_path / "test_inner.py"),
        env=env,
        cwd=tmp_path,
    )


@needs_cli
@needs_lib
@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist")
def test_pytest_xdist_workers_inherit_the_preload(tmp_path: Path) -> None:
    proc = _pytest_under_askew(tmp_path, "-n", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


@needs_cli
@needs_lib
@pytest.mark.skipif(
    importlib.util.find_spec("pytest_timeout") is None, reason="needs pytest-timeout"
)
def test_pytest_timeouts_thread_keeps_working_beside_a_simulation(tmp_path: Path) -> None:
    proc = _pytest_under_askew(
        tmp_path, f"--timeout={hang_guard(120):g}", "--timeout-method=thread"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


# ---- askew-exec --wrap, end to end --------------------------------------------------

FIXTURES = REPO / "tests" / "wrap_fixtures"


def _wrapped_pytest(*exec_args: str, nodeid: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(REPO)) if p)
    return askew_exec(
        *exec_args, "--", sys.executable, "-m", "pytest", "-p", "askew", "-p", "no:cacheprovider",
        nodeid, env=env, cwd=FIXTURES,
    )  # fmt: skip


@needs_cli
@needs_lib
def test_askew_exec_wrap_iterations_runs_that_many_seeds_per_wrapped_test() -> None:
    # FLAKY depends on asyncio's order: under "interleave" some seeds fail.
    proc = _wrapped_pytest(
        "--wrap", "--iterations", "12", "--strategy", "interleave", "--seed", "11",
        nodeid="test_flaky.py::test_workers_alternate",
    )  # fmt: skip
    assert "12 seeds per test, strategy interleave" in proc.stdout, proc.stdout + proc.stderr
    assert re.search(r"\b\d+ of 12 seeds fail this test:", proc.stdout), proc.stdout


@needs_cli
@needs_lib
def test_askew_exec_wrap_options_reach_the_wrapped_tests() -> None:
    proc = _wrapped_pytest(
        "--wrap", "--seeds", "2", "--executor", "refuse", "--max-steps", "5000",
        "--cpu", "0,1e-5", "--seed", "7",
        nodeid="test_threads.py::test_blocking_work_in_to_thread",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 seeds per test, strategy faithful, executor refuse" in proc.stdout
    assert "NondeterminismError: run_in_executor(sum)" in proc.stdout
    assert (
        # Under askew-exec: its replay is one too.
        "ASKEW_SEED=7 askew-exec pytest --askew-wrap --askew-cpu=0.0,1e-05 --askew-max-steps=5000 "
        "--askew-executor=refuse test_threads.py::test_blocking_work_in_to_thread"
    ) in proc.stdout


def test_the_launcher_imports_neither_asyncio_nor_the_extension() -> None:
    # askew-exec's start-up is paid by every command it runs: a plain
    # `askew-exec pytest` must not import asyncio, askew._core, askew's
    # config (dataclasses, inspect), subprocess or typing.
    code = textwrap.dedent(
        """
        import sys
        from askew._run.exec import child_environ, parse_args
        settings, check, command = parse_args(["pytest", "-q"])
        env = child_environ(settings, {})
        heavy = {"asyncio", "askew._core", "askew._loop.config", "subprocess", "typing"}
        print(sorted(heavy & set(sys.modules)), command, "LD_PRELOAD" in env)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    ).stdout
    assert out.strip() == "[] ['pytest', '-q'] True"


def test_the_public_names_are_there_on_first_use() -> None:
    code = "import askew; print(askew.simulate.__name__, askew.NondeterminismError.__name__)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    ).stdout
    assert out.split() == ["simulate", "NondeterminismError"]


# ---- a random generator the preload cannot reach -------------------------------------

_OWN_OPENSSL = """
import json, os, askew
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

def public(key):
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

out = {}
async def from_urandom():  # the run's entropy: the same key in every process
    out["urandom"] = public(ed25519.Ed25519PrivateKey.from_private_bytes(os.urandom(32)))

async def generate():  # OpenSSL's own generator inside cryptography's object
    out["generated"] = public(ed25519.Ed25519PrivateKey.generate())

askew.run(from_urandom(), seed=7)
try:
    askew.run(generate(), seed=7)
except askew.NondeterminismError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""


@needs_lib
@needs_cli
def test_a_key_from_an_object_carrying_its_own_openssl_is_refused_and_urandom_keys_replay() -> None:
    pytest.importorskip("cryptography")
    runs = []
    for _ in range(2):
        proc = askew_exec("python", "-c", _OWN_OPENSSL)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["urandom"] == second["urandom"]
    for run in runs:
        assert "error" in run, "a key from OpenSSL's own generator did not fail its run"
        head = run["error"].splitlines()[0]
        assert "from " in head and "cryptography" in head, head
        assert "carries its own OpenSSL" in run["error"]
        assert "os.urandom" in run["error"]
