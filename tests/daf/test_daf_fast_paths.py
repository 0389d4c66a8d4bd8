"""The fast paths of ZarrDaf writes and closes keep every check and every guarantee.

* Closing the last handle of a ZIP while arrays read from it are alive runs no full garbage
  collection (its cost grows with the process' objects); the store lingers, and its lock goes
  once nothing maps it.
* Sparse values are checked in one pass (index pointer, then scipy's canonical-format scan,
  then the slices' end points): out-of-range indices anywhere are still refused.
* 1-based indices are written straight into the ZIP entry: the stored bytes are exact.
* A large row-major dense matrix is transposed tile by tile where it is stored (into the ZIP
  entry, or block by block into the directory's file): the stored column-major bytes are
  exact at every tile and block edge, an all-zero one is still elided (v3).
* Hostile stored indices (0, past the axis, a column pointer going back or not ending at the
  values' count) are refused with a ``DafFormatError`` naming the property.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import MmapZipStore
from dafzarr._core.daf import backends_zip as _backends_zip
from dafzarr._core.daf import values as _values
from dafzarr.errors import DafFormatError


def _full_collections_during(fn: Any) -> list[int]:
    """The generations of the garbage collections that ran during ``fn()``."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        fn()
    finally:
        gc.callbacks.remove(note)
    return [g for g in seen if g == 2]


def test_closing_with_live_views_runs_no_full_collection(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["x", "y"])
    d.set_matrix("gene", "cell", "m", sp.csc_matrix(np.arange(6.0).reshape(2, 3)), relayout=False)
    d.close()
    r = dafzarr.open_daf(path)
    m = r.get_np_matrix("gene", "cell", "m")  # its data is a view of the archive
    assert _full_collections_during(r.close) == []
    assert str(path) in _backends_zip._REGISTRY  # lingers while the view is alive
    assert m.toarray().tolist() == [[0, 1, 2], [3, 4, 5]]
    del m
    gc.collect()
    # A writable open of a lingering read-only store closes it and reopens for writing.
    w = dafzarr.open_daf(path, "r+")
    w.set_scalar("s", 1)
    w.close()
    assert str(path) not in _backends_zip._REGISTRY
    with MmapZipStore(path, "r+") as store:  # no view was alive: the lock was released
        assert "scalars/s/0" in store


