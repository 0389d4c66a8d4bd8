"""Compose many scanned files into one virtual dataset, and the whole pipeline (:func:`virtualize`).

Arrays placed from several files must mean one thing: same dtype, codecs, chunk shape, fill
value and packing attributes, chunk-aligned boundaries, no overlap; anything else is refused.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import IncompatibleSourcesError
from .kerchunk import (
    LEFT_OUT_ATTRIBUTE,
    check_inline_threshold,
    inline_small_chunks,
    leave_out_unreferenceable,
    write_parquet,
)
from .model import (
    OnUnsupported,
    ScanResult,
    Variable,
    chunk_grid,
    decode_fill,
)
from .placement import place
from .scan import DEFAULT_TIMEOUT
from .source_files import scan_many, sources_table
from .timeunits import rebase_time_coordinates
from .virtual import VirtualArray, VirtualDataset, used_groups
from .vrt import placement_from_vrt

__all__ = ["compose", "virtualize"]

# Attributes that must agree across files for one array to mean one thing.
_MUST_AGREE = ("scale_factor", "add_offset", "_Unsigned", "units", "calendar")


# --- Consistency checks --------------------------------------------------------------------------
def _codec_key(filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Filters with deflate levels normalised: decoding does not depend on them."""
    return [
        {k: v for k, v in f.items() if not (f["id"] == "zlib" and k == "level")} for f in filters
    ]


def _attr(a: str) -> Callable[[ScanResult, Variable], Any]:
    """An attribute of a variable as composed (rebased CF time units for ``units``)."""
    if a == "units":
        return lambda s, v: s.rebased.get(v.name, v.attrs.get(a))
    return lambda s, v: v.attrs.get(a)


def _check_same(name: str, pieces: list[tuple[ScanResult, Variable]]) -> None:
    s0, v0 = pieces[0]
    checks: list[tuple[str, Callable[[ScanResult, Variable], Any]]] = [
        ("dtype", lambda s, v: v.dtype),
        ("codec configuration", lambda s, v: _codec_key(v.filters)),
        ("chunk shape", lambda s, v: v.chunks),
        ("_FillValue (HDF5 fill value)", lambda s, v: v.fill_value),
        ("dimensions", lambda s, v: v.dims),
        *((a, _attr(a)) for a in _MUST_AGREE),
    ]
    for s, v in pieces[1:]:
        for label, get in checks:
            a, b = get(s0, v0), get(s, v)
            if a != b and not (isinstance(a, float) and isinstance(b, float) and a == b):
                raise IncompatibleSourcesError(
                    f"variable {name!r}: {label} differs between {s0.path} ({a!r}) and "
                    f"{s.path} ({b!r}); refusing to combine them"
                )


def _check_alignment(
    name: str, pieces: list[tuple[ScanResult, Variable]], offsets: npt.NDArray[np.int64],
    shape: tuple[int, ...],
) -> None:  # fmt: skip
    chunks = pieces[0][1].chunks
    for (s, v), off in zip(pieces, offsets, strict=True):
        for axis, c in enumerate(chunks):
            o = int(off[axis])
            if o % c:
                raise IncompatibleSourcesError(
                    f"variable {name!r}: {s.path} starts at {o} along {v.dims[axis]!r}, not a "
                    f"multiple of the chunk length {c}; a zarr chunk grid cannot express it"
                )
            if o + v.shape[axis] < shape[axis] and v.shape[axis] % c:
                raise IncompatibleSourcesError(
                    f"variable {name!r}: {s.path} has {v.shape[axis]} elements along "
                    f"{v.dims[axis]!r}, not a multiple of the chunk length {c}, and is not the "
                    "last file: concat boundaries must be aligned to chunks"
                    + _stacked_hint(v.dims[axis], v.shape[axis], c)
                )


def _stacked_hint(dim: str, length: int, chunk: int) -> str:
    """The likely cause when a file holds less than one chunk along ``dim``: a stacked file
    dimension, each file adding a slice along it in a chunk sized for many."""
    if length >= chunk:
        return ""
    return (
        f"; {dim!r} looks like a stacked file dimension (a dimension per file to concatenate "
        f"along: each file adds {length} element{'s' if length != 1 else ''} in a chunk of "
        f"{chunk}, which HDF5 sizes for a growing dimension): such files compose only when "
        f"written with chunks of {length} (or a divisor) along {dim!r}"
    )


