# SPDX-License-Identifier: Apache-2.0
"""bench/bench_sockets.py in --quick mode: every side runs the workload to the
end or, for a peer absent on this Python, says why; the floor sides (the ping
loop over a zero-cost in-memory transport) run on every Python. Nothing here
reads a figure: speed lives in bench/."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import askew

BENCH = Path(__file__).resolve().parent.parent / "bench"
PEERS = ("simloom", "simloop")
VENV313 = ".venv313/bin/python"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_sockets

    yield bench_sockets


def test_the_quick_bench_runs_every_side_and_the_peers_only_where_they_import(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sockets.json"
    assert bench.main(["--quick", "--repeats", "1", "--json", str(out)]) == 0
    tables = json.loads(out.read_text())["tables"]
    for table in ("round_trip", "bulk", "udp_round_trip"):
        for side in ("stock asyncio (loopback)", "askew", *PEERS):
            row = tables[table][side]
            if side in PEERS and sys.version_info < (3, 12):
                assert row == {"unavailable": f"{side} needs Python 3.12+ (run with {VENV313})"}
            elif side in PEERS and importlib.util.find_spec(side) is None:
                assert row["unavailable"].startswith(f"{side} is not installed for this Python")
            else:
                assert len(row["samples_ns_per_op"]) == 1, (table, side)
    for side in (bench.FLOOR_STOCK, bench.FLOOR_ASKEW):
        assert len(tables["round_trip"][side]["samples_ns_per_op"]) == 1
    assert "floor: streams over a zero-cost transport" in capsys.readouterr().out


@pytest.mark.parametrize("run", [asyncio.run, askew.run], ids=["stock loop", "askew loop"])
def test_the_floor_carries_every_round_trip_and_the_server_finishes(
    bench: ModuleType, run: object
) -> None:
    async def main() -> tuple[int, int]:
        done = await bench.floor_ping(300)
        await asyncio.sleep(0)  # the server's handler returns after the client's EOF
        return done, len(asyncio.all_tasks()) - 1

    assert run(main()) == (300, 0)  # type: ignore[operator]
