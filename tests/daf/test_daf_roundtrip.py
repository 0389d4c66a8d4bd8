"""Round trips of every element type, strings and index type, on every backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from .daf_helpers import (
    BACKENDS,
    ELEMENT_TYPES,
    INDEX_TYPES,
    STRINGS,
    Backend,
    assert_same,
    sample,
    sparse_sample,
)


@pytest.fixture(params=BACKENDS, ids=[b[0] for b in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    _id, rel, fmt = request.param
    return Backend(tmp_path, rel, fmt)


@pytest.mark.parametrize("dtype", ELEMENT_TYPES)
def test_element_type_round_trip(backend: Backend, dtype: str) -> None:
    w = backend.writer()
    w.add_axis("cell", [f"c{i}" for i in range(7)]).add_axis("gene", ["g1", "g2", "g3"])
    scalar = sample(dtype, 1)[0]
    dense = sample(dtype, 7, seed=1)
    sparse_vec = sp.csr_matrix(sparse_sample(dtype, (1, 7), seed=2))
    matrix = sample(dtype, (7, 3), seed=3)
    sparse_mat = sparse_sample(dtype, (7, 3), seed=4)
    square = sparse_sample(dtype, (3, 3), seed=5)
    w.set_scalar("s", scalar)
    w.set_scalar("zero", np.zeros(1, dtype)[0])
    w.set_vector("cell", "dense", dense)
    w.set_vector("cell", "zeros", np.zeros(7, dtype))
    w.set_vector("cell", "sparse", sparse_vec)
    w.set_vector("cell", "filled", scalar)
    w.set_matrix("cell", "gene", "dense", np.asfortranarray(matrix))
    w.set_matrix("cell", "gene", "c_order", np.ascontiguousarray(matrix), relayout=False)
    w.set_matrix("cell", "gene", "sparse", sparse_mat.tocoo())
    w.set_matrix("gene", "gene", "square", square)
    r = backend.reader(w)
    got = r.get_scalar("s")
    assert got == scalar and np.asarray(got).dtype == np.dtype(dtype)
    assert r.get_scalar("zero") == 0
    assert r.scalars_set() == {"s", "zero"}
    assert_same(r.get_np_vector("cell", "dense"), dense)
    assert_same(r.get_np_vector("cell", "zeros"), np.zeros(7, dtype))
    assert_same(r.get_np_vector("cell", "sparse"), sparse_vec.toarray()[0])
    assert_same(r.get_np_vector("cell", "filled"), np.full(7, scalar, dtype))
    assert r.vectors_set("cell") == {"dense", "zeros", "sparse", "filled"}
    m = r.get_np_matrix("cell", "gene", "dense")
    assert_same(m, matrix)
    assert m.flags.f_contiguous
    assert_same(r.get_np_matrix("gene", "cell", "dense"), matrix.T)
    assert_same(r.get_np_matrix("cell", "gene", "c_order"), matrix)
    assert not r.has_matrix("gene", "cell", "c_order", relayout=False)
    assert_same(r.get_np_matrix("gene", "cell", "c_order"), matrix.T)  # relayout on read
    assert_same(r.get_np_matrix("cell", "gene", "sparse"), sparse_mat)
    assert_same(r.get_np_matrix("gene", "cell", "sparse"), sp.csc_matrix(sparse_mat.T))
    assert_same(r.get_np_matrix("gene", "gene", "square"), square)
    assert r.matrices_set("gene", "gene") == {"square"}
    assert r.matrices_set("cell", "gene") == {"dense", "c_order", "sparse"}
    assert r.matrices_set("cell", "gene", relayout=False) == {"dense", "c_order", "sparse"}
    assert r.matrices_set("gene", "cell", relayout=False) == {"dense", "sparse"}


def test_strings_round_trip(backend: Backend) -> None:
    w = backend.writer()
    w.add_axis("cell", [*STRINGS[:2], "日本", "c", "d", "e"]).add_axis("gene", ["g1", "g2"])
    w.set_scalar("title", "héllo wörld ✓")
    w.set_scalar("empty", "")
    w.set_vector("cell", "label", np.array(STRINGS, dtype=object))
    w.set_vector("cell", "numpy_unicode", np.array(STRINGS))
    w.set_vector("cell", "blank", "")
    w.set_matrix("cell", "gene", "text", np.array([[s, s + "!"] for s in STRINGS]))
    r = backend.reader(w)
    assert r.get_scalar("title") == "héllo wörld ✓"
    assert r.get_scalar("empty") == ""
    assert list(r.axis_np_entries("cell")) == [*STRINGS[:2], "日本", "c", "d", "e"]
    assert r.axis_dict("cell")["日本"] == 2
    assert list(r.get_np_vector("cell", "label")) == STRINGS
    assert list(r.get_np_vector("cell", "numpy_unicode")) == STRINGS
    assert list(r.get_np_vector("cell", "blank")) == [""] * 6
    text = r.get_np_matrix("cell", "gene", "text")
    assert text.shape == (6, 2) and text[3, 1] == "日本語!"
    assert r.get_np_matrix("gene", "cell", "text")[1, 5] == "emoji 🎉!"


@pytest.mark.parametrize("indtype", INDEX_TYPES)
def test_index_types(backend: Backend, indtype: str) -> None:
    w = backend.writer()
    w.add_axis("cell", [f"c{i}" for i in range(50)]).add_axis("gene", ["a", "b", "c", "d"])
    mat = sparse_sample("float32", (50, 4), seed=9)
    vec = sp.csr_matrix(sparse_sample("int16", (1, 50), seed=8))
    w.set_matrix("cell", "gene", "m", mat, indtype=indtype)
    w.set_vector("cell", "v", vec, indtype=indtype)
    with w.empty_sparse_vector("cell", "filled", "float64", 3, indtype) as (nzind, nzval):
        assert nzind.dtype == np.dtype(indtype)
        nzind[:] = [2, 10, 50]
        nzval[:] = [1.5, -2, 3]
    r = backend.reader(w)
    assert_same(r.get_np_matrix("cell", "gene", "m"), mat)
    assert_same(r.get_np_matrix("gene", "cell", "m"), sp.csc_matrix(mat.T))
    assert_same(r.get_np_vector("cell", "v"), vec.toarray()[0])
    expected = np.zeros(50)
    expected[[1, 9, 49]] = [1.5, -2, 3]
    assert_same(r.get_np_vector("cell", "filled"), expected)


def test_bool_sparse_all_true_and_mixed(backend: Backend) -> None:
    w = backend.writer()
    w.add_axis("cell", ["a", "b", "c", "d"]).add_axis("gene", ["x", "y"])
    all_true = sp.csr_matrix(np.array([[True, False, True, False]]))
    mixed = sp.csr_matrix(np.array([[True, False, False, True]]))
    mixed.data[1] = False  # an explicitly stored False keeps nzval
    w.set_vector("cell", "mask", all_true)
    w.set_vector("cell", "mixed", mixed)
    w.set_matrix("cell", "gene", "mask", sp.csc_matrix(np.eye(4, 2, dtype=bool)))
    r = backend.reader(w)
    assert list(r.get_np_vector("cell", "mask")) == [True, False, True, False]
    assert list(r.get_np_vector("cell", "mixed")) == [True, False, False, False]
    m = r.get_np_matrix("cell", "gene", "mask")
    assert m.dtype == np.bool_ and np.array_equal(m.toarray(), np.eye(4, 2, dtype=bool))


def test_empty_axis_and_zero_nnz(backend: Backend) -> None:
    w = backend.writer()
    w.add_axis("none", []).add_axis("cell", ["a", "b"])
    w.set_vector("none", "v", np.zeros(0, "float32"))
    w.set_matrix("cell", "none", "m", np.zeros((2, 0), "int32"))
    w.set_matrix("cell", "cell", "empty", sp.csc_matrix((2, 2), dtype="float64"))
    r = backend.reader(w)
    assert r.axis_length("none") == 0
    assert r.get_np_vector("none", "v").dtype == np.float32
    assert r.get_np_matrix("cell", "none", "m").shape == (2, 0)
    assert r.get_np_matrix("none", "cell", "m").shape == (0, 2)
    assert r.get_np_matrix("cell", "cell", "empty").nnz == 0


def test_dense_reads_are_views(backend: Backend) -> None:
    """Dense vectors and flat matrices come back as read-only views, not copies."""
    w = backend.writer()
    w.add_axis("cell", [f"c{i}" for i in range(1000)]).add_axis("gene", ["a", "b"])
    w.set_vector("cell", "v", np.arange(1000, dtype="float64"))
    w.set_matrix("cell", "gene", "m", np.ones((1000, 2), "float32"))
    r = backend.reader(w)
    v = r.get_np_vector("cell", "v")
    m = r.get_np_matrix("cell", "gene", "m")
    for arr in (v, m):
        assert not arr.flags.writeable
        assert not arr.flags.owndata
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 1
    del v, m
