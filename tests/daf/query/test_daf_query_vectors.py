"""Daf queries of names, scalars and vectors (lookups, chains, defaults, masks), checked against
plain numpy evaluations of the same data, on the memory, directory and ZIP backends."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dafzarr
from dafzarr.errors import DafMissingError, DafQueryError

CELLS = np.array(["c1", "c2", "c3", "c4", "c5", "c6"], dtype=object)
AGE = np.array([31, 5, 18, 77, 5, 42], dtype=np.int64)
SCORE = np.array([0.5, -1.25, 2.0, 0.0, 3.5, -0.75], dtype=np.float32)
DOUBLET = np.array([False, True, False, False, True, False])
TYPE = np.array(["T", "B", "T", "", "NK", "B"], dtype=object)
METACELL = np.array(["M1", "M2", "", "M1", "M3", "M2"], dtype=object)
METACELLS = np.array(["M1", "M2", "M3"], dtype=object)
METACELL_TYPE = np.array(["T", "", "NK"], dtype=object)
TYPES = np.array(["B", "NK", "T"], dtype=object)
COLOR = np.array(["blue", "green", "red"], dtype=object)
GENES = np.array(["HLA-A", "CD3", "MS4A1", "NKG7"], dtype=object)
MARKER = np.array([True, False, True, True])


def _fill(d: Any) -> Any:
    d.set_scalar("organism", "human")
    d.set_scalar("threshold", 2.5)
    d.add_axis("cell", CELLS)
    d.add_axis("metacell", METACELLS)
    d.add_axis("type", TYPES)
    d.add_axis("gene", GENES)
    d.set_vector("cell", "age", AGE)
    d.set_vector("cell", "score", SCORE)
    d.set_vector("cell", "is_doublet", DOUBLET)
    d.set_vector("cell", "type", TYPE)
    d.set_vector("cell", "type.manual", TYPE[::-1].copy())
    d.set_vector("cell", "metacell", METACELL)
    d.set_vector("metacell", "type", METACELL_TYPE)
    d.set_vector("type", "color", COLOR)
    d.set_vector("type", "weight", np.array([1.5, 2.5, 3.5], dtype=np.float32))
    d.set_vector("gene", "is_marker", MARKER)
    d.set_matrix("cell", "gene", "UMIs", np.arange(24, dtype=np.int32).reshape(6, 4))
    d.set_matrix("cell", "cell", "distance", np.abs(np.subtract.outer(AGE, AGE)).astype(np.float64))
    return d


@pytest.fixture(params=["memory", "directory", "zip"])
def daf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield _fill(dafzarr.memory_daf("cells"))
        return
    suffix = ".daf.zarr" if request.param == "directory" else ".daf.zarr.zip"
    d = dafzarr.open_daf(tmp_path / f"cells{suffix}", "w", name="cells")
    _fill(d)
    d.close()
    reopened = dafzarr.open_daf(tmp_path / f"cells{suffix}", "r+", name="cells")
    yield reopened
    reopened.close()


def _lookup(keys: np.ndarray, entries: np.ndarray, values: np.ndarray) -> np.ndarray:
    index = {e: i for i, e in enumerate(entries)}
    return values[[index[k] for k in keys]]


def test_names(daf: Any) -> None:
    assert daf.get_np_query(". ?") == {"organism", "threshold"}
    assert daf.get_np_query("@ ?") == {"cell", "metacell", "type", "gene"}
    assert daf.get_np_query("@ cell : ?") == {
        "age",
        "score",
        "is_doublet",
        "type",
        "type.manual",
        "metacell",
    }
    assert daf.get_np_query("@ cell @ gene :: ?") == {"UMIs"}
    assert daf.get_np_query("@ gene @ cell :: ?") == {"UMIs"}
    assert daf.get_np_query("@ cell @ cell :: ?") == {"distance"}


def test_scalars(daf: Any) -> None:
    assert daf.get_np_query(". organism") == "human"
    assert daf[". threshold"] == 2.5
    assert daf.get_np_query(". threshold % Round") == 2  # half to even
    assert daf.get_np_query(". missing || 7") == 7
    assert daf.get_np_query(". missing || 7 Float32") == 7.0
    assert daf.get_np_query(". missing || pi") == np.pi
    with pytest.raises(DafMissingError, match="missing scalar: missing"):
        daf.get_np_query(". missing")
    assert daf.get_np_query(": age @ cell = c4") == 77
    assert daf.get_np_query(": nothing || 3 @ cell = c4") == 3
    assert daf.get_np_query(":: UMIs @ cell = c2 @ gene = CD3") == 5
    assert daf.get_np_query(":: UMIs @ gene = CD3 @ cell = c2") == 5  # relayout
    assert daf.get_np_query("@ cell : age >> Sum") == AGE.sum()
    assert daf.get_np_query("@ cell : age >> Max") == 77
    assert daf.get_np_query("@ cell : score >> Mean") == pytest.approx(SCORE.mean())
    assert daf.get_np_query("@ cell : type >> Mode") == "T"
    assert daf.get_np_query("@ cell >> Count") == 6
    assert daf.get_np_query("@ cell [ age < 0 ] : age >> Sum || 0") == 0


def test_vectors_are_stored_arrays(daf: Any) -> None:
    age = daf.get_np_query("@ cell : age")
    assert np.array_equal(age, AGE)
    series = daf.get_pd_query("@ cell : age")
    assert isinstance(series, pd.Series) and series.index.name == "cell"
    assert list(series.index) == list(CELLS)
    assert np.shares_memory(series.to_numpy(), age)
    assert list(daf.get_np_query("@ cell")) == list(CELLS)
    assert list(daf.get_np_query("@ cell : name")) == list(CELLS)
    assert list(daf.get_np_query("@ cell : index")) == [1, 2, 3, 4, 5, 6]  # 1-based
    assert list(daf.get_np_query("@ cell [ age > 20 ] : index")) == [1, 4, 6]


def test_large_vectors_and_matrices_are_zero_copy(daf: Any) -> None:
    """Arrays above the size a directory reads into memory are mapped: the query result is
    the reader's own view, on every backend."""
    daf.add_axis("big", [f"b{i}" for i in range(20_000)])
    daf.set_vector("big", "value", np.arange(20_000, dtype=np.float64))
    got = daf.get_np_query("@ big : value")
    assert not got.flags.owndata  # a view of the mapping (a directory maps each read anew)
    if not daf.path.endswith(".daf.zarr"):
        assert np.shares_memory(got, daf.get_np_vector("big", "value"))
    matrix = daf.get_np_query("@ big @ gene [ is_marker ] :: none || 0")
    assert matrix.shape == (20_000, 3) and matrix.nnz == 0
    daf.set_matrix("big", "gene", "dense", np.ones((20_000, 4), dtype=np.float32))
    got = daf.get_np_query("@ big @ gene :: dense")
    assert not got.flags.owndata and not got.base.flags.owndata
    if not daf.path.endswith(".daf.zarr"):
        assert np.shares_memory(got, daf.get_np_matrix("big", "gene", "dense"))


