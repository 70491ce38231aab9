# SPDX-License-Identifier: Apache-2.0
"""Simulated disks (docs/disks.md): a node's file I/O under its mount goes to
its own disk and nowhere else; a crash keeps what was durable and a seeded
part of the rest; faults are seeded, logged and shrinkable; the same seed
gives the same run in any process; bad input gets Linux's or Python's
answer; the patches go away after the run."""

from __future__ import annotations

import builtins
import errno
import io
import os
import pathlib
import re
import textwrap
import time
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim

import askew
from askew import _core
from askew._disk import disk as _disk
from askew._disk import files as _files
from askew.errors import SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")

MOUNT = "/askew-test-disk/data"  # never exists on the real file system


def run_node(fn: Any, seed: int = 0, mount: str = MOUNT, after: Any = None) -> Any:
    """Run fn(node) in a node with a disk at `mount`; then after(world, handle)
    in the test body. Returns the handle's `result`."""
    out: list[Any] = []

    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            n.result = await fn(n)

        h = world.spawn(node, disk=mount)
        await world.clock.advance(1)
        if after is not None:
            await after(world, h)
        out.append(h.result)

    run_sim(body, seed=seed)
    return out[0]


# ---- file I/O under the mount ----------------------------------------------------


def test_open_os_and_pathlib_under_the_mount_reach_the_nodes_disk() -> None:
    async def fn(n: Any) -> Any:
        assert n.disk == MOUNT
        with open(f"{MOUNT}/a.txt", "w", encoding="utf-8") as f:
            f.write("héllo\n")
        with open(f"{MOUNT}/a.txt", encoding="utf-8") as f:
            assert f.read() == "héllo\n"
        with open(f"{MOUNT}/a.txt", "r+b") as f:
            f.seek(3)
            f.write(b"L")
            f.seek(0)
            assert f.read() == "héLlo\n".encode()
        os.makedirs(f"{MOUNT}/x/y", exist_ok=True)
        p = pathlib.Path(MOUNT) / "x" / "y" / "z.bin"
        p.write_bytes(b"\1" * 1000)
        assert p.read_bytes() == b"\1" * 1000
        assert p.stat().st_size == os.path.getsize(p) == 1000
        assert os.path.isdir(f"{MOUNT}/x") and os.path.isfile(f"{MOUNT}/a.txt")
        assert os.listdir(MOUNT) == ["a.txt", "x"]
        assert [e.name for e in os.scandir(MOUNT)] == ["a.txt", "x"]
        assert sorted(q.name for q in pathlib.Path(MOUNT).iterdir()) == ["a.txt", "x"]
        (pathlib.Path(MOUNT) / "x" / "t").touch()
        (pathlib.Path(MOUNT) / "x" / "t").touch()  # exists: os.utime, then nothing
        os.remove(f"{MOUNT}/x/t")
        with pytest.raises(FileExistsError):
            open(f"{MOUNT}/a.txt", "x")
        with open(f"{MOUNT}/log", "a") as f:
            f.write("1")
        with open(f"{MOUNT}/log", "a") as f:
            assert f.tell() == 1
            f.write("2")
        fd = os.open(f"{MOUNT}/raw", os.O_RDWR | os.O_CREAT, 0o600)
        assert fd >= _disk.FD_BASE
        assert os.write(fd, b"abcdef") == 6
        assert os.pread(fd, 3, 1) == b"bcd"
        assert os.lseek(fd, 0, os.SEEK_SET) == 0
        assert os.read(fd, 2) == b"ab"
        os.pwrite(fd, b"Z", 5)
        os.ftruncate(fd, 4)
        os.fsync(fd)
        os.fdatasync(fd)
        assert os.fstat(fd).st_size == 4
        os.close(fd)
        os.truncate(f"{MOUNT}/raw", 2)
        os.rename(f"{MOUNT}/raw", f"{MOUNT}/raw2")
        os.replace(f"{MOUNT}/raw2", f"{MOUNT}/log")
        os.remove(f"{MOUNT}/log")
        os.unlink(f"{MOUNT}/a.txt")
        os.remove(p)
        os.rmdir(f"{MOUNT}/x/y")
        assert not os.path.exists(f"{MOUNT}/a.txt")
        return sorted(os.listdir(MOUNT))

    assert run_node(fn) == ["x"]
    assert not os.path.exists(MOUNT)


