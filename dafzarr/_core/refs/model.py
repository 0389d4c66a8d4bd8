"""The records the reference pipeline passes along, and their zarr v2 JSON encoding.

:class:`Variable` and :class:`ScanResult` are what a scan produces (and what a dask worker
sends back, through :meth:`ScanResult.to_arrow`); what composing produces and writing
consumes is in :mod:`.virtual`. Nothing here opens a file: the scanner, the composer and the
writers all build on this module.
"""

from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = [
    "OnUnsupported",
    "ScanResult",
    "Variable",
    "chunk_grid",
    "decode_fill",
    "dumps",
    "encode_fill",
    "file_url",
]

OnUnsupported = Literal["raise", "skip"]


# --- JSON encoding -----------------------------------------------------------------------
def dumps(obj: Any) -> str:
    """JSON text; non-finite floats in attributes stay bare ``NaN``/``Infinity`` tokens."""
    return json.dumps(obj, allow_nan=True, separators=(",", ":"))


def file_url(path: str | os.PathLike[str]) -> str:
    """``file://`` URL of a local path (absolute; symbolic links are kept, not resolved)."""
    return Path(os.path.abspath(path)).as_uri()


def chunk_grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[int, ...]:
    """``ceil(shape / chunks)`` per axis; a 0-d array has one chunk."""
    if not shape:
        return (1,)
    return tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))


def encode_fill(value: Any, dtype: np.dtype[Any]) -> Any:
    """A fill value in zarr v2's JSON encoding (NaN as ``"NaN"``, bytes as base64)."""
    if value is None:
        return None
    if dtype.kind == "O":
        return ""
    if dtype.kind in "SV":
        raw = np.asarray(value, dtype=dtype).tobytes()
        return base64.standard_b64encode(raw).decode("ascii")
    if dtype.kind == "c":
        c = complex(value)
        return [encode_fill(c.real, np.dtype("f8")), encode_fill(c.imag, np.dtype("f8"))]
    if dtype.kind == "f":
        f = float(value)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if dtype.kind == "b":
        return bool(value)
    return int(value)


def decode_fill(value: Any, dtype: np.dtype[Any]) -> Any:
    """A numeric fill value back from :func:`encode_fill`'s JSON (``None``: 0)."""
    if isinstance(value, str) and dtype.kind == "f":
        return float(value.replace("Infinity", "inf"))
    return 0 if value is None else value


