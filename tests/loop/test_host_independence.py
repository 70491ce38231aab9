# SPDX-License-Identifier: Apache-2.0
"""A run reads nothing of its host: the time zone is UTC, logging's times
are virtual, CPU-time clocks read virtual time, and the same seed gives the
same trace whatever the host's TZ."""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_sim

import askew

pytestmark = pytest.mark.usefixtures("clean_env")

EPOCH = 1577836800
REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "askew" / "libaskew-preload.so"

_PROBE = """
import datetime, json, logging, time
import askew

out = {}

async def body(world):
    await world.clock.advance(90061.25)
    record = logging.LogRecord("x", logging.INFO, "f.py", 1, "hello", None, None)
    out.update(
        localtime=list(time.localtime()[:6]),
        ctime=time.ctime(),
        strftime=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        naive_from_ts=datetime.datetime.fromtimestamp(time.time()).isoformat(),
        now=datetime.datetime.now().isoformat(),
        created=record.created,
        relative=record.relativeCreated,
        asctime=logging.Formatter("%(asctime)s").format(record),
        hash=world.log.hash,
    )

askew.simulate(seed=7, iterations=1)(body)()
print(json.dumps(out))
"""


def _probe(tz: str, preload: bool = False) -> dict[str, object]:
    # LD_PRELOAD is kept as it is (a sanitizer runtime must stay first); the
    # preload, when asked for, comes after it, as askew-exec puts it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKEW_")}
    env["TZ"] = tz
    env["PYTHONPATH"] = str(REPO)
    if preload:
        env["LD_PRELOAD"] = " ".join(filter(None, [os.environ.get("LD_PRELOAD"), str(LIB)]))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PROBE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_a_run_reads_utc_virtual_datetimes_and_log_times_whatever_the_hosts_time_zone() -> None:
    runs = [_probe(tz) for tz in ("UTC", "America/New_York", "Asia/Kolkata")]
    first = runs[0]
    assert first["localtime"] == [2020, 1, 2, 1, 1, 1]
    assert first["ctime"] == "Thu Jan  2 01:01:01 2020"
    assert first["strftime"] == "2020-01-02 01:01:01 UTC"
    assert str(first["naive_from_ts"]).startswith("2020-01-02T01:01:01")
    assert first["created"] == pytest.approx(EPOCH + 90061.25, abs=1e-3)
    assert first["relative"] == pytest.approx(90061.25 * 1000, abs=1)
    assert str(first["asctime"]).startswith("2020-01-02 01:01:01,")
    assert str(first["now"]).startswith("2020-01-02T01:01:01")
    assert all(r == first for r in runs), runs


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not LIB.is_file() or bool(os.environ.get("ASKEW_ASAN")),
    reason="needs the built preload (which an ASan-built extension cannot load beside)",
)
def test_under_the_preload_datetime_now_is_virtual_utc_whatever_the_hosts_time_zone() -> None:
    runs = [_probe(tz, preload=True) for tz in ("UTC", "America/New_York")]
    assert str(runs[0]["now"]).startswith("2020-01-02T01:01:01")
    assert runs[0] == runs[1]


def test_the_hosts_time_zone_and_logging_start_are_restored_after_a_run() -> None:
    tz_before = os.environ.get("TZ")
    start_before = logging._startTime  # type: ignore[attr-defined]

    async def body(world: askew.World) -> None:
        assert os.environ["TZ"] == "UTC"
        assert time.tzname[0] == "UTC"

    run_sim(body)
    assert os.environ.get("TZ") == tz_before
    assert logging._startTime == start_before  # type: ignore[attr-defined]


def test_a_test_may_set_its_own_time_zone_inside_a_run() -> None:
    async def body(world: askew.World) -> None:
        os.environ["TZ"] = "Asia/Tokyo"
        time.tzset()
        assert time.localtime()[:4] == (2020, 1, 1, 9)

    run_sim(body)
    assert os.environ.get("TZ") != "Asia/Tokyo"


def test_cpu_time_clocks_read_the_nodes_cpu_time_not_the_time_it_waited() -> None:
    async def busy(node: Any) -> None:
        for _ in range(100):
            await asyncio.sleep(0)  # 100 steps, each with its CPU-time draw
        node.cpu = time.process_time()
        await asyncio.sleep(5)  # waiting costs no CPU time
        node.after_wait = time.process_time()
        time.sleep(2)  # nor does a blocking sleep
        node.after_sleep = time.process_time()

    async def body(world: askew.World) -> None:
        n = world.spawn(busy)
        world.faults.skew(n, offset=50, drift=0.5)  # CPU time is not skewed
        body_cpu = time.process_time()
        await world.clock.advance(10)
        assert 0 < n.cpu < 100 * 20e-6
        assert n.cpu < n.after_wait < n.cpu + 3 * 20e-6  # a step or two more
        assert n.after_sleep == n.after_wait  # same step: no draw, and the sleep cost none
        # The test body's own CPU time is its own: a few steps, not the node's.
        now_cpu = time.process_time()
        assert body_cpu <= now_cpu < 10 * 20e-6
        assert time.thread_time() == now_cpu
        assert time.process_time_ns() == time.thread_time_ns() == round(now_cpu * 1e9)
        times = os.times()
        assert (times.user, times.system, times.children_user) == (now_cpu, 0.0, 0.0)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        assert (usage.ru_utime, usage.ru_stime) == (now_cpu, 0.0)

    run_sim(body)


def test_cpu_time_clocks_stay_at_zero_under_fifo_which_charges_none() -> None:
    async def body(world: askew.World) -> None:
        await world.clock.advance(3)
        assert time.process_time() == 0.0 and os.times().user == 0.0

    run_sim(body, strategy="fifo")


async def idle(node: object) -> None:
    await asyncio.sleep(1e6)


def test_datetime_now_reads_the_nodes_wall_clock_and_makes_real_datetimes() -> None:
    real = datetime.datetime

    async def reader(node: Any) -> None:
        node.now = datetime.datetime.now()
        node.utc = datetime.datetime.now(datetime.UTC)
        node.today = datetime.date.today()

    async def body(world: askew.World) -> None:
        n = world.spawn(reader)
        world.faults.skew(n, offset=-86400.5)
        await world.clock.advance(1)
        assert n.now == real(2019, 12, 30, 23, 59, 59, 500000)
        assert n.utc == real(2019, 12, 30, 23, 59, 59, 500000, tzinfo=datetime.UTC)
        assert n.today == datetime.date(2019, 12, 30)
        made = datetime.datetime(2020, 5, 17)
        assert type(made) is real and type(n.now) is real
        assert isinstance(made, datetime.datetime) and isinstance(n.now, datetime.datetime)
        assert issubclass(real, datetime.datetime) and isinstance(n.today, datetime.date)

    run_sim(body, strategy="fifo")
    assert datetime.datetime is real
