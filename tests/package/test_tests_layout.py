"""The test-suite is arranged by subpackage: every test lives in a folder of ``tests/``.

``tests/zipstore/``, ``tests/arrayfile/``, ``tests/daf/`` (with ``ops/`` and ``query/``),
``tests/refs/``, ``tests/anndata/`` and ``tests/cli/`` mirror the public modules;
``tests/core/``, ``tests/kernels/`` and ``tests/robustness/`` hold the tests of the shared
private layer, of the compiled kernels and of every operation under failure;
``tests/package/`` the package-wide checks; ``tests/helpers/`` what several folders share.
"""

from __future__ import annotations

from tests.helpers import ROOT

TESTS = ROOT / "tests"
# The only files directly in tests/: the package marker and the suite's configuration.
ROOT_FILES = {"__init__.py", "conftest.py"}


def test_no_file_lies_directly_in_tests() -> None:
    """A new test (or helper) goes into the folder of what it tests, not into ``tests/``."""
    stray = sorted(p.name for p in TESTS.iterdir() if p.is_file() and p.name not in ROOT_FILES)
    assert stray == [], f"files directly in tests/ (move them into a folder): {stray}"


def test_every_test_folder_is_a_package() -> None:
    """Each folder that holds Python files has an ``__init__.py``: its modules are then
    ``tests.<folder>.<name>``, so two folders may hold files of the same name, and a folder
    such as ``tests/anndata`` never shadows the package it tests."""
    folders = {p.parent for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert missing == [], f"test folders without __init__.py: {missing}"


def test_the_folders_hold_tests() -> None:
    """Each folder of the layout exists and holds test modules (the suite was not left flat)."""
    expected = [
        "zipstore",
        "arrayfile",
        "daf",
        "daf/ops",
        "daf/query",
        "refs",
        "anndata",
        "cli",
        "core",
        "kernels",
        "robustness",
        "package",
    ]
    empty = [f for f in expected if not any((TESTS / f).glob("test_*.py"))]
    assert empty == [], f"test folders without tests: {empty}"
