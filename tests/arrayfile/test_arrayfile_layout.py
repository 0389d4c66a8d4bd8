"""The layout of ``dafzarr.arrayfile``: module dependencies, sizes, docstrings, exceptions.

The facade (``_file``) sits on units that depend on each other in one direction only (records
and codecs at the bottom); each imports first in a fresh interpreter, stays small, says what
it is for, and every exception class it raises lives in :mod:`dafzarr.errors`.
"""

from __future__ import annotations

import ast

import pytest

from tests.helpers import ROOT
from tests.helpers.layout_checks import find_cycle, module_problems, modules_failing_alone
from tests.helpers.layout_checks import siblings as imported_siblings

# Found by path, not imported: a broken import order must fail these tests, not their collection
PACKAGE = ROOT / "dafzarr" / "_core" / "arrayfile"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


def test_arrayfile_has_no_import_cycle() -> None:
    graph = {m: imported_siblings(PACKAGE, m) - {m} for m in MODULES}
    assert {"records", "sidecars", "flush", "compact"} <= graph["file"], (
        "the import graph was not read"
    )
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in dafzarr._core.arrayfile: {' -> '.join(cycle or [])}"


def test_every_arrayfile_module_imports_first() -> None:
    """Imported first, the packages above it set up without running their ``__init__``
    (``dafzarr``'s imports the whole subpackage in its own order), each module loads (no
    order-dependent cycle)."""
    failed = modules_failing_alone(ROOT, "dafzarr._core.arrayfile", MODULES, bare=True)
    assert not failed, failed


@pytest.mark.parametrize("module", MODULES)
def test_arrayfile_module_is_small_and_documented(module: str) -> None:
    path = PACKAGE / f"{module}.py"
    assert not module_problems(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception")) for b in n.bases)
    ]
    assert not defined, f"{module}.py defines exceptions outside dafzarr.errors: {defined}"
