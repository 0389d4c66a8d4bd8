"""``concatenate``: the cases of DataAxesFormats.jl's concatenation tests, restated, plus the
decisions of the operations' specification (§8), on memory, directory and ZIP destinations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import ALL_MATRICES, ALL_SCALARS, ALL_VECTORS, MergeAction, concatenate
from dafzarr.errors import (
    DafExistsError,
    DafMismatchError,
    DafMissingError,
    InvalidArgumentError,
    UnsafeCastError,
)

LastValue, CollectAxis, SkipProperty = (
    MergeAction.LastValue,
    MergeAction.CollectAxis,
    MergeAction.SkipProperty,
)

KINDS = [
    ("memory", None, 2),
    ("dir", "out.daf.zarr", 2),
    ("zip", "out.daf.zarr.zip", 2),
    ("zip-v3", "out.daf.zarr.zip", 3),
]


class Dest:
    """A destination data set named ``destination!`` and its reopened result."""

    def __init__(self, tmp_path: Path, rel: str | None, zarr_format: int) -> None:
        self.path = None if rel is None else str(tmp_path / rel)
        self.daf = (
            dafzarr.memory_daf("destination!")
            if self.path is None
            else dafzarr.open_daf(self.path, "w+", name="destination!", zarr_format=zarr_format)
        )

    def result(self) -> dafzarr.ZarrDaf:
        if self.path is None:
            return self.daf
        self.daf.close()
        return dafzarr.open_daf(self.path, "r")


@pytest.fixture(params=KINDS, ids=[k for k, *_ in KINDS])
def dest(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Dest]:
    d = Dest(tmp_path, request.param[1], request.param[2])
    yield d
    d.daf.close()


@pytest.fixture
def sources() -> list[dafzarr.ZarrDaf]:
    s1, s2 = dafzarr.memory_daf("source.1!"), dafzarr.memory_daf("source.2!")
    s1.add_axis("cell", ["A", "B"])
    s2.add_axis("cell", ["C", "D", "E"])
    return [s1, s2]


def _raises(cls: type[Exception], *lines: str) -> Any:
    """``pytest.raises`` checking that the message holds the lines, in order."""
    import re

    return pytest.raises(cls, match=re.escape("\n".join(lines)))


def _nothing_written(d: Dest) -> None:
    assert d.daf.axes_set() == set()


def _genes(sources: list[dafzarr.ZarrDaf], genes: list[str] | None = None) -> None:
    for s in sources:
        s.add_axis("gene", genes or ["X", "Y"])


def _sparse(d: dafzarr.ZarrDaf, *path: str) -> bool:
    return d._node_kind("/".join(path)) == "group"


# --- checks ------------------------------------------------------------------------------


def test_square_matrix_of_the_concatenated_axis_is_refused(dest: Dest, sources: Any) -> None:
    sources[0].set_matrix("cell", "cell", "outgoing_edges", np.eye(2))
    with _raises(
        DafMismatchError,
        "can't concatenate the matrix: outgoing_edges",
        "for the concatenated rows axis: cell",
        "and the concatenated columns axis: cell",
        "in the daf data: source.1!",
        "concatenated into the daf data: destination!",
    ):
        concatenate(dest.daf, "cell", sources)
    _nothing_written(dest)


def test_different_entries_of_another_axis_are_refused(dest: Dest, sources: Any) -> None:
    sources[0].add_axis("gene", ["X", "Y"])
    sources[1].add_axis("gene", ["X", "Y", "Z"])
    with _raises(
        DafMismatchError,
        "different entries for the axis: gene",
        "between the daf data: source.1!",
        "and the daf data: source.2!",
        "concatenated into the daf data: destination!",
    ):
        concatenate(dest.daf, "cell", sources)
    _nothing_written(dest)


def test_same_entries_in_another_order_are_refused(dest: Dest, sources: Any) -> None:
    sources[0].add_axis("gene", ["X", "Y"])
    sources[1].add_axis("gene", ["Y", "X"])
    with pytest.raises(DafMismatchError, match="different entries for the axis: gene"):
        concatenate(dest.daf, "cell", sources)


def test_axes_that_exist_or_are_missing(dest: Dest, sources: Any) -> None:
    dest.daf.add_axis("cell", ["Q"])
    with _raises(DafExistsError, "existing axis: cell", "in the daf data: destination!"):
        concatenate(dest.daf, "cell", sources)
    dest.daf.delete_axis("cell")
    with _raises(
        DafMissingError, "missing axis: metacell", "for: concatenate!", "of the daf data: source.1!"
    ):
        concatenate(dest.daf, ["cell", "metacell"], sources)
    sources[1].add_axis("dataset", ["x"])
    with _raises(DafExistsError, "existing axis: dataset", "in the daf data: source.2!"):
        concatenate(dest.daf, "cell", sources)
    concatenate(dest.daf, "cell", sources, dataset_axis=None)  # without one, no conflict
    assert list(dest.result().axis_np_entries("dataset")) == ["x"]


def test_other_axes_must_be_new_in_the_destination(dest: Dest, sources: Any) -> None:
    _genes(sources)
    dest.daf.add_axis("gene", ["X", "Y"])
    with _raises(DafExistsError, "existing axis: gene", "in the daf data: destination!"):
        concatenate(dest.daf, "cell", sources)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"axis": []},
        {"axis": ["cell", "cell"]},
        {"sources": []},
        {"names": ["a"]},
        {"names": ["a", "a"]},
        {"prefix": [True, False]},
        {"prefixed": [set(), set()]},
        {"sparse_if_saves_storage_fraction": 0.0},
        {"sparse_if_saves_storage_fraction": 1.0},
        {"dataset_axis": "cell"},
    ],
)
def test_bad_arguments(sources: Any, kwargs: dict[str, Any]) -> None:
    d = dafzarr.memory_daf("destination!")
    args: dict[str, Any] = {"axis": "cell", "sources": sources, **kwargs}
    with pytest.raises(InvalidArgumentError):
        concatenate(d, args.pop("axis"), args.pop("sources"), **args)
    assert d.axes_set() == set()


# --- axes, dataset axis, vectors, matrices ----------------------------------------------------


def test_empty_data_sets(dest: Dest, sources: Any) -> None:
    concatenate(dest.daf, "cell", sources)
    r = dest.result()
    assert list(r.axis_np_entries("cell")) == ["A", "B", "C", "D", "E"]
    assert list(r.axis_np_entries("dataset")) == ["source.1!", "source.2!"]
    assert list(r.get_np_vector("cell", "dataset")) == ["source.1!"] * 2 + ["source.2!"] * 3


def test_without_dataset_axis_or_property(dest: Dest, sources: Any) -> None:
    concatenate(dest.daf, "cell", sources, dataset_axis=None)
    r = dest.daf
    assert not r.has_axis("dataset") and not r.has_vector("cell", "dataset")
    other = dafzarr.memory_daf("other!")
    concatenate(other, "cell", sources, dataset_property=False)
    assert list(other.axis_np_entries("dataset")) == ["source.1!", "source.2!"]
    assert not other.has_vector("cell", "dataset")


def test_vectors(dest: Dest, sources: Any) -> None:
    sources[0].set_vector("cell", "age", np.array([1, 2]))
    sources[1].set_vector("cell", "age", np.array([3, 4, 5]))
    sources[0].set_vector("cell", "color", np.array([1, 2]))
    sources[1].set_vector("cell", "color", ["blue", "red", "yellow"])
    sources[0].set_vector("cell", "kind", ["red", "green"])
    sources[1].set_vector("cell", "kind", ["blue", "red", "yellow"])
    concatenate(dest.daf, "cell", sources)
    r = dest.result()
    age = r.get_np_vector("cell", "age")
    assert list(age) == [1, 2, 3, 4, 5] and age.dtype == np.int64
    assert list(r.get_np_vector("cell", "color")) == ["1", "2", "blue", "red", "yellow"]
    assert list(r.get_np_vector("cell", "kind")) == ["red", "green", "blue", "red", "yellow"]


def test_missing_vector_needs_an_empty_value(dest: Dest, sources: Any) -> None:
    sources[0].set_vector("cell", "color", ["red", "green"])
    for empty in (None, {"version": 0}, {("cell", "other"): "x"}):
        with _raises(
            DafMismatchError,
            "no empty value for the vector: color",
            "of the axis: cell",
            "which is missing from the daf data: source.2!",
            "concatenated into the daf data: destination!",
        ):
            concatenate(dest.daf, "cell", sources, empty=empty)
        _nothing_written(dest)
    concatenate(dest.daf, "cell", sources, empty={("cell", "color"): "black"})
    assert list(dest.result().get_np_vector("cell", "color")) == [
        "red",
        "green",
        "black",
        "black",
        "black",
    ]


def test_empty_values_of_a_tensor(sources: Any) -> None:
    _genes(sources)
    for s in sources:
        s.add_axis("batch", ["B1", "B2"])
    sources[0].set_matrix("gene", "cell", "B1_UMIs", np.ones((2, 2)))
    sources[1].set_matrix("gene", "cell", "B2_UMIs", np.ones((2, 3)))
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, empty={("batch", "gene", "cell", "UMIs"): 0.5})
    assert d.get_np_matrix("gene", "cell", "B1_UMIs").tolist() == [[1, 1, 0.5, 0.5, 0.5]] * 2
    assert d.get_np_matrix("gene", "cell", "B2_UMIs").tolist() == [[0.5, 0.5, 1, 1, 1]] * 2
    with _raises(DafMissingError, "missing axis: nope"):
        concatenate(d, "cell", sources, empty={("nope", "gene", "cell", "UMIs"): 0.5})


def test_dense_matrix(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("cell", "gene", "UMIs", np.array([[1, 2], [3, 4]]))
    sources[1].set_matrix("cell", "gene", "UMIs", np.array([[5, 6], [7, 8], [9, 10]]))
    concatenate(dest.daf, "cell", sources)
    r = dest.result()
    assert np.array_equal(r.get_np_matrix("cell", "gene", "UMIs"), np.arange(1, 11).reshape(5, 2))
    assert r.matrices_set("gene", "cell", relayout=False) == {"UMIs"}  # (o, axis) only
    assert r.matrices_set("cell", "gene", relayout=False) == set()
    assert not _sparse(r, "matrices", "gene", "cell", "UMIs")


def test_matrix_stored_only_across_is_taken(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("cell", "gene", "UMIs", np.array([[1, 2], [3, 4]]), relayout=False)
    sources[1].set_matrix("gene", "cell", "UMIs", np.array([[5, 7, 9], [6, 8, 10]]), relayout=False)
    concatenate(dest.daf, "cell", sources)
    assert np.array_equal(
        dest.result().get_np_matrix("cell", "gene", "UMIs"), np.arange(1, 11).reshape(5, 2)
    )


def test_string_matrix(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("gene", "cell", "tag", np.array([["a", "b"], ["c", "d"]]))
    sources[1].set_matrix("gene", "cell", "tag", np.array([[1, 2, 3], [4, 5, 6]]))
    concatenate(dest.daf, "cell", sources)
    got = dest.result().get_np_matrix("gene", "cell", "tag")
    assert got.tolist() == [["a", "b", "1", "2", "3"], ["c", "d", "4", "5", "6"]]


def test_chain_writer_destination(sources: Any) -> None:
    base = dafzarr.memory_daf("base!")
    base.set_scalar("kept", 1)
    top = dafzarr.memory_daf("top!")
    chain = dafzarr.chain_writer([base, top], name="chain!")
    sources[0].set_vector("cell", "age", np.array([1, 2]))
    sources[1].set_vector("cell", "age", np.array([3, 4, 5]))
    concatenate(chain, "cell", sources)
    assert list(top.get_np_vector("cell", "age")) == [1, 2, 3, 4, 5]


def test_views_and_chains_as_sources(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("gene", "cell", "UMIs", sp.csc_matrix(np.array([[1, 0], [0, 0]])))
    sources[1].set_matrix("gene", "cell", "UMIs", np.array([[0, 2, 0], [3, 0, 0]]))
    view = dafzarr.viewer(
        sources[0],
        name="view!",
        axes={"cell": "=", "gene": "="},
        data={("gene", "cell", "UMIs"): "="},
    )
    chain = dafzarr.chain_reader([sources[1]], name="chain!")
    concatenate(dest.daf, "cell", [view, chain])
    r = dest.result()
    got = r.get_np_matrix("gene", "cell", "UMIs")
    assert not sp.issparse(got)  # the dense part counts fully
    assert np.array_equal(got, [[1, 0, 0, 2, 0], [0, 0, 3, 0, 0]])
    assert list(r.axis_np_entries("dataset")) == ["view!", "chain!"]


# --- prefixes ----------------------------------------------------------------------------


@pytest.fixture
def metacells(sources: Any) -> Any:
    sources[0].add_axis("metacell", ["M1"])
    sources[1].add_axis("metacell", ["M1", "M2"])
    sources[0].set_vector("cell", "metacell", ["M1", "M1"])
    sources[1].set_vector("cell", "metacell", ["M1", "M2", "M1"])
    sources[0].set_vector("cell", "metacell.manual", ["M1", ""])
    sources[1].set_vector("cell", "metacell.manual", ["", "M2", "M1"])
    sources[0].set_vector("cell", "!metacell", ["M1", "M1"])
    sources[1].set_vector("cell", "!metacell", ["M1", "M2", "M1"])
    return sources


def test_prefix_needed_for_unique_entries(dest: Dest, metacells: Any) -> None:
    with _raises(
        DafMismatchError,
        "non-unique entries for new axis: metacell",
        "in the daf data: destination!",
    ):
        concatenate(dest.daf, ["cell", "metacell"], metacells)
    _nothing_written(dest)


def test_prefix(dest: Dest, metacells: Any) -> None:
    concatenate(dest.daf, ["cell", "metacell"], metacells, prefix=[False, True])
    r = dest.result()
    assert list(r.axis_np_entries("cell")) == ["A", "B", "C", "D", "E"]
    assert list(r.axis_np_entries("metacell")) == ["source.1!.M1", "source.2!.M1", "source.2!.M2"]
    assert list(r.get_np_vector("metacell", "dataset")) == ["source.1!", "source.2!", "source.2!"]
    assert list(r.get_np_vector("cell", "metacell")) == [
        "source.1!.M1",
        "source.1!.M1",
        "source.2!.M1",
        "source.2!.M2",
        "source.2!.M1",
    ]
    # the empty string stays empty: it names no entry
    assert list(r.get_np_vector("cell", "metacell.manual")) == [
        "source.1!.M1",
        "",
        "",
        "source.2!.M2",
        "source.2!.M1",
    ]
    assert list(r.get_np_vector("cell", "!metacell")) == ["M1", "M1", "M1", "M2", "M1"]


def test_prefix_with_names(dest: Dest, metacells: Any) -> None:
    concatenate(dest.daf, ["cell", "metacell"], metacells, prefix=[False, True], names=["D1", "D2"])
    r = dest.result()
    assert list(r.axis_np_entries("metacell")) == ["D1.M1", "D2.M1", "D2.M2"]
    assert list(r.axis_np_entries("dataset")) == ["D1", "D2"]
    assert list(r.get_np_vector("cell", "dataset")) == ["D1", "D1", "D2", "D2", "D2"]
    assert list(r.get_np_vector("cell", "metacell")) == [
        "D1.M1",
        "D1.M1",
        "D2.M1",
        "D2.M2",
        "D2.M1",
    ]


def test_prefixed_sets(dest: Dest, metacells: Any) -> None:
    concatenate(
        dest.daf,
        ["cell", "metacell"],
        metacells,
        prefix=[False, True],
        prefixed=[{"metacell", "!metacell"}, set()],
    )
    r = dest.result()
    expected = ["source.1!.M1", "source.1!.M1", "source.2!.M1", "source.2!.M2", "source.2!.M1"]
    assert list(r.get_np_vector("cell", "metacell")) == expected
    assert list(r.get_np_vector("cell", "!metacell")) == expected
    assert list(r.get_np_vector("cell", "metacell.manual")) == ["M1", "", "", "M2", "M1"]


# --- sparse or dense ---------------------------------------------------------------------


def test_sparse_vectors(dest: Dest, sources: Any) -> None:
    sources[0].set_vector("cell", "dense", sp.csr_matrix(np.array([[1, 2]])))
    sources[1].set_vector("cell", "dense", sp.csr_matrix(np.array([[3, 4, 5]])))
    sources[0].set_vector("cell", "sparse", sp.csr_matrix(np.array([[1, 0]])))
    sources[1].set_vector("cell", "sparse", sp.csr_matrix(np.array([[0, 0, 2]])))
    sources[0].set_vector("cell", "zero", np.array([1, 2]))
    sources[0].set_vector("cell", "two", np.array([1, 0]))
    concatenate(dest.daf, "cell", sources, empty={("cell", "zero"): 0, ("cell", "two"): 2})
    r = dest.result()
    assert list(r.get_np_vector("cell", "dense")) == [1, 2, 3, 4, 5]
    assert not _sparse(r, "vectors", "cell", "dense")
    assert list(r.get_np_vector("cell", "sparse")) == [1, 0, 0, 0, 2]
    assert _sparse(r, "vectors", "cell", "sparse")
    assert list(r.get_np_vector("cell", "zero")) == [1, 2, 0, 0, 0]
    assert _sparse(r, "vectors", "cell", "zero")
    assert list(r.get_np_vector("cell", "two")) == [1, 0, 2, 2, 2]
    assert not _sparse(r, "vectors", "cell", "two")


def test_sparse_matrices(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("cell", "gene", "dense", sp.csc_matrix(np.array([[1, 2], [3, 4]])))
    sources[1].set_matrix(
        "cell", "gene", "dense", sp.csc_matrix(np.array([[5, 6], [7, 8], [9, 10]]))
    )
    # saves exactly 0.25: a tie goes sparse
    sources[0].set_matrix("cell", "gene", "tie", sp.csc_matrix(np.array([[1, 0], [0, 0]])))
    sources[1].set_matrix("cell", "gene", "tie", sp.csc_matrix(np.array([[0, 2], [3, 0], [0, 0]])))
    sources[0].set_matrix("cell", "gene", "zero", sp.csc_matrix(np.array([[1, 2], [0, 0]])))
    sources[0].set_matrix("cell", "gene", "five", sp.csc_matrix(np.array([[1, 2], [3, 4]])))
    concatenate(
        dest.daf, "cell", sources, empty={("cell", "gene", "zero"): 0, ("gene", "cell", "five"): 5}
    )
    r = dest.result()
    assert np.array_equal(r.get_np_matrix("cell", "gene", "dense"), np.arange(1, 11).reshape(5, 2))
    assert not _sparse(r, "matrices", "gene", "cell", "dense")
    tie = r.get_np_matrix("cell", "gene", "tie")
    assert sp.issparse(tie) and tie.toarray().tolist() == [[1, 0], [0, 0], [0, 2], [3, 0], [0, 0]]
    zero = r.get_np_matrix("cell", "gene", "zero")
    assert sp.issparse(zero) and zero.toarray().tolist() == [[1, 2]] + [[0, 0]] * 4
    five = r.get_np_matrix("cell", "gene", "five")
    assert not sp.issparse(five) and five.tolist() == [[1, 2], [3, 4]] + [[5, 5]] * 3
    other = dafzarr.memory_daf("other!")
    concatenate(
        other,
        "cell",
        sources,
        sparse_if_saves_storage_fraction=0.26,
        empty={("cell", "gene", "zero"): 0, ("gene", "cell", "five"): 5},
    )
    assert not sp.issparse(other.get_np_matrix("gene", "cell", "tie"))


def test_stored_index_types_and_implicit_true_values(dest: Dest, sources: Any) -> None:
    _genes(sources, [f"G{i}" for i in range(10)])
    m0 = np.zeros((10, 2), np.float64)
    m0[[1, 7], [0, 1]] = [2.5, 3.5]
    m1 = np.zeros((10, 3), np.float64)
    m1[[0, 9], [0, 2]] = [4.0, 5.0]
    sources[0].set_matrix(
        "gene", "cell", "UMIs", sp.csc_matrix(m0), indtype="int64", relayout=False
    )
    sources[1].set_matrix(
        "gene", "cell", "UMIs", sp.csc_matrix(m1), indtype="uint64", relayout=False
    )
    for s, m in zip(sources, (m0, m1), strict=True):  # stored without values: all True
        s.set_matrix("gene", "cell", "flag", sp.csc_matrix(m != 0), relayout=False)
    concatenate(dest.daf, "cell", sources, sparse_if_saves_storage_fraction=0.1)
    r = dest.result()
    got = r.get_np_matrix("gene", "cell", "UMIs")
    assert sp.issparse(got) and np.array_equal(got.toarray(), np.hstack([m0, m1]))
    flag = r.get_np_matrix("gene", "cell", "flag")  # saves 0.12
    assert sp.issparse(flag) and flag.dtype == np.bool_
    assert np.array_equal(flag.toarray(), np.hstack([m0, m1]) != 0)


def test_dense_part_in_a_sparse_matrix(dest: Dest, sources: Any) -> None:
    _genes(sources, [f"G{i}" for i in range(40)])
    dense = np.zeros((40, 2), np.int32)
    dense[3, 1] = 7
    sources[0].set_matrix("gene", "cell", "UMIs", dense)  # stored dense, counts fully
    big = np.zeros((40, 3), np.int32)
    big[0, 0] = 1
    sources[1].set_matrix("gene", "cell", "UMIs", sp.csc_matrix(big))
    concatenate(dest.daf, "cell", sources, sparse_if_saves_storage_fraction=0.1)
    got = dest.result().get_np_matrix("gene", "cell", "UMIs")
    assert sp.issparse(got) and got.nnz == 2
    assert np.array_equal(got.toarray(), np.concatenate([dense, big], axis=1))


def test_missing_matrix_needs_an_empty_value(dest: Dest, sources: Any) -> None:
    _genes(sources)
    sources[0].set_matrix("cell", "gene", "UMIs", sp.csc_matrix(np.array([[1, 2], [3, 4]])))
    for empty in (None, {"version": 0}):
        with _raises(
            DafMismatchError,
            "no empty value for the matrix: UMIs",
            "of the rows axis: gene",
            "and the columns axis: cell",
            "which is missing from the daf data: source.2!",
            "concatenated into the daf data: destination!",
        ):
            concatenate(dest.daf, "cell", sources, empty=empty)
        _nothing_written(dest)


# --- element types -----------------------------------------------------------------------


def test_element_types_merge(dest: Dest, sources: Any) -> None:
    cases: dict[str, tuple[Any, Any, Any, str]] = {
        "u8_i8": (np.uint8, np.int8, None, "int16"),
        "u32_i32": (np.uint32, np.int32, None, "int64"),
        "u64_i64": (np.uint64, np.int64, None, "int64"),
        "f32_i32": (np.float32, np.int32, None, "float32"),
        "f32_i64": (np.float32, np.int64, None, "float64"),
        "u8_u16": (np.uint8, np.uint16, None, "uint16"),
        "b_b": (np.bool_, np.bool_, None, "bool"),
        "b_i8": (np.bool_, np.int8, None, "int16"),
        "u8_empty_float": (np.uint8, None, 0.0, "float64"),
        "u8_empty_int32": (np.uint8, None, np.int32(3), "int32"),
        "u8_empty_int": (np.uint8, None, 3, "int64"),
        "f32_empty_f32": (np.float32, None, np.float32(0), "float32"),
    }
    empty = {}
    for name, (t1, t2, e, _) in cases.items():
        sources[0].set_vector("cell", name, np.array([1, 0], dtype=t1))
        if t2 is not None:
            sources[1].set_vector("cell", name, np.array([1, 0, 1], dtype=t2))
        if e is not None:
            empty[("cell", name)] = e
    concatenate(dest.daf, "cell", sources, empty=empty)
    r = dest.result()
    for name, (*_, want) in cases.items():
        assert r.get_np_vector("cell", name).dtype == np.dtype(want), name


def test_values_a_merged_type_cannot_hold_are_refused(dest: Dest, sources: Any) -> None:
    sources[0].set_vector("cell", "big", np.array([2**63, 0], dtype=np.uint64))
    sources[1].set_vector("cell", "big", np.array([1, 2, 3], dtype=np.int64))
    with pytest.raises(UnsafeCastError, match="big"):
        concatenate(dest.daf, "cell", sources)
    assert dest.daf.axes_set() == set()  # rolled back (ZIP) or removed again


def test_float_texts(dest: Dest, sources: Any) -> None:
    sources[0].set_vector("cell", "v", np.array([1.5, 0.1], dtype=np.float32))
    sources[1].set_vector("cell", "v", ["a", "b", "c"])
    sources[0].set_vector("cell", "b", np.array([True, False]))
    sources[1].set_vector("cell", "b", ["a", "b", "c"])
    concatenate(dest.daf, "cell", sources)
    r = dest.result()
    assert list(r.get_np_vector("cell", "v")) == ["1.5", "0.1", "a", "b", "c"]
    assert list(r.get_np_vector("cell", "b")) == ["true", "false", "a", "b", "c"]


# --- merge -------------------------------------------------------------------------------


def test_merge_scalars(sources: Any) -> None:
    sources[0].set_scalar("version", 1)
    sources[1].set_scalar("version", 2)
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge={ALL_VECTORS: LastValue})
    assert not d.has_scalar("version") and not d.has_vector("dataset", "version")
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge={"version": LastValue})
    assert d.get_scalar("version") == 2 and not d.has_vector("dataset", "version")
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge=[(ALL_SCALARS, CollectAxis)])
    assert not d.has_scalar("version") and list(d.get_np_vector("dataset", "version")) == [1, 2]
    d = dafzarr.memory_daf("destination!")
    with _raises(
        DafMismatchError,
        "can't collect axis for the scalar: version",
        "of the daf data sets concatenated into the daf data: destination!",
        "because no data set axis was created",
    ):
        concatenate(
            d, "cell", sources, dataset_axis=None, merge={ALL_SCALARS: CollectAxis}, prefixed=set()
        )
    assert d.axes_set() == set()


def test_merge_last_entry_wins(sources: Any) -> None:
    sources[0].set_scalar("version", 1)
    sources[1].set_scalar("version", 2)
    sources[1].set_scalar("other", 3)
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge=[("version", CollectAxis), (ALL_SCALARS, LastValue)])
    assert d.get_scalar("version") == 2 and not d.has_vector("dataset", "version")
    assert d.get_scalar("other") == 3
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge=[(ALL_SCALARS, LastValue), ("version", SkipProperty)])
    assert not d.has_scalar("version") and d.get_scalar("other") == 3


def test_collect_missing_scalar(sources: Any) -> None:
    sources[0].set_scalar("version", np.int32(1))
    d = dafzarr.memory_daf("destination!")
    with _raises(
        DafMismatchError,
        "no empty value for the scalar: version",
        "which is missing from the daf data: source.2!",
    ):
        concatenate(d, "cell", sources, merge={ALL_SCALARS: CollectAxis})
    assert d.axes_set() == set()
    concatenate(
        d, "cell", sources, merge={ALL_SCALARS: CollectAxis}, empty={"version": np.int32(0)}
    )
    got = d.get_np_vector("dataset", "version")
    assert list(got) == [1, 0] and got.dtype == np.int32


def test_merge_overwrite(sources: Any) -> None:
    sources[1].set_scalar("version", 2)
    d = dafzarr.memory_daf("destination!")
    d.set_scalar("version", 0)
    with pytest.raises(DafExistsError, match="existing scalar: version"):
        concatenate(d, "cell", sources, merge={"version": LastValue})
    concatenate(d, "cell", sources, merge={"version": LastValue}, overwrite=True)
    assert d.get_scalar("version") == 2


@pytest.fixture
def weights(sources: Any) -> Any:
    _genes(sources)
    sources[0].set_vector("gene", "weight", np.array([1, 2], dtype=np.uint8))
    sources[1].set_vector("gene", "weight", np.array([3, 4], dtype=np.uint16))
    return sources


def test_merge_vectors(dest: Dest, weights: Any) -> None:
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", weights, merge={ALL_SCALARS: LastValue})
    assert not d.has_vector("gene", "weight")
    concatenate(dest.daf, "cell", weights, merge={("gene", "weight"): LastValue})
    r = dest.result()
    assert list(r.get_np_vector("gene", "weight")) == [3, 4]
    assert not r.has_matrix("dataset", "gene", "weight")


def test_collect_vectors(dest: Dest, weights: Any) -> None:
    concatenate(dest.daf, "cell", weights, merge={ALL_VECTORS: CollectAxis})
    r = dest.result()
    assert not r.has_vector("gene", "weight")
    got = r.get_np_matrix("dataset", "gene", "weight")
    assert got.tolist() == [[1, 2], [3, 4]] and got.dtype == np.uint16


@pytest.mark.parametrize(
    ("empty", "want", "dtype", "sparse"),
    [
        (0.0, [[1.0, 2.0], [0.0, 0.0]], np.float64, True),
        (np.int32(3), [[1, 2], [3, 3]], np.int32, False),
    ],
)
def test_collect_vectors_with_empty(
    weights: Any, empty: Any, want: Any, dtype: Any, sparse: bool
) -> None:
    weights[1].delete_vector("gene", "weight")
    d = dafzarr.memory_daf("destination!")
    concatenate(
        d, "cell", weights, merge={ALL_VECTORS: CollectAxis}, empty={("gene", "weight"): empty}
    )
    got = d.get_np_matrix("gene", "dataset", "weight")
    assert sp.issparse(got) == sparse
    dense = got.toarray() if sparse else got
    assert dense.T.tolist() == want and dense.dtype == dtype


def test_collect_sparse_and_string_vectors(weights: Any) -> None:
    weights[0].set_vector("gene", "weight", sp.csr_matrix(np.array([[1, 0]])), overwrite=True)
    weights[1].set_vector("gene", "weight", sp.csr_matrix(np.array([[0, 2]])), overwrite=True)
    weights[0].set_vector("gene", "label", ["a", "b"])
    weights[1].set_vector("gene", "label", np.array([1, 2]))
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", weights, merge={ALL_VECTORS: CollectAxis})
    got = d.get_np_matrix("dataset", "gene", "weight")
    assert sp.issparse(got) and got.toarray().tolist() == [[1, 0], [0, 2]]
    assert d.get_np_matrix("gene", "dataset", "label").tolist() == [["a", "1"], ["b", "2"]]


def test_collect_vectors_of_an_axis_a_data_set_lacks(sources: Any) -> None:
    sources[0].add_axis("gene", ["X", "Y"])
    sources[0].set_vector("gene", "weight", np.array([1, 2], dtype=np.uint8))
    d = dafzarr.memory_daf("destination!")
    with _raises(
        DafMismatchError,
        "no empty value for the vector: weight",
        "of the axis: gene",
        "which is missing from the daf data: source.2!",
    ):
        concatenate(d, "cell", sources, merge={ALL_VECTORS: CollectAxis})
    concatenate(
        d,
        "cell",
        sources,
        merge={ALL_VECTORS: CollectAxis},
        empty={("gene", "weight"): np.uint8(9)},
    )
    assert d.get_np_matrix("gene", "dataset", "weight").tolist() == [[1, 9], [2, 9]]


def test_collect_vectors_needs_dataset_axis(weights: Any) -> None:
    d = dafzarr.memory_daf("destination!")
    with _raises(
        DafMismatchError,
        "can't collect axis for the vector: weight",
        "of the axis: gene",
        "of the daf data sets concatenated into the daf data: destination!",
        "because no data set axis was created",
    ):
        concatenate(d, "cell", weights, dataset_axis=None, merge={ALL_VECTORS: CollectAxis})
    assert d.axes_set() == set()


def test_merge_matrices(dest: Dest, sources: Any) -> None:
    _genes(sources)
    for s in sources:
        s.add_axis("batch", ["B1", "B2"])
    sources[0].set_matrix("gene", "gene", "edges", np.array([[1, 2], [3, 4]]))
    sources[1].set_matrix("gene", "gene", "edges", np.array([[5, 6], [7, 8]]))
    sources[0].set_matrix("gene", "batch", "scale", np.array([[1, 2], [3, 4]]))
    sources[1].set_matrix("gene", "batch", "scale", np.array([[5, 6], [7, 8]]))
    d = dafzarr.memory_daf("destination!")
    concatenate(d, "cell", sources, merge={ALL_VECTORS: LastValue})
    assert not d.has_matrix("gene", "gene", "edges") and not d.has_matrix("gene", "batch", "scale")
    concatenate(
        dest.daf,
        "cell",
        sources,
        merge={("gene", "gene", "edges"): LastValue, ("gene", "batch", "scale"): LastValue},
    )
    r = dest.result()
    assert r.get_np_matrix("gene", "gene", "edges").tolist() == [[5, 6], [7, 8]]
    assert r.get_np_matrix("gene", "batch", "scale").tolist() == [[5, 6], [7, 8]]
    assert not r.has_matrix("batch", "gene", "scale", relayout=False)  # that layout only


@pytest.mark.parametrize("name", ["edges", "scale"])
def test_collect_matrices_is_refused(sources: Any, name: str) -> None:
    _genes(sources)
    for s in sources:
        s.add_axis("batch", ["B1", "B2"])
        if name == "edges":
            s.set_matrix("gene", "gene", name, np.array([[1, 2], [3, 4]]))
        else:
            s.set_matrix("gene", "batch", name, np.array([[1, 2], [3, 4]]))
    d = dafzarr.memory_daf("destination!")
    with _raises(DafMismatchError, f"can't collect axis for the matrix: {name}"):
        concatenate(d, "cell", sources, merge={ALL_MATRICES: CollectAxis})
    with pytest.raises(DafMismatchError, match="because that would create a 3D tensor"):
        concatenate(d, "cell", sources, merge={ALL_MATRICES: CollectAxis})
    assert d.axes_set() == set()


@pytest.mark.parametrize(
    "merge", [{("a", "b", "c", "d"): LastValue}, {"x": "LastValue"}, [("x",)], {1: LastValue}]
)
def test_bad_merge_keys(sources: Any, merge: Any) -> None:
    d = dafzarr.memory_daf("destination!")
    with pytest.raises(DafMismatchError, match="invalid merge entry"):
        concatenate(d, "cell", sources, merge=merge)


def test_progress_bar(sources: Any, tmp_path: Path) -> None:
    import io

    _genes(sources)
    for s in sources:
        s.set_matrix("gene", "cell", "UMIs", np.ones((2, s.axis_length("cell"))))
        s.set_vector("cell", "age", np.ones(s.axis_length("cell")))
    out = io.StringIO()
    concatenate(dafzarr.memory_daf("destination!"), "cell", sources, progress=out)
    assert "concatenating" in out.getvalue() and "parts" in out.getvalue()


def test_dataset_property_clash(sources: Any) -> None:
    sources[1].set_vector("cell", "dataset", ["p", "q", "r"])
    d = dafzarr.memory_daf("destination!")
    with _raises(
        DafExistsError,
        "existing vector: dataset",
        "for the axis: cell",
        "in the daf data: source.2!",
    ):
        concatenate(d, "cell", sources)
    assert d.axes_set() == set()
    concatenate(d, "cell", sources, dataset_property=False, empty={("cell", "dataset"): ""})
    assert list(d.get_np_vector("cell", "dataset")) == ["", "", "p", "q", "r"]


def test_destination_must_be_a_writable_data_set(sources: Any) -> None:
    view = dafzarr.viewer(dafzarr.memory_daf("base!"), name="view!")
    with pytest.raises(dafzarr.errors.InvalidArgumentTypeError, match="ZarrDaf"):
        concatenate(view, "cell", sources)


def test_destination_must_be_writable(sources: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "ro.daf.zarr")
    dafzarr.open_daf(path, "w").close()
    ro = dafzarr.open_daf(path, "r")
    with pytest.raises(dafzarr.errors.DafReadOnlyError):
        concatenate(ro, "cell", sources)
