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
The patches are installed for a sweep (askew/_runner.py) and restored
after it, failure or not.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import stat as stat_mod
import sys
from typing import Any

from . import _core, _preload
from ._determinism import NameSwap
from ._world import _KIND_FAULT, _TOKEN_SHIFT, World, _node_var, _ppm

# One numbering with the preload's disk hook (ext/preload_disk.c), so C code
# and Python share descriptors; decoded in C (ext/disk.c, fd_decode).
FD_BASE: int = _core.DISK_FD_BASE
_FD_NODE_SHIFT: int = _core.DISK_FD_NODE_SHIFT
NODES_MAX: int = _core.DISK_FD_NODES_MAX  # nodes with a disk: descriptors stay below 2**31
_BLKSIZE = 4096

_real_open = builtins.open
_real = {
    name: getattr(os, name)
    for name in (
        "open close read write pread pwrite lseek fsync fdatasync ftruncate fstat stat lstat "
        "rename replace remove unlink rmdir mkdir listdir scandir truncate utime"
    ).split()
}

_world: World | None = None


class NodeDisk:
    """One node's disk: its mount and the engine's disk, which counts its
    crashes (a file object of an earlier incarnation is closed by the
    crash)."""

    __slots__ = ("disk", "mount", "node")

    def __init__(self, world: World, node: int, mount: str) -> None:
        self.node = node
        self.mount = mount
        self.disk = _core.Disk(world._loop, node)
        _preload.mount_disk(world._loop, node, mount, self.disk)  # C code reaches it too

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


def begin(world: World) -> None:
    global _world
    _world = world
    _core.disk_route_begin(world, world._disks)


def end(world: World) -> None:
    global _world
    if _world is world:
        _world = None
    _preload.unmount_disks(world._loop)
    _core.disk_route_end(world)


def _caller_disk() -> NodeDisk | None:
    world = _world
    if world is None or world._ended or not world._disks:
        return None
    token = _node_var.get(None)
    if token is None:
        return None
    return world._disks.get(token >> _TOKEN_SHIFT)


def _under(nd: NodeDisk, path: Any) -> str | None:
    """The path inside nd's disk ('/' for the mount itself), or None when
    path lies outside the mount (or is no path at all)."""
    try:
        raw = os.fspath(path)
    except TypeError:
        return None
    p: str = os.fsdecode(raw) if isinstance(raw, bytes) else raw
    mount = nd.mount
    if not p.startswith(mount):
        if p.startswith("/"):
            return None
        p = os.path.join(os.getcwd(), p)
    norm = os.path.normpath(p)
    if norm == mount:
        return "/"
    if norm.startswith(mount) and norm[len(mount)] == "/":
        return norm[len(mount) :]
    return None


def _route(path: Any) -> tuple[NodeDisk, str] | None:
    nd = _caller_disk()
    if nd is None:
        return None
    rel = _under(nd, path)
    return None if rel is None else (nd, rel)


# (disk, handle) for a simulated descriptor, None for a real one;
# OSError(EBADF) for a simulated one outside its node's code. The decoding
# lives in C (ext/disk.c), once, for these and the patched os.fsync.
_fd_route: Any = _core.disk_fd_route


def _fd_of(nd: NodeDisk, handle: int) -> int:
    return FD_BASE + (nd.node << _FD_NODE_SHIFT) + handle


def _eio(nd: NodeDisk, what: str) -> None:
    """An EIO (only faults make one) is logged as the fault it is."""
    if _world is not None and not _world._ended:
        what = {"pread": "read", "pwrite": "write", "fdatasync": "fsync"}.get(what, what)
        _world.log._emit(_KIND_FAULT, nd.node, f"disk {nd.node}: EIO on {what}")


def _failed(nd: NodeDisk, exc: OSError, path: Any, what: str) -> OSError:
    """The error a call raises: the caller's path in it, and an EIO logged."""
    if path is not None:
        exc.filename = path
    if exc.errno == errno.EIO:
        _eio(nd, what)
    return exc


