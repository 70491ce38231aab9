# SPDX-License-Identifier: Apache-2.0
"""The wall epoch (RunConfig.wall_epoch, docs/design.md "The wall epoch"):
what a run's wall clocks read at virtual time 0. Every route that sets a
knob sets it, every wall clock of a run reads it (Python's and, under
askew-exec, C's), replays carry it, bad values are refused naming them,
and the default, 2020-01-01, leaves every trace as it was."""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import json
import logging
import os
import re
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_exec, run_pytest, run_sim

import askew
from askew import _core
from askew._loop.config import RunConfig, check_wall_epoch
from askew._loop.settings import parse_wall_epoch
from askew._run import wrap as _wrap
from askew._run.exec import parse_args

pytestmark = pytest.mark.usefixtures("clean_env")

UTC = datetime.UTC
Y2026 = 1767225600  # 2026-01-01T00:00:00Z
REPO = Path(__file__).resolve().parents[2]
PRELOAD = REPO / "askew" / "libaskew-preload.so"
needs_preload = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not PRELOAD.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)


async def _wall_now() -> float:
    return time.time()  # a callback's seeded CPU time (microseconds) after the epoch


async def _nothing(world: askew.World) -> None:
    pass


# ---- the default ---------------------------------------------------------------------


def test_the_default_epoch_is_2020_01_01_everywhere() -> None:
    assert _core.WALL_EPOCH == 1577836800
    assert RunConfig().wall_epoch == datetime.datetime(2020, 1, 1, tzinfo=UTC)
    assert RunConfig().wall_epoch_ns == _core.WALL_EPOCH * 10**9
    assert askew.run(_wall_now()) == pytest.approx(_core.WALL_EPOCH, abs=1e-3)


# ---- the forms it takes, and what it refuses ------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        Y2026,
        float(Y2026),
        "2026-01-01",
        "2026-01-01T00:00:00Z",
        "2026-01-01T01:00:00+01:00",
        datetime.datetime(2026, 1, 1, tzinfo=UTC),
        datetime.datetime(2025, 12, 31, 19, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
        datetime.date(2026, 1, 1),
    ],
)
def test_every_form_of_one_instant_is_the_same_epoch(value: Any) -> None:
    assert check_wall_epoch(value) == datetime.datetime(2026, 1, 1, tzinfo=UTC)
    assert RunConfig(wall_epoch=value).wall_epoch_ns == Y2026 * 10**9


def test_text_takes_unix_seconds_and_iso_8601_alike() -> None:
    for text in (str(Y2026), f" {Y2026}.0 ", "2026-01-01", "2026-01-01T00:00:00Z"):
        assert parse_wall_epoch(text, "ASKEW_WALL_EPOCH").timestamp() == Y2026
    assert parse_wall_epoch("1767225600.25", "x").timestamp() == Y2026 + 0.25


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (datetime.datetime(2026, 1, 1), ValueError, "must be a timezone-aware datetime"),
        ("2026-01-01T00:00:00", ValueError, "must name its time zone: '2026-01-01T00:00:00'"),
        ("next tuesday", ValueError, "ISO-8601 date or datetime (2026-01-01, "),
        (-1, ValueError, "must be from 1970-01-01T00:00:00Z to 2116-02-20T23:53:38"),
        ("1969-12-31", ValueError, "got '1969-12-31'"),
        (2**62, ValueError, "the epoch plus 2**62 ns of virtual time must fit int64"),
        ("2200-01-01T00:00:00Z", ValueError, "got '2200-01-01T00:00:00Z'"),
        (float("nan"), ValueError, "must be a finite number of seconds"),
        (True, TypeError, "not bool True"),
        ([2026], TypeError, "not list [2026]"),
    ],
)
def test_a_bad_epoch_is_refused_at_the_call_naming_it(value: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=re.escape(words)):
        askew.simulate(wall_epoch=value)
    with pytest.raises(error, match=re.escape(words)):
        askew.new_event_loop(wall_epoch=value)


def test_a_bad_askew_wall_epoch_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_WALL_EPOCH", "2026-13-01")
    with pytest.raises(ValueError, match=r"ASKEW_WALL_EPOCH must be .*got '2026-13-01'"):
        run_sim(_nothing)


