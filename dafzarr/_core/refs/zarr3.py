"""Zarr v3 array metadata for an array of a reference store (zarr v2 metadata).

The chunks a reference points to are decoded the same way in both: the v2 ``filters`` and
``compressor`` (bytes to bytes: numcodecs' zlib, shuffle, fletcher32, zstd, blosc, ...)
become the same numcodecs codecs after a ``bytes`` serializer of the dtype's byte order;
variable-length strings keep their ``vlen-utf8`` encoding as the serializer of a ``string``
array. ``_ARRAY_DIMENSIONS`` becomes the dimension names; the other attributes (the CF
``_FillValue`` as the scanner encodes it, ``units``, ``calendar``, packing) are kept as
they are.
"""

from __future__ import annotations

import base64
import math
import warnings
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError

__all__ = ["array_kwargs"]

# numcodecs ids (zarr v2 configurations) -> zarr-python's v3 wrapper classes of them.
_CODECS = {
    "zlib": "Zlib",
    "gzip": "GZip",
    "shuffle": "Shuffle",
    "fletcher32": "Fletcher32",
    "zstd": "Zstd",
    "blosc": "Blosc",
    "lz4": "LZ4",
    "bz2": "BZ2",
    "lzma": "LZMA",
    "crc32": "CRC32",
    "adler32": "Adler32",
}


def array_kwargs(name: str, zarray: dict[str, Any], zattrs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``zarr.create_array`` (beyond store, name and format) for an
    array described by zarr v2 ``.zarray`` / ``.zattrs`` documents."""
    from zarr.codecs import BytesCodec, VLenUTF8Codec

    try:
        dtype = np.dtype(zarray["dtype"])
        shape = tuple(int(s) for s in zarray["shape"])
        chunks = tuple(int(c) for c in zarray["chunks"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"array {name!r}: invalid zarr metadata ({exc})") from None
    if zarray.get("order", "C") != "C":
        raise InvalidArgumentError(
            f"array {name!r}: Fortran-ordered chunks have no Zarr v3 "
            "equivalent without transposing codecs"
        )
    codecs = [dict(c) for c in (zarray.get("filters") or [])]
    if zarray.get("compressor"):
        codecs.append(dict(zarray["compressor"]))
    serializer: Any
    if dtype.kind == "O":
        if not codecs or codecs[0].get("id") != "vlen-utf8":
            raise InvalidArgumentError(
                f"array {name!r}: object dtype without the vlen-utf8 codec first ({codecs})"
            )
        codecs, serializer, zdtype, fill = codecs[1:], VLenUTF8Codec(), str, ""
    else:
        endian = {">": "big", "<": "little", "=": _native()}.get(dtype.byteorder)
        serializer = BytesCodec(endian=endian)
        zdtype, fill = dtype.newbyteorder("="), _fill(name, zarray.get("fill_value"), dtype)
    attrs = dict(zattrs)
    dims = attrs.pop("_ARRAY_DIMENSIONS", None)
    if dims is not None and (not isinstance(dims, list) or len(dims) != len(shape)):
        raise InvalidArgumentError(
            f"array {name!r}: _ARRAY_DIMENSIONS {dims!r} do not match its shape {shape}"
        )
    if any(c < 1 for c in chunks) or len(chunks) != len(shape):
        raise InvalidArgumentError(f"array {name!r}: chunks {chunks} for shape {shape}")
    return {
        "shape": shape,
        "chunks": chunks if shape else (),
        "dtype": zdtype,
        "fill_value": fill,
        "filters": (),
        "serializer": serializer,
        "compressors": [_codec(name, c) for c in codecs],
        "dimension_names": dims if shape else None,
        "attributes": attrs,
    }


def _native() -> str:
    import sys

    return sys.byteorder


def _codec(name: str, config: dict[str, Any]) -> Any:
    """A numcodecs v2 configuration as zarr-python's v3 codec of it."""
    from zarr.codecs import numcodecs as wrappers

    config = dict(config)
    cid = config.pop("id", None)
    cls = _CODECS.get(str(cid))
    if cls is None:
        raise InvalidArgumentError(
            f"array {name!r}: codec {cid!r} has no Zarr v3 equivalent Icechunk readers decode"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numcodecs codecs are not in the Zarr v3 core spec
        return getattr(wrappers, cls)(**config)


def _fill(name: str, value: Any, dtype: np.dtype[Any]) -> Any:
    """A v2 JSON fill value as the numpy scalar zarr takes (``None``: zarr's default 0)."""
    if value is None:
        return None
    try:
        if dtype.kind in "SV":
            return np.frombuffer(base64.standard_b64decode(value), dtype=dtype)[0]
        if dtype.kind == "c":
            return complex(_float(value[0]), _float(value[1]))
        if dtype.kind == "f":
            return _float(value)
        if dtype.kind == "b":
            return bool(value)
        if dtype.kind in "iu":
            return int(value)
        if dtype.kind in "mM":
            return np.array(value, dtype="i8").view(dtype)[()]
    except (TypeError, ValueError, IndexError) as exc:
        raise InvalidArgumentError(
            f"array {name!r}: fill value {value!r} is not one of dtype {dtype} ({exc})"
        ) from None
    raise InvalidArgumentError(f"array {name!r}: dtype {dtype} has no Zarr v3 data type here")


def _float(value: Any) -> float:
    if isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    f = float(value)
    if math.isnan(f):
        return math.nan
    return f
