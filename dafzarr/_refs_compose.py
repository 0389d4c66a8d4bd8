"""Compose many scanned files into one virtual dataset: sources, placement, checks, scans."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ._progress import Progress as _Progress
from ._refs_scan import OnUnsupported, ScanResult, Variable, chunk_grid, file_url, scan
from ._refs_write import (
    VirtualArray,
    VirtualDataset,
    inline_small_chunks,
    used_groups,
    write_parquet,
)
from .errors import IncompatibleSourcesError

__all__ = [
    "PLACEMENT_SCHEMA",
    "compose",
    "mosaic_sources",
    "place",
    "scan_many",
    "virtualize",
]

PLACEMENT_SCHEMA = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("variable", pa.string(), nullable=False),
        pa.field("dest_offset", pa.list_(pa.int64()), nullable=False),
    ]
)
# Attributes that must agree across files for one array to mean one thing.
_MUST_AGREE = ("scale_factor", "add_offset", "_Unsigned", "units", "calendar")


# --- Sources ---------------------------------------------------------------------------------
def _as_url(path: str) -> str:
    return path if "://" in path else file_url(path)


def mosaic_sources(
    access: Sequence[str | os.PathLike[str]],
    public: Sequence[str] | None = None,
    *,
    check_sizes: bool = True,
) -> pa.Table:
    """The sources of a virtual dataset: what is opened and what is referenced.

    Parameters
    ----------
    access
        Local paths that are opened and scanned (a fast mirror of the data, say).
    public
        Durable URLs written into the references, one per ``access`` path (default: the
        ``file://`` URLs of ``access``). Byte offsets are identical in every copy of a file.
    check_sizes
        When a ``public`` URL is a local ``file://`` path, check that it exists with the same
        size as its ``access`` copy.

    Returns
    -------
    pyarrow.Table
        Columns ``access`` and ``public`` (strings), one row per file.
    """
    acc = [os.fspath(a) for a in access]
    pub = [_as_url(a) for a in acc] if public is None else [str(p) for p in public]
    if len(pub) != len(acc):
        raise ValueError(f"{len(acc)} access paths but {len(pub)} public URLs")
    for label, items in (("access path", acc), ("public URL", pub)):
        seen: set[str] = set()
        for item in items:
            if item in seen:
                raise ValueError(f"{label} {item!r} is listed twice")
            seen.add(item)
    if check_sizes:
        for a, p in zip(acc, pub, strict=True):
            if public is None and "://" not in a:
                continue  # p is file_url(a)
            if p.startswith("file://") and p != file_url(a):
                local = Path(p.removeprefix("file://"))
                if local.exists() and local.stat().st_size != Path(a).stat().st_size:
                    raise IncompatibleSourcesError(
                        f"{a} and its public copy {p} differ in size: offsets would not match"
                    )
    return pa.table({"access": pa.array(acc, pa.string()), "public": pa.array(pub, pa.string())})


def _sources_table(sources: Any) -> pa.Table:
    if isinstance(sources, pa.Table):
        if not {"access", "public"} <= set(sources.column_names):
            raise ValueError("a sources table needs the columns 'access' and 'public'")
        return sources
    if isinstance(sources, str | os.PathLike):
        sources = [sources]
    return mosaic_sources(list(sources))


# --- Scanning many files ------------------------------------------------------------------
def _scan_table(access: str, public: str, on_unsupported: OnUnsupported) -> pa.Table:
    """Scan one file into one Arrow table (what is sent back from a dask cluster)."""
    return scan(access, url=public, on_unsupported=on_unsupported).to_arrow()


def _scan_batch(
    access: list[str], public: list[str], on_unsupported: OnUnsupported
) -> list[ScanResult]:
    """Scan several files in a local worker process (results return pickled, in one message)."""
    return [
        scan(a, url=p, on_unsupported=on_unsupported) for a, p in zip(access, public, strict=True)
    ]


# Files per task for local processes: enough tasks per worker to balance the load, few enough
# that a task costs much more than sending it and its results.
_BATCH_MAX = 64
_TASKS_PER_WORKER = 8


def _worker_context() -> BaseContext:
    """Workers forked from a single-threaded server that has imported the scanner once.

    Forking this (possibly multi-threaded) process would be unsafe; spawning imports numpy,
    h5py and pyarrow again in every worker. Where fork servers do not exist, spawn.
    """
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    # pyarrow imports pandas on first use (about a second); import it once, in the server.
    ctx.set_forkserver_preload(["dafzarr._refs_compose", "pandas"])
    return ctx


def _is_dask_client(obj: Any) -> bool:
    return hasattr(obj, "map") and hasattr(obj, "gather") and hasattr(obj, "scheduler_info")


def scan_many(
    sources: Any,
    *,
    workers: Any = None,
    progress: bool = True,
    on_unsupported: OnUnsupported = "raise",
) -> list[ScanResult]:
    """Scan every source file, in the order of ``sources``.

    ``workers=None`` or ``1`` scans in this process; ``workers=N`` uses N local processes
    (files handed out in batches, results sent back pickled); a ``dask.distributed.Client``
    runs the scans on its cluster, one task per file, and only Arrow tables travel back.
    """
    table = _sources_table(sources)
    access = table.column("access").to_pylist()
    public = table.column("public").to_pylist()
    bar = _Progress(len(access), "scanning", progress)
    results: list[ScanResult | None] = [None] * len(access)
    if _is_dask_client(workers):
        futures = workers.map(
            _scan_table, access, public, on_unsupported=on_unsupported, pure=False
        )
        import distributed

        dask_completed: Any = distributed.as_completed

        index = {f.key: i for i, f in enumerate(futures)}
        for fut in dask_completed(futures):
            results[index[fut.key]] = ScanResult.from_arrow(fut.result())
            bar.step()
    elif workers is None or workers == 1:
        for i, (a, p) in enumerate(zip(access, public, strict=True)):
            results[i] = scan(a, url=p, on_unsupported=on_unsupported)
            bar.step()
    else:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be None, an int >= 1 or a dask Client: {workers!r}")
        n = len(access)
        batch = max(1, min(_BATCH_MAX, -(-n // (workers * _TASKS_PER_WORKER))))
        with ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context()) as ex:
            futs = {
                ex.submit(
                    _scan_batch, access[i : i + batch], public[i : i + batch], on_unsupported
                ): i
                for i in range(0, n, batch)
            }
            for fut in as_completed(futs):
                done = fut.result()
                start = futs[fut]
                results[start : start + len(done)] = done
                bar.step(len(done))
    return [r for r in results if r is not None]


# --- Placement ---------------------------------------------------------------------------------
def _find_concat_dim(scans: list[ScanResult]) -> str:
    common = set.intersection(*(set(s.coords) for s in scans))
    differing = sorted(
        name
        for name in common
        if "/" not in name
        and any(not np.array_equal(scans[0].coords[name], s.coords[name]) for s in scans[1:])
    )
    if len(differing) == 1:
        return differing[0]
    if not differing:
        raise IncompatibleSourcesError(
            "no coordinate variable differs between the files: pass concat_dim= (files: "
            f"{scans[0].path}, ...)"
        )
    raise IncompatibleSourcesError(
        f"several coordinates differ between the files ({', '.join(differing)}): pass concat_dim="
    )


def place(scans: Sequence[ScanResult], *, concat_dim: str | None = None) -> pa.Table:
    """Where each file's arrays go: a table ``(source, variable, dest_offset)``.

    Files are ordered along ``concat_dim`` (found from the coordinate values when not
    given) by their first coordinate value; arrays without that dimension come from the
    first file. The table can be inspected, edited, saved with ``pyarrow.parquet`` and
    passed back to :func:`virtualize` as ``placement=``.
    """
    scans = list(scans)
    if not scans:
        raise ValueError("no files to place")
    if len(scans) == 1 and concat_dim is None:
        rows = [(scans[0].url, n, [0] * len(v.shape)) for n, v in scans[0].variables.items()]
        return _placement(rows)
    dim = concat_dim or _find_concat_dim(scans)
    for s in scans:
        if dim not in s.dimensions:
            raise IncompatibleSourcesError(f"{s.path}: has no dimension {dim!r}")
    if all(dim in s.coords and s.coords[dim].size for s in scans):
        order = sorted(range(len(scans)), key=lambda i: float(scans[i].coords[dim][0]))
        _check_coordinate_order(dim, [scans[i] for i in order])
    else:
        order = list(range(len(scans)))
    rows = []
    start = 0
    for k, i in enumerate(order):
        s = scans[i]
        for name, v in s.variables.items():
            if dim in v.dims:
                off = [0] * len(v.shape)
                off[v.dims.index(dim)] = start
                rows.append((s.url, name, off))
            elif k == 0:
                rows.append((s.url, name, [0] * len(v.shape)))
        start += s.dimensions[dim]
    return _placement(rows)


def _check_coordinate_order(dim: str, scans: list[ScanResult]) -> None:
    """Concatenated coordinate values must increase strictly: no file overlaps the next."""
    for s in scans:
        values = s.coords[dim]
        if values.size > 1 and not np.all(np.diff(values) > 0):
            raise IncompatibleSourcesError(
                f"{s.path}: coordinate {dim!r} does not increase strictly within the file"
            )
    for a, b in itertools.pairwise(scans):
        last, first = a.coords[dim][-1], b.coords[dim][0]
        if not last < first:
            raise IncompatibleSourcesError(
                f"overlapping sources along {dim!r}: {a.path} ends at {last!r} and {b.path} "
                f"starts at {first!r}"
            )


def _placement(rows: Iterable[tuple[str, str, list[int]]]) -> pa.Table:
    src, var, off = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.Table.from_arrays(
        [pa.array(src, pa.string()), pa.array(var, pa.string()), pa.array(off)],
        schema=PLACEMENT_SCHEMA,
    )


# --- Consistency checks --------------------------------------------------------------------------
def _codec_key(filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Filters with deflate levels normalised: decoding does not depend on them."""
    return [
        {k: v for k, v in f.items() if not (f["id"] == "zlib" and k == "level")} for f in filters
    ]


def _check_same(name: str, pieces: list[tuple[ScanResult, Variable]]) -> None:
    s0, v0 = pieces[0]
    checks: list[tuple[str, Callable[[Variable], Any]]] = [
        ("dtype", lambda v: v.dtype),
        ("codec configuration", lambda v: _codec_key(v.filters)),
        ("chunk shape", lambda v: v.chunks),
        ("_FillValue (HDF5 fill value)", lambda v: v.fill_value),
        ("dimensions", lambda v: v.dims),
        *((a, (lambda v, a=a: v.attrs.get(a))) for a in _MUST_AGREE),
    ]
    for s, v in pieces[1:]:
        for label, get in checks:
            a, b = get(v0), get(v)
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
    inline_coords: bool = True,
) -> VirtualDataset:
    """Build one :class:`VirtualDataset` from scanned files and a placement table."""
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
            inline_coords
            and len(v0.dims) == 1
            and v0.dims[0] == name.rpartition("/")[2]
            and all(name in s.coords for s, _ in pieces)
        ):
            arrays[name] = _inline_coordinate(name, pieces, lo, shape)
            continue
        _check_alignment(name, pieces, lo, shape)
        arrays[name] = _place_refs(name, [i for i, _ in items], pieces, lo, shape)
    # Global and group attributes come from the same file as the arrays' own attributes: the
    # first one placed (the earliest along the concatenation), whatever order files were given
    first = by_url[src[0]][1] if src else scans[0]
    return VirtualDataset(paths=paths, arrays=arrays, groups=used_groups(first, arrays))


