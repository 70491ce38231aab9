# SPDX-License-Identifier: Apache-2.0
"""world.disk(node): the test body's look at a node's simulated disk, with
the disk's faults held off for the look, so that looking never changes what
the run's own calls meet."""

from __future__ import annotations

import os
import stat as stat_mod
from typing import Any

from .. import _core
from .disk import NodeDisk, disk_path


class _Quiet:
    """The disk with its faults off for a look from the test body: no EIO,
    no bit rot, no latency, no draw from its stream, so looking never
    changes what the run's own calls meet."""

    def __init__(self, nd: NodeDisk) -> None:
        self._disk = nd.disk
        self._saved: tuple[int, ...] = ()

    def __enter__(self) -> _core.Disk:
        self._saved = self._disk.get_faults()
        if any(self._saved[:6]):
            self._disk.set_faults(0, 0, 0, 0, 0, 0, self._saved[6])
        return self._disk

    def __exit__(self, *exc: object) -> None:
        if any(self._saved[:6]):
            self._disk.set_faults(*self._saved)


class DiskView:
    """world.disk(node): the test body's look at a node's disk, as the
    node's code would see it now (the page cache included, not only what is
    durable). Paths are inside the disk ("/" is the mount). Looking draws
    no fault."""

    def __init__(self, world: Any, nd: NodeDisk) -> None:
        self._world = world
        self._nd = nd

    @property
    def mount(self) -> str:
        return self._nd.mount

    def _rel(self, path: str) -> str:
        if not isinstance(path, str):
            raise TypeError(f"a path on the disk is a str, got {path!r}")
        self._world._check_live()
        under = disk_path(self._nd, path) if path.startswith(self._nd.mount) else None
        return under if under is not None else "/" + path.lstrip("/")

    def read(self, path: str) -> bytes:
        """The file's bytes now; FileNotFoundError if it does not exist."""
        rel = self._rel(path)
        with _Quiet(self._nd) as disk:
            handle = disk.open(rel, os.O_RDONLY)
            try:
                return disk.pread(handle, disk.fstat(handle)[1], 0)
            finally:
                disk.close(handle)

    def exists(self, path: str) -> bool:
        rel = self._rel(path)
        with _Quiet(self._nd) as disk:
            try:
                disk.stat(rel)
            except OSError:
                return False
        return True

    def listdir(self, path: str = "/") -> list[str]:
        rel = self._rel(path)
        with _Quiet(self._nd) as disk:
            return [os.fsdecode(n) for n, _i, _d in disk.list(rel)]

    def walk(self) -> list[str]:
        """Every file's path, depth first, sorted."""
        self._world._check_live()
        found: list[str] = []
        stack = ["/"]
        with _Quiet(self._nd) as disk:
            while stack:
                top = stack.pop()
                for name, _ino, is_dir in reversed(disk.list(top)):
                    path = top.rstrip("/") + "/" + os.fsdecode(name)
                    if is_dir:
                        stack.append(path)
                    else:
                        found.append(path)
        return found

    def usage(self) -> dict[str, int]:
        """Bytes held (durable copy and page cache), files, open handles,
        unsynced sectors and directory operations, and the capacity."""
        self._world._check_live()
        return self._nd.disk.usage()

    def is_dir(self, path: str) -> bool:
        rel = self._rel(path)
        with _Quiet(self._nd) as disk:
            return bool(stat_mod.S_ISDIR(disk.stat(rel)[3]))
