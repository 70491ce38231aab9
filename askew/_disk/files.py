# SPDX-License-Identifier: Apache-2.0
"""The file calls a node's code makes, routed to its simulated disk: open()
(text and binary, every mode, wrapped as io.open wraps FileIO), and the os
calls on paths and on descriptors. A call on a path outside the calling
node's mount, or from outside any node, goes to the real function.
install() puts them in place for a sweep; NameSwap.undo() takes them out.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from typing import Any

from .. import _core
from .._loop.nodes import node_var
from .._loop.patches import NameSwap
from .disk import (
    FD_BASE,
    NodeDisk,
    caller_disk,
    disk_path,
    eio,
    failed,
    fd_of,
    fd_route,
    route,
    stat_result,
)

_real_open = builtins.open
_real = {
    name: getattr(os, name)
    for name in (
        "open close read write pread pwrite lseek fsync fdatasync ftruncate fstat stat lstat "
        "rename replace remove unlink rmdir mkdir listdir scandir truncate utime"
    ).split()
}


# ---- os: descriptors --------------------------------------------------------


def _os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    r = route(path) if dir_fd is None else None
    if r is None:
        return int(_real["open"](path, flags, mode, dir_fd=dir_fd))
    nd, rel = r
    try:
        return fd_of(nd, nd.disk.open(rel, flags, mode))
    except OSError as exc:
        raise failed(nd, exc, path, "open") from None


def _os_close(fd: int) -> None:
    r = fd_route(fd)
    if r is None:
        return _real["close"](fd)  # type: ignore[no-any-return]
    r[0].disk.close(r[1])
    return None


def _fd_call(name: str, what: str) -> Any:
    """os.<name>(fd, *args) on a simulated descriptor: disk.<what>."""
    real = _real[name]

    def call(fd: Any, *args: Any) -> Any:
        r = fd_route(fd)
        if r is None:
            return real(fd, *args)
        nd, handle = r
        try:
            return getattr(nd.disk, what)(handle, *args)
        except OSError as exc:
            raise failed(nd, exc, None, name) from None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _os_fstat(fd: int) -> os.stat_result:
    r = fd_route(fd)
    if r is None:
        return _real["fstat"](fd)  # type: ignore[no-any-return]
    return stat_result(r[0].disk.fstat(r[1]))


# ---- os: paths ------------------------------------------------------------------


def _os_stat(path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> Any:
    if isinstance(path, int):
        return _os_fstat(path)
    r = route(path) if dir_fd is None else None
    if r is None:
        return _real["stat"](path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    nd, rel = r
    try:
        return stat_result(nd.disk.stat(rel))
    except OSError as exc:
        raise failed(nd, exc, path, "stat") from None


def _os_lstat(path: Any, *, dir_fd: int | None = None) -> Any:
    if route(path) is None or dir_fd is not None:
        return _real["lstat"](path, dir_fd=dir_fd)
    return _os_stat(path)  # no symlinks on a simulated disk


def _path_call(name: str, what: str) -> Any:
    """os.<name>(path, *args) under a mount: disk.<what>(rel, *args)."""
    real = _real[name]

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        r = route(path) if not kwargs.get("dir_fd") else None
        if r is None:
            return real(path, *args, **kwargs)
        nd, rel = r
        try:
            getattr(nd.disk, what)(rel, *args)
        except OSError as exc:
            raise failed(nd, exc, path, name) from None
        return None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _os_utime(path: Any, *args: Any, **kwargs: Any) -> None:
    """os.utime under a mount: the file must exist; its times are the
    disk's own (set by writes), so nothing else changes. pathlib's touch()
    calls it."""
    r = route(path) if not isinstance(path, int) and not kwargs.get("dir_fd") else None
    if r is None:
        _real["utime"](path, *args, **kwargs)
        return
    nd, rel = r
    try:
        nd.disk.stat(rel)
    except OSError as exc:
        raise failed(nd, exc, path, "utime") from None


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
        nd = caller_disk()
        a = None if nd is None else disk_path(nd, src)
        b = None if nd is None else disk_path(nd, dst)
        if nd is None or (a is None and b is None) or src_dir_fd or dst_dir_fd:
            real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
            return
        if a is None or b is None:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src, None, dst)
        try:
            nd.disk.rename(a, b)
        except OSError as exc:
            raise failed(nd, exc, src, name) from None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _no_links(name: str) -> Any:
    """os.symlink / os.link into or out of a mount: EPERM (a simulated disk
    has neither); elsewhere the real call."""
    real = getattr(os, name)

    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        nd = caller_disk()
        if nd is not None and (disk_path(nd, src) is not None or disk_path(nd, dst) is not None):
            raise OSError(
                errno.EPERM, f"{name} is not supported on a simulated disk ({nd.mount})", dst
            )
        real(src, dst, *args, **kwargs)

    call.__name__ = name
    return call


def _os_listdir(path: Any = ".") -> list[Any]:
    r = route(path) if not isinstance(path, int) else None
    if r is None:
        return _real["listdir"](path)  # type: ignore[no-any-return]
    nd, rel = r
    try:
        names = [name for name, _ino, _d in nd.disk.list(rel)]
    except OSError as exc:
        raise failed(nd, exc, path, "listdir") from None
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
    r = route(path) if not isinstance(path, int) else None
    if r is None:
        return _real["scandir"](path)
    nd, rel = r
    try:
        listed = nd.disk.list(rel)
    except OSError as exc:
        raise failed(nd, exc, path, "scandir") from None
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
        r = fd_route(file)
        assert r is not None
        nd, handle = r
    else:
        routed = route(file) if opener is None and not isinstance(file, int) else None
        if routed is None:
            return _real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        nd, rel = routed
        flags = _flags(mode)
        if not closefd:
            raise ValueError("Cannot use closefd=False with file name")
        try:
            handle = nd.disk.open(rel, flags | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise failed(nd, exc, file, "open") from None
        if nd.disk.fstat(handle)[5]:
            nd.disk.close(handle)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), file)
    _flags(mode)
    text = "b" not in mode
    if not text and (encoding is not None or errors is not None or newline is not None):
        raise ValueError("binary mode doesn't take an encoding, errors or newline argument")
    readable = "r" in mode or "+" in mode
    writable = any(c in mode for c in "wax+")
    raw = _core.DiskFile(nd, nd.disk, handle, fd_of(nd, handle), readable, writable, closefd)
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
_core.disk_route_init(node_var, eio, _real)
io.RawIOBase.register(_core.DiskFile)
_truncate_path = _path_call("truncate", "truncate")
