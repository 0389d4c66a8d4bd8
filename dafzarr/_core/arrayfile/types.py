"""Element types, fill values, chunk payloads, attribute values and statistics."""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import (
    FormatLimitError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsafeCastError,
)
from ..casting import cast_for_storage, unmasked

__all__ = [
    "DTypeInfo",
    "as_array",
    "attribute_to_python",
    "chunk_stats",
    "decode_chunk",
    "dtype_from_tag",
    "dtype_info",
    "encode_chunk",
    "fill_element",
    "python_to_attribute",
    "python_to_fill",
    "stat_to_python",
]

U32_MAX = 0xFFFF_FFFF


@dataclass(frozen=True)
class DTypeInfo:
    """One element type: its footer tag name and its numpy dtype (object for vlen types)."""

    tag: str
    np_dtype: np.dtype[Any]
    vlen: bool = False

    @property
    def kind(self) -> str:
        if self.vlen:
            return "vlen"
        if self.tag == "TimestampNs":
            return "ts"
        return self.np_dtype.kind  # 'i', 'u', 'f'


_FIXED = {
    "Int8": "<i1",
    "Int16": "<i2",
    "Int32": "<i4",
    "Int64": "<i8",
    "UInt8": "<u1",
    "UInt16": "<u2",
    "UInt32": "<u4",
    "UInt64": "<u8",
    "Float32": "<f4",
    "Float64": "<f8",
    "TimestampNs": "<M8[ns]",
}
_BY_NUMPY = {np.dtype(v).newbyteorder("="): k for k, v in _FIXED.items()}
_BY_TAG: dict[str, DTypeInfo] = {}  # filled below: the element types, made once


def dtype_from_tag(tag: str) -> DTypeInfo:
    """The element type of a footer ``DType`` variant (``ValueError`` if unsupported)."""
    known = _BY_TAG.get(tag)
    if known is not None:
        return known
    if tag in _FIXED:
        return DTypeInfo(tag, np.dtype(_FIXED[tag]))
    if tag in ("String", "Binary"):
        return DTypeInfo(tag, np.dtype(object), vlen=True)
    raise ValueError(f"element type {tag} has no implementation (Bool and lists cannot be read)")


_BY_TAG.update((tag, dtype_from_tag(tag)) for tag in (*_FIXED, "String", "Binary"))


def dtype_info(dtype: Any) -> DTypeInfo:
    """Map a user's dtype (numpy dtype or name, ``str``, ``bytes``) to an element type."""
    if dtype is str or (isinstance(dtype, str) and dtype in ("str", "string", "String")):
        return dtype_from_tag("String")
    if dtype is bytes or (isinstance(dtype, str) and dtype in ("bytes", "binary", "Binary")):
        return dtype_from_tag("Binary")
    if isinstance(dtype, str) and dtype in _FIXED:
        return dtype_from_tag(dtype)
    try:
        npd = np.dtype(dtype)
    except TypeError as exc:
        raise InvalidArgumentTypeError(f"unsupported dtype {dtype!r}") from exc
    tag = _BY_NUMPY.get(npd.newbyteorder("="))
    if tag is None:
        raise InvalidArgumentTypeError(
            f"unsupported dtype {dtype!r}: use u1..u8, i1..i8, f4, f8, datetime64[ns], str or bytes"
        )
    return dtype_from_tag(tag)


# --- Fill values -----------------------------------------------------------------------


def python_to_fill(info: DTypeInfo, value: Any) -> tuple[Any, ...] | None:
    """The footer ``FillValue`` for a user's ``fill_value``."""
    if value is None:
        return None
    if info.vlen:
        if value in ("", b""):
            return ("String", "") if info.tag == "String" else None
        raise InvalidArgumentError(
            "str and bytes arrays always read unwritten elements as empty values; "
            "fill_value must be None or empty"
        )
    if isinstance(value, np.datetime64) or info.tag == "TimestampNs":
        if isinstance(value, (np.datetime64, str)):
            ns: Any = np.datetime64(value, "ns")  # type: ignore[call-overload]
            return ("TimestampNs", int(ns.astype(np.int64)))
        if isinstance(value, (int, np.integer)):
            return ("TimestampNs", int(value))
        raise InvalidArgumentTypeError(f"fill_value {value!r} does not fit a datetime64[ns] array")
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        # a bool is stored as the number it reads as (the crate reads a Bool fill of a
        # signed or float array as 0)
        v = int(value)
        if -(1 << 63) <= v < (1 << 63):
            return ("Int", v)
        if 0 <= v < (1 << 64):
            return ("UInt", v)
        raise FormatLimitError(f"fill_value {v} does not fit 64 bits")
    if isinstance(value, (float, np.floating)):
        return ("Float", float(value))
    raise InvalidArgumentTypeError(f"unsupported fill_value {value!r}")


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def fill_element(info: DTypeInfo, fill: tuple[Any, ...] | None) -> Any:
    """The element unwritten positions read as (the crate's ``as``-cast rules)."""
    if info.vlen:
        return "" if info.tag == "String" else b""
    dt = info.np_dtype
    if fill is None:
        return dt.type(0) if info.tag != "TimestampNs" else np.datetime64(0, "ns")
    kind, v = fill[0], fill[1]
    if info.tag == "TimestampNs":
        return np.datetime64(int(v) if kind in ("TimestampNs", "Int") else 0, "ns")
    if dt.kind == "f":
        if kind in ("Float", "Int", "UInt"):
            return dt.type(v)
        return dt.type(0)
    bits = dt.itemsize * 8
    signed = dt.kind == "i"
    if kind in ("Int", "UInt"):
        return dt.type(_wrap(int(v), bits, signed))
    if kind == "Bool" and not signed:
        return dt.type(int(v))
    if kind == "Float":
        f = float(v)
        if math.isnan(f):
            return dt.type(0)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if f == float("inf"):
            return dt.type(hi)
        if f == float("-inf"):
            return dt.type(lo)
        return dt.type(min(max(int(f), lo), hi))
    return dt.type(0)