def _check_overlap(
    name: str, pieces: list[tuple[ScanResult, Variable]], lo: npt.NDArray[np.int64]
) -> None:
    hi = lo + np.array([v.shape for _, v in pieces], dtype=np.int64).reshape(lo.shape)
    if len(pieces) < 2 or lo.shape[1] == 0:
        if len(pieces) > 1:
            raise IncompatibleSourcesError(
                f"variable {name!r}: scalar placed from {pieces[0][0].path} and {pieces[1][0].path}"
            )
        return
    # Boxes that are disjoint along one axis cannot overlap: with the pieces sorted along it,
    # each ends where (or before) the next starts. Only otherwise compare every pair.
    for axis in range(lo.shape[1]):
        order = np.argsort(lo[:, axis], kind="stable")
        if np.all(hi[order[:-1], axis] <= lo[order[1:], axis]):
            return
    inter = np.all((lo[:, None, :] < hi[None, :, :]) & (lo[None, :, :] < hi[:, None, :]), axis=2)
    np.fill_diagonal(inter, False)
    if inter.any():
        i, j = (int(x) for x in np.argwhere(inter)[0])
        raise IncompatibleSourcesError(
            f"variable {name!r}: {pieces[i][0].path} (from {lo[i].tolist()}) and "
            f"{pieces[j][0].path} (from {lo[j].tolist()}) overlap"
        )


# --- Building the virtual dataset ------------------------------------------------------------
def compose(
    scans: Sequence[ScanResult],
    placement: pa.Table,
    *,
    inline_coords: bool | None = True,
) -> VirtualDataset:
    """Build one :class:`VirtualDataset` from scanned files and a placement table.

    Parameters
    ----------
    scans
        The scanned files (:func:`scan_many`), every one the placement names.
    placement
        Where each file's arrays go (:func:`place`, or a table of the same schema, edited or
        read back with ``pyarrow.parquet``).
    inline_coords
        Compose the values of coordinate variables into one chunk (``True``, the default),
        reference their chunks in the files (``False``), or reference them where every
        file's chunks align with the composed grid and compose them where not (``None``).

    Returns
    -------
    VirtualDataset
        The composed arrays over the files' URLs (its ``placement`` is ``None``).

    Raises
    ------
    IncompatibleSourcesError
        The placement names a file not scanned or a variable a file lacks; the pieces of one
        array differ in dtype, codec configuration (deflate levels aside), chunk shape, fill
        value, ``scale_factor``, ``add_offset``, ``_Unsigned``, ``units`` or ``calendar``;
        a file boundary is not a multiple of the chunk length; pieces overlap; a time
        coordinate whose units differ in their epoch is to be referenced, not inlined.

    Examples
    --------
    Two files of two time steps each, ``time`` a dimension scale (as netCDF4 writes it):

    >>> import h5py
    >>> for day in range(2):
    ...     with h5py.File(f"day{day}.nc", "w") as f:
    ...         f["time"] = [day + 0.0, day + 0.5]
    ...         f["time"].make_scale("time")
    ...         sst = f.create_dataset("sst", data=np.full(2, day, "f4"), chunks=(1,))
    ...         sst.dims[0].attach_scale(f["time"])
    >>> scans = dafzarr.refs.scan_many(["day0.nc", "day1.nc"], progress=False)
    >>> vds = dafzarr.refs.compose(scans, dafzarr.refs.place(scans))
    >>> vds.arrays["sst"].zarray["shape"], vds.arrays["sst"].path_index.tolist()
    ([4], [0, 0, 1, 1])
    >>> vds.arrays["time"].raw != {}  # composed into one inlined chunk
    True
    """
    rebase_time_coordinates(scans)
    by_url = {s.url: (i, s) for i, s in enumerate(scans)}
    src = placement.column("source").to_pylist()
    var = placement.column("variable").to_pylist()
    offs = placement.column("dest_offset").to_pylist()
    grouped: dict[str, list[tuple[int, list[int]]]] = {}
    for u, n, o in zip(src, var, offs, strict=True):
        if u not in by_url:
            raise IncompatibleSourcesError(f"placement names source {u!r}, which was not scanned")
        if n not in by_url[u][1].variables:
            raise IncompatibleSourcesError(f"{by_url[u][1].path}: no variable {n!r} to place")
        grouped.setdefault(n, []).append((by_url[u][0], o))
    paths = [s.url for s in scans]
    arrays: dict[str, VirtualArray] = {}
    for name, items in grouped.items():
        pieces = [(scans[i], scans[i].variables[name]) for i, _ in items]
        _check_same(name, pieces)
        v0 = pieces[0][1]
        lo = np.array([o for _, o in items], dtype=np.int64).reshape(len(items), len(v0.shape))
        shape = tuple(
            int(x) for x in (lo + np.array([v.shape for _, v in pieces]).reshape(lo.shape)).max(0)
        ) if v0.shape else ()  # fmt: skip
        _check_overlap(name, pieces, lo)
        if (
            inline_coords is not False
            and len(v0.dims) == 1
            and v0.dims[0] == name.rpartition("/")[2]
            and all(name in s.coords for s, _ in pieces)
            and (inline_coords or not _referenceable(name, pieces, lo, shape))
        ):
            arrays[name] = _inline_coordinate(name, pieces, lo, shape)
            continue
        rebased = [s for s, _ in pieces if name in s.rebased]
        if rebased:
            raise IncompatibleSourcesError(
                f"variable {name!r}: its CF time units differ in their epoch between "
                f"{pieces[0][0].path} and others; only inlined values (inline_coords=True) "
                "can be re-expressed in one unit"
            )
        _check_alignment(name, pieces, lo, shape)
        arrays[name] = _place_refs(name, [i for i, _ in items], pieces, lo, shape)
    # Global and group attributes come from the same file as the arrays' own attributes: the
    # first one placed (the earliest along the concatenation), whatever order files were given
    first = by_url[src[0]][1] if src else scans[0]
    return VirtualDataset(paths=paths, arrays=arrays, groups=used_groups(first, arrays))


