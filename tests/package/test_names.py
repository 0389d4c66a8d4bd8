"""One name, one meaning: no two modules of the package define a class or a type alias of the
same name, and no two modules of ``dafzarr/_core`` share a file name unless they play the same
role in their subpackages (listed below with the reason).

A reader who meets ``Backend`` or ``format.py`` should not have to ask "which one?": the Daf
key-value backends and the ArrayFile object storage, the ZIP records and the ArrayFile footer,
each carry their own name.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import dafzarr

PACKAGE = Path(dafzarr.__file__).parent
CORE = PACKAGE / "_core"
EXTENSIONS = PACKAGE.parent / "_ext"

# File names that several subpackages of ``_core`` use for the same role.
SAME_ROLE = {
    "__init__.py": "the package module of each subpackage",
    "open.py": "opening what a path names: an archive (zipstore), a data set's backend (daf)",
    "registry.py": "a table of implementations by name: compression methods, query operations",
}

# Calls whose result is a type: ``T = TypeVar("T")``, ``UserId = NewType(...)``.
_TYPE_FACTORIES = frozenset({"TypeVar", "NewType", "NamedTuple", "TypedDict", "ParamSpec"})


def _is_type_expression(value: ast.expr) -> bool:
    """``dict[str, Any]``, ``Literal[...]``, ``bytes | memoryview``, ``TypeVar("T")``."""
    if isinstance(value, ast.Subscript):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return all(
            isinstance(side, (ast.Name, ast.Attribute, ast.Subscript, ast.BinOp, ast.Constant))
            and (not isinstance(side, ast.Constant) or side.value is None)
            for side in (value.left, value.right)
        )
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _TYPE_FACTORIES
    return False


def defined_types(source: str) -> list[str]:
    """The classes of a module (any name) and its public type aliases (no leading underscore;
    an underscore type variable or alias is the module's own)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            found.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "TypeAlias" in ast.unparse(node.annotation) and not node.target.id.startswith("_"):
                found.append(node.target.id)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and not node.targets[0].id.startswith("_")
            and _is_type_expression(node.value)
        ):
            found.append(node.targets[0].id)
    return found


def _extension_classes(source: str) -> list[str]:
    return re.findall(r"^(?:cdef\s+)?class\s+(\w+)", source, flags=re.MULTILINE)


def duplicated_types(package: Path, extensions: Path | None = None) -> dict[str, list[str]]:
    """Name -> the modules (relative paths) that define it, for names defined more than once."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for name in defined_types(path.read_text(encoding="utf-8")):
            where[name].append(str(path.relative_to(package.parent)))
    if extensions is not None and extensions.is_dir():
        for path in sorted(extensions.glob("*.pyx")):
            for name in _extension_classes(path.read_text(encoding="utf-8")):
                where[name].append(f"dafzarr/{path.stem}")
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def shared_basenames(core: Path) -> dict[str, list[str]]:
    """File name -> the modules of ``core`` that carry it, for names carried more than once."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(core.rglob("*.py")):
        where[path.name].append(str(path.relative_to(core)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_each_class_and_type_alias_is_defined_once() -> None:
    assert duplicated_types(PACKAGE, EXTENSIONS) == {}


def test_module_names_in_the_core_say_their_subject() -> None:
    shared = shared_basenames(CORE)
    unexplained = {name: paths for name, paths in shared.items() if name not in SAME_ROLE}
    assert unexplained == {}
    assert set(SAME_ROLE) <= set(shared), "a listed name is no longer shared: drop it"


def test_the_checks_see_duplicates(tmp_path: Path) -> None:
    """Both checks find what they are for: classes, aliases and type variables of one name
    in two modules, and one file name in two subpackages."""
    package = tmp_path / "pkg"
    for sub in ("daf", "arrayfile"):
        (package / sub).mkdir(parents=True)
    (package / "daf" / "backends.py").write_text(
        "from typing import Any, Literal, TypeVar\n"
        "class Backend: ...\n"
        "Mode = Literal['r', 'w']\n"
        "Buffer = bytes | memoryview\n"
        "T = TypeVar('T')\n"
        "_Private = dict[str, Any]\n"
        "LIMIT = 1 << 20\n"
    )
    (package / "arrayfile" / "backends.py").write_text(
        "from typing import Any, TypeVar\n"
        "from typing_extensions import TypeAlias\n"
        "class Backend: ...\n"
        "Mode: TypeAlias = 'str'\n"
        "Buffer = bytes | bytearray\n"
        "T = TypeVar('T')\n"
        "_Private = dict[str, Any]\n"
        "LIMIT = 1 << 20\n"
    )
    found = duplicated_types(package)
    assert sorted(found) == ["Backend", "Buffer", "Mode", "T"]
    assert shared_basenames(package) == {
        "backends.py": ["arrayfile/backends.py", "daf/backends.py"]
    }
    assert _extension_classes("cdef class Entry:\n    pass\nclass Other:\n") == ["Entry", "Other"]
