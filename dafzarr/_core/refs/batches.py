"""The references of a reference store, array by array, in batches of bounded size.

A kerchunk-Parquet store written by dafzarr is read record file by record file through
pyarrow, ``batch_size`` rows at a time, its ``path`` column as a dictionary (the few URLs
once, then a small integer per row): the memory held is that of one batch whatever the
number of references. A :class:`~dafzarr.refs.VirtualDataset` (or a scanned file) already
in memory is cut into the same batches. Publishers (:mod:`._icechunk`) read these twice:
once to check every location, once to write.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import InvalidArgumentError
from .filenames import METADATA_FILE, VALUES_FILE, refs_file
from .model import ScanResult, chunk_grid
from .virtual import VirtualDataset

__all__ = ["ArrayRefs", "Batch", "RefsSource", "open_source"]


@dataclass(eq=False)
class Batch:
    """Consecutive references of one array, from flat chunk index ``start`` (C order).

    ``path_index`` indexes ``paths`` (-1: no reference); ``raw`` maps rows of the batch to
    inlined chunk bytes (a row inlined has ``path_index`` -1).
    """

    start: int
    paths: list[str]
    path_index: npt.NDArray[np.int32]
    offset: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]
    raw: dict[int, bytes]

    def __len__(self) -> int:
        return int(self.path_index.shape[0])


@dataclass(eq=False)
class ArrayRefs:
    """One array: its zarr v2 metadata, and a function giving its reference batches anew."""

    name: str
    zarray: dict[str, Any]
    zattrs: dict[str, Any]
    batches: Callable[[], Iterator[Batch]]

    @property
    def nchunks(self) -> int:
        return math.prod(chunk_grid(tuple(self.zarray["shape"]), tuple(self.zarray["chunks"])))


@dataclass(eq=False)
class RefsSource:
    """What a publisher reads: groups (path -> attributes), arrays, and where the store's
    own :data:`VALUES_FILE` is (its URL as references name it, its local path), if any."""

    where: str
    groups: dict[str, dict[str, Any]]
    arrays: list[ArrayRefs]
    values_url: str | None = None
    values_path: Path | None = None


def open_source(refs_store: Any, batch_size: int) -> RefsSource:
    """A reference store path (kerchunk-Parquet, as dafzarr writes it), a
    :class:`VirtualDataset` or a :class:`ScanResult`, as batches of ``batch_size`` rows."""
    if isinstance(refs_store, ScanResult):
        from .kerchunk import as_virtual

        refs_store = as_virtual(refs_store)
    if isinstance(refs_store, VirtualDataset):
        return _from_virtual(refs_store, batch_size)
    if isinstance(refs_store, str | os.PathLike):
        return _from_parquet(Path(refs_store), batch_size)
    raise InvalidArgumentError(
        "refs_store must be the path of a kerchunk-Parquet reference store, a VirtualDataset "
        f"or a ScanResult, not {type(refs_store).__name__}"
    )


# --- A virtual dataset in memory ----------------------------------------------------------
def _from_virtual(vds: VirtualDataset, batch_size: int) -> RefsSource:
    arrays = []
    for name, a in vds.arrays.items():

        def batches(a: Any = a) -> Iterator[Batch]:
            n = a.nchunks
            for start in range(0, n, batch_size):
                stop = min(n, start + batch_size)
                raw = {i - start: b for i, b in a.raw.items() if start <= i < stop}
                idx = a.path_index[start:stop].astype(np.int32, copy=True)
                if raw:
                    idx[list(raw)] = -1
                yield Batch(start, vds.paths, idx, a.offset[start:stop], a.size[start:stop], raw)

        arrays.append(ArrayRefs(name, dict(a.zarray), dict(a.zattrs), batches))
    return RefsSource("the virtual dataset", dict(vds.groups), arrays)


# --- A kerchunk-Parquet store on disk -------------------------------------------------------
def _from_parquet(root: Path, batch_size: int) -> RefsSource:
    try:
        doc = json.loads((root / METADATA_FILE).read_text(encoding="utf-8"))
        meta = doc["metadata"]
        record_size = int(doc["record_size"])
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"{root}: not a kerchunk-Parquet reference store (no {METADATA_FILE})"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidArgumentError(f"{root}/{METADATA_FILE}: unreadable ({exc})") from None
    if record_size < 1 or not isinstance(meta, dict):
        raise InvalidArgumentError(f"{root}/{METADATA_FILE}: record_size {record_size} < 1")
    groups: dict[str, dict[str, Any]] = {}
    arrays: list[ArrayRefs] = []
    for key, value in meta.items():
        node, _, leaf = key.rpartition("/")
        if leaf == ".zgroup":
            groups[node] = dict(meta.get(f"{node}/.zattrs" if node else ".zattrs") or {})
        elif leaf == ".zarray":
            zattrs = dict(meta.get(f"{node}/.zattrs") or {})
            try:
                n = math.prod(chunk_grid(tuple(value["shape"]), tuple(value["chunks"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidArgumentError(
                    f"{root}: array {node!r} has invalid metadata ({exc})"
                ) from None
            arrays.append(
                ArrayRefs(
                    node,
                    dict(value),
                    zattrs,
                    _parquet_batches(root, node, n, record_size, batch_size),
                )
            )
    values = root / VALUES_FILE
    return RefsSource(
        str(root),
        groups,
        arrays,
        values_url=Path(os.path.abspath(values)).as_uri(),
        values_path=values if values.is_file() else None,
    )


def _parquet_batches(
    root: Path, name: str, n: int, record_size: int, batch_size: int
) -> Callable[[], Iterator[Batch]]:
    """The batches of array ``name`` (``n`` chunks) from its ``refs.<N>.parq`` files."""

    def batches() -> Iterator[Batch]:
        import pyarrow.parquet as pq

        records = max(1, -(-n // record_size))
        for record in range(records):
            path = root / name / refs_file(record)
            want = min(record_size, n - record * record_size) if n else 0
            try:
                pf = pq.ParquetFile(path, read_dictionary=["path"])
            except (OSError, ValueError) as exc:
                raise InvalidArgumentError(
                    f"{path}: the references of array {name!r} are unreadable ({exc})"
                ) from None
            if pf.metadata.num_rows != want:
                raise InvalidArgumentError(
                    f"{path}: {pf.metadata.num_rows} references where array {name!r} needs "
                    f"{want} (record {record} of {records}, record_size {record_size})"
                )
            start = record * record_size
            reader = pf.iter_batches(
                batch_size=batch_size, columns=["path", "offset", "size", "raw"]
            )
            while True:
                try:
                    rb = next(reader, None)
                    batch = None if rb is None else _batch(start, rb)
                except (OSError, ValueError, LookupError, TypeError) as exc:
                    raise InvalidArgumentError(
                        f"{path}: the references of array {name!r} are unreadable ({exc})"
                    ) from None
                if batch is None:
                    break
                yield batch
                start += len(batch)

    return batches


def _batch(start: int, rb: Any) -> Batch:
    """One record batch as numpy columns (``path`` dictionary-decoded to indices)."""
    import pyarrow as pa

    col = rb.column("path")
    if not pa.types.is_dictionary(col.type):  # pragma: no cover - read_dictionary asks it
        col = col.dictionary_encode()
    paths = [str(p) for p in col.dictionary.to_pylist()]
    idx = col.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    offset = rb.column("offset").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    size = rb.column("size").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    raw_col = rb.column("raw").cast(pa.binary())
    raw: dict[int, bytes] = {}
    if raw_col.null_count != len(raw_col):
        valid = np.flatnonzero(raw_col.is_valid().to_numpy(zero_copy_only=False))
        raw = {int(i): raw_col[int(i)].as_py() for i in valid}
        idx[valid] = -1
    return Batch(start, paths, idx, offset, size, raw)