def test_defaults(daf: Any) -> None:
    five = daf.get_np_query("@ cell : missing || 5")
    assert five.dtype == np.int64 and list(five) == [5] * 6
    half = daf.get_np_query("@ cell : missing || 0.5 Float32")
    assert half.dtype == np.float32 and list(half) == [0.5] * 6
    assert list(daf.get_np_query("@ cell : missing || none")) == ["none"] * 6
    assert list(daf.get_np_query("@ cell : age || 5")) == list(AGE)  # only when missing
    assert list(daf.get_np_query("@ cell : missing || T =@ type : color")) == ["red"] * 6
    assert list(daf.get_np_query("@ cell [ missing || T = T ]")) == list(CELLS)
    with pytest.raises(
        DafMissingError,
        match=r"missing vector: missing\nfor the axis: cell\n"
        r".*\nin the query: @ cell : missing$",
    ):
        daf.get_np_query("@cell:missing")
    with pytest.raises(DafMissingError, match="missing axis: nope"):
        daf.get_np_query("@ nope : age")


def test_chained_lookups(daf: Any) -> None:
    nonempty = TYPE != ""
    expected = _lookup(TYPE[nonempty], TYPES, COLOR)
    got = daf.get_pd_query("@ cell : type ?? : color")
    assert list(got) == list(expected) and list(got.index) == list(CELLS[nonempty])
    keep = daf.get_np_query("@ cell : type ?? gray : color")
    assert list(keep) == [*expected[:3], "gray", *expected[3:]]
    # the axis of `type.manual` is `type`; `=@` names it explicitly
    manual = TYPE[::-1]
    got = daf.get_np_query("@ cell : type.manual ?? : color")
    assert list(got) == list(_lookup(manual[manual != ""], TYPES, COLOR))
    assert list(daf.get_np_query("@ cell : metacell ?? =@ metacell : type")) == list(
        _lookup(METACELL[METACELL != ""], METACELLS, METACELL_TYPE)
    )
    # three steps, with both kinds of `??`
    mc_type = np.array(
        [_lookup([m], METACELLS, METACELL_TYPE)[0] if m else "" for m in METACELL], dtype=object
    )
    color = np.array([_lookup([t], TYPES, COLOR)[0] if t else "" for t in mc_type], dtype=object)
    dropped = daf.get_pd_query("@ cell : metacell ?? : type ?? : color")
    both = (METACELL != "") & (mc_type != "")
    assert list(dropped.index) == list(CELLS[both]) and list(dropped) == list(color[both])
    kept = daf.get_np_query("@ cell : metacell ?? none : type ?? other : color")
    want = np.where(METACELL == "", "none", np.where(mc_type == "", "other", color))
    assert list(kept) == list(want)
    weights = daf.get_np_query("@ cell : type ?? 0 : weight")
    assert weights.dtype == np.float32
    assert list(weights) == [3.5, 1.5, 3.5, 0.0, 2.5, 1.5]


