"""Group-by of the rows of sparse matrices (``M -/ g >- Sum``, ``>- Mean``): one pass over the
stored values, no copy of them, the same answers as numpy on the dense values for every
element type; and the per-data-version tables of string vectors that comparisons and lookups
go through."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import DafFormatError

TYPES = ["T0", "T1", "T2", "T3", "T4"]


def _data_set(
    path: Path, dtype: str, rows: int = 300, cols: int = 70, density: float = 0.2, seed: int = 11
) -> tuple[Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 60_000, size=(rows, cols))
    dense[rng.random((rows, cols)) >= density] = 0
    dense = dense.astype(dtype)
    kind = np.asarray(TYPES, dtype=object)[rng.integers(0, 4, size=rows)]  # T4: no members
    kind[::17] = ""  # in no group
    d = dafzarr.open_daf(path, "w", name="g")
    d.add_axis("cell", [f"c{i}" for i in range(rows)])
    d.add_axis("gene", [f"g{i}" for i in range(cols)])
    d.add_axis("type", TYPES)
    d.set_vector("cell", "type", kind)
    d.set_vector("cell", "age", np.arange(rows, dtype=np.float32))
    d.set_matrix("cell", "gene", "UMIs", sp.csr_matrix(dense))  # both layouts, as a user does
    return d, dense, kind


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint16", "int32", "int64", "bool"])
def test_group_sums_and_means_match_numpy(tmp_path: Path, dtype: str) -> None:
    d, dense, kind = _data_set(tmp_path / "g.daf.zarr.zip", dtype)
    got = d.get_np_query("@ cell @ gene :: UMIs -/ type =@ >- Sum || 0")
    total = np.zeros(1, dtype=dense.dtype).sum().dtype  # numpy's sum type
    expected_type = {
        "float32": np.float32,
        "float64": np.float64,
        "uint16": np.uint32,
        "int32": np.int32,
        "int64": np.int64,
        "bool": np.uint32,
    }[dtype]
    assert got.dtype == expected_type and got.shape == (5, 70) and got.flags.f_contiguous
    for k, name in enumerate(TYPES):
        want = dense[kind == name].sum(axis=0, dtype=total)
        np.testing.assert_allclose(got[k], want.astype(expected_type), rtol=1e-6)
    means = d.get_np_query("@ cell @ gene :: UMIs -/ type >- Mean")
    names = ["", "T0", "T1", "T2", "T3"]
    for k, name in enumerate(names):
        np.testing.assert_allclose(
            means[k], dense[kind == name].mean(axis=0, dtype=np.float64), rtol=1e-6
        )
    masked = d.get_np_query("@ cell [ age > 100 ] @ gene :: UMIs -/ type =@ >- Sum || 0")
    older = np.arange(len(kind)) > 100
    np.testing.assert_allclose(
        masked[2],
        dense[older & (kind == "T2")].sum(axis=0, dtype=total).astype(expected_type),
        rtol=1e-6,
    )


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8", "bool"])
@pytest.mark.parametrize(
    ("reduction", "function"),
    [
        ("Min", np.min),
        ("Max", np.max),
        ("Count", lambda x, axis: np.full(x.shape[1], len(x))),
    ],
)
def test_group_extremes_and_counts_match_numpy(
    tmp_path: Path, dtype: str, reduction: str, function: Any
) -> None:
    d, dense, kind = _data_set(tmp_path / "e.daf.zarr.zip", dtype, density=0.6)
    if dtype == "int16":  # negatives, so that implicit zeros are not always the minimum
        d.set_matrix("cell", "gene", "UMIs", sp.csr_matrix(-dense), overwrite=True)
        dense = -dense
    got = d.get_np_query(f"@ cell @ gene :: UMIs -/ type =@ >- {reduction} || 0")
    masked = d.get_np_query(f"@ cell [ age >= 0 ] @ gene :: UMIs -/ type =@ >- {reduction} || 0")
    assert got.dtype == masked.dtype  # read as scipy CSC (0-based) rather than as stored
    for k, name in enumerate(TYPES[:4]):
        assert np.array_equal(got[k], function(dense[kind == name], axis=0)), (name, reduction)
    np.testing.assert_array_equal(got, masked)


def test_integer_group_sums_wrap_as_their_type(tmp_path: Path) -> None:
    d = dafzarr.open_daf(tmp_path / "w.daf.zarr", "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x"]).add_axis("type", ["T"])
    d.set_vector("cell", "type", np.array(["T", "T", "T"], dtype=object))
    d.set_matrix(
        "cell", "gene", "m", sp.csc_matrix(np.array([[2**31 - 1], [2], [3]], dtype=np.int32))
    )
    got = d.get_np_query("@ cell @ gene :: m -/ type =@ >- Sum")
    assert got.dtype == np.int32
    assert got.tolist() == [[np.array([2**31 - 1, 2, 3], dtype=np.int32).sum(dtype=np.int32)]]


def test_group_sums_make_no_copy_of_the_stored_values(tmp_path: Path) -> None:
    d, dense, _ = _data_set(
        tmp_path / "m.daf.zarr.zip", "float32", rows=4000, cols=300, density=0.25
    )
    nnz = int(np.count_nonzero(dense))
    query = "@ cell @ gene :: UMIs -/ type =@ >- Sum || 0"
    d.get_np_query(query)  # the axes and the type vector read once
    d.empty_cache()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = d.get_np_query(query)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The read of the matrix makes its 0-based int32 indices (4 bytes per stored value); the
    # group-by itself only its float64 sums and a code per row (a keyed pass made 30 bytes
    # per stored value).
    assert peak < 4 * nnz + 3 * got.size * 8 + 64 * 4000 + (1 << 20), (peak, nnz)


def test_cached_string_vectors_follow_writes(tmp_path: Path) -> None:
    d, _, kind = _data_set(tmp_path / "c.daf.zarr.zip", "float32")
    before = d.get_np_query("@ cell [ type = T1 & age > 10 ] : age")
    assert list(before) == list(np.flatnonzero((kind == "T1") & (np.arange(300) > 10)))
    colors = np.array(["red", "green", "blue", "cyan", "pink"], dtype=object)
    d.set_vector("type", "color", colors)
    got = d.get_np_query("@ cell [ age > 250 ] : type ?? '' : color")
    want = [colors[TYPES.index(k)] if k else "" for k in kind[251:]]
    assert list(got) == want
    flipped = np.where(kind == "T1", "T2", np.where(kind == "T2", "T1", kind))
    d.set_vector("cell", "type", flipped, overwrite=True)
    after = d.get_np_query("@ cell [ type = T1 & age > 10 ] : age")
    assert list(after) == list(np.flatnonzero((flipped == "T1") & (np.arange(300) > 10)))
    got = d.get_np_query("@ cell [ age > 250 ] : type ?? '' : color")
    assert list(got) == [colors[TYPES.index(k)] if k else "" for k in flipped[251:]]


@pytest.mark.parametrize("bad", [0, 4])  # a stored 0 and an index past the 3 rows
def test_a_corrupt_stored_index_is_an_error_not_a_sum(tmp_path: Path, bad: int) -> None:
    root = tmp_path / "bad.daf.zarr"
    d = dafzarr.open_daf(root, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"]).add_axis("type", ["T"])
    d.set_vector("cell", "type", np.array(["T", "T", "T"], dtype=object))
    d.set_matrix(
        "cell", "gene", "m", sp.csc_matrix(np.array([[1.0, 0], [0, 2], [3, 0]])), relayout=False
    )
    assert d.get_np_query("@ cell @ gene :: m -/ type =@ >- Sum").tolist() == [[4.0, 2.0]]
    d.close()
    chunk = next((root / "matrices/cell/gene/m/rowval").glob("0*"))
    stored = np.frombuffer(chunk.read_bytes(), np.uint32).copy()
    stored[-1] = bad
    chunk.write_bytes(stored.tobytes())
    d = dafzarr.open_daf(root)
    with pytest.raises(DafFormatError, match="rowval: stored"):
        d.get_np_query("@ cell @ gene :: m -/ type =@ >- Sum")


def _mode(values: np.ndarray) -> Any:
    """The most frequent value, ties to the one whose count reaches the most first (in a
    sparse column, the implicit zeros count as if after the stored values)."""
    uniques, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    tied = np.flatnonzero(counts == counts.max())
    reached = [np.flatnonzero(inverse == t)[counts.max() - 1] for t in tied]
    return uniques[tied[int(np.argmin(reached))]]


def _geomean(values: np.ndarray, eps: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # -1 + 1: log 0; below: NaN
        return np.asarray(np.exp(np.mean(np.log(values.astype(np.float64) + eps), axis=0)) - eps)


ORDERED = [
    ("Var", lambda x: np.var(x.astype(np.float64), axis=0)),
    ("Std", lambda x: np.std(x.astype(np.float64), axis=0)),
    ("GeoMean eps 1", lambda x: _geomean(x, 1.0)),
    ("Median", lambda x: np.median(x.astype(np.float64), axis=0)),
    ("Quantile p 0.3", lambda x: np.quantile(x.astype(np.float64), 0.3, axis=0)),
    ("Mode", lambda x: np.array([_mode(np.concatenate([c[c != 0], c[c == 0]])) for c in x.T])),
]


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8", "bool"])
@pytest.mark.parametrize(("reduction", "function"), ORDERED)
def test_group_spreads_orders_and_modes_match_numpy(
    tmp_path: Path, dtype: str, reduction: str, function: Any
) -> None:
    d, dense, kind = _data_set(tmp_path / "o.daf.zarr.zip", dtype, density=0.5)
    if dtype == "int16":  # negatives and ties: the implicit zeros fall between the values
        dense = (dense % 7 - 3).astype(np.int16)
        d.set_matrix("cell", "gene", "UMIs", sp.csr_matrix(dense), overwrite=True)
    got = d.get_np_query(f"@ cell @ gene :: UMIs -/ type =@ >- {reduction} || 0")
    masked = d.get_np_query(f"@ cell [ age >= 0 ] @ gene :: UMIs -/ type =@ >- {reduction} || 0")
    columns = d.get_np_query(f"@ cell @ gene :: UMIs >- {reduction}")
    for k, name in enumerate(TYPES[:4]):
        want = function(dense[kind == name])
        np.testing.assert_allclose(
            got[k].astype(np.float64),
            want.astype(np.float64),
            rtol=1e-6,
            err_msg=f"{name} {reduction}",
        )
    np.testing.assert_allclose(
        columns.astype(np.float64), function(dense).astype(np.float64), rtol=1e-6
    )
    np.testing.assert_array_equal(got, masked)  # the stored arrays and scipy's CSC agree


@pytest.mark.parametrize("reduction", [r for r, _ in ORDERED])
def test_group_spreads_orders_and_modes_make_no_copy(tmp_path: Path, reduction: str) -> None:
    d, dense, _ = _data_set(
        tmp_path / "n.daf.zarr.zip", "float32", rows=4000, cols=300, density=0.25
    )
    nnz = int(np.count_nonzero(dense))
    query = f"@ cell @ gene :: UMIs -/ type =@ >- {reduction} || 0"
    d.get_np_query(query)  # the axes and the type vector read once
    d.empty_cache()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = d.get_np_query(query)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The result and a few arrays of its size, a code per row and one column's values; the
    # logarithms of a GeoMean a chunk of 65,536 values at a time. Keyed runs made about 50
    # bytes per stored value (here over 15 MB).
    assert peak < 4 * got.size * 8 + 64 * 4000 + 24 * 65536 + (1 << 20), (peak, nnz)
    columns = f"@ cell @ gene :: UMIs >- {reduction}"  # all rows one group
    d.get_np_query(columns)
    d.empty_cache()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        d.get_np_query(columns)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The read of the matrix makes its 0-based int32 indices; runs by column made up to 24
    # bytes per stored value.
    assert peak < 4 * nnz + 64 * 4000 + 24 * 65536 + (1 << 20), (peak, nnz)


def test_close_drops_the_query_cache(tmp_path: Path) -> None:
    d, _, _ = _data_set(tmp_path / "q.daf.zarr.zip", "float32")
    d.get_np_query("@ cell @ gene :: UMIs -/ type =@ >- Sum || 0")
    d.get_np_query("@ cell [ type = T1 ] : age")
    assert d._query_cache.results and d._query_cache.tables
    d.close()
    assert not d._query_cache.results and not d._query_cache.tables
    chain = dafzarr.chain_reader([dafzarr.open_daf(tmp_path / "q.daf.zarr.zip")], name="c")
    chain.get_np_query("@ cell : age")
    assert chain._query_cache.results
    chain.close()
    assert not chain._query_cache.results


def test_grouping_by_a_stored_string_vector_hashes_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    d, dense, kind = _data_set(tmp_path / "h.daf.zarr.zip", "float32")
    hashed: list[int] = []
    factorize = pd.factorize

    def counted(values: Any, **kwargs: Any) -> Any:
        hashed.append(len(values))
        return factorize(values, **kwargs)

    monkeypatch.setattr(pd, "factorize", counted)
    first = d.get_np_query("@ cell @ gene :: UMIs -/ type >- Max")
    assert hashed == [300]
    second = d.get_np_query("@ cell @ gene :: UMIs -/ type >- Min")  # another query, no result
    sums = d.get_np_query("@ cell : age / type >> Sum")
    assert hashed == [300]  # the codes of the type vector were kept
    names = sorted(set(kind))
    for k, name in enumerate(names):
        assert np.array_equal(first[k], dense[kind == name].max(axis=0))
        assert np.array_equal(second[k], dense[kind == name].min(axis=0))
        assert sums[k] == np.arange(300, dtype=np.float32)[kind == name].sum()
    d.set_vector("cell", "type", kind[::-1].copy(), overwrite=True)  # a new data version
    d.get_np_query("@ cell @ gene :: UMIs -/ type >- Max")
    assert hashed == [300, 300]
