"""Write virtual datasets as kerchunk-Parquet (fsspec ``LazyReferenceMapper`` layout) or JSON.

A single scanned file becomes a one-file :class:`VirtualDataset` (:func:`as_virtual`); both
writers replace their output whole, by a rename, once it is complete.
"""

from __future__ import annotations

import base64
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_file
from ..errors import InvalidArgumentError
from ._layout import PLACEMENT_FILE
from ._model import (
    ScanResult,
    Variable,
    VirtualArray,
    VirtualDataset,
    chunk_grid,
    dumps,
    used_groups,
)
from ._stream import REFS_SCHEMA, ReferenceWriter, check_record_size

__all__ = [
    "REFS_SCHEMA",
    "as_virtual",
    "inline_small_chunks",
    "to_kerchunk_json",
    "write_parquet",
]



def _from_variable(v: Variable) -> VirtualArray:
    return VirtualArray(
        name=v.name,
        zarray=v.zarray(),
        zattrs=v.zattrs(),
        path_index=np.where(v.offset >= 0, 0, -1).astype(np.int32),
        offset=v.offset,
        size=v.size,
        raw=dict(v.raw),
    )


def inline_small_chunks(vds: VirtualDataset, access: list[str], threshold: int) -> None:
    """Copy chunks smaller than ``threshold`` bytes into the references (in place).

    ``access[i]`` is a readable local copy of ``vds.paths[i]``. Chunks whose bytes start
    with ``base64:`` stay references (fsspec would decode such inline bytes).
    """
    if threshold <= 0:
        return
    for a in vds.arrays.values():
        small = np.flatnonzero((a.path_index >= 0) & (a.size < threshold))
        for k in np.unique(a.path_index[small]).tolist():
            which = small[a.path_index[small] == k]
            with open(access[k], "rb") as fh:
                for i in which.tolist():
                    fh.seek(int(a.offset[i]))
                    b = fh.read(int(a.size[i]))
                    if not b.startswith(b"base64:"):
                        a.raw[i] = b
                        a.path_index[i] = -1


def as_virtual(
    dataset: ScanResult | VirtualDataset, *, inline_threshold: int = 0
) -> VirtualDataset:
    """A :class:`VirtualDataset` for one scanned file (or ``dataset`` itself).

    ``inline_threshold`` > 0 copies the bytes of chunks smaller than that many bytes into the
    references (unreadable by VirtualiZarr < 2.6.1).
    """
    if isinstance(dataset, VirtualDataset):
        return dataset
    arrays = {name: _from_variable(v) for name, v in dataset.variables.items()}
    vds = VirtualDataset(paths=[dataset.url], arrays=arrays, groups=used_groups(dataset, arrays))
    inline_small_chunks(vds, [dataset.path], inline_threshold)
    return vds


def _check_array(a: VirtualArray) -> None:
    shape, chunks = tuple(a.zarray["shape"]), tuple(a.zarray["chunks"])
    n = math.prod(chunk_grid(shape, chunks))
    if a.nchunks != n or a.path_index.shape[0] != n or a.size.shape[0] != n:
        raise InvalidArgumentError(
            f"array {a.name!r}: {a.nchunks} references for a grid of {n} chunks"
        )


# --- Parquet -------------------------------------------------------------------------------
def write_parquet(
    dataset: ScanResult | VirtualDataset,
    out_path: str | os.PathLike[str],
    *,
    record_size: int = 100_000,
    compression: str = "zstd",
    overwrite: bool = False,
    inline_threshold: int = 0,
) -> Path:
    """Write a kerchunk-Parquet reference store as fsspec's ``LazyReferenceMapper`` reads it.

    Layout: ``.zmetadata`` (decoded zarr v2 metadata and an integer ``record_size``) plus
    ``<array>/refs.<N>.parq`` with the schema ``path: string, offset: int64, size: int64,
    raw: binary`` and pandas metadata, ``path`` dictionary-encoded, one row group per file,
    rows in C-order chunk index. The store is built in a temporary sibling directory and
    renamed into place (fsynced; see :mod:`dafzarr._atomic`): a failure or a kill leaves an
    existing store as it was. An existing store is replaced only with ``overwrite=True``
    (otherwise :class:`~dafzarr.errors.OutputExistsError`, a ``FileExistsError``).
    """
    check_record_size(record_size)
    vds = as_virtual(dataset, inline_threshold=inline_threshold)
    for a in vds.arrays.values():
        _check_array(a)
    with ReferenceWriter(out_path, vds.paths, record_size=record_size, compression=compression,
                         overwrite=overwrite) as w:
        for g, attrs in vds.groups.items():
            w.add_group(g, attrs)
        for name, a in vds.arrays.items():
            w.add_array(name, a.zarray, a.zattrs)
            w.append(a.path_index, a.offset, a.size, a.raw)
        if vds.placement is not None:  # for `dafzarr refs check` and for the user
            w.add_file(PLACEMENT_FILE, vds.placement)
    return w.out


# --- JSON ----------------------------------------------------------------------------------
def to_kerchunk_json(
    dataset: ScanResult | VirtualDataset,
    out_path: str | os.PathLike[str] | None = None,
    *,
    inline_threshold: int = 0,
) -> dict[str, Any]:
    """kerchunk version-1 JSON references (``{"version": 1, "refs": {...}}``) for small stores.

    Missing chunks have no key (readers return the fill value); inlined chunks are
    ``"base64:..."`` strings. Written to ``out_path`` when given (replaced whole, by a rename,
    once complete).
    """
    vds = as_virtual(dataset, inline_threshold=inline_threshold)
    refs: dict[str, Any] = {k: dumps(v) for k, v in vds.metadata().items()}
    for name, a in vds.arrays.items():
        _check_array(a)
        grid = chunk_grid(tuple(a.zarray["shape"]), tuple(a.zarray["chunks"]))
        present = np.flatnonzero(a.path_index >= 0)
        coords = np.unravel_index(present, grid)
        for j, i in enumerate(present.tolist()):
            key = ".".join(str(int(c[j])) for c in coords)
            refs[f"{name}/{key}"] = [
                vds.paths[a.path_index[i]],
                int(a.offset[i]),
                int(a.size[i]),
            ]
        for i, b in a.raw.items():
            key = ".".join(str(int(c)) for c in np.unravel_index(i, grid))
            refs[f"{name}/{key}"] = "base64:" + base64.b64encode(b).decode("ascii")
    doc = {"version": 1, "refs": refs}
    if out_path is not None:
        with atomic_file(out_path, force=True) as tmp:
            Path(tmp).write_text(dumps(doc), encoding="utf-8")
    return doc