def test_matrix_columns_as_vectors(daf: Any) -> None:
    umis = np.arange(24).reshape(6, 4)
    assert list(daf.get_np_query("@ cell :: UMIs @ gene = CD3")) == list(umis[:, 1])
    assert list(daf.get_np_query("@ gene :: UMIs @ cell = c2")) == list(umis[1, :])
    distance = np.abs(np.subtract.outer(AGE, AGE))
    assert list(daf.get_np_query("@ cell :: distance @| c4")) == list(distance[:, 3])
    assert list(daf.get_np_query("@ cell :: distance @- c4")) == list(distance[3, :])
    got = daf.get_np_query("@ cell [ distance @| c2 < 14 ]")
    assert list(got) == list(CELLS[distance[:, 1] < 14])


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        ("[ is_doublet ]", DOUBLET),
        ("[ ! is_doublet ]", ~DOUBLET),
        ("[ is_doublet = true ]", DOUBLET),
        ("[ is_doublet = 0 ]", ~DOUBLET),
        ("[ type ]", TYPE != ""),
        ("[ type = T ]", TYPE == "T"),
        ("[ type != '' ]", TYPE != ""),
        ("[ type < NK ]", np.array([t < "NK" for t in TYPE])),
        ("[ age > 20 & ! is_doublet ]", (AGE > 20) & ~DOUBLET),
        ("[ age > 20 | is_doublet & type = B ]", ((AGE > 20) | DOUBLET) & (TYPE == "B")),
        ("[ ! type = T & age < 50 ]", (TYPE != "T") & (AGE < 50)),
        ("[ age >= 18 ^ is_doublet ]", (AGE >= 18) ^ DOUBLET),
        ("[ age >= 18 ^ ! is_doublet ]", (AGE >= 18) ^ ~DOUBLET),
        ("[ age <= 5 | ! score > 0 ]", (AGE <= 5) | ~(SCORE > 0)),
        ("[ score > -1 ]", SCORE > -1),
        ("[ score % Abs > 1 ]", np.abs(SCORE) > 1),
        ("[ type ~ N ]", np.array(["N" in t for t in TYPE])),
        ("[ type ~ \\^T\\$ ]", TYPE == "T"),
        ("[ type !~ B|T ]".replace("|", "\\|"), np.array([not re.search("B|T", t) for t in TYPE])),
        ("[ type ?? : color = red ]", TYPE == "T"),
        ("[ ! type ?? : color = red ]", TYPE != "T"),
        ("[ metacell ?? : type ?? : color = red ]", METACELL == "M1"),
        ("[ age < 0 ]", np.zeros(6, dtype=bool)),
        ("[ age > 10 ] [ is_doublet ]", np.zeros(6, dtype=bool)),
        ("[ age > 1 ] [ ! is_doublet ]", ~DOUBLET),
        ("[ name = c3 | index = 5 ]", np.isin(CELLS, ["c3", "c5"])),
        ("[ missing || 1 ]", np.ones(6, dtype=bool)),
    ],
)
def test_masks(daf: Any, mask: str, expected: np.ndarray) -> None:
    got = daf.get_pd_query(f"@ cell {mask} : age")
    assert list(got.index) == list(CELLS[expected])
    assert list(got) == list(AGE[expected])
    assert list(daf.get_np_query(f"@ cell {mask}")) == list(CELLS[expected])