def test_writable_store_closes_at_once_without_views(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    w = dafzarr.open_daf(path, "w")
    w.add_axis("cell", ["a", "b"]).set_vector("cell", "v", [1.0, 2.0])
    assert w.get_np_vector("cell", "v").tolist() == [1.0, 2.0]  # a view, dropped at once
    w.close()
    assert str(path) not in _backends_zip._REGISTRY
    with MmapZipStore(path, "r+") as store:
        assert "vectors/cell/v/0" in store or "vectors/cell/v/c/0" in store


def _csc(indices: list[int], indptr: list[int], shape: tuple[int, int]) -> sp.csc_matrix:
    data = np.arange(1.0, len(indices) + 1.0)
    return sp.csc_matrix(
        (data, np.array(indices, np.int32), np.array(indptr, np.int32)), shape=shape
    )


@pytest.mark.parametrize(
    ("indices", "indptr", "why"),
    [
        ([0, 1, 5, 2], [0, 4, 4], "indices must be < 3"),  # out of range mid-column, unsorted
        ([0, 1, 2, 7], [0, 4, 4], "indices must be < 3"),  # sorted: the column's last one
        ([-1, 0, 1, 2], [0, 4, 4], "indices must be >= 0"),  # sorted: the column's first one
        ([0, 2, -3, 1], [0, 2, 4], "indices must be >= 0"),  # unsorted second column
        ([0, 1, 0, 1], [0, 3, 2], "non-decreasing"),  # index pointer goes back
    ],
    ids=["mid-unsorted", "last-sorted", "first-sorted", "negative-unsorted", "indptr"],
)
@pytest.mark.parametrize("rel", [None, "x.daf.zarr.zip"])
def test_sparse_values_out_of_range_are_still_refused(
    tmp_path: Path, rel: str | None, indices: list[int], indptr: list[int], why: str
) -> None:
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(tmp_path / rel, "w")
    d.add_axis("gene", ["a", "b", "c"]).add_axis("cell", ["x", "y"])
    bad = _csc(indices, indptr, (3, 2))
    with pytest.raises(DafFormatError, match=rf"(?s){why}.*matrix 'm'"):
        d.set_matrix("gene", "cell", "m", bad, relayout=False)
    with pytest.raises(DafFormatError, match=rf"(?s){why}.*matrix 'm'"):
        d.set_matrix("cell", "gene", "m", bad.T, relayout=False)  # the CSR of it
    assert d.matrices_set("gene", "cell") == set()


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
@pytest.mark.parametrize("indtype", [None, "uint16", "uint32"])
def test_one_based_indices_are_stored_exactly(
    tmp_path: Path, rel: str | None, indtype: str | None
) -> None:
    rng = np.random.default_rng(5)
    m = sp.random(700, 600, density=0.05, format="csc", dtype=np.float32, rng=rng)
    assert m.has_canonical_format
    dup = _csc([2, 0, 2, 1], [0, 3, 4], (3, 2))  # unsorted, with a duplicate: summed
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(tmp_path / rel, "w")
    d.add_axis("gene", [f"g{i}" for i in range(700)])
    d.add_axis("cell", [f"c{i}" for i in range(600)])
    d.add_axis("g3", ["a", "b", "c"]).add_axis("c2", ["x", "y"])
    d.set_matrix("gene", "cell", "m", m, relayout=True, indtype=indtype)
    d.set_matrix("g3", "c2", "dup", dup, relayout=False, indtype=indtype)
    m64 = sp.csc_matrix(
        (m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)), shape=m.shape
    )
    d.set_matrix("gene", "cell", "m64", m64, relayout=False, indtype=indtype)
    assert dup.indices.tolist() == [2, 0, 2, 1]  # the caller's arrays are left alone
    if rel is not None:
        d.close()
        d = dafzarr.open_daf(tmp_path / rel)
    got = d.get_np_matrix("gene", "cell", "m")
    assert (got != m).nnz == 0 and got.indices.tolist() == m.indices.tolist()
    assert (d.get_np_matrix("cell", "gene", "m") != m.T).nnz == 0
    assert (d.get_np_matrix("gene", "cell", "m64") != m).nnz == 0
    assert d.get_np_matrix("g3", "c2", "dup").toarray().tolist() == [[2, 0], [0, 4], [4, 0]]
    d.close()


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
def test_sparse_indices_default_to_the_smallest_unsigned_type_that_holds_them(
    tmp_path: Path, rel: str | None
) -> None:
    """A scipy matrix as scipy makes it (int32 indices) is stored with uint32 1-based
    indices, as DataAxesFormats.jl chooses, not int64; so is a sparse vector."""
    m = sp.random(
        300, 200, density=0.05, format="csr", dtype=np.float32, rng=np.random.default_rng(2)
    )
    assert m.indices.dtype == np.int32
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(tmp_path / rel, "w")
    d.add_axis("gene", [f"g{i}" for i in range(300)])
    d.add_axis("cell", [f"c{i}" for i in range(200)])
    d.set_matrix("gene", "cell", "m", m)
    d.set_vector(
        "cell", "v", sp.random(1, 200, density=0.2, format="csr", rng=np.random.default_rng(3))
    )
    for layout in ("gene/cell", "cell/gene"):
        for part in ("colptr", "rowval"):
            stored = d._read_array(f"matrices/{layout}/m/{part}")  # type: ignore[attr-defined]
            assert stored.dtype == np.dtype("<u4"), (layout, part, stored.dtype)
    assert d._read_array("vectors/cell/v/nzind").dtype == np.dtype("<u4")  # type: ignore[attr-defined]
    d.close()


@pytest.mark.parametrize("stored", ["uint16", "uint32", "int32", "int64", "uint64"])
def test_stored_indices_of_any_type_read_into_scipy_int32_indices(
    tmp_path: Path, stored: str
) -> None:
    """Julia's default SparseMatrixCSC stores Int64 indices: read back, they arrive as the
    int32 indices scipy keeps for a matrix of this size, written in one pass (scipy neither
    scans them for their type nor copies them)."""
    m = sp.random(
        400, 300, density=0.05, format="csc", dtype=np.float64, rng=np.random.default_rng(4)
    )
    path = tmp_path / "x.daf.zarr.zip"
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("gene", [f"g{i}" for i in range(400)])
        d.add_axis("cell", [f"c{i}" for i in range(300)])
        d.set_matrix("gene", "cell", "m", m, relayout=False, indtype=stored)
    with dafzarr.open_daf(path) as d:
        got = d.get_np_matrix("gene", "cell", "m")
        assert got.indices.dtype == got.indptr.dtype == np.int32
        assert np.array_equal(got.indices, m.indices) and np.array_equal(got.indptr, m.indptr)
        assert np.array_equal(got.data, m.data)
        rebuilt = sp.csc_matrix((got.data, got.indices, got.indptr), shape=got.shape, copy=False)
        assert np.shares_memory(rebuilt.indices, got.indices)  # scipy keeps them as given
        del got, rebuilt


