# SPDX-License-Identifier: Apache-2.0
"""The calls beyond open/read/write on a node's disk (issue 24, item 3;
docs/disks.md "What is routed"): the dir_fd= and descriptor forms that
shutil.rmtree's walk takes, the metadata calls that shutil.copy, copy2 and
copytree make (chmod, utime, the xattrs), statvfs for disk_usage, and a
refusal by name for what the disk does not model, never a bare EBADF or a
real file touched."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import run_sim

import askew
from askew import _core
from askew.errors import NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")


def in_node(mount: Path, fn: Any, seed: int = 0) -> Any:
    """fn() in node 0, which has its disk at `mount` (an empty real
    directory, which must stay empty)."""
    out: list[Any] = []

    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            out.append(fn())

        world.spawn(node, disk=str(mount))
        await world.clock.advance(1)

    run_sim(body, seed=seed)
    assert list(mount.iterdir()) == [], "the real directory under the mount was written"
    return out[0]


@pytest.fixture
def mount(tmp_path: Path) -> Path:
    m = tmp_path / "mnt"
    m.mkdir()
    return m


def tree(root: str) -> None:
    os.makedirs(f"{root}/a/b/c")
    for name, data in (("a/x", b"1"), ("a/b/y", b"22"), ("a/b/c/z", b"333"), ("top", b"t")):
        with open(f"{root}/{name}", "wb") as f:
            f.write(data)


def listing(root: str) -> list[tuple[str, bytes | None]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        out.append((rel or ".", None))
        for name in sorted(filenames):
            with open(os.path.join(dirpath, name), "rb") as f:
                out.append((os.path.join(rel, name), f.read()))
    return out


def test_shutil_rmtree_removes_a_tree_on_the_disk_through_its_descriptor_walk(
    mount: Path,
) -> None:
    def fn() -> Any:
        tree(str(mount))
        assert shutil.rmtree.avoids_symlink_attacks  # the fd-based walk: scandir(fd), dir_fd=
        shutil.rmtree(f"{mount}/a")
        return os.listdir(str(mount))

    assert in_node(mount, fn) == ["top"]


def test_shutil_copy_copy2_copytree_and_move_work_on_the_disk(mount: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()

    def fn() -> Any:
        tree(str(mount))
        os.chmod(f"{mount}/top", 0o640)
        os.utime(f"{mount}/top", ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
        shutil.copy(f"{mount}/top", f"{mount}/copied")
        shutil.copy2(f"{mount}/top", f"{mount}/copied2")
        shutil.copytree(f"{mount}/a", f"{mount}/tree")
        shutil.move(f"{mount}/copied", f"{mount}/a/moved")  # a rename on one disk
        shutil.move(f"{mount}/tree/x", str(outside))  # EXDEV: copied out, then unlinked
        shutil.copy(str(outside / "x"), f"{mount}/back")  # real -> disk through sendfile
        st, st2 = os.stat(f"{mount}/top"), os.stat(f"{mount}/copied2")
        return (
            listing(str(mount)),
            stat.S_IMODE(os.stat(f"{mount}/a/moved").st_mode),
            (stat.S_IMODE(st2.st_mode), st2.st_mtime_ns == st.st_mtime_ns, st.st_mtime_ns),
            shutil.disk_usage(str(mount)).used,
        )

    got, mode, copy2, used = in_node(mount, fn)
    assert got == [
        (".", None),
        ("back", b"1"),
        ("copied2", b"t"),
        ("top", b"t"),
        ("a", None),
        ("a/moved", b"t"),
        ("a/x", b"1"),
        ("a/b", None),
        ("a/b/y", b"22"),
        ("a/b/c", None),
        ("a/b/c/z", b"333"),
        ("tree", None),
        ("tree/b", None),
        ("tree/b/y", b"22"),
        ("tree/b/c", None),
        ("tree/b/c/z", b"333"),
    ]
    assert mode == 0o640  # copy's copymode
    assert copy2 == (0o640, True, 1_600_000_000_123_456_789)  # copy2's copystat
    assert used == 4096  # a few bytes of content: one block of the capacity
    assert (outside / "x").read_bytes() == b"1"


def test_the_dir_fd_and_descriptor_forms_reach_the_directory_wherever_it_is_now(
    mount: Path,
) -> None:
    def fn() -> Any:
        tree(str(mount))
        d = os.open(f"{mount}/a/b", os.O_RDONLY | os.O_DIRECTORY)
        os.rename(f"{mount}/a", f"{mount}/renamed")  # the descriptor follows the directory
        fd = os.open("new", os.O_WRONLY | os.O_CREAT, dir_fd=d)
        os.write(fd, b"via dir_fd")
        os.close(fd)
        seen = sorted(os.listdir(d)), sorted(e.name for e in os.scandir(d))
        entry = next(e for e in os.scandir(d) if e.name == "y")
        entry_seen = entry.path, entry.stat().st_size  # through d, while it is open
        st = os.stat("y", dir_fd=d)
        os.unlink("y", dir_fd=d)
        absolute = os.stat(f"{mount}/top", dir_fd=d).st_size  # an absolute path ignores dir_fd
        walked = [(p, sorted(f)) for p, _dirs, f, _fd in os.fwalk(f"{mount}/renamed")]
        os.close(d)
        return seen, (*entry_seen, st.st_size, st.st_dev), absolute, walked

    seen, entry, absolute, walked = in_node(mount, fn)
    assert seen == (["c", "new", "y"], ["c", "new", "y"])
    assert entry == ("y", 2, 2, _core.DISK_DEV_BASE + 0)  # node 0, before any crash
    assert absolute == 1
    assert walked == [
        (f"{mount}/renamed", ["x"]),
        (f"{mount}/renamed/b", ["new"]),
        (f"{mount}/renamed/b/c", ["z"]),
    ]


def test_metadata_calls_keep_modes_and_times_and_no_extended_attributes(mount: Path) -> None:
    def fn() -> Any:
        with open(f"{mount}/f", "w") as f:
            f.write("x")
            os.fchmod(f.fileno(), 0o600)
            fmode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        os.utime(f"{mount}/f", (100.0, 200.5))
        out = [fmode, os.stat(f"{mount}/f").st_mtime, os.access(f"{mount}/f", os.W_OK)]
        out += [os.access(f"{mount}/nope", os.F_OK), os.listxattr(f"{mount}/f")]
        for call in (
            lambda: os.setxattr(f"{mount}/f", "user.k", b"v"),
            lambda: os.getxattr(f"{mount}/f", "user.k"),
            lambda: os.listxattr(f"{mount}/nope"),
            lambda: os.readlink(f"{mount}/f"),
            lambda: os.chmod(f"{mount}/nope", 0o600),
        ):
            try:
                call()
            except OSError as exc:
                out.append(errno.errorcode[exc.errno])
        os.chown(f"{mount}/f", 0, 0)  # owners are not modelled: accepted, nothing changes
        vfs = os.statvfs(str(mount))
        out += [vfs.f_bsize, vfs.f_blocks * vfs.f_frsize, vfs.f_namemax]
        return out

    assert in_node(mount, fn) == [
        0o600,
        200.5,
        True,
        False,
        [],
        "ENOTSUP",
        "ENODATA",
        "ENOENT",
        "EINVAL",
        "ENOENT",
        4096,
        64 << 20,
        255,
    ]


def test_tempfile_makes_its_files_on_the_disk(mount: Path) -> None:
    def fn() -> Any:
        fd, name = tempfile.mkstemp(dir=str(mount))
        os.write(fd, b"m")
        os.close(fd)
        with tempfile.TemporaryFile(dir=str(mount)) as t:  # no O_TMPFILE: the named fallback
            t.write(b"tmp")
            t.seek(0)
            data = t.read()
        with tempfile.NamedTemporaryFile(dir=str(mount), delete=False) as n:
            n.write(b"n")
        made = tempfile.mkdtemp(dir=str(mount))
        return data, sorted(os.listdir(str(mount))) == sorted(
            os.path.basename(p) for p in (name, n.name, made)
        )

    assert in_node(mount, fn) == (b"tmp", True)


@pytest.mark.parametrize(
    "call",
    [
        "os.dup(fd)",
        "os.readv(fd, [bytearray(1)])",
        "os.posix_fallocate(fd, 0, 10)",
        "os.lockf(fd, os.F_LOCK, 0)",
        "os.chdir(MOUNT)",
        "os.mkfifo(MOUNT + '/p')",
    ],
)
def test_what_the_disk_does_not_model_is_refused_by_name(mount: Path, call: str) -> None:
    def fn() -> Any:
        fd = os.open(f"{mount}/f", os.O_RDWR | os.O_CREAT)
        try:
            eval(call, {"os": os, "fd": fd, "MOUNT": str(mount)})
        except NondeterminismError as exc:
            return str(exc)
        return None

    with pytest.raises(SimulationFailure) as failed:
        in_node(mount, fn)
    name = call.split("(")[0]
    assert name in str(failed.value) and "simulated disk" in str(failed.value)
