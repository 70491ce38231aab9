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


# Two units that call each other while every declaration sits in core.h:
# no header includes another unit's, so only the symbol graph sees it.
_CIRCLE_THROUGH_CORE_H = {
    "ext/core.h": "#include <Python.h>\n"
    "int askew__loop_run(void);\n"
    "void askew__loop_timer_cancelled(void);\n"
    "void askew__handle_cancel(void);\n",
    "ext/loop.h": '#include "core.h"\n',
    "ext/loop.c": '#include "loop.h"\n\n'
    "int askew__loop_run(void)\n{\n    askew__handle_cancel();\n    return 0;\n}\n\n"
    "void askew__loop_timer_cancelled(void)\n{\n}\n",
    "ext/handle.h": '#include "core.h"\n',
    "ext/handle.c": '#include "handle.h"\n\n'
    "void askew__handle_cancel(void)\n{\n    askew__loop_timer_cancelled();\n}\n",
}


@needs_tree
def test_units_that_call_each_other_through_declarations_in_core_h_are_a_circle(
    check_includes: ModuleType,
) -> None:
    assert check_includes.check(_CIRCLE_THROUGH_CORE_H) == [
        "units call each other in a circle of 2 (handle, loop): handle -> loop -> handle "
        "(handle.c uses askew__loop_timer_cancelled of loop.c; "
        "loop.c uses askew__handle_cancel of handle.c)",
        "ext/core.h declares askew__handle_cancel, which ext/handle.c defines: "
        "declare it in ext/handle.h",
        "ext/core.h declares askew__loop_run, which ext/loop.c defines: declare it in ext/loop.h",
        "ext/core.h declares askew__loop_timer_cancelled, which ext/loop.c defines: "
        "declare it in ext/loop.h",
    ]


@needs_tree
def test_a_lower_unit_handed_a_hook_is_no_circle_and_declarations_go_home(
    check_includes: ModuleType,
) -> None:
    # The fix the binding uses: handle.c calls the loop through a pointer the
    # loop hands down, and each unit declares its own symbols.
    files = {
        "ext/core.h": "#include <Python.h>\n",
        "ext/handle.h": '#include "core.h"\n'
        "extern void (*askew__handle_on_cancel)(void);\n"
        "void askew__handle_cancel(void);\n",
        "ext/handle.c": '#include "handle.h"\n\n'
        "void (*askew__handle_on_cancel)(void);\n\n"
        "void askew__handle_cancel(void)\n{\n    askew__handle_on_cancel();\n}\n",
        "ext/loop.h": '#include "handle.h"\nint askew__loop_run(void);\n',
        "ext/loop.c": '#include "loop.h"\n\n'
        "static void timer_cancelled(void)\n{\n}\n\n"
        "int askew__loop_run(void)\n{\n"
        "    askew__handle_on_cancel = timer_cancelled;\n"
        "    askew__handle_cancel();\n    return 0;\n}\n",
    }
    assert check_includes.check(files) == []
    uses, owner = check_includes.symbol_graph(files)
    assert uses == {
        "handle": {},
        "loop": {"handle": {"askew__handle_cancel", "askew__handle_on_cancel"}},
    }
    assert owner["askew__handle_on_cancel"] == "handle"
    # A prototype of another unit's symbol in a .c file is a misplaced
    # declaration too, even without a circle.
    files["ext/loop.c"] = "void askew__handle_cancel(void);\n" + files["ext/loop.c"]
    assert check_includes.check(files) == [
        "ext/loop.c declares askew__handle_cancel, which ext/handle.c defines: "
        "declare it in ext/handle.h"
    ]


@needs_tree
def test_module_init_may_call_each_units_set_up_and_nothing_else(
    check_includes: ModuleType,
) -> None:
    files = {
        "ext/core.h": "#include <Python.h>\nextern struct PyModuleDef askew__module_def;\n",
        "ext/loop.h": '#include "core.h"\n'
        "int askew__loop_setup(void);\nint askew__loop_run(void);\n",
        "ext/loop.c": '#include "loop.h"\n\n'
        "int askew__loop_setup(void)\n{\n    return askew__module_def.m_size;\n}\n\n"
        "int askew__loop_run(void)\n{\n    return 0;\n}\n",
        "ext/module.c": '#include "loop.h"\n\n'
        "struct PyModuleDef askew__module_def = {0};\n\n"
        "int module_exec(void)\n{\n    return askew__loop_setup();\n}\n",
    }
    # loop.c reaches the module def (as askew__state_of_type does), module.c
    # calls loop's set-up: exempt, so no circle.
    assert check_includes.check(files) == []
    files["ext/module.c"] = files["ext/module.c"].replace(
        "askew__loop_setup();", "askew__loop_setup() + askew__loop_run();"
    )
    assert check_includes.check(files) == [
        "units call each other in a circle of 2 (loop, module): loop -> module -> loop "
        "(loop.c uses askew__module_def of module.c; module.c uses askew__loop_run of loop.c)"
    ]


@needs_tree
def test_the_error_helper_lives_in_errors_c_and_module_c_lends_nothing(
    check_includes: ModuleType,
) -> None:
    files = {
        "ext/core.h": "#include <Python.h>\nPyObject *askew__raise_engine(int rc);\n",
        "ext/loop.c": "int askew__loop_run(void)\n{\n"
        "    askew__raise_engine(-1);\n    return 0;\n}\n",
        "ext/module.c": "PyObject *askew__raise_engine(int rc)\n{\n    return NULL;\n}\n",
    }
    assert check_includes.check(files) == [
        "ext/loop.c uses askew__raise_engine of module.c: module init is the top, "
        "nothing may use it but its module def",
        "askew__raise_engine is defined in ext/module.c: the error-raising helper "
        "lives in ext/errors.c, a unit of its own",
    ]


@needs_tree
def test_a_name_in_a_comment_or_a_string_is_not_a_use(
    check_includes: ModuleType,
) -> None:
    files = dict(_CIRCLE_THROUGH_CORE_H)
    files["ext/handle.c"] = (
        '#include "handle.h"\n\n/* unlike askew__loop_timer_cancelled, */\n'
        "void askew__handle_cancel(void)\n{\n"
        '    puts("askew__loop_run"); // askew__loop_run\n}\n'
    )
    uses, _ = check_includes.symbol_graph(files)
    assert uses["handle"] == {}
    assert not any("circle" in p for p in check_includes.check(files))


@needs_tree
def test_the_binding_is_layered_with_module_init_on_top(check_includes: ModuleType) -> None:
    uses, owner = check_includes.symbol_graph(check_includes.read_tree(REPO))
    assert check_includes.circles(uses) == []
    assert uses["module"] == {}  # its set-up calls alone, which are exempt
    assert owner["askew__raise_engine"] == "errors"
    assert all(
        "module" not in deps or set(deps["module"]) == {"askew__module_def"}
        for deps in uses.values()
    )
    graph = check_includes.format_graph(check_includes.read_tree(REPO))
    assert graph.splitlines()[-1].split()[1] == "module"
    assert check_includes.main(["--graph", str(REPO)]) == 0


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