def _backend_daf(tmp_path: Path, rel: str | None, zarr_format: int = 2) -> Any:
    if rel is None:
        return dafzarr.memory_daf(zarr_format=zarr_format)
    return dafzarr.open_daf(tmp_path / rel, "w", zarr_format=zarr_format)


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "bool"])
def test_row_major_matrices_are_stored_column_major_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str | None, dtype: str
) -> None:
    # Small tiles and blocks, so that every edge case (partial tiles, partial blocks, one
    # row or one column) is crossed on small matrices.
    monkeypatch.setattr(_values, "_TRANSPOSE_MIN", 0)
    monkeypatch.setattr(_values, "_TILE", 7)
    monkeypatch.setattr(_values, "_STREAM_BYTES", 1000)
    monkeypatch.setattr(_values, "_PARALLEL_MIN", 64)
    rng = np.random.default_rng(11)
    shapes = {"a": (53, 40), "b": (1, 30), "c": (30, 1), "d": (13, 200)}
    d = _backend_daf(tmp_path, rel)
    values = {}
    for name, (nr, nc) in shapes.items():
        d.add_axis(f"{name}r", [str(i) for i in range(nr)])
        d.add_axis(f"{name}c", [str(i) for i in range(nc)])
        values[name] = (rng.random((nr, nc)) * 100).astype(dtype)
        assert values[name].flags.c_contiguous
        d.set_matrix(f"{name}r", f"{name}c", "m", values[name])
    if rel is not None:
        d.close()
        d = dafzarr.open_daf(tmp_path / rel)
    for name, value in values.items():
        got = d.get_np_matrix(f"{name}r", f"{name}c", "m")
        assert got.flags.f_contiguous and got.dtype == value.dtype
        assert np.array_equal(got, value), name
        assert np.array_equal(d.get_np_matrix(f"{name}c", f"{name}r", "m"), value.T), name
    d.close()
    if rel == "x.daf.zarr":  # the stored chunk is the transpose, byte for byte
        import zarr

        z = zarr.open_group(tmp_path / rel, mode="r")
        assert np.array_equal(z["matrices/ar/ac/m"][...], values["a"].T)


@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
def test_large_row_major_matrix_round_trips(tmp_path: Path, rel: str | None) -> None:
    # Above the size where the tiled transpose (and, for a ZIP, its threads) takes over.
    nr, nc = 1500, 1300
    assert nr * nc * 4 >= _values._TRANSPOSE_MIN and nr * nc * 4 >= _values._PARALLEL_MIN
    value = np.random.default_rng(3).random((nr, nc), dtype=np.float32)
    d = _backend_daf(tmp_path, rel)
    d.add_axis("r", [str(i) for i in range(nr)]).add_axis("c", [str(i) for i in range(nc)])
    d.set_matrix("r", "c", "m", value, relayout=False)
    if rel is not None:
        d.close()
        d = dafzarr.open_daf(tmp_path / rel)
    assert np.array_equal(d.get_np_matrix("r", "c", "m", relayout=False), value)
    d.close()


@pytest.mark.parametrize("rel", [None, "x.daf.zarr"])
def test_all_zero_transposed_matrix_is_elided_in_v3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str | None
) -> None:
    monkeypatch.setattr(_values, "_TRANSPOSE_MIN", 0)
    d = _backend_daf(tmp_path, rel, zarr_format=3)
    d.add_axis("r", ["a", "b", "c"]).add_axis("c", ["x", "y"])
    d.set_matrix("r", "c", "z", np.zeros((3, 2), np.float32), relayout=False)
    d.set_matrix("r", "c", "nz", np.array([[0, 0], [0, 1], [0, 0]], np.float32), relayout=False)
    keys = d._backend.keys_under("matrices/r/c")
    assert not any(k.startswith("matrices/r/c/z/c") for k in keys)
    assert any(k.startswith("matrices/r/c/nz/c") for k in keys)
    assert d.get_np_matrix("r", "c", "z").tolist() == [[0, 0], [0, 0], [0, 0]]
    assert d.get_np_matrix("r", "c", "nz").tolist() == [[0, 0], [0, 1], [0, 0]]
    d.close()


def _store_raw_sparse(d: Any, colptr: list[int], rowval: list[int]) -> None:
    """Overwrite the stored ``colptr``/``rowval`` of matrix ``gene x cell`` ``m``."""
    base = "matrices/gene/cell/m"
    for name, arr in (("colptr", colptr), ("rowval", rowval)):
        d._backend.delete_tree(f"{base}/{name}")
        a = np.array(arr, np.uint32)
        d._write(d._array_items(f"{base}/{name}", a, a.dtype))


