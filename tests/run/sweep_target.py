# SPDX-License-Identifier: Apache-2.0
"""The module `askew sweep`'s tests sweep (tests/run/test_sweep.py and
test_sweep_workers.py), written to a test's tmp_path, and their helpers."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askew._run import sweep as _sweep

# The README quickstart with a second failure line behind a buggify point,
# so a sweep finds two signatures; a test that always passes; two that are
# not for `askew sweep`.
QUICKSTART = (Path(__file__).resolve().parents[2] / "examples" / "quickstart.py").read_text()
_CHECK = "    assert len({n.leader for n in nodes}) == 1\n"
TARGET = (
    QUICKSTART.replace(
        _CHECK,
        '    if askew.buggify("split-check", 0.5):\n'
        '        assert nodes[0].leader == 4, "node 0 lost the election"\n' + _CHECK,
    )
    + """
@askew.simulate(seed=7, iterations=10)
async def test_passes(world):
    await world.clock.advance(seconds=1)

async def test_plain(world):
    pass

@askew.simulate
async def test_with_fixture(world, tmp_path):
    pass

class TestGroup:
    @askew.simulate(seed=5)
    async def test_method(self, world):
        assert world.seed % 7, "a seed divisible by 7"

import ctypes, os

if os.path.exists("die_in_workers") and os.getpid() != int(open("die_in_workers").read()):
    os._exit(7)  # a worker that cannot even import the test

@askew.simulate(seed=11)
async def test_kills_its_worker_on_two_seeds(world):
    # Iteration 5 ends its process, iteration 30 crashes it (in C); a seed
    # divisible by 7 fails as a test fails.
    if world.seed == askew._core.seed_iteration(11, 5):
        os._exit(1)
    if world.seed == askew._core.seed_iteration(11, 30):
        ctypes.string_at(0)
    assert world.seed % 7, "a seed divisible by 7"

@askew.simulate(seed=11)
async def test_kills_its_process_once(world):
    # Once armed, iteration 5 ends its process the first time it runs (the
    # file "killed" says it ran): a worker that dies once, not for its seed.
    if world.seed == askew._core.seed_iteration(11, 5) and os.path.exists("armed"):
        if not os.path.exists("killed"):
            open("killed", "w").close()
            os._exit(1)
"""
)


@contextlib.contextmanager
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The target module in tmp_path, the working directory; sys.path and the
    module table restored afterwards."""
    # A name of its own: a module imported in this process stays importable.
    path = tmp_path / f"test_target_{abs(hash(tmp_path)) % 10**8}.py"
    assert _CHECK in QUICKSTART  # the quickstart still ends with its check
    path.write_text(TARGET)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield path
    sys.modules.pop(path.stem, None)


def options(test_id: str, seeds: int, **kw: Any) -> _sweep.Options:
    values: dict[str, Any] = {"base": None, "workers": 2, "shard": None, "first": False}
    values.update(kw)
    return _sweep.Options(test_id, seeds, **values)


def child_env() -> dict[str, str]:
    """This environment without the shell's ASKEW_* and pytest's settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
