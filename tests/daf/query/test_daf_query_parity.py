"""Parity of Daf queries with DataAxesFormats.jl: the cases of its query tests (names,
scalars, vectors: lookups, masks, comparisons, chains with ``??`` and ``||``, column and square
slices, reductions, group-by), restated on data of our own. Each case gives the query, the data
and the answer (entry names and values, the axis names of the result, whether it is an axis
query and whether it reads a matrix through relayout) or the error lines.

Cases already in ``test_daf_query_parse.py`` / ``test_daf_query_vectors.py`` are not repeated:
the syntax errors (``expected: operator``/``value``, unknown operations and parameters), the
canonical text of ``''``, the names queries and ``? ?``. Julia-only parts are left out: the
``ArgumentError(...)``/``PCRE`` lines quoted from Julia exceptions inside some messages and the
``TaskFailedException`` wrapping of errors raised in parallel loops. Matrix cases are in
``test_daf_query_parity_matrices.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dafzarr
from dafzarr.daf import query as Q
from dafzarr.errors import DafQueryError, DafQuerySyntaxError

NAME = "memory!"


def result(
    daf: Any, query: Any, *, axis: str | None = None, relayout: bool = False, cache: bool = True
) -> Any:
    """The answer of ``query`` in a comparable form, checking on the way what the anchor's
    tests check for every query: axis query or not, ``has_query``, relayout, dimensions."""
    assert Q.is_axis_query(query) == (axis is not None), query
    if axis is not None:
        assert Q.query_axis_name(query) == axis
    assert daf.has_query(query), query
    assert Q.query_requires_relayout(daf, query) == relayout, query
    value = daf.get_pd_query(query, cache=cache)
    dims = dafzarr.query_result_dimensions(query)
    if isinstance(value, set):
        assert dims == -1
        return sorted(value)
    if isinstance(value, pd.Series):
        assert dims == 1
        return value.index.name, list(zip(value.index, value.tolist(), strict=True))
    if isinstance(value, pd.DataFrame):
        assert dims == 2
        return (
            (value.index.name, value.columns.name),
            [((r, c), value.loc[r, c]) for r in value.index for c in value.columns],
        )
    assert dims == 0
    return value


def at(query: str, part: str, prefix: str = "at location:") -> str:
    """The caret line under ``part`` of ``query`` (as the anchor aligns it with the query)."""
    column = len("in the query: " if prefix == "at location:" else "in: ") + query.index(part)
    return prefix + " " * (column - len(prefix)) + "▲" * len(part)


def fails(daf: Any, query: str, *lines: str, cls: type[Exception] = DafQueryError) -> str:
    """The error of ``query``: its message holds ``lines`` in order, then names the data."""
    with pytest.raises(cls) as info:
        daf.get_np_query(query)
    message = str(info.value)
    at = 0
    for line in lines:
        found = message.find(line, at)
        assert found >= 0, (line, message)
        at = found + len(line)
    if not isinstance(info.value, DafQuerySyntaxError):
        assert message.endswith(f"for the daf data: {NAME}"), message
    return message


@pytest.fixture
def daf() -> Any:
    return dafzarr.memory_daf(NAME)


# --- Query objects and the cache ------------------------------------------------------------


def test_query_objects_group_in_any_order() -> None:
    assert str(Q.LookupScalar("version")) == ". version"
    assert str(Q.QuerySequence([Q.Axis("obs"), Q.LookupVector("depth")])) == "@ obs : depth"
    grouped = Q.Axis("obs") | (Q.Axis("var") | Q.LookupMatrix("X"))
    assert str(grouped) == "@ obs @ var :: X"
    assert str((Q.Axis("obs") | Q.Axis("var")) | (Q.LookupMatrix("X") | Q.Max())) == (
        "@ obs @ var :: X >> Max"
    )


def _cached(daf: Any) -> str:
    daf.add_axis("obs", ["o1", "o2", "o3"])
    daf.set_vector("obs", "is_bad", np.array([False, True, True]))
    daf.set_vector("obs", "depth", np.array([4, 8, 15], dtype=np.int64))
    query = "@ obs [ is_bad ] : depth"
    assert result(daf, query) == ("obs", [("o2", 8), ("o3", 15)])
    return query


def test_cached_results_are_shared(daf: Any) -> None:
    query = _cached(daf)
    assert daf.get_np_query(query) is daf.get_np_query(query)
    # An uncached read (``daf[query]``) uses a result already cached.
    assert daf.get_np_query(query, cache=False) is daf.get_np_query(query)
    assert daf[query].tolist() == [8, 15]


def test_uncached_results_are_not_shared(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "depth", np.array([3, 9], dtype=np.int64))
    query = "@ obs [ depth > 4 ] : depth"
    assert result(daf, query, cache=False) == ("obs", [("o2", 9)])
    first = daf.get_np_query(query, cache=False)
    second = daf.get_np_query(query, cache=False)
    assert first is not second and list(first) == list(second)


@pytest.mark.parametrize(
    ("clear", "keep", "same"),
    [(None, None, False), ("QueryData", None, False), (None, "QueryData", True)],
)
def test_emptied_cache(daf: Any, clear: str | None, keep: str | None, same: bool) -> None:
    query = _cached(daf)
    before = daf.get_np_query(query)
    daf.empty_cache(clear=clear, keep=keep)
    after = daf.get_np_query(query)
    assert (after is before) == same and list(after) == list(before)


# --- Scalars --------------------------------------------------------------------------------


def test_scalar_lookup(daf: Any) -> None:
    daf.set_scalar("release", "2.7.1")
    assert result(daf, ". release") == "2.7.1"
    assert result(daf, dafzarr.parse_query("release", Q.LookupScalar)) == "2.7.1"


@pytest.mark.parametrize(
    ("default", "value", "dtype"),
    [
        ("|| 2.0", 2.0, float),
        ("|| 2.0 String", "2.0", str),
        ("|| bar", "bar", str),
        ("|| 2.0 Float32", 2.0, float),  # scalars come back as Python values
        ("|| pi", math.pi, float),
        ("|| e", math.e, float),
        ("|| true", True, (bool, np.bool_)),
        ("|| false", False, (bool, np.bool_)),
    ],
)
def test_missing_scalar_default(daf: Any, default: str, value: Any, dtype: Any) -> None:
    got = result(daf, f". release {default}")
    assert got == value and isinstance(got, dtype), (got, type(got))


def test_missing_scalar_default_of_a_bad_type(daf: Any) -> None:
    fails(
        daf,
        ". release || 2.0 Int32",
        'invalid value: "2.0"',
        "value must be: a valid Int32",
        "for the parameter: value",
        "for the operation: ||",
        "in: . release || 2.0 Int32",
        at(". release || 2.0 Int32", "2.0", "at:"),
        cls=DafQuerySyntaxError,
    )


def test_scalar_of_a_vector_entry(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "kind", np.array(["K", "L"], dtype=object))
    assert result(daf, ": kind @ obs = o2") == "L"
    assert result(daf, ": depth || 4 @ obs = o1") == 4


def test_scalar_reductions_of_vectors(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3"])
    daf.set_vector("obs", "depth", np.array([5, 6, 7], dtype=np.int64))
    daf.set_vector("obs", "donor", np.array(["d1", "d2", "d1"], dtype=object))
    assert result(daf, "@ obs : depth >> Sum") == 18
    assert result(daf, "@ obs [ depth > 9 ] : depth >> Sum || 0") == 0
    fails(
        daf,
        "@ obs [ depth > 9 ] : depth >> Sum",
        "no IfMissing value specified for reducing an empty vector",
        "in the query: @ obs [ depth > 9 ] : depth >> Sum",
        at("@ obs [ depth > 9 ] : depth >> Sum", ">> Sum"),
    )
    fails(
        daf,
        "@ obs : donor >> Sum",
        "unsupported input type: String",
        "for the reduction operation: Sum",
        "in the query: @ obs : donor >> Sum",
        at("@ obs : donor >> Sum", ">> Sum"),
    )


@pytest.mark.parametrize("stored", ["obs,var", "var,obs"])
def test_scalar_of_a_matrix_entry(daf: Any, stored: str) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.add_axis("var", ["v1", "v2"])
    values = np.array([[5, 6], [7, 8]], dtype=np.int64)
    if stored == "obs,var":
        daf.set_matrix("obs", "var", "X", values, relayout=False)
    else:
        daf.set_matrix("var", "obs", "X", values.T, relayout=False)
    assert result(daf, ":: X @ obs = o2 @ var = v1") == 7
    assert result(daf, ":: X @ var = v1 @ obs = o2") == 7
    assert result(daf, ":: Y || 0 @ obs = o2 @ var = v1") == 0


def test_scalar_reductions_of_matrices(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.add_axis("var", ["v1", "v2"])
    daf.set_matrix("obs", "var", "X", np.array([[5, 0], [2, 1]], dtype=np.int64))
    daf.set_vector("obs", "depth", np.array([3, 4], dtype=np.int64))
    daf.set_matrix("obs", "var", "label", np.array([["a", "b"], ["c", "d"]], dtype=object))
    assert result(daf, "@ obs @ var :: X >> Sum") == 8
    assert result(daf, "@ obs [ depth > 9 ] @ var :: X >> Sum || 0") == 0
    fails(
        daf,
        "@ obs [ depth > 9 ] @ var :: X >> Sum",
        "no IfMissing value specified for reducing an empty matrix",
        "in the query: @ obs [ depth > 9 ] @ var :: X >> Sum",
        at("@ obs [ depth > 9 ] @ var :: X >> Sum", ">> Sum"),
    )
    fails(
        daf,
        "@ obs @var :: label >> Sum",
        "unsupported input type: String",
        "for the reduction operation: Sum",
        "in the query: @ obs @ var :: label >> Sum",
        at("@ obs @ var :: label >> Sum", ">> Sum"),
    )


def test_scalar_element_wise(daf: Any) -> None:
    daf.set_scalar("offset", -1.25)
    daf.set_scalar("release", "2.7.1")
    assert result(daf, ". offset % Abs") == 1.25
    fails(
        daf,
        ". release % Abs",
        "unsupported input type: String",
        "for the eltwise operation: Abs",
        "in the query: . release % Abs",
        at(". release % Abs", "% Abs"),
    )


# --- Axes and masks -------------------------------------------------------------------------


def test_axis(daf: Any) -> None:
    daf.add_axis("var", ["v1", "v2"])
    assert result(daf, "@ var", axis="var") == ("var", [("v1", "v1"), ("v2", "v2")])


def test_masks_of_a_vector(daf: Any) -> None:
    daf.add_axis("var", ["v1", "v2", "v3"])
    daf.set_vector("var", "is_noisy", np.array([False, True, False]))
    assert result(daf, "@ var [ is_noisy ]", axis="var") == ("var", [("v2", "v2")])
    assert result(daf, "@ var [ ! is_noisy ]", axis="var") == ("var", [("v1", "v1"), ("v3", "v3")])


def test_masks_of_a_matrix_column(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3"])
    daf.add_axis("var", ["v1", "v2"])
    # Stored var x obs: the column of one var is a row of the stored layout, no relayout.
    daf.set_matrix(
        "var", "obs", "X", np.array([[0, 2, 1], [3, 0, 0]], dtype=np.int64), relayout=False
    )
    assert result(daf, "@ obs [ X @ var = v1 > 0 ]", axis="obs") == (
        "obs",
        [("o2", "o2"), ("o3", "o3")],
    )
    assert result(daf, "@ obs [ ! X @ var = v1 > 0 ]", axis="obs") == ("obs", [("o1", "o1")])


@pytest.mark.parametrize(
    ("mask", "kept"),
    [
        ("[ near @| o1 ]", ["o2", "o3"]),
        ("[ ! near @| o1 ]", ["o1"]),
        ("[ near @| o3 ]", ["o1", "o2"]),
        ("[ ! near @| o3 ]", ["o3"]),
        ("[ near @- o1 ]", ["o3"]),
        ("[ ! near @- o1 ]", ["o1", "o2"]),
        ("[ near @- o3 ]", ["o1"]),
        ("[ ! near @- o3 ]", ["o2", "o3"]),
    ],
)
def test_masks_of_a_square_matrix(daf: Any, mask: str, kept: list[str]) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3"])
    # near[i, j]: entry i is near entry j (not symmetric).
    daf.set_matrix("obs", "obs", "near", np.array([[0, 0, 1], [1, 0, 1], [1, 0, 0]], dtype=np.int8))
    assert result(daf, f"@ obs {mask}", axis="obs") == ("obs", [(k, k) for k in kept])


SIZES = ["SA", "SB", "BA", "BB"]  # small/big x first/second


@pytest.mark.parametrize(
    ("mask", "kept"),
    [
        ("[ is_small & is_first ]", ["SA"]),
        ("[ ! is_small & is_first ]", ["BA"]),
        ("[ is_small & ! is_first ]", ["SB"]),
        ("[ ! is_small & ! is_first ]", ["BB"]),
        ("[ is_small | is_first ]", ["SA", "SB", "BA"]),
        ("[ ! is_small | is_first ]", ["SA", "BA", "BB"]),
        ("[ is_small | ! is_first ]", ["SA", "SB", "BB"]),
        ("[ ! is_small | ! is_first ]", ["SB", "BA", "BB"]),
        ("[ is_small ^ is_first ]", ["SB", "BA"]),
        ("[ ! is_small ^ is_first ]", ["SA", "BB"]),
        ("[ is_small ^ ! is_first ]", ["SA", "BB"]),
        ("[ ! is_small ^ ! is_first ]", ["SB", "BA"]),
        ("[ is_small & X @ var = v2 ]", ["SA"]),
        ("[ is_small & after @| SB ]", ["SA"]),
        ("[ ! is_small & after @- SB ]", ["BA", "BB"]),
    ],
)
def test_mask_combinations(daf: Any, mask: str, kept: list[str]) -> None:
    daf.add_axis("obs", SIZES)
    daf.add_axis("var", ["v1", "v2"])
    daf.set_vector("obs", "is_small", np.array([True, True, False, False]))
    daf.set_vector("obs", "is_first", np.array([True, False, True, False]))
    daf.set_matrix(
        "var", "obs", "X", np.array([[2, 2, 0, 0], [5, 0, 5, 0]], dtype=np.int64), relayout=False
    )
    # after[i, j]: entry i comes before entry j.
    daf.set_matrix("obs", "obs", "after", np.triu(np.ones((4, 4), dtype=np.int64), 1))
    assert result(daf, f"@ obs {mask}", axis="obs") == ("obs", [(k, k) for k in kept])


# --- Lookups, chains, defaults --------------------------------------------------------------


def _kinds(daf: Any) -> None:
    daf.add_axis("kind", ["K", "L"])
    daf.set_vector("kind", "shade", np.array(["teal", "amber"], dtype=object))


def test_vector_lookup(daf: Any) -> None:
    _kinds(daf)
    assert result(daf, "@ kind : shade") == ("kind", [("K", "teal"), ("L", "amber")])
    assert result(daf, "@ kind : phase || 3") == ("kind", [("K", 3), ("L", 3)])


@pytest.mark.parametrize(
    ("query", "shades"),
    [
        ("@ obs : kind : shade", ["teal", "amber"]),
        ("@ obs : kind.manual : shade", ["amber", "teal"]),
        ("@ obs : kind =@ : shade", ["teal", "amber"]),
        ("@ obs : kind.manual =@ : shade", ["amber", "teal"]),
        ("@ obs : curated =@ kind : shade", ["amber", "teal"]),
    ],
)
def test_chained_lookups(daf: Any, query: str, shades: list[str]) -> None:
    _kinds(daf)
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "kind", np.array(["K", "L"], dtype=object))
    daf.set_vector("obs", "kind.manual", np.array(["L", "K"], dtype=object))
    daf.set_vector("obs", "curated", np.array(["L", "K"], dtype=object))
    assert result(daf, query) == ("obs", list(zip(["o1", "o2"], shades, strict=True)))


def _if_not(daf: Any) -> None:
    _kinds(daf)
    daf.add_axis("obs", ["o1", "o2", "o3"])
    daf.set_vector("obs", "group", np.array(["G1", "G2", ""], dtype=object))
    daf.add_axis("group", ["G1", "G2"])
    daf.set_vector("group", "kind", np.array(["K", ""], dtype=object))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("@ group : kind ?? : shade", ("group", [("G1", "teal")])),
        ("@ group : kind ?? gray : shade", ("group", [("G1", "teal"), ("G2", "gray")])),
        ("@ obs : group ?? : kind ?? : shade", ("obs", [("o1", "teal")])),
        ("@ obs : group ?? : kind ?? gray : shade", ("obs", [("o1", "teal"), ("o2", "gray")])),
        ("@ obs : group ?? gray : kind ?? : shade", ("obs", [("o1", "teal"), ("o3", "gray")])),
        (
            "@ obs : group ?? gray : kind ?? pink : shade",
            ("obs", [("o1", "teal"), ("o2", "pink"), ("o3", "gray")]),
        ),
        ("@ group : kind ?? 0 : phase || 2", ("group", [("G1", 2), ("G2", 0)])),
    ],
)
def test_if_not(daf: Any, query: str, expected: Any) -> None:
    _if_not(daf)
    assert result(daf, query) == expected


def test_if_not_final_value_of_the_wrong_type(daf: Any) -> None:
    _if_not(daf)
    daf.set_vector("kind", "phase", np.array([1, 2], dtype=np.int64))
    fails(
        daf,
        "@ group : kind ?? bar : phase",
        "error parsing final value: bar",
        "as type: Int64",
        "in the query: @ group : kind ?? bar : phase",
    )
    # (the anchor's caret spans `?? bar : phase`, dafzarr's the lookup only: cosmetic)


# --- Vectors of matrices --------------------------------------------------------------------


def _matrix(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.add_axis("var", ["v1", "v2", "v3"])
    daf.set_matrix("obs", "var", "X", np.array([[7, 0, 1], [2, 4, 6]], dtype=np.int64))


def test_matrix_columns(daf: Any) -> None:
    _matrix(daf)
    assert result(daf, "@ obs :: X @ var = v1") == ("obs", [("o1", 7), ("o2", 2)])
    assert result(daf, "@ var :: X @ obs = o2") == ("var", [("v1", 2), ("v2", 4), ("v3", 6)])


def test_matrix_reductions(daf: Any) -> None:
    _matrix(daf)
    assert result(daf, "@ obs @ var :: X >| Sum") == ("obs", [("o1", 8), ("o2", 12)])
    assert result(daf, "@ obs @ var :: X >- Sum") == ("var", [("v1", 9), ("v2", 4), ("v3", 7)])
    assert result(daf, "@ obs [ name = none ] @ var :: X >| Sum || 0") == ("obs", [])
    assert result(daf, "@ obs @ var [ name = none ] :: X >| Sum || 0") == (
        "obs",
        [("o1", 0), ("o2", 0)],
    )
    assert result(daf, "@ obs [ name = none ] @ var :: X >- Sum || 0") == (
        "var",
        [("v1", 0), ("v2", 0), ("v3", 0)],
    )
    assert result(daf, "@ obs @ var [ name = none ] :: X >- Sum || 0") == ("var", [])


@pytest.mark.parametrize("reduction", [">| Sum", ">- Sum"])
@pytest.mark.parametrize("axes", ["@ obs [ name = none ] @ var", "@ obs @ var [ name = none ]"])
def test_matrix_reductions_of_nothing(daf: Any, axes: str, reduction: str) -> None:
    _matrix(daf)
    query = f"{axes} :: X {reduction}"
    fails(
        daf,
        query,
        "no IfMissing value specified for reducing an empty matrix",
        f"in the query: {query}",
        at(query, reduction),
    )


@pytest.mark.parametrize("reduction", [">| Sum", ">- Sum"])
def test_matrix_reductions_of_strings(daf: Any, reduction: str) -> None:
    _matrix(daf)
    daf.set_matrix(
        "obs", "var", "label", np.array([["a", "b", "a"], ["b", "a", "b"]], dtype=object)
    )
    fails(
        daf,
        f"@ obs @ var :: label {reduction}",
        "unsupported input type: String",
        "for the reduction operation: Sum",
    )


def test_square_matrix_slices(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_matrix("obs", "obs", "offset", np.array([[0, 5], [-5, 0]], dtype=np.int64))
    assert result(daf, "@ obs :: offset @| o1") == ("obs", [("o1", 0), ("o2", -5)])
    assert result(daf, "@ obs :: offset @- o1") == ("obs", [("o1", 0), ("o2", 5)])


def test_vector_element_wise(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "shift", np.array([-1.5, 0.25]))
    daf.set_vector("obs", "kind", np.array(["K", "L"], dtype=object))
    assert result(daf, "@obs : shift % Abs") == ("obs", [("o1", 1.5), ("o2", 0.25)])
    fails(
        daf,
        "@ obs : kind % Abs",
        "unsupported input type: String",
        "for the eltwise operation: Abs",
        "in the query: @ obs : kind % Abs",
        at("@ obs : kind % Abs", "% Abs"),
    )


# --- Comparisons ----------------------------------------------------------------------------


def _compared(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "kind", np.array(["K", "L"], dtype=object))
    daf.set_vector("obs", "shift", np.array([0.25, 2.5]))


def test_comparison_errors(daf: Any) -> None:
    _compared(daf)
    fails(
        daf,
        "@ obs : shift ~ \\[KL\\]",
        "unsupported vector element type: Float64",
        "for the comparison operation: IsMatch",
        "in the query: @ obs : shift ~ \\[KL\\]",
        at("@ obs : shift ~ \\[KL\\]", "~ \\[KL\\]"),
    )
    fails(
        daf,
        "@ obs : kind ~ \\[KL",
        "invalid regular expression: [KL",
        "for the comparison operation: IsMatch",
        "in the query: @ obs : kind ~ \\[KL",
        at("@ obs : kind ~ \\[KL", "~ \\[KL"),
    )
    fails(
        daf,
        "@ obs : shift = K",
        "error parsing number comparison value: K",
        "for comparison with a vector of type: Float64",
        "in the query: @ obs : shift = K",
        at("@ obs : shift = K", "= K"),
    )


@pytest.mark.parametrize(
    ("mask", "kept"),
    [
        ("[ kind < L ] : kind", [("o1", "K")]),
        ("[ shift < 1.0 ] : shift", [("o1", 0.25)]),
        ("[ kind <= K ] : kind", [("o1", "K")]),
        ("[ shift <= 0.25 ] : shift", [("o1", 0.25)]),
        ("[ kind = K ] : kind", [("o1", "K")]),
        ("[ shift = 0.25 ] : shift", [("o1", 0.25)]),
        ("[ kind != L ] : kind", [("o1", "K")]),
        ("[ shift != 2.5 ] : shift", [("o1", 0.25)]),
        ("[ kind >= L ] : kind", [("o2", "L")]),
        ("[ shift >= 2.5 ] : shift", [("o2", 2.5)]),
        ("[ kind > K ] : kind", [("o2", "L")]),
        ("[ shift > 1.0 ] : shift", [("o2", 2.5)]),
        ("[ kind ~ \\^\\[A-K\\] ] : kind", [("o1", "K")]),
        ("[ kind !~ \\^\\[A-K\\] ] : kind", [("o2", "L")]),
    ],
)
def test_comparisons(daf: Any, mask: str, kept: list[tuple[str, Any]]) -> None:
    _compared(daf)
    assert result(daf, f"@ obs {mask}") == ("obs", kept)


# --- Group-by of vectors --------------------------------------------------------------------


def _grouped(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3", "o4"])
    daf.add_axis("var", ["v1", "v2"])
    daf.add_axis("kind", ["K", "L", "M"])
    daf.set_vector("obs", "kind", np.array(["L", "K", "L", "K"], dtype=object))
    daf.set_vector("obs", "shift", np.array([1.0, 2.0, 4.0, 8.0]))


def test_group_by(daf: Any) -> None:
    _grouped(daf)
    assert result(daf, "@ obs : shift / kind >> Sum") == (None, [("K", 10.0), ("L", 5.0)])
    assert result(daf, "@ obs : shift / kind =@ >> Sum || 0.0") == (
        "kind",
        [("K", 10.0), ("L", 5.0), ("M", 0.0)],
    )
    fails(
        daf,
        "@ obs : kind / shift >> Sum",
        "unsupported input type: String",
        "for the reduction operation: Sum",
        "in the query: @ obs : kind / shift >> Sum",
        at("@ obs : kind / shift >> Sum", ">> Sum"),
    )
    fails(
        daf,
        "@ obs : shift / kind =@ >> Sum",
        "no IfMissing value specified for the unused entry: M",
        "of the axis: kind",
        "in the query: @ obs : shift / kind =@ >> Sum",
        at("@ obs : shift / kind =@ >> Sum", ">> Sum"),
    )


def test_group_by_a_matrix_column(daf: Any) -> None:
    _grouped(daf)
    daf.set_matrix(
        "var",
        "obs",
        "level",
        np.array([["mid", "low", "high", "mid"], ["low", "low", "mid", "high"]], dtype=object),
    )
    assert result(daf, "@ obs : shift / level @ var = v1 >> Sum") == (
        None,
        [("high", 4.0), ("low", 2.0), ("mid", 9.0)],
    )


def test_group_by_a_square_matrix_slice(daf: Any) -> None:
    _grouped(daf)
    daf.set_matrix("obs", "obs", "after", np.triu(np.ones((4, 4), dtype=np.int64), 1))
    assert result(daf, "@ obs : shift / after @| o3 >> Sum") == (None, [("0", 12.0), ("1", 3.0)])
    assert result(daf, "@ obs : shift / after @- o2 >> Sum") == (None, [("0", 3.0), ("1", 12.0)])


# --- Frames ---------------------------------------------------------------------------------


def _framed(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2"])
    daf.set_vector("obs", "is_bad", np.array([False, True]))
    daf.set_vector("obs", "depth", np.array([6, 3], dtype=np.int64))


@pytest.mark.parametrize("axis", ["obs", Q.Axis("obs")])
def test_frames_of_an_axis(daf: Any, axis: Any) -> None:
    _framed(daf)
    frame = daf.get_pd_frame(axis)
    assert list(frame.columns) == ["name", "depth", "is_bad"]
    assert frame["name"].tolist() == ["o1", "o2"] and frame["depth"].tolist() == [6, 3]
    masked = daf.get_pd_frame("@ obs [ is_bad ]")
    assert masked["name"].tolist() == ["o2"] and masked["is_bad"].tolist() == [True]


def test_frame_of_a_vector_query(daf: Any) -> None:
    _framed(daf)
    with pytest.raises(DafQueryError) as info:
        daf.get_pd_frame("@ obs : depth")
    assert str(info.value) == f"invalid axis query: @ obs : depth\nof the daf data: {NAME}"


@pytest.mark.parametrize(
    "columns",
    [
        ["depth", "is_bad"],
        [("depth", ": depth"), ("bad", ": is_bad")],
        ["depth", ("bad", "is_bad")],
    ],
)
def test_frame_columns(daf: Any, columns: Any) -> None:
    _framed(daf)
    frame = daf.get_pd_frame("obs", columns)
    assert frame.shape == (2, 2)
    assert frame.iloc[:, 0].tolist() == [6, 3] and frame.iloc[:, 1].tolist() == [False, True]


def test_frame_column_of_a_scalar_query(daf: Any) -> None:
    _framed(daf)
    with pytest.raises(DafQueryError) as info:
        daf.get_pd_frame("obs", [("depth", ": depth >> Sum"), ("bad", ": is_bad")])
    assert str(info.value) == (
        "invalid column query: @ obs : depth >> Sum\n"
        f"for the axis query: @ obs\nof the daf data: {NAME}"
    )


def _donors(daf: Any) -> None:
    daf.add_axis("obs", ["o1", "o2", "o3", "o4"])
    daf.add_axis("donor", ["D1", "D2"])
    daf.set_vector("obs", "donor", np.array(["D1", "D1", "D2", "D2"], dtype=object))
    daf.set_vector("donor", "sex", np.array(["F", "M"], dtype=object))
    daf.set_vector("obs", "depth", np.array([2, 4, 10, 20], dtype=np.int64))


def test_frame_columns_of_group_queries(daf: Any) -> None:
    _donors(daf)
    frame = daf.get_pd_frame("donor", [("mean", "@ obs : depth / donor >> Mean")])
    assert frame["mean"].tolist() == [3.0, 15.0]
    frame = daf.get_pd_frame(
        "@ donor [ sex = M ]", [("mean", "@ obs [ donor : sex = M ] : depth / donor >> Mean")]
    )
    assert frame["mean"].tolist() == [15.0] and list(frame.index) == ["D2"]
    with pytest.raises(DafQueryError) as info:
        daf.get_pd_frame(
            "@ donor [ sex = M ]", [("mean", "@ obs [ donor ] : depth / donor >> Mean")]
        )
    assert str(info.value) == (
        "invalid column query: @ obs [ donor ] : depth / donor >> Mean\n"
        f"for the axis query: @ donor [ sex = M ]\nof the daf data: {NAME}"
    )
