"""Backends and check functions shared by the ZarrDaf tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import dafzarr

ELEMENT_TYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
]
INDEX_TYPES = ["int32", "int64", "uint32", "uint64"]

# (id, path relative to tmp_path or None for memory, zarr_format)
BACKENDS = [
    ("memory-v2", None, 2),
    ("memory-v3", None, 3),
    ("dir-v2", "data.daf.zarr", 2),
    ("dir-v3", "data.daf.zarr", 3),
    ("zip-v2", "data.daf.zarr.zip", 2),
    ("zip-v3", "data.daf.zarr.zip", 3),
    ("multizip-v2", "data.dafs.zarr.zip#/one/sub", 2),
    ("multizip-v3", "data.dafs.zarr.zip#/two", 3),
]


class Backend:
    """Opens the same data set for writing and then for reading."""

    def __init__(self, tmp_path: Path, rel: str | None, zarr_format: int) -> None:
        self.path = None if rel is None else str(tmp_path / rel)
        self.zarr_format = zarr_format
        self._memory: dafzarr.ZarrDaf | None = None

    def writer(self) -> dafzarr.ZarrDaf:
        if self.path is None:
            self._memory = dafzarr.memory_daf(zarr_format=self.zarr_format)
            return self._memory
        return dafzarr.open_daf(self.path, "w+", zarr_format=self.zarr_format)

    def reader(self, w: dafzarr.ZarrDaf) -> dafzarr.ZarrDaf:
        if self.path is None:
            assert self._memory is not None
            return self._memory.read_only_view()
        w.close()
        return dafzarr.open_daf(self.path, "r")


def sample(dtype: str, shape: int | tuple[int, ...], seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.normal(size=shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(
        max(info.min, -100), min(info.max, 100), size=shape, endpoint=True, dtype=dt
    )


def sparse_sample(dtype: str, shape: tuple[int, int], seed: int = 0) -> sp.csc_matrix:
    rng = np.random.default_rng(seed)
    dense = sample(dtype, shape, seed)
    dense[rng.random(shape) < 0.6] = 0
    return sp.csc_matrix(dense)


STRINGS = ["a", "bé", "", "日本語", "x" * 300, "emoji 🎉"]


def assert_same(got: Any, want: Any) -> None:
    if sp.issparse(want):
        assert sp.issparse(got)
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        assert (got != want).nnz == 0
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape
    if want_a.dtype.kind in "OUT":
        assert [str(x) for x in got_a.ravel()] == [str(x) for x in want_a.ravel()]
    else:
        assert got_a.dtype == want_a.dtype, (got_a.dtype, want_a.dtype)
        assert np.array_equal(got_a, want_a)


Check = Callable[[dafzarr.ZarrDaf], None]


def assert_same_query_result(got: Any, expected: Any, query: str) -> None:
    """The same query result: equal values, entry names and axes (dtypes may differ)."""
    import pandas as pd

    if isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(got, expected, check_dtype=False, obj=query)
    elif isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, obj=query)
    else:
        assert got == expected, query


def recorder(original: Callable[..., Any], returned: list[Any]) -> Callable[..., Any]:
    """``original``, noting in ``returned`` every value it returns (to see that a wrapper
    passes a reader's own arrays through)."""

    def record(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        returned.append(out)
        return out

    return record