def test_the_real_directory_at_the_mount_stays_empty(tmp_path: pathlib.Path) -> None:
    mount = str(tmp_path / "data")
    os.mkdir(mount)

    async def fn(n: Any) -> Any:
        with open(f"{mount}/file", "wb") as f:
            f.write(b"x" * 10_000)
        os.mkdir(f"{mount}/sub")
        return os.listdir(mount)

    assert run_node(fn, mount=mount) == ["file", "sub"]
    assert os.listdir(mount) == []


def test_the_test_body_sees_the_real_path_and_reads_the_disk_through_world_disk() -> None:
    async def fn(n: Any) -> Any:
        with open(f"{MOUNT}/k", "w") as f:
            f.write("v")
        return None

    async def after(world: askew.World, h: Any) -> None:
        assert not os.path.exists(f"{MOUNT}/k")  # the real file system
        view = world.disk(h)
        assert view.mount == MOUNT
        assert view.read("/k") == b"v" == view.read(f"{MOUNT}/k")
        assert view.exists("k") and not view.exists("nope")
        assert view.listdir() == ["k"]
        assert list(view.walk()) == ["/k"]
        assert view.usage()["files"] == 2

    run_node(fn, after=after)


def test_two_nodes_with_the_same_mount_have_separate_disks() -> None:
    async def body(world: askew.World) -> None:
        async def writer(n: Any, text: str) -> None:
            with open(f"{MOUNT}/f", "w") as f:
                f.write(text)

        a = world.spawn(writer, "a", disk=MOUNT)
        b = world.spawn(writer, "b", disk=MOUNT)
        await world.clock.advance(1)
        assert world.disk(a).read("/f") == b"a"
        assert world.disk(b).read("/f") == b"b"

    run_sim(body)


def test_a_node_without_a_disk_and_other_paths_see_the_real_file_system(
    tmp_path: pathlib.Path,
) -> None:
    real = tmp_path / "real.txt"
    real.write_text("real")

    async def body(world: askew.World) -> None:
        async def plain(n: Any) -> None:
            n.seen = os.path.exists(f"{MOUNT}/f")

        async def with_disk(n: Any) -> None:
            with open(f"{MOUNT}/f", "w") as f:
                f.write("x")
            with open(real) as f:
                n.real = f.read()

        d = world.spawn(with_disk, disk=MOUNT)
        p = world.spawn(plain)
        await world.clock.advance(1)
        assert p.seen is False and d.real == "real"
        assert p.disk is None

    run_sim(body)


# ---- crashes -------------------------------------------------------------------------


def _crash_run(seed: int, sync: bool) -> tuple[bytes | None, str]:
    out: list[Any] = []

    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            if os.path.exists(f"{MOUNT}/f"):
                with open(f"{MOUNT}/f", "rb") as f:
                    n.found = f.read()
                return
            n.found = None
            with open(f"{MOUNT}/f", "wb") as f:
                f.write(b"x" * 2000)
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
            if sync:
                fd = os.open(MOUNT, os.O_RDONLY | os.O_DIRECTORY)
                os.fsync(fd)
                os.close(fd)

        h = world.spawn(node, disk=MOUNT)
        await world.clock.advance(1)
        world.faults.restart(h)
        await world.clock.advance(1)
        out.append((h.found, [e.text for e in world.log.faults()][1]))

    run_sim(body, seed=seed)
    return out[0]