def _referenceable(
    name: str, pieces: list[tuple[ScanResult, Variable]], lo: npt.NDArray[np.int64],
    shape: tuple[int, ...],
) -> bool:  # fmt: skip
    """Whether the files' chunks of a variable can be referenced in the composed grid (in
    one time unit, at chunk-aligned places)."""
    if any(name in s.rebased for s, _ in pieces):
        return False
    try:
        _check_alignment(name, pieces, lo, shape)
    except IncompatibleSourcesError:
        return False
    return True


def _inline_coordinate(
    name: str, pieces: list[tuple[ScanResult, Variable]], lo: npt.NDArray[np.int64],
    shape: tuple[int, ...],
) -> VirtualArray:  # fmt: skip
    """A coordinate as one inlined, uncompressed chunk of the concatenated values."""
    v0 = pieces[0][1]
    dtype = np.dtype(v0.dtype)
    fill = np.asarray(decode_fill(v0.fill_value, dtype), dtype=dtype)
    data = np.full(shape, fill, dtype=dtype)
    for (s, v), off in zip(pieces, lo, strict=True):
        data[int(off[0]) : int(off[0]) + v.shape[0]] = s.coords[name]
    zarray = {**v0.zarray(), "chunks": [max(1, shape[0])], "filters": None, "shape": list(shape)}
    zattrs = v0.zattrs()
    if name in pieces[0][0].rebased:
        zattrs["units"] = pieces[0][0].rebased[name]
    return VirtualArray(
        name=name,
        zarray=zarray,
        zattrs=zattrs,
        path_index=np.full(1, -1, dtype=np.int32),
        offset=np.full(1, -1, dtype=np.int64),
        size=np.zeros(1, dtype=np.int64),
        raw={0: data.tobytes()},
    )


