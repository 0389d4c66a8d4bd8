"""Fixtures and test-suite configuration (never import from this module)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None)
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("nightly", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Child processes the tests start (crash tests, CLI runs) import dafzarr from this checkout
# too, not from wherever an installed copy points.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
)


@pytest.fixture
def fixtures_dir() -> Path:
    """Golden files written by other implementations (absent in a user's clone: skip).

    ``../shared/fixtures`` next to the checkout, or the directory ``DAFZARR_FIXTURES`` names.
    """
    env = os.environ.get("DAFZARR_FIXTURES")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "fixtures"
    if not path.is_dir():
        pytest.skip(f"golden fixtures ({path}) are not available")
    return path


@pytest.fixture
def fixture_set(fixtures_dir: Path) -> Callable[[str], Path]:
    """``fixture_set(name)``: the golden-file directory ``name`` (skip when it is absent)."""

    def get(name: str) -> Path:
        path = fixtures_dir / name
        if not path.is_dir():
            pytest.skip(f"the shared fixtures have no {name}/ directory")
        return path

    return get


@pytest.fixture(params=["memory", "directory", "zip"])
def writable_dafs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    """Makes empty writable Daf data sets of one backend, named as asked (each backend in
    turn); the stored ones are closed at the end of the test."""
    import dafzarr

    opened: list[Any] = []

    def new(name: str) -> Any:
        if request.param == "memory":
            return dafzarr.memory_daf(name)
        suffix = ".daf.zarr" if request.param == "directory" else ".daf.zarr.zip"
        d = dafzarr.open_daf(tmp_path / f"{name.strip('!')}{suffix}", "w", name=name)
        opened.append(d)
        return d

    yield new
    for d in opened:
        d.close()


def pytest_configure(config: pytest.Config) -> None:
    """Register the marks of xarray's test-suite, which ``test_xarray_zarr_suite`` runs.

    xarray's own (unshipped) root conftest registers them; with ``--strict-markers`` an
    unregistered mark is an error as soon as ``xarray.tests`` is imported.
    """
    for line in (
        "network: (xarray's test-suite) needs the network; skipped",
        "flaky: (xarray's test-suite) flaky; skipped, as xarray does without --run-flaky",
        "skip_with_dask_array: (xarray's test-suite) skipped with the dask-array chunk manager",
        "skip_if_param(**params, reason, condition=True): (xarray's test-suite) skipped when "
        + "the test's parameters have these values",
    ):
        config.addinivalue_line("markers", line)