def test_a_restart_sees_what_was_fsynced_with_its_directory() -> None:
    for seed in range(10):
        assert _crash_run(seed, sync=True)[0] == b"x" * 2000


def test_a_crash_keeps_a_seeded_part_of_what_was_not_fsynced() -> None:
    found = [_crash_run(seed, sync=False)[0] for seed in range(40)]
    assert None in found  # the name lost
    assert b"x" * 2000 in found  # all of it kept
    torn = [f for f in found if f is not None and f != b"x" * 2000]
    assert torn  # a torn or shortened file
    for f in torn:
        assert set(f) <= {0, ord("x")}
    text = _crash_run(3, sync=False)[1]
    assert text.startswith("disk 0 crash: ") and " unsynced sectors, " in text


def test_a_crash_line_names_what_it_lost_and_why() -> None:
    runs = [_crash_run(seed, sync=False) for seed in range(40)]
    lost = [text for found, text in runs if found is None]
    assert lost
    for text in lost:
        assert text.startswith(
            f"disk 0 crash: lost create {MOUNT}/f: its directory was never fsynced; kept "
        ), text
        assert text.endswith(", 0/1 directory operations"), text
    kept = [text for found, text in runs if found is not None]
    assert kept and all(" lost " not in t and t.endswith("1/1 directory operations") for t in kept)
    # Synced with its directory: nothing of it is lost.
    assert " lost " not in _crash_run(0, sync=True)[1]


def test_a_crash_line_names_a_rename_and_a_directory_fsynced_before() -> None:
    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            fd = os.open(MOUNT, os.O_RDONLY | os.O_DIRECTORY)
            os.mkdir(f"{MOUNT}/d")
            os.fsync(fd)
            os.close(fd)
            with open(f"{MOUNT}/d/tmp", "wb") as f:
                f.write(b"x")
            os.rename(f"{MOUNT}/d/tmp", f"{MOUNT}/final")
            for name in ("a", "b", "c"):
                os.mkdir(f"{MOUNT}/{name}")
            await n.recv()

        h = world.spawn(node, disk=MOUNT)
        await world.clock.advance(1)
        world.faults.crash(h)
        world.text = [e.text for e in world.log.faults()][-1]

    texts: list[str] = []

    async def run(world: askew.World) -> None:
        await body(world)
        texts.append(world.text)

    for seed in range(30):
        run_sim(run, seed=seed)
        if texts[-1].startswith("disk 0 crash: lost create "):
            break
    text = texts[-1]
    assert text.startswith(
        f"disk 0 crash: lost create {MOUNT}/d/tmp: its directory was never fsynced; "
        f"rename {MOUNT}/d/tmp -> {MOUNT}/final: its directory was not fsynced after it; "
        f"mkdir {MOUNT}/a: its directory was not fsynced after it; 2 more directory operations; "
    ), text


def test_a_file_opened_before_a_crash_is_dead_after_it() -> None:
    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            n.f = open(f"{MOUNT}/f", "wb", buffering=0)
            n.f.write(b"1")

        h = world.spawn(node, disk=MOUNT)
        await world.clock.advance(1)
        old = h.f
        world.faults.restart(h)
        await world.clock.advance(1)
        assert not hasattr(h, "f") or h.f is not old  # the new incarnation's
        old.close()  # no error, and nothing of the new incarnation is closed

    run_sim(body)


# ---- faults --------------------------------------------------------------------------


