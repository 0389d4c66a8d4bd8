"""The benchmark modules follow the package's module rules: at most 600 lines, a docstring, a
short import block (a benchmark split by concern keeps its ``python -m benchmarks.X``
command in the module that holds its command line)."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.layout_checks import module_problems

BENCHMARKS = ROOT / "benchmarks"
MODULES = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name != "__init__.py")


@pytest.mark.skipif(not MODULES, reason="the benchmarks are not beside the tests")
@pytest.mark.parametrize("module", MODULES)
def test_benchmark_module_is_small_and_documented(module: str) -> None:
    assert not module_problems(BENCHMARKS / module)
