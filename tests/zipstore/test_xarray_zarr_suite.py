"""xarray's own zarr backend tests, run on MmapZipStore and, for comparison, on zarr's LocalStore.

xarray ships its test-suite in its wheel. ``ZarrBase`` in ``xarray.tests.test_backends`` holds
every round trip, append, region write and encoding test of xarray's zarr backend; each test
takes its store from ``create_zarr_target`` and runs once per zarr format (the
``default_zarr_format`` fixture sets ``zarr.config``'s ``default_zarr_format`` to 2, then 3).
``TestZarrRegionAuto`` (``region="auto"``, partial-chunk regions) takes its store the same way,
``TestDataArrayToZarr`` from a ``tmp_store`` fixture. Each is subclassed twice here: with a
fresh ``MmapZipStore`` as the store, and with a fresh ``zarr.storage.LocalStore`` (the
comparison, marked ``slow``: what passes there must pass on the ZIP store).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("xarray.tests.test_backends") is None:
    pytest.skip(
        "this xarray install has no test-suite (xarray.tests.test_backends is missing)",
        allow_module_level=True,
    )

import xarray as xr
import zarr
from xarray.tests import conftest as xr_conftest
from xarray.tests import test_backends as xr_backends

from dafzarr import MmapZipStore

# Importing xarray's test package turns on its warnings for unclosed files in the whole
# process, where a file another module's test left to the garbage collector then fails a
# later test. It is xarray's test-suite setting: it holds while xarray's tests run here.
xr.set_options(warn_for_unclosed_files=False)


@pytest.fixture(autouse=True)
def _xarray_test_options() -> Iterator[None]:
    with xr.set_options(warn_for_unclosed_files=True):
        yield


# pytest finds fixtures in the module that collects a test and in the conftest files on its
# path: the ones ZarrBase's tests request (from xarray's module and from xarray's tests/
# conftest) are bound here.
default_zarr_format = xr_backends.default_zarr_format
use_dask = xr_conftest.use_dask
time_unit = xr_conftest.time_unit

# zarr warns about its format-3 extensions that xarray's tests write on purpose; xarray's own
# pytest configuration (its pyproject.toml) lets the same two warnings through.
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:The data type .* does not have a Zarr V3 specification"
        ":zarr.errors.UnstableSpecificationWarning"
    ),
    pytest.mark.filterwarnings(
        "ignore:Consolidated metadata is currently not part:zarr.errors.ZarrUserWarning"
    ),
]

# Tests that cannot pass on a ZIP archive by design, e.g. one that lists the target's files on
# disk: test name with its parameters ("test_x[3]") -> why. Empty: with xarray 2026.9 every
# test that passes on LocalStore passes on MmapZipStore. A test that fails on LocalStore too
# is xarray's to mark.
SKIPPED_ON_ZIP_STORE: dict[str, str] = {}


def _skip_if_param(request: pytest.FixtureRequest) -> None:
    """Apply xarray's ``skip_if_param`` marks (its root conftest does, outside the wheel).

    ``@pytest.mark.skip_if_param(name=value, ..., reason=..., condition=True)`` skips the
    test when every named parameter has the given value and the condition holds.
    """
    callspec = getattr(request.node, "callspec", None)
    params: dict[str, Any] = callspec.params if callspec is not None else {}
    for mark in request.node.iter_markers("skip_if_param"):
        kwargs = dict(mark.kwargs)
        reason = kwargs.pop("reason", "")
        condition = kwargs.pop("condition", True)
        if condition and all(k in params and params[k] == v for k, v in kwargs.items()):
            pytest.skip(reason)


@pytest.fixture(autouse=True)
def _xarray_test_environment(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What xarray's root conftest does for each of its tests (it is not in the wheel)."""
    _skip_if_param(request)
    if "flaky" in request.keywords:
        pytest.skip("flaky in xarray's own test-suite (xarray runs it only with --run-flaky)")
    if "network" in request.keywords:
        pytest.skip("needs the network")
    # xarray runs every test in its temporary directory (relative paths land there).
    monkeypatch.chdir(tmp_path)


class _FreshTargets:
    """A new store per ``create_zarr_target`` call or ``tmp_store`` fixture, in the test's
    temporary directory (xarray's classes take their store from one or the other)."""

    _tmp_path: Path
    _targets: int

    @pytest.fixture(autouse=True)
    def _target_dir(self, tmp_path: Path) -> None:
        self._tmp_path = tmp_path
        self._targets = 0

    def _next_path(self, suffix: str) -> Path:
        self._targets += 1
        return self._tmp_path / f"target{self._targets}{suffix}"


class _OnMmapZipStore(_FreshTargets):
    """Targets: a fresh ``MmapZipStore(path, "w")``, closed after the test."""

    @pytest.fixture(autouse=True)
    def _skip_inherent(self, request: pytest.FixtureRequest) -> None:
        reason = SKIPPED_ON_ZIP_STORE.get(request.node.name)
        if reason is not None:
            pytest.skip(reason)

    @contextlib.contextmanager
    def create_zarr_target(self) -> Iterator[MmapZipStore]:
        store = MmapZipStore(self._next_path(".zip"), "w")
        try:
            yield store
        finally:
            store.close()

    @pytest.fixture
    def tmp_store(self) -> Iterator[MmapZipStore]:
        with self.create_zarr_target() as store:
            yield store


class _OnLocalStore(_FreshTargets):
    """Targets: a fresh ``zarr.storage.LocalStore`` (the comparison; it tests no code of this
    project, hence ``slow`` on the classes: run them with the ZIP ones to see that both pass,
    skip and xfail the same tests)."""

    @contextlib.contextmanager
    def create_zarr_target(self) -> Iterator[zarr.storage.LocalStore]:
        yield zarr.storage.LocalStore(self._next_path(".zarr"), read_only=False)

    @pytest.fixture
    def tmp_store(self) -> Iterator[zarr.storage.LocalStore]:
        with self.create_zarr_target() as store:
            yield store


class TestXarrayOnMmapZipStore(_OnMmapZipStore, xr_backends.ZarrBase):
    """All of xarray's ``ZarrBase``: round trips, appends, region writes, encodings."""


@pytest.mark.slow
class TestXarrayOnLocalStore(_OnLocalStore, xr_backends.ZarrBase):
    """The comparison for the class above."""


class TestXarrayRegionAutoOnMmapZipStore(_OnMmapZipStore, xr_backends.TestZarrRegionAuto):
    """xarray's tests of ``region="auto"``, partial-chunk regions and appends (xarray runs them
    on a directory only)."""


@pytest.mark.slow
class TestXarrayRegionAutoOnLocalStore(_OnLocalStore, xr_backends.TestZarrRegionAuto):
    """The comparison for the class above."""


@pytest.mark.usefixtures("default_zarr_format")  # xarray runs them in zarr's default only
class TestXarrayDataArrayToZarrOnMmapZipStore(_OnMmapZipStore, xr_backends.TestDataArrayToZarr):
    """xarray's ``DataArray.to_zarr`` tests (xarray runs them on a directory, a dict and zarr's
    ZipStore, skipping the reopening ones on the ZipStore)."""


@pytest.mark.slow
@pytest.mark.usefixtures("default_zarr_format")
class TestXarrayDataArrayToZarrOnLocalStore(_OnLocalStore, xr_backends.TestDataArrayToZarr):
    """The comparison for the class above."""