def test_disk_faults_fail_calls_cost_time_and_are_logged_and_shrinkable() -> None:
    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            f = open(f"{MOUNT}/f", "wb", buffering=0)
            f.write(b"\0" * 8)
            n.wait = asyncio_sleep
            await asyncio_sleep(1)
            t0 = time.monotonic()
            try:
                f.write(b"x")
            except OSError as exc:
                n.error = exc.errno
            n.cost = time.monotonic() - t0
            with open(f"{MOUNT}/f", "rb") as g:
                n.read = g.read()

        h = world.spawn(node, disk=MOUNT)
        await world.clock.advance(0.5)
        world.faults.disk(h, eio_write=1.0, bitrot=1.0, latency=0.25)
        await world.clock.advance(5)
        assert h.error == errno.EIO
        assert h.cost == pytest.approx(0.25)
        assert sum(bin(b).count("1") for b in h.read) == 1  # one bit flipped
        texts = [e.text for e in world.log.faults()]
        assert any(t.startswith("disk 0: eio read 0 write 1") for t in texts)
        assert "disk 0: EIO on write" in texts
        assert any("disk 0: eio" in what for _t, what in world._fault_calls)

    run_sim(body)


async def asyncio_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def test_a_capacity_bounds_the_disk_with_enospc() -> None:
    async def fn(n: Any) -> Any:
        with open(f"{MOUNT}/big", "wb") as f:
            f.truncate(_core.DISK_CAPACITY_DEFAULT // 2)
        with pytest.raises(OSError) as info, open(f"{MOUNT}/big2", "wb") as f:
            f.truncate(1 << 40)  # a terabyte: ENOSPC, not an exhausted machine
        assert info.value.errno == errno.ENOSPC
        return True

    assert run_node(fn)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eio_read": 2}, "eio_read"),
        ({"eio_fsync": -0.1}, "eio_fsync"),
        ({"bitrot": "x"}, "bitrot"),
        ({"latency": -1}, "latency"),
        ({"latency": (2, 1)}, "latency"),
        ({"capacity": 0}, "capacity"),
        ({"capacity": True}, "capacity"),
        ({"capacity": 2**64 + 5}, "2\\*\\*64"),  # not a 5-byte disk
        ({"capacity": 2**64}, "18446744073709551616"),
    ],
)
def test_bad_disk_faults_are_value_errors_naming_the_value(kwargs: Any, message: str) -> None:
    async def body(world: askew.World) -> None:
        h = world.spawn(idle, disk=MOUNT)
        with pytest.raises(ValueError, match=message):
            world.faults.disk(h, **kwargs)
        other = world.spawn(idle)
        with pytest.raises(ValueError, match="has no disk"):
            world.faults.disk(other, eio_read=0.5)

    run_sim(body)


async def idle(n: Any) -> None:
    pass


def test_a_capacity_is_taken_whole_up_to_2_64_and_never_wraps() -> None:
    async def body(world: askew.World) -> None:
        h = world.spawn(idle, disk=MOUNT)
        world.faults.disk(h, capacity=2**64 - 1)
        assert world.disk(h)._nd.disk.get_faults()[6] == 2**64 - 1
        with pytest.raises(OverflowError):  # the binding checks too, never masks
            world.disk(h)._nd.disk.set_faults(0, 0, 0, 0, 0, 0, 2**64 + 5)

    run_sim(body)


@pytest.mark.parametrize(
    ("mount", "error"),
    [("data", ValueError), ("/", ValueError), ("//", ValueError), (3, TypeError)],
)
def test_a_bad_mount_is_refused_at_spawn(mount: Any, error: type) -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(error, match="disk"):
            world.spawn(idle, disk=mount)

    run_sim(body)


def test_a_mount_over_sys_path_is_refused() -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(ValueError, match=r"sys\.path"):
            world.spawn(idle, disk=os.path.dirname(os.path.dirname(askew.__file__)))

    run_sim(body)


# ---- bad input and edges ---------------------------------------------------------------


def test_a_path_escaping_the_mount_goes_to_the_real_file_system() -> None:
    async def fn(n: Any) -> Any:
        with open(f"{MOUNT}/in", "w") as f:
            f.write("x")
        with pytest.raises(FileNotFoundError):  # /askew-test-disk/other: real, absent
            open(f"{MOUNT}/../other/f", "w")
        assert not os.path.exists(f"{MOUNT}/sub/../in")  # as Linux: no sub to pass
        os.mkdir(f"{MOUNT}/sub")
        assert os.path.exists(f"{MOUNT}/sub/../in")
        return os.listdir(MOUNT)

    assert run_node(fn) == ["in", "sub"]


