"""The timed suites of ``python -m benchmarks.bench_daf``: sparse and dense writes, and reads."""

from __future__ import annotations

import os
from typing import Any, ClassVar

import h5py
import numpy as np

import dafzarr
from dafzarr._transpose import transpose_columns

from . import common as c
from .daf_data import (
    data_bytes,
    fsync_tree,
    make_data,
    read_anndata_zarr_sparse,
    read_daf_sparse,
    read_h5ad_sparse,
    sizes,
    write_anndata_zarr,
    write_daf,
    write_daf_umis,
    write_h5ad,
    write_npy,
    write_npy_all,
    write_npy_fsync,
)

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
        "time_daf_dir": "w.daf.zarr",
        "time_daf_zip": "w.daf.zarr.zip",
        "time_h5ad": "w.h5ad",
        "time_anndata_zarr": "w.zarr",
        "time_npy": "w.npy",
        "time_umis_daf_dir": "u.daf.zarr",
        "time_umis_daf_zip": "u.daf.zarr.zip",
        "time_umis_npy": "u.npy",
        "time_umis_npy_fsync": "uf.npy",
    }

    @c.bench(
        "write data set",
        "ZarrDaf directory",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_ratio_target("np.save (data set)", 1.5, within=True),
    )
    def time_daf_dir(self) -> None:
        write_daf(self.p("w.daf.zarr"), self.d)

    @c.bench(
        "write data set",
        "ZarrDaf ZIP",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_ratio_target("np.save (data set)", 1.5, within=True),
    )
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

    @c.bench(
        "write UMIs + axes",
        "ZarrDaf directory",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_ratio_target("np.save", 1.5, within=True),
    )
    def time_umis_daf_dir(self) -> None:
        write_daf_umis(self.p("u.daf.zarr"), self.d)

    @c.bench(
        "write UMIs + axes",
        "ZarrDaf ZIP",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_ratio_target("np.save", 1.5, within=True),
    )
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
        "time_dir_c": "c.daf.zarr",
        "time_zip_c": "c.daf.zarr.zip",
        "time_dir_f": "f.daf.zarr",
        "time_zip_f": "f.daf.zarr.zip",
        "time_npy": "d.npy",
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

    @c.bench(
        "write dense matrix",
        "ZarrDaf directory, row-major input",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_ratio_target("np.save", 1.3, within=True),
    )
    def time_dir_c(self) -> None:
        self._write(self.p("c.daf.zarr"), self.c_order)

    @c.bench(
        "write dense matrix",
        "ZarrDaf ZIP, row-major input",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_ratio_target("np.save", 1.3, within=True),
    )
    def time_zip_c(self) -> None:
        self._write(self.p("c.daf.zarr.zip"), self.c_order)

    @c.bench(
        "write dense matrix",
        "ZarrDaf directory, Fortran-ordered input",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_ratio_target("np.save", 1.3, within=True),
    )
    def time_dir_f(self) -> None:
        self._write(self.p("f.daf.zarr"), self.f_order)

    @c.bench(
        "write dense matrix",
        "ZarrDaf ZIP, Fortran-ordered input",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_ratio_target("np.save", 1.3, within=True),
    )
    def time_zip_f(self) -> None:
        self._write(self.p("f.daf.zarr.zip"), self.f_order)

    @c.bench("write dense matrix", "np.save", c.MB, lambda s: s.nbytes, size=lambda s: s._size())
    def time_npy(self) -> None:
        os.makedirs(self.p("d.npy"))
        np.save(os.path.join(self.p("d.npy"), "m.npy"), self.c_order)

    @c.bench(
        "write dense matrix", "np.save + fsync", c.MB, lambda s: s.nbytes, size=lambda s: s._size()
    )
    def time_npy_fsync(self) -> None:
        os.makedirs(self.p("df.npy"))
        np.save(os.path.join(self.p("df.npy"), "m.npy"), self.c_order)
        fsync_tree(self.p("df.npy"))

    # The limits of the machine, in memory (no file): a plain copy of the matrix and the
    # transpose a row-major input needs, by the kernel ZarrDaf runs (one thread).

    @c.bench(
        "write dense matrix",
        "limit: memcpy (np.copyto, in memory)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_memcpy(self) -> None:
        np.copyto(self.scratch, self.c_order)

    @c.bench(
        "write dense matrix",
        "limit: transpose kernel (one thread, in memory)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_transpose(self) -> None:
        n = self.c_order.shape[1]
        transpose_columns(self.c_order, self.scratch, 0, n)

    @c.bench(
        "write dense matrix",
        "limit: transpose kernel (two threads, in memory)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
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
        for reader, name in (
            (read_daf_sparse, "r.daf.zarr"),
            (read_daf_sparse, "r.daf.zarr.zip"),
            (read_daf_sparse, "r64.daf.zarr.zip"),
            (read_daf_sparse, "ru64.daf.zarr.zip"),
            (read_h5ad_sparse, "r.h5ad"),
            (read_anndata_zarr_sparse, "r.zarr"),
        ):
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

    @c.bench(
        "read sparse matrix",
        "ZarrDaf directory",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_sparse_read_target,
    )
    def time_sparse_daf_dir(self) -> None:
        read_daf_sparse(self.p("r.daf.zarr"))

    @c.bench(
        "read sparse matrix",
        "ZarrDaf ZIP",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_sparse_read_target,
    )
    def time_sparse_daf_zip(self) -> None:
        read_daf_sparse(self.p("r.daf.zarr.zip"))

    @c.bench(
        "read sparse matrix",
        "ZarrDaf ZIP, Int64 indices",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_sparse_read_target,
    )
    def time_sparse_daf_zip_int64(self) -> None:
        read_daf_sparse(self.p("r64.daf.zarr.zip"))

    @c.bench(
        "read sparse matrix",
        "ZarrDaf ZIP, UInt64 indices",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_sparse_read_target,
    )
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

    @c.bench(
        "read dense vector", "ZarrDaf directory", c.PER_CALL, lambda s: s.calls, target=_view_target
    )
    def time_vector_daf_dir(self) -> None:
        for _ in range(self.calls):
            self.daf_dir.get_np_vector("cell", "v07")

    @c.bench("read dense vector", "ZarrDaf ZIP", c.PER_CALL, lambda s: s.calls, target=_view_target)
    def time_vector_daf_zip(self) -> None:
        for _ in range(self.calls):
            self.daf_zip.get_np_vector("cell", "v07")

    @c.bench("read dense vector", "anndata .h5ad", c.PER_CALL, lambda s: 20)
    def time_vector_h5ad(self) -> None:
        from anndata.io import read_elem

        with h5py.File(self.p("r.h5ad"), "r") as f:
            for _ in range(20):
                read_elem(f["obs/v07"])

    @c.bench(
        "read flat matrix", "ZarrDaf directory", c.PER_CALL, lambda s: s.calls, target=_view_target
    )
    def time_flat_daf_dir(self) -> None:
        for _ in range(self.calls):
            self.daf_dir.get_np_matrix("cell", "pc", "pca")

    @c.bench("read flat matrix", "ZarrDaf ZIP", c.PER_CALL, lambda s: s.calls, target=_view_target)
    def time_flat_daf_zip(self) -> None:
        for _ in range(self.calls):
            self.daf_zip.get_np_matrix("cell", "pc", "pca")

    @c.bench("read flat matrix", "anndata .h5ad", c.PER_CALL, lambda s: 5)
    def time_flat_h5ad(self) -> None:
        from anndata.io import read_elem

        with h5py.File(self.p("r.h5ad"), "r") as f:
            for _ in range(5):
                read_elem(f["obsm/X_pca"])
