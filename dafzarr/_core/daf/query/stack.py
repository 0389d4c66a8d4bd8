"""The states on the evaluation stack, and the value-level steps that do not read data.

A :class:`Vec` is one value per entry: the entry ``names``, the ``axis`` they belong to (if
any) and their ``positions`` in it, the ``values``, the property that produced them
(``prop``, and ``source`` when they are a stored vector as stored), the axis named by ``=@``
(``as_axis``), and the pending final values of ``??`` (``pending``: per entry the index of
its final value in ``finals``, -1 where nothing is pending). A :class:`Mat` is a matrix (numpy 2-D or scipy CSC) with the names
and axes of its rows and columns.

Comparisons of strings work on the distinct values (``pandas.factorize``): each distinct value
is compared once, and the result spread through the integer codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from ...aliases import Array
from . import operations as _ops
from .literals import TYPES, parse_as, type_name
from .registry import Compressed
from .sequence import QueryOperation

__all__ = [
    "COMPARISONS",
    "Mat",
    "Vec",
    "compare",
    "dtype_error",
    "empties",
    "factorize",
    "fail_type",
    "is_strings",
    "settle",
    "truth",
]


#: The comparison operations, each with its numpy comparison (``None``: regular expressions).
_NUMERIC: dict[type[QueryOperation], Any] = {
    _ops.IsEqual: np.equal,
    _ops.IsNotEqual: np.not_equal,
    _ops.IsLess: np.less,
    _ops.IsLessEqual: np.less_equal,
    _ops.IsGreater: np.greater,
    _ops.IsGreaterEqual: np.greater_equal,
    _ops.IsMatch: None,
    _ops.IsNotMatch: None,
}
COMPARISONS = tuple(_NUMERIC)
_TEXT = {
    _ops.IsEqual: str.__eq__,
    _ops.IsNotEqual: str.__ne__,
    _ops.IsLess: str.__lt__,
    _ops.IsLessEqual: str.__le__,
    _ops.IsGreater: str.__gt__,
    _ops.IsGreaterEqual: str.__ge__,
}


@dataclass
class Vec:
    """A vector state (see the module docstring)."""

    values: Array
    names: Array
    axis: str | None
    positions: Array | None
    prop: str | None = None
    as_axis: str | None = None
    pending: Array | None = None
    finals: tuple[str, ...] = ()
    source: tuple[str, str, Array | None] | None = None
    #: Whether this is an axis expression (values = the entry names, positions known).
    is_axis: bool = False
    #: Whether the entries are the whole axis, in order (lookups return stored arrays).
    whole: bool = False

    def subset(self, keep: Array) -> Vec:
        """The entries where the Bool array ``keep`` is true."""
        at = np.flatnonzero(keep)  # once, for every array (values and names may be one)
        values = self.values[at]
        if self.whole and self.positions is not None:
            positions: Array | None = at
        else:
            positions = None if self.positions is None else self.positions[at]
        return replace(
            self,
            values=values,
            names=values if self.names is self.values else self.names[at],
            positions=positions,
            pending=None if self.pending is None else self.pending[at],
            source=None,
            is_axis=self.is_axis,
            whole=False,
        )


@dataclass
class Mat:
    """A matrix state: ``values`` (numpy 2-D or scipy CSC) and both sides' names and axes."""

    values: Any
    row_names: Array
    row_axis: str | None
    row_positions: Array | None
    col_names: Array
    col_axis: str | None
    col_positions: Array | None
    prop: str | None = None
    as_axis: str | None = None
    #: The stored CSC arrays, not yet read as ``values`` (``None``) when a group-by of the
    #: rows or columns or a reduction of the rows follows the lookup of a whole sparse matrix.
    stored: Compressed | None = None
    #: The stored CSC arrays of the transposed matrix (the other layout), likewise.
    stored_t: Compressed | None = None


def is_strings(values: Any) -> bool:
    """Whether the values are strings."""
    return not sp.issparse(values) and np.asarray(values).dtype.kind in "OUS"


def empties(values: Array, factors: tuple[Array, Array] | None = None) -> Array:
    """Where the values are empty: ``""``, ``0`` or ``false`` (``factors``: the codes and
    distinct values of string values, when known)."""
    if is_strings(values):
        codes, uniques = factors or factorize(values)
        hits = np.asarray([u == "" for u in uniques], dtype=bool)
        return np.asarray(hits[codes])
    return np.asarray(np.asarray(values) == 0)


