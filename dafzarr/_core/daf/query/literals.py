"""Typed values in queries: the element-type names, guessing and parsing of ``||`` defaults and
parameters, and the text of values (canonical queries and group names).

Floats print as DataAxesFormats.jl's ``string()`` does for the common cases: whole numbers keep
``.0``, other values the shortest round-trip digits, exponents as ``1.0e-5``; ``e`` and ``pi``
print as those names.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....errors import InvalidArgumentError

__all__ = [
    "FLOAT_TYPES",
    "TYPES",
    "float_of",
    "format_value",
    "guess_value",
    "int_of",
    "parse_as",
    "sum_of",
    "type_name",
    "unsigned_of",
]

#: Element-type names a query may give (``Int`` is ``Int64``); ``String`` is ``None`` here.
TYPES: dict[str, np.dtype[Any] | None] = {
    "String": None,
    "Bool": np.dtype(np.bool_),
    "Int": np.dtype(np.int64),
    **{f"Int{b}": np.dtype(f"int{b}") for b in (8, 16, 32, 64)},
    **{f"UInt{b}": np.dtype(f"uint{b}") for b in (8, 16, 32, 64)},
    "Float32": np.dtype(np.float32),
    "Float64": np.dtype(np.float64),
}
TYPES.update({k.lower(): v for k, v in list(TYPES.items())})
FLOAT_TYPES = frozenset(k for k, v in TYPES.items() if v is not None and v.kind == "f")
_CONSTANTS = {"e": math.e, "pi": math.pi}


def type_name(dtype: np.dtype[Any] | None) -> str:
    """The canonical name of an element type (``Float32``, ``UInt8``, ``String``, ...)."""
    if dtype is None or dtype.kind in "OUS":
        return "String"
    if dtype.kind == "b":
        return "Bool"
    if dtype.kind == "f":
        return f"Float{dtype.itemsize * 8}"
    prefix = "UInt" if dtype.kind == "u" else "Int"
    return f"{prefix}{dtype.itemsize * 8}"


def format_float(x: float) -> str:
    """A float as Julia prints it (``1.0``, ``0.5``, ``1.0e-5``, ``NaN``, ``Inf``)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    text = repr(float(x))
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{int(exponent)}"
    return text


def format_value(value: Any) -> str:
    """The text of a value: ``true``/``false``, decimal integers, Julia floats, strings as is."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        for name, constant in _CONSTANTS.items():
            if float(value) == constant:
                return name
        return format_float(float(value))
    return str(value)


def _parse_float(text: str) -> float:
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    lowered = text.lower()
    if lowered in ("inf", "+inf", "-inf", "nan"):
        return float(lowered)
    if not text or text[-1] not in "0123456789.":  # refuse Python-only forms such as "1_0"
        raise InvalidArgumentError(text)
    if "_" in text:
        raise InvalidArgumentError(text)
    return float(text)


def parse_as(text: str, dtype: np.dtype[Any] | None) -> Any:
    """``text`` parsed as ``dtype`` (``None``: a string); raises ``ValueError`` if it is not
    a valid value of that type (an :class:`~dafzarr.errors.InvalidArgumentError`)."""
    if dtype is None:
        return text
    if dtype.kind == "b":
        if text in ("true", "false"):
            return text == "true"
        if text in ("0", "1"):
            return text == "1"
        raise InvalidArgumentError(text)
    if dtype.kind == "f":
        return dtype.type(_parse_float(text))
    if "_" in text or text.strip() != text:
        raise InvalidArgumentError(text)
    value = int(text)
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise InvalidArgumentError(text)
    return dtype.type(value)


def guess_value(text: str) -> tuple[Any, str]:
    """A ``||`` value without a type: ``true``/``false`` are Bool, ``e``/``pi`` Float64,
    integers Int64, other numbers Float64, anything else a String. Returns the value and the
    guessed type name."""
    if text in ("true", "false"):
        return text == "true", "Bool"
    if text in _CONSTANTS:
        return _CONSTANTS[text], "Float64"
    try:
        return parse_as(text, TYPES["Int64"]), "Int64"
    except ValueError:
        pass
    try:
        return parse_as(text, TYPES["Float64"]), "Float64"
    except ValueError:
        return text, "String"


def float_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The float type of an input type: Float64 for 64-bit integers and Float64, else Float32."""
    if dtype.kind == "f":
        return dtype
    return np.dtype(np.float64 if dtype.itemsize == 8 else np.float32)


def int_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The integer type of an input type: Float32 -> Int32, Float64 -> Int64, others kept."""
    if dtype.kind == "f":
        return np.dtype(np.int64 if dtype.itemsize == 8 else np.int32)
    return dtype


def sum_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The type of a sum: Bool and small unsigned -> UInt32, small signed -> Int32, 64-bit and
    floats kept."""
    if dtype.kind == "f" or dtype.itemsize == 8:
        return dtype
    return np.dtype(np.int32 if dtype.kind == "i" else np.uint32)


def unsigned_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The unsigned type of a signed integer type (Int64 -> UInt64); others kept."""
    if dtype.kind == "i":
        return np.dtype(f"uint{dtype.itemsize * 8}")
    return dtype
