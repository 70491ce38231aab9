# SPDX-License-Identifier: Apache-2.0
"""Check the layering of ext/: no circle among its files or its units, each
unit's symbols declared in its own header, and no Python in the engine.

The binding is layered; a unit may use the units below it, never above
(docs/design.md, "ext/: the binding's units", draws the picture):

    ext/engine/*          the engine: pure C, never Python.h (directly or
                          through any header it includes)
    core.h                module state and the preload ABI; owned by no
                          unit (module.c defines the module it describes)
    a unit                X.c with its header X.h, if it has one

Three graphs are checked for cycles. The file graph: a header that
includes itself through others. The include graph of units: unit X
depends on unit Y when a file of X includes Y.h. The symbol graph of
units: unit X depends on unit Y when X's text (X.c and X.h, comments and
string literals left out) names a function or object that Y.c defines
(a non-static definition at column 0). The symbol graph is what the
include graph misses: two units that use each other's symbols through
declarations kept somewhere else (core.h, a prototype in the .c file)
form a circle even when no header includes itself.

One exemption, and only one: module.c's calls of the set-up functions of
other units (a name ending in `_setup` or `_init`: `askew__loop_type_init`,
`askew__network_setup`, ...) are not edges of the symbol graph. Module
init sits at the top and calls every unit's set-up; every other use
module.c makes of another unit counts. Being the top, module.c defines
nothing another unit may use but the module def (through core.h's
askew__state_of_type); and the helper that turns engine codes into
exceptions, askew__raise_engine, lives in errors.c, a unit of its own
that every other may use.

Declarations: a prototype or an `extern` object whose symbol unit Y's .c
defines belongs in Y.h, the header of the unit that defines it. The same
declaration anywhere else (core.h, another unit's header, a .c file) is a
problem, with one exception that follows from core.h being module
state's header: it declares what module.c defines (the module def that
`askew__state_of_type` looks types up by). Headers with no .c of the same
name (core.h, engine.h) belong to no unit.

Run by `make lint` and tests/test_layout.py; exit status 1 on a problem.
`--graph` prints the symbol graph of the binding's units, lowest first.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
# Where the build looks for quoted includes after the including file's own
# directory (setup.py's include_dirs).
INCLUDE_DIRS = ("ext", "ext/engine", "preload")
ENGINE = "ext/engine/"
CORE = "ext/core.h"
MODULE = "module"
MODULE_DEF = "askew__module_def"
ERRORS = "errors"
RAISE_ENGINE = "askew__raise_engine"

# Comments and string or character literals, for blanking before symbols
# are read: a name in a comment or a message is not a use.
_NOISE = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.DOTALL)
# A parameter list: anything but ; { } and at most one level of nested
# parentheses (a function-pointer parameter).
_PARAMS = r"\((?:[^;{}()]|\([^;{}()]*\))*\)"
# A line that starts a file-scope declaration or definition: at column 0,
# not static, not a preprocessor line, not a typedef.
_FILE_SCOPE = r"^(?!static\b|typedef\b|#)"
_TYPE = r"[A-Za-z_][\w \t*]*?"
_FUNC_DEF = re.compile(
    _FILE_SCOPE + r"(?!extern\b)" + _TYPE + r"\b([A-Za-z_]\w*)\s*" + _PARAMS + r"\s*\{",
    re.MULTILINE,
)
_OBJ_DEF = re.compile(
    _FILE_SCOPE + r"(?!extern\b|return\b)" + _TYPE + r"\b([A-Za-z_]\w*)\s*"
    r"(?:\[[^\]\n]*\]\s*)?(?:=|;)",
    re.MULTILINE,
)
_FUNC_DECL = re.compile(
    _FILE_SCOPE
    + r"(?:extern\s+)?"
    + _TYPE
    + r"\b([A-Za-z_]\w*)\s*"
    + _PARAMS
    + r"(?:\s*__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|\s*[A-Z_]+)*\s*;",
    re.MULTILINE,
)
_OBJ_DECL = re.compile(
    r"^extern\b[^;(){}]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]\n]*\]\s*)?"
    r"(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*|[A-Z_]+\s*)*;",
    re.MULTILINE,
)
# A function-pointer object: `void (*name)(void)`.
_FPTR = r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*" + _PARAMS
_FPTR_DEF = re.compile(_FILE_SCOPE + r"(?!extern\b)" + _TYPE + _FPTR + r"\s*(?:=|;)", re.MULTILINE)
_FPTR_DECL = re.compile(r"^extern\s+" + _TYPE + _FPTR + r"\s*;", re.MULTILINE)
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_SETUP = re.compile(r"_(?:setup|init)$")


def includes(text: str) -> list[tuple[bool, str]]:
    """(quoted, name) of every #include line of a C file, in order."""
    return [(kind == '"', name) for kind, name in _INCLUDE.findall(text)]


