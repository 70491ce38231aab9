# SPDX-License-Identifier: Apache-2.0
"""A node's disk resolves paths as Linux does (issue 24, item 2;
docs/disks.md): component by component, in the engine's one resolver
(askew_disk_locate, then the calls' walk), which C code's calls use too
(tests/disk/test_disk_preload.py runs the same cases through libc).

Every case of tests/disk/pathcases.py runs on the real file system and on
a node's disk, and the two must answer alike: "f/" is ENOTDIR, "d/." is
EINVAL to rmdir, "no/.." is ENOENT, "new/" is EISDIR to a create, and
"//mount/f" is the mount's, never the real directory under it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import run_sim
from pathcases import Calls, outcomes

import askew

pytestmark = pytest.mark.usefixtures("clean_env")


def on_a_disk(mount: str, fn: Any) -> Any:
    out: list[Any] = []

    async def body(world: askew.World) -> None:
        async def node(n: Any) -> None:
            out.append(fn())

        world.spawn(node, disk=mount)
        await world.clock.advance(1)

    run_sim(body)
    return out[0]


def test_every_call_resolves_a_path_on_the_disk_as_linux_does(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    expected = outcomes(str(real), Calls())
    mount = tmp_path / "mnt"  # a real, empty directory: the disk hides it
    mount.mkdir()
    got = on_a_disk(str(mount), lambda: outcomes(str(mount), Calls()))
    differ = {k: (expected[k], got[k]) for k in expected if expected[k] != got[k]}
    assert differ == {}, f"{len(differ)} of {len(expected)} differ (linux, askew): {differ}"
    assert list(mount.iterdir()) == []


@pytest.mark.parametrize(
    "spelling", ["//{m}/f", "{m}/./f", "{m}/../mnt/f", "/{m}//f", "{m}/d/../f", "{m}/d/../../mnt/f"]
)
def test_every_spelling_of_the_mount_reaches_the_disk_and_never_the_real_directory(
    tmp_path: Path, spelling: str
) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    path = spelling.format(m=mount)

    def fn() -> Any:
        os.mkdir(f"{mount}/d")
        with open(path, "w") as f:
            f.write("x")
        return sorted(os.listdir(str(mount))), os.path.exists(f"{mount}/f")

    assert on_a_disk(str(mount), fn) == (["d", "f"], True)
    assert list(mount.iterdir()) == []


def test_a_path_that_leaves_the_mount_by_dotdot_is_the_real_file_systems(tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    (tmp_path / "outside").write_text("real")

    def fn() -> Any:
        os.mkdir(f"{mount}/d")
        with open(f"{mount}/d/../../outside") as f:
            seen = f.read()
        try:
            os.stat(f"{mount}/no/../../outside")  # "no" is not on the disk
        except FileNotFoundError as exc:
            return seen, exc.filename
        return seen, None

    assert on_a_disk(str(mount), fn) == ("real", f"{mount}/no/../../outside")