def test_comparisons_as_vectors(daf: Any) -> None:
    assert list(daf.get_np_query("@ cell = c2")) == list(CELLS == "c2")
    assert list(daf.get_np_query("@ cell : age > 20")) == list(AGE > 20)
    assert list(daf.get_np_query("@ cell : type = ''")) == list(TYPE == "")


def test_element_wise_on_vectors(daf: Any) -> None:
    got = daf.get_np_query("@ cell : score % Abs")
    assert got.dtype == np.float32 and np.array_equal(got, np.abs(SCORE))
    got = daf.get_np_query("@ cell : score % Log base 2 eps 2")
    assert got.dtype == np.float32 and np.allclose(got, np.log2(SCORE + 2))
    assert list(daf.get_np_query("@ cell : score % Round")) == list(np.rint(SCORE))
    assert daf.get_np_query("@ cell : score % Round").dtype == np.int32
    assert list(daf.get_np_query("@ cell : age % Clamp min 10 max 40")) == list(
        np.clip(AGE, 10, 40)
    )
    assert np.allclose(daf.get_np_query("@ cell : age % Fraction"), AGE / AGE.sum())
    assert daf.get_np_query("@ cell : age % Convert type Int8").dtype == np.int8
    assert daf.get_np_query("@ cell : age % Abs").dtype == np.uint64
    got = daf.get_np_query("@ cell : age % Significant high 40 low 20")
    assert list(got) == list(np.where(AGE >= 20, AGE, 0))


def test_evaluation_errors_quote_the_canonical_query(daf: Any) -> None:
    with pytest.raises(DafQueryError) as info:
        daf.get_np_query(". threshold   [ is_doublet ]")
    assert str(info.value) == (
        "invalid operation(s)\nin the query: . threshold [ is_doublet ]\n"
        "at location:              ▲▲▲▲▲▲▲▲▲▲▲▲\n"
        f"for the daf data: {daf.name}"
    )
    with pytest.raises(
        DafQueryError, match=f"^invalid query: @ cell @ gene\nfor the daf data: {daf.name}$"
    ):
        daf.get_np_query("@ cell @ gene")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "@ cell [ age < 0 ] : age >> Sum",
            "no IfMissing value specified for reducing an empty vector",
        ),
        (
            "@ cell : type >> Sum",
            "unsupported input type: String\nfor the reduction operation: Sum",
        ),
        (". threshold % Fraction", "applying Fraction eltwise operation to a scalar"),
        ("@ cell : type : color", "missing entry: ''\nof the axis: type"),
        ("@ cell : type ?? x : weight", "error parsing final value: x\nas type: Float32"),
        ("@ cell : age : color", "invalid operation"),
        ("@ cell : type ?? x", "invalid operation"),
        ("@ cell :: UMIs @ gene = nope", "missing entry: 'nope'"),
        (
            "@ cell [ age > x ]",
            "error parsing number comparison value: x\nfor comparison with a vector of type: Int64",
        ),
        (
            "@ cell [ age ~ 1 ]",
            "unsupported vector element type: Int64\nfor the comparison operation: IsMatch",
        ),
        ("@ cell [ type ~ \\[b ]", "invalid regular expression: \\[b"),
        ("@ cell : score % Convert type Int8", "error converting"),
        ("@ cell : type % Abs", "unsupported input type: String\nfor the eltwise operation: Abs"),
        ("? ?", "invalid operation"),
        (": age @ cell = nope", "missing entry: 'nope'\nof the axis: cell"),
    ],
)
def test_evaluation_errors(daf: Any, query: str, message: str) -> None:
    with pytest.raises(DafQueryError, match=message):
        daf.get_np_query(query)


