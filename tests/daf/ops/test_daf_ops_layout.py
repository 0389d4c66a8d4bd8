"""The layout of ``dafzarr.daf.ops``: public names, module dependencies, sizes, exception
classes.

Every module of the folder is checked, those added later included: no import cycle among
them, each imports alone in a fresh interpreter, stays small, says what it is for, and
raises only dafzarr's own exception classes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import dafzarr
import dafzarr._core.daf.ops as core
import dafzarr.daf.ops
from tests.helpers.layout_checks import (
    check_modules_import_alone,
    check_no_import_cycle,
    check_raises_only_dafzarr_errors,
    check_small_and_documented,
)

PACKAGE = Path(core.__file__).parent
ROOT = PACKAGE.parents[3]
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))

# The operations the package root exports too.
PUBLIC = frozenset([
    "Contract", "ContractExpectation", "CreatedOutput", "GuaranteedOutput", "MergeAction",
    "OptionalInput", "OptionalOutput", "RequiredInput", "adapter", "computation",
    "concatenate", "contractor", "copy_all", "copy_axis", "copy_matrix", "copy_scalar",
    "copy_tensor", "copy_vector", "reconstruct_axis",
])  # fmt: skip


def test_no_import_cycle() -> None:
    check_no_import_cycle(core, "__init__")


def test_every_module_imports_alone() -> None:
    check_modules_import_alone(core)


@pytest.mark.parametrize("module", MODULES)
def test_module_is_small_and_documented(module: str) -> None:
    check_small_and_documented(PACKAGE, module)


@pytest.mark.parametrize("module", MODULES)
def test_raises_only_dafzarr_errors(module: str) -> None:
    check_raises_only_dafzarr_errors(PACKAGE, module, skip_abstract_stubs=True, level=4)


def test_the_parent_does_not_import_the_operations() -> None:
    """``dafzarr.daf`` does not depend on its operations (they build on it)."""
    code = (
        "import sys, dafzarr.daf\n"
        "assert not {'dafzarr.daf.ops', 'dafzarr._core.daf.ops'} & set(sys.modules), "
        "'dafzarr.daf imports its ops'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_public_names() -> None:
    assert set(dafzarr.daf.ops.__all__) >= PUBLIC
    for name in PUBLIC:
        value = getattr(dafzarr.daf.ops, name)
        assert value.__module__.startswith("dafzarr._core.daf.ops."), (name, value.__module__)
        assert getattr(dafzarr, name) is value
        assert value.__doc__, name
