"""Where each scanned file's arrays go in the virtual dataset: the placement table.

A placement table has one row per (source URL, variable) with the destination offset of the
source array. :func:`place` derives it from the coordinate values; ``vrt`` reads it from a
GDAL multidimensional VRT; users may edit and pass their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from ...errors import IncompatibleSourcesError, InvalidArgumentError
from .model import ScanResult
from .timeunits import describe_time, effective_units, rebase_time_coordinates

__all__ = ["PLACEMENT_SCHEMA", "place", "placement_table"]

PLACEMENT_SCHEMA = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("variable", pa.string(), nullable=False),
        pa.field("dest_offset", pa.list_(pa.int64()), nullable=False),
    ]
)


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

    Parameters
    ----------
    scans
        The scanned files (:func:`scan_many`), in any order.
    concat_dim
        The dimension to concatenate along (default: the one coordinate whose values
        differ between the files; none with a single file).

    Returns
    -------
    pyarrow.Table
        :data:`PLACEMENT_SCHEMA`: one row per (file, array) placed, ``source`` the file's
        URL, ``dest_offset`` the array's offset in the composed array, one value per axis.

    Raises
    ------
    InvalidArgumentError
        ``scans`` is empty.
    IncompatibleSourcesError
        No coordinate, or several, differ between the files (pass ``concat_dim``); a file
        lacks ``concat_dim``; the files' ``concat_dim`` coordinates differ in units or
        overlap, or are not increasing (the message gives the values, and their dates for CF
        time units).

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
    >>> scans = dafzarr.refs.scan_many(["day1.nc", "day0.nc"], progress=False)
    >>> table = dafzarr.refs.place(scans)
    >>> [(s.rpartition("/")[2], v, o) for s, v, o in zip(*table.to_pydict().values())]
    [('day0.nc', 'sst', [0]), ('day0.nc', 'time', [0]), ('day1.nc', 'sst', [2]), ('day1.nc', 'time', [2])]
    """
    scans = list(scans)
    if not scans:
        raise InvalidArgumentError("no files to place")
    rebase_time_coordinates(scans)  # daily files counting time from their own day
    if len(scans) == 1 and concat_dim is None:
        rows = [(scans[0].url, n, [0] * len(v.shape)) for n, v in scans[0].variables.items()]
        return placement_table(rows)
    dim = concat_dim or _find_concat_dim(scans)
    for s in scans:
        if dim not in s.dimensions:
            raise IncompatibleSourcesError(f"{s.path}: has no dimension {dim!r}")
    if all(dim in s.coords and s.coords[dim].size for s in scans):
        _check_same_units(dim, scans)
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
    return placement_table(rows)


def _check_same_units(dim: str, scans: list[ScanResult]) -> None:
    """Files are ordered by their coordinate values only when these mean the same times."""
    first = effective_units(scans[0], dim)
    for s in scans[1:]:
        got = effective_units(s, dim)
        # the calendar first: files of several calendars are never rebased onto one epoch
        for label, a, b in zip(("calendar", "units"), first[::-1], got[::-1], strict=True):
            if a != b:
                raise IncompatibleSourcesError(
                    f"variable {dim!r}: {label} differs between {scans[0].path} ({a!r}) and "
                    f"{s.path} ({b!r}); refusing to combine them"
                )


def _check_coordinate_order(dim: str, scans: list[ScanResult]) -> None:
    """Concatenated coordinate values must increase strictly: no file overlaps the next."""
    for s in scans:
        values = s.coords[dim]
        if values.size > 1 and not np.all(np.diff(values) > 0):
            k = int(np.flatnonzero(np.diff(values) <= 0)[0])
            shown = [describe_time(x, *effective_units(s, dim)) for x in values[k : k + 2]]
            raise IncompatibleSourcesError(
                f"{s.path}: coordinate {dim!r} does not increase strictly within the file "
                f"({shown[0]} is followed by {shown[1]})"
            )
    for a, b in itertools.pairwise(scans):
        last, first = a.coords[dim][-1], b.coords[dim][0]
        if not last < first:
            raise IncompatibleSourcesError(
                f"overlapping sources along {dim!r}: {a.path} ends at "
                f"{describe_time(last, *effective_units(a, dim))} and {b.path} starts at "
                f"{describe_time(first, *effective_units(b, dim))}"
            )


def placement_table(rows: Iterable[tuple[str, str, list[int]]]) -> pa.Table:
    """A placement table from ``(source URL, variable, destination offset)`` rows."""
    src, var, off = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.Table.from_arrays(
        [pa.array(src, pa.string()), pa.array(var, pa.string()), pa.array(off)],
        schema=PLACEMENT_SCHEMA,
    )
