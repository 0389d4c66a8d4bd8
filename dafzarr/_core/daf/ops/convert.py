"""Element-type conversions of copied data (``type``, ``eltype``, ``types``) and of ``empty``
values: exact or refused, never a silent truncation or wrap-around.

* To strings: each value as DataAxesFormats.jl prints it (``1``, ``1.5``, ``true``, floats
  with ``.0`` when whole and ``1.0e-5`` exponents).
* From strings to numbers or bools: parsed (``"1.0"`` as ``float32`` is ``1.0``; ``"true"``,
  ``"false"``, ``"0"`` and ``"1"`` as ``bool``); text that is no such value is refused.
* Between numbers: exact. Floats become integers only when every value is whole and fits;
  integers and floats become ``bool`` only when every value is 0 or 1; integers must fit the
  target's range; floats round to a narrower float type as numpy and Julia do, but a finite
  value never overflows to infinity (:mod:`dafzarr._core.casting`).

A refusal is an :class:`~dafzarr.errors.UnsafeCastError` naming the property and both data
sets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import UnsafeCastError
from ...aliases import Array
from ...casting import check_fits
from .. import layout as lay
from ..query.literals import format_float, parse_as

__all__ = [
    "STRING",
    "convert_array",
    "convert_value",
    "element_type_of",
    "format_julia",
    "target_type",
]

Target = np.dtype[Any] | str

STRING = lay.STRING


def target_type(eltype: Any, where: str) -> Target | None:
    """The Daf element type an ``eltype``/``type`` argument asks for (``None``: keep the
    source's); ``str`` (or any string dtype) is :data:`STRING`. An element type Daf does
    not store raises :class:`~dafzarr.errors.InvalidArgumentTypeError`."""
    if eltype is None:
        return None
    if eltype is str:
        return STRING
    return lay.element_type(eltype, where)


def element_type_of(values: Any, where: str) -> Target:
    """The Daf element type of an array (or a sparse matrix)."""
    return lay.element_type(values.dtype, where)


def _format_float32(x: Any) -> str:
    text = str(np.float32(x))
    if text in ("nan", "inf", "-inf"):
        return {"nan": "NaN", "inf": "Inf", "-inf": "-Inf"}[text]
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{int(exponent)}"
    return text if "." in text else text + ".0"


def format_julia(value: Any) -> str:
    """A value as DataAxesFormats.jl's ``string`` prints it (``1``, ``1.5``, ``true``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, np.float32):
        return _format_float32(value)
    if isinstance(value, float | np.floating):
        return format_float(float(value))
    return str(value)


def refusal(where: str, src: Any, dst: Any, why: str) -> UnsafeCastError:
    return UnsafeCastError(f"can't convert {src} data to {dst}: {why}\nfor {where}")


def _first_bad(bad: Array, values: Array) -> str:
    at = int(np.argmax(bad))
    return f"value {values.reshape(-1)[at]} at index {at}"


def _order(values: Array) -> Any:
    """The memory order to keep (a column-major matrix stays column-major)."""
    return "F" if values.ndim > 1 and values.flags.f_contiguous else "C"


def _to_strings(values: Array) -> Array:
    flat = values.reshape(-1, order=_order(values))
    out = np.empty(flat.size, dtype=object)
    if flat.dtype == np.float32:  # its own shortest digits, not those of a float64
        out[:] = [_format_float32(v) for v in flat]
    else:
        out[:] = [format_julia(v) for v in flat.tolist()]
    return out.reshape(values.shape, order=_order(values))


def _parse_strings(values: Array, dst: np.dtype[Any], where: str) -> Array:
    flat = values.reshape(-1, order=_order(values))
    out = np.empty(flat.size, dtype=dst)
    for i, text in enumerate(flat.tolist()):
        try:
            out[i] = parse_as(str(text), dst)
        except ValueError:
            raise refusal(
                where, "str", dst, f"value {text!r} at index {i} is not a valid {dst} value"
            ) from None
    return out.reshape(values.shape, order=_order(values))


def _check_exact(values: Array, dst: np.dtype[Any], where: str) -> None:
    """Refuse numbers that ``dst`` cannot hold exactly (see the module's rules)."""
    src = values.dtype
    if src == dst or np.can_cast(src, dst, "safe") or not values.size:
        return
    if dst.kind == "b":
        if src.kind not in "iuf":
            raise refusal(where, src, dst, "the kinds differ")
        bad = (values != 0) & (values != 1)
        if bad.any():
            raise refusal(where, src, dst, f"{_first_bad(bad, values)} is neither 0 nor 1")
        return
    if dst.kind in "iu" and src.kind == "f":
        bad = ~np.isfinite(values)
        bad |= values != np.trunc(np.where(bad, 0, values))
        if bad.any():
            raise refusal(where, src, dst, f"{_first_bad(bad, values)} is not a whole number")
        info = np.iinfo(dst)
        bad = (values < info.min) | (values > info.max)
        if bad.any():
            raise refusal(
                where, src, dst, f"{_first_bad(bad, values)} is outside {info.min}..{info.max}"
            )
        return
    check_fits(values, dst, where)


def convert_array(values: Array, target: Target | None, where: str) -> Array:
    """``values`` converted to ``target`` (``None``: unchanged, no copy), exactly or
    refused with :class:`~dafzarr.errors.UnsafeCastError`."""
    if target is None:
        return values
    source = element_type_of(values, where)
    if target == STRING:
        return values if source == STRING else _to_strings(values)
    assert isinstance(target, np.dtype)
    if source == STRING:
        return _parse_strings(values, target, where)
    if values.dtype == target:
        return values
    _check_exact(values, target, where)
    return values.astype(target)


def convert_value(value: Any, target: Target | None, where: str) -> Any:
    """One value (a scalar, or an ``empty`` fill) converted like :func:`convert_array`."""
    if target is None:
        return value
    if isinstance(value, str | np.str_):
        arr = np.array([str(value)], dtype=object)
    else:
        arr = np.asarray([value])
        if arr.dtype.kind not in "biuf":
            raise refusal(where, type(value).__name__, target, "not a number, bool or str")
    out = convert_array(arr, target, where)[0]
    return str(out) if target == STRING else out
