"""Every module of the package, at any depth (façades, ``_core`` and its subpackages, the
modules no subpackage's layout test covers), is small and documented: at most 600 lines, a
docstring first, an import block of at most 40 lines. A class of ``_core`` defines its
methods in its own body: it does not take them from functions of other modules."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import dafzarr
from tests.helpers.layout_checks import borrowed_methods, module_problems

PACKAGE = Path(dafzarr.__file__).resolve().parent
MODULES = sorted(
    str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts
)

CORE_MODULES = sorted(
    ".".join(("dafzarr", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for p in (PACKAGE / "_core").rglob("*.py")
    if "__pycache__" not in p.parts
)

# Class attributes that are functions of another module, and why they may be.
BORROWED_JUSTIFIED = {
    # data, not methods: the result type of an integer input, read as ``type(self).DEFAULT``
    "dafzarr._core.daf.query.eltwise": {"Abs.DEFAULT", "Round.DEFAULT"},
    # ``MmapZipStore.pack(directory, out)``: a static function of explicit arguments, no ``self``
    "dafzarr._core.zipstore.store": {"MmapZipStore.pack"},
}
# Methods still written as functions of other modules against the state of ``self``; they
# are to become methods of their class (this set only shrinks).
BORROWED_PENDING: dict[str, set[str]] = {}


def test_the_package_has_modules_at_every_depth() -> None:
    assert "__init__.py" in MODULES and "_core/daf/query/operations.py" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    problems = module_problems(PACKAGE / module)
    assert not problems, f"dafzarr/{module}: {problems}"


@pytest.mark.parametrize("module", CORE_MODULES)
def test_classes_define_their_methods(module: str) -> None:
    """No class gets a method by an assignment in its body of a function written in another
    module (``read_array = region.read_array``): such a function is typed against a protocol
    of the class's private state, and the class's behaviour is spread over modules."""
    borrowed = set(borrowed_methods(importlib.import_module(module)))
    allowed = BORROWED_JUSTIFIED.get(module, set()) | BORROWED_PENDING.get(module, set())
    assert borrowed <= allowed, f"{module}: methods taken from other modules: {borrowed - allowed}"
    assert not allowed - borrowed, f"{module}: exceptions no longer needed: {allowed - borrowed}"
