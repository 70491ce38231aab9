# SPDX-License-Identifier: Apache-2.0
"""The os calls on paths a node's code makes, routed to its simulated disk:
stat, rename, unlink, mkdir, listdir, scandir, the metadata calls (chmod,
chown, utime, access, the xattrs, statvfs), each with its dir_fd= and fd
forms. Where a call lands is the engine's to say (askew_disk_locate, the
one resolver C code's calls use too): `where` asks it. A call that lands on
the real file system goes to the real function, and one the disk does not
model is refused by name. files.py installs them with open() and the
descriptor calls.
"""

from __future__ import annotations

import errno
import os
from typing import Any, NamedTuple

from .._loop.refusal import refuse
from .disk import (
    FILES_MAX,
    NodeDisk,
    caller_disk,
    failed,
    fd_route,
    locate,
    now_ns,
    stat_result,
    wall_epoch_ns,
)

_real = {
    name: getattr(os, name)
    for name in (
        "stat lstat rename replace remove unlink rmdir mkdir listdir scandir truncate utime "
        "chmod chown access readlink statvfs getxattr setxattr listxattr removexattr"
    ).split()
}
# A node's disk holds no extended attributes, and takes none (ENOTSUP, as a
# file system without them), so shutil's copy of them finds nothing to copy.
XATTR_REFUSED = errno.ENOTSUP


class Where(NamedTuple):
    """What a path names for the calling code: on its node's disk (nd set,
    path the disk's part of it), or the real file system (nd None, and the
    path and dir_fd to give the real call)."""

    nd: NodeDisk | None
    path: Any
    dir_fd: int | None


def where(path: Any, dir_fd: int | None = None) -> Where:
    """Where a call on path (relative to dir_fd, as the *at calls take it)
    lands. A relative path under a simulated directory's descriptor is that
    directory's, wherever it is now; EBADF for another node's descriptor."""
    nd = caller_disk()
    if nd is None:
        return Where(None, path, dir_fd)
    full = path
    if dir_fd is not None and not isinstance(path, int):
        routed = fd_route(dir_fd)
        raw = os.fspath(path)
        if routed is not None and not os.fsdecode(raw).startswith("/"):
            try:
                base = nd.disk.handle_path(routed[1])
            except OSError as exc:
                raise failed(nd, exc, path, "open") from None
            full = nd.mount + base.rstrip("/") + "/" + os.fsdecode(raw)
        elif routed is None:
            return Where(None, path, dir_fd)  # a real directory's descriptor
    kind, found = locate(nd, full)
    if kind == 1:
        return Where(nd, found, None)
    if kind == 2 or full is not path:
        return Where(None, found if kind == 2 else full, None)
    return Where(None, path, dir_fd)


def _on_disk(nd: NodeDisk, path: Any, what: str, call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except OSError as exc:
        raise failed(nd, exc, path, what) from None


# ---- stat, and what is not built -------------------------------------------------------


def os_stat(path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> Any:
    if isinstance(path, int):
        r = fd_route(path)
        if r is None:
            return _real["stat"](path)
        return stat_result(r[0].disk.fstat(r[1]))
    w = where(path, dir_fd)
    if w.nd is None:
        return _real["stat"](w.path, dir_fd=w.dir_fd, follow_symlinks=follow_symlinks)
    return stat_result(_on_disk(w.nd, path, "stat", w.nd.disk.stat, w.path))


def os_lstat(path: Any, *, dir_fd: int | None = None) -> Any:
    w = where(path, dir_fd)
    if w.nd is None:
        return _real["lstat"](w.path, dir_fd=w.dir_fd)
    return stat_result(_on_disk(w.nd, path, "stat", w.nd.disk.stat, w.path))


def _refused(name: str, why: str) -> Any:
    """os.<name> on a path of a node's disk: refused by name (the disk does
    not model it); elsewhere the real call."""
    real = getattr(os, name)

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        w = where(path, kwargs.get("dir_fd")) if not isinstance(path, int) else None
        if w is not None and w.nd is not None:
            refuse(f"os.{name}({path!r}) on a simulated disk", why, "is not modelled")
        if w is not None and "dir_fd" in kwargs:
            kwargs["dir_fd"] = w.dir_fd
        return real(w.path if w is not None else path, *args, **kwargs)

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _no_links(name: str) -> Any:
    """os.symlink / os.link into or out of a mount: EPERM (a simulated disk
    has neither); elsewhere the real call."""
    real = getattr(os, name)

    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        for path in (src, dst):
            nd = where(path).nd
            if nd is not None:
                raise OSError(
                    errno.EPERM, f"{name} is not supported on a simulated disk ({nd.mount})", dst
                )
        real(src, dst, *args, **kwargs)

    call.__name__ = name
    return call


def os_readlink(path: Any, *, dir_fd: int | None = None) -> Any:
    """No symbolic links on a disk: EINVAL for what exists, as Linux's for a
    file that is not a link."""
    w = where(path, dir_fd)
    if w.nd is None:
        return _real["readlink"](w.path, dir_fd=w.dir_fd)
    _on_disk(w.nd, path, "stat", w.nd.disk.stat, w.path)
    raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)


# ---- the namespace -----------------------------------------------------------------------


def _path_call(name: str, what: str) -> Any:
    """os.<name>(path, *args, dir_fd=None) on a disk: disk.<what>(rel, *args)."""
    real = _real[name]

    def call(path: Any, *args: Any, dir_fd: int | None = None) -> None:
        w = where(path, dir_fd)
        if w.nd is None:
            real(w.path, *args, **({} if w.dir_fd is None else {"dir_fd": w.dir_fd}))
            return
        _on_disk(w.nd, path, name, getattr(w.nd.disk, what), w.path, *args)

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def os_truncate(path: Any, length: int) -> None:
    if isinstance(path, int):
        r = fd_route(path)
        if r is not None:
            _on_disk(r[0], None, "truncate", r[0].disk.ftruncate, r[1], length)
            return
    w = where(path) if not isinstance(path, int) else Where(None, path, None)
    if w.nd is None:
        _real["truncate"](w.path, length)
        return
    _on_disk(w.nd, path, "truncate", w.nd.disk.truncate, w.path, length)


def _two_paths(name: str) -> Any:
    """os.rename / os.replace: both on one disk, the disk renames; one on it
    and one not is EXDEV, as across file systems."""
    real = _real[name]

    def call(src: Any, dst: Any, *, src_dir_fd: Any = None, dst_dir_fd: Any = None) -> None:
        a, b = where(src, src_dir_fd), where(dst, dst_dir_fd)
        if a.nd is None and b.nd is None:
            real(a.path, b.path, src_dir_fd=a.dir_fd, dst_dir_fd=b.dir_fd)
            return
        if a.nd is None or b.nd is None:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src, None, dst)
        _on_disk(a.nd, src, name, a.nd.disk.rename, a.path, b.path)

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def os_listdir(path: Any = ".") -> list[Any]:
    listed = _listing(path, "listdir")
    if listed is None:
        return _real["listdir"](path)  # type: ignore[no-any-return]
    names = [name for name, _ino, _d in listed[1]]
    if not isinstance(path, int) and isinstance(os.fspath(path), bytes):
        return names
    return [os.fsdecode(n) for n in names]


