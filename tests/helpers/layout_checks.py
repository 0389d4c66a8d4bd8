"""Checks of a subpackage's layout, shared by the layout tests of dafzarr's subpackages.

Read from the source with :mod:`ast`: which sibling modules a module imports, whether the
import graph has a cycle, whether a module is small and documented, which exception classes
it raises, and which methods its classes take from other modules.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from dafzarr import errors

MAX_LINES = 600  # lines besides docstrings (see code_lines)
MAX_IMPORT_LINES = 40  # the imports at the top of a module fit on one screen


def tree(package: Path, module: str) -> ast.Module:
    return ast.parse((package / f"{module}.py").read_text(encoding="utf-8"))


def imported_siblings(package: Path, dotted: str, modules: list[str], module: str) -> set[str]:
    """The modules of the package ``dotted`` that ``module`` imports, at its top or in a
    function."""
    head = dotted + "."
    depth = dotted.count(".") + 1
    out = set()
    for node in ast.walk(tree(package, module)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from ._x import y
                out.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import _x
                out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith(head):
                out.add(node.module.split(".")[depth])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[depth] for a in node.names if a.name.startswith(head))
    return out & set(modules)


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


def modules_of(package: ModuleType) -> tuple[Path, list[str]]:
    """The folder of ``package`` and the names of its modules."""
    folder = Path(str(package.__file__)).parent
    return folder, sorted(p.stem for p in folder.glob("*.py"))


def check_no_import_cycle(package: ModuleType, importer: str) -> None:
    """No import cycle among the modules of ``package`` (``importer`` imports siblings)."""
    folder, modules = modules_of(package)
    graph = {m: imported_siblings(folder, package.__name__, modules, m) - {m} for m in modules}
    assert graph[importer], "the import graph was not read"
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in {package.__name__}: {' -> '.join(cycle or [])}"


def check_modules_import_alone(package: ModuleType) -> None:
    """Imported first, in a fresh interpreter, each module loads (no order-dependent cycle)."""
    folder, modules = modules_of(package)
    root = folder.parents[package.__name__.count(".")]  # the folder that holds ``dafzarr``
    failed = modules_failing_alone(root, package.__name__, modules)
    assert not failed, failed


def modules_failing_alone(
    root: Path, dotted: str, modules: list[str], *, bare: bool = False
) -> dict[str, str]:
    """The modules that fail to load when imported first, each in its own process forked
    from an interpreter that holds the third-party dependencies only (see
    ``tests/helpers/import_alone.py``), with what they printed. ``bare``: without running
    the ``__init__`` of the packages above them."""
    names = [dotted if m == "__init__" else f"{dotted}.{m}" for m in modules]
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("import_alone.py")),
         *(["--bare"] if bare else []), *names],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    failed: dict[str, str] = json.loads(done.stdout)
    return {m: failed[n] for m, n in zip(modules, names, strict=True) if n in failed}


def module_problems(path: Path) -> list[str]:
    """What makes module ``path`` hard to read: too long, no docstring, a long import block."""
    text = path.read_text(encoding="utf-8")
    problems = []
    parsed = ast.parse(text)
    if code_lines(text, parsed) > MAX_LINES:
        problems.append(f"{path.name}: more than {MAX_LINES} lines besides its docstrings")
    if not ast.get_docstring(parsed):
        problems.append(f"{path.name} does not start with a docstring")
    imports = [n for n in parsed.body if isinstance(n, ast.Import | ast.ImportFrom)]
    span = (imports[-1].end_lineno or 0) - imports[0].lineno + 1 if imports else 0
    if span > MAX_IMPORT_LINES:
        problems.append(f"{path.name}: imports take {span} lines")
    return problems


def code_lines(text: str, parsed: ast.Module) -> int:
    """The lines of a module but those of its docstrings (of the module, its classes and
    functions): the size of what a reader must follow, which documentation does not add to
    (every public entry point carries numpydoc sections and examples)."""
    docs = set()
    for node in ast.walk(parsed):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                docs.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return len(text.splitlines()) - len(docs)


def check_small_and_documented(package: Path, module: str) -> None:
    problems = module_problems(package / f"{module}.py")
    assert not problems, problems


def dotted_name(package: Path) -> str:
    """The dotted name of the package in folder ``package`` (``dafzarr._core.zipstore``)."""
    parts = package.parts
    top = len(parts) - 1 - parts[::-1].index("dafzarr")
    return ".".join(parts[top:])


def siblings(package: Path, module: str) -> set[str]:
    """:func:`imported_siblings` for the package in folder ``package``."""
    modules = sorted(p.stem for p in package.glob("*.py"))
    return imported_siblings(package, dotted_name(package), modules, module)


def is_abstract_stub(node: ast.FunctionDef) -> bool:
    """A method whose body is only (a docstring and) ``raise NotImplementedError``: the
    language's way to say that every subclass provides it."""
    body = node.body[1:] if ast.get_docstring(node) else node.body
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and isinstance(body[0].exc, ast.Name)
        and body[0].exc.id == "NotImplementedError"
    )


