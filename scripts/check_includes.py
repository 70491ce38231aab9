# SPDX-License-Identifier: Apache-2.0
"""Check the include graph of ext/: no cycle, and no Python in the engine.

The binding is layered; a unit may include the headers of the layers below
it, never above:

    ext/engine/*          the engine: pure C, never Python.h (directly or
                          through any header it includes)
    core.h                shared module things (Python.h, module state,
                          the preload ABI); owned by no unit
    handle.h  task.h      callback handles, Task and Future
    node.h  log.h         node identity; the world log
    network.h             askew._core.Network (borrows from its loop
                          through struct askew_net_host, never loop.h)
    loop.h                the loop, its state and run loop
    skew.c patch.c preload.c refusal.c module.c   users of the loop

Two graphs are checked for cycles. The file graph: a header that includes
itself through others. The unit graph: unit X (X.c with its header X.h)
depends on unit Y when a file of X includes Y.h; a cycle there means two
units use each other's symbols, even when no header includes itself.
Headers with no .c of the same name (core.h, engine.h) belong to no unit.

Run by `make lint` and tests/test_layout.py; exit status 1 on a problem.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
# Where the build looks for quoted includes after the including file's own
# directory (setup.py's include_dirs).
INCLUDE_DIRS = ("ext", "ext/engine", "preload")
ENGINE = "ext/engine/"


def includes(text: str) -> list[tuple[bool, str]]:
    """(quoted, name) of every #include line of a C file, in order."""
    return [(kind == '"', name) for kind, name in _INCLUDE.findall(text)]


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


def unit_of(path: str, files: Mapping[str, str]) -> str | None:
    """The binding unit a file of ext/ belongs to (loop.c, loop.h -> "loop")."""
    if not path.startswith("ext/") or path.startswith(ENGINE):
        return None
    stem = path[len("ext/") :].rsplit(".", 1)[0]
    return stem if f"ext/{stem}.c" in files else None


def check(files: Mapping[str, str]) -> list[str]:
    """Problems with the include graph of `files` (path -> text), or []."""
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
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    problems = check(read_tree(root))
    for problem in problems:
        print(f"check_includes: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