def _stat_result(st: tuple[int, int, int, int, int, int, int]) -> os.stat_result:
    ino, size, blocks, mode, nlink, _is_dir, mtime_ns = st
    # The disk keeps virtual time; stat reads the run's wall clock (as C's
    # does). Only a world's code reaches a simulated disk.
    assert _world is not None
    wall_ns = _world._loop._config.wall_epoch_ns + mtime_ns
    secs = wall_ns // 1_000_000_000
    t = wall_ns / 1e9
    return os.stat_result(
        (mode, ino, 0, nlink, 0, 0, size, secs, secs, secs),
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


# ---- os: descriptors --------------------------------------------------------


def _os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    r = _route(path) if dir_fd is None else None
    if r is None:
        return int(_real["open"](path, flags, mode, dir_fd=dir_fd))
    nd, rel = r
    try:
        return _fd_of(nd, nd.disk.open(rel, flags, mode))
    except OSError as exc:
        raise _failed(nd, exc, path, "open") from None


def _os_close(fd: int) -> None:
    r = _fd_route(fd)
    if r is None:
        return _real["close"](fd)  # type: ignore[no-any-return]
    r[0].disk.close(r[1])
    return None


def _fd_call(name: str, what: str) -> Any:
    """os.<name>(fd, *args) on a simulated descriptor: disk.<what>."""
    real = _real[name]

    def call(fd: Any, *args: Any) -> Any:
        r = _fd_route(fd)
        if r is None:
            return real(fd, *args)
        nd, handle = r
        try:
            return getattr(nd.disk, what)(handle, *args)
        except OSError as exc:
            raise _failed(nd, exc, None, name) from None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _os_fstat(fd: int) -> os.stat_result:
    r = _fd_route(fd)
    if r is None:
        return _real["fstat"](fd)  # type: ignore[no-any-return]
    return _stat_result(r[0].disk.fstat(r[1]))


# ---- os: paths ------------------------------------------------------------------


def _os_stat(path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> Any:
    if isinstance(path, int):
        return _os_fstat(path)
    r = _route(path) if dir_fd is None else None
    if r is None:
        return _real["stat"](path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    nd, rel = r
    try:
        return _stat_result(nd.disk.stat(rel))
    except OSError as exc:
        raise _failed(nd, exc, path, "stat") from None


def _os_lstat(path: Any, *, dir_fd: int | None = None) -> Any:
    if _route(path) is None or dir_fd is not None:
        return _real["lstat"](path, dir_fd=dir_fd)
    return _os_stat(path)  # no symlinks on a simulated disk


def _path_call(name: str, what: str) -> Any:
    """os.<name>(path, *args) under a mount: disk.<what>(rel, *args)."""
    real = _real[name]

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        r = _route(path) if not kwargs.get("dir_fd") else None
        if r is None:
            return real(path, *args, **kwargs)
        nd, rel = r
        try:
            getattr(nd.disk, what)(rel, *args)
        except OSError as exc:
            raise _failed(nd, exc, path, name) from None
        return None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _os_utime(path: Any, *args: Any, **kwargs: Any) -> None:
    """os.utime under a mount: the file must exist; its times are the
    disk's own (set by writes), so nothing else changes. pathlib's touch()
    calls it."""
    r = _route(path) if not isinstance(path, int) and not kwargs.get("dir_fd") else None
    if r is None:
        _real["utime"](path, *args, **kwargs)
        return
    nd, rel = r
    try:
        nd.disk.stat(rel)
    except OSError as exc:
        raise _failed(nd, exc, path, "utime") from None


def _os_truncate(path: Any, length: int) -> None:
    if isinstance(path, int):
        _os_ftruncate(path, length)
        return
    _truncate_path(path, length)


def _two_paths(name: str) -> Any:
    """os.rename / os.replace: both under one mount, the disk renames; one
    under and one not is EXDEV, as across file systems."""
    real = _real[name]

    def call(src: Any, dst: Any, *, src_dir_fd: Any = None, dst_dir_fd: Any = None) -> None:
        nd = _caller_disk()
        a = None if nd is None else _under(nd, src)
        b = None if nd is None else _under(nd, dst)
        if nd is None or (a is None and b is None) or src_dir_fd or dst_dir_fd:
            real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
            return
        if a is None or b is None:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src, None, dst)
        try:
            nd.disk.rename(a, b)
        except OSError as exc:
            raise _failed(nd, exc, src, name) from None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _no_links(name: str) -> Any:
    """os.symlink / os.link into or out of a mount: EPERM (a simulated disk
    has neither); elsewhere the real call."""
    real = getattr(os, name)

    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        nd = _caller_disk()
        if nd is not None and (_under(nd, src) is not None or _under(nd, dst) is not None):
            raise OSError(
                errno.EPERM, f"{name} is not supported on a simulated disk ({nd.mount})", dst
            )
        real(src, dst, *args, **kwargs)

    call.__name__ = name
    return call


def _os_listdir(path: Any = ".") -> list[Any]:
    r = _route(path) if not isinstance(path, int) else None
    if r is None:
        return _real["listdir"](path)  # type: ignore[no-any-return]
    nd, rel = r
    try:
        names = [name for name, _ino, _d in nd.disk.list(rel)]
    except OSError as exc:
        raise _failed(nd, exc, path, "listdir") from None
    if isinstance(os.fspath(path), bytes):
        return names
    return [os.fsdecode(n) for n in names]


class DirEntry:
    """os.scandir's entry for a simulated directory (os.DirEntry cannot be
    made from Python): the same attributes and methods."""

    __slots__ = ("_is_dir", "_nd", "_stat", "inode_", "name", "path")

    def __init__(self, nd: NodeDisk, parent: Any, name: Any, ino: int, is_dir: int) -> None:
        self._nd = nd
        self.name = name
        self.path = os.path.join(parent, name)
        self.inode_ = ino
        self._is_dir = bool(is_dir)
        self._stat: os.stat_result | None = None

    def inode(self) -> int:
        return self.inode_

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._is_dir

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self._is_dir

    def is_symlink(self) -> bool:
        return False

    def is_junction(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if self._stat is None:
            self._stat = _os_stat(self.path)
        return self._stat

    def __fspath__(self) -> Any:
        return self.path

    def __repr__(self) -> str:
        return f"<DirEntry {self.name!r}>"


class _ScandirIterator:
    def __init__(self, entries: list[DirEntry]) -> None:
        self._it = iter(entries)

    def __iter__(self) -> _ScandirIterator:
        return self

    def __next__(self) -> DirEntry:
        return next(self._it)

    def __enter__(self) -> _ScandirIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._it = iter(())


def _os_scandir(path: Any = ".") -> Any:
    r = _route(path) if not isinstance(path, int) else None
    if r is None:
        return _real["scandir"](path)
    nd, rel = r
    try:
        listed = nd.disk.list(rel)
    except OSError as exc:
        raise _failed(nd, exc, path, "scandir") from None
    as_bytes = isinstance(os.fspath(path), bytes)
    parent = os.fspath(path)
    return _ScandirIterator(
        [
            DirEntry(nd, parent, name if as_bytes else os.fsdecode(name), ino, is_dir)
            for name, ino, is_dir in listed
        ]
    )


# ---- open(): a raw file over a handle, wrapped as io.open wraps FileIO ----


def _raw_mode(mode: str) -> str:
    if "x" in mode:
        return "xb+" if "+" in mode else "xb"
    if "a" in mode:
        return "ab+" if "+" in mode else "ab"
    if "w" in mode:
        return "rb+" if "+" in mode else "wb"
    return "rb+" if "+" in mode else "rb"


def _flags(mode: str) -> int:
    if not isinstance(mode, str):
        raise TypeError(f"open() argument 'mode' must be str, not {type(mode).__name__}")
    kinds = sum(c in mode for c in "rwax")
    if kinds != 1 or len(set(mode)) != len(mode) or set(mode) - set("rwaxbt+"):
        raise ValueError(f"invalid mode: {mode!r}")
    if "b" in mode and "t" in mode:
        raise ValueError("can't have text and binary mode at once")
    if "r" in mode:
        flags = os.O_RDONLY
    elif "w" in mode:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    elif "a" in mode:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    else:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    if "+" in mode:
        flags = (flags & ~os.O_WRONLY) | os.O_RDWR
    return flags


def _open(
    file: Any,
    mode: str = "r",
    buffering: int = -1,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
    closefd: bool = True,
    opener: Any = None,
) -> Any:
    if isinstance(file, int) and file >= FD_BASE:
        r = _fd_route(file)
        assert r is not None
        nd, handle = r
    else:
        routed = _route(file) if opener is None and not isinstance(file, int) else None
        if routed is None:
            return _real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        nd, rel = routed
        flags = _flags(mode)
        if not closefd:
            raise ValueError("Cannot use closefd=False with file name")
        try:
            handle = nd.disk.open(rel, flags | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise _failed(nd, exc, file, "open") from None
        if nd.disk.fstat(handle)[5]:
            nd.disk.close(handle)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), file)
    _flags(mode)
    text = "b" not in mode
    if not text and (encoding is not None or errors is not None or newline is not None):
        raise ValueError("binary mode doesn't take an encoding, errors or newline argument")
    readable = "r" in mode or "+" in mode
    writable = any(c in mode for c in "wax+")
    raw = _core.DiskFile(nd, nd.disk, handle, _fd_of(nd, handle), readable, writable, closefd)
    try:
        raw.name = file
        raw.mode = _raw_mode(mode)
        if "a" in mode:
            raw.seek(0, os.SEEK_END)
        line_buffering = buffering == 1 and text
        if buffering == 1 or buffering < 0:
            buffering = io.DEFAULT_BUFFER_SIZE
        if buffering == 0:
            if text:
                raise ValueError("can't have unbuffered text I/O")
            return raw
        buffer: Any
        if "+" in mode:
            buffer = io.BufferedRandom(raw, buffering)
        elif "r" in mode:
            buffer = io.BufferedReader(raw, buffering)
        else:
            buffer = io.BufferedWriter(raw, buffering)
        if not text:
            return buffer
        wrapper = io.TextIOWrapper(
            buffer, io.text_encoding(encoding), errors, newline, line_buffering
        )
        wrapper.mode = mode  # type: ignore[misc]
        return wrapper
    except BaseException:
        raw.close()
        raise


# ---- install, and what the world does with disks -----------------------------


def install(names: NameSwap) -> None:
    """Put the patches in place; `names.undo()` takes them out."""
    names.set(builtins, "open", _open)
    names.set(io, "open", _open)
    replacements: dict[str, Any] = {
        "open": _os_open,
        "close": _os_close,
        "read": _core.disk_read,
        "write": _core.disk_write,
        "pread": _core.disk_pread,
        "pwrite": _core.disk_pwrite,
        "lseek": _core.disk_lseek,
        "ftruncate": _os_ftruncate,
        "fsync": _core.disk_fsync,
        "fdatasync": _core.disk_fdatasync,
        "fstat": _os_fstat,
        "stat": _os_stat,
        "lstat": _os_lstat,
        "rename": _two_paths("rename"),
        "replace": _two_paths("replace"),
        "remove": _path_call("remove", "unlink"),
        "unlink": _path_call("unlink", "unlink"),
        "rmdir": _path_call("rmdir", "rmdir"),
        "mkdir": _path_call("mkdir", "mkdir"),
        "listdir": _os_listdir,
        "scandir": _os_scandir,
        "truncate": _os_truncate,
        "utime": _os_utime,
        "symlink": _no_links("symlink"),
        "link": _no_links("link"),
    }
    for name, fn in replacements.items():
        names.set(os, name, fn)


_os_ftruncate = _fd_call("ftruncate", "ftruncate")
_core.disk_route_init(_node_var, _eio, _real)
io.RawIOBase.register(_core.DiskFile)
_truncate_path = _path_call("truncate", "truncate")


def crashed(world: World, node: int) -> None:
    """The node crashed: its disk keeps what the seed says, and the world
    log says what that was."""
    nd = world._disks.get(node)
    if nd is None:
        return
    r = nd.disk.crash()  # counts the crash: the node's open files go stale
    text = (
        f"disk {node} crash: kept {r['sectors_kept']}/{r['sectors_kept'] + r['sectors_lost']} "
        f"unsynced sectors, {r['sizes_kept']}/{r['sizes_kept'] + r['sizes_lost']} sizes, "
        f"{r['dirops_kept']}/{r['dirops_kept'] + r['dirops_lost']} directory operations"
    )
    world.log._emit(_KIND_FAULT, node, text)


def check_faults(
    world: World,
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
        _ppm(p, f"faults.disk({what}=...)")
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
        isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0
    ):
        raise ValueError(
            f"faults.disk(capacity=...) must be a positive byte count, got {capacity!r}"
        )
    cap = _core.DISK_CAPACITY_DEFAULT if capacity is None else capacity
    text = (
        f"disk {node}: eio read {eio_read:g} write {eio_write:g} fsync {eio_fsync:g}, "
        f"bitrot {bitrot:g}, latency {lo:g}-{hi:g}s, capacity {cap} bytes"
    )
    return text, (*ppms, round(lo * 1e9), round(hi * 1e9), cap)


def apply_faults(world: World, node: int, text: str, args: tuple[int, ...]) -> None:
    world._disks[node].disk.set_faults(*args)
    world.log._emit(_KIND_FAULT, node, text)


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

    def __init__(self, world: World, nd: NodeDisk) -> None:
        self._world = world
        self._nd = nd

    @property
    def mount(self) -> str:
        return self._nd.mount

    def _rel(self, path: str) -> str:
        if not isinstance(path, str):
            raise TypeError(f"a path on the disk is a str, got {path!r}")
        self._world._check_live()
        under = _under(self._nd, path) if path.startswith(self._nd.mount) else None
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