def _listing(path: Any, what: str) -> tuple[NodeDisk, list[tuple[bytes, int, int]]] | None:
    """A disk directory's entries, by path or by a descriptor (os.listdir(fd)
    and os.scandir(fd), as shutil.rmtree's walk takes them); None off the
    disk."""
    if isinstance(path, int):
        r = fd_route(path)
        if r is None:
            return None
        nd = r[0]
        rel = _on_disk(nd, None, what, nd.disk.handle_path, r[1])
    else:
        w = where(path)
        if w.nd is None:
            return None
        nd, rel = w.nd, w.path
    return nd, _on_disk(nd, path, what, nd.disk.list, rel)


class DirEntry:
    """os.scandir's entry for a simulated directory (os.DirEntry cannot be
    made from Python): the same attributes and methods. `path` is the
    directory's path joined with the name, or the name alone when the
    directory was given as a descriptor (as os.DirEntry's)."""

    __slots__ = ("_dir_fd", "_is_dir", "_stat", "inode_", "name", "path")

    def __init__(self, name: Any, path: Any, dir_fd: int | None, ino: int, is_dir: int) -> None:
        self.name = name
        self.path = path
        self._dir_fd = dir_fd
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
            self._stat = os_stat(self.path, dir_fd=self._dir_fd)
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


def os_scandir(path: Any = ".") -> Any:
    listed = _listing(path, "scandir")
    if listed is None:
        return _real["scandir"](path)
    by_fd = isinstance(path, int)
    as_bytes = not by_fd and isinstance(os.fspath(path), bytes)
    parent = None if by_fd else os.fspath(path)
    entries = []
    for raw, ino, is_dir in listed[1]:
        name = raw if as_bytes else os.fsdecode(raw)
        full = name if parent is None else os.path.join(parent, name)
        entries.append(DirEntry(name, full, path if by_fd else None, ino, is_dir))
    return _ScandirIterator(entries)


# ---- metadata: modes, owners, times, access, xattrs, the file system --------------------------


def _by_path_or_fd(path: Any, dir_fd: int | None) -> tuple[NodeDisk, Any, int] | None:
    """(nd, the disk's path or None, handle) when path (or the descriptor it
    is) is on the calling node's disk, else None."""
    if isinstance(path, int):
        r = fd_route(path)
        return None if r is None else (r[0], None, r[1])
    w = where(path, dir_fd)
    return None if w.nd is None else (w.nd, w.path, -1)


