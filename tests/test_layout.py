# SPDX-License-Identifier: Apache-2.0
"""The source tree's shape: ext/'s include graph has no cycle and the engine
never sees Python.h (scripts/check_includes.py, also run by `make lint`);
the C-Python contract is read from the extension, and the network, its own
type, never outlives its loop in a usable state."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "check_includes.py"

needs_tree = pytest.mark.skipif(
    not SCRIPT.exists() or not (REPO / "ext").is_dir(),
    reason="needs the source tree (scripts/, ext/), not an installed wheel",
)


@pytest.fixture(scope="module")
def check_includes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_includes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_tree
def test_the_include_graph_of_ext_has_no_cycle_and_the_engine_no_python(
    check_includes: ModuleType,
) -> None:
    assert check_includes.check(check_includes.read_tree(REPO)) == []
    assert check_includes.main([str(REPO)]) == 0


@needs_tree
def test_include_lines_are_parsed_with_their_kind_and_name(
    check_includes: ModuleType,
) -> None:
    text = '#include <Python.h>\n  #  include "loop.h"\n// #include "no.h" is a comment\nint x;\n'
    assert check_includes.includes(text) == [(False, "Python.h"), (True, "loop.h")]


@needs_tree
def test_a_header_that_includes_itself_through_another_is_a_cycle(
    check_includes: ModuleType,
) -> None:
    files = {
        "ext/a.h": '#include "b.h"\n',
        "ext/b.h": '#include "c.h"\n',
        "ext/c.h": '#include "a.h"\n',
    }
    problems = check_includes.check(files)
    assert problems == ["include cycle: ext/a.h -> ext/b.h -> ext/c.h -> ext/a.h"]


@needs_tree
def test_two_units_that_include_each_others_header_are_a_cycle(
    check_includes: ModuleType,
) -> None:
    # No header includes itself: loop.h and net.h are both leaves. The
    # cycle is in the units: loop.c uses net's symbols and net.c loop's.
    files = {
        "ext/core.h": "#include <Python.h>\n",
        "ext/loop.h": '#include "core.h"\n',
        "ext/loop.c": '#include "loop.h"\n#include "net.h"\n',
        "ext/net.h": '#include "core.h"\n',
        "ext/net.c": '#include "net.h"\n#include "loop.h"\n',
    }
    problems = check_includes.check(files)
    assert problems == ["units use each other's symbols: loop -> net -> loop"]
    files["ext/net.c"] = '#include "net.h"\n'
    assert check_includes.check(files) == []


@needs_tree
def test_an_engine_file_that_reaches_python_h_is_refused(
    check_includes: ModuleType,
) -> None:
    files = {
        "ext/core.h": "#include <Python.h>\n",
        "ext/engine/engine.h": "#include <stdint.h>\n",
        "ext/engine/clock.c": '#include "engine.h"\n#include "core.h"\n',
        "ext/engine/rng.c": "#include <Python.h>\n",
    }
    assert check_includes.check(files) == [
        "ext/engine/clock.c includes Python.h (through ext/core.h): the engine is pure C",
        "ext/engine/rng.c includes Python.h: the engine is pure C",
    ]


@needs_tree
def test_a_quoted_include_resolves_beside_its_file_first(
    check_includes: ModuleType,
) -> None:
    # ext/engine/net.h includes "engine.h" beside it, not a header of ext/.
    files = {
        "ext/engine.h": '#include "engine/net.h"\n',
        "ext/engine/engine.h": "",
        "ext/engine/net.h": '#include "engine.h"\n',
    }
    assert check_includes.check(files) == []


def test_python_reads_the_contract_from_the_extension_not_from_copies() -> None:
    from askew import _core
    from askew._loop import config as _config
    from askew._loop import kinds

    assert _config.STRATEGIES is _core.STRATEGIES
    assert kinds.LOG_KEPT == _core.LOG_KEPT
    assert kinds.OUTCOMES is _core.NET_OUTCOME_NAMES
    assert kinds.WORLD == _core.LOG_KIND_WORLD_BASE > _core.LOG_KIND_DELIVERY
    loop = _core.Loop()
    for name in _core.STRATEGIES:
        loop._configure(name, 0, 10**9, 0, (0, 0), (0, 0))
        assert loop._strategy == name


def test_a_network_that_outlives_its_loop_refuses_every_call() -> None:
    from askew import _core

    loop = _core.Loop()
    net = loop._net
    assert net.node_add() == 0
    del loop
    with pytest.raises(RuntimeError, match="this network's loop is gone"):
        net.node_add()
    with pytest.raises(RuntimeError, match="this network's loop is gone"):
        net.heal()
    with pytest.raises(RuntimeError, match="this network's loop is gone"):
        net.stats()
