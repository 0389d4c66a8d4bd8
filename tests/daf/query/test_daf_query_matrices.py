"""Daf queries of matrices: lookups with masked axes, relayout, square slices, element-wise
operations, reductions, group-by and counts. The same matrix stored dense, sparse, and in the
other layout gives the same answers, checked against numpy on the dense values."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import DafMissingError, DafQueryError

CELLS = ["c1", "c2", "c3", "c4", "c5"]
GENES = ["g1", "g2", "g3", "g4"]
KINDS = ["A", "B", "C"]
UMIS = np.array(
    [[0, 3, 0, 1], [2, 0, 0, 5], [0, 0, 0, 0], [7, 1, 4, 0], [0, 2, 0, 9]], dtype=np.int64
)
KIND = np.array(["A", "B", "A", "", "B"], dtype=object)
BATCH = np.array(["x", "y", "y", "x", "y"], dtype=object)
MARKER = np.array([True, False, True, True])
FAMILY = np.array(["f1", "f2", "f1", "f2"], dtype=object)
LABEL = np.array([["A", "", "B", "C"]] * 5, dtype=object)
WEIGHT = np.array([1.5, 2.5, 4.0], dtype=np.float32)
DISTANCE = np.array(
    [[0, 1, 0, 2, 0], [1, 0, 3, 0, 0], [0, 3, 0, 0, 4], [2, 0, 0, 0, 0], [0, 0, 4, 0, 0]],
    dtype=np.float64,
)


@pytest.fixture(params=["dense", "sparse", "dense-other-layout", "sparse-other-layout"])
def daf(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    d = dafzarr.open_daf(tmp_path / "m.daf.zarr.zip", "w", name="m")
    d.add_axis("cell", CELLS)
    d.add_axis("gene", GENES)
    d.add_axis("kind", KINDS)
    d.set_vector("cell", "kind", KIND)
    d.set_vector("cell", "batch", BATCH)
    d.set_vector("cell", "total", UMIS.sum(axis=1))
    d.set_vector("gene", "is_marker", MARKER)
    d.set_vector("gene", "family", FAMILY)
    d.set_vector("kind", "weight", WEIGHT)
    d.set_matrix("cell", "gene", "label", LABEL)
    sparse = request.param.startswith("sparse")
    if request.param.endswith("other-layout"):  # read through relayout
        d.set_matrix(
            "gene", "cell", "UMIs", sp.csc_matrix(UMIS.T) if sparse else UMIS.T, relayout=False
        )
    else:
        d.set_matrix(
            "cell", "gene", "UMIs", sp.csc_matrix(UMIS) if sparse else UMIS, relayout=False
        )
    assert dafzarr.daf.query.query_requires_relayout(d, "@ cell @ gene :: UMIs") == (
        request.param.endswith("other-layout")
    )
    d.set_matrix("cell", "cell", "distance", sp.csc_matrix(DISTANCE) if sparse else DISTANCE)
    d.sparse = sparse  # type: ignore[attr-defined]
    return d


def _dense(values: Any) -> np.ndarray:
    return values.toarray() if sp.issparse(values) else np.asarray(values)


def test_lookups_keep_the_storage(daf: Any) -> None:
    got = daf.get_np_query("@ cell @ gene :: UMIs")
    assert sp.issparse(got) == daf.sparse and np.array_equal(_dense(got), UMIS)
    if daf.sparse:
        assert got.format == "csc"
    assert np.array_equal(_dense(daf.get_np_query("@ gene @ cell :: UMIs")), UMIS.T)
    masked = daf.get_np_query("@ cell [ kind = B | batch = x ] @ gene [ is_marker ] :: UMIs")
    rows = (KIND == "B") | (BATCH == "x")
    assert sp.issparse(masked) == daf.sparse
    assert np.array_equal(_dense(masked), UMIS[rows][:, MARKER])
    frame = daf.get_pd_query("@ cell [ kind = A ] @ gene :: UMIs")
    assert list(frame.index) == ["c1", "c3"] and list(frame.columns) == GENES
    assert frame.index.name == "cell" and frame.columns.name == "gene"
    assert np.array_equal(frame.to_numpy(), UMIS[KIND == "A"])
    assert np.array_equal(_dense(daf.get_np_query("@ cell @ cell :: distance")), DISTANCE)
    assert list(daf.get_np_query("@ cell :: distance @| c3")) == list(DISTANCE[:, 2])
    assert list(daf.get_np_query("@ cell :: distance @- c2")) == list(DISTANCE[1, :])
    assert list(daf.get_np_query("@ gene :: UMIs @ cell = c4")) == list(UMIS[3])
    assert list(daf.get_np_query("@ cell [ UMIs @ gene = g4 > 1 ]")) == ["c2", "c5"]
    zeros = daf.get_np_query("@ cell @ gene :: nothing || 0")
    assert sp.issparse(zeros) and zeros.nnz == 0 and zeros.shape == (5, 4)
    ones = daf.get_np_query("@ cell @ gene :: nothing || 1.5")
    assert np.array_equal(ones, np.full((5, 4), 1.5))
    with pytest.raises(DafMissingError, match="missing matrix: nothing"):
        daf.get_np_query("@ cell @ gene :: nothing")


@pytest.mark.parametrize(
    ("operation", "function", "keeps_sparse"),
    [
        ("% Abs", np.abs, True),
        ("% Round", np.rint, True),
        ("% Log base 2 eps 1", lambda x: np.log2(x + 1.0), True),
        ("% Log", lambda x: np.log(x.astype(np.float64)), False),
        ("% Clamp min 1 max 4", lambda x: np.clip(x, 1, 4), False),
        ("% Clamp max 4", lambda x: np.clip(x, None, 4), True),
        ("% Convert type Float32", lambda x: x.astype(np.float32), True),
        ("% Fraction", lambda x: np.divide(x, np.maximum(x.sum(axis=0), 1)), True),
        (
            "% Significant high 5 low 2",
            lambda x: np.where((x >= 2) & (x.max(axis=0) >= 5), x, 0),
            True,
        ),
    ],
)
def test_element_wise(daf: Any, operation: str, function: Any, keeps_sparse: bool) -> None:
    with np.errstate(divide="ignore"):
        expected = function(UMIS)
        got = daf.get_np_query(f"@ cell @ gene :: UMIs {operation}")
    assert sp.issparse(got) == (daf.sparse and keeps_sparse)
    assert np.allclose(_dense(got), expected)


def test_comparisons(daf: Any) -> None:
    assert np.array_equal(daf.get_np_query("@ cell @ gene :: UMIs > 1"), UMIS > 1)
    assert np.array_equal(daf.get_np_query("@ cell @ gene :: UMIs = 0"), UMIS == 0)
    assert np.array_equal(daf.get_np_query("@ cell @ gene :: label = A"), LABEL == "A")
    with pytest.raises(DafQueryError, match="for comparison with a matrix of type: Int64"):
        daf.get_np_query("@ cell @ gene :: UMIs > x")


def _geomean(x: np.ndarray, axis: Any) -> Any:
    return np.exp(np.mean(np.log(x + 1.0), axis=axis)) - 1.0


def _normalized(spread: Any) -> Any:
    return lambda x, axis: spread(x, axis=axis) / (np.mean(x, axis=axis) + 1.0)


REDUCTIONS = [
    ("Sum", np.sum),
    ("Count", lambda x, axis: np.count_nonzero(np.ones_like(x), axis=axis)),
    ("Mean", np.mean),
    ("Median", np.median),
    ("Quantile p 0.25", lambda x, axis: np.quantile(x, 0.25, axis=axis)),
    ("Min", np.min),
    ("Max", np.max),
    ("GeoMean eps 1", _geomean),
    ("Var", np.var),
    ("Std", np.std),
    ("VarN eps 1", _normalized(np.var)),
    ("StdN eps 1", _normalized(np.std)),
]


@pytest.mark.parametrize(("reduction", "function"), REDUCTIONS)
def test_reductions(daf: Any, reduction: str, function: Any) -> None:
    rows = daf.get_pd_query(f"@ cell @ gene :: UMIs >| {reduction}")
    assert list(rows.index) == CELLS and rows.index.name == "cell"
    assert np.allclose(rows.to_numpy(), function(UMIS, axis=1))
    columns = daf.get_pd_query(f"@ cell @ gene :: UMIs >- {reduction}")
    assert list(columns.index) == GENES and columns.index.name == "gene"
    assert np.allclose(columns.to_numpy(), function(UMIS, axis=0))
    assert np.isclose(
        daf.get_np_query(f"@ cell @ gene :: UMIs >> {reduction}"), function(UMIS, axis=None)
    )
    masked = daf.get_np_query(f"@ cell [ kind ] @ gene :: UMIs >- {reduction}")
    assert np.allclose(masked, function(UMIS[KIND != ""], axis=0))


def test_reduction_types(daf: Any) -> None:
    assert daf.get_np_query("@ cell @ gene :: UMIs >| Sum").dtype == np.int64
    assert daf.get_np_query("@ cell @ gene :: UMIs >| Count").dtype == np.uint32
    assert daf.get_np_query("@ cell @ gene :: UMIs >| Mean").dtype == np.float64
    assert daf.get_np_query("@ cell @ gene :: UMIs >| Mean type Float32").dtype == np.float32
    assert daf.get_np_query("@ cell @ gene :: UMIs >- Max").dtype == np.int64
    assert daf.get_np_query("@ cell @ gene :: UMIs > 0 >- Sum").dtype == np.uint32
    assert list(daf.get_np_query("@ cell @ gene :: label >- Mode")) == ["A", "", "B", "C"]
    assert list(daf.get_np_query("@ cell @ gene :: label >| Count")) == [4] * 5


def test_empty_matrices(daf: Any) -> None:
    empty = "@ cell [ total < 0 ] @ gene :: UMIs"
    assert _dense(daf.get_np_query(empty)).shape == (0, 4)
    assert list(daf.get_np_query(f"{empty} >- Sum || 0")) == [0, 0, 0, 0]
    assert list(daf.get_np_query(f"{empty} >| Sum || 0")) == []
    assert daf.get_np_query(f"{empty} >> Max || -1") == -1
    for suffix in (">- Sum", ">| Sum", ">> Sum"):
        with pytest.raises(
            DafQueryError, match="no IfMissing value specified for reducing an empty matrix"
        ):
            daf.get_np_query(f"{empty} {suffix}")


def test_group_rows_and_columns(daf: Any) -> None:
    got = daf.get_pd_query("@ cell @ gene :: UMIs -/ kind >- Sum")
    assert list(got.index) == ["", "A", "B"] and got.index.name is None
    for k in ["", "A", "B"]:
        assert list(got.loc[k]) == list(UMIS[np.equal(KIND, k)].sum(axis=0))
    got = daf.get_pd_query("@ cell @ gene :: UMIs -/ kind =@ >- Max || -1")
    assert list(got.index) == KINDS and got.index.name == "kind"
    assert list(got.loc["A"]) == list(UMIS[KIND == "A"].max(axis=0))
    assert list(got.loc["C"]) == [-1] * 4
    got = daf.get_pd_query("@ cell @ gene :: UMIs |/ family >| Mean")
    assert list(got.columns) == ["f1", "f2"] and list(got.index) == CELLS
    assert np.allclose(got["f2"], UMIS[:, FAMILY == "f2"].mean(axis=1))
    got = daf.get_np_query("@ cell [ kind ] @ gene :: UMIs -/ kind ?? : weight >- Sum")
    assert np.array_equal(
        _dense(got), np.vstack([UMIS[KIND == "A"].sum(axis=0), UMIS[KIND == "B"].sum(axis=0)])
    )
    got = daf.get_np_query("@ cell @ gene :: UMIs -/ batch >- Median")
    assert np.allclose(got[1], np.median(UMIS[BATCH == "y"], axis=0))
    with pytest.raises(DafQueryError, match="invalid operation"):
        daf.get_np_query("@ cell @ gene :: UMIs -/ kind >| Sum")
    with pytest.raises(
        DafQueryError,
        match="no IfMissing value specified for the unused entry: C\nof the axis: kind",
    ):
        daf.get_np_query("@ cell @ gene :: UMIs -/ kind =@ >- Sum")
    with pytest.raises(
        DafQueryError,
        match=re.escape("error converting: Float64\nmissing value: 0.5\nto type: Int64"),
    ):
        daf.get_np_query("@ cell @ gene :: UMIs -/ kind =@ >- Sum || 0.5")


def test_counts(daf: Any) -> None:
    got = daf.get_pd_query("@ cell : kind * batch")
    assert list(got.index) == ["", "A", "B"] and list(got.columns) == ["x", "y"]
    assert got.to_numpy().tolist() == [[1, 0], [1, 1], [0, 2]]
    assert daf.get_np_query("@ cell : kind * batch").dtype == np.uint8
    got = daf.get_pd_query("@ cell : kind =@ * batch")
    assert list(got.index) == KINDS and got.to_numpy().tolist() == [[1, 1], [0, 2], [0, 0]]
    got = daf.get_np_query("@ cell : batch * kind ?? : weight")
    assert got.tolist() == [[1, 0], [1, 2]]  # weights 1.5 and 2.5


def test_matrix_values_as_entries(daf: Any) -> None:
    got = daf.get_np_query("@ cell @ gene :: label =@ kind ?? 0 : weight")
    expected = np.array([[1.5, 0.0, 2.5, 4.0]] * 5, dtype=np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    partner = np.array([["c2", "", "c5", "c1"]] * 5, dtype=object)
    daf.set_matrix("cell", "gene", "partner", partner)
    got = daf.get_np_query("@ cell @ gene :: partner =@ cell ?? 0 :: UMIs @ gene = g4")
    assert got.tolist() == [[5, 0, 9, 1]] * 5
    got = daf.get_np_query("@ cell @ gene :: partner =@ cell ?? -1 :: distance @| c3")
    assert got.tolist() == [[3.0, -1.0, 4.0, 0.0]] * 5
    with pytest.raises(DafQueryError, match="missing entry: 'A'\nof the axis: cell"):
        daf.get_np_query("@ cell @ gene :: label =@ cell ?? 0 :: UMIs @ gene = g4")
    with pytest.raises(DafQueryError, match="final value is required"):
        daf.get_np_query("@ cell @ gene :: label =@ kind ?? : weight")
    with pytest.raises(DafQueryError, match="missing entry: ''"):
        daf.get_np_query("@ cell @ gene :: label =@ kind : weight")


@pytest.mark.parametrize(
    "query",
    [
        "@ ?",
        "@ cell : ?",
        ". ?",
        "@ cell @ gene :: ?",
        "@ cell",
        "@ cell [ kind ]",
        "@ cell : kind ?? : weight",
        "@ cell @ gene :: UMIs",
        "@ cell @ gene :: UMIs >> Sum",
        "@ cell @ gene :: UMIs >| Max",
        "@ cell @ gene :: UMIs -/ kind >- Sum",
        "@ cell : total / batch >> Mean",
        "@ cell : kind * batch",
        ": total @ cell = c2",
        "@ cell @ gene :: label =@ kind ?? 0 : weight >- Max",
        "@ cell :: distance @| c3 >> Sum",
        "@ cell @ gene :: UMIs |/ family >| Mean % Log eps 1",
        "@ cell [ total > 5 ] : total",
    ],
)
def test_dimensions_agree_with_results(daf: Any, query: str) -> None:
    result = daf.get_np_query(query)
    dims = (
        -1
        if isinstance(result, set)
        else result.ndim
        if hasattr(result, "ndim") and not np.isscalar(result)
        else 0
    )
    assert dafzarr.query_result_dimensions(query) == dims