@pytest.mark.parametrize(
    ("colptr", "rowval", "why"),
    [
        ([1, 3, 4], [1, 0, 2], r"rowval: stored index out of range 1..3 \(found 0"),
        ([1, 3, 4], [1, 4, 2], r"rowval: stored 1-based index 4 is out of range 1..3"),
        ([1, 3, 4], [1, 0xFFFF_FFFF, 2], r"rowval: stored (1-based )?index .*out of range"),
        ([1, 4, 3, 4], [1, 2, 3], r"colptr is not a valid 1-based CSC"),
        ([1, 3, 3], [1, 2, 3], r"colptr is not a valid 1-based CSC"),
        ([0, 3, 4], [1, 2, 3], r"colptr is not a valid 1-based CSC"),
    ],
    ids=["zero", "past-axis", "huge", "colptr-back", "colptr-short", "colptr-zero"],
)
@pytest.mark.parametrize("rel", [None, "x.daf.zarr", "x.daf.zarr.zip"])
def test_hostile_stored_indices_are_refused(
    tmp_path: Path, rel: str | None, colptr: list[int], rowval: list[int], why: str
) -> None:
    d = _backend_daf(tmp_path, rel)
    d.add_axis("gene", ["a", "b", "c"]).add_axis(
        "cell", ["x", "y"] + (["z"] if len(colptr) == 4 else [])
    )
    ncells = len(colptr) - 1
    d.set_matrix(
        "gene",
        "cell",
        "m",
        sp.csc_matrix(np.ones((3, ncells), np.float32)),
        relayout=False,
        indtype="uint32",
    )
    if rel == "x.daf.zarr.zip":  # rewrite the file: a ZIP store is append-only here
        d.close()
        d = dafzarr.open_daf(tmp_path / rel, "r+")
    _store_raw_sparse(d, colptr, rowval)
    nzval = np.arange(1, 4, dtype=np.float32)
    d._backend.delete_tree("matrices/gene/cell/m/nzval")
    d._write(d._array_items("matrices/gene/cell/m/nzval", nzval, nzval.dtype))
    with pytest.raises(DafFormatError, match=rf"(?s)matrices/gene/cell/m.*{why}"):
        d.get_np_matrix("gene", "cell", "m")
    d.close()


def _fill_faults(arr: np.ndarray[Any, Any]) -> int:
    """Minor page faults of the process while ``arr`` is filled with ones."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arr.fill(1)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise only")
def test_reserved_zip_entries_are_mapped_before_they_are_filled(tmp_path: Path) -> None:
    # A 16 MiB reservation: filled page by page through the mapping it would fault once per
    # 4 KiB page (4,096 faults); mapped ahead, the fill faults at most at its two ends.
    nbytes = 16 << 20
    pages = nbytes // 4096
    with MmapZipStore(tmp_path / "r.zip", "w") as store:
        backend = _backends_zip.ZipBackend(store, "", read_only=False)
        with backend.transaction():
            arr = backend.reserve("big", nbytes)
            faults = _fill_faults(arr)
            del arr
            backend.seal("big")
    assert faults < pages // 4, faults
    import zipfile

    with zipfile.ZipFile(tmp_path / "r.zip") as zf:
        assert zf.testzip() is None
        assert zf.read("big") == b"\x01" * nbytes


def test_large_sparse_and_dense_zip_writes_pass_unzip(tmp_path: Path) -> None:
    # Above the populate threshold: 1-based indices and a transposed dense matrix filled
    # into populated reservations; the archive's CRCs are right (zipfile and unzip -t).
    import shutil
    import subprocess
    import zipfile

    rng = np.random.default_rng(9)
    nr, nc = 700, 600
    dense = rng.random((nr, nc), dtype=np.float32)
    sparse = sp.random(nr, nc, density=0.8, format="csr", dtype=np.float32, random_state=9)
    path = tmp_path / "big.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    d.add_axis("r", [str(i) for i in range(nr)]).add_axis("c", [str(i) for i in range(nc)])
    d.set_matrix("r", "c", "dense", dense, relayout=False)
    d.set_matrix("c", "r", "sparse", sparse.T, relayout=False, indtype="uint32")
    d.close()
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    if shutil.which("unzip"):
        subprocess.run(["unzip", "-tqq", str(path)], check=True)
    d = dafzarr.open_daf(path)
    assert np.array_equal(d.get_np_matrix("r", "c", "dense", relayout=False), dense)
    got = d.get_np_matrix("c", "r", "sparse", relayout=False)
    assert (got != sparse.T).nnz == 0
    d.close()