def _metadata(name: str, apply: Any) -> Any:
    """os.<name>(path_or_fd, ..., dir_fd=None, follow_symlinks=True): on a
    disk, apply(nd, rel, handle, *args, **kwargs) (by path, or by handle
    when rel is None); elsewhere the real call."""
    real = _real[name]

    def call(path: Any, *args: Any, dir_fd: int | None = None, **kwargs: Any) -> Any:
        found = _by_path_or_fd(path, dir_fd)
        if found is None:
            w = where(path, dir_fd) if not isinstance(path, int) else Where(None, path, dir_fd)
            extra = {} if w.dir_fd is None else {"dir_fd": w.dir_fd}
            return real(w.path, *args, **extra, **kwargs)
        nd, rel, handle = found
        kwargs.pop("follow_symlinks", None)  # no symbolic links on a disk
        try:
            return apply(nd, rel, handle, *args, **kwargs)
        except OSError as exc:
            raise failed(nd, exc, path, name) from None

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _chmod(nd: NodeDisk, rel: Any, handle: int, mode: int) -> None:
    nd.disk.setattr(rel, handle, mode, None)


def _chown(nd: NodeDisk, rel: Any, handle: int, uid: int, gid: int) -> None:
    """Owners are not modelled (stat says root's): the file must exist, and
    nothing changes, as C code's fchown under the preload."""
    _exists(nd, rel, handle)


def _exists(nd: NodeDisk, rel: Any, handle: int) -> None:
    if rel is None:
        nd.disk.fstat(handle)
    else:
        nd.disk.stat(rel)


def _utime(nd: NodeDisk, rel: Any, handle: int, times: Any = None, *, ns: Any = None) -> None:
    """utime(2): the mtime is set (the disk keeps one time: atime and ctime
    read as it), in the run's wall time, or now."""
    wall = wall_epoch_ns()
    if times is not None and ns is not None:
        raise ValueError("utime: you may specify either 'times' or 'ns' but not both")
    if ns is not None:
        mtime = int(ns[1])
    elif times is not None:
        mtime = int(float(times[1]) * 1e9)
    else:
        mtime = wall + now_ns()
    nd.disk.setattr(rel, handle, None, mtime - wall)


def _access(nd: NodeDisk, rel: Any, handle: int, mode: int, **_: Any) -> bool:
    """Modes are kept, never enforced: what exists is accessible."""
    try:
        _exists(nd, rel, handle)
    except FileNotFoundError:
        return False
    return True


def _listxattr(nd: NodeDisk, rel: Any, handle: int) -> list[str]:
    _exists(nd, rel, handle)
    return []


def _getxattr(nd: NodeDisk, rel: Any, handle: int, attribute: Any) -> bytes:
    _exists(nd, rel, handle)
    raise OSError(errno.ENODATA, os.strerror(errno.ENODATA))


def _xattr_refused(nd: NodeDisk, rel: Any, handle: int, *args: Any, **kwargs: Any) -> None:
    _exists(nd, rel, handle)
    raise OSError(XATTR_REFUSED, f"a simulated disk ({nd.mount}) keeps no extended attributes")


def _statvfs(nd: NodeDisk, rel: Any, handle: int) -> os.statvfs_result:
    """The disk's room: its capacity and what its content holds, in 4 KiB
    blocks; its file count against the cap."""
    _exists(nd, rel, handle)
    usage = nd.disk.usage()
    capacity = nd.disk.get_faults()[6]
    bsize = 4096
    free = max(0, capacity - usage["bytes"]) // bsize
    files_free = max(0, FILES_MAX - usage["files"])
    return os.statvfs_result(
        (bsize, bsize, capacity // bsize, free, free, FILES_MAX, files_free, files_free, 0, 255)
    )


def install_paths(names: Any) -> None:
    """The path calls, in `names` (a NameSwap on os)."""
    replacements: dict[str, Any] = {
        "stat": os_stat,
        "lstat": os_lstat,
        "rename": _two_paths("rename"),
        "replace": _two_paths("replace"),
        "remove": _path_call("remove", "unlink"),
        "unlink": _path_call("unlink", "unlink"),
        "rmdir": _path_call("rmdir", "rmdir"),
        "mkdir": _path_call("mkdir", "mkdir"),
        "listdir": os_listdir,
        "scandir": os_scandir,
        "truncate": os_truncate,
        "readlink": os_readlink,
        "utime": _metadata("utime", _utime),
        "chmod": _metadata("chmod", _chmod),
        "chown": _metadata("chown", _chown),
        "access": _metadata("access", _access),
        "statvfs": _metadata("statvfs", _statvfs),
        "listxattr": _metadata("listxattr", _listxattr),
        "getxattr": _metadata("getxattr", _getxattr),
        "setxattr": _metadata("setxattr", _xattr_refused),
        "removexattr": _metadata("removexattr", _xattr_refused),
        "symlink": _no_links("symlink"),
        "link": _no_links("link"),
    }
    for name, why in (
        ("chdir", "askew joins a relative path to the real working directory"),
        ("chroot", "a node has one root, the host's"),
        ("mkfifo", "a disk holds files and directories only"),
        ("mknod", "a disk holds files and directories only"),
        ("pathconf", "use os.statvfs"),
    ):
        replacements[name] = _refused(name, why)
    for name, fn in replacements.items():
        names.set(os, name, fn)
