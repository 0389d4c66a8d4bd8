"""The layout of ``dafzarr.refs``: public names, module dependencies, sizes.

The subpackage's modules depend on each other in one direction only (records at the bottom,
the command line at the top); each imports alone in a fresh interpreter, stays small and says
what it is for.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dafzarr.refs

PACKAGE = Path(dafzarr.refs.__file__).parent
ROOT = PACKAGE.parents[1]
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))
MAX_LINES = 600
MAX_IMPORT_LINES = 40  # the imports at the top of a module fit on one screen

# What ``dafzarr.refs`` exported before it became a package; users import these names.
PUBLIC = frozenset([
    "HIDDEN_ATTRIBUTES", "PLACEMENT_SCHEMA", "REFS_SCHEMA", "ScanResult", "Variable",
    "VirtualArray", "VirtualDataset", "as_virtual", "compose", "mosaic_sources", "place", "scan",
    "scan_many", "to_kerchunk_json", "virtualize", "write_parquet",
])  # fmt: skip


def _tree(module: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))


def _imported_siblings(module: str) -> set[str]:
    """The modules of ``dafzarr.refs`` that ``module`` imports, at its top or in a function."""
    out = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from ._x import y
                out.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import _x
                out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith("dafzarr.refs."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(
                a.name.split(".")[2] for a in node.names if a.name.startswith("dafzarr.refs.")
            )
    return out & set(MODULES)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
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


def test_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle() -> None:
    graph = {m: _imported_siblings(m) - {m} for m in MODULES}
    assert graph["_compose"], "the import graph was not read"
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle in dafzarr.refs: {' -> '.join(cycle or [])}"


def test_every_module_imports_alone() -> None:
    """Imported first, in a fresh interpreter, each module loads (no order-dependent cycle)."""
    procs = {
        m: subprocess.Popen(
            [sys.executable, "-c", f"import dafzarr.refs.{m}" if m != "__init__" else "import dafzarr.refs"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for m in MODULES
    }  # fmt: skip
    failed = {}
    for m, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        if proc.returncode:
            failed[m] = out
    assert not failed, failed


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    text = (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES, f"{module}.py: more than {MAX_LINES} lines"
    tree = ast.parse(text)
    assert ast.get_docstring(tree), f"{module}.py does not start with a docstring"
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    span = (imports[-1].end_lineno or 0) - imports[0].lineno + 1 if imports else 0
    assert span <= MAX_IMPORT_LINES, f"{module}.py: imports take {span} lines"


# --- The public names ------------------------------------------------------------------------
def test_public_names() -> None:
    assert set(dafzarr.refs.__all__) == PUBLIC
    assert set(dafzarr.refs._SOURCE) == PUBLIC
    assert set(dir(dafzarr.refs)) >= PUBLIC
    for name in PUBLIC:
        value = getattr(dafzarr.refs, name)
        module = getattr(value, "__module__", None)
        assert module is None or module.startswith("dafzarr.refs"), (name, module)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        dafzarr.refs.nothing  # noqa: B018
    assert not hasattr(dafzarr.refs, "_scan_file")


def test_public_names_import_in_a_fresh_interpreter() -> None:
    code = (
        "from dafzarr.refs import *\n"
        "from dafzarr.refs import " + ", ".join(sorted(PUBLIC)) + "\n"
        "import dafzarr.refs as r\n"
        "assert r.scan is scan and r.ScanResult is ScanResult\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_command_line_does_not_load_hdf5_or_arrow() -> None:
    """``dafzarr zip ...`` starts without h5py and pyarrow: the refs names load on first use."""
    code = (
        "import sys, dafzarr.cli, dafzarr.refs\n"
        "print(sorted({'h5py', 'pyarrow'} & set(sys.modules)))\n"
        "dafzarr.refs.scan\n"
        "print(sorted({'h5py', 'pyarrow'} & set(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120, capture_output=True,
        text=True,
    ).stdout.splitlines()  # fmt: skip
    assert out == ["[]", "['h5py', 'pyarrow']"]


def test_subpackage_is_packaged() -> None:
    """``dafzarr.refs`` is among the packages setuptools puts in the wheel (and the sdist)."""
    setuptools = pytest.importorskip("setuptools")
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("needs the source tree")
    find = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    found = setuptools.find_packages(where=str(ROOT), include=find["find"]["include"])
    assert "dafzarr.refs" in found
