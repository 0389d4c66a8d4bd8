"""Write virtual datasets as kerchunk-Parquet (fsspec ``LazyReferenceMapper`` layout) or JSON.

A single scanned file becomes a one-file :class:`VirtualDataset` (:func:`as_virtual`); both
writers replace their output whole, by a rename, once it is complete.
"""

from __future__ import annotations

import base64
import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._atomic import atomic_directory, atomic_file
from ..errors import InvalidArgumentError, OutputExistsError
from ._layout import METADATA_FILE, PLACEMENT_FILE, refs_file
from ._model import (
    ScanResult,
    Variable,
    VirtualArray,
    VirtualDataset,
    chunk_grid,
    dumps,
    used_groups,
)

__all__ = [
    "REFS_SCHEMA",
    "as_virtual",
    "inline_small_chunks",
    "to_kerchunk_json",
    "write_parquet",
]

# pandas metadata makes fastparquet (fsspec's default engine) read offset/size as int64.
_PANDAS_METADATA = json.dumps(
    {
        "index_columns": [],
        "column_indexes": [],
        "columns": [
            {"name": c, "field_name": c, "pandas_type": pt, "numpy_type": nt, "metadata": None}
            for c, pt, nt in [
                ("path", "unicode", "object"),
                ("offset", "int64", "int64"),
                ("size", "int64", "int64"),
                ("raw", "bytes", "object"),
            ]
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
).encode()

REFS_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("raw", pa.binary()),
    ],
    metadata={b"pandas": _PANDAS_METADATA},
)


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


# --- Parquet -------------------------------------------------------------------------------
def _table(a: VirtualArray, paths: pa.Array, start: int, stop: int) -> pa.Table:
    """One ``refs.N.parq`` table from numpy slices (no Python loop over file references)."""
    n = stop - start
    idx = a.path_index[start:stop]
    missing = idx < 0
    path = pa.DictionaryArray.from_arrays(
        pa.array(idx, type=pa.int32(), mask=missing), paths
    ).dictionary_decode()
    offset = np.where(missing, 0, a.offset[start:stop])
    size = np.where(missing, 0, a.size[start:stop])
    inl = [i for i in a.raw if start <= i < stop]
    raw: pa.Array
    if inl:
        items: list[bytes | None] = [None] * n
        for i in inl:
            items[i - start] = a.raw[i]
        raw = pa.array(items, pa.binary())
    else:
        raw = pa.nulls(n, pa.binary())
    return pa.Table.from_arrays(
        [path, pa.array(offset, pa.int64()), pa.array(size, pa.int64()), raw],
        schema=REFS_SCHEMA,
    )


def _check_array(a: VirtualArray) -> None:
    shape, chunks = tuple(a.zarray["shape"]), tuple(a.zarray["chunks"])
    n = math.prod(chunk_grid(shape, chunks))
    if a.nchunks != n or a.path_index.shape[0] != n or a.size.shape[0] != n:
        raise InvalidArgumentError(
            f"array {a.name!r}: {a.nchunks} references for a grid of {n} chunks"
        )


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise OutputExistsError(
            errno.EEXIST, f"{out} exists (pass overwrite=True to replace a reference store)",
            str(out),
        )
    if out.exists() and not (out / METADATA_FILE).is_file():
        raise OutputExistsError(
            errno.EEXIST, f"{out} exists and is not a reference store: not replacing it",
            str(out),
        )


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
    if not isinstance(record_size, int) or record_size < 1:
        raise InvalidArgumentError(f"record_size must be an integer >= 1, not {record_size!r}")
    vds = as_virtual(dataset, inline_threshold=inline_threshold)
    out = Path(out_path)
    for a in vds.arrays.values():
        _check_array(a)
    _check_out(out, overwrite)
    with atomic_directory(out, force=overwrite) as tmp_name:
        tmp = Path(tmp_name)
        paths = pa.array(vds.paths, pa.string())
        for name, a in vds.arrays.items():
            d = tmp / name
            d.mkdir(parents=True, exist_ok=True)
            n = a.nchunks
            for k in range(max(1, -(-n // record_size))):
                start, stop = k * record_size, min(n, (k + 1) * record_size)
                pq.write_table(
                    _table(a, paths, start, stop),
                    d / refs_file(k),
                    compression=compression,
                    use_dictionary=["path"],
                    write_statistics=False,
                    row_group_size=max(1, stop - start),
                )
        if vds.placement is not None:  # for `dafzarr refs check` and for the user
            pq.write_table(vds.placement, tmp / PLACEMENT_FILE)
        doc = {"metadata": vds.metadata(), "record_size": record_size}
        (tmp / METADATA_FILE).write_text(dumps(doc), encoding="utf-8")
    return out


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