# --- What a scan produces ------------------------------------------------------------------
@dataclass(eq=False)
class Variable:
    """One array of a scanned file: zarr v2 metadata and dense chunk references.

    Chunk references are flat numpy columns in C order over the chunk grid
    ``ceil(shape / chunks)``: ``offset`` (-1 marks a missing chunk, read as ``fill_value``),
    ``size`` and ``filter_mask``. Chunks whose bytes are inlined (compact layout, variable-length
    strings) are in ``raw``, keyed by flat index, with ``offset`` -1. A scan
    (:func:`~dafzarr.refs.scan`) builds them; the fields are not checked on construction.

    Parameters
    ----------
    name
        The variable's full path in its file, without the leading ``/``.
    group
        The path of the group holding it (``""``: the root).
    dtype
        The numpy type string with its byte order (``"<f4"``).
    shape
        The array's shape (netCDF dimension lengths for unlimited dimensions).
    chunks
        The chunk shape (the whole shape for a contiguous or compact variable).
    filters
        numcodecs configurations in pipeline order (deflate, shuffle, fletcher32, ...).
    fill_value
        The HDF5 fill value in zarr v2's JSON encoding (``None``: none).
    attrs
        The attributes, netCDF's hidden bookkeeping attributes left out.
    dims
        Dimension names, one per axis (``phony_dim_N`` where a file has no dimension scale).
    layout
        The HDF5 storage layout: ``"chunked"``, ``"contiguous"`` or ``"compact"``.
    offset
        Byte offset of each chunk in the file (-1: missing or inlined).
    size
        Stored byte size of each chunk.
    filter_mask
        HDF5's per-chunk filter mask (0: every filter applied).
    raw
        Inlined chunk bytes, by flat chunk index.

    Raises
    ------
    TypeError
        A field missing or unknown (the values themselves are not checked).

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> sst = dafzarr.refs.scan("day0.nc")["sst"]
    >>> sst.dtype, sst.shape, sst.chunks, sst.grid, sst.nchunks, sst.attrs
    ('<f4', (4, 8), (2, 4), (2, 2), 4, {'units': 'degC'})
    >>> bool((sst.offset > 0).all()), sst.size.tolist()
    (True, [32, 32, 32, 32])
    """

    name: str
    group: str
    dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    filters: list[dict[str, Any]]
    fill_value: Any
    attrs: dict[str, Any]
    dims: tuple[str, ...]
    layout: str
    offset: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]
    filter_mask: npt.NDArray[np.uint32]
    raw: dict[int, bytes] = field(default_factory=dict)

    @property
    def grid(self) -> tuple[int, ...]:
        """Number of chunks along each axis (``(1,)`` for a 0-d array)."""
        return chunk_grid(self.shape, self.chunks)

    @property
    def nchunks(self) -> int:
        """Number of chunk slots (allocated or not)."""
        return int(self.offset.shape[0])

    def zarray(self) -> dict[str, Any]:
        """The zarr v2 ``.zarray`` document.

        Returns
        -------
        dict
            ``shape``, ``chunks``, ``dtype``, ``filters`` (``None`` when there are none),
            ``fill_value``, C order, ``"."`` as dimension separator and no compressor (the
            codecs are all in ``filters``).

        Raises
        ------
        KeyError
            Never: every field is the variable's own.

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> z = dafzarr.refs.scan("day0.nc")["sst"].zarray()
        >>> z["shape"], z["chunks"], z["dtype"], z["filters"]
        ([4, 8], [2, 4], '<f4', None)
        """
        return {
            "zarr_format": 2,
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "dtype": self.dtype,
            "compressor": None,
            "filters": [dict(f) for f in self.filters] or None,
            "fill_value": self.fill_value,
            "order": "C",
            "dimension_separator": ".",
        }

    def zattrs(self) -> dict[str, Any]:
        """The zarr v2 ``.zattrs`` document (``_ARRAY_DIMENSIONS`` first).

        Returns
        -------
        dict
            The dimension names under ``_ARRAY_DIMENSIONS`` (as xarray reads them), then the
            variable's attributes.

        Raises
        ------
        KeyError
            Never: every field is the variable's own.

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> dafzarr.refs.scan("day0.nc")["sst"].zattrs()
        {'_ARRAY_DIMENSIONS': ['phony_dim_0', 'phony_dim_1'], 'units': 'degC'}
        """
        return {"_ARRAY_DIMENSIONS": list(self.dims), **self.attrs}

    @property
    def refs(self) -> pa.Table:
        """The chunk references as an Arrow table (one row per chunk slot, C order)."""
        n = self.nchunks
        raw: pa.Array
        if self.raw:
            items: list[bytes | None] = [None] * n
            for i, b in self.raw.items():
                items[i] = b
            raw = pa.array(items, pa.binary())
        else:
            raw = pa.nulls(n, pa.binary())
        return pa.table(
            {
                "chunk": pa.array(np.arange(n, dtype=np.int64)),
                "offset": pa.array(self.offset),
                "size": pa.array(self.size),
                "filter_mask": pa.array(self.filter_mask),
                "raw": raw,
            }
        )

    def metadata(self) -> dict[str, Any]:
        """Everything but the reference columns, as a JSON-ready dict.

        Returns
        -------
        dict
            ``name``, ``group``, ``dtype``, ``shape``, ``chunks``, ``filters``,
            ``fill_value``, ``attrs``, ``dims`` and ``layout`` (tuples as lists).

        Raises
        ------
        KeyError
            Never: every field is the variable's own.

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> m = dafzarr.refs.scan("day0.nc")["sst"].metadata()
        >>> m["name"], m["shape"], m["layout"], m["dims"]
        ('sst', [4, 8], 'chunked', ['phony_dim_0', 'phony_dim_1'])
        """
        return {
            "name": self.name,
            "group": self.group,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "filters": self.filters,
            "fill_value": self.fill_value,
            "attrs": self.attrs,
            "dims": list(self.dims),
            "layout": self.layout,
        }


