"""Layout checks shared by the subpackages' layout tests: which sibling modules a module
imports, import cycles, and a module's size, docstring and import block."""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 600
MAX_IMPORT_LINES = 40  # the imports at the top of a module fit on one screen


def imported_siblings(package: Path, module: str) -> set[str]:
    """The modules of the package in directory ``package`` (``dafzarr.<its name>``) that
    ``module`` imports, at its top or in a function."""
    prefix = f"dafzarr.{package.name}."
    tree = ast.parse((package / f"{module}.py").read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from ._x import y
                out.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import _x
                out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith(prefix):
                out.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith(prefix))
    return out & {p.stem for p in package.glob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One dependency cycle of ``graph`` (as a path that returns to its start), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            found = visit(nxt, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return None


def module_problems(path: Path) -> list[str]:
    """What makes module ``path`` hard to read: too long, no docstring, a long import block."""
    text = path.read_text(encoding="utf-8")
    problems = []
    if len(text.splitlines()) > MAX_LINES:
        problems.append(f"{path.name}: more than {MAX_LINES} lines")
    tree = ast.parse(text)
    if not ast.get_docstring(tree):
        problems.append(f"{path.name} does not start with a docstring")
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    span = (imports[-1].end_lineno or 0) - imports[0].lineno + 1 if imports else 0
    if span > MAX_IMPORT_LINES:
        problems.append(f"{path.name}: imports take {span} lines")
    return problems