def factorize(values: Array) -> tuple[Array, Array]:
    """Integer codes of the values and the distinct values, in order of appearance."""
    import pandas as pd

    arr = np.asarray(values)
    if arr.dtype.kind in "OUS":
        arr = arr.astype(object, copy=False)
    codes, uniques = pd.factorize(arr, use_na_sentinel=False)
    return np.asarray(codes), np.asarray(uniques, dtype=arr.dtype)


def settle(vec: Vec, fail: Any) -> Vec:
    """``vec`` with its pending ``??`` final values put in place, parsed as its element type
    (``fail(message)`` raises)."""
    if vec.pending is None:
        return vec
    if not bool(np.any(vec.pending >= 0)):
        return replace(vec, pending=None, finals=())
    values = np.array(vec.values, copy=True)
    dtype = None if is_strings(values) else values.dtype
    for k, final in enumerate(vec.finals):
        try:
            values[vec.pending == k] = parse_as(final, dtype)
        except ValueError:
            raise fail(f"error parsing final value: {final}\nas type: {type_name(dtype)}") from None
    return replace(vec, values=values, pending=None, finals=(), source=None)


def truth(values: Any) -> Array:
    """The truthiness of each value: Bool as is, numbers non-zero, strings non-empty."""
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        return arr
    return ~empties(values)


def compare(
    op: QueryOperation,
    values: Any,
    what: str,
    fail: Any,
    factors: tuple[Array, Array] | None = None,
) -> Any:
    """The Bool result of a comparison ``op`` of ``values`` (``what``: ``vector`` or
    ``matrix``, for messages; ``fail(message)`` raises; ``factors``: the codes and distinct
    values of string values, when known)."""
    operand = op.operand or ""
    cls = type(op)
    sparse = sp.issparse(values)
    if _NUMERIC[cls] is None:
        if not is_strings(values):
            raise fail(
                f"unsupported {what} element type: {_type_of(values)}\n"
                f"for the comparison operation: {cls.__name__}"
            )
        try:
            pattern = re.compile(operand)
        except re.error as exc:
            raise fail(
                f"invalid regular expression: {operand}\nfor the comparison "
                f"operation: {cls.__name__}\n{exc}"
            ) from None
        return _on_uniques(
            values, lambda u: pattern.search(u) is not None, cls is _ops.IsNotMatch, factors
        )
    if is_strings(values):
        function = _TEXT[cls]
        return _on_uniques(values, lambda u: function(str(u), operand), False, factors)
    dtype = values.dtype
    if dtype.kind == "b" and operand in ("true", "false"):
        number = 1.0 if operand == "true" else 0.0
    else:
        try:
            number = float(parse_as(operand, TYPES["Float64"]))
        except ValueError:
            raise fail(
                f"error parsing number comparison value: {operand}\nfor comparison "
                f"with a {what} of type: {type_name(dtype)}"
            ) from None
    if sparse:
        values = values.toarray(order="F")
    return _NUMERIC[cls](values, number)


def _on_uniques(
    values: Array, test: Any, negate: bool, factors: tuple[Array, Array] | None
) -> Array:
    arr = np.asarray(values)
    order: Literal["C", "F"] = "F" if arr.ndim == 2 and arr.flags.f_contiguous else "C"
    codes, uniques = factors or factorize(arr.ravel(order=order))
    hits = np.asarray([bool(test(u)) for u in uniques], dtype=bool)
    if negate:
        hits = ~hits
    found = np.flatnonzero(hits)
    if not uniques.size:
        out = np.zeros(0, dtype=bool)
    elif found.size == 1:  # one distinct value matches (``=``): compared as an integer code
        out = codes == found[0]
    elif found.size == hits.size - 1:  # all but one (``!=``)
        out = codes != np.flatnonzero(~hits)[0]
    else:
        out = hits[codes]
    return np.asarray(out.reshape(tuple(arr.shape), order=order))


def _type_of(values: Any) -> str:
    dtype = values.dtype if sp.issparse(values) else np.asarray(values).dtype
    return type_name(dtype)


def fail_type(values: Any) -> str:
    """The type name of ``values`` for messages."""
    return _type_of(values)


def dtype_error(kind: str, op_name: str) -> str:
    """The message of an operation refusing strings."""
    return f"unsupported input type: String\nfor the {kind} operation: {op_name}"