@dataclass(eq=False)
class ScanResult:
    """The arrays, groups and dimensions of one scanned file.

    ``path`` is the file that was opened; ``url`` the location written into references
    (an absolute ``file://`` URL unless another public URL was given). ``result[name]`` is
    the variable ``name`` (its full path, without the leading ``/``).

    Parameters
    ----------
    path
        The file that was opened (the *access* path).
    url
        The location written into references (the *public* path).
    variables
        The scanned arrays, by full path.
    groups
        The attributes of each group, by path (``""``: the root).
    dimensions
        The length of each dimension, by name.
    file_size
        The file's size in bytes.
    coords
        The values of the coordinate variables (1-D, named after their dimension), by name:
        what composing many files orders them by.
    rebased
        Coordinates whose ``coords`` values were re-expressed in other CF time units (name to
        those units); composing writes their values inline.

    Raises
    ------
    KeyError
        ``result[name]`` of a variable the scan does not hold.

    Examples
    --------
    >>> import h5py
    >>> with h5py.File("day0.nc", "w") as f:
    ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
    ...     sst.attrs["units"] = "degC"
    >>> r = dafzarr.refs.scan("day0.nc")
    >>> list(r.variables), r.dimensions, r.url.startswith("file:///")
    (['sst'], {'phony_dim_0': 4, 'phony_dim_1': 8}, True)
    >>> r["sst"].shape
    (4, 8)
    """

    path: str
    url: str
    variables: dict[str, Variable]
    groups: dict[str, dict[str, Any]]
    dimensions: dict[str, int]
    file_size: int
    coords: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    # Coordinates whose ``coords`` values were re-expressed in other CF time units (name ->
    # those units; see ``timeunits``): their composed values are written inline.
    rebased: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Variable:
        return self.variables[name]

    def to_arrow(self) -> pa.Table:
        """All references of the file in one Arrow table; metadata in the schema.

        This is what a dask cluster sends back in parallel scans (see :meth:`from_arrow`).

        Returns
        -------
        pyarrow.Table
            Columns ``variable``, ``chunk``, ``offset``, ``size``, ``filter_mask`` and
            ``raw``, the variables one after the other; the rest of the scan (paths, groups,
            dimensions, coordinates, each variable's metadata) as JSON under the schema
            metadata key ``dafzarr.scan``.

        Raises
        ------
        TypeError
            An attribute that JSON cannot encode (a scan never produces one).

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> table = dafzarr.refs.scan("day0.nc").to_arrow()
        >>> table.num_rows, table.column_names
        (4, ['variable', 'chunk', 'offset', 'size', 'filter_mask', 'raw'])
        """
        parts = []
        for v in self.variables.values():
            t = v.refs
            parts.append(t.add_column(0, "variable", pa.repeat(pa.scalar(v.name), t.num_rows)))
        schema = pa.schema(
            [
                ("variable", pa.string()),
                ("chunk", pa.int64()),
                ("offset", pa.int64()),
                ("size", pa.int64()),
                ("filter_mask", pa.uint32()),
                ("raw", pa.binary()),
            ]
        )
        table = pa.concat_tables(parts) if parts else schema.empty_table()
        meta = {
            "path": self.path,
            "url": self.url,
            "groups": self.groups,
            "dimensions": self.dimensions,
            "file_size": self.file_size,
            "coords": {
                k: [a.dtype.str, base64.b64encode(a.tobytes()).decode("ascii")]
                for k, a in self.coords.items()
            },
            "variables": [v.metadata() for v in self.variables.values()],
        }
        return table.replace_schema_metadata({b"dafzarr.scan": dumps(meta).encode()})

    @classmethod
    def from_arrow(cls, table: pa.Table) -> ScanResult:
        """Rebuild a :class:`ScanResult` from :meth:`to_arrow`'s table.

        Parameters
        ----------
        table
            A table :meth:`to_arrow` returned (its schema metadata included).

        Returns
        -------
        ScanResult
            The scan that was encoded, equal field for field.

        Raises
        ------
        KeyError
            ``table`` has no ``dafzarr.scan`` schema metadata or lacks a column: it is not
            one :meth:`to_arrow` wrote.

        Examples
        --------
        >>> import h5py
        >>> with h5py.File("day0.nc", "w") as f:
        ...     sst = f.create_dataset("sst", data=np.zeros((4, 8), "f4"), chunks=(2, 4))
        ...     sst.attrs["units"] = "degC"
        >>> r = dafzarr.refs.scan("day0.nc")
        >>> back = dafzarr.refs.ScanResult.from_arrow(r.to_arrow())
        >>> back.path, back["sst"].shape, back["sst"].offset.tolist() == r["sst"].offset.tolist()
        ('day0.nc', (4, 8), True)
        """
        meta = json.loads((table.schema.metadata or {})[b"dafzarr.scan"])
        variables: dict[str, Variable] = {}
        start = 0
        offset = table.column("offset").to_numpy()
        size = table.column("size").to_numpy()
        mask = table.column("filter_mask").to_numpy()
        raw_col = table.column("raw")
        for m in meta["variables"]:
            n = math.prod(chunk_grid(tuple(m["shape"]), tuple(m["chunks"])))
            stop = start + n
            raw_slice = raw_col.slice(start, n)
            raw: dict[int, bytes] = {}
            if raw_slice.null_count != n:
                raw = {i: b for i, b in enumerate(raw_slice.to_pylist()) if b is not None}
            variables[m["name"]] = Variable(
                name=m["name"],
                group=m["group"],
                dtype=m["dtype"],
                shape=tuple(m["shape"]),
                chunks=tuple(m["chunks"]),
                filters=m["filters"],
                fill_value=m["fill_value"],
                attrs=m["attrs"],
                dims=tuple(m["dims"]),
                layout=m["layout"],
                offset=np.ascontiguousarray(offset[start:stop], dtype=np.int64),
                size=np.ascontiguousarray(size[start:stop], dtype=np.int64),
                filter_mask=np.ascontiguousarray(mask[start:stop], dtype=np.uint32),
                raw=raw,
            )
            start = stop
        return cls(
            path=meta["path"],
            url=meta["url"],
            variables=variables,
            groups=meta["groups"],
            dimensions=meta["dimensions"],
            file_size=meta["file_size"],
            coords={
                k: np.frombuffer(base64.b64decode(b), dtype=np.dtype(dt))
                for k, (dt, b) in meta["coords"].items()
            },
        )
