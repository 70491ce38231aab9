# SPDX-License-Identifier: Apache-2.0
"""Check the import contract of askew/: layers that import one way.

The package is layered, each layer a subpackage (docs/design.md §1); a
module may import its own layer and the layers below it, never above:

    askew._run                          running: simulate, sweeps, the plugin, wrap mode, commands
    askew._report                       reports and the timeline
    askew._explore                      exploration and checking
    askew._world                        the world
    askew._net | askew._disk            the host's resources (siblings: neither imports the other)
    askew._loop                         the loop
    askew._core, askew.errors           beneath everything: the extension and the exceptions

The public face (askew/__init__.py, askew/check.py, askew/__main__.py) sits
above every layer and may import any of them.

Four rules, each a problem printed with the file and line:
  - no import cycle among askew's modules, counting every import a module
    runs (also those inside functions: an import hidden in a function to
    dodge a cycle is still one); `if TYPE_CHECKING:` imports are left out
    of this rule, since they never run;
  - no import of a higher layer, nor of a sibling, TYPE_CHECKING ones
    included: a lower layer that must call up is handed a hook;
  - no private name (one leading underscore) taken from a module of
    another layer, by `from m import _name` or as `m._name` on a module
    imported from there: layers meet at public names only;
  - every module of askew/ belongs to a layer or to the public face.

Run by `make lint` and tests/test_layout.py; exit status 1 on a problem.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "askew"
# Bottom first; a tuple of names is one layer of siblings.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("askew._core", "askew.errors"),
    ("askew._loop",),
    ("askew._net", "askew._disk"),
    ("askew._world",),
    ("askew._explore",),
    ("askew._report",),
    ("askew._run",),
)
FACE = ("askew", "askew.check", "askew.__main__")


@dataclass
class Import:
    target: str  # the askew module imported (the longest one that exists)
    line: int
    type_only: bool
    names: list[str] = field(default_factory=list)  # from-import names


@dataclass
class Module:
    name: str
    path: str
    tree: ast.Module
    is_package: bool
    imports: list[Import] = field(default_factory=list)


def module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under root, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _in_type_checking(node: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.unparse(parent.test):
            return True
        parent = parents.get(parent)
    return False


def _existing(name: str, known: Iterable[str]) -> str | None:
    modules = set(known)
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def read_module(name: str, path: str, source: str, known: Sequence[str]) -> Module:
    tree = ast.parse(source, path)
    module = Module(name, path, tree, path.endswith("__init__.py"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if module.is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        type_only = _in_type_checking(node, parents)
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _existing(alias.name, known)
                if target is not None:
                    module.imports.append(Import(target, node.lineno, type_only))
            continue
        base = package.split(".") if node.level else []
        if node.level > 1:
            base = base[: len(base) - (node.level - 1)]
        prefix = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            # `from . import world` imports a module; `from .world import World` a name.
            as_module = _existing(f"{prefix}.{alias.name}", known)
            if as_module == f"{prefix}.{alias.name}":
                module.imports.append(Import(as_module, node.lineno, type_only))
                continue
            target = _existing(prefix, known)
            if target is not None:
                module.imports.append(Import(target, node.lineno, type_only, [alias.name]))
    return module


def layer_of(name: str) -> int | None:
    """The index of name's layer in LAYERS (FACE: above them all), or None."""
    if name in FACE:
        return len(LAYERS)
    for index, layer in enumerate(LAYERS):
        for top in layer:
            if name == top or name.startswith(top + "."):
                return index
    return None


def _sibling(name: str) -> str:
    """The layer member (subpackage) a module belongs to; the face is one."""
    if name in FACE:
        return "face"
    for layer in LAYERS:
        for top in layer:
            if name == top or name.startswith(top + "."):
                return top
    return name


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


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_aliases(module: Module, known: Sequence[str]) -> dict[str, str]:
    """Local name -> askew module, for the modules this one imports as modules."""
    aliases: dict[str, str] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            package = module.name if module.is_package else module.name.rpartition(".")[0]
            base = package.split(".") if node.level else []
            if node.level > 1:
                base = base[: len(base) - (node.level - 1)]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{prefix}.{alias.name}"
                if full in known:
                    aliases[alias.asname or alias.name] = full
    return aliases


def check(modules: Mapping[str, Module]) -> list[str]:
    """Problems with the imports of `modules`, or []."""
    problems: list[str] = []
    known = sorted(modules)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        here = layer_of(module.name)
        if here is None:
            problems.append(f"{module.path}: module {module.name} belongs to no layer")
            continue
        for imp in module.imports:
            if imp.target == module.name or imp.target == PACKAGE:
                continue
            if not imp.type_only:
                graph[module.name].add(imp.target)
            there = layer_of(imp.target)
            if there is None:
                continue
            if there > here:
                problems.append(
                    f"{module.path}:{imp.line}: {module.name} imports {imp.target}, "
                    f"a layer above it"
                )
            elif there == here and _sibling(module.name) != _sibling(imp.target):
                problems.append(
                    f"{module.path}:{imp.line}: {module.name} imports {imp.target}, a sibling layer"
                )
            if there != here:
                for name in imp.names:
                    if _private(name):
                        problems.append(
                            f"{module.path}:{imp.line}: {module.name} takes the private "
                            f"name {name} of {imp.target}, another layer"
                        )
        aliases = _module_aliases(module, known)
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
                continue
            target = aliases.get(node.value.id)
            if target is None or not _private(node.attr) or target == "askew._core":
                continue
            if layer_of(target) != here:
                problems.append(
                    f"{module.path}:{node.lineno}: {module.name} reads the private name "
                    f"{node.attr} of {target}, another layer"
                )
    cycle = find_cycle(graph)
    if cycle:
        problems.append("import cycle: " + " -> ".join(cycle))
    return problems


def read_package(root: Path) -> dict[str, Module]:
    """Every module of the package at root (a directory named askew)."""
    names = module_names(root)
    known = sorted(names)
    return {
        name: read_module(name, str(path), path.read_text(encoding="utf-8"), known)
        for name, path in names.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / PACKAGE
    problems = check(read_package(root))
    for problem in problems:
        print(f"check_layers: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