def test_the_latest_epoch_still_reads_all_of_virtual_time() -> None:
    latest = _core.WALL_EPOCH_MAX_NS // 1000 * 1000  # the microseconds a datetime keeps
    loop = askew.new_event_loop(wall_epoch=latest / 1e9)
    try:
        assert loop._config.wall_epoch_ns <= _core.WALL_EPOCH_MAX_NS
    finally:
        loop.close()
    with pytest.raises(ValueError, match="wall_epoch must be in"):  # C checks it too
        askew.new_event_loop()._configure("fifo", 1, 1, 0, (0, 0), (0, 0), 1, 1, 2**62)


# ---- the routes ----------------------------------------------------------------------


def _wall_at_start(**config: Any) -> float:
    seen = []

    async def body(world: askew.World) -> None:
        seen.append(time.time())

    run_sim(body, **config)
    return seen[0]


def test_the_decorator_sets_it_and_askew_wall_epoch_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _wall_at_start(wall_epoch="2026-01-01") == pytest.approx(Y2026, abs=1e-3)
    monkeypatch.setenv("ASKEW_WALL_EPOCH", "2030-01-01T00:00:00Z")
    assert _wall_at_start(wall_epoch="2026-01-01") == pytest.approx(1893456000, abs=1e-3)


def test_a_bare_loop_takes_it_as_simulate_does() -> None:
    assert askew.run(_wall_now(), wall_epoch="2026-01-01") == pytest.approx(Y2026, abs=1e-3)
    # A new loop: the default again.
    assert askew.run(_wall_now()) == pytest.approx(_core.WALL_EPOCH, abs=1e-3)


def test_askew_exec_takes_wall_epoch_as_a_wrap_option() -> None:
    settings, _, _ = parse_args(["--wrap", "--wall-epoch", "2026-01-01", "pytest"])
    assert settings["ASKEW_WALL_EPOCH"] == "2026-01-01T00:00:00Z"
    settings, _, _ = parse_args(["--wrap", f"--wall-epoch={Y2026}", "pytest"])
    assert settings["ASKEW_WALL_EPOCH"] == "2026-01-01T00:00:00Z"


_SIMULATED = """
import asyncio, datetime, time
import askew

@askew.simulate(seed=1, iterations=1)
async def test_fails_on_the_wall_clock(world):
    await asyncio.sleep(1)
    assert datetime.datetime.now(datetime.UTC).year == 2020, time.time()
"""


def test_the_plugin_option_reaches_a_simulated_test_and_its_replay(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, _SIMULATED, "--askew-wall-epoch=2026-01-01")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"AssertionError: {Y2026 + 1}" in proc.stdout
    replay = re.search(r"replay: (.*)", proc.stdout)
    assert replay is not None
    assert replay.group(1).startswith("ASKEW_WALL_EPOCH=2026-01-01T00:00:00Z ")
    env_word = replay.group(1).split()[0]
    again = run_pytest(tmp_path, _SIMULATED, env=dict([env_word.split("=")]))
    assert f"AssertionError: {Y2026 + 1}" in again.stdout


def test_replay_run_carries_the_decorators_epoch() -> None:
    @askew.simulate(seed=7, iterations=1, wall_epoch="2026-01-01")
    async def fails(world: askew.World) -> None:
        await asyncio.sleep(2)
        raise RuntimeError(f"at {time.time()}")

    with pytest.raises(askew.SimulationFailure) as first:
        fails()
    with pytest.raises(askew.SimulationFailure) as again:
        askew.Replay.run(fails, seed=first.value.seed)
    assert f"RuntimeError: at {Y2026 + 2}" in first.value.report
    assert first.value.trace_hash == again.value.trace_hash


_WRAPPED = """
import asyncio, time

def test_reads_the_wall_clock():
    async def main():
        await asyncio.sleep(3)
        return int(time.time())
    assert asyncio.run(main()) == 0
"""


def test_wrap_mode_takes_it_and_its_replay_command_carries_it(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, _WRAPPED, "--askew-wrap", "--askew-wall-epoch", "2026-01-01")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"assert {Y2026 + 3} == 0" in proc.stdout
    assert "--askew-wall-epoch=2026-01-01T00:00:00Z test_mod.py::" in proc.stdout
    plain = _wrap.WrappedRun("t.py::test_z", 5)
    assert "wall-epoch" not in plain.replay  # the default is not written out


# ---- every clock of a run reads it --------------------------------------------------


