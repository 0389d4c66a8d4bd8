"""The layout of ``dafzarr.daf``: public names, module dependencies, sizes, exception classes.

The subpackage's modules depend on each other in one direction only (names and values at the
bottom, the ``ZarrDaf`` facade and the copies at the top); each imports alone in a fresh
interpreter, stays small, says what it is for, and raises only dafzarr's own exception classes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import dafzarr
import dafzarr._core.daf as core
import dafzarr.daf
from dafzarr import errors
from tests.helpers.layout_checks import (
    Raises,
    check_modules_import_alone,
    check_no_import_cycle,
    check_raises_only_dafzarr_errors,
    check_small_and_documented,
)

PACKAGE = Path(core.__file__).parent
ROOT = PACKAGE.parents[2]
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))

# What users import from ``dafzarr.daf`` (and the Daf names of ``dafzarr`` itself).
PUBLIC = frozenset([
    "DafReader", "ZarrDaf", "chain_reader", "chain_writer", "complete_chain", "complete_daf",
    "convert_daf", "copy_daf",
    "describe_property", "memory_daf", "open_daf", "parse_daf_path", "viewer",
])  # fmt: skip
TOP_LEVEL = ("ZarrDaf", "chain_reader", "chain_writer", "memory_daf", "open_daf", "viewer")


def test_no_import_cycle() -> None:
    check_no_import_cycle(core, "zarrdaf")


def test_every_module_imports_alone() -> None:
    check_modules_import_alone(core)


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    check_small_and_documented(PACKAGE, module)


@pytest.mark.parametrize("module", MODULES)
def test_raises_only_dafzarr_errors(module: str) -> None:
    """Every exception class a module raises comes from ``dafzarr.errors``; a method every
    subclass provides (an abstract stub) raises ``NotImplementedError``."""
    # NotCanonicalError is a private signal from the writer of checked indices to
    # set_matrix, which catches it and writes the value canonical (or refuses it).
    check_raises_only_dafzarr_errors(
        PACKAGE,
        module,
        skip_abstract_stubs=True,
        level=3,
        exempt=frozenset({("_shift", "NotCanonicalError")}),
    )


def test_raise_finder_skips_only_abstract_stubs() -> None:
    raises = Raises(skip_abstract_stubs=True)
    raises.visit(ast.parse(
        "def f():\n    raise ValueError('x')\nraise KeyError\n"
        "def g():\n    '''Each subclass's.'''\n    raise NotImplementedError\n"
        "def h(x):\n    if x:\n        raise NotImplementedError\n    return x\n"
    ))  # fmt: skip
    assert raises.found == [(2, "ValueError", "f"), (3, "KeyError", ""),
                            (9, "NotImplementedError", "h")]  # fmt: skip


# --- The public names ------------------------------------------------------------------------
def test_public_names() -> None:
    assert set(dafzarr.daf.__all__) == PUBLIC
    for name in PUBLIC:
        value = getattr(dafzarr.daf, name)
        assert value.__module__.startswith("dafzarr._core.daf."), (name, value.__module__)
    for name in TOP_LEVEL:
        assert getattr(dafzarr, name) is getattr(dafzarr.daf, name)


def test_public_names_import_in_a_fresh_interpreter() -> None:
    code = (
        "from dafzarr.daf import *\n"
        "from dafzarr.daf import " + ", ".join(sorted(PUBLIC)) + "\n"
        "from dafzarr import ZarrDaf as Z, memory_daf as m, open_daf as o\n"
        "assert Z is ZarrDaf and m is memory_daf and o is open_daf\n"
        "assert memory_daf().set_scalar('x', 1).get_scalar('x') == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


# --- Errors are dafzarr's, compatible with the builtins they replace -------------------------
def test_bad_arguments_are_dafzarr_errors(tmp_path: Path) -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", ["a", "b"])
    with pytest.raises(errors.InvalidArgumentTypeError, match="name must be a str") as info:
        d.set_scalar(1, 1)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)
    with pytest.raises(errors.InvalidArgumentError, match="value length") as shape:
        d.set_vector("cell", "v", [1, 2, 3])
    assert isinstance(shape.value, ValueError)
    with pytest.raises(errors.InvalidArgumentError, match="invalid mode"):
        dafzarr.ZarrDaf(None, "a")  # type: ignore[arg-type]
    missing = tmp_path / "x.daf.zarr"
    with pytest.raises(errors.DafNotFoundError, match="no such directory") as gone:
        dafzarr.open_daf(missing, "r")
    assert isinstance(gone.value, FileNotFoundError) and gone.value.filename == str(missing)


def test_stored_element_type_daf_does_not_know_is_a_format_error(tmp_path: Path) -> None:
    """A v2 array stored as float16 is a corrupt data set (as v3's unknown data types are)."""
    path = tmp_path / "x.daf.zarr"
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", ["a", "b"])
        d.set_vector("cell", "v", [1.0, 2.0])
    zarray = path / "vectors" / "cell" / "v" / ".zarray"
    zarray.write_text(zarray.read_text(encoding="utf-8").replace("<f8", "<f2"), encoding="utf-8")
    with (
        dafzarr.open_daf(path, "r") as d,
        pytest.raises(errors.DafFormatError, match="unsupported element type float16"),
    ):
        d.get_np_vector("cell", "v")