def test_symlinks_and_hard_links_on_a_disk_are_refused() -> None:
    async def fn(n: Any) -> Any:
        open(f"{MOUNT}/f", "w").close()
        with pytest.raises(PermissionError):
            os.symlink(f"{MOUNT}/f", f"{MOUNT}/l")
        with pytest.raises(PermissionError):
            os.symlink("/etc/passwd", f"{MOUNT}/l")
        with pytest.raises(PermissionError):
            os.link(f"{MOUNT}/f", f"{MOUNT}/h")
        return os.listdir(MOUNT)

    assert run_node(fn) == ["f"]


def test_a_directory_opened_for_writing_is_eisdir() -> None:
    async def fn(n: Any) -> Any:
        os.mkdir(f"{MOUNT}/d")
        with pytest.raises(IsADirectoryError):
            open(f"{MOUNT}/d", "w")
        with pytest.raises(IsADirectoryError):
            open(f"{MOUNT}/d")
        with pytest.raises(IsADirectoryError):
            os.open(f"{MOUNT}/d", os.O_WRONLY)
        open(f"{MOUNT}/f", "w").close()
        with pytest.raises(NotADirectoryError):
            os.listdir(f"{MOUNT}/f")
        with pytest.raises(NotADirectoryError):
            open(f"{MOUNT}/f/x", "w")
        return True

    assert run_node(fn)


def test_writing_a_closed_file_is_a_value_error_as_in_python() -> None:
    async def fn(n: Any) -> Any:
        for buffering, mode in ((0, "wb"), (-1, "wb"), (-1, "w")):
            f = open(f"{MOUNT}/f", mode, buffering=buffering)
            f.close()
            with pytest.raises(ValueError):
                f.write(b"x" if "b" in mode else "x")
        return True

    assert run_node(fn)


def test_fsync_of_a_read_only_descriptor_is_allowed_as_on_linux() -> None:
    async def fn(n: Any) -> Any:
        open(f"{MOUNT}/f", "w").close()
        fd = os.open(f"{MOUNT}/f", os.O_RDONLY)
        os.fsync(fd)
        with pytest.raises(OSError) as info:
            os.write(fd, b"x")
        assert info.value.errno == errno.EBADF
        os.close(fd)
        with pytest.raises(OSError):
            os.close(fd)
        return True

    assert run_node(fn)


def test_a_real_descriptor_from_before_the_run_stays_real(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "before"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)

    async def fn(n: Any) -> Any:
        os.write(fd, b"real")
        os.fsync(fd)
        return os.fstat(fd).st_size

    try:
        assert run_node(fn) == 4
        assert path.read_bytes() == b"real"
    finally:
        os.close(fd)


def test_a_simulated_descriptor_is_ebadf_outside_its_node_and_its_run() -> None:
    fds: list[int] = []

    async def fn(n: Any) -> Any:
        fd = os.open(f"{MOUNT}/f", os.O_RDWR | os.O_CREAT)
        fds.append(fd)
        return fd

    async def after(world: askew.World, h: Any) -> None:
        with pytest.raises(OSError) as info:
            os.write(fds[0], b"x")  # the test body is not the node
        assert info.value.errno == errno.EBADF

    run_node(fn, after=after)
    with pytest.raises(OSError) as info:
        os.read(fds[0], 1)
    assert info.value.errno == errno.EBADF


# ---- restore and determinism ---------------------------------------------------------


_PATCHED = ("open", "close", "read", "write", "stat", "listdir", "scandir", "rename", "symlink")


def _snapshot() -> dict[str, Any]:
    return {
        "builtins.open": builtins.open,
        "io.open": io.open,
        **{f"os.{name}": getattr(os, name) for name in _PATCHED},
    }


