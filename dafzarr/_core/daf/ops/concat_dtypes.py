"""The element type and the storage (sparse or dense) of a concatenated property, and the
text of values stacked into a string property."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ....errors import InvalidArgumentTypeError
from ..query.literals import format_value

__all__ = [
    "INDEX_BYTES",
    "Dtype",
    "empty_dtype",
    "is_zero",
    "merge_dtypes",
    "saves_storage",
    "texts",
]

#: A Daf element type: a numpy dtype (bool or numeric) or ``"str"``.
Dtype = np.dtype[Any] | str

#: The size of one stored index in the storage estimate (whatever index type is stored).
INDEX_BYTES = 4

_SIGNED: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.int8),
    2: np.dtype(np.int16),
    4: np.dtype(np.int32),
    8: np.dtype(np.int64),
}


def empty_dtype(value: Any) -> Dtype | None:
    """The type an ``empty`` value brings to the merge: ``None`` nothing, ``str`` text, a
    Python ``bool``/``int``/``float`` ``bool``/``int64``/``float64``, a numpy scalar its
    own dtype."""
    if value is None:
        return None
    if isinstance(value, str | np.str_):
        return "str"
    if isinstance(value, bool | np.bool_):
        return np.dtype(np.bool_)
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        return value.dtype
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    raise InvalidArgumentTypeError(
        f"unsupported empty value of type {type(value).__name__}: {value!r}; expected bool, "
        "int, float, str or a numpy scalar"
    )


def _pair(left: Dtype, right: Dtype) -> Dtype:
    if isinstance(left, str) or isinstance(right, str):
        return "str"
    if left.kind == "b" and right.kind == "b":
        return left
    a = np.dtype(np.uint8) if left.kind == "b" else left
    b = np.dtype(np.uint8) if right.kind == "b" else right
    if a.kind == "f" or b.kind == "f":
        return np.dtype(np.float32) if max(a.itemsize, b.itemsize) <= 4 else np.dtype(np.float64)
    if a.kind == "i" or b.kind == "i":
        size = max(x.itemsize + (1 if x.kind == "u" else 0) for x in (a, b))
        for width in (1, 2, 4, 8):
            if width >= size:
                return _SIGNED[width]
        return _SIGNED[8]  # uint64 with a signed type: capped
    return a if a.itemsize >= b.itemsize else b


def merge_dtypes(types: Iterable[Dtype | None], empty: Any = None) -> Dtype | None:
    """The concatenated element type: a fold over ``types`` from the ``empty`` value's.

    Any text makes text; else any float a ``float32`` when both sides take at most 4 bytes,
    else ``float64``; else any signed integer the smallest signed type that holds both (an
    unsigned type counts one byte more, capped at ``int64``); else the wider unsigned type.
    ``bool`` with ``bool`` stays ``bool``; with numbers it counts as ``uint8``.
    """
    out = empty_dtype(empty)
    for dt in types:
        if dt is None:
            continue
        out = dt if out is None else _pair(out, dt)
    return out


def is_zero(value: Any) -> bool:
    """Whether an ``empty`` value is a numeric zero (its slices then store nothing)."""
    return not isinstance(value, str | np.str_) and value is not None and bool(value == 0)


def saves_storage(
    dt: Dtype, length: int, stored: int, fraction: float, columns: int | None = None
) -> bool:
    """Whether the sparse layout saves at least ``fraction`` of the dense storage of
    ``length`` values of ``dt`` of which ``stored`` are stored, with 4-byte indices
    (``columns``: a matrix with that many columns also stores a column pointer)."""
    if isinstance(dt, str) or length == 0:
        return False
    size = dt.itemsize
    dense = length * size
    sparse = stored * (size + INDEX_BYTES)
    if columns is not None:
        sparse += (columns + 1) * INDEX_BYTES
    return (dense - sparse) / dense >= fraction


def _text(value: Any, dtype: np.dtype[Any]) -> str:
    if dtype.kind == "f" and dtype.itemsize < 8:
        value = float(str(np.float32(value)))  # the shortest text of the float32 value
    return format_value(value)


def texts(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``values`` as an object array of ``str``: numbers and bools formatted as Julia's
    ``string`` does (``1``, ``1.5``, ``true``), text as it is."""
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind in "UT":
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [str(v) for v in arr.reshape(-1)]
        return out
    out = np.empty(arr.shape, dtype=object)
    flat = arr.reshape(-1)
    cache: dict[Any, str] = {}
    oflat = out.reshape(-1)
    for i, v in enumerate(flat.tolist()):
        text = cache.get(v)
        if text is None:
            text = cache[v] = _text(v, arr.dtype)
        oflat[i] = text
    return out