# --- Chunk payloads --------------------------------------------------------------------


def encode_chunk(info: DTypeInfo, values: np.ndarray) -> Any:
    """The stored bytes of one (clipped) chunk, C order (a uint8 array or bytes)."""
    if not info.vlen:
        flat: Any = np.ascontiguousarray(values, dtype=info.np_dtype).reshape(-1)
        return memoryview(flat.view(np.uint8))
    items = values.ravel(order="C").tolist()
    enc = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in items]
    lengths = np.fromiter((len(b) for b in enc), np.int64, len(enc))
    offsets = np.zeros(len(enc) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > U32_MAX:
        raise FormatLimitError(
            f"a chunk of variable-length values holds {offsets[-1]} bytes; the format's "
            "u32 offsets allow at most 4 GiB - 1"
        )
    head = offsets.astype("<u4").tobytes()
    out = head + b"".join(enc)
    if len(out) > U32_MAX:
        raise FormatLimitError(f"a {len(out)}-byte chunk does not fit the format's u32 sizes")
    return out


def decode_chunk(info: DTypeInfo, data: Any, shape: Sequence[int]) -> np.ndarray:
    """Decode one stored chunk of clipped ``shape``; ``ValueError`` on inconsistent bytes."""
    n = 1
    for s in shape:
        n *= s
    if not info.vlen:
        want = n * info.np_dtype.itemsize
        if len(data) != want:
            raise ValueError(f"the chunk holds {len(data)} bytes, its shape needs {want}")
        return np.frombuffer(data, info.np_dtype, count=n).reshape(shape)
    head = (n + 1) * 4
    if len(data) < head:
        raise ValueError(f"the chunk holds {len(data)} bytes, fewer than its {n + 1} offsets")
    offsets = np.frombuffer(data, "<u4", count=n + 1).astype(np.int64)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or head + offsets[-1] != len(data):
        raise ValueError("the chunk's variable-length offsets are inconsistent")
    payload = bytes(memoryview(data)[head:])
    bounds = offsets.tolist()
    out = np.empty(n, dtype=object)
    if info.tag == "String":
        out[:] = [payload[a:b].decode("utf-8", "replace") for a, b in itertools_pairs(bounds)]
    else:
        out[:] = [payload[a:b] for a, b in itertools_pairs(bounds)]
    return out.reshape(shape)


def itertools_pairs(bounds: list[int]) -> Iterator[tuple[int, int]]:
    return itertools.pairwise(bounds)


# --- Statistics ------------------------------------------------------------------------


def _total_order(values: np.ndarray) -> npt.NDArray[Any]:
    """Integer keys that sort floats like Rust's ``total_cmp`` (NaNs at the ends)."""
    ints: Any = values.view(np.int64 if values.dtype.itemsize == 8 else np.int32)
    bits = ints.dtype.itemsize * 8
    flip = (ints >> (bits - 1)).astype(ints.dtype)
    mask = flip & ints.dtype.type((1 << (bits - 1)) - 1)
    out: npt.NDArray[Any] = ints ^ mask
    return out


def chunk_stats(
    info: DTypeInfo, fill: tuple[Any, ...] | None, values: np.ndarray
) -> tuple[Any, Any, int]:
    """(min, max, non-fill count) of one chunk as footer ``StatValue`` tuples (or None)."""
    flat = values.ravel()
    kind = info.kind
    if kind == "vlen":
        items = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in flat.tolist()]
        if fill is not None and fill[0] == "String":
            f = fill[1].encode("utf-8")
            items = [x for x in items if x != f]
        if not items:
            return None, None, 0
        return ("Bytes", min(items)), ("Bytes", max(items)), len(items)
    if kind == "f":
        if fill is not None and fill[0] == "Float":
            fv = float(fill[1])
            keep = ~np.isnan(flat) if math.isnan(fv) else flat != info.np_dtype.type(fv)
            flat = flat[keep]
        if flat.size == 0:
            return None, None, 0
        lo, hi = flat.min(), flat.max()  # NaN if any is NaN
        if not (np.isnan(lo) or np.isnan(hi)) and lo != 0 and hi != 0:
            # no NaN, and no zero whose sign total_cmp would tell apart: the same answer
            return ("Float", float(lo)), ("Float", float(hi)), int(flat.size)
        keys = _total_order(np.ascontiguousarray(flat))
        lo, hi = flat[int(np.argmin(keys))], flat[int(np.argmax(keys))]
        return ("Float", float(lo)), ("Float", float(hi)), int(flat.size)
    if kind == "ts":
        ints = flat.view(np.int64)
        if fill is not None and fill[0] in ("TimestampNs", "Int"):
            ints = ints[ints != int(fill[1])]
        if ints.size == 0:
            return None, None, 0
        return ("TimestampNs", int(ints.min())), ("TimestampNs", int(ints.max())), int(ints.size)
    if fill is not None and fill[0] in ("Int", "UInt"):
        flat = flat[flat != fill_element(info, fill)]
    if flat.size == 0:
        return None, None, 0
    variant = "Int" if kind == "i" else "UInt"
    return (variant, int(flat.min())), (variant, int(flat.max())), int(flat.size)


