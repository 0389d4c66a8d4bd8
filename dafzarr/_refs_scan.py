"""Scan one NetCDF4/HDF5 file into per-variable metadata and dense chunk-reference columns."""

from __future__ import annotations

import base64
import json
import math
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import h5py
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import _h5chunks
from .errors import H5Error, UnsupportedHDF5Error, UnsupportedVariableWarning

try:  # how h5py.File encodes file names for HDF5
    from h5py._hl.compat import filename_encode as _filename_encode
except ImportError:
    _filename_encode = os.fsencode

__all__ = ["HIDDEN_ATTRIBUTES", "ScanResult", "Variable", "file_url", "scan"]

# netCDF-C / HDF5 dimension-scale bookkeeping; exact names only (``_NCPROPERTIES`` is ordinary).
HIDDEN_ATTRIBUTES = frozenset(
    {
        "CLASS",
        "NAME",
        "DIMENSION_LIST",
        "REFERENCE_LIST",
        "_Netcdf4Dimid",
        "_Netcdf4Coordinates",
        "_nc3_strict",
        "_NCProperties",
    }
)
_DIMENSION_ONLY = b"This is a netCDF dimension but not a netCDF variable"

# HDF5 filter ids dafzarr knows by name (for messages) and the ones it maps to numcodecs.
_FILTER_NAMES = {
    1: "deflate",
    2: "shuffle",
    3: "fletcher32",
    4: "szip",
    5: "nbit",
    6: "scaleoffset",
    307: "bzip2",
    32000: "lzf",
    32001: "blosc",
    32004: "lz4",
    32008: "bitshuffle",
    32015: "zstd",
}
_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
_HDF5_VERSION = tuple(int(x) for x in h5py.version.hdf5_version.split(".")[:3])
# H5Dchunk_iter reports addresses without the user block before HDF5 1.14.4.
_CHUNK_ADDR_NEEDS_USERBLOCK = _HDF5_VERSION < (1, 14, 4)

OnUnsupported = Literal["raise", "skip"]
_MAX_COORD = 10_000_000  # coordinate values read during a scan (elements)
# A variable's dense chunk references (20 bytes per chunk slot, stored or not) or padded inline
# data may take at most this many times the file's size, or _MEMORY_FLOOR: a small file that
# declares a huge grid of mostly unwritten chunks is refused before the columns are allocated.
_MEMORY_RATIO = 4
_MEMORY_FLOOR = 64 << 20
_SLOT_BYTES = 8 + 8 + 4  # offset, size, filter mask


# --- Records ---------------------------------------------------------------------------
@dataclass(eq=False)
class Variable:
    """One array of a scanned file: zarr v2 metadata and dense chunk references.

    Chunk references are flat numpy columns in C order over the chunk grid
    ``ceil(shape / chunks)``: ``offset`` (-1 marks a missing chunk, read as ``fill_value``),
    ``size`` and ``filter_mask``. Chunks whose bytes are inlined (compact layout, variable-length
    strings) are in ``raw``, keyed by flat index, with ``offset`` -1.
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
        """The zarr v2 ``.zarray`` document."""
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
        """The zarr v2 ``.zattrs`` document (``_ARRAY_DIMENSIONS`` first)."""
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
        """Everything but the reference columns, as a JSON-ready dict."""
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
    (an absolute ``file://`` URL unless another public URL was given).
    """

    path: str
    url: str
    variables: dict[str, Variable]
    groups: dict[str, dict[str, Any]]
    dimensions: dict[str, int]
    file_size: int
    coords: dict[str, npt.NDArray[Any]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Variable:
        return self.variables[name]

    def to_arrow(self) -> pa.Table:
        """All references of the file in one Arrow table; metadata in the schema.

        This is what a dask cluster sends back in parallel scans (see :meth:`from_arrow`).
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
        """Rebuild a :class:`ScanResult` from :meth:`to_arrow`'s table."""
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


# --- JSON helpers ----------------------------------------------------------------------
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


def attr_to_json(value: Any) -> Any:
    """An HDF5 attribute value as JSON data, with netCDF semantics (length-1 arrays are scalars)."""
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OSc":
            items = [attr_to_json(v) for v in value.ravel().tolist()]
        else:
            items = value.ravel().tolist()
        if value.size == 1:
            return items[0]
        return items
    if isinstance(value, np.generic):
        return attr_to_json(value.item() if not isinstance(value, np.bytes_) else bytes(value))
    if isinstance(value, h5py.Reference):
        return None
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, list):
        return [attr_to_json(v) for v in value]
    return value


