# SPDX-License-Identifier: Apache-2.0
"""C code on a node's simulated disk: the preload's disk hook reaches a
node's mount (ext/preload_disk.c), and without the preload sqlite3.connect
refuses a path under a mount rather than let libsqlite3 write the real
file system there."""

from __future__ import annotations

import functools
import os
from typing import Any

from .. import _core
from ..errors import NondeterminismError


def mount_disk(loop: Any, node: int, mount: str, disk: Any) -> None:
    """C code run by `node` reaches `mount` on `disk` (an askew._core.Disk) through
    the preload's disk hook; without the preload, sqlite3.connect on a path under
    any mount is refused instead of writing the real file system."""
    _core._preload_disk_mount(loop, node, mount, disk._capsule(), disk)
    if not _core.preload_active():
        _guard_sqlite(loop)


def unmount_disks(loop: Any) -> None:
    """The world's run ended: its mounts and C code's simulated fds are forgotten."""
    _core._preload_disk_unmount(loop)


def _sqlite_path(database: Any, uri: bool) -> Any:
    """The file a sqlite3.connect() argument names ("file:/p?mode=ro" with uri=True)."""
    if isinstance(database, str) and uri and database.startswith("file:"):
        database = database[5:].split("?", 1)[0].split("#", 1)[0]
        if database.startswith("//"):  # file://host/path: the path
            database = "/" + database[2:].split("/", 1)[-1]
    return database


def _guard_sqlite(loop: Any) -> None:
    """Without the preload, libsqlite3's open() would reach the real disk under a
    mount: sqlite3.connect refuses such a path (NondeterminismError naming askew-exec)
    while `loop` runs its world. Installed once per process; a guard of an ended
    world's loop lets every path through."""
    import sqlite3  # only when a disk is used without the preload: 5 ms to import

    _guard_state["loop"] = loop
    if getattr(sqlite3.connect, "__askew_guard__", False):
        return
    original = sqlite3.connect

    @functools.wraps(original)
    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        path = _sqlite_path(database, bool(kwargs.get("uri", args[6] if len(args) > 6 else False)))
        if isinstance(path, (str, bytes, os.PathLike)) and path not in (
            ":memory:",
            b":memory:",
            "",
        ):
            if _core._preload_disk_routed(_guard_state["loop"], path) != 0:
                raise NondeterminismError(
                    f"sqlite3.connect({database!r}): that path is on a node's simulated "
                    "disk, which C code such as libsqlite3 reaches only through askew's "
                    "preload; without it sqlite would open the real file system. Run "
                    "under askew-exec (`askew-exec pytest ...`)."
                )
        return original(database, *args, **kwargs)

    connect.__askew_guard__ = True  # type: ignore[attr-defined]
    sqlite3.connect = connect
    sqlite3.dbapi2.connect = connect


_guard_state: dict[str, Any] = {"loop": None}
