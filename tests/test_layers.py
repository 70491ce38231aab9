# SPDX-License-Identifier: Apache-2.0
"""The import contract of askew/ (scripts/check_layers.py, also run by `make
lint`): the real package keeps it, and each kind of breach planted in a small
package of the same shape is caught."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "check_layers.py"

pytestmark = pytest.mark.skipif(
    not SCRIPT.exists(), reason="needs the source tree (scripts/), not an installed wheel"
)


@pytest.fixture(scope="module")
def layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package named askew with one empty subpackage per layer, plus `files`."""
    root = tmp_path / "askew"
    for sub in ("", "_loop", "_net", "_disk", "_world", "_explore", "_report", "_run"):
        (root / sub).mkdir(parents=True, exist_ok=True)
        (root / sub / "__init__.py").write_text("")
    (root / "errors.py").write_text("class E(Exception): pass\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def _problems(layers: ModuleType, root: Path) -> list[str]:
    problems: list[str] = layers.check(layers.read_package(root))
    return problems


def test_askew_imports_only_downward_with_no_cycle(layers: ModuleType) -> None:
    assert _problems(layers, REPO / "askew") == []
    assert layers.main([str(REPO / "askew")]) == 0


def test_a_package_of_the_same_shape_that_imports_downward_passes(
    layers: ModuleType, tmp_path: Path
) -> None:
    root = _package(
        tmp_path,
        {
            "_loop/clock.py": "from ..errors import E\n",
            "_net/stack.py": "from .._loop import clock\nfrom .._loop.clock import E\n",
            "_world/world.py": "from .._net import stack\nfrom .._disk import __name__ as d\n",
            "_run/runner.py": "from .._world.world import stack\n",
        },
    )
    assert _problems(layers, root) == []


def test_an_upward_import_is_named_with_its_line(layers: ModuleType, tmp_path: Path) -> None:
    root = _package(
        tmp_path, {"_world/world.py": "X = 1\n", "_net/stack.py": "\nfrom .._world import world\n"}
    )
    assert _problems(layers, root) == [
        f"{root}/_net/stack.py:2: askew._net.stack imports askew._world.world, a layer above it"
    ]


def test_an_upward_import_for_types_only_is_still_upward(
    layers: ModuleType, tmp_path: Path
) -> None:
    root = _package(
        tmp_path,
        {
            "_run/runner.py": "class Run: pass\n",
            "_report/report.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
            "    from .._run.runner import Run\n",
        },
    )
    (problem,) = _problems(layers, root)
    assert "askew._report.report imports askew._run.runner, a layer above it" in problem


def test_siblings_of_one_layer_do_not_import_each_other(layers: ModuleType, tmp_path: Path) -> None:
    root = _package(
        tmp_path, {"_disk/disk.py": "X = 1\n", "_net/stack.py": "from .._disk import disk\n"}
    )
    (problem,) = _problems(layers, root)
    assert "askew._net.stack imports askew._disk.disk, a sibling layer" in problem


def test_a_cycle_inside_one_layer_is_a_problem(layers: ModuleType, tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"_loop/a.py": "from . import b\n", "_loop/b.py": "from . import a\n"},
    )
    assert _problems(layers, root) == [
        "import cycle: askew._loop.a -> askew._loop.b -> askew._loop.a"
    ]


def test_an_import_hidden_in_a_function_still_makes_a_cycle(
    layers: ModuleType, tmp_path: Path
) -> None:
    root = _package(
        tmp_path,
        {
            "_world/a.py": "from . import b\n",
            "_world/b.py": "def later():\n    from . import a\n    return a\n",
        },
    )
    assert _problems(layers, root) == [
        "import cycle: askew._world.a -> askew._world.b -> askew._world.a"
    ]


def test_a_cycle_of_type_only_imports_inside_a_layer_never_runs_and_passes(
    layers: ModuleType, tmp_path: Path
) -> None:
    root = _package(
        tmp_path,
        {
            "_world/node.py": "TYPE_CHECKING = False\n"
            "if TYPE_CHECKING:\n    from .world import World\n",
            "_world/world.py": "from .node import TYPE_CHECKING\n",
        },
    )
    assert _problems(layers, root) == []


def test_a_private_name_of_another_layer_is_refused_both_ways(
    layers: ModuleType, tmp_path: Path
) -> None:
    root = _package(
        tmp_path,
        {
            "_loop/kinds.py": "_FAULT = 1\nFAULT = 2\n",
            "_world/log.py": "from .._loop.kinds import _FAULT, FAULT\n",
            "_explore/buggify.py": "from .._loop import kinds as _kinds\n"
            "X = _kinds._FAULT\nY = _kinds.FAULT\n",
        },
    )
    assert sorted(_problems(layers, root)) == [
        f"{root}/_explore/buggify.py:2: askew._explore.buggify reads the private name "
        "_FAULT of askew._loop.kinds, another layer",
        f"{root}/_world/log.py:1: askew._world.log takes the private name _FAULT of "
        "askew._loop.kinds, another layer",
    ]


def test_a_private_name_inside_one_layer_is_allowed(layers: ModuleType, tmp_path: Path) -> None:
    root = _package(
        tmp_path, {"_net/addr.py": "_UNIX = 'unix'\n", "_net/stack.py": "from .addr import _UNIX\n"}
    )
    assert _problems(layers, root) == []


def test_a_module_outside_every_layer_is_named(layers: ModuleType, tmp_path: Path) -> None:
    root = _package(tmp_path, {"_misc.py": "X = 1\n"})
    assert _problems(layers, root) == [f"{root}/_misc.py: module askew._misc belongs to no layer"]