def strip(text: str) -> str:
    """C text with comments and string and character literals blanked
    (newlines kept, so that what starts a line still does)."""
    return _NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def definitions(text: str) -> set[str]:
    """The names a .c file defines for other files: non-static functions
    and objects at column 0."""
    code = strip(text)
    return {*_FUNC_DEF.findall(code), *_OBJ_DEF.findall(code), *_FPTR_DEF.findall(code)}


def declarations(text: str) -> set[str]:
    """The names a file declares without defining: prototypes and extern
    objects at column 0 (static ones are the file's own)."""
    code = strip(text)
    return {*_FUNC_DECL.findall(code), *_OBJ_DECL.findall(code), *_FPTR_DECL.findall(code)}


def resolve(name: str, from_file: str, files: Mapping[str, str]) -> str | None:
    """The file a quoted include names, as the compiler finds it, or None."""
    here = from_file.rsplit("/", 1)[0] if "/" in from_file else ""
    for base in (here, *INCLUDE_DIRS):
        path = f"{base}/{name}" if base else name
        if path in files:
            return path
    return None


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of a directed graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return [*path[path.index(succ) :], succ]
            if succ not in state:
                found = visit(succ)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, each
    sorted, in order of their first member: every circle of the graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def unit_of(path: str, files: Mapping[str, str]) -> str | None:
    """The binding unit a file of ext/ belongs to (loop.c, loop.h -> "loop")."""
    if not path.startswith("ext/") or path.startswith(ENGINE):
        return None
    stem = path[len("ext/") :].rsplit(".", 1)[0]
    return stem if f"ext/{stem}.c" in files else None


def symbol_graph(
    files: Mapping[str, str],
) -> tuple[dict[str, dict[str, set[str]]], dict[str, str]]:
    """The symbol graph of the binding's units: unit -> {unit it uses: the
    names it uses of it}, with module.c's set-up calls left out; and the
    unit that defines each name."""
    owner: dict[str, str] = {}
    for path, text in sorted(files.items()):
        unit = unit_of(path, files)
        if unit is not None and path.endswith(".c"):
            for name in definitions(text):
                owner.setdefault(name, unit)
    uses: dict[str, dict[str, set[str]]] = {}
    for path, text in sorted(files.items()):
        unit = unit_of(path, files)
        if unit is None:
            continue
        deps = uses.setdefault(unit, {})
        for name in set(_IDENT.findall(strip(text))):
            other = owner.get(name)
            if other is None or other == unit:
                continue
            if unit == MODULE and _SETUP.search(name):
                continue  # module init calls every unit's set-up
            deps.setdefault(other, set()).add(name)
    return uses, owner


def _evidence(uses: Mapping[str, Mapping[str, set[str]]], cycle: Sequence[str]) -> str:
    steps = []
    for a, b in itertools.pairwise(cycle):
        names = sorted(uses[a][b])
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        steps.append(f"{a}.c uses {names[0]}{more} of {b}.c")
    return "; ".join(steps)