def test_every_python_wall_clock_of_a_node_reads_epoch_plus_now(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    async def node(n: Any) -> None:
        await asyncio.sleep(1.5)
        with open("/data/f", "w") as f:
            f.write("x")
        seen["mtime_ns"] = os.stat("/data/f").st_mtime_ns
        seen["time_ns"] = time.time_ns()
        seen["now"] = datetime.datetime.now(UTC)
        seen["gmtime"] = time.gmtime()[:6]
        logging.getLogger("askew.epoch.test").warning("now")
        seen["loop"] = asyncio.get_running_loop().time()

    async def body(world: askew.World) -> None:
        world.spawn(node, disk="/data")
        await asyncio.sleep(5)

    logger = logging.getLogger("askew.epoch.test")
    logger.addHandler(keep := Keep())
    try:
        run_sim(body, wall_epoch="2026-01-01")
    finally:
        logger.removeHandler(keep)
    now_ns = round(seen["loop"] * 1e9)
    assert seen["time_ns"] == Y2026 * 10**9 + now_ns
    assert seen["now"] == datetime.datetime.fromtimestamp(seen["time_ns"] / 1e9, UTC)
    assert seen["gmtime"] == (2026, 1, 1, 0, 0, 1)
    assert Y2026 * 10**9 + 1_500_000_000 <= seen["mtime_ns"] <= seen["time_ns"]
    assert records[0].created == pytest.approx(seen["time_ns"] / 1e9, abs=1e-6)
    assert records[0].relativeCreated == pytest.approx(seen["loop"] * 1000)


def test_a_skew_applies_on_top_of_the_epoch() -> None:
    seen = []

    async def node(n: Any) -> None:
        await asyncio.sleep(10)
        seen.append(time.time())

    async def body(world: askew.World) -> None:
        world.faults.skew(world.spawn(node), offset=-30)
        await asyncio.sleep(20)

    run_sim(body, wall_epoch="2026-01-01")
    assert seen == [pytest.approx(Y2026 + 10 - 30)]


def test_a_wall_clock_stepped_before_1970_reads_1970_in_python_as_in_c() -> None:
    seen: list[Any] = []

    async def node(n: Any) -> None:
        await asyncio.sleep(10)
        seen.extend([time.time(), time.time_ns(), datetime.datetime.now(UTC)])

    async def body(world: askew.World) -> None:
        world.faults.skew(world.spawn(node), offset=-30)  # 20 s before the epoch
        await asyncio.sleep(20)

    run_sim(body, wall_epoch=0)
    # Linux's CLOCK_REALTIME is never set before 1970, and askew's C clock
    # holds it there (askew__loop_unix_ns): Python's clocks agree.
    assert seen == [0.0, 0, datetime.datetime(1970, 1, 1, tzinfo=UTC)]


_C_CLOCKS = """
import asyncio, ctypes, datetime, json, os, struct, sys, time
import askew

libc = ctypes.CDLL(None, use_errno=True)

class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

def c_realtime_ns():
    ts = Timespec()
    assert libc.clock_gettime(0, ctypes.byref(ts)) == 0  # CLOCK_REALTIME
    return ts.tv_sec * 10**9 + ts.tv_nsec

def c_mtime_ns(path):
    buf = ctypes.create_string_buffer(256)  # struct statx
    rc = libc.statx(-100, path.encode(), 0, 0x40, buf)  # AT_FDCWD, STATX_MTIME
    assert rc == 0, ctypes.get_errno()
    sec, nsec = struct.unpack_from("qI", buf, 112)  # stx_mtime
    return sec * 10**9 + nsec

out = {}
async def node(n):
    await asyncio.sleep(1.25)
    with open("/data/f", "w") as f:
        f.write("x")
    out["py_mtime"] = os.stat("/data/f").st_mtime_ns
    out["c_mtime"] = c_mtime_ns("/data/f")
    out["py"] = time.time_ns()
    out["c"] = c_realtime_ns()
    out["c_time"] = libc.time(None)
    out["loop"] = round(asyncio.get_running_loop().time() * 1e9)

async def body(world):
    world.spawn(node, disk="/data")
    await asyncio.sleep(5)

askew.simulate(seed=2, iterations=1)(body)()
print(json.dumps(out))
"""


def _under_askew_exec(code: str, *args: str, **env: str) -> str:
    """`python -c code args` under askew-exec, as tests/disk/test_disk_preload.py
    runs its programs; its stdout."""
    proc = run_exec([sys.executable, "-c", code, *args], ASKEW_SHRINK="0", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@needs_preload
@pytest.mark.parametrize("epoch", [None, "2026-01-01"])
def test_c_clocks_and_c_stat_agree_with_python_under_askew_exec(epoch: str | None) -> None:
    env = {} if epoch is None else {"ASKEW_WALL_EPOCH": epoch}
    out = json.loads(_under_askew_exec(_C_CLOCKS, **env))
    start = _core.WALL_EPOCH if epoch is None else Y2026
    assert out["c"] == out["py"] == start * 10**9 + out["loop"]
    assert out["c_time"] == start + 1
    assert out["c_mtime"] == out["py_mtime"]
    assert start * 10**9 + 1_250_000_000 <= out["c_mtime"] <= out["py"]


# ---- TLS: a certificate issued after 2020 ----------------------------------------------

_HANDSHAKE = """
import asyncio, json, os, ssl, sys
import askew

os.environ["ASKEW_CHECK_REPLAY"] = "0"  # one handshake: the seed is not re-run alone

ca, cert, key = sys.argv[1:4]
out = []

async def serve(node):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    node.server = await asyncio.start_server(lambda r, w: None, None, 443, ssl=ctx)
    await asyncio.sleep(1e9)

async def talk(node):
    try:
        await asyncio.open_connection("node-0", 443, ssl=ssl.create_default_context(cafile=ca))
        out.append("ok")
    except ssl.SSLCertVerificationError as exc:
        out.append(exc.verify_message)
        raise

@askew.simulate(seed=1, iterations=1)
async def body(world):
    world.spawn(serve)
    world.spawn(talk)
    await asyncio.sleep(5)

try:
    body()
except askew.SimulationFailure as exc:
    out.append([line.strip() for line in exc.report.splitlines() if "note:" in line])
print(json.dumps(out))
"""


def _certificates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """The test CA and server certificate (scripts/make_test_certs.py), valid
    from 2025 to 2099 instead of from 2000: (ca, server cert, server key)."""
    spec = importlib.util.spec_from_file_location("certs", REPO / "scripts" / "make_test_certs.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script, "NOT_BEFORE", datetime.datetime(2025, 1, 1, tzinfo=UTC))
    script.main(tmp_path)
    return tuple(str(tmp_path / name) for name in ("ca.pem", "server.pem", "server.key"))


@needs_preload
def test_a_certificate_issued_after_2020_fails_by_default_and_passes_with_the_epoch_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _certificates(tmp_path, monkeypatch)
    refused, notes = json.loads(_under_askew_exec(_HANDSHAKE, *files))
    assert refused == "certificate is not yet valid"
    assert notes == [
        "note: the simulation's wall clock reads 2020-01-01 (plus virtual time), where the "
        "certificate is not yet valid; set wall_epoch= (ASKEW_WALL_EPOCH, "
        "--askew-wall-epoch) to a date inside its validity"
    ]
    assert json.loads(_under_askew_exec(_HANDSHAKE, *files, ASKEW_WALL_EPOCH="2026-01-01")) == [
        "ok"
    ]
    expired = json.loads(_under_askew_exec(_HANDSHAKE, *files, ASKEW_WALL_EPOCH="2100-01-01"))
    assert expired[0] == "certificate has expired"
    assert (
        "reads 2100-01-01 (plus virtual time), where the certificate has expired" in expired[1][0]
    )


def test_the_certificate_note_finds_the_error_among_the_causes() -> None:
    from askew._report.report import _certificate_note
    from askew._run.wrap import wrapped_replay

    err = ssl.SSLCertVerificationError(1, "certificate verify failed")
    err.verify_message = "certificate has expired"
    try:
        try:
            raise err
        except ssl.SSLError as exc:
            raise ConnectionError("handshake failed") from exc
    except ConnectionError as outer:
        failure = outer
    note = _certificate_note(failure, RunConfig(wall_epoch="2026-06-01T12:00:00Z"))
    assert note is not None and note.startswith(
        "the simulation's wall clock reads 2026-06-01T12:00:00Z (plus virtual time), "
        "where the certificate has expired"
    )
    assert _certificate_note(ValueError("expired"), RunConfig()) is None
    # A wrapped test's "askew replay" section notes it too.
    section = wrapped_replay(_wrap.WrappedRun("t.py::test_z", 5), failure)
    assert "note: the simulation's wall clock reads 2020-01-01 (plus" in section
