# SPDX-License-Identifier: Apache-2.0
"""Path resolution, differentially: each call of a list (open in five ways,
stat, unlink, rmdir, mkdir, truncate, listdir, rename from, to and of a
directory) on each path of a list ("f/", "d/.", "no/..", "//mount/f"...),
on a fresh small tree. tests/disk/test_disk_paths.py runs them on the real
file system and in a node on its disk through Python's calls; the preload's
test runs them through C's (ctypes into libc) in a child under askew-exec.
The outcomes (a kind of success, or the errno's name) must be equal.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat as stat_mod
from collections.abc import Callable
from typing import Any

# Paths relative to a case's root directory, which holds f (a file), d/e (a
# directory) and d/g (a file).
RELS = (
    "f", "f/", "f//", "f/.", "f/..", "d", "d/", "d/.", "d/..", "d//e", "d/./e",
    "d/../d/e", "d/e", "d/e/", "d/e/.", "d/e/..", "d/e/../g", "d/g", "d/g/", "d/g/x",
    "no", "no/", "no/.", "no/..", "d/no/..", "new", "new/", "d/new/", ".", "./", ".//",
)  # fmt: skip
OPS = (
    "open_r", "open_w", "open_x", "open_dir", "open_new_w", "stat", "unlink", "rmdir",
    "mkdir", "truncate", "listdir", "rename_from", "rename_to", "rename_to_dir",
)  # fmt: skip


def prefixes(mount: str) -> tuple[str, ...]:
    """Spellings of a mount that the kernel resolves to it: a doubled
    slash, ".", and ".." out of it and back in, through a directory on it
    (c0, the first case's, made before any spelling but the first is used)."""
    base = os.path.basename(mount)
    return (
        mount,
        "/" + mount,
        mount + "/.",
        f"{mount}/../{base}",
        f"{mount}/c0/../../{base}",
    )


class Calls:
    """The calls a case makes, as Python's os module answers them."""

    def open(self, path: str, flags: int) -> None:
        os.close(os.open(path, flags, 0o666))

    def stat_is_dir(self, path: str) -> bool:
        return stat_mod.S_ISDIR(os.stat(path).st_mode)

    # os's functions looked up at each call: a run patches them.
    def unlink(self, path: str) -> None:
        os.unlink(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def truncate(self, path: str) -> None:
        os.truncate(path, 0)

    def listdir(self, path: str) -> Any:
        return sorted(os.listdir(path))


class LibcCalls(Calls):
    """The same calls through libc (ctypes): what C code meets, under the
    preload its interposers. listdir has no libc twin here (readdir is not
    interposed): it stays Python's."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)

    def _check(self, rc: int, path: str) -> int:
        if rc < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        return rc

    def _c(self, path: str) -> bytes:
        return os.fsencode(path)

    def open(self, path: str, flags: int) -> None:
        fd = self._check(self.libc.open(self._c(path), flags, 0o666), path)
        self.libc.close(fd)

    def stat_is_dir(self, path: str) -> bool:
        buf = ctypes.create_string_buffer(256)  # struct stat; st_mode at 24 on x86-64 and arm64
        self._check(self.libc.stat(self._c(path), buf), path)
        offset = 24 if os.uname().machine == "x86_64" else 16
        return stat_mod.S_ISDIR(int.from_bytes(buf.raw[offset : offset + 4], "little"))

    def unlink(self, path: str) -> None:
        self._check(self.libc.unlink(self._c(path)), path)

    def rmdir(self, path: str) -> None:
        self._check(self.libc.rmdir(self._c(path)), path)

    def mkdir(self, path: str) -> None:
        self._check(self.libc.mkdir(self._c(path), 0o777), path)

    def rename(self, src: str, dst: str) -> None:
        self._check(self.libc.rename(self._c(src), self._c(dst)), src)

    def truncate(self, path: str) -> None:
        self._check(self.libc.truncate(self._c(path), ctypes.c_long(0)), path)


def _op(calls: Calls, op: str, path: str, root: str) -> Any:
    flags = {
        "open_r": os.O_RDONLY,
        "open_w": os.O_WRONLY,
        "open_x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
        "open_dir": os.O_RDONLY | os.O_DIRECTORY,
        "open_new_w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    }
    if op in flags:
        calls.open(path, flags[op])
        return "ok"
    steps: dict[str, Callable[[], Any]] = {
        "stat": lambda: "dir" if calls.stat_is_dir(path) else "file",
        "unlink": lambda: calls.unlink(path),
        "rmdir": lambda: calls.rmdir(path),
        "mkdir": lambda: calls.mkdir(path),
        "truncate": lambda: calls.truncate(path),
        "listdir": lambda: calls.listdir(path),
        "rename_from": lambda: calls.rename(path, root + "/moved"),
        "rename_to": lambda: calls.rename(root + "/f", path),
        "rename_to_dir": lambda: calls.rename(root + "/d/e", path),
    }
    got = steps[op]()
    return "ok" if got is None else got


def _tree(root: str) -> None:
    os.mkdir(root)
    with open(root + "/f", "wb") as f:
        f.write(b"x")
    os.makedirs(root + "/d/e")
    with open(root + "/d/g", "wb") as f:
        f.write(b"y")


def outcomes(base: str, calls: Calls, ops: tuple[str, ...] = OPS) -> dict[str, Any]:
    """Every op on every path, each on a fresh tree under `base` (the real
    directory, or a mount): "op path" -> what it gave ("ok", "dir",
    "file", a listing) or the errno's name. A path is spelled from each of
    `base`'s prefixes in turn, so the spellings of the mount are checked
    with the rest."""
    out: dict[str, Any] = {}
    spellings = prefixes(base)
    k = 0
    for op in ops:
        for i, rel in enumerate(RELS):
            root = f"{base}/c{k}"
            k += 1
            _tree(root)
            where = spellings[i % len(spellings)]
            path = f"{where}/c{k - 1}/{rel}"
            try:
                out[f"{op} {rel}"] = _op(calls, op, path, root)
            except OSError as exc:
                out[f"{op} {rel}"] = errno.errorcode[exc.errno]
    return out