def test_cache(daf: Any) -> None:
    first = daf.get_np_query("@ cell [ ! is_doublet ] : age")
    assert daf.get_np_query("@ cell[!is_doublet]:age") is first  # keyed on the canonical text
    assert not first.flags.writeable
    uncached = daf.get_pd_query("@ cell : score % Abs", cache=False)
    assert daf.get_np_query("@ cell : score % Abs", cache=False) is not uncached.to_numpy()
    daf.set_vector("cell", "is_doublet", np.zeros(6, dtype=bool), overwrite=True)
    assert list(daf.get_np_query("@ cell [ ! is_doublet ] : age")) == list(AGE)
    again = daf.get_np_query("@ cell [ ! is_doublet ] : age")
    daf.empty_cache(keep="QueryData")
    daf.empty_cache(clear="MappedData")
    assert daf.get_np_query("@ cell [ ! is_doublet ] : age") is again
    daf.empty_cache()
    assert daf.get_np_query("@ cell [ ! is_doublet ] : age") is not again
    with pytest.raises(ValueError, match="unknown cache group"):
        daf.empty_cache(clear="Everything")
    cached = daf.get_np_query("@ cell : type ?? : color")
    daf.delete_vector("type", "color")
    with pytest.raises(DafMissingError, match="missing vector: color"):
        daf.get_np_query("@ cell : type ?? : color")
    assert len(cached) == 5


def test_has_query(daf: Any) -> None:
    assert daf.has_query("@ cell : age")
    assert daf.has_query("@ cell : type : color")  # values are not checked
    assert daf.has_query("@ cell : nope || 0")
    assert not daf.has_query("@ cell : nope")
    assert not daf.has_query("@ nope")
    assert not daf.has_query(": age @ cell = nope")
    assert not daf.has_query("@ cell [ nope ]")
    assert daf.has_query(". organism") and not daf.has_query(". nope")
    assert daf.has_query("@ cell [ age < 0 ] : age >> Sum")  # empty, but the data exist
    assert daf.has_query("@ cell : type ?? : color / type.manual =@ >> Count")
    with pytest.raises(DafQueryError, match="invalid query"):
        daf.has_query("@ cell @ gene")


def test_frames(daf: Any) -> None:
    frame = daf.get_pd_frame("cell")
    assert list(frame.columns) == [
        "name",
        "age",
        "is_doublet",
        "metacell",
        "score",
        "type",
        "type.manual",
    ]
    assert list(frame.index) == list(CELLS) and frame.index.name == "cell"
    frame = daf.get_pd_frame(
        "@ cell [ ! is_doublet ]",
        ["age", ("color", ": type ?? x : color"), ("max", "@__axis__ : age % Abs")],
    )
    assert list(frame.index) == list(CELLS[~DOUBLET])
    assert list(frame["age"]) == list(AGE[~DOUBLET])
    assert frame["color"].iloc[2] == "x"
    assert list(frame["max"]) == list(AGE[~DOUBLET])
    with pytest.raises(DafQueryError, match="invalid column query"):
        daf.get_pd_frame("cell", {"bad": ": type ?? : color"})
    with pytest.raises(DafQueryError, match="invalid axis query: @ cell : age"):
        daf.get_pd_frame("@ cell : age")


def test_read_only_views_see_writes(daf: Any) -> None:
    view = daf.read_only_view()
    assert list(view.get_np_query("@ cell : age")) == list(AGE)
    daf.set_vector("cell", "age", AGE + 1, overwrite=True)
    assert list(view.get_np_query("@ cell : age")) == list(AGE + 1)


@pytest.mark.parametrize("suffix", [".daf.zarr", ".daf.zarr.zip"])
def test_a_cached_result_is_dropped_when_another_handle_writes(tmp_path: Path, suffix: str) -> None:
    """Two handles on one data set (a ZIP's share one store; a directory's read the same
    files): a result one cached is not served after the other wrote."""
    path = tmp_path / f"cells{suffix}"
    _fill(dafzarr.open_daf(path, "w", name="cells")).close()
    reader = dafzarr.open_daf(path, "r+", name="cells")
    writer = dafzarr.open_daf(path, "r+", name="cells")
    try:
        assert list(reader.get_np_query("@ cell : age")) == list(AGE)
        writer.set_vector("cell", "age", AGE * 2, overwrite=True)
        assert list(reader.get_np_query("@ cell : age")) == list(AGE * 2)
        writer.delete_vector("cell", "score")
        assert not reader.has_query("@ cell : score")
    finally:
        reader.close()
        writer.close()
