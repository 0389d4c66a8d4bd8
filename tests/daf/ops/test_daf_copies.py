"""Copies between Daf data sets (``dafzarr.daf.ops``): the cases of DataAxesFormats.jl's
``test/copies.jl`` restated, on memory, directory and ZIP destinations, plus dafzarr's
decisions (alignment by name, exact conversions, relayout, errors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.daf.ops import copy_axis, copy_matrix, copy_scalar, copy_tensor, copy_vector
from dafzarr.errors import (
    DafExistsError,
    DafMismatchError,
    DafMissingError,
    InvalidArgumentError,
    UnsafeCastError,
)

KINDS = ["memory", "directory", "zip"]


def open_kind(kind: str, tmp_path: Path, name: str) -> dafzarr.ZarrDaf:
    if kind == "memory":
        return dafzarr.memory_daf(name)
    suffix = ".daf.zarr" if kind == "directory" else ".daf.zarr.zip"
    return dafzarr.open_daf(tmp_path / f"{name.strip('!')}{suffix}", "w+", name=name)


@pytest.fixture(params=KINDS)
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dafzarr.ZarrDaf]:
    d = open_kind(request.param, tmp_path, "destination!")
    yield d
    d.close()


@pytest.fixture
def source() -> dafzarr.ZarrDaf:
    return dafzarr.memory_daf("source!")


def stored_vector_values(d: dafzarr.ZarrDaf, axis: str, name: str) -> int | None:
    """How many values a sparse vector stores (``None``: it is dense)."""
    path = f"vectors/{axis}/{name}"
    if d._node_kind(path) != "group":
        return None
    return int(d._read_array(f"{path}/nzind").size)


def stored_matrix(d: dafzarr.ZarrDaf, rows: str, columns: str, name: str) -> Any:
    return d.get_np_matrix(rows, columns, name, relayout=False)


def lines(*parts: str) -> str:
    """A regular expression matching the lines of an error message in order."""
    import re

    return "\n".join(re.escape(p) for p in parts)


# --- Scalars ------------------------------------------------------------------------------


def test_scalar_missing_and_default(source: Any, destination: Any) -> None:
    with pytest.raises(
        DafMissingError, match=lines("missing scalar: version", "in the daf data: source!")
    ):
        copy_scalar(source=source, destination=destination, name="version")
    copy_scalar(source=source, destination=destination, name="version", default=None)
    assert not destination.has_scalar("version")
    copy_scalar(source=source, destination=destination, name="version", default="2.0")
    assert destination.get_scalar("version") == "2.0"


def test_scalar_existing_wins_over_default_and_converts(source: Any, destination: Any) -> None:
    source.set_scalar("version", "1.0")
    copy_scalar(source=source, destination=destination, name="version", default="2.0")
    assert destination.get_scalar("version") == "1.0"
    copy_scalar(source=source, destination=destination, name="version", rename="same", type=str)
    assert destination.get_scalar("same") == "1.0"
    copy_scalar(
        source=source, destination=destination, name="version", rename="parsed", type=np.float32
    )
    value = destination.get_scalar("parsed")
    assert value == 1.0 and value.dtype == np.float32
    source.set_scalar("version", 1.0, overwrite=True)
    copy_scalar(source=source, destination=destination, name="version", rename="text", type=str)
    assert destination.get_scalar("text") == "1.0"
    copy_scalar(source=source, destination=destination, name="version", rename="int", type=np.int32)
    assert destination.get_scalar("int") == 1 and destination.get_scalar("int").dtype == np.int32


def test_scalar_refused_conversions(source: Any, destination: Any) -> None:
    source.set_scalar("half", 1.5)
    source.set_scalar("negative", -1)
    source.set_scalar("word", "one")
    with pytest.raises(UnsafeCastError, match="not a whole number"):
        copy_scalar(source=source, destination=destination, name="half", type=np.int32)
    with pytest.raises(UnsafeCastError, match=r"outside 0\.\.255"):
        copy_scalar(source=source, destination=destination, name="negative", type=np.uint8)
    with pytest.raises(UnsafeCastError, match=r"(?s)'one'.*scalar: word"):
        copy_scalar(source=source, destination=destination, name="word", type=np.int64)
    assert destination.scalars_set() == set()


def test_scalar_overwrite_and_insist(source: Any, destination: Any) -> None:
    source.set_scalar("version", "1.0")
    destination.set_scalar("version", "0.1")
    with pytest.raises(
        DafExistsError, match=lines("existing scalar: version", "in the daf data: destination!")
    ):
        copy_scalar(source=source, destination=destination, name="version")
    copy_scalar(source=source, destination=destination, name="version", insist=False)
    assert destination.get_scalar("version") == "0.1"
    copy_scalar(source=source, destination=destination, name="version", overwrite=True)
    assert destination.get_scalar("version") == "1.0"


# --- Axes ---------------------------------------------------------------------------------


def test_axis(source: Any, destination: Any) -> None:
    with pytest.raises(
        DafMissingError, match=lines("missing axis: cell", "in the daf data: source!")
    ):
        copy_axis(source=source, destination=destination, axis="cell")
    copy_axis(source=source, destination=destination, axis="cell", default=None)
    assert not destination.has_axis("cell")
    source.add_axis("cell", ["A", "B"])
    copy_axis(source=source, destination=destination, axis="cell")
    assert destination.axis_np_entries("cell").tolist() == ["A", "B"]
    copy_axis(source=source, destination=destination, axis="cell", rename="obs")
    assert destination.axis_np_entries("obs").tolist() == ["A", "B"]


def test_axis_overwrite_deletes_what_uses_it(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B", "C"])
    destination.add_axis("cell", ["X"])
    destination.set_vector("cell", "age", [1])
    with pytest.raises(DafExistsError, match="existing axis: cell"):
        copy_axis(source=source, destination=destination, axis="cell")
    copy_axis(source=source, destination=destination, axis="cell", insist=False)
    assert destination.axis_length("cell") == 1
    copy_axis(source=source, destination=destination, axis="cell", overwrite=True)
    assert destination.axis_np_entries("cell").tolist() == ["A", "B", "C"]
    assert destination.vectors_set("cell") == set()


# --- Vectors ------------------------------------------------------------------------------


@pytest.mark.parametrize("default", ["undef", None, [1, 2]])
def test_vector_without_destination_axis(source: Any, destination: Any, default: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    kwargs = {} if default == "undef" else {"default": default}
    with pytest.raises(
        DafMissingError, match=lines("missing axis: cell", "in the daf data: destination!")
    ):
        copy_vector(source=source, destination=destination, axis="cell", name="age", **kwargs)


def test_vector_missing_and_default(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    destination.add_axis("cell", ["A", "B"])
    with pytest.raises(
        DafMissingError,
        match=lines("missing vector: age", "for the axis: cell", "in the daf data: source!"),
    ):
        copy_vector(source=source, destination=destination, axis="cell", name="age")
    copy_vector(source=source, destination=destination, axis="cell", name="age", default=None)
    assert not destination.has_vector("cell", "age")
    copy_vector(source=source, destination=destination, axis="cell", name="age", default=[1, 2])
    assert destination.get_np_vector("cell", "age").tolist() == [1, 2]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_vector_same_axis(source: Any, destination: Any, sparse: bool) -> None:
    source.add_axis("cell", ["A", "B"])
    values = np.array([1, 0]) if sparse else np.array([1, 2])
    source.set_vector("cell", "age", sp.csr_matrix(values) if sparse else values)
    destination.add_axis("cell", ["A", "B"])
    copy_vector(source=source, destination=destination, axis="cell", name="age", default=[2, 3])
    assert destination.get_np_vector("cell", "age").tolist() == values.tolist()
    assert stored_vector_values(destination, "cell", "age") == (1 if sparse else None)
    copy_vector(
        source=source,
        destination=destination,
        axis="cell",
        name="age",
        rename="f",
        eltype=np.float32,
    )
    converted = destination.get_np_vector("cell", "f")
    assert converted.dtype == np.float32 and converted.tolist() == values.tolist()
    assert stored_vector_values(destination, "cell", "f") == (1 if sparse else None)
    copy_vector(
        source=source, destination=destination, axis="cell", name="age", rename="s", eltype=str
    )
    assert destination.get_np_vector("cell", "s").tolist() == [str(v) for v in values]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_vector_destination_subset(source: Any, destination: Any, sparse: bool) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", sp.csr_matrix(np.array([1, 0])) if sparse else [1, 2])
    destination.add_axis("cell", ["A"])
    copy_vector(source=source, destination=destination, axis="cell", name="age")
    assert destination.get_np_vector("cell", "age").tolist() == [1]
    assert stored_vector_values(destination, "cell", "age") == (1 if sparse else None)


def test_vector_source_subset_dense(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", [1, 2])
    destination.add_axis("cell", ["A", "B", "C"])
    empties: list[dict[str, Any]] = [{}, {"empty": None}]
    for empty in empties:
        with pytest.raises(
            DafMismatchError,
            match=lines(
                "missing entries in the axis: cell",
                "of the source daf data: source!",
                "which are needed for copying the vector: age",
                "to the vector: age",
                "of the axis: cell",
                "of the target daf data: destination!",
            ),
        ):
            copy_vector(source=source, destination=destination, axis="cell", name="age", **empty)
    copy_vector(source=source, destination=destination, axis="cell", name="age", empty=-1)
    assert destination.get_np_vector("cell", "age").tolist() == [1, 2, -1]
    assert stored_vector_values(destination, "cell", "age") is None
    # A zero empty does not make a dense vector sparse.
    copy_vector(
        source=source, destination=destination, axis="cell", name="age", rename="zero", empty=0
    )
    assert stored_vector_values(destination, "cell", "zero") is None


@pytest.mark.parametrize(("empty", "values", "stored"), [(-1, [1, 0, -1], 2), (0, [1, 0, 0], 1)])
def test_vector_source_subset_sparse(
    source: Any, destination: Any, empty: int, values: list[int], stored: int
) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", sp.csr_matrix(np.array([1, 0])))
    destination.add_axis("cell", ["A", "B", "C"])
    with pytest.raises(DafMismatchError, match="missing entries in the axis: cell"):
        copy_vector(source=source, destination=destination, axis="cell", name="age")
    copy_vector(source=source, destination=destination, axis="cell", name="age", empty=empty)
    assert destination.get_np_vector("cell", "age").tolist() == values
    assert stored_vector_values(destination, "cell", "age") == stored


@pytest.mark.parametrize("empty", [None, 1])
def test_vector_disjoint(source: Any, destination: Any, empty: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", [1, 2])
    destination.add_axis("cell", ["B", "C"])
    with pytest.raises(
        DafMismatchError,
        match=lines(
            "disjoint entries in the axis: cell",
            "of the source daf data: source!",
            "and the axis: cell",
            "of the target daf data: destination!",
        ),
    ):
        copy_vector(source=source, destination=destination, axis="cell", name="age", empty=empty)


def test_vector_same_entries_in_another_order_align_by_name(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B", "C"])
    source.set_vector("cell", "age", [1, 2, 3])
    source.set_vector("cell", "sparse", sp.csr_matrix(np.array([0, 5, 7])))
    destination.add_axis("cell", ["C", "A", "B"])
    copy_vector(source=source, destination=destination, axis="cell", name="age")
    copy_vector(source=source, destination=destination, axis="cell", name="sparse")
    assert destination.get_np_vector("cell", "age").tolist() == [3, 1, 2]
    assert destination.get_np_vector("cell", "sparse").tolist() == [7, 0, 5]
    assert stored_vector_values(destination, "cell", "sparse") == 2


def test_vector_reaxis_rename_fill_follows_the_destination_axis(
    source: Any, destination: Any
) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", [1, 2])
    destination.add_axis("obs", ["B", "X", "A"])
    copy_vector(
        source=source,
        destination=destination,
        axis="cell",
        name="age",
        reaxis="obs",
        rename="years",
        empty=0,
    )
    assert destination.get_np_vector("obs", "years").tolist() == [2, 0, 1]


def test_vector_conversions_exact_or_refused(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B", "C"])
    source.set_vector("cell", "half", [1.0, 1.5, 2.0])
    source.set_vector("cell", "whole", [1.0, 0.0, 2.0])
    source.set_vector("cell", "negative", np.array([1, -1, 2], dtype=np.int64))
    source.set_vector("cell", "text", ["1", "2.5", "x"])
    source.set_vector("cell", "numbers", ["1", "2", "3"])
    source.set_vector("cell", "flags", [True, False, True])
    destination.add_axis("cell", ["A", "B", "C", "D"])
    with pytest.raises(UnsafeCastError, match=r"value 1\.5 at index 1 is not a whole"):
        copy_vector(
            source=source,
            destination=destination,
            axis="cell",
            name="half",
            eltype=np.int32,
            empty=0,
        )
    with pytest.raises(UnsafeCastError, match=r"outside 0\.\.255"):
        copy_vector(
            source=source,
            destination=destination,
            axis="cell",
            name="negative",
            eltype=np.uint8,
            empty=0,
        )
    with pytest.raises(UnsafeCastError, match="'x' at index 2"):
        copy_vector(
            source=source,
            destination=destination,
            axis="cell",
            name="text",
            eltype=np.float64,
            empty=0,
        )
    with pytest.raises(UnsafeCastError, match="empty value"):  # -1 does not fit uint8
        copy_vector(
            source=source,
            destination=destination,
            axis="cell",
            name="whole",
            eltype=np.uint8,
            empty=-1,
        )
    with pytest.raises(UnsafeCastError, match="empty value"):  # 0.5 is no int64
        copy_vector(source=source, destination=destination, axis="cell", name="negative", empty=0.5)
    assert destination.vectors_set("cell") == set()
    copy_vector(
        source=source, destination=destination, axis="cell", name="whole", eltype=np.int16, empty=9
    )
    assert destination.get_np_vector("cell", "whole").tolist() == [1, 0, 2, 9]
    assert destination.get_np_vector("cell", "whole").dtype == np.int16
    copy_vector(
        source=source,
        destination=destination,
        axis="cell",
        name="numbers",
        eltype=np.int8,
        empty=-1,
    )
    assert destination.get_np_vector("cell", "numbers").tolist() == [1, 2, 3, -1]
    copy_vector(
        source=source, destination=destination, axis="cell", name="half", eltype=str, empty="none"
    )
    assert destination.get_np_vector("cell", "half").tolist() == ["1.0", "1.5", "2.0", "none"]
    copy_vector(
        source=source, destination=destination, axis="cell", name="flags", eltype=str, empty=False
    )
    assert destination.get_np_vector("cell", "flags").tolist() == ["true", "false", "true", "false"]


def test_vector_bestify(source: Any, destination: Any) -> None:
    source.add_axis("cell", [f"c{i}" for i in range(10)])
    source.set_vector("cell", "mostly_zero", np.eye(1, 10, 3).ravel())
    source.set_vector("cell", "full", sp.csr_matrix(np.arange(1, 11, dtype=np.float64)))
    destination.add_axis("cell", [f"c{i}" for i in range(10)])
    copy_vector(
        source=source, destination=destination, axis="cell", name="mostly_zero", bestify=True
    )
    copy_vector(source=source, destination=destination, axis="cell", name="full", bestify=True)
    assert stored_vector_values(destination, "cell", "mostly_zero") == 1
    assert stored_vector_values(destination, "cell", "full") is None
    with pytest.raises(InvalidArgumentError, match="min_sparse_saving_fraction"):
        copy_vector(
            source=source,
            destination=destination,
            axis="cell",
            name="full",
            bestify=True,
            min_sparse_saving_fraction=1.5,
        )


def test_vector_overwrite_and_insist(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_vector("cell", "age", [1, 2])
    destination.add_axis("cell", ["A", "B"])
    destination.set_vector("cell", "age", [7, 7])
    with pytest.raises(DafExistsError, match=lines("existing vector: age", "for the axis: cell")):
        copy_vector(source=source, destination=destination, axis="cell", name="age")
    copy_vector(source=source, destination=destination, axis="cell", name="age", insist=False)
    assert destination.get_np_vector("cell", "age").tolist() == [7, 7]
    copy_vector(source=source, destination=destination, axis="cell", name="age", overwrite=True)
    assert destination.get_np_vector("cell", "age").tolist() == [1, 2]


# --- Matrices -----------------------------------------------------------------------------


@pytest.fixture
def matrix_source(source: Any) -> Any:
    source.add_axis("cell", ["A", "B"])
    source.add_axis("gene", ["X", "Y", "Z"])
    return source


def test_matrix_without_destination_axes(matrix_source: Any, destination: Any) -> None:
    for default in ("undef", None):
        kwargs: dict[str, Any] = {} if default == "undef" else {"default": default}
        with pytest.raises(
            DafMissingError, match=lines("missing axis: cell", "in the daf data: destination!")
        ):
            copy_matrix(
                source=matrix_source,
                destination=destination,
                rows_axis="cell",
                columns_axis="gene",
                name="UMIs",
                **kwargs,
            )
    destination.add_axis("cell", ["A", "B"])
    with pytest.raises(
        DafMissingError, match=lines("missing axis: gene", "in the daf data: destination!")
    ):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name="UMIs",
            default=None,
        )


def test_matrix_missing_and_default(matrix_source: Any, destination: Any) -> None:
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    with pytest.raises(
        DafMissingError,
        match=lines(
            "missing matrix: UMIs", "for the rows axis: cell", "and the columns axis: gene"
        ),
    ):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name="UMIs",
        )
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        default=None,
    )
    assert not destination.has_matrix("cell", "gene", "UMIs")
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        default=[[1, 2, 3], [4, 5, 6]],
    )
    assert destination.get_np_matrix("cell", "gene", "UMIs").tolist() == [[1, 2, 3], [4, 5, 6]]


DENSE = np.array([[1, 2, 3], [4, 5, 6]])
SPARSE = np.array([[0, 1, 2], [3, 4, 0]])


def _set_source_matrix(source: Any, sparse: bool) -> np.ndarray[Any, Any]:
    values = SPARSE if sparse else DENSE
    source.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(values) if sparse else values)
    return values


def _copy_umis(source: Any, destination: Any, **kwargs: Any) -> Any:
    copy_matrix(
        source=source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        **kwargs,
    )
    return destination.get_np_matrix("cell", "gene", kwargs.get("rename", "UMIs"))


def _dense(m: Any) -> list[list[Any]]:
    out: list[list[Any]] = (m.toarray() if sp.issparse(m) else np.asarray(m)).tolist()
    return out


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_matrix_same_axes(matrix_source: Any, destination: Any, sparse: bool) -> None:
    values = _set_source_matrix(matrix_source, sparse)
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    out = _copy_umis(matrix_source, destination, default=[[2, 3, 4], [5, 6, 7]])
    assert _dense(out) == values.tolist() and sp.issparse(out) == sparse
    if sparse:
        assert out.nnz == 4
    converted = _copy_umis(matrix_source, destination, rename="f", eltype=np.float32)
    assert converted.dtype == np.float32 and _dense(converted) == values.tolist()
    assert sp.issparse(converted) == sparse


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize(
    ("cells", "genes", "rows", "columns"),
    [
        (["A"], ["X", "Y", "Z"], [0], [0, 1, 2]),
        (["A", "B"], ["X", "Y"], [0, 1], [0, 1]),
        (["B"], ["Z", "X"], [1], [2, 0]),
    ],
)
def test_matrix_destination_subset(
    matrix_source: Any,
    destination: Any,
    sparse: bool,
    cells: list[str],
    genes: list[str],
    rows: list[int],
    columns: list[int],
) -> None:
    values = _set_source_matrix(matrix_source, sparse)
    destination.add_axis("cell", cells)
    destination.add_axis("gene", genes)
    out = _copy_umis(matrix_source, destination)
    expected = values[np.ix_(rows, columns)]
    assert _dense(out) == expected.tolist() and sp.issparse(out) == sparse
    if sparse:
        assert out.nnz == np.count_nonzero(expected)


@pytest.mark.parametrize("axis", ["rows", "columns"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_matrix_source_subset(
    matrix_source: Any, destination: Any, axis: str, sparse: bool
) -> None:
    values = _set_source_matrix(matrix_source, sparse)
    if axis == "rows":
        destination.add_axis("cell", ["A", "B", "C"])
        destination.add_axis("gene", ["X", "Y", "Z"])
        grown = "cell"
    else:
        destination.add_axis("cell", ["A", "B"])
        destination.add_axis("gene", ["W", "X", "Y", "Z"])
        grown = "gene"
    for empty in ({}, {"empty": None}):
        with pytest.raises(
            DafMismatchError,
            match=lines(
                f"missing entries in the axis: {grown}",
                "of the source daf data: source!",
                "which are needed for copying the matrix: UMIs",
                "to the matrix: UMIs",
                f"of the axis: {grown}",
                "of the target daf data: destination!",
            ),
        ):
            _copy_umis(matrix_source, destination, **empty)
    minus = _copy_umis(matrix_source, destination, empty=-1)
    zero = _copy_umis(matrix_source, destination, empty=0, rename="zero")
    if axis == "rows":
        expected = np.vstack([values, [-1, -1, -1]])
    else:
        expected = np.hstack([[[-1], [-1]], values])
    assert _dense(minus) == expected.tolist()
    assert _dense(zero) == np.where(expected == -1, 0, expected).tolist()
    # empty == 0: sparse whatever the source; else sparse (fills stored) from a sparse source
    assert sp.issparse(zero) and zero.nnz == np.count_nonzero(values)
    assert sp.issparse(minus) == sparse
    if sparse:
        assert minus.nnz == {"rows": 7, "columns": 6}[axis]


def test_matrix_mixed_subset_and_superset_axes(matrix_source: Any, destination: Any) -> None:
    _set_source_matrix(matrix_source, False)
    destination.add_axis("cell", ["B", "C", "A"])
    destination.add_axis("gene", ["Z", "X"])
    out = _copy_umis(matrix_source, destination, empty=0)
    assert _dense(out) == [[6, 4], [0, 0], [3, 1]]


@pytest.mark.parametrize("axis", ["cell", "gene"])
def test_matrix_disjoint(matrix_source: Any, destination: Any, axis: str) -> None:
    _set_source_matrix(matrix_source, True)
    destination.add_axis("cell", ["B", "C"] if axis == "cell" else ["A", "B"])
    destination.add_axis("gene", ["W", "X", "Y"] if axis == "gene" else ["X", "Y", "Z"])
    for empty in (None, -1):
        with pytest.raises(
            DafMismatchError,
            match=lines(
                f"disjoint entries in the axis: {axis}",
                "of the source daf data: source!",
                f"and the axis: {axis}",
                "of the target daf data: destination!",
            ),
        ):
            _copy_umis(matrix_source, destination, empty=empty)


def test_matrix_string_fill_is_dense(matrix_source: Any, destination: Any) -> None:
    matrix_source.set_matrix(
        "cell", "gene", "kind", np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    )
    destination.add_axis("cell", ["A", "B", "C"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="kind",
        empty="",
    )
    assert destination.get_np_matrix("cell", "gene", "kind").tolist() == [
        ["a", "b", "c"],
        ["d", "e", "f"],
        ["", "", ""],
    ]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_matrix_relayout(matrix_source: Any, destination: Any, sparse: bool) -> None:
    values = SPARSE if sparse else DENSE
    value = sp.csc_matrix(values) if sparse else values
    matrix_source.set_matrix("cell", "gene", "one", value, relayout=False)
    matrix_source.set_matrix("cell", "gene", "both", value)
    matrix_source.set_matrix("gene", "cell", "other", value.T, relayout=False)
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    for name in ("one", "both", "other"):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name=name,
        )
        for rows, columns, expected in (("cell", "gene", values), ("gene", "cell", values.T)):
            stored = stored_matrix(destination, rows, columns, name)
            assert _dense(stored) == expected.tolist() and sp.issparse(stored) == sparse
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="one",
        rename="exact",
        relayout=False,
    )
    assert destination.has_matrix("cell", "gene", "exact", relayout=False)
    assert not destination.has_matrix("gene", "cell", "exact", relayout=False)
    with pytest.raises(DafMissingError, match="missing matrix: other"):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name="other",
            rename="x",
            relayout=False,
        )


def test_matrix_overwrite_replaces_both_layouts(matrix_source: Any, destination: Any) -> None:
    matrix_source.set_matrix("cell", "gene", "UMIs", DENSE)
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    destination.set_matrix("gene", "cell", "UMIs", np.zeros((3, 2), int), relayout=False)
    with pytest.raises(
        DafExistsError, match=lines("existing matrix: UMIs", "for the rows axis: cell")
    ):
        _copy_umis(matrix_source, destination)
    assert not destination.has_matrix("cell", "gene", "UMIs", relayout=False)
    _copy_umis(matrix_source, destination, insist=False)
    assert not destination.has_matrix("cell", "gene", "UMIs", relayout=False)
    _copy_umis(matrix_source, destination, overwrite=True)
    assert stored_matrix(destination, "gene", "cell", "UMIs").tolist() == DENSE.T.tolist()
    assert stored_matrix(destination, "cell", "gene", "UMIs").tolist() == DENSE.tolist()


def test_matrix_square_is_never_relaid_out(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    source.set_matrix("cell", "cell", "near", np.array([[0, 1], [2, 0]]))
    destination.add_axis("cell", ["B", "A"])
    copy_matrix(
        source=source, destination=destination, rows_axis="cell", columns_axis="cell", name="near"
    )
    assert destination.get_np_matrix("cell", "cell", "near").tolist() == [[0, 2], [1, 0]]


def test_matrix_conversion_keeps_sparsity_and_refuses(matrix_source: Any, destination: Any) -> None:
    matrix_source.set_matrix(
        "cell", "gene", "half", sp.csc_matrix(np.array([[0, 1.5, 0], [2, 0, 0]]))
    )
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    with pytest.raises(UnsafeCastError, match="not a whole number"):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name="half",
            eltype=np.int32,
        )
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="half",
        eltype=str,
    )
    assert destination.get_np_matrix("cell", "gene", "half").tolist() == [
        ["0.0", "1.5", "0.0"],
        ["2.0", "0.0", "0.0"],
    ]


# --- Tensors ------------------------------------------------------------------------------


def test_tensor_fills_entries_the_source_lacks(matrix_source: Any, destination: Any) -> None:
    matrix_source.set_matrix(
        "gene", "cell", "U_is_high", np.array([[True, False], [False, True], [True, False]])
    )
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    destination.add_axis("batch", ["U", "V"])
    copy_tensor(
        source=matrix_source,
        destination=destination,
        main_axis="batch",
        rows_axis="gene",
        columns_axis="cell",
        name="is_high",
        empty=False,
    )
    # A zero (``false``) default is the all-zero sparse matrix, as in DataAxesFormats.jl.
    filled = destination.get_np_matrix("cell", "gene", "V_is_high")
    assert sp.issparse(filled) and filled.nnz == 0 and filled.shape == (2, 3)
    assert destination.get_np_matrix("gene", "cell", "U_is_high").tolist() == [
        [True, False],
        [False, True],
        [True, False],
    ]
    copy_tensor(
        source=matrix_source,
        destination=destination,
        main_axis="batch",
        rows_axis="gene",
        columns_axis="cell",
        name="is_high",
        rename="high",
    )
    assert destination.has_matrix("gene", "cell", "U_high")
    assert not destination.has_matrix("gene", "cell", "V_high")


# --- Sources of every kind ----------------------------------------------------------------


def test_zero_copy_sources_from_a_zip(tmp_path: Path, destination: Any) -> None:
    """Dense and sparse properties stored in a ZIP are copied from their mapped arrays."""
    with dafzarr.open_daf(tmp_path / "src.daf.zarr.zip", "w") as w:
        w.add_axis("cell", ["A", "B", "C"])
        w.add_axis("gene", ["X", "Y"])
        w.set_vector("cell", "age", np.array([1.5, 2.5, 3.5]))
        w.set_vector("cell", "sparse", sp.csr_matrix(np.array([0, 0, 4], np.int32)))
        w.set_matrix(
            "cell", "gene", "UMIs", sp.random(3, 2, density=0.5, format="csc", random_state=1)
        )
        w.set_matrix("cell", "gene", "dense", np.arange(6.0).reshape(3, 2))
    zip_source = dafzarr.open_daf(tmp_path / "src.daf.zarr.zip", "r")
    age = zip_source.get_np_vector("cell", "age")
    assert not age.flags.owndata and not age.flags.writeable  # a view of the mapping
    for axis in ("cell", "gene"):
        copy_axis(source=zip_source, destination=destination, axis=axis)
    copy_vector(source=zip_source, destination=destination, axis="cell", name="age")
    copy_vector(source=zip_source, destination=destination, axis="cell", name="sparse")
    for name in ("UMIs", "dense"):
        copy_matrix(
            source=zip_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="gene",
            name=name,
        )
        for rows, columns in (("cell", "gene"), ("gene", "cell")):
            assert _dense(stored_matrix(destination, rows, columns, name)) == _dense(
                zip_source.get_np_matrix(rows, columns, name)
            )
    assert destination.get_np_vector("cell", "age").tolist() == [1.5, 2.5, 3.5]
    assert stored_vector_values(destination, "cell", "sparse") == 1
    zip_source.close()


def test_views_and_chains_as_sources(source: Any, destination: Any) -> None:
    source.add_axis("cell", ["A", "B", "C"])
    source.set_vector("cell", "sparse", sp.csr_matrix(np.array([0, 3, 0])))
    source.set_vector("cell", "age", [1, 2, 3])
    view = dafzarr.viewer(
        source, axes={"obs": "@ cell"}, data={("obs", "age"): "=", ("obs", "sparse"): "="}
    )
    destination.add_axis("obs", ["C", "A"])
    copy_vector(source=view, destination=destination, axis="obs", name="age")
    assert destination.get_np_vector("obs", "age").tolist() == [3, 1]
    same = dafzarr.viewer(source, data={("cell", "sparse"): "="})
    chain = dafzarr.chain_reader([dafzarr.memory_daf("base"), same])
    destination.add_axis("cell", ["A", "B", "C"])
    copy_vector(source=chain, destination=destination, axis="cell", name="sparse")
    assert destination.get_np_vector("cell", "sparse").tolist() == [0, 3, 0]
    assert stored_vector_values(destination, "cell", "sparse") == 1  # still sparse


def test_chain_destination(source: Any) -> None:
    source.add_axis("cell", ["A", "B"])
    source.add_axis("gene", ["X", "Y", "Z"])
    source.set_matrix("cell", "gene", "UMIs", DENSE)
    base = dafzarr.memory_daf("base")
    base.add_axis("cell", ["A", "B"])
    base.add_axis("gene", ["X", "Y", "Z"])
    scratch = dafzarr.memory_daf("scratch")
    chain = dafzarr.chain_writer([base, scratch])
    copy_matrix(
        source=source, destination=chain, rows_axis="cell", columns_axis="gene", name="UMIs"
    )
    assert (
        scratch.get_np_matrix("gene", "cell", "UMIs", relayout=False).tolist() == DENSE.T.tolist()
    )
    base.set_matrix("gene", "cell", "old", np.zeros((3, 2), int), relayout=False)
    source.set_matrix("cell", "gene", "old", DENSE)
    copy_matrix(
        source=source,
        destination=chain,
        rows_axis="cell",
        columns_axis="gene",
        name="old",
        overwrite=True,
    )
    assert chain.get_np_matrix("gene", "cell", "old", relayout=False).tolist() == DENSE.T.tolist()


def test_stored_layouts_copied_as_they_are(tmp_path: Path, destination: Any) -> None:
    """Between ZarrDafs, both stored layouts are copied as stored (index type included); a
    damaged source is refused, not propagated."""
    path = tmp_path / "src.daf.zarr"
    with dafzarr.open_daf(path, "w") as w:
        w.add_axis("cell", ["A", "B"])
        w.add_axis("gene", ["X", "Y", "Z"])
        w.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(SPARSE), indtype="uint64")
    src = dafzarr.open_daf(path, "r")
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["X", "Y", "Z"])
    copy_matrix(
        source=src,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        rename="copied",
    )
    for rows, columns in (("cell", "gene"), ("gene", "cell")):
        info = destination._array_info(f"matrices/{rows}/{columns}/copied/rowval")
        assert info.dtype == np.uint64
        assert _dense(stored_matrix(destination, rows, columns, "copied")) == _dense(
            src.get_np_matrix(rows, columns, "UMIs")
        )
    src.close()
    rowval = path / "matrices" / "gene" / "cell" / "UMIs" / "rowval" / "0"
    bad = np.frombuffer(rowval.read_bytes(), np.uint64).copy()
    bad[0] = 99
    rowval.write_bytes(bad.tobytes())
    src = dafzarr.open_daf(path, "r")
    with pytest.raises(dafzarr.errors.DafFormatError, match=r"rowval holds rows outside 1\.\.3"):
        copy_matrix(
            source=src, destination=destination, rows_axis="cell", columns_axis="gene", name="UMIs"
        )
    assert not destination.has_matrix("cell", "gene", "UMIs")
    src.close()


def test_dense_zip_sources_are_written_without_a_copy(tmp_path: Path) -> None:
    """A dense vector and matrix mapped from a ZIP reach the destination ZIP from their
    views: the copy allocates far less than their size."""
    import tracemalloc

    n = 1 << 20  # 8 MiB of float64
    with dafzarr.open_daf(tmp_path / "src.daf.zarr.zip", "w") as w:
        w.add_axis("cell", [f"c{i}" for i in range(n // 4)])
        w.add_axis("pair", ["p", "q", "r", "s"])
        w.set_vector("cell", "v", np.arange(n // 4, dtype=np.float64))
        w.set_matrix("cell", "pair", "m", np.ones((n // 4, 4)), relayout=False)
    with (
        dafzarr.open_daf(tmp_path / "src.daf.zarr.zip", "r") as src,
        dafzarr.open_daf(tmp_path / "dst.daf.zarr.zip", "w") as dst,
    ):
        copy_axis(source=src, destination=dst, axis="cell")
        copy_axis(source=src, destination=dst, axis="pair")
        for d in (src, dst):  # the entry names are read once and kept by each data set
            d.axis_np_entries("cell")
        tracemalloc.start()
        try:
            copy_vector(source=src, destination=dst, axis="cell", name="v")
            copy_matrix(
                source=src,
                destination=dst,
                rows_axis="cell",
                columns_axis="pair",
                name="m",
                relayout=False,
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < n  # the matrix alone is 8 MiB, the vector 2 MiB
        assert dst.get_np_matrix("cell", "pair", "m").sum() == n


def test_matrix_bestify(matrix_source: Any, destination: Any) -> None:
    matrix_source.add_axis("peak", [f"p{i}" for i in range(40)])
    matrix_source.set_matrix("cell", "peak", "mostly_zero", np.eye(2, 40))
    matrix_source.set_matrix("cell", "peak", "full", sp.csc_matrix(np.ones((2, 40))))
    for axis in ("cell", "peak"):
        copy_axis(source=matrix_source, destination=destination, axis=axis)
    for name in ("mostly_zero", "full"):
        copy_matrix(
            source=matrix_source,
            destination=destination,
            rows_axis="cell",
            columns_axis="peak",
            name=name,
            bestify=True,
        )
    assert sp.issparse(stored_matrix(destination, "cell", "peak", "mostly_zero"))
    assert not sp.issparse(stored_matrix(destination, "peak", "cell", "full"))
    assert destination.get_np_matrix("cell", "peak", "full").sum() == 80


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_matrix_reaxis_and_rename(matrix_source: Any, destination: Any, sparse: bool) -> None:
    values = _set_source_matrix(matrix_source, sparse)
    destination.add_axis("obs", ["A", "B"])
    destination.add_axis("var", ["X", "Y", "Z"])
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        rows_reaxis="obs",
        columns_reaxis="var",
        rename="X",
    )
    assert _dense(stored_matrix(destination, "obs", "var", "X")) == values.tolist()
    assert _dense(stored_matrix(destination, "var", "obs", "X")) == values.T.tolist()
    destination.add_axis("big", ["C", "B", "A"])
    copy_matrix(
        source=matrix_source,
        destination=destination,
        rows_axis="cell",
        columns_axis="gene",
        name="UMIs",
        rows_reaxis="big",
        columns_reaxis="var",
        rename="Y",
        empty=7,
    )
    assert _dense(destination.get_np_matrix("big", "var", "Y")) == [
        [7, 7, 7],
        values[1].tolist(),
        values[0].tolist(),
    ]
    assert destination.axes_set() == {"obs", "var", "big"}
