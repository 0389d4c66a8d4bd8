"""The fast paths of ZarrDaf writes and closes keep every check and every guarantee.

* Closing the last handle of a ZIP while arrays read from it are alive runs no full garbage
  collection (its cost grows with the process' objects); the store lingers, and its lock goes
  once nothing maps it.
* Sparse values are checked in one pass (index pointer, then scipy's canonical-format scan,
  then the slices' end points): out-of-range indices anywhere are still refused.
* 1-based indices are written straight into the ZIP entry: the stored bytes are exact.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import MmapZipStore
from dafzarr.daf import _backends_zip
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
    d.set_matrix("gene", "cell", "m", sp.csc_matrix(np.arange(6.0).reshape(2, 3)),
                 relayout=False)
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
    return sp.csc_matrix((data, np.array(indices, np.int32), np.array(indptr, np.int32)),
                         shape=shape)


@pytest.mark.parametrize(("indices", "indptr", "why"), [
    ([0, 1, 5, 2], [0, 4, 4], "indices must be < 3"),  # out of range mid-column, unsorted
    ([0, 1, 2, 7], [0, 4, 4], "indices must be < 3"),  # sorted: the column's last one
    ([-1, 0, 1, 2], [0, 4, 4], "indices must be >= 0"),  # sorted: the column's first one
    ([0, 2, -3, 1], [0, 2, 4], "indices must be >= 0"),  # unsorted second column
    ([0, 1, 0, 1], [0, 3, 2], "non-decreasing"),  # index pointer goes back
], ids=["mid-unsorted", "last-sorted", "first-sorted", "negative-unsorted", "indptr"])
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
    m64 = sp.csc_matrix((m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)),
                        shape=m.shape)
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
