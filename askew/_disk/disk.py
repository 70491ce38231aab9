# SPDX-License-Identifier: Apache-2.0
"""Simulated disks (docs/disks.md): a node spawned with `disk="/data"` gets
its own disk (askew._core.Disk, ext/engine/disk.c) mounted there.

Inside that node's code, and only there, ordinary file I/O on a path under
the mount goes to the simulated disk: `open()` (text and binary, every
mode), the `os` calls on paths and descriptors, `os.path` and `pathlib`
(which go through them). Everything else, the test body and other nodes
included, sees the real file system, untouched. A disk lives as long as
its world's run: a crash of its node keeps what is durable plus a seeded
subset of the rest, and the restarted node sees exactly that.

Descriptors of simulated files are numbers from FD_BASE up (node << 16 |
handle), a range real descriptors never reach (Linux caps them at
nr_open, 2**20 by default); outside their node's code they are EBADF.
The file calls are askew/_disk/files.py's, installed for a sweep (askew/_run/runner.py)
and restored after it, failure or not; world.disk(node) is askew/_disk/view.py's.
The world (the layer above) is duck-typed here: its _disks, _loop, log.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

from .. import _core
from .._loop.config import check_ppm
from .._loop.kinds import FAULT
from .._loop.nodes import TOKEN_SHIFT, node_var
from . import mount as _mount

# One numbering with the preload's disk hook (ext/preload_disk.c), so C code
# and Python share descriptors; decoded in C (ext/disk_route.c, fd_decode).
FD_BASE: int = _core.DISK_FD_BASE
_FD_NODE_SHIFT: int = _core.DISK_FD_NODE_SHIFT
NODES_MAX: int = _core.DISK_FD_NODES_MAX  # nodes with a disk: descriptors stay below 2**31
FILES_MAX: int = _core.DISK_FILES_MAX  # files and directories a disk holds at once
_BLKSIZE = 4096

_world: Any = None


class NodeDisk:
    """One node's disk: its mount and the engine's disk, which counts its
    crashes (a file object of an earlier incarnation is closed by the
    crash)."""

    __slots__ = ("disk", "mount", "node")

    def __init__(self, world: Any, node: int, mount: str) -> None:
        self.node = node
        self.mount = mount
        self.disk = _core.Disk(world._loop, node)
        _mount.mount_disk(world._loop, node, mount, self.disk)  # C code reaches it too

    @property
    def crashes(self) -> int:
        return self.disk.crashes


def check_mount(mount: object, taken: dict[int, NodeDisk] | None = None) -> str:
    """The mount a spawn(disk=...) names, normalized; ValueError or TypeError
    naming the bad value."""
    if isinstance(mount, os.PathLike):
        mount = os.fspath(mount)
    if not isinstance(mount, str):
        raise TypeError(f"spawn(disk=...) must be a path (a str), got {mount!r}")
    if not mount.startswith("/") or "\0" in mount:
        raise ValueError(f"spawn(disk={mount!r}): the mount must be an absolute path")
    norm = os.path.normpath(mount)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm == "/":
        raise ValueError(f"spawn(disk={mount!r}): the mount cannot be the root directory")
    for entry in sys.path:
        if entry and (entry == norm or entry.startswith(norm + "/")):
            raise ValueError(
                f"spawn(disk={mount!r}): the mount would hide {entry!r}, on sys.path; "
                "pick a path of its own (e.g. /data)"
            )
    return norm


# ---- the run's world, and which disk a call is for ----------------------


# Real files the nodes' code opened for writing, outside any simulated disk,
# in this run: node id -> the first few paths (the failure report's note).
_real_writes: dict[int, list[str]] = {}
_REAL_WRITES_KEPT = 5


def begin(world: Any) -> None:
    global _world
    _world = world
    _real_writes.clear()
    _core.disk_route_begin(world, world._disks)


def end(world: Any) -> None:
    """The world's run is over: its mounts and route go first, the name
    last, so that an end a Ctrl-C cut short still names the world
    (world.end_unfinished ends it again, whole)."""
    global _world
    _mount.unmount_disks(world._loop)
    _core.disk_route_end(world)
    if _world is world:
        _world = None


def current_world() -> Any:
    """The world whose disks file calls are routed to, or None."""
    return _world


def note_real_write(path: Any) -> None:
    """A node's code opened the real file `path` for writing (files.py
    calls it on that path): noted for the failure report, which says which
    files a node wrote outside any simulated disk. The test body's own
    files are not noted: the test keeps what it writes."""
    world = _world
    token = node_var.get(-1)
    if world is None or world._ended or token < 0:
        return
    paths = _real_writes.setdefault(token >> TOKEN_SHIFT, [])
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path)
    if len(paths) < _REAL_WRITES_KEPT and text not in paths:
        paths.append(text)


def real_writes() -> dict[int, list[str]]:
    """Node id -> the real files its code wrote in this run (the first few)."""
    return {node: list(paths) for node, paths in sorted(_real_writes.items())}


def caller_disk() -> NodeDisk | None:
    world = _world
    if world is None or world._ended or not world._disks:
        return None
    token = node_var.get(None)
    if token is None:
        return None
    found: NodeDisk | None = world._disks.get(token >> TOKEN_SHIFT)
    return found


def locate(nd: NodeDisk, path: Any) -> tuple[int, Any]:
    """Where path lands for nd's disk: (1, its part on the disk, untouched:
    "f/" and "d/." keep their meaning for the call; "/" for the mount), (0,
    path) when it is not on it (or is no path at all), (2, the real path it
    names) when it entered the disk and left it by ".." again. The engine
    resolves it component by component as the kernel does
    (askew_disk_locate, which C code's calls use too); a relative path is
    the real working directory's. OSError for a component on the disk that
    such a path cannot pass."""
    try:
        raw = os.fspath(path)
    except TypeError:
        return 0, path
    p: str = os.fsdecode(raw) if isinstance(raw, bytes) else raw
    if not p.startswith("/"):
        p = os.getcwd() + "/" + p
    try:
        where, found = nd.disk.locate(nd.mount, p)
    except OSError as exc:
        exc.filename = path
        raise
    if where == 0:
        return 0, path
    if where == 2 and isinstance(raw, bytes):
        assert found is not None
        return 2, os.fsencode(found)
    return where, found


def disk_path(nd: NodeDisk, path: Any) -> str | None:
    """The path's part on nd's disk, or None when it is not on it."""
    where, found = locate(nd, path)
    return found if where == 1 else None


# (disk, handle) for a simulated descriptor, None for a real one;
# OSError(EBADF) for a simulated one outside its node's code. The decoding
# lives in C (ext/disk_route.c), once, for these and the patched os.fsync.
fd_route: Any = _core.disk_fd_route


def fd_of(nd: NodeDisk, handle: int) -> int:
    return FD_BASE + (nd.node << _FD_NODE_SHIFT) + handle


def eio(nd: NodeDisk, what: str) -> None:
    """An EIO (only faults make one) is logged as the fault it is."""
    if _world is not None and not _world._ended:
        what = {"pread": "read", "pwrite": "write", "fdatasync": "fsync"}.get(what, what)
        _world.log._emit(FAULT, nd.node, f"disk {nd.node}: EIO on {what}")


def failed(nd: NodeDisk, exc: OSError, path: Any, what: str) -> OSError:
    """The error a call raises: the caller's path in it, and an EIO logged."""
    if path is not None:
        exc.filename = path
    if exc.errno == errno.EIO:
        eio(nd, what)
    return exc


def wall_epoch_ns() -> int:
    """The run's wall clock at virtual time 0: a disk's mtimes are kept in
    virtual time and read on the wall clock, as C's stat reads them. Only a
    world's code reaches a simulated disk."""
    assert _world is not None
    epoch: int = _world._loop._config.wall_epoch_ns
    return epoch


def now_ns() -> int:
    """Virtual time now, as the disk stamps its mtimes."""
    assert _world is not None
    now: int = _world._loop._now_ns
    return now


def stat_result(st: tuple[int, int, int, int, int, int, int, int]) -> os.stat_result:
    ino, size, blocks, mode, nlink, _is_dir, mtime_ns, dev = st
    wall_ns = wall_epoch_ns() + mtime_ns
    secs = wall_ns // 1_000_000_000
    t = wall_ns / 1e9
    return os.stat_result(
        (mode, ino, dev, nlink, 0, 0, size, secs, secs, secs),
        {
            "st_atime": t,
            "st_mtime": t,
            "st_ctime": t,
            "st_atime_ns": wall_ns,
            "st_mtime_ns": wall_ns,
            "st_ctime_ns": wall_ns,
            "st_blocks": blocks,
            "st_blksize": _BLKSIZE,
        },
    )


_LOST_NAMED = 3  # a crash's line names this many lost directory operations, then counts


def crashed(world: Any, node: int) -> None:
    """The node crashed: its disk keeps what the seed says, and the world
    log says what that was, naming the directory operations it lost and
    why (their directory was not fsynced after them)."""
    nd = world._disks.get(node)
    if nd is None:
        return
    unsynced = nd.disk.dirops()  # the crash keeps a prefix of these
    r = nd.disk.crash()  # counts the crash: the node's open files go stale
    lost = [_dirop_text(nd.mount, op) for op in unsynced[r["dirops_kept"] :]]
    if len(lost) > _LOST_NAMED:
        lost[_LOST_NAMED:] = [f"{len(lost) - _LOST_NAMED} more directory operations"]
    text = (
        f"disk {node} crash: "
        + (f"lost {'; '.join(lost)}; " if lost else "")
        + f"kept {r['sectors_kept']}/{r['sectors_kept'] + r['sectors_lost']} "
        f"unsynced sectors, {r['sizes_kept']}/{r['sizes_kept'] + r['sizes_lost']} sizes, "
        f"{r['dirops_kept']}/{r['dirops_kept'] + r['dirops_lost']} directory operations"
    )
    world.log._emit(FAULT, node, text)


_DIROP_VERBS = {1: ("create", "mkdir"), 2: ("unlink", "rmdir"), 3: ("rename", "rename")}


def _dirop_text(mount: str, op: tuple[int, bool, bool, str | None, str | None]) -> str:
    """ "create /data/log: its directory was never fsynced", for one lost
    directory operation of the disk mounted at `mount`."""
    kind, is_dir, dir_synced, path, path2 = op
    verb = _DIROP_VERBS[kind][is_dir]

    def where(rel: str | None) -> str:
        if rel is None:
            return "(in a directory removed since)"
        return mount.rstrip("/") + rel

    what = f"{verb} {where(path)}" + (f" -> {where(path2)}" if kind == 3 else "")
    why = "was not fsynced after it" if dir_synced else "was never fsynced"
    return f"{what}: its directory {why}"


def check_faults(
    world: Any,
    node: int,
    *,
    eio_read: float,
    eio_write: float,
    eio_fsync: float,
    bitrot: float,
    latency: float | tuple[float, float],
    capacity: int | None,
) -> tuple[str, tuple[int, ...]]:
    """world.faults.disk's checks: what it logs and set_faults' arguments.
    ValueError naming the bad value."""
    if node not in world._disks:
        raise ValueError(
            f'faults.disk: node {node} has no disk; spawn it with disk="/data" (a mount)'
        )
    ppms = tuple(
        check_ppm(p, f"faults.disk({what}=...)")
        for p, what in (
            (eio_read, "eio_read"),
            (eio_write, "eio_write"),
            (eio_fsync, "eio_fsync"),
            (bitrot, "bitrot"),
        )
    )
    lo, hi = latency if isinstance(latency, tuple) else (latency, latency)
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 3600:
            raise ValueError(
                "faults.disk(latency=...) must be seconds in [0, 3600] or a (min, max) pair "
                f"of them, got {latency!r}"
            )
    if lo > hi:
        raise ValueError(f"faults.disk(latency=...): min {lo!r} is above max {hi!r}")
    if capacity is not None and (
        isinstance(capacity, bool) or not isinstance(capacity, int) or not 0 < capacity < 2**64
    ):
        raise ValueError(
            f"faults.disk(capacity=...) must be a positive byte count below 2**64, got {capacity!r}"
        )
    cap = _core.DISK_CAPACITY_DEFAULT if capacity is None else capacity
    text = (
        f"disk {node}: eio read {eio_read:g} write {eio_write:g} fsync {eio_fsync:g}, "
        f"bitrot {bitrot:g}, latency {lo:g}-{hi:g}s, capacity {cap} bytes"
    )
    return text, (*ppms, round(lo * 1e9), round(hi * 1e9), cap)


def apply_faults(world: Any, node: int, text: str, args: tuple[int, ...]) -> None:
    world._disks[node].disk.set_faults(*args)
    world.log._emit(FAULT, node, text)
