# SPDX-License-Identifier: Apache-2.0
"""The seed database: failing seeds remembered across pytest sessions.

A simulated test that fails under pytest leaves its failing seed here,
keyed by the test's node id; the next session runs that seed alone before
the test's sweep, and forgets it once it has passed PASSES_TO_FORGET times
in a row (the bug is fixed, or the test changed so the seed means another
run). One small JSON file per test (`seeds/<hash of node id>.json`), each
written whole by os.replace, so parallel workers (each test runs in one)
and a crash mid-write leave every file readable. An unreadable file counts
as empty: the database is a cache, never a reason to fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

PASSES_TO_FORGET = 3
DIRECTORY = ".askew"  # under pytest's rootdir, as Hypothesis's .hypothesis


class SeedDB:
    """The failing seeds of each test, oldest first, with their passes since."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _file(self, nodeid: str) -> Path:
        digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return self.root / "seeds" / f"{digest}.json"

    def _read(self, nodeid: str) -> list[list[int]]:
        try:
            data = json.loads(self._file(nodeid).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(data, dict) or data.get("test") != nodeid:
            return []
        rows = data.get("seeds")
        if not isinstance(rows, list):
            return []
        return [
            [int(r[0]), int(r[1])]
            for r in rows
            if isinstance(r, list) and len(r) == 2 and all(type(v) is int for v in r)
        ]

    def _write(self, nodeid: str, rows: list[list[int]]) -> None:
        path = self._file(nodeid)
        with contextlib.suppress(OSError):  # a read-only tree: nothing remembered
            if not rows:
                path.unlink(missing_ok=True)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"test": nodeid, "seeds": rows}), encoding="utf-8")
            os.replace(tmp, path)

    def seeds(self, nodeid: str) -> list[int]:
        """The test's remembered failing seeds, oldest first."""
        return [seed for seed, _passes in self._read(nodeid)]

    def record(self, nodeid: str, failed: int | None, passed: list[int]) -> None:
        """After a run of the test: the seed that failed it (kept, its passes
        back to 0) and the remembered seeds that passed (one more pass each;
        forgotten at PASSES_TO_FORGET)."""
        rows = self._read(nodeid)
        before = [list(r) for r in rows]
        for row in rows:
            if row[0] in passed:
                row[1] += 1
        rows = [r for r in rows if r[1] < PASSES_TO_FORGET]
        if failed is not None:
            rows = [r for r in rows if r[0] != failed] + [[failed, 0]]
        if rows != before:
            self._write(nodeid, rows)


def locate(setting: str, rootdir: Path, default_on: bool) -> SeedDB | None:
    """The database a session uses: ASKEW_DB / --askew-db (`off`, or a
    path), else .askew/ under pytest's rootdir when `default_on`."""
    setting = setting.strip()
    if setting.lower() == "off":
        return None
    if setting:
        return SeedDB(Path(setting))
    return SeedDB(rootdir / DIRECTORY) if default_on else None