def check(files: Mapping[str, str]) -> list[str]:
    """Problems with the layering of `files` (path -> text), or []."""
    problems: list[str] = []
    graph: dict[str, set[str]] = {path: set() for path in files}
    python: set[str] = set()  # files that include Python.h themselves
    for path, text in files.items():
        for quoted, name in includes(text):
            if name == "Python.h":
                python.add(path)
            target = resolve(name, path, files) if quoted else None
            if target is not None:
                graph[path].add(target)
    cycle = find_cycle(graph)
    if cycle:
        problems.append("include cycle: " + " -> ".join(cycle))
    units: dict[str, set[str]] = {}
    for path, targets in graph.items():
        unit = unit_of(path, files)
        if unit is None:
            continue
        deps = units.setdefault(unit, set())
        for target in targets:
            other = unit_of(target, files)
            if other is not None and other != unit:
                deps.add(other)
    cycle = find_cycle(units)
    if cycle:
        problems.append("units use each other's symbols: " + " -> ".join(cycle))
    uses, owner = symbol_graph(files)
    for circle in circles(uses):
        members = set(circle)
        sub = {u: {v for v in uses[u] if v in members} for u in circle}
        found = find_cycle(sub)
        assert found is not None
        problems.append(
            f"units call each other in a circle of {len(circle)} "
            f"({', '.join(circle)}): {' -> '.join(found)} ({_evidence(uses, found)})"
        )
    for unit, deps in sorted(uses.items()):
        names = sorted(deps.get(MODULE, set()) - {MODULE_DEF})
        if names:
            problems.append(
                f"ext/{unit}.c uses {', '.join(names)} of module.c: module init is "
                "the top, nothing may use it but its module def"
            )
    home = owner.get(RAISE_ENGINE)
    if home is not None and home != ERRORS:
        problems.append(
            f"{RAISE_ENGINE} is defined in ext/{home}.c: the error-raising helper "
            f"lives in ext/{ERRORS}.c, a unit of its own"
        )
    for path, text in sorted(files.items()):
        if not path.startswith("ext/") or path.startswith(ENGINE):
            continue
        for name in sorted(declarations(text)):
            unit = owner.get(name)
            if unit is None or path in (f"ext/{unit}.h", f"ext/{unit}.c"):
                continue
            if path == CORE and unit == MODULE:
                continue  # module state: what module.c defines
            problems.append(
                f"{path} declares {name}, which ext/{unit}.c defines: declare it in ext/{unit}.h"
            )
    for path in sorted(p for p in files if p.startswith(ENGINE)):
        seen, todo = {path}, [path]
        while todo:
            node = todo.pop()
            if node in python:
                via = "" if node == path else f" (through {node})"
                problems.append(f"{path} includes Python.h{via}: the engine is pure C")
                break
            for succ in graph[node] - seen:
                seen.add(succ)
                todo.append(succ)
    return problems


def layers(uses: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The units of an acyclic graph by layer: a unit's layer is one above
    the highest of the units it uses (0 for those that use none)."""
    level: dict[str, int] = {}

    def depth(unit: str) -> int:
        if unit not in level:
            level[unit] = 0  # a circle ends here rather than recursing forever
            level[unit] = 1 + max((depth(d) for d in uses.get(unit, ())), default=-1)
        return level[unit]

    for unit in uses:
        depth(unit)
    out: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for unit, n in level.items():
        out[n].append(unit)
    return [sorted(layer) for layer in out]


def format_graph(files: Mapping[str, str]) -> str:
    """The symbol graph of the binding's units as text, lowest layer first,
    module.c last with the units whose set-up it calls."""
    uses, owner = symbol_graph(files)
    below = {u: d for u, d in uses.items() if u != MODULE}
    lines = []
    for n, layer in enumerate(layers(below)):
        for unit in layer:
            deps = " ".join(sorted(uses[unit])) or "-"
            lines.append(f"{n:2d}  {unit:<14} uses {deps}")
    if MODULE in uses:
        code = strip(files.get(f"ext/{MODULE}.c", ""))
        setups = sorted(
            {owner[n] for n in set(_IDENT.findall(code)) if n in owner and _SETUP.search(n)}
            - {MODULE}
        )
        top = len(layers(below))
        deps = " ".join(sorted(uses[MODULE])) or "-"
        lines.append(f"{top:2d}  {MODULE:<14} uses {deps}; calls the set-up of {' '.join(setups)}")
    for circle in circles(uses):
        lines.append("circle: " + " ".join(circle))
    return "\n".join(lines)


def read_tree(root: Path) -> dict[str, str]:
    """Every .c and .h under ext/ and preload/ of root, by relative path."""
    files: dict[str, str] = {}
    for top in ("ext", "preload"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".c", ".h") and path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return files


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    graph = "--graph" in args
    args = [a for a in args if a != "--graph"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    files = read_tree(root)
    if graph:
        print(format_graph(files))
    problems = check(files)
    for problem in problems:
        print(f"check_includes: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
