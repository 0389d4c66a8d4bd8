"""Every module of the package, at any depth (façades, ``_core`` and its subpackages, the
modules no subpackage's layout test covers), is small and documented: at most 600 lines, a
docstring first, an import block of at most 40 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

import dafzarr
from tests.helpers.layout_checks import module_problems

PACKAGE = Path(dafzarr.__file__).resolve().parent
MODULES = sorted(
    str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts
)


def test_the_package_has_modules_at_every_depth() -> None:
    assert "__init__.py" in MODULES and "_core/daf/query/operations.py" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    problems = module_problems(PACKAGE / module)
    assert not problems, f"dafzarr/{module}: {problems}"