# --- Codecs ------------------------------------------------------------------------------
def _filter_label(code: int) -> str:
    return f"{_FILTER_NAMES.get(code, 'unknown')} (HDF5 filter id {code})"


def _codec(code: int, cd: tuple[int, ...], itemsize: int, where: str) -> dict[str, Any]:
    """One HDF5 filter as a numcodecs config, or :class:`UnsupportedHDF5Error`."""
    if code == 1:
        return {"id": "zlib", "level": int(cd[0]) if cd else 1}
    if code == 2:
        return {"id": "shuffle", "elementsize": itemsize}
    if code == 3:
        return {"id": "fletcher32"}
    if code == 32015:
        return {"id": "zstd", "level": int(cd[0]) if cd else 0}
    if code == 32001 and len(cd) >= 7:
        return {
            "id": "blosc",
            "cname": _BLOSC_CNAMES[cd[6]] if cd[6] < len(_BLOSC_CNAMES) else "blosclz",
            "clevel": int(cd[4]),
            "shuffle": int(cd[5]),
            "blocksize": 0,
        }
    raise UnsupportedHDF5Error(
        f"{where}: unsupported filter {_filter_label(code)}; its chunks cannot be decoded "
        "by numcodecs"
    )


# --- Scanning ----------------------------------------------------------------------------
# Hidden attributes the scanner itself needs (read raw, once per dataset).
_NEEDED_RAW = ("CLASS", "NAME", "DIMENSION_LIST", "_FillValue")
_NOT_READ = frozenset(k.encode() for k in HIDDEN_ATTRIBUTES.difference(_NEEDED_RAW))


_DEFERRED = object()  # an attribute left for its user to read


class _Parent:
    """What :class:`h5py.AttributeManager` needs of an object: its identifier."""

    __slots__ = ("id",)

    def __init__(self, oid: Any) -> None:
        self.id = oid


def _decode_name(raw: bytes) -> str | bytes:
    """An HDF5 name as h5py gives it: UTF-8 text, or the bytes when they are not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _read_attrs(oid: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each attribute read once: (visible ones as JSON data, raw values the scanner needs).

    ``oid`` is an open ``GroupID`` or ``DatasetID``. Common attribute kinds are read by the
    extension directly; the others (and everything, if the extension cannot list them)
    through h5py's ``AttributeManager``, with the same values either way.
    """
    visible: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    manager: Any = None
    listed = _h5chunks.read_attrs(oid, isinstance(oid, h5py.h5d.DatasetID), _NOT_READ)
    items: list[tuple[Any, Any]]
    if listed is None:
        manager = h5py.AttributeManager(_Parent(oid))
        items = [(key, _h5chunks.SLOW) for key in manager]
    else:
        items = [(_decode_name(k), v) for k, v in listed]
    for key, value in items:
        if key in HIDDEN_ATTRIBUTES and key not in _NEEDED_RAW:
            continue
        if key == "DIMENSION_LIST" and value is _h5chunks.SLOW:
            raw[key] = _DEFERRED  # read by _dimension_scales, which needs only the names
            continue
        if value is _h5chunks.SLOW:
            if manager is None:
                manager = h5py.AttributeManager(_Parent(oid))
            try:
                value = manager[key]
            except (OSError, TypeError, ValueError):  # types h5py cannot read (vlen of vlen)
                continue
        if key in _NEEDED_RAW:
            raw[key] = value
        if key not in HIDDEN_ATTRIBUTES:
            visible[key] = attr_to_json(value)
    return visible, raw


def _is_dimension_only(raw: dict[str, Any]) -> bool:
    name = raw.get("NAME")
    return isinstance(name, bytes) and name.startswith(_DIMENSION_ONLY)