def stat_key(info: DTypeInfo, value: tuple[Any, ...]) -> Any:
    """A Python sort key for a ``StatValue`` of this element type."""
    if value[0] == "Float":
        bits = struct.unpack("<q", struct.pack("<d", value[1]))[0]
        return bits ^ ((bits >> 63) & 0x7FFF_FFFF_FFFF_FFFF)
    return value[1]


def stat_to_python(info: DTypeInfo | None, value: tuple[Any, ...] | None) -> Any:
    if value is None:
        return None
    kind, v = value
    if kind == "TimestampNs":
        return np.datetime64(int(v), "ns")
    if kind == "Bytes" and info is not None and info.tag == "String":
        return bytes(v).decode("utf-8", "replace")
    return v


# --- Attribute values ------------------------------------------------------------------

_NP_ATTR = {
    np.dtype(np.int8): "Int8",
    np.dtype(np.int16): "Int16",
    np.dtype(np.int32): "Int32",
    np.dtype(np.int64): "Int64",
    np.dtype(np.uint8): "UInt8",
    np.dtype(np.uint16): "UInt16",
    np.dtype(np.uint32): "UInt32",
    np.dtype(np.uint64): "UInt64",
    np.dtype(np.float32): "Float32",
    np.dtype(np.float64): "Float64",
}


def python_to_attribute(value: Any) -> tuple[Any, ...]:
    """The footer ``AttributeValue`` (v4 variants) for a Python or numpy scalar."""
    if isinstance(value, (bool, np.bool_)):
        return ("Bool", bool(value))
    if isinstance(value, np.generic) and value.dtype in _NP_ATTR:
        tag = _NP_ATTR[value.dtype]
        return (tag, float(value) if tag.startswith("Float") else int(value))
    if isinstance(value, int):
        if -(1 << 63) <= value < (1 << 63):
            return ("Int64", value)
        if 0 <= value < (1 << 64):
            return ("UInt64", value)
        raise FormatLimitError(f"attribute value {value} does not fit 64 bits")
    if isinstance(value, float):
        return ("Float64", value)
    if isinstance(value, str):
        return ("String", value)
    raise InvalidArgumentTypeError(
        f"unsupported attribute value {value!r}: use bool, int, float, str or a numpy scalar"
    )


def attribute_to_python(value: tuple[Any, ...]) -> Any:
    kind, v = value[0], value[1]
    if kind in ("Float32",):
        return float(np.float32(v))
    if kind.endswith("List"):
        return list(v)
    return v


def as_array(info: DTypeInfo, data: Any, where: str) -> np.ndarray:
    """``data`` as an array of the element type, under the package's cast rule."""
    if info.vlen:
        arr = np.asarray(unmasked(data, where), dtype=object)
        want = str if info.tag == "String" else bytes
        for x in arr.ravel().tolist():
            if not isinstance(x, want):
                raise UnsafeCastError(
                    f"{where}: {type(x).__name__} data cannot be stored as {want.__name__}: "
                    f"the array holds {want.__name__} values, got {x!r}"
                )
        return arr
    return cast_for_storage(data, info.np_dtype, where)
