# SPDX-License-Identifier: Apache-2.0
"""The seed database: failing seeds remembered across pytest sessions.

A simulated test that fails under pytest leaves its failing seed here,
keyed by the test's node id; the next session runs that seed alone before
the test's sweep, and forgets it once it has passed PASSES_TO_FORGET times
in a row (the bug is fixed, or the test changed so the seed means another
run). One small JSON file per test (`seeds/<hash of node id>.json`).

It is a cache, never a reason to fail, whatever the files hold and
whoever writes them: a read takes only what is a valid entry (a seed in
[0, 2**64), a count of passes below PASSES_TO_FORGET) from a regular file
of at most READ_MAX bytes, and anything else (not JSON, nested too deep, a
FIFO, another test's file) counts as empty; a record changes a test's file
under an exclusive lock (an flock on seeds/lock, as concurrent sessions
share the tree), writes it whole to a temporary file and renames it into
place, so a crash mid-write leaves every file readable; a tree it cannot
write, or a lock it cannot get within LOCK_WAIT seconds, just keeps
nothing. The plugin calls it from its report hooks (askew/_run/plugin.py),
outside any run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .._loop.config import SEED_LIMIT

try:
    import fcntl
except ImportError:  # not POSIX: records are not serialised across sessions
    fcntl = None  # type: ignore[assignment]

PASSES_TO_FORGET = 3
DIRECTORY = ".askew"  # under pytest's rootdir, as Hypothesis's .hypothesis
KEPT = 32  # remembered seeds per test at most, the newest: each runs every session
READ_MAX = 1 << 20  # bytes of a test's file read at most (it holds KEPT short rows)
LOCK_WAIT = 10.0  # seconds a record waits for another session's before keeping nothing
_LOCK_POLL = 0.01


class SeedDB:
    """The failing seeds of each test, oldest first, with their passes since."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _file(self, nodeid: str) -> Path:
        digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return self.root / "seeds" / f"{digest}.json"

    def _read(self, nodeid: str) -> list[list[int]]:
        """The test's valid rows [seed, passes], oldest first; [] for a file
        that is missing, not a regular file, too big or not the database's."""
        try:
            # O_NONBLOCK: a FIFO in the file's place must not stall the session.
            fd = os.open(self._file(nodeid), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with open(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return []
                raw = f.read(READ_MAX + 1)
            if len(raw) > READ_MAX:
                return []
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, RecursionError):  # ValueError: not UTF-8, not JSON
            return []
        rows = data.get("seeds") if isinstance(data, dict) and data.get("test") == nodeid else None
        if not isinstance(rows, list):
            return []
        kept: dict[int, int] = {}  # seed -> passes, in the file's order
        for row in rows:
            if (
                isinstance(row, list)
                and len(row) == 2
                and all(type(v) is int for v in row)  # not bool, not float
                and 0 <= row[0] < SEED_LIMIT
                and 0 <= row[1] < PASSES_TO_FORGET
            ):
                kept.pop(row[0], None)  # a seed listed twice: its last row counts
                kept[row[0]] = row[1]
        return [[seed, passes] for seed, passes in kept.items()][-KEPT:]

    def _write(self, nodeid: str, rows: list[list[int]]) -> None:
        path = self._file(nodeid)
        if not rows:
            path.unlink(missing_ok=True)
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with open(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps({"test": nodeid, "seeds": rows}))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[bool]:
        """The database's exclusive lock, held for one read-modify-write;
        False when it could not be had (then nothing is written)."""
        folder = self.root / "seeds"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "lock", "a") as lock:
            deadline = time.monotonic() + LOCK_WAIT
            while fcntl is not None:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # another session's record
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(_LOCK_POLL)
                except OSError:  # no locks on this file system: write unserialised
                    break
            # Closing the file releases the lock.
            yield True

    def seeds(self, nodeid: str) -> list[int]:
        """The test's remembered failing seeds, oldest first."""
        return [seed for seed, _passes in self._read(nodeid)]

    def record(self, nodeid: str, failed: int | None, passed: list[int]) -> None:
        """After a run of the test: the seed that failed it (kept, its passes
        back to 0) and the remembered seeds that passed (one more pass each;
        forgotten at PASSES_TO_FORGET)."""
        with contextlib.suppress(OSError), self._locked() as held:  # OSError: read-only
            if not held:
                return
            rows = self._read(nodeid)
            before = [list(r) for r in rows]
            for row in rows:
                if row[0] in passed:
                    row[1] += 1
            rows = [r for r in rows if r[1] < PASSES_TO_FORGET]
            if failed is not None and 0 <= failed < SEED_LIMIT:
                rows = [r for r in rows if r[0] != failed] + [[failed, 0]]
            if rows != before:
                self._write(nodeid, rows[-KEPT:])


def locate(setting: str, rootdir: Path, default_on: bool) -> SeedDB | None:
    """The database a session uses: ASKEW_DB / --askew-db (`off`, or a
    path), else .askew/ under pytest's rootdir when `default_on`."""
    setting = setting.strip()
    if setting.lower() == "off":
        return None
    if setting:
        return SeedDB(Path(setting))
    return SeedDB(rootdir / DIRECTORY) if default_on else None