def test_the_file_patches_are_restored_after_a_pass_and_a_failure() -> None:
    before = _snapshot()

    async def fails(world: askew.World) -> None:
        world.spawn(idle, disk=MOUNT)
        assert builtins.open is _files._open
        raise AssertionError("on purpose")

    with pytest.raises(SimulationFailure):
        run_sim(fails)
    assert _snapshot() == before
    run_node(idle_fn)
    assert _snapshot() == before


async def idle_fn(n: Any) -> None:
    return None


def disk_trace(seed: int) -> tuple[int, list[str]]:
    out: list[Any] = []

    async def body(world: askew.World) -> None:
        async def node(n: Any, k: int) -> None:
            for i in range(20):
                try:
                    with open(f"{MOUNT}/f{i % 3}", "ab") as f:
                        f.write(bytes([k]) * (300 + i * 7))
                        if i % 4 == 0:
                            os.fsync(f.fileno())
                except OSError as exc:  # the EIO fault
                    n.emit(f"error {exc.errno}")
                os.replace(f"{MOUNT}/f{i % 3}", f"{MOUNT}/g{i % 2}")
                await asyncio_sleep(0.01)

        hs = [world.spawn(node, k, disk=MOUNT) for k in range(3)]
        await world.clock.advance(0.1)
        world.faults.disk(hs[1], eio_write=0.1, latency=(0.001, 0.01))
        world.faults.restart(hs[0])
        await world.clock.advance(1)
        world.faults.crash(hs[2])
        files = {
            h.id: sorted((p, len(world.disk(h).read(p))) for p in world.disk(h).walk()) for h in hs
        }
        world.log.emit(f"files {files}")
        out.append((world.log.hash, [str(e) for e in world.log]))

    run_sim(body, seed=seed)
    return out[0]


def test_the_same_seed_gives_the_same_disk_run_and_hash() -> None:
    first = disk_trace(7)
    assert disk_trace(7) == first
    assert disk_trace(8)[0] != first[0]


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_disk as t
    print(json.dumps(t.disk_trace(1234)))
    """
)


def test_a_disk_run_hashes_alike_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "1", "12345"))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == disk_trace(1234)[0]


def test_looking_at_a_disk_from_the_test_body_draws_no_fault() -> None:
    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            with open(f"{MOUNT}/f", "wb") as f:
                f.write(b"data")

        h = world.spawn(node, disk=MOUNT)
        await world.clock.advance(1)
        world.faults.disk(h, eio_read=1.0, bitrot=1.0, latency=0.5)
        t = world.now
        view = world.disk(h)
        assert view.read("/f") == b"data"
        assert view.exists("/f") and view.listdir() == ["f"] and view.walk() == ["/f"]
        assert world.now == t
        assert world._disks[h.id].disk.get_faults()[0] == 1_000_000  # restored

    run_sim(body)


async def _needs_the_disk_fault(world: askew.World) -> None:
    async def writer(n: Any) -> None:
        with open(f"{MOUNT}/f", "wb", buffering=0) as f:
            await asyncio_sleep(0.5)
            f.write(b"x")  # EIO when the fault is on: the node raises

    h = world.spawn(writer, disk=MOUNT)
    other = world.spawn(idle)
    world.faults.crash(other)  # #0: not needed
    world.faults.disk(h, eio_write=1.0)  # #1: needed
    await world.clock.advance(1)


def test_the_shrinker_suppresses_a_disk_fault_like_any_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_SHRINK", "1")
    with pytest.raises(SimulationFailure) as info:
        askew.simulate(seed=7, iterations=1)(_needs_the_disk_fault)()
    report = info.value.report
    assert "not needed  #0 " in report and "crash 1" in report
    assert "needed      #1 " in report and "disk 0: eio read 0 write 1" in report
    assert re.search(r"replay shrunk: ASKEW_SUPPRESS=0[, ]", report)  # then simplified draws
