"""The base data sets, mutating operations and snapshots that the failure harnesses share.

``_io_error_child`` (an I/O error injected into each system call of an operation) and
``_crash_state_child`` (the states a power loss may leave) run the same kinds of
operations on MmapZipStore archives (and packs of Zarr directories into them), ZarrDaf
data sets (and conversions into new ones), ArrayFile file sets and reference stores; each
picks its own sizes and names from here. No import of this module is relative: the
children run as scripts too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from dafzarr import ArrayFile, MmapZipStore, open_daf
from dafzarr.daf import convert_daf
from dafzarr.refs import VirtualArray, VirtualDataset, write_parquet

# --- MmapZipStore --------------------------------------------------------------------------


def payload(seed: int, n: int) -> bytes:
    """``n`` random bytes, the same for the same ``seed``."""
    return np.random.default_rng(seed).bytes(n)


def zip_read(path: str, writable: bool) -> dict[str, bytes]:
    """Every entry of the archive, opened read-only or writable (which recovers)."""
    with MmapZipStore(path, "r+" if writable else "r") as s:
        return {k: bytes(s[k]) for k in s}


def set_entry(key: str, value: bytes) -> Callable[[MmapZipStore], None]:
    """The body that writes ``value`` as ``key``."""

    def body(s: MmapZipStore) -> None:
        s[key] = value

    return body


def delete_entry(key: str) -> Callable[[MmapZipStore], None]:
    """The body that deletes ``key``."""

    def body(s: MmapZipStore) -> None:
        del s[key]

    return body


def batch(writes: dict[str, bytes], deleted: str) -> Callable[[MmapZipStore], None]:
    """The body that writes ``writes`` and deletes ``deleted`` in one batch."""

    def body(s: MmapZipStore) -> None:
        with s.batch():
            for key, value in writes.items():
                s[key] = value
            del s[deleted]

    return body


def compact(s: MmapZipStore) -> None:
    """Compact the archive."""
    s.compact()


def pack_base(path: str) -> None:
    """A small Zarr directory to pack (``path + ".src"``), and an archive at ``path``
    that the pack replaces."""
    import zarr

    z = zarr.open_array(
        path + ".src", mode="w", shape=(40,), chunks=(10,), dtype="i4", zarr_format=2
    )
    z[:] = np.arange(40, dtype=np.int32)
    with MmapZipStore(path, "w") as s:
        s["old"] = b"old archive"


def pack(path: str) -> None:
    """Pack the directory of :func:`pack_base` over the archive at ``path``."""
    MmapZipStore.pack(path + ".src", path, force=True)


# --- ZarrDaf -------------------------------------------------------------------------------


def daf_base_of(cells: list[str]) -> Callable[[str], None]:
    """The base that creates a data set with the axis ``cell`` of ``cells`` and the
    vector ``age`` (0, 1, ...)."""

    def base(path: str) -> None:
        with open_daf(path, "w") as d:
            d.add_axis("cell", cells)
            d.set_vector("cell", "age", np.arange(len(cells), dtype=np.int32))

    return base


def daf_contents(d: Any) -> dict[str, Any]:
    """Every axis and vector of the open data set ``d``."""
    out: dict[str, Any] = {}
    axes = sorted(d.axes_set())
    for axis in axes:
        out[f"axis {axis}"] = [str(x) for x in d.axis_np_entries(axis)]
        for name in sorted(d.vectors_set(axis)):
            out[f"vector {axis} {name}"] = d.get_np_vector(axis, name).tolist()
    for rows in axes:
        for cols in axes:
            for name in sorted(d.matrices_set(rows, cols, relayout=False)):
                out[f"matrix {rows} {cols} {name}"] = d.get_np_matrix(
                    rows, cols, name, relayout=False
                ).tolist()
    return out


def set_vector(d: Any) -> None:
    """A new vector ``score`` of ``cell``."""
    d.set_vector("cell", "score", np.linspace(0, 1, d.axis_length("cell")))


def fill(d: Any) -> None:
    """A new vector ``filled`` of ``cell``, written in place."""
    n = d.axis_length("cell")
    with d.empty_dense_vector("cell", "filled", np.float64) as v:
        v[:] = np.arange(n) * 0.5


def delete_vector(d: Any) -> None:
    """The vector ``age`` deleted."""
    d.delete_vector("cell", "age")


def overwrite_vector(d: Any) -> None:
    """The vector ``age`` replaced (100, 101, ...)."""
    n = d.axis_length("cell")
    d.set_vector("cell", "age", np.arange(100, 100 + n, dtype=np.int32), overwrite=True)


def convert_source(path: str) -> str:
    """The data set that a conversion into ``path`` copies (beside it)."""
    return os.path.join(os.path.dirname(path), "src.daf.zarr")


def convert_base_of(
    cells: list[str], group: bool = False, matrix: bool = True
) -> Callable[[str], None]:
    """The base of a conversion into ``path``: the source data set (an axis, a vector and,
    with ``matrix``, a second axis and a matrix); with ``group``, a multi-data-set ZIP at
    ``path`` holding the group ``one``."""

    def base(path: str) -> None:
        daf_base_of(cells)(convert_source(path))
        if matrix:
            with open_daf(convert_source(path), "r+") as d:
                d.add_axis("gene", ["g0", "g1", "g2"])
                d.set_matrix("cell", "gene", "umi", np.ones((len(cells), 3), dtype=np.float32))
        if group:
            with open_daf(f"{path}#/one", "w") as d:
                d.add_axis("gene", ["g0", "g1"])
                d.set_vector("gene", "len", np.array([5, 7], dtype=np.int64))

    return base


def convert(group: str = "") -> Callable[[str], None]:
    """The operation that converts the source of :func:`convert_base_of` into the data set
    at ``path`` (a directory, a ZIP), or into its group ``group``."""

    def run(path: str) -> None:
        convert_daf(convert_source(path), f"{path}#/{group}" if group else path)

    return run


def groups_contents(path: str, writable: bool) -> dict[str, Any]:
    """Every data set of the multi-data-set ZIP at ``path`` (by group), opened read-only
    or writable."""
    with MmapZipStore(path, "r+" if writable else "r") as s:
        groups = sorted({k.split("/", 1)[0] for k in s if "/" in k})
    out: dict[str, Any] = {}
    for g in groups:
        with open_daf(f"{path}#/{g}", "r+" if writable else "r") as d:
            out[g] = daf_contents(d)
    return out


# --- ArrayFile -----------------------------------------------------------------------------


def af_base(path: str) -> None:
    """A file set with one flushed array and a second sidecar."""
    with ArrayFile.create(path) as f:
        f.define_array("x", "u4", ["i"], [64])
        f.write_array("x", [0], np.arange(64, dtype=np.uint32))
        f.flush()
        f.write_array("x", [0], np.arange(8, dtype=np.uint32) + 1000)
        f.flush()


def af_flush(f: ArrayFile) -> None:
    """A new array and a change to ``x``, flushed."""
    f.define_array("y", "f8", ["i"], [32])
    f.write_array("y", [0], np.linspace(0, 1, 32))
    f.write_array("x", [8], np.arange(4, dtype=np.uint32) + 7)
    f.flush()


def af_compact(f: ArrayFile) -> None:
    """Compact the file set."""
    f.compact()


def af_snapshot(path: str) -> Any:
    """Every array of the file set."""
    with ArrayFile.open(path) as f:
        return {n: f.read_array(n).tolist() for n in sorted(f.list_arrays())}


# --- Reference stores ----------------------------------------------------------------------


def _vds(seed: int) -> VirtualDataset:
    a = VirtualArray(
        name="a",
        zarray={
            "shape": [40],
            "chunks": [10],
            "dtype": "<i4",
            "compressor": None,
            "fill_value": 0,
            "filters": None,
            "order": "C",
            "zarr_format": 2,
        },
        zattrs={"seed": seed},
        path_index=np.zeros(4, dtype=np.int32),
        offset=np.arange(4, dtype=np.int64) * 40 + seed,
        size=np.full(4, 40, dtype=np.int64),
    )
    return VirtualDataset(paths=["file:///data/x.nc"], arrays={"a": a}, groups={"": {}})


def refs_base(path: str) -> None:
    """A reference store, to be replaced."""
    write_parquet(_vds(0), path)


def refs_write(path: str) -> None:
    """Replace the reference store at ``path`` with another."""
    write_parquet(_vds(7), path, overwrite=True)


def tree_snapshot(path: str) -> Any:
    """Every file under ``path``, by relative name."""
    out: dict[str, bytes] = {}
    for directory, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = f.read()
    return out