def _place_refs(
    name: str, file_index: list[int], pieces: list[tuple[ScanResult, Variable]],
    lo: npt.NDArray[np.int64], shape: tuple[int, ...],
) -> VirtualArray:  # fmt: skip
    v0 = pieces[0][1]
    grid = chunk_grid(shape, v0.chunks)
    n = math.prod(grid)
    path_index = np.full(n, -1, dtype=np.int32)
    offset = np.full(n, -1, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    raw: dict[int, bytes] = {}
    chunks = np.array(v0.chunks or (1,), dtype=np.int64)
    cache: dict[tuple[int, ...], tuple[npt.NDArray[np.intp], ...]] = {}
    for fi, (_, v), off in zip(file_index, pieces, lo, strict=True):
        local_grid = v.grid
        if local_grid not in cache:
            cache[local_grid] = np.unravel_index(np.arange(v.nchunks), local_grid)
        local = cache[local_grid]
        shift = (off // chunks) if v0.shape else np.zeros(1, dtype=np.int64)
        inside = np.ones(v.nchunks, dtype=bool)
        coords = []
        for axis, idx in enumerate(local):
            g = idx + int(shift[axis])
            inside &= g < grid[axis]
            coords.append(g)
        flat_all = np.ravel_multi_index(tuple(c[inside] for c in coords), grid)
        have = v.offset[inside] >= 0
        flat = flat_all[have]
        path_index[flat] = fi
        offset[flat] = v.offset[inside][have]
        size[flat] = v.size[inside][have]
        if v.raw:
            local_flat = np.flatnonzero(inside)
            pos = {int(j): int(k) for k, j in enumerate(local_flat)}
            for j, b in v.raw.items():
                if j in pos:
                    raw[int(flat_all[pos[j]])] = b
    return VirtualArray(
        name=name,
        zarray={**v0.zarray(), "shape": list(shape)},
        zattrs=v0.zattrs(),
        path_index=path_index,
        offset=offset,
        size=size,
        raw=raw,
    )


# --- The whole pipeline ----------------------------------------------------------------------
def virtualize(
    sources: Any,
    out_path: str | os.PathLike[str] | None,
    *,
    concat_dim: str | None = None,
    placement: pa.Table | str | os.PathLike[str] | None = None,
    record_size: int = 100_000,
    inline_threshold: int | None = None,
    inline_coords: bool | None = None,
    workers: Any = None,
    progress: bool = True,
    on_unsupported: OnUnsupported = "raise",
    overwrite: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
) -> VirtualDataset:
    """Compose many NetCDF4/HDF5 files into one kerchunk-Parquet reference store.

    Parameters
    ----------
    sources
        File paths, or a :func:`mosaic_sources` table (``access`` scanned, ``public`` written).
    out_path
        The store directory (``None``: compose only, write nothing).
    concat_dim
        Dimension to concatenate along; found from the coordinate values when not given.
    placement
        A :func:`place` table, or the path of a GDAL multidimensional VRT (as written by
        ``gdal mdim mosaic``) whose ``<Source>`` elements say where each file goes.
    record_size
        References per parquet file.
    inline_threshold
        ``None`` (default): reference every chunk, inline what has none to reference
        (variable-length strings, compact datasets). ``0``: references only, a store that
        VirtualiZarr 2.5.1 reads: variables with no chunk to reference are left out (one
        :class:`~dafzarr.errors.VariableLeftOutWarning` each, and the root attribute
        ``dafzarr_variables_left_out``), coordinates are referenced in the files where
        their chunks align with the composed grid, and otherwise composed and written as
        real bytes into the store's ``values.bin``, referenced there (a daily series'
        ``time``, one element per file in HDF5 chunks of 512, cannot be referenced in its
        files). ``N > 0``: also inline chunks smaller than ``N`` bytes.
    inline_coords
        Compose the values of coordinate variables (1-D, named after their dimension) from
        every file into one chunk (inlined, or with ``inline_threshold=0`` in
        ``values.bin``): ``True``; reference each file's chunks, which needs every file's
        length along the dimension to be a multiple of its chunk: ``False``. Default: ``True``,
        and with ``inline_threshold=0`` each coordinate as it can be referenced.
    workers
        ``None``/1: one file at a time; N: N files at once (N scanner processes); a
        ``dask.distributed.Client``: scan on its cluster.
    progress
        Show a progress bar on stderr while scanning several files.
    on_unsupported, overwrite, timeout
        As for :func:`dafzarr.refs.scan` (``timeout``: seconds per file) and
        :func:`dafzarr.refs.write_parquet`.
    storage_options, store
        How to reach sources that are ``http(s)://`` or ``s3://`` URLs (as for
        :func:`dafzarr.refs.scan`).

    Returns
    -------
    VirtualDataset
        The composed dataset, its placement table in ``placement``.

    Raises
    ------
    IncompatibleSourcesError
        Files differ in dtype, codec configuration, chunk shape, fill value, ``scale_factor``,
        ``add_offset``, ``_Unsigned``, ``units`` or ``calendar``; a file boundary is not
        aligned to chunks; sources overlap.
    InvalidArgumentError
        An ``inline_threshold`` that is neither ``None`` nor an integer >= 0; as for
        :func:`~dafzarr.refs.scan` and :func:`~dafzarr.refs.scan_many`.
    UnsupportedHDF5Error, H5Error, ScanTimeoutError, HttpReadError
        As for :func:`~dafzarr.refs.scan`, naming the file at fault.
    OutputExistsError
        ``out_path`` exists and ``overwrite`` was not given (a ``FileExistsError``).

    Examples
    --------
    Two files of two time steps each, ``time`` a dimension scale (as netCDF4 writes it):

    >>> import h5py
    >>> for day in range(2):
    ...     with h5py.File(f"day{day}.nc", "w") as f:
    ...         f["time"] = [day + 0.0, day + 0.5]
    ...         f["time"].make_scale("time")
    ...         sst = f.create_dataset("sst", data=np.full(2, day, "f4"), chunks=(1,))
    ...         sst.dims[0].attach_scale(f["time"])
    >>> vds = dafzarr.refs.virtualize(["day0.nc", "day1.nc"], "sst.refs", progress=False)
    >>> vds.arrays["sst"].zarray["shape"], vds.placement.num_rows
    ([4], 4)

    Read the store with fsspec and zarr:

    >>> import zarr
    >>> from fsspec.implementations.reference import ReferenceFileSystem
    >>> fs = ReferenceFileSystem("sst.refs", remote_protocol="file", asynchronous=True)
    >>> g = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r",
    ...                     zarr_format=2)
    >>> g["sst"][:], g["time"][:]
    (array([0., 0., 1., 1.], dtype=float32), array([0. , 0.5, 1. , 1.5]))
    """
    check_inline_threshold(inline_threshold)
    if inline_coords is None and inline_threshold != 0:
        inline_coords = True
    table = sources_table(sources)
    scans = scan_many(
        table,
        workers=workers,
        progress=progress,
        on_unsupported=on_unsupported,
        timeout=timeout,
        storage_options=storage_options,
        store=store,
    )
    left_out: dict[str, str] = {}
    if inline_threshold == 0:
        scans, left_out = leave_out_unreferenceable(scans, stacklevel=2)
    if placement is None:
        placement_table = place(scans, concat_dim=concat_dim)
    elif isinstance(placement, pa.Table):
        placement_table = placement
    else:
        placement_table = placement_from_vrt(placement, table, scans)
    if left_out:  # a given placement may name them
        keep = pa.array([n not in left_out for n in placement_table.column("variable").to_pylist()])
        placement_table = placement_table.filter(keep)
    vds = compose(scans, placement_table, inline_coords=inline_coords)
    vds.placement = placement_table
    if left_out:
        vds.groups[""] = {**vds.groups.get("", {}), LEFT_OUT_ATTRIBUTE: left_out}
    inline_small_chunks(vds, [s.path for s in scans], inline_threshold or 0)
    if out_path is not None:
        write_parquet(
            vds,
            out_path,
            record_size=record_size,
            overwrite=overwrite,
            inline_threshold=0 if inline_threshold == 0 else None,
        )
    return vds
