"""Parity of Daf queries with DataAxesFormats.jl: the matrix cases of its query tests (lookups,
string values used as entries of another axis, element-wise operations, comparisons, counts,
grouped rows and columns), restated on data of our own; the numeric matrices are stored dense
and sparse, with the same answers. See ``test_daf_query_parity.py`` for what is left out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr

from .test_daf_query_parity import NAME, at, fails, result


@pytest.fixture(params=["dense", "sparse"])
def daf(request: pytest.FixtureRequest) -> Any:
    d = dafzarr.memory_daf(NAME)
    d.sparse = request.param == "sparse"  # type: ignore[attr-defined]
    return d


def _numbers(daf: Any, rows: str, columns: str, name: str, values: Any) -> None:
    """A numeric matrix, stored in both layouts (as the anchor's ``set_matrix!`` does)."""
    values = np.asarray(values, dtype=np.int64)
    daf.set_matrix(rows, columns, name, sp.csc_matrix(values) if daf.sparse else values)


def _strings(values: list[list[str]]) -> Any:
    return np.array(values, dtype=object)


def _cells(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.add_axis("var", ["v1", "v2", "v3"])


def _pairs(frame: Any) -> list[tuple[tuple[str, str], Any]]:
    pairs: list[tuple[tuple[str, str], Any]] = frame[1]
    return pairs


def test_matrix_lookup(daf: Any) -> None:
    _cells(daf)
    _numbers(daf, "obs", "var", "X", [[0, 9, 1], [4, 0, 6]])
    got = result(daf, "@ obs @ var :: X")
    assert got[0] == ("obs", "var")
    assert _pairs(got) == [
        (("o1", "v1"), 0),
        (("o1", "v2"), 9),
        (("o1", "v3"), 1),
        (("o2", "v1"), 4),
        (("o2", "v2"), 0),
        (("o2", "v3"), 6),
    ]


TAGS = [["T1", "T2", "T3"], ["T3", "T2", "T1"]]


def _tags(daf: Any) -> None:
    _cells(daf)
    daf.add_axis("tag", ["T1", "T2", "T3"])
    daf.set_vector("tag", "color", np.array(["cyan", "lime", "plum"], dtype=object))
    daf.add_axis("kind", ["K1", "K2"])
    daf.set_matrix("kind", "tag", "hue", _strings([["c1", "c2", "c3"], ["d1", "d2", "d3"]]))
    daf.set_matrix(
        "tag", "tag", "pair", _strings([["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]])
    )
    daf.set_matrix("obs", "var", "tag", _strings(TAGS))
    daf.set_matrix("obs", "var", "label", _strings(TAGS))  # not the name of an axis
    daf.set_matrix("obs", "var", "partial", _strings([["", "T2", "T3"], ["", "T2", "T1"]]))


@pytest.mark.parametrize(
    ("query", "values"),
    [
        ("@ obs @ var :: tag : color", [["cyan", "lime", "plum"], ["plum", "lime", "cyan"]]),
        (
            "@ obs @ var :: label =@ tag : color",
            [["cyan", "lime", "plum"], ["plum", "lime", "cyan"]],
        ),
        (
            "@ obs @ var :: partial =@ tag ?? gray : color",
            [["gray", "lime", "plum"], ["gray", "lime", "cyan"]],
        ),
        ("@ obs @ var :: tag :: hue @ kind = K1", [["c1", "c2", "c3"], ["c3", "c2", "c1"]]),
        (
            "@ obs @ var :: label =@ tag :: hue @ kind = K2",
            [["d1", "d2", "d3"], ["d3", "d2", "d1"]],
        ),
        ("@ obs @ var :: tag :: pair @| T1", [["a", "d", "g"], ["g", "d", "a"]]),
        ("@ obs @ var :: tag :: pair @- T1", [["a", "b", "c"], ["c", "b", "a"]]),
    ],
)
def test_matrix_values_as_entries(daf: Any, query: str, values: list[list[str]]) -> None:
    _tags(daf)
    got = result(daf, query)
    assert got[0] == ("obs", "var")
    assert _pairs(got) == [
        ((r, c), values[i][j])
        for i, r in enumerate(["o1", "o2"])
        for j, c in enumerate(["v1", "v2", "v3"])
    ]


def test_matrix_element_wise(daf: Any) -> None:
    _cells(daf)
    _numbers(daf, "obs", "var", "shift", [[0, -2, 3], [-4, 5, 0]])
    daf.set_matrix("obs", "var", "level", _strings([["lo", "mid", "hi"], ["hi", "mid", "lo"]]))
    got = result(daf, "@ obs @ var :: shift % Abs")
    assert [v for _, v in _pairs(got)] == [0, 2, 3, 4, 5, 0]
    fails(
        daf,
        "@ obs @var :: level % Abs",
        "unsupported input type: String",
        "for the eltwise operation: Abs",
        "in the query: @ obs @ var :: level % Abs",
        at("@ obs @ var :: level % Abs", "% Abs"),
    )


def test_matrix_comparisons(daf: Any) -> None:
    _cells(daf)
    _numbers(daf, "obs", "var", "X", [[0, 9, 1], [4, 0, 6]])
    daf.set_matrix("obs", "var", "text", _strings([["0", "9", "1"], ["4", "0", "6"]]))
    got = result(daf, "@ obs @ var :: X > 0")
    assert [bool(v) for _, v in _pairs(got)] == [False, True, True, True, False, True]
    query = "@ obs @ var :: X ~ \\[KL\\]"
    fails(
        daf,
        query,
        "unsupported matrix element type: Int64",
        "for the comparison operation: IsMatch",
        f"in the query: {query}",
        at(query, "~ \\[KL\\]"),
    )
    query = "@ obs @ var :: text ~ \\[KL"
    fails(
        daf,
        query,
        "invalid regular expression: [KL",
        "for the comparison operation: IsMatch",
        f"in the query: {query}",
        at(query, "~ \\[KL"),
    )
    query = "@ obs @ var :: X = K"
    fails(
        daf,
        query,
        "error parsing number comparison value: K",
        "for comparison with a matrix of type: Int64",
        f"in the query: {query}",
        at(query, "= K"),
    )


def _counted(daf: Any) -> None:
    _cells(daf)
    daf.set_vector("var", "width", np.array([3, 5, 3], dtype=np.int64))
    daf.add_axis("type", ["P", "Q", "R"])
    daf.set_vector("var", "type", np.array(["P", "P", "Q"], dtype=object))
    daf.set_matrix("obs", "var", "level", _strings([["lo", "mid", "hi"], ["hi", "mid", "lo"]]))
    _numbers(daf, "var", "var", "link", [[0, 1, 1], [1, 1, 0], [1, 0, 1]])


@pytest.mark.parametrize(
    ("query", "columns", "counts"),
    [
        (
            "@ var : width * type =@",
            "type",
            {
                ("3", "P"): 1,
                ("3", "Q"): 1,
                ("3", "R"): 0,
                ("5", "P"): 1,
                ("5", "Q"): 0,
                ("5", "R"): 0,
            },
        ),
        (
            "@ var : width * level @ obs = o1",
            None,
            {
                ("3", "hi"): 1,
                ("3", "lo"): 1,
                ("3", "mid"): 0,
                ("5", "hi"): 0,
                ("5", "lo"): 0,
                ("5", "mid"): 1,
            },
        ),
        (
            "@ var : width * link @| v3",
            None,
            {("3", "0"): 0, ("3", "1"): 2, ("5", "0"): 1, ("5", "1"): 0},
        ),
        (
            "@ var : width * link @- v1",
            None,
            {("3", "0"): 1, ("3", "1"): 1, ("5", "0"): 0, ("5", "1"): 1},
        ),
    ],
)
def test_counts(
    daf: Any, query: str, columns: str | None, counts: dict[tuple[str, str], int]
) -> None:
    _counted(daf)
    got = result(daf, query)
    assert got[0] == (None, columns)
    assert dict(_pairs(got)) == counts


def _grouped(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3", "o4"])
    daf.add_axis("var", ["v1", "v2"])
    daf.add_axis("type", ["P", "Q", "R"])
    daf.set_vector("obs", "type", np.array(["Q", "P", "Q", "P"], dtype=object))
    _numbers(daf, "var", "obs", "X", [[1, 2, 3, 4], [10, 20, 30, 40]])
    daf.set_matrix("var", "obs", "kind", _strings([["a", "b", "a", "c"], ["b", "b", "c", "a"]]))
    _numbers(daf, "obs", "obs", "after", np.triu(np.ones((4, 4)), 1))


GROUPS = [
    ("type", None, {"P": (6, 60), "Q": (4, 40)}),
    ("kind @ var = v1", None, {"a": (4, 40), "b": (2, 20), "c": (4, 40)}),
    ("after @| o2", None, {"0": (9, 90), "1": (1, 10)}),
    ("after @- o2", None, {"0": (3, 30), "1": (7, 70)}),
    ("type =@", "type", {"P": (6, 60), "Q": (4, 40), "R": (0, 0)}),
]


@pytest.mark.parametrize(("group", "axis", "sums"), GROUPS)
def test_grouped_columns(
    daf: Any, group: str, axis: str | None, sums: dict[str, tuple[int, int]]
) -> None:
    _grouped(daf)
    default = " || 0" if axis else ""
    got = result(daf, f"@ var @ obs :: X |/ {group} >| Sum{default}")
    assert got[0] == ("var", axis)
    assert _pairs(got) == [((v, g), sums[g][i]) for i, v in enumerate(["v1", "v2"]) for g in sums]


@pytest.mark.parametrize(("group", "axis", "sums"), GROUPS)
def test_grouped_rows(
    daf: Any, group: str, axis: str | None, sums: dict[str, tuple[int, int]]
) -> None:
    _grouped(daf)
    default = " || 0" if axis else ""
    got = result(daf, f"@ obs @ var :: X -/ {group} >- Sum{default}")
    assert got[0] == (axis, "var")
    assert _pairs(got) == [((g, v), sums[g][i]) for g in sums for i, v in enumerate(["v1", "v2"])]


@pytest.mark.parametrize(
    ("axes", "group", "reduce"), [("@ var @ obs", "|/", ">|"), ("@ obs @ var", "-/", ">-")]
)
def test_grouped_errors(daf: Any, axes: str, group: str, reduce: str) -> None:
    _grouped(daf)
    query = f"{axes} :: kind {group} type {reduce} Sum"
    fails(
        daf,
        query,
        "unsupported input type: String",
        "for the reduction operation: Sum",
        f"in the query: {query}",
        at(query, f"{reduce} Sum"),
    )
    query = f"{axes} :: X {group} type =@ {reduce} Sum || 0.5"
    fails(
        daf,
        query,
        "error converting: Float64",
        "missing value: 0.5",
        "to type: Int64",
        f"in the query: {query}",
        at(query, f"{reduce} Sum || 0.5"),
    )
    query = f"{axes} :: X {group} type =@ {reduce} Sum"
    fails(
        daf,
        query,
        "no IfMissing value specified for the unused entry: R",
        "of the axis: type",
        f"in the query: {query}",
        at(query, f"{reduce} Sum"),
    )


@pytest.mark.parametrize(
    ("default", "dtype", "value", "sparse"),
    [
        ("0", np.int64, 0, True),
        ("0.0", np.float64, 0.0, True),
        ("0 Float32", np.float32, 0, True),
        ("0 UInt8", np.uint8, 0, True),
        ("false", np.bool_, False, True),
        ("1.5", np.float64, 1.5, False),
        ("0 String", object, "0", False),
        ("none", object, "none", False),
    ],
)
def test_missing_matrix_defaults(
    daf: Any, default: str, dtype: Any, value: Any, sparse: bool
) -> None:
    """A missing matrix is its default repeated: all-zero sparse for a zero of a number type
    (then element-wise operations that keep zero keep it sparse), dense otherwise."""
    _cells(daf)
    for query in (f"@ obs @ var :: Y || {default}", f"@ var [ name = v2 ] @ obs :: Y || {default}"):
        got = daf.get_np_query(query)
        assert sp.issparse(got) == sparse and got.dtype == dtype, (query, got.dtype)
        assert got.shape == ((2, 3) if query.startswith("@ obs") else (1, 2))
        dense = got.toarray() if sparse else got
        assert dense.tolist() == np.full(got.shape, value, dtype=dtype).tolist()
    if sparse and dtype is not np.bool_:
        for operation in ("% Abs", "% Log eps 1", "% Fraction", "% Round", "% Clamp max 1"):
            got = daf.get_np_query(f"@ obs @ var :: Y || {default} {operation}")
            assert sp.issparse(got) and got.nnz == 0, operation
