"""Benchmarks of ZarrDaf against anndata (``.h5ad`` and ``.zarr``) on the same data.

Run from the project root::

    python -m benchmarks.bench_daf [--quick] [--only time,memory]

The data: a cells x genes sparse UMI matrix (100,000 x 30,000, about 2 % dense, float32;
``--quick``: 10,000 x 30,000), 20 float32 per-cell vectors and a dense 50-column per-cell
matrix (a PCA), random, with a fresh seed each run (printed).

Suites (peers alternate within each round, same data, same process):

* **write**: ZarrDaf directory, ZarrDaf ZIP, anndata ``write_h5ad``, anndata ``write_zarr``,
  and the floor: ``np.save`` of the same arrays (the UMIs' three arrays, the axes' names, the
  vectors and the PCA). Then the UMIs alone (the two axes and the sparse matrix) in ZarrDaf
  next to ``np.save`` of the UMIs' arrays and the names, and next to ``np.save`` +
  ``os.fsync`` of each file (neither ZarrDaf nor ``np.save`` syncs).
* **write dense**: a dense 20,000 x 20,000 float32 matrix (``--quick``: 4,000 x 4,000), as
  ZarrDaf directory and ZIP, from a row-major (C-ordered) array (the column-major layout is
  then its transpose) and from a Fortran-ordered one (the stored bytes as they are), next to
  ``np.save`` of the same array (and with ``os.fsync``), and the machine's limits in memory:
  a plain copy of the matrix and the transpose kernel alone (one and two threads).
* **write growth**: the UMIs and axes write (directory, ZIP, ``np.save``) at 10^6, 10^7 and
  10^8 stored values (``--quick``: 10^5, 10^6), each size in its own child process: median
  time, time per stored value and peak resident memory above the input.

Every timed write starts with the system's dirty pages written back (``os.sync``, untimed):
a writer otherwise pays, at random, for the writeback of the previous writers' output.
* **read sparse**: the whole UMI matrix as a scipy CSR cells x genes matrix (each ZarrDaf
  read opens the data set, reads and closes it), next to one numpy pass over the indices
  (``indices - 1``, the least a 1-based format must do).
* **read vector** / **read flat matrix**: one per-cell vector; the dense PCA matrix.

ZarrDaf stores the UMIs as the Daf matrix ``gene x cell`` (column-major, so its CSC arrays are
exactly the cells x genes CSR that anndata stores) with ``set_matrix``'s default index type
(uint32 here), no relayout; the sparse read also reads a ZIP that holds them as Int64 and as
UInt64 (what Julia's ``SparseMatrixCSC`` writes by default).

The **memory** part runs each writer (and the in-place ``empty_sparse_matrix`` fill of a ZIP)
in a child process and reports its peak resident memory above the memory it had before the
write (which already held the input data), next to the size of the data.

Speed is never asserted: the script prints figures, ratios and whether targets are met.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, ClassVar

import h5py
import numpy as np
import scipy.sparse as sp
import zarr

import dafzarr
from dafzarr._transpose import transpose_columns

from . import common as c

N_VECTORS = 20
N_PCS = 50


def sizes() -> tuple[int, int, float]:
    return (10_000, 30_000, 0.02) if c.quick() else (100_000, 30_000, 0.02)


def column_counts(rng: np.random.Generator, cells: int, genes: int, density: float) -> Any:
    """Stored values per cell (a row of the cells x genes CSR)."""
    return rng.binomial(genes, density, size=cells)


def rows_block(rng: np.random.Generator, counts: Any, genes: int) -> tuple[Any, Any]:
    """Sorted unique gene indices and UMI values for a block of cells with ``counts``."""
    cells = len(counts)
    owner = np.repeat(np.arange(cells, dtype=np.int64), counts)
    keys = owner * genes + rng.integers(0, genes, size=owner.size)
    keys.sort()
    dup = np.empty(keys.size, bool)
    dup[:1] = False
    np.equal(keys[1:], keys[:-1], out=dup[1:])
    # Re-draw duplicates inside their row until none is left (rare at 2 % density).
    while dup.any():
        idx = np.flatnonzero(dup)
        keys[idx] = (keys[idx] // genes) * genes + rng.integers(0, genes, size=idx.size)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        dup[:] = False
        np.equal(keys[1:], keys[:-1], out=dup[1:])
    values = rng.integers(1, 20, size=keys.size).astype(np.float32)
    return (keys % genes).astype(np.int32), values


def make_data(the_seed: int) -> dict[str, Any]:
    cells, genes, density = sizes()
    rng = np.random.default_rng(the_seed)
    counts = column_counts(rng, cells, genes, density)
    indices, values = rows_block(rng, counts, genes)
    indptr = np.zeros(cells + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    x = sp.csr_matrix((values, indices, indptr), shape=(cells, genes))
    vectors = {f"v{i:02d}": rng.random(cells, dtype=np.float32) for i in range(N_VECTORS)}
    pca = rng.random((cells, N_PCS), dtype=np.float32)
    return {"X": x, "vectors": vectors, "pca": pca, "cells": [f"c{i}" for i in range(cells)],
            "genes": [f"g{i}" for i in range(genes)]}


def data_bytes(x: sp.csr_matrix) -> int:
    return int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)


# --- Writers and readers (shared by the timed suite and the memory children) ---------------------


def write_daf(path: str, d: dict[str, Any], indtype: str | None = None) -> None:
    """The data set as a user writes it: ``set_matrix`` with its default index type, unless
    ``indtype`` asks for another (as Julia's ``SparseMatrixCSC`` writes Int64)."""
    daf = dafzarr.open_daf(path, "w")
    daf.add_axis("cell", d["cells"]).add_axis("gene", d["genes"])
    daf.add_axis("pc", [str(i) for i in range(N_PCS)])
    for name, v in d["vectors"].items():
        daf.set_vector("cell", name, v)
    daf.set_matrix("cell", "pc", "pca", d["pca"], relayout=False)
    daf.set_matrix("gene", "cell", "UMIs", d["X"].T, relayout=False, indtype=indtype)
    daf.close()


def write_daf_umis(path: str, d: dict[str, Any]) -> None:
    """The UMIs alone: both axes and the sparse matrix (what ``write_npy`` saves)."""
    daf = dafzarr.open_daf(path, "w")
    daf.add_axis("cell", d["cells"]).add_axis("gene", d["genes"])
    daf.set_matrix("gene", "cell", "UMIs", d["X"].T, relayout=False)
    daf.close()


def write_npy(path: str, d: dict[str, Any]) -> None:
    """The floor a writer is measured against: ``np.save`` of the UMIs' data, indices and
    index pointer and of the axes' names, one ``.npy`` file each in directory ``path``."""
    os.makedirs(path)
    x = d["X"]
    for name, arr in (("data", x.data), ("indices", x.indices), ("indptr", x.indptr),
                      ("cells", np.asarray(d["cells"])), ("genes", np.asarray(d["genes"]))):
        np.save(os.path.join(path, f"{name}.npy"), arr)


def write_npy_all(path: str, d: dict[str, Any]) -> None:
    """:func:`write_npy`, then ``np.save`` of the vectors and of the PCA: every array of the
    data set, as :func:`write_daf` writes them."""
    write_npy(path, d)
    for name, arr in (*d["vectors"].items(), ("pca", d["pca"])):
        np.save(os.path.join(path, f"{name}.npy"), arr)


def write_npy_fsync(path: str, d: dict[str, Any]) -> None:
    """:func:`write_npy`, then ``os.fsync`` of each file and of the directory: the same
    files made durable (what ``np.save`` alone does not do)."""
    write_npy(path, d)
    fsync_tree(path)


def fsync_tree(path: str) -> None:
    """fsync every file in directory ``path``, then the directory."""
    for name in sorted(os.listdir(path)):
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _adata(d: dict[str, Any]) -> Any:
    import anndata
    import pandas as pd

    obs = pd.DataFrame(d["vectors"], index=d["cells"])
    ad = anndata.AnnData(X=d["X"], obs=obs, var=pd.DataFrame(index=d["genes"]))
    ad.obsm["X_pca"] = d["pca"]
    return ad


def write_h5ad(path: str, d: dict[str, Any]) -> None:
    _adata(d).write_h5ad(path)


def write_anndata_zarr(path: str, d: dict[str, Any]) -> None:
    _adata(d).write_zarr(path)


def read_daf_sparse(path: str) -> Any:
    daf = dafzarr.open_daf(path)
    x = daf.get_np_matrix("gene", "cell", "UMIs").T  # CSR cells x genes, no conversion
    daf.close()
    return x


def read_h5ad_sparse(path: str) -> Any:
    from anndata.io import read_elem

    with h5py.File(path, "r") as f:
        return read_elem(f["X"])


def read_anndata_zarr_sparse(path: str) -> Any:
    from anndata.io import read_elem

    return read_elem(zarr.open_group(path, mode="r")["X"])


# --- Timed suites -----------------------------------------------------------------------------------


_ratio_target = c.ratio_target


def _view_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    us = s.median / s.amount * 1e6
    return f"O(1) view (< 1 ms: {us:.0f} µs)", us < 1000


def _sparse_read_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    h5ad, h5ad_ok = _ratio_target("anndata .h5ad", 3)(s, peers)
    npy, npy_ok = _ratio_target("numpy: indices - 1", 2, within=True)(s, peers)
    return f"{h5ad}; {npy}", h5ad_ok and npy_ok


# The data set of the run, from a seed the report prints (``--seed`` repeats a run).
dataset = c.SeededData(make_data)
seed = dataset.seed


def _size(s: Any) -> str:
    cells, genes, _density = sizes()
    return f"{cells:,} x {genes:,}, nnz {s.nnz:,}"


class _Suite(c.WriterSuite):
    temp_prefix = "dafzarr-bench-daf-"

    def setup(self) -> None:
        self._mktemp()
        self.d = dataset()
        self.nnz = self.d["X"].nnz
        self.nbytes = data_bytes(self.d["X"])


class Write(_Suite):
    """Write the whole data set (sparse UMIs, 20 vectors, PCA)."""

    label = "write"
    baseline = ("anndata .h5ad",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}
    _outputs: ClassVar[dict[str, str]] = {
        "time_daf_dir": "w.daf.zarr", "time_daf_zip": "w.daf.zarr.zip",
        "time_h5ad": "w.h5ad", "time_anndata_zarr": "w.zarr", "time_npy": "w.npy",
        "time_umis_daf_dir": "u.daf.zarr", "time_umis_daf_zip": "u.daf.zarr.zip",
        "time_umis_npy": "u.npy", "time_umis_npy_fsync": "uf.npy",
    }

    @c.bench("write data set", "ZarrDaf directory", c.MB, lambda s: s.nbytes, size=_size,
             target=_ratio_target("np.save (data set)", 1.5, within=True))
    def time_daf_dir(self) -> None:
        write_daf(self.p("w.daf.zarr"), self.d)

    @c.bench("write data set", "ZarrDaf ZIP", c.MB, lambda s: s.nbytes, size=_size,
             target=_ratio_target("np.save (data set)", 1.5, within=True))
    def time_daf_zip(self) -> None:
        write_daf(self.p("w.daf.zarr.zip"), self.d)

    @c.bench("write data set", "anndata .h5ad", c.MB, lambda s: s.nbytes, size=_size)
    def time_h5ad(self) -> None:
        write_h5ad(self.p("w.h5ad"), self.d)

    @c.bench("write data set", "anndata .zarr", c.MB, lambda s: s.nbytes, size=_size)
    def time_anndata_zarr(self) -> None:
        write_anndata_zarr(self.p("w.zarr"), self.d)

    @c.bench("write data set", "np.save (data set)", c.MB, lambda s: s.nbytes, size=_size)
    def time_npy(self) -> None:
        write_npy_all(self.p("w.npy"), self.d)

    @c.bench("write UMIs + axes", "ZarrDaf directory", c.MB, lambda s: s.nbytes, size=_size,
             target=_ratio_target("np.save", 1.5, within=True))
    def time_umis_daf_dir(self) -> None:
        write_daf_umis(self.p("u.daf.zarr"), self.d)

    @c.bench("write UMIs + axes", "ZarrDaf ZIP", c.MB, lambda s: s.nbytes, size=_size,
             target=_ratio_target("np.save", 1.5, within=True))
    def time_umis_daf_zip(self) -> None:
        write_daf_umis(self.p("u.daf.zarr.zip"), self.d)

    @c.bench("write UMIs + axes", "np.save", c.MB, lambda s: s.nbytes, size=_size)
    def time_umis_npy(self) -> None:
        write_npy(self.p("u.npy"), self.d)

    @c.bench("write UMIs + axes", "np.save + fsync", c.MB, lambda s: s.nbytes, size=_size)
    def time_umis_npy_fsync(self) -> None:
        write_npy_fsync(self.p("uf.npy"), self.d)


def dense_side() -> int:
    return 4_000 if c.quick() else 20_000


class WriteDense(_Suite):
    """Write one dense float32 matrix (ZarrDaf stores it column-major)."""

    label = "write dense"
    baseline = ("np.save",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 3}
    _outputs: ClassVar[dict[str, str]] = {
        "time_dir_c": "c.daf.zarr", "time_zip_c": "c.daf.zarr.zip",
        "time_dir_f": "f.daf.zarr", "time_zip_f": "f.daf.zarr.zip", "time_npy": "d.npy",
        "time_npy_fsync": "df.npy",
    }

    def setup(self) -> None:
        self._mktemp()
        n = dense_side()
        self.c_order = np.random.default_rng(seed()).random((n, n), dtype=np.float32)
        self.f_order = np.asfortranarray(self.c_order)
        self.names = [f"e{i}" for i in range(n)]
        self.nbytes = self.c_order.nbytes
        self.scratch = np.empty_like(self.c_order)
        self.scratch.fill(0)  # its pages are mapped before the timed copies

    def teardown(self) -> None:
        del self.c_order, self.f_order, self.scratch
        super().teardown()

    def prepare(self, name: str) -> None:
        # Every output goes (not only the one the sample rewrites): at full size each is
        # 1.6 GB and the ZIP ones reserve room for their entry while they are written.
        c.settle_writeback()
        for out in self._outputs.values():
            c.remove(self.p(out))

    def _write(self, path: str, value: Any) -> None:
        daf = dafzarr.open_daf(path, "w")
        daf.add_axis("row", self.names).add_axis("column", self.names)
        daf.set_matrix("row", "column", "m", value, relayout=False)
        daf.close()

    def _size(self) -> str:
        n = dense_side()
        return f"{n:,} x {n:,} float32"

    @c.bench("write dense matrix", "ZarrDaf directory, row-major input", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size(),
             target=_ratio_target("np.save", 1.3, within=True))
    def time_dir_c(self) -> None:
        self._write(self.p("c.daf.zarr"), self.c_order)

    @c.bench("write dense matrix", "ZarrDaf ZIP, row-major input", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size(),
             target=_ratio_target("np.save", 1.3, within=True))
    def time_zip_c(self) -> None:
        self._write(self.p("c.daf.zarr.zip"), self.c_order)

    @c.bench("write dense matrix", "ZarrDaf directory, Fortran-ordered input", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size(),
             target=_ratio_target("np.save", 1.3, within=True))
    def time_dir_f(self) -> None:
        self._write(self.p("f.daf.zarr"), self.f_order)

    @c.bench("write dense matrix", "ZarrDaf ZIP, Fortran-ordered input", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size(),
             target=_ratio_target("np.save", 1.3, within=True))
    def time_zip_f(self) -> None:
        self._write(self.p("f.daf.zarr.zip"), self.f_order)

    @c.bench("write dense matrix", "np.save", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_npy(self) -> None:
        os.makedirs(self.p("d.npy"))
        np.save(os.path.join(self.p("d.npy"), "m.npy"), self.c_order)

    @c.bench("write dense matrix", "np.save + fsync", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_npy_fsync(self) -> None:
        os.makedirs(self.p("df.npy"))
        np.save(os.path.join(self.p("df.npy"), "m.npy"), self.c_order)
        fsync_tree(self.p("df.npy"))

    # The limits of the machine, in memory (no file): a plain copy of the matrix and the
    # transpose a row-major input needs, by the kernel ZarrDaf runs (one thread).

    @c.bench("write dense matrix", "limit: memcpy (np.copyto, in memory)", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_memcpy(self) -> None:
        np.copyto(self.scratch, self.c_order)

    @c.bench("write dense matrix", "limit: transpose kernel (one thread, in memory)", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_transpose(self) -> None:
        n = self.c_order.shape[1]
        transpose_columns(self.c_order, self.scratch, 0, n)

    @c.bench("write dense matrix", "limit: transpose kernel (two threads, in memory)", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_transpose_2(self) -> None:
        n = self.c_order.shape[1]
        transpose_columns(self.c_order, self.scratch, 0, n, 2)


class Read(_Suite):
    """Warm reads (page cache) of what the writers stored."""

    label = "read"
    baseline = ("anndata .h5ad",)

    def setup(self) -> None:
        super().setup()
        write_daf(self.p("r.daf.zarr"), self.d)
        write_daf(self.p("r.daf.zarr.zip"), self.d)
        write_daf(self.p("r64.daf.zarr.zip"), self.d, "int64")
        write_daf(self.p("ru64.daf.zarr.zip"), self.d, "uint64")
        write_h5ad(self.p("r.h5ad"), self.d)
        write_anndata_zarr(self.p("r.zarr"), self.d)
        x = self.d["X"]
        for reader, name in ((read_daf_sparse, "r.daf.zarr"), (read_daf_sparse, "r.daf.zarr.zip"),
                             (read_daf_sparse, "r64.daf.zarr.zip"),
                             (read_daf_sparse, "ru64.daf.zarr.zip"),
                             (read_h5ad_sparse, "r.h5ad"),
                             (read_anndata_zarr_sparse, "r.zarr")):
            got = reader(self.p(name))
            if got.shape != x.shape or (got != x).nnz:
                raise RuntimeError(f"{name}: the sparse matrix does not round-trip")
        self.daf_dir = dafzarr.open_daf(self.p("r.daf.zarr"))
        self.daf_zip = dafzarr.open_daf(self.p("r.daf.zarr.zip"))
        self.calls = 1000

    def teardown(self) -> None:
        self.daf_dir.close()
        self.daf_zip.close()
        super().teardown()

    @c.bench("read sparse matrix", "ZarrDaf directory", c.MB, lambda s: s.nbytes, size=_size,
             target=_sparse_read_target)
    def time_sparse_daf_dir(self) -> None:
        read_daf_sparse(self.p("r.daf.zarr"))

    @c.bench("read sparse matrix", "ZarrDaf ZIP", c.MB, lambda s: s.nbytes, size=_size,
             target=_sparse_read_target)
    def time_sparse_daf_zip(self) -> None:
        read_daf_sparse(self.p("r.daf.zarr.zip"))

    @c.bench("read sparse matrix", "ZarrDaf ZIP, Int64 indices", c.MB, lambda s: s.nbytes,
             size=_size, target=_sparse_read_target)
    def time_sparse_daf_zip_int64(self) -> None:
        read_daf_sparse(self.p("r64.daf.zarr.zip"))

    @c.bench("read sparse matrix", "ZarrDaf ZIP, UInt64 indices", c.MB, lambda s: s.nbytes,
             size=_size, target=_sparse_read_target)
    def time_sparse_daf_zip_uint64(self) -> None:
        read_daf_sparse(self.p("ru64.daf.zarr.zip"))

    @c.bench("read sparse matrix", "numpy: indices - 1", c.MB, lambda s: s.nbytes, size=_size)
    def time_sparse_numpy_pass(self) -> None:
        np.subtract(self.d["X"].indices, 1)

    @c.bench("read sparse matrix", "anndata .h5ad", c.MB, lambda s: s.nbytes, size=_size)
    def time_sparse_h5ad(self) -> None:
        read_h5ad_sparse(self.p("r.h5ad"))

    @c.bench("read sparse matrix", "anndata .zarr", c.MB, lambda s: s.nbytes, size=_size)
    def time_sparse_anndata_zarr(self) -> None:
        read_anndata_zarr_sparse(self.p("r.zarr"))

    @c.bench("read dense vector", "ZarrDaf directory", c.PER_CALL, lambda s: s.calls,
             target=_view_target)
    def time_vector_daf_dir(self) -> None:
        for _ in range(self.calls):
            self.daf_dir.get_np_vector("cell", "v07")

    @c.bench("read dense vector", "ZarrDaf ZIP", c.PER_CALL, lambda s: s.calls,
             target=_view_target)
    def time_vector_daf_zip(self) -> None:
        for _ in range(self.calls):
            self.daf_zip.get_np_vector("cell", "v07")

    @c.bench("read dense vector", "anndata .h5ad", c.PER_CALL, lambda s: 20)
    def time_vector_h5ad(self) -> None:
        from anndata.io import read_elem

        with h5py.File(self.p("r.h5ad"), "r") as f:
            for _ in range(20):
                read_elem(f["obs/v07"])

    @c.bench("read flat matrix", "ZarrDaf directory", c.PER_CALL, lambda s: s.calls,
             target=_view_target)
    def time_flat_daf_dir(self) -> None:
        for _ in range(self.calls):
            self.daf_dir.get_np_matrix("cell", "pc", "pca")

    @c.bench("read flat matrix", "ZarrDaf ZIP", c.PER_CALL, lambda s: s.calls,
             target=_view_target)
    def time_flat_daf_zip(self) -> None:
        for _ in range(self.calls):
            self.daf_zip.get_np_matrix("cell", "pc", "pca")

    @c.bench("read flat matrix", "anndata .h5ad", c.PER_CALL, lambda s: 5)
    def time_flat_h5ad(self) -> None:
        from anndata.io import read_elem

        with h5py.File(self.p("r.h5ad"), "r") as f:
            for _ in range(5):
                read_elem(f["obsm/X_pca"])


# --- Peak memory (child processes) -------------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _fill_in_place(path: str, the_seed: int) -> tuple[int, int]:
    """Write the UMIs with empty_sparse_matrix on a ZIP, generating cells block by block.

    Returns the RSS right before the fill and the size of the filled data."""
    cells, genes, density = sizes()
    rng = np.random.default_rng(the_seed)
    counts = column_counts(rng, cells, genes, density)
    daf = dafzarr.open_daf(path, "w")
    daf.add_axis("cell", [f"c{i}" for i in range(cells)])
    daf.add_axis("gene", [f"g{i}" for i in range(genes)])
    nnz = int(counts.sum())
    import gc

    gc.collect()
    c.reset_peak_rss()
    before = _rss()
    with daf.empty_sparse_matrix("gene", "cell", "UMIs", "float32", nnz) as (colptr, rowval, val):
        colptr[0] = 1
        np.cumsum(counts, out=colptr[1:])
        colptr[1:] += 1
        start = 0
        for lo in range(0, cells, 200):  # small blocks: the generator's own memory stays small
            block = counts[lo : lo + 200]
            idx, v = rows_block(rng, block, genes)
            # Duplicates were re-drawn, so each cell keeps exactly its count.
            rowval[start : start + idx.size] = idx + 1
            val[start : start + idx.size] = v
            start += idx.size
    daf.close()
    return before, nnz * 8 + (cells + 1) * 4


def child(task: str, path: str, the_seed: int) -> None:
    """Run one writer and print its memory figures as JSON."""
    dataset.set_seed(the_seed)
    if task == "fill":
        import gc

        before, final = _fill_in_place(path, the_seed)
        peak = c.peak_rss()
        print(json.dumps({"task": task, "before": before, "peak": peak, "data": final}))
        return
    d = make_data(the_seed)
    writers = {"daf-dir": write_daf, "daf-zip": write_daf, "h5ad": write_h5ad,
               "anndata-zarr": write_anndata_zarr}
    readers = {"read-daf-zip": read_daf_sparse, "read-h5ad": read_h5ad_sparse}
    if task in readers:
        (write_daf if task == "read-daf-zip" else write_h5ad)(path, d)
        x_bytes = data_bytes(d["X"])
        del d
        import gc

        gc.collect()
        c.reset_peak_rss()
        before = _rss()
        x = readers[task](path)
        print(json.dumps({"task": task, "before": before, "peak": c.peak_rss(), "data": x_bytes}))
        del x
        return
    import gc

    gc.collect()
    c.reset_peak_rss()
    before = _rss()
    writers[task](path, d)
    print(json.dumps({"task": task, "before": before, "peak": c.peak_rss(),
                      "data": data_bytes(d["X"])}))


def memory_report(the_seed: int) -> str:
    rows = ["| task | RSS before | peak above that | data size | ratio |",
            "|---|---|---|---|---|"]
    labels = {
        "fill": "ZarrDaf ZIP, empty_sparse_matrix fill (no input matrix held)",
        "daf-dir": "ZarrDaf directory write", "daf-zip": "ZarrDaf ZIP write",
        "h5ad": "anndata write_h5ad", "anndata-zarr": "anndata write_zarr",
        "read-daf-zip": "ZarrDaf ZIP read of the UMIs", "read-h5ad": "anndata .h5ad read of X",
    }
    suffix = {"fill": ".daf.zarr.zip", "daf-dir": ".daf.zarr", "daf-zip": ".daf.zarr.zip",
              "h5ad": ".h5ad", "anndata-zarr": ".zarr", "read-daf-zip": ".daf.zarr.zip",
              "read-h5ad": ".h5ad"}
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-mem-") as tmp:
        for task, label in labels.items():
            path = os.path.join(tmp, f"m{suffix[task]}")
            fig = c.child_json("benchmarks.bench_daf", "--child", task, path, str(the_seed),
                               *(["--quick"] if c.quick() else []))
            extra = fig["peak"] - fig["before"]
            rows.append(f"| {label} | {c.human_bytes(fig['before'])} | "
                        f"{c.human_bytes(max(extra, 0))} | {c.human_bytes(fig['data'])} | "
                        f"{max(extra, 0) / fig['data']:.2f}x |")
            c.remove(path)
            c.eprint(f"memory: {task} done")
    return "\n".join(rows)


# --- Cost growth (child processes) ------------------------------------------------------------


def growth_sizes() -> list[int]:
    """Stored values of the growth table (``--quick``: a smoke run)."""
    return [100_000, 1_000_000] if c.quick() else [1_000_000, 10_000_000, 100_000_000]


GROWTH_PER_CELL = 600  # 2 % of the 30,000 genes


def growth_data(nnz: int, the_seed: int) -> dict[str, Any]:
    """A cells x 30,000 genes CSR with ``GROWTH_PER_CELL`` values per cell and ``nnz`` in
    all (rounded to whole cells), built in a few vector passes (sorted, unique gene indices:
    one random gene in each of 600 consecutive bands of 50 genes)."""
    genes, per = 30_000, GROWTH_PER_CELL
    cells = max(1, nnz // per)
    x = c.banded_csr(cells, genes, per, the_seed, indptr_dtype=np.int64)
    return {"X": x, "cells": [f"c{i}" for i in range(cells)],
            "genes": [f"g{i}" for i in range(genes)]}


def _growth_child(nnz: int, tmp: str, the_seed: int, rounds: int) -> None:
    """Time the UMIs + axes writes (directory, ZIP, ``np.save``) alternately, one warm-up
    round and ``rounds`` counted ones, and the peak resident memory of each write above the
    memory before it (which holds the input); print the figures as JSON."""
    import gc
    import time

    d = growth_data(nnz, the_seed)
    writers = {"dir": (write_daf_umis, "g.daf.zarr"), "zip": (write_daf_umis, "g.daf.zarr.zip"),
               "npy": (write_npy, "g.npy")}
    names = list(writers)
    times: dict[str, list[float]] = {k: [] for k in names}
    peaks: dict[str, int] = dict.fromkeys(names, 0)
    for r in range(1 + rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            fn, out = writers[name]
            path = os.path.join(tmp, out)
            c.remove(path)
            c.settle_writeback()
            gc.collect()
            c.reset_peak_rss()
            before = _rss()
            t0 = time.perf_counter()
            fn(path, d)
            dt = time.perf_counter() - t0
            peaks[name] = max(peaks[name], c.peak_rss() - before)
            if r:
                times[name].append(dt)
    for _fn, out in writers.values():
        c.remove(os.path.join(tmp, out))
    print(json.dumps({"nnz": int(d["X"].nnz), "data": data_bytes(d["X"]), "times": times,
                      "peaks": peaks, "load": c.loadavg()}))


def growth_report(the_seed: int, rounds: int) -> str:
    """The growth table: one child process per size (its memory starts fresh)."""
    import statistics

    rows = [("| stored values | data | ZarrDaf directory: median s (ns/value), peak | "
             "ZarrDaf ZIP: median s (ns/value), peak | np.save: median s (ns/value), peak | "
             "load average |"), "|---|---|---|---|---|---|"]
    for nnz in growth_sizes():
        with tempfile.TemporaryDirectory(prefix="dafzarr-bench-growth-") as tmp:
            fig = c.child_json("benchmarks.bench_daf", "--child", "growth", tmp,
                               str(the_seed), "--growth-nnz", str(nnz), "--rounds",
                               str(rounds), *(["--quick"] if c.quick() else []))
        cells = []
        for name in ("dir", "zip", "npy"):
            med = statistics.median(fig["times"][name])
            cells.append(f"{med:.3f} s ({med / fig['nnz'] * 1e9:.1f}), "
                         f"{c.human_bytes(max(fig['peaks'][name], 0))}")
        rows.append(f"| {fig['nnz']:,} | {c.human_bytes(fig['data'])} | " + " | ".join(cells)
                    + f" | {fig['load']} |")
        c.eprint(f"growth: {nnz:,} done")
    return "\n".join(rows)


SUITES: dict[str, list[type]] = {"write": [Write], "write-dense": [WriteDense],
                                 "read": [Read]}


def main(argv: list[str] | None = None) -> int:
    parts = ["write", "write-dense", "read", "memory", "write-growth"]
    ap = c.argument_parser("python -m benchmarks.bench_daf", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    ap.add_argument("--child", nargs=3, metavar=("TASK", "PATH", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--growth-nnz", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    if args.child and args.child[0] == "growth":
        _growth_child(args.growth_nnz, args.child[1], int(args.child[2]), args.rounds or 3)
        return 0
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    dataset.set_seed(args.seed)
    rounds = args.rounds or 3
    with c.RunClock() as clock:
        c.eprint(f"seed {seed()}; generating data ...")
        results = c.run_suites(SUITES, only, rounds)
        mem = memory_report(seed()) if "memory" in only else ""
        growth = growth_report(seed(), rounds) if "write-growth" in only else ""
    cells, genes, density = sizes()
    c.report("ZarrDaf benchmarks", [
        f"* dafzarr {dafzarr.__version__}, zarr {zarr.__version__}, h5py {h5py.__version__}",
        (f"* {cells:,} cells x {genes:,} genes at {density:.0%} (float32 UMIs), {N_VECTORS} "
         f"per-cell vectors, a {N_PCS}-column dense PCA; seed {seed()}"),
        *clock.lines(rounds),
    ], results, (
        "MB/s count the sparse matrix's bytes (data + indices + indptr), or the dense "
        "matrix's bytes. Vector and matrix reads are per call on an open data set."
    ))
    if mem:
        print("\n### Peak resident memory (child processes)\n")
        print(mem)
        c.record_table("Peak resident memory (child processes)", mem)
        print("\nThe fill writes the matrix into reserved ZIP entries through the mapping; "
              "its pages count as resident until the kernel writes them back.")
    if growth:
        print("\n### Cost growth: write of the UMIs and the two axes vs stored values\n")
        print(growth)
        c.record_table("Cost growth: write of the UMIs and the two axes vs stored values",
                       growth)
        print("\nEach size in its own child process: peers alternate, 1 warm-up round + "
              f"{rounds} counted rounds; peak = peak resident memory above the memory "
              "before the write (which holds the input); ns/value = median time / stored "
              "values.")
    return 0

if __name__ == "__main__":
    sys.exit(main())
