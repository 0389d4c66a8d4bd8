"""The data of ``python -m benchmarks.bench_daf`` (a sparse UMI matrix, per-cell vectors, a
dense PCA) and the writers and readers each peer times (shared with the memory children and
``bench_query``)."""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp
import zarr

import dafzarr

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
    return {
        "X": x,
        "vectors": vectors,
        "pca": pca,
        "cells": [f"c{i}" for i in range(cells)],
        "genes": [f"g{i}" for i in range(genes)],
    }


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
    for name, arr in (
        ("data", x.data),
        ("indices", x.indices),
        ("indptr", x.indptr),
        ("cells", np.asarray(d["cells"])),
        ("genes", np.asarray(d["genes"])),
    ):
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
