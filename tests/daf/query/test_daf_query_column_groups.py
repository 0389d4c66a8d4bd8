"""Group-by of the columns (``M |/ g >| R``) and reduction of the rows (``M >| R``) of sparse
matrices: read in place from the layout stored, whichever it is, never densified and never
copied value by value; the same answers as numpy on the dense values."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr

TYPES = ["T0", "T1", "T2", "T3", "T4"]


def _mode(values: np.ndarray) -> Any:
    """The most frequent value, ties to the one whose count reaches the most first."""
    uniques, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    tied = np.flatnonzero(counts == counts.max())
    reached = [np.flatnonzero(inverse == t)[counts.max() - 1] for t in tied]
    return uniques[tied[int(np.argmin(reached))]]


def _f(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def _geomean(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.exp(np.mean(np.log(_f(x) + 1.0), axis=1)) - 1.0)


# Each reduction of the rows of a dense block (one value per row), as numpy has it.
REDUCTIONS = [
    ("Sum", lambda x: _f(x).sum(axis=1)),
    ("Mean", lambda x: _f(x).mean(axis=1)),
    ("Count", lambda x: np.full(len(x), x.shape[1])),
    ("Min", lambda x: x.min(axis=1)),
    ("Max", lambda x: x.max(axis=1)),
    ("Var", lambda x: np.var(_f(x), axis=1)),
    ("Std", lambda x: np.std(_f(x), axis=1)),
    ("VarN eps 1", lambda x: np.var(_f(x), axis=1) / (_f(x).mean(axis=1) + 1)),
    ("StdN eps 1", lambda x: np.std(_f(x), axis=1) / (_f(x).mean(axis=1) + 1)),
    ("GeoMean eps 1", _geomean),
    ("Median", lambda x: np.median(_f(x), axis=1)),
    ("Quantile p 0.3", lambda x: np.quantile(_f(x), 0.3, axis=1)),
    ("Mode", lambda x: np.array([_mode(np.concatenate([r[r != 0], r[r == 0]])) for r in x])),
]


def _data_set(
    path: Path,
    dtype: str,
    relayout: bool,
    rows: int = 70,
    cols: int = 300,
    density: float = 0.4,
    seed: int = 12,
) -> tuple[Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 60_000, size=(rows, cols))
    if dtype in ("int16", "int32"):  # negatives and ties: zeros fall between the values
        dense = dense % 7 - 3
    dense[rng.random((rows, cols)) >= density] = 0
    dense = dense.astype(dtype)
    kind = np.asarray(TYPES, dtype=object)[rng.integers(0, 4, size=cols)]  # T4: no members
    kind[::17] = ""  # in no group
    d = dafzarr.open_daf(path, "w", name="c")
    d.add_axis("cell", [f"c{i}" for i in range(rows)])
    d.add_axis("gene", [f"g{i}" for i in range(cols)])
    d.add_axis("type", TYPES)
    d.set_vector("gene", "type", kind)
    d.set_vector("gene", "rank", np.arange(cols, dtype=np.float32))
    d.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(dense), relayout=relayout)
    return d, dense, kind


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=1e-6, err_msg=what
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint16", "int32", "bool"])
@pytest.mark.parametrize("relayout", [False, True], ids=["one-layout", "both-layouts"])
@pytest.mark.parametrize(("reduction", "function"), REDUCTIONS, ids=[r for r, _ in REDUCTIONS])
def test_row_reductions_and_column_groups_match_numpy(
    tmp_path: Path, dtype: str, relayout: bool, reduction: str, function: Any
) -> None:
    d, dense, kind = _data_set(tmp_path / "c.daf.zarr.zip", dtype, relayout)
    rows = d.get_np_query(f"@ cell @ gene :: UMIs >| {reduction}")
    _check(rows, function(dense), f"{reduction} of rows")
    masked = d.get_np_query(f"@ cell @ gene [ rank >= 0 ] :: UMIs >| {reduction}")
    np.testing.assert_array_equal(masked, rows)  # read as scipy's CSC, then scattered
    got = d.get_np_query(f"@ cell @ gene :: UMIs |/ type =@ >| {reduction} || 0")
    assert got.shape == (70, 5) and got.dtype == rows.dtype
    for k, name in enumerate(TYPES[:4]):
        _check(got[:, k], function(dense[:, kind == name]), f"{reduction} of {name}")
    assert (got[:, 4] == 0).all()
    masked = d.get_np_query(f"@ cell @ gene [ rank >= 0 ] :: UMIs |/ type =@ >| {reduction} || 0")
    np.testing.assert_array_equal(masked, got)
    flipped = d.get_np_query(f"@ gene @ cell :: UMIs -/ type =@ >- {reduction} || 0")
    np.testing.assert_array_equal(flipped, got.T)  # the transpose, by the other pass


@pytest.mark.parametrize("relayout", [False, True], ids=["one-layout", "both-layouts"])
@pytest.mark.parametrize("reduction", [r for r, _ in REDUCTIONS])
def test_row_reductions_and_column_groups_make_no_copy(
    tmp_path: Path, relayout: bool, reduction: str
) -> None:
    d, dense, _ = _data_set(
        tmp_path / "n.daf.zarr.zip", "float32", relayout, rows=4000, cols=300, density=0.25
    )
    nnz = int(np.count_nonzero(dense))
    for query in (
        f"@ cell @ gene :: UMIs >| {reduction}",
        f"@ cell @ gene :: UMIs |/ type =@ >| {reduction} || 0",
        f"@ gene @ cell :: UMIs -/ type =@ >- {reduction} || 0",
    ):
        d.get_np_query(query)  # the axes and the type vector read once
        d.empty_cache()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            got = d.get_np_query(query)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # The result and a few arrays of its size, a few arrays of one entry per row or
        # column, a block of 65,536 values (12 bytes each) of the order statistics and the
        # logarithms of a GeoMean 65,536 at a time. The runs by key made 30 to 50 bytes per
        # stored value (here over 9 MB).
        assert peak < 4 * got.size * 8 + 64 * 4000 + 24 * 65536 + (1 << 20), (query, peak, nnz)
