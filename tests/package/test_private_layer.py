"""Privacy is said once: ``dafzarr/_core`` is the one private Python layer.

The public modules (``dafzarr.zipstore``, ``dafzarr.daf``, ...) are thin façades that import
their names from ``dafzarr._core`` and list them in ``__all__``; modules inside ``_core`` carry
plain names (the folder says they are private). A leading underscore on a name then means
"used by this module only": no other module of the package imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dafzarr

PACKAGE = Path(dafzarr.__file__).parent
CORE = PACKAGE / "_core"
# Modules outside ``_core`` that are not façades: the error classes every layer raises, and
# ``python -m dafzarr``.
NOT_FACADES = frozenset({"errors.py", "__main__.py"})
# What a façade may define itself: the lazy look-up of its names (PEP 562).
FACADE_FUNCTIONS = frozenset({"__getattr__", "__dir__"})


def _dotted(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path, root: Path) -> list[str]:
    dotted = _dotted(path, root).split(".")
    return dotted if path.name == "__init__.py" else dotted[:-1]


def _modules() -> set[str]:
    found = {_dotted(p) for p in PACKAGE.rglob("*.py")}
    return found | {f"dafzarr.{p.name.split('.')[0]}" for p in PACKAGE.glob("*.so")}


def imported_private_names(path: Path, modules: set[str], root: Path = PACKAGE) -> list[str]:
    """``module:name`` for every underscore name ``path`` takes from another dafzarr module:
    ``from m import _x`` and ``m._x`` on an imported module ``m`` (compiled extensions
    ``dafzarr._<name>`` are their own layer and are not looked at)."""
    parsed = ast.parse(path.read_text(encoding="utf-8"))
    package = _package_of(path, root)
    found, aliases = [], {}
    for node in ast.walk(parsed):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], node.module or ""])
                base = base.rstrip(".")
            else:
                base = node.module or ""
            if not base.startswith("dafzarr"):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    aliases[alias.asname or alias.name] = full
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{base}:{alias.name}")
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in modules})
    found.extend(
        f"{aliases[node.value.id]}:{node.attr}"
        for node in ast.walk(parsed)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    )
    compiled = {m for m in modules if m.count(".") == 1 and m.split(".")[1].startswith("_")}
    return sorted({f for f in found if f.split(":")[0] not in compiled})


def facade_problems(path: Path) -> list[str]:
    """What in ``path`` is implementation rather than a façade: a class, or a function other
    than the lazy look-up of names."""
    parsed = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno}: {node.name}"
        for node in ast.walk(parsed)
        if isinstance(node, ast.ClassDef)
        or (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name not in FACADE_FUNCTIONS
        )
    ]


OUTSIDE = sorted(
    str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
    if CORE not in p.parents and p.name not in NOT_FACADES
)  # fmt: skip


@pytest.mark.parametrize("module", OUTSIDE)
def test_modules_outside_the_core_are_facades(module: str) -> None:
    assert not facade_problems(PACKAGE / module)


@pytest.mark.parametrize("module", OUTSIDE)
def test_facades_import_no_private_name(module: str) -> None:
    assert not imported_private_names(PACKAGE / module, _modules())


def test_core_modules_have_plain_names() -> None:
    underscored = sorted(
        str(p.relative_to(CORE)) for p in CORE.rglob("*.py")
        if any(part.startswith("_") and part != "__init__.py" for part in p.relative_to(CORE).parts)
    )  # fmt: skip
    assert not underscored


def test_core_modules_import_no_other_modules_private_names() -> None:
    modules = _modules()
    found = {
        str(p.relative_to(PACKAGE)): names
        for p in sorted(CORE.rglob("*.py"))
        if (names := imported_private_names(p, modules))
    }
    assert not found


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """The checks above fail on a façade that defines a class, and on a module that takes an
    underscore name from another one (by name, or through the module)."""
    folder = tmp_path / "dafzarr" / "_core"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("_x = 1\n")
    (folder / "b.py").write_text(
        "from .a import _x\nfrom . import a\nfrom .. import _posix\ny = a._x + _posix._z\n"
    )
    (tmp_path / "dafzarr" / "f.py").write_text(
        "class C:\n    pass\n\ndef __getattr__(name):\n    return name\n"
    )
    modules = {"dafzarr._core.a", "dafzarr._core.b", "dafzarr._posix"}
    root = tmp_path / "dafzarr"
    assert imported_private_names(folder / "b.py", modules, root) == ["dafzarr._core.a:_x"]
    assert facade_problems(root / "f.py") == ["f.py:1: C"]
