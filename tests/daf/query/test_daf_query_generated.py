"""Random Daf queries on random small data sets, each answer checked against a plain numpy
evaluation written here, on the same data stored dense and sparse (same answers), with errors
raising ``DafQueryError`` (``DafMissingError`` for missing properties and axes) quoting the
canonical query.

The generator covers lookups (``name``, ``index``, defaults, chained lookups with ``??``),
masks (``& | ^ !``, comparisons, matrix columns, square slices), matrix lookups with masked axes
in either orientation, reductions, group-by (with and without ``=@``), counts and ``||``
defaults, on axes that may be empty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dafzarr
from dafzarr.errors import DafMissingError, DafQueryError

KINDS = ["A", "B", "C"]
Expected = tuple[Any, ...]
EMPTY = "''"  # the empty string in a query


@dataclass
class Data:
    n: int
    m: int
    value: Any
    score: Any
    flag: Any
    kind: Any
    weight: Any  # None: the vector is missing
    marker: Any
    family: Any
    umis: Any
    link: Any
    by_genes: bool  # UMIs stored gene x cell

    @property
    def cells(self) -> Any:
        return np.array([f"c{i}" for i in range(self.n)], dtype=object)

    @property
    def genes(self) -> Any:
        return np.array([f"g{i}" for i in range(self.m)], dtype=object)


@st.composite
def data_sets(draw: st.DrawFn) -> Data:
    n, m = draw(st.integers(0, 6)), draw(st.integers(0, 4))

    def cells(elements: Any, dtype: Any, size: int | None = None) -> Any:
        size = n if size is None else size
        return np.array(draw(st.lists(elements, min_size=size, max_size=size)), dtype=dtype)

    small = st.integers(-3, 3)
    sparse_ints = st.sampled_from([0, 0, 0, 1, 2, -1, 3])
    return Data(
        n=n,
        m=m,
        value=cells(small, np.int64),
        score=cells(st.sampled_from([-1.5, -0.5, 0.0, 0.5, 2.0]), np.float64),
        flag=cells(st.booleans(), bool),
        kind=cells(st.sampled_from(["", *KINDS]), object),
        weight=cells(small, np.int64, 3) if draw(st.booleans()) else None,
        marker=cells(st.booleans(), bool, m),
        family=cells(st.sampled_from(["f1", "f2"]), object, m),
        umis=cells(st.lists(sparse_ints, min_size=m, max_size=m), np.int64).reshape(n, m),
        link=cells(st.lists(st.sampled_from([0, 0, 1]), min_size=n, max_size=n), np.int8).reshape(
            n, n
        ),
        by_genes=draw(st.booleans()),
    )


def build(d: Data, sparse: bool) -> Any:
    daf = dafzarr.memory_daf("random!")
    daf.set_scalar("organism", "mouse")
    daf.add_axis("cell", d.cells)
    daf.add_axis("gene", d.genes)
    daf.add_axis("kind", KINDS)
    daf.set_vector("cell", "value", sp.csr_array(d.value.reshape(1, -1)) if sparse else d.value)
    for name in ("score", "flag", "kind"):
        daf.set_vector("cell", name, getattr(d, name))
    if d.weight is not None:
        daf.set_vector("kind", "weight", d.weight)
    daf.set_vector("gene", "is_marker", d.marker)
    daf.set_vector("gene", "family", d.family)

    def stored(values: Any) -> Any:
        return sp.csc_matrix(values) if sparse else np.asfortranarray(values)

    if d.by_genes:
        daf.set_matrix("gene", "cell", "UMIs", stored(d.umis.T), relayout=False)
    else:
        daf.set_matrix("cell", "gene", "UMIs", stored(d.umis), relayout=False)
    daf.set_matrix("cell", "cell", "link", stored(d.link))
    return daf


# --- Expected values ------------------------------------------------------------------------

COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    "=": np.equal,
    "!=": np.not_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _compare(values: Any, op: str, operand: Any) -> Any:
    return np.array([bool(COMPARE[op](v, operand)) for v in values], dtype=bool)


def _weights(d: Data) -> dict[str, int]:
    return dict(zip(KINDS, d.weight if d.weight is not None else [7, 7, 7], strict=True))


def cell_term(draw: st.DrawFn, d: Data) -> tuple[str, Any]:
    """One term of a mask of cells: its text and its truth per cell."""
    op = draw(st.sampled_from(list(COMPARE)))
    t = draw(st.integers(-2, 2))
    choices: list[tuple[str, Any]] = [
        ("flag", d.flag),
        (f"value {op} {t}", _compare(d.value, op, t)),
        (f"score {op} {t}", _compare(d.score, op, t)),
        ("kind", d.kind != ""),
        (f"index > {t + 2}", np.arange(1, d.n + 1) > t + 2),
        ("missing || 1", np.ones(d.n, dtype=bool)),
        ("missing || 0", np.zeros(d.n, dtype=bool)),
        (
            f"kind ?? : weight || 7 > {t}",
            np.array([k != "" and _weights(d)[k] > t for k in d.kind], dtype=bool),
        ),
    ]
    s = draw(st.sampled_from(["A", "B", ""]))
    choices.append((f"kind {op} {s or EMPTY}", _compare(d.kind, op, s)))
    if d.m:
        j = draw(st.integers(0, d.m - 1))
        choices.append((f"UMIs @ gene = g{j} > {t}", d.umis[:, j] > t))
    if d.n:
        j = draw(st.integers(0, d.n - 1))
        choices += [
            (f"link @| c{j}", d.link[:, j] != 0),
            (f"link @- c{j}", d.link[j, :] != 0),
            (f"name = c{j}", d.cells == f"c{j}"),
        ]
    picked: tuple[str, Any] = draw(st.sampled_from(choices))
    return picked


def cell_mask(draw: st.DrawFn, d: Data) -> tuple[str, Any]:
    """`` [ ... ]`` (or nothing) and the cells it keeps; terms combine left to right."""
    if not draw(st.booleans()):
        return "", np.ones(d.n, dtype=bool)
    parts: list[str] = []
    keep: Any = None
    for i in range(draw(st.integers(1, 3))):
        text, truth = cell_term(draw, d)
        negated = draw(st.booleans())
        truth = ~truth if negated else truth
        if i == 0:
            parts.append(f"[ {'! ' if negated else ''}{text}")
            keep = truth
        else:
            op = draw(st.sampled_from(["&", "|", "^"]))
            parts.append(f"{op} {'! ' if negated else ''}{text}")
            keep = {"&": np.logical_and, "|": np.logical_or, "^": np.logical_xor}[op](keep, truth)
    return " " + " ".join(parts) + " ]", keep


GENE_MASKS = [
    ("", lambda d: np.ones(d.m, dtype=bool)),
    (" [ is_marker ]", lambda d: d.marker),
    (" [ ! is_marker ]", lambda d: ~d.marker),
    (" [ family = f1 ]", lambda d: d.family == "f1"),
    (" [ is_marker | family = f2 ]", lambda d: d.marker | (d.family == "f2")),
]


def _groups(keys: Any, values: Any, reduce: Any, axis: list[str] | None, default: Any) -> Expected:
    """Values grouped by keys: sorted distinct keys, or the entries of an axis."""
    names = axis if axis is not None else sorted(set(keys.tolist()))
    out = [reduce(values[keys == g]) if np.any(keys == g) else default for g in names]
    return ("vector", list(names), out)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool | np.bool_) else str(value)


def _counts(first: Any, second: Any) -> Expected:
    rows, cols = sorted(set(first.tolist())), sorted(set(second.tolist()))
    values = np.array(
        [[int(np.sum((first == r) & (second == c))) for c in cols] for r in rows]
    ).reshape(len(rows), len(cols))
    return ("matrix", [_text(r) for r in rows], [_text(c) for c in cols], values)


def vector_query(draw: st.DrawFn, d: Data) -> tuple[str, Expected]:
    mask, keep = cell_mask(draw, d)
    at = np.flatnonzero(keep)
    names = d.cells[at]
    lookups: list[tuple[str, Any, Any, str]] = [  # text, positions, values, kind of values
        ("value", at, d.value[at], "int"),
        ("score", at, d.score[at], "float"),
        ("flag", at, d.flag[at], "bool"),
        ("kind", at, d.kind[at], "str"),
        ("index", at, at + 1, "int"),
        ("name", at, names, "str"),
        ("missing || 5", at, np.full(len(at), 5), "int"),
    ]
    w = _weights(d)
    kept = at[d.kind[at] != ""]
    lookups += [
        ("kind ?? : weight || 7", kept, np.array([w[k] for k in d.kind[kept]]), "int"),
        ("kind ?? 9 : weight || 7", at, np.array([w.get(k, 9) for k in d.kind[at]]), "int"),
    ]
    if d.m:
        j = draw(st.integers(0, d.m - 1))
        lookups.append((f":: UMIs @ gene = g{j}", at, d.umis[at, j], "int"))
    if d.n:
        j = draw(st.integers(0, d.n - 1))
        lookups += [
            (f":: link @| c{j}", at, d.link[at, j], "int"),
            (f":: link @- c{j}", at, d.link[j, at], "int"),
        ]
    lookup, at, values, kind = draw(st.sampled_from(lookups))
    text = f"@ cell{mask} {lookup if lookup.startswith('::') else ': ' + lookup}"
    if lookup == "kind ?? : weight || 7" or not draw(st.booleans()):
        return text, ("vector", list(d.cells[at]), list(values))
    t = draw(st.integers(-2, 2))
    tails: list[tuple[str, Expected]] = [
        ("* flag", _counts(values, d.flag[at]))
        if kind != "float"
        else (f"> {t}", ("vector", list(d.cells[at]), list(values > t))),
        ("/ kind =@ >> Count || 0", _groups(d.kind[at], values, len, KINDS, 0)),
        (
            "/ flag >> Count",
            (
                *_groups(d.flag[at], values, len, None, 0)[:1],
                [_text(f) for f in sorted(set(d.flag[at].tolist()))],
                _groups(d.flag[at], values, len, None, 0)[2],
            ),
        ),
    ]
    if kind in ("int", "float"):
        tails += [
            ("% Abs", ("vector", list(d.cells[at]), list(np.abs(values)))),
            (">> Sum || 0", ("scalar", values.sum() if len(values) else 0)),
            (">> Max || -9", ("scalar", values.max() if len(values) else -9)),
            ("/ kind >> Sum", _groups(d.kind[at], values, np.sum, None, 0)),
            ("/ kind =@ >> Max || -9", _groups(d.kind[at], values, np.max, KINDS, -9)),
        ]
        if not len(values):
            tails.append((">> Sum", ("error", DafQueryError, "empty vector")))
    elif kind == "str":
        tails += [
            (f"= {t + 2}", ("vector", list(d.cells[at]), list(values == str(t + 2)))),
            ("% Abs", ("error", DafQueryError, "unsupported input type: String")),
            ("~ \\^c", ("vector", list(d.cells[at]), [str(v).startswith("c") for v in values])),
        ]
    tail, expected = draw(st.sampled_from(tails))
    return f"{text} {tail}", expected


def _reduce_rows(values: Any, reduce: Any, default: Any) -> Any:
    return [reduce(row) if row.size else default for row in values]


def matrix_query(draw: st.DrawFn, d: Data) -> tuple[str, Expected]:
    rmask, keep = cell_mask(draw, d)
    gmask, gkeep = draw(st.sampled_from(GENE_MASKS))
    gkeep = gkeep(d)
    cells, genes = d.cells[keep], d.genes[gkeep]
    name = draw(st.sampled_from(["UMIs", "UMIs", "nothing || 0"]))
    values = (
        d.umis[keep][:, gkeep]
        if name == "UMIs"
        else np.zeros((len(cells), len(genes)), dtype=np.int64)
    )
    row_kinds, col_families = d.kind[keep], d.family[gkeep]
    row_group: tuple[str, Any, list[str] | None]
    col_group: tuple[str, Any, list[str] | None]
    if draw(st.booleans()):  # the other orientation
        text = f"@ gene{gmask} @ cell{rmask} :: {name}"
        rows, cols, values = genes, cells, values.T
        row_group = ("family", col_families, None)
        col_group = ("kind =@", row_kinds, KINDS)
    else:
        text = f"@ cell{rmask} @ gene{gmask} :: {name}"
        rows, cols = cells, genes
        row_group = ("kind =@", row_kinds, KINDS)
        col_group = ("family", col_families, None)
    rows, cols = list(rows), list(cols)
    tails: list[tuple[str, Expected]] = [
        ("", ("matrix", rows, cols, values)),
        ("% Abs", ("matrix", rows, cols, np.abs(values))),
        ("> 0", ("matrix", rows, cols, values > 0)),
        (">| Sum || 0", ("vector", rows, _reduce_rows(values, np.sum, 0))),
        (">- Max || 0", ("vector", cols, _reduce_rows(values.T, np.max, 0))),
        (">| Mean || 0", ("vector", rows, _reduce_rows(values, np.mean, 0))),
        (">> Sum || 0", ("scalar", values.sum() if values.size else 0)),
    ]
    for flag, (group, keys, axis) in ((True, row_group), (False, col_group)):
        names = axis if axis is not None else sorted(set(keys.tolist()))
        lines = values if flag else values.T
        grouped = np.array(
            [[lines[keys == g][:, c].sum() for c in range(lines.shape[1])] for g in names],
            dtype=np.int64,
        ).reshape(len(names), lines.shape[1])
        if flag:
            tails.append((f"-/ {group} >- Sum || 0", ("matrix", names, cols, grouped)))
        else:
            tails.append((f"|/ {group} >| Sum || 0", ("matrix", rows, names, grouped.T)))
    if not values.size:
        tails.append((">| Sum", ("error", DafQueryError, "empty matrix")))
    tail, expected = draw(st.sampled_from(tails))
    return f"{text} {tail}".strip(), expected


def other_query(draw: st.DrawFn, d: Data) -> tuple[str, Expected]:
    choices: list[tuple[str, Expected]] = [
        (". organism", ("scalar", "mouse")),
        (". nothing || 3", ("scalar", 3)),
        ("@ cell : ?", ("set", {"value", "score", "flag", "kind"})),
        ("@ kind : ?", ("set", {"weight"} if d.weight is not None else set())),
        (". nothing", ("error", DafMissingError, "missing scalar: nothing")),
        ("@ nothing", ("error", DafMissingError, "missing axis: nothing")),
        ("@ cell : nothing", ("error", DafMissingError, "missing vector: nothing")),
        ("@ cell @ gene :: nothing", ("error", DafMissingError, "missing matrix: nothing")),
        ("@ cell : value ~ x", ("error", DafQueryError, "unsupported vector element type")),
        ("@ cell : value > x", ("error", DafQueryError, "error parsing number comparison")),
        ("@ cell @ gene", ("error", DafQueryError, "invalid query")),
        ("@ cell : value / kind", ("error", DafQueryError, "invalid query")),
    ]
    if d.n:
        i = draw(st.integers(0, d.n - 1))
        choices += [
            (f": value @ cell = c{i}", ("scalar", d.value[i])),
            (f": nothing || 4 @ cell = c{i}", ("scalar", 4)),
        ]
        if d.m:
            j = draw(st.integers(0, d.m - 1))
            choices.append((f":: UMIs @ cell = c{i} @ gene = g{j}", ("scalar", d.umis[i, j])))
    if d.weight is not None:
        expected: Expected = ("vector", list(d.cells), [_weights(d).get(k) for k in d.kind])
        if "" in d.kind.tolist():
            expected = ("error", DafQueryError, "missing entry: ''")
        choices.append(("@ cell : kind : weight", expected))
    return draw(st.sampled_from(choices))


# --- Checks ---------------------------------------------------------------------------------


def _answer(daf: Any, query: str) -> Expected:
    got = daf.get_pd_query(query)
    if isinstance(got, set):
        return ("set", got)
    if isinstance(got, pd.Series):
        return ("vector", list(got.index), got.tolist())
    if isinstance(got, pd.DataFrame):
        return ("matrix", list(got.index), list(got.columns), got.to_numpy())
    return ("scalar", got)


def _same_values(got: Any, want: Any, query: str) -> None:
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, (query, got, want)
    if got_a.size and (got_a.dtype.kind == "f" or want_a.dtype.kind == "f"):
        assert np.allclose(got_a.astype(float), want_a.astype(float)), (query, got, want)
    else:
        assert got_a.tolist() == want_a.tolist(), (query, got, want)


def check(daf: Any, other: Any, query: str, expected: Expected, spaced: str) -> None:
    """``query`` (written as ``spaced``) answers ``expected`` on both data sets alike."""
    assert str(dafzarr.parse_query(spaced)) == query
    if expected[0] == "error":
        for d in (daf, other):
            with pytest.raises(expected[1]) as info:
                d.get_np_query(spaced)
            assert expected[2] in str(info.value), (query, str(info.value))
            lines = str(info.value).split("\n")
            assert f"in the query: {query}" in lines or f"invalid query: {query}" in lines, (
                query,
                str(info.value),
            )
        return
    got, same = _answer(daf, spaced), _answer(other, spaced)
    assert got[0] == expected[0] == same[0], (query, got, expected)
    if got[0] in ("set", "scalar"):
        assert got[1] == same[1], query
        if isinstance(expected[1], float):
            assert got[1] == pytest.approx(expected[1]), (query, got, expected)
        else:
            assert got[1] == expected[1], (query, got, expected)
        return
    for k in range(1, len(expected) - 1):  # names
        assert got[k] == list(expected[k]) == same[k], (query, got, expected)
    _same_values(got[-1], expected[-1], query)
    _same_values(same[-1], got[-1], query)
    assert daf.has_query(spaced) and other.has_query(spaced)


QUERIES = st.sampled_from([vector_query, vector_query, matrix_query, other_query])


def _run(d: Data, data: st.DataObject) -> None:
    dense, sparse = build(d, False), build(d, True)
    for _ in range(6):
        make = data.draw(QUERIES)
        query, expected = make(data.draw, d)
        spaced = query.replace(" ", data.draw(st.sampled_from([" ", "  ", "\t", " \n "])))
        check(dense, sparse, query, expected, spaced)
        if expected[0] == "matrix" and query.endswith((":: UMIs", ":: UMIs % Abs")):
            assert sp.issparse(sparse.get_np_query(query))  # the stored matrix stays sparse
            assert not sp.issparse(dense.get_np_query(query))
        if expected[0] == "matrix" and query.endswith((":: nothing || 0", ":: nothing || 0 % Abs")):
            assert sp.issparse(sparse.get_np_query(query))  # a default of zero is sparse
            assert sp.issparse(dense.get_np_query(query))


_FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(data_sets(), st.data())
def test_generated_queries(d: Data, data: st.DataObject) -> None:
    _run(d, data)


@pytest.mark.slow
@settings(_FAST, max_examples=1000)
@given(data_sets(), st.data())
def test_generated_queries_at_length(d: Data, data: st.DataObject) -> None:
    _run(d, data)
