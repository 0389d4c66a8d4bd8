"""Daf queries on small random data sets (empty axes, sparse and dense storage, strings with
empty values, missing properties), checked against plain numpy and pandas evaluations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dafzarr

TYPES = ["A", "B", "C"]


@st.composite
def data_sets(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 7))
    m = draw(st.integers(0, 4))
    ints = st.integers(-3, 3)
    return {
        "n": n,
        "m": m,
        "value": np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.int64),
        "flag": np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool),
        "kind": np.array(
            draw(st.lists(st.sampled_from(["", *TYPES]), min_size=n, max_size=n)), dtype=object
        ),
        "weight": np.array(draw(st.lists(ints, min_size=3, max_size=3)), dtype=np.int64),
        "matrix": np.array(
            draw(st.lists(st.lists(ints, min_size=m, max_size=m), min_size=n, max_size=n)),
            dtype=np.int64,
        ).reshape(n, m),
        "sparse": draw(st.booleans()),
        "has_weight": draw(st.booleans()),
        "threshold": draw(ints),
    }


def _daf(data: dict[str, Any]) -> Any:
    d = dafzarr.memory_daf("random")
    d.add_axis("cell", [f"c{i}" for i in range(data["n"])])
    d.add_axis("gene", [f"g{i}" for i in range(data["m"])])
    d.add_axis("kind", TYPES)
    value, matrix = data["value"], data["matrix"]
    if data["sparse"]:
        d.set_vector("cell", "value", sp.csr_array(value.reshape(1, -1)))
        d.set_matrix("gene", "cell", "UMIs", sp.csc_matrix(matrix.T), relayout=False)
    else:
        d.set_vector("cell", "value", value)
        d.set_matrix("gene", "cell", "UMIs", np.asfortranarray(matrix.T), relayout=False)
    d.set_vector("cell", "flag", data["flag"])
    d.set_vector("cell", "kind", data["kind"])
    if data["has_weight"]:
        d.set_vector("kind", "weight", data["weight"])
    return d


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(data_sets())
def test_masks_and_lookups(data: dict[str, Any]) -> None:
    d = _daf(data)
    value, flag, kind, t = data["value"], data["flag"], data["kind"], data["threshold"]
    names = np.array([f"c{i}" for i in range(data["n"])], dtype=object)
    keep = (value > t) | ~flag
    got = d.get_pd_query(f"@ cell [ value > {t} | ! flag ] : value")
    assert list(got.index) == list(names[keep]) and list(got) == list(value[keep])
    keep = (kind != "") ^ (value == t)
    assert list(d.get_np_query(f"@ cell [ kind ^ value = {t} ]")) == list(names[keep])
    weights = data["weight"] if data["has_weight"] else np.full(3, 7)
    weight = dict(zip(TYPES, weights, strict=True))
    got = d.get_pd_query("@ cell : kind ?? : weight || 7")
    assert list(got) == [weight[k] for k in kind if k]
    assert list(got.index) == list(names[kind != ""])
    assert list(d.get_np_query("@ cell : kind ?? 9 : weight || 7")) == [
        weight.get(k, 9) for k in kind
    ]
    assert d.has_query("@ cell : kind : weight") == data["has_weight"]
    heavy = [bool(k) and weight[k] > t for k in kind]
    assert list(d.get_np_query(f"@ cell [ kind ?? : weight || 7 > {t} ]")) == list(names[heavy])
    assert list(d.get_np_query("@ cell : missing || 3")) == [3] * data["n"]
    assert d.get_np_query("@ cell : value >> Sum || 0") == value.sum()


@_SETTINGS
@given(data_sets())
def test_group_by(data: dict[str, Any]) -> None:
    d = _daf(data)
    frame = pd.DataFrame({"value": data["value"], "kind": data["kind"]})
    sums = frame.groupby("kind")["value"].sum()  # sorted keys, "" first
    got = d.get_pd_query("@ cell : value / kind >> Sum")
    assert list(got.index) == list(sums.index) and list(got) == list(sums)
    assert got.index.name is None
    got = d.get_pd_query("@ cell : value / kind =@ >> Max || -9")
    maxima = frame.groupby("kind")["value"].max()
    assert list(got.index) == TYPES and got.index.name == "kind"
    assert list(got) == [maxima.get(k, -9) for k in TYPES]
    counts = d.get_np_query("@ cell / kind =@ >> Count || 0")
    assert list(counts) == [int((data["kind"] == k).sum()) for k in TYPES]
    pairs = d.get_pd_query("@ cell : kind =@ * flag")
    flag = data["flag"]
    assert list(pairs.index) == TYPES
    assert list(pairs.columns) == [("true" if f else "false") for f in np.unique(flag)]
    for k in TYPES:
        for f in np.unique(flag):
            expected = int(((data["kind"] == k) & (flag == f)).sum())
            assert pairs.loc[k, "true" if f else "false"] == expected


@_SETTINGS
@given(data_sets())
def test_matrix_reductions_match_dense(data: dict[str, Any]) -> None:
    d = _daf(data)
    matrix = data["matrix"]
    n, m = matrix.shape
    got = d.get_np_query("@ cell @ gene :: UMIs")
    assert sp.issparse(got) == data["sparse"]
    dense = got.toarray() if sp.issparse(got) else got
    assert np.array_equal(dense, matrix)
    for name, function in [
        ("Sum", np.sum),
        ("Max", np.max),
        ("Min", np.min),
        ("Mean", np.mean),
        ("Median", np.median),
        ("Var", np.var),
    ]:
        rows = d.get_np_query(f"@ cell @ gene :: UMIs >| {name} || 0")
        columns = d.get_np_query(f"@ cell @ gene :: UMIs >- {name} || 0")
        if n * m == 0:
            assert list(rows) == [0] * n and list(columns) == [0] * m
            continue
        assert np.allclose(rows, function(matrix, axis=1)), name
        assert np.allclose(columns, function(matrix, axis=0)), name
        assert np.isclose(d.get_np_query(f"@ cell @ gene :: UMIs >> {name}"), function(matrix)), (
            name
        )
    kind = data["kind"]
    grouped = d.get_pd_query("@ cell @ gene :: UMIs -/ kind =@ >- Sum || 0")
    assert list(grouped.index) == TYPES
    for k in TYPES:
        assert list(grouped.loc[k]) == list(matrix[kind == k].sum(axis=0))
    masked = d.get_np_query(f"@ cell [ value > {data['threshold']} ] @ gene :: UMIs % Abs")
    dense = masked.toarray() if sp.issparse(masked) else masked
    assert sp.issparse(masked) == data["sparse"]
    assert np.array_equal(dense, np.abs(matrix[data["value"] > data["threshold"]]))
