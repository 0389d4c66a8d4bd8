"""HDF5 attributes as netCDF sees them: visible attributes as JSON, dimension scales, names.

netCDF-C keeps its dimension bookkeeping in HDF5 attributes (``DIMENSION_LIST``, ``CLASS``,
``NAME``, ...): they are read once per object, used to name each array's dimensions, and left
out of the attributes a reader sees.
"""

from __future__ import annotations

import base64
import struct
import warnings
from typing import Any

import h5py
import numpy as np

from ... import _h5chunks
from ...errors import AttributeLossWarning

__all__ = [
    "HIDDEN_ATTRIBUTES",
    "attr_to_json",
    "decode_name",
    "dimension_scales",
    "is_dimension_only",
    "read_attrs",
]

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
# Hidden attributes the scanner itself needs (read raw, once per dataset).
_NEEDED_RAW = ("CLASS", "NAME", "DIMENSION_LIST", "_FillValue")
_NOT_READ = frozenset(k.encode() for k in HIDDEN_ATTRIBUTES.difference(_NEEDED_RAW))
_DEFERRED = object()  # an attribute left for its user to read


def cf_fill_attribute(value: Any, dtype: np.dtype[Any]) -> Any:
    """A ``_FillValue`` as the attribute Zarr v3 readers decode it (xarray's convention,
    which VirtualiZarr and Icechunk readers follow): a float as the base64 text of its
    little-endian float64 bytes (so NaN and infinities survive JSON), a complex as two such
    texts, an integer or a boolean as a JSON number or boolean.

    In Zarr v3 an array's ``fill_value`` only says what unwritten chunks hold; readers mask
    missing values by this attribute alone. Zarr v2 readers (xarray through fsspec) mask by
    the array's ``fill_value`` and take it over this attribute.
    """
    v = np.asarray(value, dtype=dtype).reshape(())[()]
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(v))).decode()
    if dtype.kind == "c":
        return [
            base64.standard_b64encode(struct.pack("<d", float(part))).decode()
            for part in (v.real, v.imag)
        ]
    if dtype.kind == "b":
        return bool(v)
    return int(v)


def attr_to_json(value: Any) -> Any:
    """An HDF5 attribute value as JSON data, with netCDF semantics (length-1 arrays are scalars)."""
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iufb" or value.dtype.itemsize > 8:  # not plain JSON
            items = [attr_to_json(v) for v in value.ravel().tolist()]
        else:
            items = value.ravel().tolist()
        if value.size == 1:
            return items[0]
        return items
    if isinstance(value, np.bytes_):
        return attr_to_json(bytes(value))
    if isinstance(value, np.complexfloating) and value.dtype.itemsize > 16:
        return [float(value.real), float(value.imag)]  # long double: nearest doubles
    if isinstance(value, np.floating) and value.dtype.itemsize > 8:
        return float(value)
    if isinstance(value, np.generic):
        item = value.item()
        return None if isinstance(item, np.generic) else attr_to_json(item)
    if isinstance(value, h5py.Reference):
        return None
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, list | tuple):  # tuples: compound values
        return [attr_to_json(v) for v in value]
    return value


class _Parent:
    """What :class:`h5py.AttributeManager` needs of an object: its identifier."""

    __slots__ = ("id",)

    def __init__(self, oid: Any) -> None:
        self.id = oid


def decode_name(raw: bytes) -> str | bytes:
    """An HDF5 name as h5py gives it: UTF-8 text, or the bytes when they are not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def read_attrs(oid: Any, where: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """Each attribute read once: (visible ones as JSON data, raw values the scanner needs).

    ``oid`` is an open ``GroupID`` or ``DatasetID``. Common attribute kinds are read by the
    extension directly; the others (and everything, if the extension cannot list them)
    through h5py's ``AttributeManager``, with the same values either way. An attribute
    that cannot be carried over exactly gets an :class:`AttributeLossWarning` naming
    ``where`` (the file and the object).
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
        items = [(decode_name(k), v) for k, v in listed]
    for key, value in items:
        if key in HIDDEN_ATTRIBUTES and key not in _NEEDED_RAW:
            continue
        if key == "DIMENSION_LIST" and value is _h5chunks.SLOW:
            raw[key] = _DEFERRED  # read by dimension_scales, which needs only the names
            continue
        if value is _h5chunks.SLOW:
            if manager is None:
                manager = h5py.AttributeManager(_Parent(oid))
            try:
                value = manager[key]
            except (OSError, TypeError, ValueError) as exc:  # e.g. vlen of vlen
                warnings.warn(
                    f"{where}: attribute {key!r} left out: h5py cannot read its type ({exc})",
                    AttributeLossWarning,
                    stacklevel=2,
                )
                continue
        if key in _NEEDED_RAW:
            raw[key] = value
        if key not in HIDDEN_ATTRIBUTES:
            visible[key] = attr_to_json(value)
            if _rounded(value):
                warnings.warn(
                    f"{where}: attribute {key!r} is extended precision (long "
                    "double); written as the nearest double, which differs",
                    AttributeLossWarning,
                    stacklevel=2,
                )
    return visible, raw


def _rounded(value: Any) -> bool:
    """Whether the nearest doubles of an extended-precision value differ from it."""
    if not isinstance(value, np.ndarray | np.generic):
        return False
    kind, size = value.dtype.kind, value.dtype.itemsize
    if not ((kind == "f" and size > 8) or (kind == "c" and size > 16)):
        return False
    near = np.asarray(value).astype(np.complex128 if kind == "c" else np.float64)
    return not np.array_equal(near.astype(value.dtype), value, equal_nan=True)


def is_dimension_only(raw: dict[str, Any]) -> bool:
    """Whether a dataset's raw attributes mark it as a netCDF dimension without a variable."""
    name = raw.get("NAME")
    return isinstance(name, bytes) and name.startswith(_DIMENSION_ONLY)


def dimension_scales(fid: Any, dsid: Any, raw: dict[str, Any], ndim: int) -> list[str] | None:
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
        except (OSError, TypeError, ValueError):  # as read_attrs: an unreadable attribute
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