def _inline_coordinate(
    name: str, pieces: list[tuple[ScanResult, Variable]], lo: npt.NDArray[np.int64],
    shape: tuple[int, ...],
) -> VirtualArray:  # fmt: skip
    """A coordinate as one inlined, uncompressed chunk of the concatenated values."""
    v0 = pieces[0][1]
    dtype = np.dtype(v0.dtype)
    fill = np.asarray(_decode_fill(v0.fill_value, dtype), dtype=dtype)
    data = np.full(shape, fill, dtype=dtype)
    for (s, v), off in zip(pieces, lo, strict=True):
        data[int(off[0]) : int(off[0]) + v.shape[0]] = s.coords[name]
    zarray = {**v0.zarray(), "chunks": [max(1, shape[0])], "filters": None, "shape": list(shape)}
    return VirtualArray(
        name=name,
        zarray=zarray,
        zattrs=v0.zattrs(),
        path_index=np.full(1, -1, dtype=np.int32),
        offset=np.full(1, -1, dtype=np.int64),
        size=np.zeros(1, dtype=np.int64),
        raw={0: data.tobytes()},
    )


def _decode_fill(value: Any, dtype: np.dtype[Any]) -> Any:
    if isinstance(value, str) and dtype.kind == "f":
        return float(value.replace("Infinity", "inf"))
    return 0 if value is None else value


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
    inline_threshold: int = 0,
    inline_coords: bool = True,
    workers: Any = None,
    progress: bool = True,
    on_unsupported: OnUnsupported = "raise",
    overwrite: bool = False,
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
        ``gdal mdim mosaic``) whose ``<Source>``s say where each file goes.
    record_size
        References per parquet file.
    inline_threshold
        Inline chunks smaller than this many bytes (0: never; VirtualiZarr < 2.6.1 cannot read
        inlined chunks).
    inline_coords
        Inline the values of coordinate variables (1-D, named after their dimension).
    workers
        ``None``/1: scan in this process; N: N local processes; a ``dask.distributed.Client``:
        scan on its cluster.
    progress
        Show a progress bar on stderr while scanning several files.
    on_unsupported, overwrite
        As for :func:`dafzarr.refs.scan` and :func:`dafzarr.refs.write_parquet`.

    Raises
    ------
    IncompatibleSourcesError
        Files differ in dtype, codec configuration, chunk shape, fill value, ``scale_factor``,
        ``add_offset``, ``_Unsigned``, ``units`` or ``calendar``; a file boundary is not
        aligned to chunks; sources overlap.
    """
    table = _sources_table(sources)
    scans = scan_many(table, workers=workers, progress=progress, on_unsupported=on_unsupported)
    if placement is None:
        placement_table = place(scans, concat_dim=concat_dim)
    elif isinstance(placement, pa.Table):
        placement_table = placement
    else:
        from ._refs_vrt import placement_from_vrt

        placement_table = placement_from_vrt(placement, table, scans)
    vds = compose(scans, placement_table, inline_coords=inline_coords)
    vds.placement = placement_table
    inline_small_chunks(vds, [s.path for s in scans], inline_threshold)
    if out_path is not None:
        write_parquet(vds, out_path, record_size=record_size, overwrite=overwrite)
    return vds
