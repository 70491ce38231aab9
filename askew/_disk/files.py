# SPDX-License-Identifier: Apache-2.0
"""The file calls a node's code makes, routed to its simulated disk: open()
(text and binary, every mode, wrapped as io.open wraps FileIO), os.open
(dir_fd= too) and the os calls on descriptors; the calls on paths are
paths.py's. A call on a path outside the calling node's mount, or from
outside any node, goes to the real function; a descriptor call the disk
does not model is refused by name. install() puts them all in place for a
sweep; NameSwap.undo() takes them out.
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
from .._loop.refusal import refuse
from .disk import (
    FD_BASE,
    eio,
    failed,
    fd_of,
    fd_route,
    note_real_write,
)
from .paths import install_paths, os_stat, where

_real_open = builtins.open
_real = {
    name: getattr(os, name)
    for name in (
        "open close read write pread pwrite lseek fsync fdatasync ftruncate fstat stat lstat "
        "rename replace remove unlink rmdir mkdir listdir scandir truncate utime sendfile "
        "fchmod fchown fstatvfs posix_fadvise"
    ).split()
}


# ---- os: descriptors --------------------------------------------------------

_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    w = where(path, dir_fd)
    if w.nd is None:
        if flags & _WRITES:
            note_real_write(w.path)
        return int(_real["open"](w.path, flags, mode, dir_fd=w.dir_fd))
    try:
        return fd_of(w.nd, w.nd.disk.open(w.path, flags, mode))
    except OSError as exc:
        raise failed(w.nd, exc, path, "open") from None


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
    return os_stat(fd)  # type: ignore[no-any-return]


def _os_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int, *args: Any) -> int:
    """sendfile(2) with a simulated descriptor at either end (shutil's copy
    takes it first): the bytes are read and written by the routed calls, as
    the kernel copies them; two real ones are the real call's."""
    if fd_route(in_fd) is None and fd_route(out_fd) is None:
        return int(_real["sendfile"](out_fd, in_fd, offset, count, *args))
    data = os.read(in_fd, count) if offset is None else os.pread(in_fd, count, offset)
    return os.write(out_fd, data) if data else 0


def _refused_fd(name: str, why: str) -> Any:
    """os.<name>(fd, ...) on a simulated descriptor: refused by name (the
    disk does not model it), as C code's call is under the preload."""
    real = getattr(os, name)

    def call(fd: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(fd, int) and fd >= FD_BASE and fd_route(fd) is not None:
            refuse(f"os.{name}() of a simulated disk's descriptor", why, "is not modelled")
        return real(fd, *args, **kwargs)

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


def _os_posix_fadvise(fd: int, offset: int, length: int, advice: int) -> None:
    """Advice only: a disk takes it and changes nothing."""
    if fd_route(fd) is None:
        _real["posix_fadvise"](fd, offset, length, advice)


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
    elif opener is not None:
        # The opener opens (tempfile's does, os.open with a dir_fd): its
        # descriptor may be a simulated one.
        fd = opener(file, _flags(mode) | os.O_CLOEXEC)
        r = fd_route(fd)
        if r is None:
            return _real_open(
                file, mode, buffering, encoding, errors, newline, closefd, lambda *_: fd
            )
        nd, handle = r
    else:
        w = where(file) if not isinstance(file, int) else None
        if w is None or w.nd is None:
            path = file if w is None else w.path
            if w is not None and any(c in mode for c in "wax+"):
                note_real_write(path)
            return _real_open(path, mode, buffering, encoding, errors, newline, closefd, opener)
        nd = w.nd
        flags = _flags(mode)
        if not closefd:
            raise ValueError("Cannot use closefd=False with file name")
        try:
            handle = nd.disk.open(w.path, flags | os.O_CLOEXEC, 0o666)
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
        "ftruncate": _fd_call("ftruncate", "ftruncate"),
        "fsync": _core.disk_fsync,
        "fdatasync": _core.disk_fdatasync,
        "fstat": _os_fstat,
        "sendfile": _os_sendfile,
        "posix_fadvise": _os_posix_fadvise,
        # The fd forms of the metadata calls are their path forms' (which
        # take a descriptor), as os.fchmod(fd) is os.chmod(fd) in CPython.
        "fchmod": _fd_or_path("fchmod", "chmod"),
        "fchown": _fd_or_path("fchown", "chown"),
        "fstatvfs": _fd_or_path("fstatvfs", "statvfs"),
    }
    for name, why in (
        ("dup", "a simulated file has one descriptor: open it again"),
        ("dup2", "a simulated file has one descriptor: open it again"),
        ("readv", "read into one buffer"),
        ("writev", "write one bytes object"),
        ("preadv", "use os.pread"),
        ("pwritev", "use os.pwrite"),
        ("lockf", "C code's fcntl locks are served under askew-exec"),
        ("fchdir", "askew joins a relative path to the real working directory"),
        ("posix_fallocate", "write the bytes, or truncate"),
        ("copy_file_range", "use os.read and os.write, or os.sendfile"),
        ("splice", "use os.read and os.write"),
        ("fpathconf", "use os.fstatvfs"),
    ):
        if hasattr(os, name):
            replacements[name] = _refused_fd(name, why)
    for name, fn in replacements.items():
        names.set(os, name, fn)
    install_paths(names)


def _fd_or_path(name: str, path_form: str) -> Any:
    """os.<name>(fd, ...): on a simulated descriptor, os.<path_form>(fd, ...)
    as patched; else the real os.<name>."""
    real = _real[name]

    def call(fd: Any, *args: Any) -> Any:
        if fd_route(fd) is None:
            return real(fd, *args)
        return getattr(os, path_form)(fd, *args)

    call.__name__ = name
    call.__doc__ = real.__doc__
    return call


_core.disk_route_init(node_var, eio, _real)
io.RawIOBase.register(_core.DiskFile)