class Raises(ast.NodeVisitor):
    """``(line, class name, enclosing function)`` of every ``raise SomeClass...`` (with
    ``skip_abstract_stubs``, but those of :func:`is_abstract_stub` methods)."""

    def __init__(self, *, skip_abstract_stubs: bool = False) -> None:
        self.found: list[tuple[int, str, str]] = []
        self._functions: list[str] = [""]
        self._skip_stubs = skip_abstract_stubs

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if self._skip_stubs and is_abstract_stub(node):
            return
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()

    def visit_Raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.id if isinstance(target, ast.Name) else ast.unparse(target)
            if not name[:1].islower():  # not a caught exception object raised again
                self.found.append((node.lineno, name, self._functions[-1]))


def errors_imported(parsed: ast.Module, level: int = 2) -> set[str]:
    """The names under which a module of a subpackage imports ``dafzarr.errors`` classes
    (``level``: the dots of ``from ..errors import``, 3 in a subpackage of a subpackage)."""
    return {
        a.asname or a.name
        for n in ast.walk(parsed)
        if isinstance(n, ast.ImportFrom) and n.module == "errors" and n.level == level
        for a in n.names
        if isinstance(getattr(errors, a.name, None), type)
    }


def check_raises_only_dafzarr_errors(
    package: Path,
    module: str,
    *,
    exempt: frozenset[tuple[str, str]] = frozenset(),
    skip_abstract_stubs: bool = False,
    level: int = 2,
) -> None:
    """Every exception class ``module`` raises comes from ``dafzarr.errors``, but the
    ``(function, class)`` pairs of ``exempt`` (and abstract stubs, with ``skip_abstract_stubs``).
    ``level``: how ``module`` imports ``dafzarr.errors`` (see :func:`errors_imported`)."""
    parsed = tree(package, module)
    allowed = errors_imported(parsed, level)
    raises = Raises(skip_abstract_stubs=skip_abstract_stubs)
    raises.visit(parsed)
    wrong = [
        f"line {line}: raise {name}"
        for line, name, function in raises.found
        if name not in allowed and (function, name) not in exempt
    ]
    assert not wrong, f"{module}.py raises classes not from dafzarr.errors: {wrong}"


def _functions_in(value: Any) -> list[Any]:
    """The functions a class attribute binds: itself, or those a ``staticmethod``,
    ``classmethod`` or ``property`` wraps."""
    if isinstance(value, staticmethod | classmethod):
        return [value.__func__]
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    return [value]


def _is_function(value: Any) -> bool:
    """A function written in Python or compiled (a builtin or a Cython function), not a
    callable object such as a descriptor instance."""
    return (
        inspect.isfunction(value)
        or inspect.isbuiltin(value)
        or "cython_function" in type(value).__name__
    )


def _assigned(stmt: ast.stmt) -> list[str]:
    """The plain names an assignment in a class body binds (none for other statements)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        targets = []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def borrowed_methods(module: ModuleType) -> list[str]:
    """``Class.name`` for every attribute a class of ``module`` gets by an assignment in its
    body (``name = other.function``, ``name = staticmethod(function)``, ...) whose value is a
    function of another module: a method written outside its class, against the state of a
    ``self`` it does not define. An assignment that wraps the class's own method (an alias,
    or a generated variant whose ``__module__`` is the class's) is not one."""
    parsed = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    found: list[str] = []

    def foreign(cls: type, name: str) -> bool:
        return any(
            _is_function(f) and getattr(f, "__module__", None) != module.__name__
            for f in _functions_in(cls.__dict__.get(name))
        )

    def visit(body: list[ast.stmt], owner: Any, prefix: str) -> None:
        for node in body:
            cls = getattr(owner, node.name, None) if isinstance(node, ast.ClassDef) else None
            if not isinstance(node, ast.ClassDef) or not isinstance(cls, type):
                continue
            found.extend(
                f"{prefix}{node.name}.{name}"
                for stmt in node.body
                for name in _assigned(stmt)
                if foreign(cls, name)
            )
            visit(node.body, cls, f"{prefix}{node.name}.")

    visit(parsed.body, module, "")
    return found