def _collect(fid: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Datasets and groups reached through hard links: path -> open identifier.

    Links are listed first (no object is opened while visiting): object info (``H5Ovisit``'s)
    would also measure each dataset's chunk index, a walk of the whole index per dataset.
    """
    names: list[bytes] = []
    fid.links.visit(names.append)
    datasets: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for raw in names:
        # Soft links name objects reached through their hard link anyway; external links
        # point into other files, whose byte offsets must not be written against this one.
        if fid.links.get_info(raw).type != h5py.h5l.TYPE_HARD:
            continue
        try:
            obj = h5py.h5o.open(fid, raw)
        except (KeyError, OSError, ValueError):  # dangling soft or external link
            continue
        if isinstance(obj, h5py.h5d.DatasetID):
            datasets[raw.decode("utf-8")] = obj
        elif isinstance(obj, h5py.h5g.GroupID):
            groups[raw.decode("utf-8")] = obj
    return datasets, groups


def _dimension_scales(fid: Any, dsid: Any, raw: dict[str, Any], ndim: int) -> list[str] | None:
    """HDF5 paths of the dimension scales attached to each axis, from ``DIMENSION_LIST``."""
    dl = raw.get("DIMENSION_LIST")
    if dl is None:
        return None
    out = []
    if dl is _DEFERRED:
        names = _h5chunks.scale_names(dsid, fid)
        if names is None:  # an axis without a scale
            return None
        if names is not _h5chunks.SLOW:
            try:
                out = [n.decode("utf-8") for n in names]
            except ValueError:
                return None
            return out if len(out) == ndim else None
        try:
            dl = h5py.AttributeManager(_Parent(dsid))["DIMENSION_LIST"]
        except (OSError, TypeError, ValueError):  # as _read_attrs: an unreadable attribute
            return None
    try:
        for axis_refs in dl:
            refs = np.atleast_1d(axis_refs)
            if not refs.size:
                return None
            name = h5py.h5r.get_name(refs[0], fid)
            if name is None:  # a reference to an object without a path (dangling)
                return None
            out.append(name.decode("utf-8"))
    except (KeyError, ValueError, TypeError, OSError):
        return None
    return out if len(out) == ndim else None


def _user_block(fid: Any) -> int:
    return int(fid.get_create_plist().get_userblock())


_FAPL: Any = None


def _file_access() -> Any:
    """The file access properties ``h5py.File(path, "r")`` uses by default."""
    try:
        from h5py._hl.files import make_fapl

        return make_fapl(None)
    except (ImportError, TypeError):  # h5py reorganised its helpers: its defaults by hand
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
        return fapl


def _open(p: str) -> Any:
    """``h5py.File(p, "r")``'s file identifier, without the high-level File around it."""
    global _FAPL
    if _FAPL is None:
        _FAPL = _file_access()
    return h5py.h5f.open(_filename_encode(p), h5py.h5f.ACC_RDONLY, fapl=_FAPL)


def _fillvalue(dsid: Any, dcpl: Any) -> Any:
    """The HDF5 fill value as h5py's ``Dataset.fillvalue`` gives it."""
    arr = np.zeros((1,), dtype=dsid.dtype)
    dcpl.get_fill_value(arr)
    return arr[0]


def _read_all(dsid: Any, shape: tuple[int, ...], dtype: Any) -> npt.NDArray[Any]:
    """All values of a dataset of a numeric type (``dtype``: h5py's), as ``Dataset[()]``."""
    arr = np.zeros(shape, dtype=dtype)
    if arr.size:
        dsid.read(h5py.h5s.ALL, h5py.h5s.ALL, arr)
    return arr


def scan(
    path: str | os.PathLike[str],
    *,
    url: str | None = None,
    variables: Iterable[str] | None = None,
    on_unsupported: OnUnsupported = "raise",
) -> ScanResult:
    """Scan a NetCDF4/HDF5 file's arrays and chunk indexes.

    Parameters
    ----------
    path
        Local file to open (the *access* path).
    url
        Location written into references (the *public* path); default: ``file://`` URL of
        ``path``. Byte offsets are identical in every copy of a file.
    variables
        Only these variables (full paths without the leading ``/``); default: all.
    on_unsupported
        ``"raise"`` (default): an :class:`~dafzarr.errors.UnsupportedHDF5Error` naming the
        file, variable and cause for anything that cannot be referenced (szip, scaleoffset,
        unknown filters, non-zero per-chunk filter masks, compound or reference types; types
        whose stored bytes are not numpy's encoding of the values HDF5 reads, such as
        integers with padding bits or non-IEEE floats; data in external files);
        ``"skip"``: leave such variables out with an
        :class:`~dafzarr.errors.UnsupportedVariableWarning`.

    Returns
    -------
    ScanResult
        Per variable: dtype with byte order, shape (netCDF dimension lengths for unlimited
        dimensions), chunk shape, filters in pipeline order as numcodecs configs, the HDF5
        fill value, attributes minus netCDF's hidden ones, dimension names, group path and
        dense chunk references.
    """
    if on_unsupported not in ("raise", "skip"):
        raise ValueError(f"on_unsupported must be 'raise' or 'skip', not {on_unsupported!r}")
    p = os.fspath(path)
    if url is None:
        url = file_url(p)
    wanted = None if variables is None else {v.lstrip("/") for v in variables}
    try:
        fid = _open(p)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.isfile(p) and not h5py.is_hdf5(p):
            raise UnsupportedHDF5Error(
                f"{p}: not an HDF5/NetCDF4 file (netCDF3 classic, GRIB and other formats "
                "cannot be scanned)"
            ) from exc
        raise H5Error(f"{p}: HDF5 cannot open the file: {exc}") from exc
    opened: list[Any] = []
    try:
        return _scan_file(fid, opened, p, url, wanted, on_unsupported)
    except (UnsupportedHDF5Error, H5Error):
        raise
    except (RuntimeError, OSError, ValueError, KeyError, TypeError) as exc:
        raise H5Error(f"{p}: {exc}") from exc
    finally:
        # As h5py.File.close: every object of the file closed, then the file itself.
        for oid in opened:
            if oid.valid:
                oid.close()
        fid.close()


def _scan_file(
    fid: Any,
    opened: list[Any],
    p: str,
    url: str,
    wanted: set[str] | None,
    on_unsupported: OnUnsupported,
) -> ScanResult:
    root = h5py.h5g.open(fid, b"/")
    opened.append(root)
    datasets, group_ids = _collect(fid)
    opened.extend(datasets.values())
    opened.extend(group_ids.values())
    groups = {"": _read_attrs(root)[0]}
    for g, gid in group_ids.items():
        groups[g] = _read_attrs(gid)[0]
    user_block = _user_block(fid) if _CHUNK_ADDR_NEEDS_USERBLOCK else 0

    # Dimension lengths: a scale's length is the largest extent of any axis attached to
    # it (netCDF's length of an unlimited dimension).
    attrs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    scales: dict[str, list[str] | None] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    dim_len: dict[str, int] = {}
    dimension_only: set[str] = set()
    for name, dsid in datasets.items():
        shapes[name] = ds_shape = tuple(int(n) for n in dsid.shape)
        attrs[name] = _read_attrs(dsid)
        raw = attrs[name][1]
        if _is_dimension_only(raw):
            dimension_only.add(name)
        sc = _dimension_scales(fid, dsid, raw, len(ds_shape))
        if raw.get("CLASS") == b"DIMENSION_SCALE" and len(ds_shape) == 1:
            own: Any = _decode_name(h5py.h5i.get_name(dsid))
            sc = [own]  # a dimension scale names its own dimension
        scales[name] = sc
        if sc is not None:
            for axis, key in enumerate(sc):
                dim_len[key] = max(dim_len.get(key, 0), ds_shape[axis])

    phony: dict[int, str] = {}  # arrays without dimension scales: one name per length
    for name in datasets:
        if scales[name] is None and name not in dimension_only:
            for n in shapes[name]:
                phony.setdefault(n, f"/phony_dim_{len(phony)}")
                dim_len[phony[n]] = n
            scales[name] = [phony[n] for n in shapes[name]]

    out: dict[str, Variable] = {}
    numeric: dict[str, tuple[np.dtype[Any], Any] | None] = {}
    for name, ds in datasets.items():
        if name in dimension_only or (wanted is not None and name not in wanted):
            continue
        where = f"{p}: variable {name!r}"
        sc = scales[name]
        assert sc is not None  # every remaining dataset got scales or phony dimensions
        try:
            numeric[name] = _h5chunks.numeric_info(ds)
            out[name] = _scan_dataset(
                ds, name, shapes[name], numeric[name], sc, dim_len, attrs[name], user_block, where
            )
        except UnsupportedHDF5Error as exc:
            if on_unsupported == "raise":
                raise
            warnings.warn(f"skipped: {exc}", UnsupportedVariableWarning, stacklevel=3)
        except (RuntimeError, OSError, ValueError, KeyError, TypeError) as exc:
            raise H5Error(f"{where}: {exc}") from exc
    dimensions = {k.lstrip("/"): v for k, v in dim_len.items()}
    # Values of coordinate variables (1-D, named after their dimension), for composing
    # files along a dimension; read here so that workers send back everything compose needs.
    coords = {}
    for name, v in out.items():
        if (
            len(v.dims) == 1
            and v.dims[0] == name.rpartition("/")[2]
            and v.dtype[1] in "iuf"
            and v.shape[0] <= _MAX_COORD
        ):
            dsid = datasets[name]
            info = numeric[name]
            file_dtype = dsid.dtype if info is None else info[0]
            data = np.asarray(_read_all(dsid, shapes[name], file_dtype), dtype=np.dtype(v.dtype))
            if data.shape != v.shape:  # a shorter coordinate on an unlimited dimension
                fill = _fillvalue(dsid, dsid.get_create_plist()) if info is None else info[1]
                full = np.full(v.shape, fill, dtype=data.dtype)
                full[: data.shape[0]] = data
                data = full
            coords[name] = data
    return ScanResult(
        path=p,
        url=url,
        variables=out,
        groups=groups,
        dimensions=dimensions,
        file_size=os.path.getsize(p),
        coords=coords,
    )


def _check_memory(nbytes: int, what: str, file_size: int, where: str) -> None:
    """Refuse a variable whose description would take ``nbytes`` of memory, more than the
    file's size can justify (see ``_MEMORY_RATIO``)."""
    limit = max(_MEMORY_FLOOR, _MEMORY_RATIO * file_size)
    if nbytes > limit:
        raise UnsupportedHDF5Error(
            f"{where}: {what} would take {nbytes} bytes of memory to reference, more than "
            f"{limit} ({_MEMORY_RATIO} times the file's {file_size} bytes, at least "
            f"{_MEMORY_FLOOR}); the file declares far more than it stores"
        )


def _dtype_of(ds: Any, where: str, problem: str | None) -> tuple[np.dtype[Any], bool]:
    """The numpy dtype (the one h5py reads into) and whether the data are vlen strings.

    ``problem`` is :func:`_h5chunks.storage_problem`'s finding, named when h5py has no
    dtype for the type at all.
    """
    try:
        dt = ds.dtype
    except (KeyError, TypeError, ValueError) as exc:  # h5py: no numpy equivalent
        raise UnsupportedHDF5Error(
            f"{where}: data type without a numpy equivalent ({problem or exc})"
        ) from exc
    if dt.metadata is None and (dt.kind in "iu" or (dt.kind == "f" and dt.itemsize <= 8)):
        return np.dtype(dt.str), False
    info = h5py.check_string_dtype(dt)
    if info is not None and info.length is None:
        return np.dtype(object), True
    if h5py.check_vlen_dtype(dt) is not None:
        raise UnsupportedHDF5Error(f"{where}: variable-length sequences are not supported")
    if h5py.check_ref_dtype(dt) is not None:
        raise UnsupportedHDF5Error(f"{where}: object or region references are not supported")
    if dt.fields is not None:
        raise UnsupportedHDF5Error(f"{where}: compound data type {dt} is not supported")
    if h5py.check_opaque_dtype(dt):
        raise UnsupportedHDF5Error(
            f"{where}: opaque HDF5 type (h5py's encoding of numpy {dt}) is not supported"
        )
    if dt.subdtype is not None:
        raise UnsupportedHDF5Error(f"{where}: HDF5 array type {dt} is not supported")
    if dt.kind in "OV" or dt.hasobject:
        raise UnsupportedHDF5Error(f"{where}: data type {dt} (opaque) is not supported")
    if dt.kind in "fc" and dt.itemsize > (8 if dt.kind == "f" else 16):
        raise UnsupportedHDF5Error(
            f"{where}: extended-precision type {dt} (numpy's platform long double) has no "
            f"zarr data type{f' ({problem})' if problem else ''}"
        )
    return np.dtype(dt.str), False


def _complex_layout_problem(tid: Any, dt: np.dtype[Any]) -> str | None:
    """Why a compound h5py reads as complex is not laid out as numpy's complex, or None."""
    if not isinstance(tid, h5py.h5t.TypeCompoundID):
        return None  # HDF5's own complex class: numpy's layout
    real = h5py.get_config().complex_names[0].encode()
    n = tid.get_nmembers()
    members = {tid.get_member_name(i): tid.get_member_offset(i) for i in range(n)}
    if (
        tid.get_size() == dt.itemsize
        and sorted(members.values()) == [0, dt.itemsize // 2]
        and members.get(real) == 0
    ):
        return None
    layout = ", ".join(f"{k.decode(errors='replace')} at byte {o}" for k, o in members.items())
    return (
        f"compound read as {dt} with its parts laid out otherwise ({layout} in "
        f"{tid.get_size()} bytes)"
    )


def _check_not_external(dcpl: Any, where: str) -> None:
    """Refuse a contiguous dataset whose data live in external files (``H5Pset_external``)."""
    count = dcpl.get_external_count()
    if count:
        shown = range(min(count, 3))
        names = ", ".join(repr(os.fsdecode(dcpl.get_external(i)[0])) for i in shown)
        more = f" and {count - 3} more" if count > 3 else ""
        raise UnsupportedHDF5Error(
            f"{where}: its data are stored outside the file, in {names}{more} (HDF5 external "
            "storage); references can only point into the file itself"
        )


def _scan_dataset(
    ds: Any,
    name: str,
    own_shape: tuple[int, ...],
    numeric: tuple[np.dtype[Any], Any] | None,
    scales: list[str],
    dim_len: dict[str, int],
    ds_attrs: tuple[dict[str, Any], dict[str, Any]],
    user_block: int,
    where: str,
) -> Variable:
    dcpl = ds.get_create_plist()
    layout_code = dcpl.get_layout()
    if layout_code == h5py.h5d.VIRTUAL:
        raise UnsupportedHDF5Error(f"{where}: HDF5 virtual datasets (VDS) are not supported")
    layout = {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous"}.get(
        layout_code, "chunked"
    )
    if layout == "contiguous":
        _check_not_external(dcpl, where)
    # Checked for every dataset, whichever path reads its dtype. Compact data are read
    # through HDF5 (which converts them) and inlined, so only references need numpy's bytes.
    problem = _h5chunks.storage_problem(ds)
    # Standard integers and floats: dtype and fill value from the extension, as h5py's.
    dtype, vlen = (numeric[0], False) if numeric is not None else _dtype_of(ds, where, problem)
    if problem is None and dtype.kind == "c":
        problem = _complex_layout_problem(ds.get_type(), dtype)
    if problem is not None and layout != "compact":
        raise UnsupportedHDF5Error(
            f"{where}: {problem}; its stored bytes are not the values HDF5 reads, so "
            "references to them would decode to wrong values"
        )
    pipeline = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
    filters = [_codec(int(c), tuple(cd), dtype.itemsize, where) for c, _, cd, _ in pipeline]

    shape = tuple(dim_len[k] for k in scales)
    dims = tuple(k.rsplit("/", 1)[-1] for k in scales)
    if layout_code == h5py.h5d.CHUNKED:
        chunks = tuple(int(c) for c in dcpl.get_chunk())
    else:
        chunks = tuple(max(1, s) for s in shape)

    if vlen:
        fill_raw = None
    else:
        fill_raw = numeric[1] if numeric is not None else _fillvalue(ds, dcpl)
    # vlen strings: no fill (xarray would mask a "" fill, turning empty strings into NaN)
    fill_value = encode_fill(fill_raw, dtype) if not vlen else None
    attrs = dict(ds_attrs[0])
    if "_FillValue" in ds_attrs[1] and not vlen:
        declared = np.asarray(ds_attrs[1]["_FillValue"]).astype(dtype, copy=False).ravel()
        hdf5_fill = np.asarray(fill_raw, dtype=dtype).ravel()
        if declared.size != 1 or not np.array_equal(declared, hdf5_fill, equal_nan=True):
            raise UnsupportedHDF5Error(
                f"{where}: _FillValue attribute {attrs['_FillValue']!r} differs from the HDF5 "
                f"fill value {fill_value!r} that reads of unwritten chunks return"
            )
    attrs.pop("_FillValue", None)  # carried by the zarr fill_value

    grid = chunk_grid(shape, chunks)
    n = math.prod(grid)
    file_size = int(h5py.h5i.get_file_id(ds).get_filesize())
    _check_memory(n * _SLOT_BYTES, f"its chunk grid {grid} ({n} slots)", file_size, where)
    if vlen or layout == "compact":
        elements = math.prod(shape)
        _check_memory(elements * max(8, dtype.itemsize), f"its shape {shape}", file_size, where)
    offset = np.full(n, -1, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.uint32)
    raw: dict[int, bytes] = {}

    if vlen:
        dset = h5py.Dataset(ds, readonly=True)
        data = dset.asstr()[()] if dset.ndim else np.array(dset.asstr()[()], dtype=object)
        full = np.empty(shape, dtype=object)
        full[...] = ""
        full[tuple(slice(0, s) for s in own_shape)] = data
        from numcodecs import VLenUTF8

        raw[0] = bytes(VLenUTF8().encode(full))
        filters = [{"id": "vlen-utf8"}]
        chunks = tuple(max(1, s) for s in shape)
        if n != 1:
            offset, size, mask = offset[:1], size[:1], mask[:1]
    elif layout == "compact":
        if filters:
            raise UnsupportedHDF5Error(f"{where}: compact dataset with filters")
        data = np.asarray(h5py.Dataset(ds, readonly=True)[()], dtype=dtype)
        if own_shape != shape:
            full_arr = np.full(shape, np.asarray(fill_raw, dtype=dtype), dtype=dtype)
            full_arr[tuple(slice(0, s) for s in own_shape)] = data
            data = full_arr
        raw[0] = data.tobytes()
    elif layout == "contiguous":
        addr = ds.get_offset()
        nbytes = int(ds.get_storage_size())
        if addr is not None and nbytes > 0:
            offset[0] = int(addr)
            size[0] = nbytes
    else:
        _h5chunks.chunk_index(ds, chunks, grid, offset, size, mask)
        if user_block:
            offset[offset >= 0] += user_block
        bad = np.flatnonzero(mask)
        if bad.size:
            m = int(mask[bad[0]])
            skipped = [
                _filter_label(int(pipeline[i][0])) for i in range(len(pipeline)) if m >> i & 1
            ]
            key = ".".join(str(int(i)) for i in np.unravel_index(int(bad[0]), grid))
            raise UnsupportedHDF5Error(
                f"{where}: {bad.size} chunk(s) have a non-zero filter mask (first: chunk {key}, "
                f"mask {m:#x}, skipping filter {', '.join(skipped) or 'unknown'}); one zarr "
                "codec pipeline cannot decode them"
            )
    for b in raw.values():
        if b.startswith(b"base64:"):
            raise UnsupportedHDF5Error(
                f"{where}: its inline bytes start with 'base64:', which readers would decode"
            )
    return Variable(
        name=name,
        group=name.rpartition("/")[0],
        dtype="|O" if vlen else dtype.str,
        shape=shape,
        chunks=chunks,
        filters=filters,
        fill_value=fill_value,
        attrs=attrs,
        dims=dims,
        layout="vlen" if vlen else layout,
        offset=offset,
        size=size,
        filter_mask=mask,
        raw=raw,
    )
