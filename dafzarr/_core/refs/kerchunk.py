"""Write virtual datasets as kerchunk-Parquet (fsspec ``LazyReferenceMapper`` layout) or JSON.

A single scanned file becomes a one-file :class:`VirtualDataset` (:func:`as_virtual`); both
writers replace their output whole, by a rename, once it is complete.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError, VariableLeftOutWarning
from ..atomic import atomic_file
from ..ioerror import storage_io
from .filenames import PLACEMENT_FILE, VALUES_FILE
from .model import (
    ScanResult,
    Variable,
    chunk_grid,
    dumps,
)
from .stream import REFS_SCHEMA, ReferenceWriter, check_record_size
from .virtual import VirtualArray, VirtualDataset, used_groups

__all__ = [
    "LEFT_OUT_ATTRIBUTE",
    "REFS_SCHEMA",
    "as_virtual",
    "check_inline_threshold",
    "inline_small_chunks",
    "leave_out_unreferenceable",
    "no_reference_reason",
    "one_group",
    "references_only",
    "to_kerchunk_json",
    "values_into_file",
    "write_parquet",
]

#: The root attribute in which a references-only store (``inline_threshold=0``) records the
#: variables it left out: ``{variable path: reason}`` (absent when none was left out).
LEFT_OUT_ATTRIBUTE = "dafzarr_variables_left_out"


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


def check_inline_threshold(threshold: object) -> None:
    """Refuse an ``inline_threshold`` that is neither ``None`` nor an integer >= 0."""
    if threshold is not None and (
        not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 0
    ):
        raise InvalidArgumentError(
            f"inline_threshold must be None or an integer >= 0, not {threshold!r}"
        )


def no_reference_reason(v: Variable) -> str | None:
    """Why the scanned variable ``v`` has no chunk that a reference can point to (``None``: it
    has one, or needs none). Such a variable is inlined, or read as its fill value."""
    if v.layout == "vlen":
        return (
            "variable-length strings: HDF5 keeps them in its global heap, not in chunks that "
            "a reference can point to"
        )
    if v.raw and v.layout == "compact":
        return "compact layout: its data are in the dataset's header, not in a chunk"
    if v.raw:
        return "its data are inlined, not in a chunk that a reference can point to"
    if not v.shape and not bool((v.offset >= 0).any()):
        return "a 0-d variable whose value was never written: no chunk to reference"
    return None


def leave_out_unreferenceable(
    scans: Sequence[ScanResult], *, stacklevel: int = 2
) -> tuple[list[ScanResult], dict[str, str]]:
    """The scans without the variables that have no chunk to reference in some file, and
    ``{name: reason}`` for those, each also given once as a
    :class:`~dafzarr.errors.VariableLeftOutWarning` naming the first file where it has none
    (issued ``stacklevel`` frames up). The scans themselves are not changed."""
    left_out: dict[str, str] = {}
    for scan in scans:
        for name, v in scan.variables.items():
            reason = None if name in left_out else no_reference_reason(v)
            if reason is None:
                continue
            left_out[name] = reason
            warnings.warn(
                f"{scan.path}: variable {name!r} left out (inline_threshold=0 writes "
                f"references only): {reason}; the default inline_threshold=None keeps it",
                VariableLeftOutWarning,
                stacklevel=stacklevel + 1,
            )
    if not left_out:
        return list(scans), left_out
    for scan in scans:
        if LEFT_OUT_ATTRIBUTE in scan.groups.get("", {}):
            raise InvalidArgumentError(
                f"{scan.path}: its root attribute {LEFT_OUT_ATTRIBUTE!r} is where a "
                "references-only store records the variables it leaves out; write it with "
                "inline_threshold=None"
            )
    kept = [
        dataclasses.replace(
            scan, variables={n: v for n, v in scan.variables.items() if n not in left_out}
        )
        for scan in scans
    ]
    return kept, left_out


def references_only(
    dataset: ScanResult, *, stacklevel: int = 2
) -> tuple[ScanResult, dict[str, str]]:
    """``dataset`` without the variables that have no chunk to reference (see
    :func:`leave_out_unreferenceable`), its root attributes recording them under
    :data:`LEFT_OUT_ATTRIBUTE`. ``dataset`` itself is not changed."""
    (kept,), left_out = leave_out_unreferenceable([dataset], stacklevel=stacklevel + 1)
    if left_out:
        root = {**kept.groups.get("", {}), LEFT_OUT_ATTRIBUTE: dict(left_out)}
        kept = dataclasses.replace(kept, groups={**kept.groups, "": root})
    return kept, left_out


def _attributed_parents(dataset: ScanResult, names: Iterable[str]) -> list[str]:
    """For each of ``names``, a path under its deepest ancestor group that has attributes: a
    group that held only variables left out keeps its attributes (and a group without any,
    nothing to keep, stays out, as an empty group does)."""
    out = []
    for name in names:
        parts = name.split("/")[:-1]
        for depth in range(len(parts), 0, -1):
            group = "/".join(parts[:depth])
            if dataset.groups.get(group):
                out.append(f"{group}/_")
                break
    return out


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


def _check_composed(vds: VirtualDataset, threshold: int | None, values_file: bool) -> None:
    """Refuse a threshold that a composed dataset, written as composed, would not honour
    (``values_file``: the writer references inlined values in a file of the store)."""
    if threshold is None:
        return
    if threshold > 0:
        raise InvalidArgumentError(
            f"inline_threshold={threshold} applies to a scanned file; a composed dataset is "
            "written as composed (virtualize(inline_threshold=...) inlines its small chunks)"
        )
    inlined = [name for name, a in vds.arrays.items() if a.raw]
    if inlined and not values_file:
        raise InvalidArgumentError(
            f"inline_threshold=0 asks for references only, but the composed dataset inlines "
            f"{', '.join(map(repr, inlined))}, and a JSON reference file has no file of its "
            "own for them: write_parquet references them in the store's "
            f"{VALUES_FILE}, or pass inline_threshold=None to write it as composed"
        )


def values_into_file(
    vds: VirtualDataset, store: str | os.PathLike[str]
) -> tuple[VirtualDataset, bytes]:
    """``vds`` with every inlined chunk moved into the store's :data:`VALUES_FILE` and
    referenced there (path, offset and length, as any chunk of a source file), and the
    bytes of that file (empty: nothing was inlined, ``vds`` itself comes back).

    For readers that take references only (VirtualiZarr): composed coordinates, whose
    values come from many files, become real bytes next to the references. ``vds`` is not
    changed.
    """
    url = Path(os.path.abspath(store), VALUES_FILE).as_uri()
    k = len(vds.paths)
    blob = bytearray()
    arrays: dict[str, VirtualArray] = {}
    for name, a in vds.arrays.items():
        if not a.raw:
            arrays[name] = a
            continue
        path_index, offset, size = a.path_index.copy(), a.offset.copy(), a.size.copy()
        for i, b in sorted(a.raw.items()):
            path_index[i], offset[i], size[i] = k, len(blob), len(b)
            blob += b
        arrays[name] = dataclasses.replace(
            a, path_index=path_index, offset=offset, size=size, raw={}
        )
    if not blob:
        return vds, b""
    return dataclasses.replace(vds, paths=[*vds.paths, url], arrays=arrays), bytes(blob)


def as_virtual(
    dataset: ScanResult | VirtualDataset,
    *,
    inline_threshold: int | None = None,
    values_file: bool = False,
) -> VirtualDataset:
    """A :class:`VirtualDataset` for one scanned file (or ``dataset`` itself, as composed).

    ``inline_threshold``: ``None`` references every chunk and inlines the variables that have
    none to reference (variable-length strings, compact datasets); ``0`` writes references
    only, leaving those variables out (see :func:`references_only`; VirtualiZarr 2.5.1 reads
    no inlined chunk); ``N > 0`` also copies the bytes of chunks smaller than ``N`` bytes into
    the references. A composed dataset that inlines values (coordinates) is refused with
    ``0`` unless ``values_file`` says the writer references them in a file of its own.

    Parameters
    ----------
    dataset
        A scanned file (:func:`scan`) or a composed dataset (returned as it is, once checked).
    inline_threshold
        ``None``, ``0`` or a number of bytes ``N > 0``, as above.
    values_file
        Whether the caller writes a composed dataset's inlined values into a file of the
        store (as :func:`write_parquet` does with ``inline_threshold=0``).

    Returns
    -------
    VirtualDataset
        One file's arrays over its URL, with the groups that hold them.

    Raises
    ------
    InvalidArgumentError
        An ``inline_threshold`` that is neither ``None`` nor an integer >= 0; a composed
        dataset with ``inline_threshold > 0``, or with ``0`` while it inlines values and
        ``values_file`` is false; with ``0``, a file whose root attribute
        ``dafzarr_variables_left_out`` is taken already.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.arange(32, dtype="f4").reshape(4, 8),
    ...                            chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> vds = dafzarr.refs.as_virtual(dafzarr.refs.scan("day0.nc"), inline_threshold=64)
    >>> sorted(vds.arrays["sst"].raw), vds.arrays["sst"].path_index.tolist()
    ([0, 1, 2, 3], [-1, -1, -1, -1])
    """
    check_inline_threshold(inline_threshold)
    if isinstance(dataset, VirtualDataset):
        _check_composed(dataset, inline_threshold, values_file)
        return dataset
    left_out: dict[str, str] = {}
    if inline_threshold == 0:
        # the warnings point at the caller of write_parquet / to_kerchunk_json
        dataset, left_out = references_only(dataset, stacklevel=3)
    arrays = {name: _from_variable(v) for name, v in dataset.variables.items()}
    groups = used_groups(dataset, [*arrays, *_attributed_parents(dataset, left_out)])
    vds = VirtualDataset(paths=[dataset.url], arrays=arrays, groups=groups)
    inline_small_chunks(vds, [dataset.path], inline_threshold or 0)
    return vds


def one_group(vds: VirtualDataset, group: str | None) -> VirtualDataset:
    """``vds`` itself (``group=None``), or only the arrays directly in ``group`` as the root
    of a flat hierarchy: the group's attributes become the root's, subgroups are left out.

    For readers that cannot list nested groups (VirtualiZarr 2.5.1's parquet parser): one
    store per group. ``""`` is the root group.
    """
    if group is None:
        return vds
    if not isinstance(group, str):
        raise InvalidArgumentError(f"group must be a group path (a str), not {group!r}")
    group = group.strip("/")
    if group not in vds.groups:
        known = ", ".join(repr(g) for g in sorted(vds.groups))
        raise InvalidArgumentError(
            f"no group {group!r} among the dataset's groups holding arrays ({known})"
        )
    prefix = f"{group}/" if group else ""
    arrays = {
        name[len(prefix) :]: dataclasses.replace(a, name=name[len(prefix) :])
        for name, a in vds.arrays.items()
        if name.startswith(prefix) and "/" not in name[len(prefix) :]
    }
    return VirtualDataset(
        paths=vds.paths,
        arrays=arrays,
        groups={"": dict(vds.groups[group])},
        placement=vds.placement,
    )


def _check_array(a: VirtualArray) -> None:
    shape, chunks = tuple(a.zarray["shape"]), tuple(a.zarray["chunks"])
    n = math.prod(chunk_grid(shape, chunks))
    if a.nchunks != n or a.path_index.shape[0] != n or a.size.shape[0] != n:
        raise InvalidArgumentError(
            f"array {a.name!r}: {a.nchunks} references for a grid of {n} chunks"
        )


# --- Parquet -------------------------------------------------------------------------------
#: What a failed write of a reference store leaves (see :mod:`dafzarr._core.atomic`).
_KEPT = "the destination stays as it was"


def write_parquet(
    dataset: ScanResult | VirtualDataset,
    out_path: str | os.PathLike[str],
    *,
    record_size: int = 100_000,
    compression: str = "zstd",
    overwrite: bool = False,
    inline_threshold: int | None = None,
    group: str | None = None,
) -> Path:
    """Write a kerchunk-Parquet reference store as fsspec's ``LazyReferenceMapper`` reads it.

    Layout: ``.zmetadata`` (decoded zarr v2 metadata and an integer ``record_size``) plus
    ``<array>/refs.<N>.parq`` with the schema ``path: string, offset: int64, size: int64,
    raw: binary`` and pandas metadata, ``path`` dictionary-encoded, one row group per file,
    rows in C-order chunk index. The store is built in a temporary sibling directory and
    renamed into place (fsynced; see :mod:`dafzarr._core.atomic`): a failure or a kill leaves an
    existing store as it was. An existing store is replaced only with ``overwrite=True``
    (otherwise :class:`~dafzarr.errors.OutputExistsError`, a ``FileExistsError``).
    ``inline_threshold`` applies to a scanned file as in :func:`as_virtual` (``0``: references
    only, for VirtualiZarr 2.5.1); a composed :class:`VirtualDataset` is written as composed
    (``N > 0``: :class:`~dafzarr.errors.InvalidArgumentError`), and with ``0`` the values it
    inlines (coordinates concatenated from many files) are written as real bytes into the
    store's ``values.bin`` and referenced there (:func:`values_into_file`).
    ``group`` writes only the arrays directly in that group (``""``: the root), as the root
    of a flat store (see :func:`one_group`): VirtualiZarr 2.5.1's parquet parser cannot list
    nested groups, so write one store per group for it.

    Parameters
    ----------
    dataset
        A scanned file (:func:`scan`) or a composed dataset (:func:`compose`).
    out_path
        The store directory to create.
    record_size
        References per Parquet file (an integer >= 1).
    compression
        The Parquet compression codec (``"zstd"``, ``"snappy"``, ``"none"``, ...).
    overwrite
        Replace an existing reference store at ``out_path``.
    inline_threshold
        ``None``, ``0`` or ``N > 0``, as above.
    group
        Write only the arrays of this group, as the root of the store (default: all).

    Returns
    -------
    pathlib.Path
        ``out_path``.

    Raises
    ------
    OutputExistsError
        ``out_path`` exists and ``overwrite`` was not given, or it exists and is not a
        reference store (never replaced).
    InvalidArgumentError
        A ``record_size`` that is not an integer >= 1; a ``group`` that holds no array; an
        array whose references do not match its chunk grid; as for :func:`as_virtual`.
    StorageIOError
        The file system failed while writing (a full disk, a quota); the message says what
        was being written, and the destination stays as it was.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.arange(32, dtype="f4").reshape(4, 8),
    ...                            chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> dafzarr.refs.write_parquet(dafzarr.refs.scan("day0.nc"), "day0.refs").name
    'day0.refs'
    >>> import zarr
    >>> from fsspec.implementations.reference import ReferenceFileSystem
    >>> fs = ReferenceFileSystem("day0.refs", remote_protocol="file", asynchronous=True)
    >>> g = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r",
    ...                     zarr_format=2)
    >>> g["sst"][1, :4], g["sst"].attrs["units"]
    (array([ 8.,  9., 10., 11.], dtype=float32), 'degC')
    """
    check_record_size(record_size)
    vds = one_group(as_virtual(dataset, inline_threshold=inline_threshold, values_file=True), group)
    values = b""
    if inline_threshold == 0:
        vds, values = values_into_file(vds, out_path)
    for a in vds.arrays.values():
        _check_array(a)
    with (
        storage_io("creating the reference store", os.fspath(out_path), _KEPT) as op,
        ReferenceWriter(
            out_path,
            vds.paths,
            record_size=record_size,
            compression=compression,
            overwrite=overwrite,
        ) as w,
    ):
        if values:
            op.name = "writing the composed values of the reference store"
            w.add_bytes(VALUES_FILE, values)
        for g, attrs in vds.groups.items():
            w.add_group(g, attrs)
        for name, a in vds.arrays.items():
            op.name = f"writing the references of array {name!r}"
            w.add_array(name, a.zarray, a.zattrs)
            w.append(a.path_index, a.offset, a.size, a.raw)
        op.name = "writing and publishing the reference store's metadata"
        if vds.placement is not None:  # for `dafzarr refs check` and for the user
            w.add_file(PLACEMENT_FILE, vds.placement)
    return w.out


# --- JSON ----------------------------------------------------------------------------------
def to_kerchunk_json(
    dataset: ScanResult | VirtualDataset,
    out_path: str | os.PathLike[str] | None = None,
    *,
    inline_threshold: int | None = None,
) -> dict[str, Any]:
    """kerchunk version-1 JSON references (``{"version": 1, "refs": {...}}``) for small stores.

    Missing chunks have no key (readers return the fill value); inlined chunks are
    ``"base64:..."`` strings. Written to ``out_path`` when given (replaced whole, by a rename,
    once complete). ``inline_threshold`` as in :func:`as_virtual`.

    Parameters
    ----------
    dataset
        A scanned file (:func:`scan`) or a composed dataset (:func:`compose`).
    out_path
        The JSON file to write (default: write nothing, return the document).
    inline_threshold
        ``None``, ``0`` or ``N > 0``, as for :func:`as_virtual`.

    Returns
    -------
    dict
        The references document: zarr metadata as JSON text, each chunk as ``[url, offset,
        size]`` or a ``"base64:..."`` string.

    Raises
    ------
    InvalidArgumentError
        As for :func:`as_virtual`; with ``0``, a composed dataset that inlines values (a JSON
        file has no file of its own to reference them in); an array whose references do not
        match its chunk grid.
    StorageIOError
        The file system failed while writing ``out_path``.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.arange(32, dtype="f4").reshape(4, 8),
    ...                            chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> doc = dafzarr.refs.to_kerchunk_json(dafzarr.refs.scan("day0.nc"), "day0.json")
    >>> url, offset, size = doc["refs"]["sst/1.0"]
    >>> url.endswith("/day0.nc"), size
    (True, 32)
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
