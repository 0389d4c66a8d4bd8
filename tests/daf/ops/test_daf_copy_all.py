"""``copy_all`` (``dafzarr.daf.ops``): DataAxesFormats.jl's ``copy_all!`` cases restated, on
memory, directory and ZIP destinations, with dafzarr's validation before any write and one
commit on a ZIP; views and chains as sources."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.daf.ops import copy_all
from dafzarr.errors import (
    DafExistsError,
    DafMismatchError,
    DafMissingError,
    InvalidArgumentError,
    UnsafeCastError,
)

from .test_daf_copies import lines, open_kind, stored_matrix, stored_vector_values

KINDS = ["memory", "directory", "zip"]


@pytest.fixture(params=KINDS)
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dafzarr.ZarrDaf]:
    d = open_kind(request.param, tmp_path, "destination!")
    yield d
    d.close()


@pytest.fixture
def source() -> dafzarr.ZarrDaf:
    s = dafzarr.memory_daf("source!")
    s.set_scalar("version", "1.5")
    s.add_axis("cell", ["A"])
    s.add_axis("gene", ["W", "X"])
    s.set_vector("cell", "age", [1.0])
    s.set_matrix("cell", "gene", "UMIs", np.array([[1, 2]]))
    return s


def snapshot(d: Any) -> dict[str, Any]:
    """Everything a data set holds, as plain values."""
    out: dict[str, Any] = {f"scalar {s}": d.get_scalar(s) for s in d.scalars_set()}
    axes = sorted(d.axes_set())
    for a in axes:
        out[f"axis {a}"] = d.axis_np_entries(a).tolist()
        for v in d.vectors_set(a):
            out[f"vector {a}/{v}"] = d.get_np_vector(a, v).tolist()
        for c in axes:
            for m in d.matrices_set(a, c, relayout=False):
                value = d.get_np_matrix(a, c, m, relayout=False)
                out[f"matrix {a},{c}/{m}"] = (
                    value.toarray() if sp.issparse(value) else np.asarray(value)
                ).tolist()
    return out


def test_into_an_empty_data_set(source: Any, destination: Any) -> None:
    copy_all(source=source, destination=destination)
    assert destination.get_scalar("version") == "1.5"
    assert destination.axis_np_entries("cell").tolist() == ["A"]
    assert destination.get_np_vector("cell", "age").tolist() == [1.0]
    assert destination.get_np_matrix("cell", "gene", "UMIs").tolist() == [[1, 2]]
    # relayout (default): both layouts
    assert stored_matrix(destination, "gene", "cell", "UMIs").tolist() == [[1], [2]]


def test_into_a_superset_with_empty_and_types(source: Any, destination: Any) -> None:
    destination.add_axis("cell", ["A", "B"])
    destination.add_axis("gene", ["W", "X", "Z"])
    copy_all(
        source=source,
        destination=destination,
        empty=[(("cell", "age"), 0.0), (("gene", "cell", "UMIs"), 0)],
        types={"version": np.float32},
    )
    version = destination.get_scalar("version")
    assert version == 1.5 and version.dtype == np.float32
    assert destination.get_np_vector("cell", "age").tolist() == [1.0, 0.0]
    umis = destination.get_np_matrix("cell", "gene", "UMIs")
    assert sp.issparse(umis) and umis.toarray().tolist() == [[1, 2, 0], [0, 0, 0]]


def test_missing_entries_without_empty(source: Any, destination: Any) -> None:
    destination.add_axis("cell", ["A", "B"])
    with pytest.raises(
        DafMismatchError,
        match=lines(
            "missing entries in the axis: cell",
            "of the source daf data: source!",
            "which are needed for copying : data",
            "of the axis: cell",
            "of the target daf data: destination!",
        ),
    ):
        copy_all(source=source, destination=destination)
    with pytest.raises(
        DafMismatchError,
        match=lines(
            "missing entries in the axis: cell",
            "of the source daf data: source!",
            "which are needed for copying the vector: age",
            "to the vector: age",
        ),
    ):
        copy_all(source=source, destination=destination, empty={("cell", "other"): 0})
    with pytest.raises(
        DafMismatchError,
        match=lines(
            "missing entries in the axis: cell",
            "of the source daf data: source!",
            "which are needed for copying the matrix: UMIs",
        ),
    ):
        copy_all(source=source, destination=destination, empty={("cell", "age"): 0})
    assert snapshot(destination) == {"axis cell": ["A", "B"]}  # nothing was written


def test_disjoint_axis(source: Any, destination: Any) -> None:
    destination.add_axis("gene", ["X", "Y"])
    with pytest.raises(
        DafMismatchError,
        match=lines(
            "disjoint entries in the axis: gene",
            "of the source daf data: source!",
            "and the axis: gene",
            "of the target daf data: destination!",
        ),
    ):
        copy_all(source=source, destination=destination, empty={("cell", "gene", "UMIs"): 0})


def test_validates_everything_before_writing(source: Any, destination: Any) -> None:
    destination.add_axis("cell", ["A"])
    destination.set_vector("cell", "age", [9.0])
    before = snapshot(destination)
    with pytest.raises(
        DafExistsError,
        match=lines("existing vector: age", "for the axis: cell", "in the daf data: destination!"),
    ):
        copy_all(source=source, destination=destination)
    assert snapshot(destination) == before  # the scalar and the gene axis were not written
    source.set_vector("cell", "half", [1.5])
    with pytest.raises(UnsafeCastError, match=r"(?s)not a whole number.*the vector: half"):
        copy_all(
            source=source, destination=destination, insist=False, types={("cell", "half"): np.int64}
        )
    with pytest.raises(UnsafeCastError, match=r"(?s)the empty value.*the vector: age"):
        copy_all(
            source=dafzarr.viewer(source, axes={"cell": "@ cell [ age > 5 ]"}),
            destination=destination,
            overwrite=True,
            empty={("cell", "age"): "x"},
        )
    with pytest.raises(InvalidArgumentError, match="invalid empty key"):
        copy_all(source=source, destination=destination, empty={("cell",): 0})
    assert snapshot(destination) == before


def test_existing_axes_are_never_replaced(source: Any, destination: Any) -> None:
    destination.add_axis("gene", ["X", "W"])
    copy_all(source=source, destination=destination, overwrite=True)
    assert destination.axis_np_entries("gene").tolist() == ["X", "W"]
    assert destination.get_np_matrix("cell", "gene", "UMIs").tolist() == [[2, 1]]


def test_overwrite_and_insist(source: Any, destination: Any) -> None:
    destination.set_scalar("version", "0.1")
    with pytest.raises(DafExistsError, match="existing scalar: version"):
        copy_all(source=source, destination=destination)
    assert destination.axes_set() == set()
    copy_all(source=source, destination=destination, insist=False)
    assert destination.get_scalar("version") == "0.1"
    assert destination.get_np_vector("cell", "age").tolist() == [1.0]
    source.set_vector("cell", "age", [2.0], overwrite=True)
    source.set_matrix("cell", "gene", "UMIs", np.array([[3, 4]]), overwrite=True)
    destination.delete_scalar("version")
    with pytest.raises(DafExistsError, match="existing vector: age"):
        copy_all(source=source, destination=destination)
    assert not destination.has_scalar("version")
    copy_all(source=source, destination=destination, overwrite=True)
    assert destination.get_scalar("version") == "1.5"
    assert destination.get_np_vector("cell", "age").tolist() == [2.0]
    assert stored_matrix(destination, "gene", "cell", "UMIs").tolist() == [[3], [4]]


@pytest.mark.parametrize("relayout", [True, False])
def test_layouts(destination: Any, relayout: bool) -> None:
    src = dafzarr.memory_daf("source!")
    src.add_axis("cell", ["A", "B"])
    src.add_axis("gene", ["X", "Y", "Z"])
    src.set_matrix("cell", "gene", "one", np.arange(6).reshape(2, 3), relayout=False)
    src.set_matrix("gene", "cell", "other", sp.csc_matrix(np.eye(3, 2)), relayout=False)
    src.set_matrix("cell", "gene", "both", np.ones((2, 3)))
    src.set_matrix("cell", "cell", "square", np.eye(2))
    copy_all(source=src, destination=destination, relayout=relayout)
    layouts = {
        (r, c, m)
        for r in ("cell", "gene")
        for c in ("cell", "gene")
        for m in destination.matrices_set(r, c, relayout=False)
    }
    expected = {
        (r, c, m)
        for r in ("cell", "gene")
        for c in ("cell", "gene")
        for m in src.matrices_set(r, c, relayout=False)
    }
    if relayout:
        expected |= {(c, r, m) for r, c, m in expected}
    assert layouts == expected
    for r, c, m in layouts:
        got, want = stored_matrix(destination, r, c, m), src.get_np_matrix(r, c, m)
        assert np.array_equal(
            got.toarray() if sp.issparse(got) else got,
            want.toarray() if sp.issparse(want) else want,
        )
    assert sp.issparse(stored_matrix(destination, "gene", "cell", "other"))


def test_tensor_keys(destination: Any) -> None:
    src = dafzarr.memory_daf("source!")
    src.add_axis("cell", ["A", "B"])
    src.add_axis("gene", ["X", "Y", "Z"])
    src.add_axis("batch", ["U", "V"])
    src.set_matrix(
        "gene", "cell", "U_is_high", np.array([[True, False], [False, True], [True, False]])
    )
    copy_all(
        source=src, destination=destination, empty={("batch", "cell", "gene", "is_high"): False}
    )
    # As in DataAxesFormats.jl, a zero (``false``) default reads as an all-zero sparse matrix,
    # which is what the copy stores.
    filled = destination.get_np_matrix("cell", "gene", "V_is_high")
    assert sp.issparse(filled) and filled.shape == (2, 3) and filled.nnz == 0
    assert filled.dtype == np.bool_
    assert destination.get_np_matrix("gene", "cell", "U_is_high")[0].tolist() == [True, False]


def test_sparse_fill_counts(destination: Any) -> None:
    src = dafzarr.memory_daf("source!")
    src.add_axis("cell", ["A", "B"])
    src.add_axis("gene", ["X", "Y", "Z"])
    src.set_vector("cell", "n", sp.csr_matrix(np.array([1, 0])))
    src.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(np.array([[0, 1, 2], [3, 4, 0]])))
    destination.add_axis("cell", ["A", "B", "C"])
    copy_all(
        source=src, destination=destination, empty={("cell", "n"): -1, ("gene", "cell", "UMIs"): -1}
    )
    assert destination.get_np_vector("cell", "n").tolist() == [1, 0, -1]
    assert stored_vector_values(destination, "cell", "n") == 2
    umis = stored_matrix(destination, "cell", "gene", "UMIs")
    assert sp.issparse(umis) and umis.nnz == 7


def test_views_as_sources_persist_a_subset_and_renames(tmp_path: Path) -> None:
    base = dafzarr.memory_daf("base")
    base.add_axis("cell", ["A", "B", "C", "D"])
    base.add_axis("gene", ["X", "Y"])
    base.set_vector("cell", "is_good", [True, False, True, True])
    base.set_vector("cell", "age", [1, 2, 3, 4])
    base.set_matrix(
        "cell", "gene", "UMIs", sp.csc_matrix(np.array([[0, 1], [2, 0], [0, 0], [5, 6]]))
    )
    view = dafzarr.viewer(
        base,
        axes={"obs": "@ cell [ is_good ]", "var": "@ gene"},
        data={("obs", "age"): "=", ("obs", "var", "UMIs"): "="},
    )
    with dafzarr.open_daf(tmp_path / "subset.daf.zarr.zip", "w") as out:
        copy_all(source=view, destination=out)
        assert out.axis_np_entries("obs").tolist() == ["A", "C", "D"]
        assert out.get_np_vector("obs", "age").tolist() == [1, 3, 4]
        assert out.get_np_matrix("obs", "var", "UMIs").toarray().tolist() == [
            [0, 1],
            [0, 0],
            [5, 6],
        ]
        assert out.vectors_set("obs") == {"age"}
    chain = dafzarr.chain_reader([base, dafzarr.viewer(base, data={("cell", "age"): None})])
    copied = dafzarr.memory_daf("copied")
    copy_all(source=chain, destination=copied)
    assert copied.get_np_vector("cell", "age").tolist() == [1, 2, 3, 4]


def test_one_commit_on_a_zip(tmp_path: Path, source: Any) -> None:
    with dafzarr.open_daf(tmp_path / "out.daf.zarr.zip", "w+") as out:
        store = out._backend.store  # type: ignore[attr-defined]
        before = store.generation
        copy_all(source=source, destination=out)
        assert store.generation == before + 1
        assert out.get_np_matrix("gene", "cell", "UMIs", relayout=False).tolist() == [[1], [2]]


def test_progress(source: Any) -> None:
    stream = io.StringIO()
    copy_all(source=source, destination=dafzarr.memory_daf("d"), progress=stream)
    assert "copying: 100%" in stream.getvalue()


def test_missing_tensor_axis(source: Any) -> None:
    with pytest.raises(DafMissingError, match="missing axis: batch"):
        copy_all(
            source=source,
            destination=dafzarr.memory_daf("d"),
            empty={("batch", "cell", "gene", "x"): 0},
        )


def test_overwrite_without_relayout_keeps_both_stored_layouts(destination: Any) -> None:
    src = dafzarr.memory_daf("source!")
    src.add_axis("cell", ["A", "B"])
    src.add_axis("gene", ["X", "Y", "Z"])
    src.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(np.array([[0, 1, 2], [3, 0, 0]])))
    src.set_matrix("cell", "gene", "dense", np.arange(6).reshape(2, 3))
    destination.add_axis("cell", ["B", "A"])  # not the same order: values move by name
    destination.add_axis("gene", ["X", "Y", "Z"])
    for name in ("UMIs", "dense"):
        destination.set_matrix("cell", "gene", name, np.zeros((2, 3), int))
    copy_all(source=src, destination=destination, relayout=False, overwrite=True)
    for rows, columns in (("cell", "gene"), ("gene", "cell")):
        umis = stored_matrix(destination, rows, columns, "UMIs")
        dense = stored_matrix(destination, rows, columns, "dense")
        expected_umis = np.array([[3, 0, 0], [0, 1, 2]])
        expected_dense = np.array([[3, 4, 5], [0, 1, 2]])
        if rows == "gene":
            expected_umis, expected_dense = expected_umis.T, expected_dense.T
        assert sp.issparse(umis) and umis.toarray().tolist() == expected_umis.tolist()
        assert np.asarray(dense).tolist() == expected_dense.tolist()


def test_read_only_destination_is_refused_first(source: Any) -> None:
    from dafzarr.errors import DafReadOnlyError

    target = dafzarr.memory_daf("target!")
    for read_only in (target.read_only_view(), dafzarr.viewer(target)):
        with pytest.raises(DafReadOnlyError, match=r"\(copying from the daf data: source!\)"):
            copy_all(source=source, destination=read_only)
    assert snapshot(target) == {}
