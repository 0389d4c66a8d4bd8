"""The layout of ``dafzarr.refs``: public names, module dependencies, sizes, exception classes.

The subpackage's modules depend on each other in one direction only (records at the bottom,
the command line at the top); each imports alone in a fresh interpreter, stays small, says
what it is for, and raises only dafzarr's own exception classes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow as pa
import pytest

import dafzarr._core.refs as core
import dafzarr.refs
from dafzarr import errors
from dafzarr._core.refs import vrt
from tests.helpers.layout_checks import (
    Raises,
    check_raises_only_dafzarr_errors,
    find_cycle,
    module_problems,
    modules_failing_alone,
)
from tests.helpers.layout_checks import siblings as imported_siblings

PACKAGE = Path(core.__file__).parent
ROOT = PACKAGE.parents[2]
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))

# What ``dafzarr.refs`` exports (all it exported before it became a package, and since then
# ReferenceWriter); users import these names.
PUBLIC = frozenset([
    "HIDDEN_ATTRIBUTES", "PLACEMENT_SCHEMA", "REFS_SCHEMA", "ReferenceWriter", "ScanResult",
    "Variable",
    "VirtualArray", "VirtualDataset", "as_virtual", "compose", "mosaic_sources", "place", "scan",
    "scan_many", "to_icechunk", "to_kerchunk_json", "virtualize", "write_parquet",
])  # fmt: skip


def test_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle() -> None:
    graph = {m: imported_siblings(PACKAGE, m) - {m} for m in MODULES}
    assert graph["compose"], "the import graph was not read"
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in dafzarr._core.refs: {' -> '.join(cycle or [])}"


def test_every_module_imports_alone() -> None:
    """Imported first, in a fresh interpreter, each module loads (no order-dependent cycle)."""
    failed = modules_failing_alone(ROOT, "dafzarr._core.refs", MODULES)
    assert not failed, failed


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    assert not module_problems(PACKAGE / f"{module}.py")


@pytest.mark.parametrize("module", MODULES)
def test_raises_only_dafzarr_errors(module: str) -> None:
    """Every exception class a module raises comes from ``dafzarr.errors``.

    A module ``__getattr__`` raises ``AttributeError``, as the language requires of it.
    """
    check_raises_only_dafzarr_errors(
        PACKAGE, module, exempt=frozenset({("__getattr__", "AttributeError")}), level=3
    )


def test_raise_finder_sees_builtins() -> None:
    raises = Raises()
    raises.visit(ast.parse("def f():\n    raise ValueError('x')\nraise KeyError\n"))
    assert raises.found == [(2, "ValueError", "f"), (3, "KeyError", "")]


# --- The public names ------------------------------------------------------------------------
def test_public_names() -> None:
    assert set(dafzarr.refs.__all__) == PUBLIC
    assert set(dafzarr.refs._SOURCE) == PUBLIC
    assert set(dir(dafzarr.refs)) >= PUBLIC
    for name in PUBLIC:
        value = getattr(dafzarr.refs, name)
        module = getattr(value, "__module__", None)
        assert module is None or module.startswith("dafzarr._core.refs."), (name, module)
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


# --- Bad arguments are dafzarr's ValueErrors -------------------------------------------------
def _vds_with_short_references() -> dafzarr.refs.VirtualDataset:
    import numpy as np

    a = dafzarr.refs.VirtualArray(
        name="a",
        zarray={"shape": [10], "chunks": [5]},
        zattrs={},
        path_index=np.zeros(1, dtype=np.int32),
        offset=np.zeros(1, dtype=np.int64),
        size=np.zeros(1, dtype=np.int64),
    )
    return dafzarr.refs.VirtualDataset(paths=["file:///x.nc"], arrays={"a": a}, groups={"": {}})


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda _: dafzarr.refs.scan("x.nc", on_unsupported="ignore"), "on_unsupported"),
        (lambda _: dafzarr.refs.mosaic_sources(["a.nc", "a.nc"]), "listed twice"),
        (lambda _: dafzarr.refs.mosaic_sources(["a.nc"], ["u1", "u2"]), "public URLs"),
        (lambda _: dafzarr.refs.scan_many(["a.nc", "b.nc"], workers=0), "workers must"),
        (lambda _: dafzarr.refs.virtualize(pa.table({"x": [1]}), None), "needs the columns"),
        (lambda _: dafzarr.refs.place([]), "no files to place"),
        (lambda p: dafzarr.refs.write_parquet(_vds_with_short_references(), p, record_size=0),
         "record_size"),
        (lambda p: dafzarr.refs.write_parquet(_vds_with_short_references(), p), "grid of 2"),
        (lambda p: dafzarr.refs.to_kerchunk_json(_vds_with_short_references()), "grid of 2"),
    ],
    ids=["on_unsupported", "twice", "counts", "workers", "columns", "place", "record_size",
         "parquet-grid", "json-grid"],
)  # fmt: skip
def test_bad_arguments(tmp_path: Path, call: object, match: str) -> None:
    with pytest.raises(errors.InvalidArgumentError, match=match) as info:
        call(tmp_path / "store")  # type: ignore[operator]
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "store").exists()


def test_placement_file_that_is_not_a_vrt(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text("<Other/>", encoding="utf-8")
    sources = dafzarr.refs.mosaic_sources(["a.nc"])
    with pytest.raises(errors.IncompatibleSourcesError, match="not a VRT") as info:
        vrt.placement_from_vrt(path, sources, [])
    assert isinstance(info.value, ValueError)
