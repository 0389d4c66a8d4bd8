"""The built-in element-wise operations: ``Abs``, ``Round``, ``Clamp``, ``Convert``,
``Fraction``, ``Log``, ``Significant``.

Each takes a numpy scalar, a 1-D array, a 2-D array or a scipy sparse CSC matrix. On sparse
input an operation that maps 0 to 0 works on the stored values only and keeps the structure;
one that does not (``Log`` with ``eps`` 0, ``Clamp`` whose range excludes 0) gives the dense
result, as the dense values would. ``Fraction`` and ``Significant`` work per vector or per
matrix column and refuse scalars.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ....errors import InvalidArgumentError, InvalidArgumentTypeError
from ...aliases import Array
from .literals import float_of, int_of, type_name, unsigned_of
from .opdocs import registered_doc
from .opdocs import registered_example as _example
from .registry import EPS, FLOAT_TYPE, TYPE, EltwiseOperation, Parameter, positive, register_eltwise

__all__ = ["map_values"]


def map_values(values: Any, function: Any, dtype: np.dtype[Any]) -> Any:
    """``function`` applied to every value, cast to ``dtype``; sparse input keeps its structure
    when ``function(0) == 0``, else is computed densely."""
    if sp.issparse(values):
        with np.errstate(all="ignore"):
            zero = function(np.zeros(1, dtype=values.dtype))
        if np.all(zero == 0):
            out = values.copy()
            out.data = _cast(function(values.data), dtype)
            return out
        values = values.toarray(order="F")
    result = function(np.asarray(values))
    cast = _cast(result, dtype)
    return cast[()] if np.ndim(values) == 0 else cast


def _cast(values: Any, dtype: np.dtype[Any]) -> Any:
    arr = np.asarray(values)
    if (
        dtype.kind in "iub"
        and arr.dtype.kind == "f"
        and (bool(np.any(~np.isfinite(arr))) or bool(np.any(arr != np.round(arr))))
    ):
        raise InvalidArgumentError(f"InexactError: {type_name(dtype)}")
    if dtype.kind in "iu" and arr.size:
        info = np.iinfo(dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise InvalidArgumentError(f"InexactError: {type_name(dtype)}")
    return arr.astype(dtype, copy=False)


class _Mapped(EltwiseOperation):
    """An operation of one numpy function (``FUNCTION``) whose default output type is
    ``DEFAULT`` of the input type."""

    PARAMETERS = (TYPE,)
    FUNCTION: ClassVar[Any] = None
    DEFAULT: ClassVar[Any] = None

    def apply(self, values: Any) -> Any:
        dtype = self.out_type(_dtype(values), type(self).DEFAULT)
        return map_values(values, type(self).FUNCTION, dtype)


@register_eltwise
class Abs(_Mapped):
    __doc__ = registered_doc(
        "``% Abs``: the absolute value of each value.",
        "type (number type, auto): the result type (default: the unsigned type of the input).",
        _example(
            "@ cell : age % Abs",
            "array([20, 35, 41], dtype=uint64)",
            'Abs(type="Int32")',
            "% Abs type Int32",
        ),
    )

    NAME = "Abs"
    FUNCTION = np.abs
    DEFAULT = unsigned_of


@register_eltwise
class Round(_Mapped):
    __doc__ = registered_doc(
        "``% Round``: each value rounded to the nearest integer (half to even).",
        "type (number type, auto): the result type (default: the integer type of the input).",
        _example("@ cell : age % Log base 10 % Round", "array([1, 2, 2])", "Round()", "% Round"),
    )

    NAME = "Round"
    FUNCTION = np.rint
    DEFAULT = int_of


def _above_min(x: float, params: dict[str, Any]) -> str | None:
    low = params.get("min", -np.inf)
    return None if x > low else f"larger than min ({low})"


@register_eltwise
class Clamp(EltwiseOperation):
    __doc__ = registered_doc(
        "``% Clamp min x max y``: values below ``min`` become ``min``, above ``max`` become "
        "``max``.",
        "type (number type, auto): the result type (default: the input type for integer "
        "input and integral bounds, else the float type of the input).\n"
        "min (float, -inf): the least value.\n"
        "max (float, inf): the largest value (more than ``min``).",
        _example(
            "@ cell : age % Clamp min 25 max 40",
            "array([25, 35, 40])",
            "Clamp(max=40)",
            "% Clamp min -Inf max 40.0",
        ),
    )

    NAME = "Clamp"
    PARAMETERS = (
        TYPE,
        Parameter("min", "float", -np.inf),
        Parameter("max", "float", np.inf, check=_above_min),
    )

    def apply(self, values: Any) -> Any:
        low, high = self.params["min"], self.params["max"]
        dtype = _dtype(values)
        integral = all(np.isfinite(b) and b == int(b) for b in (low, high) if np.isfinite(b))
        default = int_of(dtype) if dtype.kind in "iub" and integral else float_of(dtype)
        return map_values(
            values, lambda x: np.clip(x, low, high), self.out_type(dtype, lambda _: default)
        )


@register_eltwise
class Convert(EltwiseOperation):
    __doc__ = registered_doc(
        "``% Convert type T``: each value cast to the type ``T``; a value the type cannot hold "
        "exactly is an error.",
        "type (number type, required): the result type.",
        _example(
            "@ cell : age % Convert type Float32",
            "array([20., 35., 41.], dtype=float32)",
            'Convert(type="UInt8")',
            "% Convert type UInt8",
        ),
    )

    NAME = "Convert"
    PARAMETERS = (Parameter("type", "number_type", required=True),)

    def apply(self, values: Any) -> Any:
        return map_values(values, lambda x: x, self.params["type"])


@register_eltwise
class Log(EltwiseOperation):
    __doc__ = registered_doc(
        "``% Log base b eps e``: the logarithm of each value plus ``eps``.",
        "type (float type, auto): the result type (default: the float type of the input).\n"
        "base (float, e): the base of the logarithm (positive).\n"
        "eps (float, 0): added to each value first (not negative).",
        _example(
            "@ cell : age % Log base 10",
            "array([1.30103   , 1.54406804, 1.61278386])",
            "Log(base=2, eps=1)",
            "% Log base 2.0 eps 1.0",
        ),
    )

    NAME = "Log"
    PARAMETERS = (FLOAT_TYPE, Parameter("base", "float", float(np.e), check=positive), EPS)

    def apply(self, values: Any) -> Any:
        base, eps = self.params["base"], self.params["eps"]
        scale = 1.0 / np.log(base)

        def log(x: Array) -> Array:
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.asarray(np.log(x.astype(np.float64) + eps) * scale)

        return map_values(values, log, self.out_type(_dtype(values), float_of))


def _columns_sparse(values: Any) -> Any:
    return sp.csc_matrix(values) if not isinstance(values, sp.csc_matrix) else values.copy()


@register_eltwise
class Fraction(EltwiseOperation):
    __doc__ = registered_doc(
        "``% Fraction``: each value divided by the sum of its vector (of its column, for a "
        "matrix); no scalars.",
        "type (float type, auto): the result type (default: the float type of the input).",
        _example(
            "@ cell : age % Fraction",
            "array([0.20833333, 0.36458333, 0.42708333])",
            "Fraction()",
            "% Fraction",
        ),
    )

    NAME = "Fraction"
    PARAMETERS = (FLOAT_TYPE,)
    NO_SCALAR = True

    def apply(self, values: Any) -> Any:
        dtype = self.out_type(_dtype(values), float_of)
        if sp.issparse(values):
            out = _columns_sparse(values)
            totals = np.asarray(out.sum(axis=0), dtype=np.float64).reshape(-1)
            scale = np.divide(1.0, totals, out=np.zeros_like(totals), where=totals != 0)
            out.data = (out.data * np.repeat(scale, np.diff(out.indptr))).astype(dtype)
            return out
        arr = np.asarray(values, dtype=np.float64)
        totals = arr.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out_arr = np.where(totals != 0, arr / np.where(totals != 0, totals, 1), 0.0)
        return out_arr.astype(dtype)


def _at_most_high(x: float, params: dict[str, Any]) -> str | None:
    if x < 0:
        return "not negative"
    high = params["high"]
    return None if x <= high else f"at most high ({high})"


@register_eltwise
class Significant(EltwiseOperation):
    __doc__ = registered_doc(
        "``% Significant high h low l``: per vector (matrix column), all zero if every ``|x| < "
        "high``, else zero where ``|x| < low``; no scalars.",
        "high (float, required): the magnitude a vector needs to keep any value (positive).\n"
        "low (float, high): the magnitude a value needs to be kept (at most ``high``).",
        _example(
            "@ cell : age % Significant high 30 low 25",
            "array([ 0, 35, 41])",
            "Significant(high=3)",
            "% Significant high 3.0",
        ),
    )

    NAME = "Significant"
    PARAMETERS = (
        Parameter("high", "float", required=True, check=positive),
        Parameter("low", "float", None, check=_at_most_high),
    )
    NO_SCALAR = True

    def text(self) -> str:
        low = self.params["low"]
        base = f"% Significant high {_f(self.params['high'])}"
        return base if "low" not in self.given else f"{base} low {_f(low)}"

    def apply(self, values: Any) -> Any:
        high = self.params["high"]
        low = self.params["low"] if self.params["low"] is not None else high
        if sp.issparse(values):
            out = _columns_sparse(values)
            mags = np.abs(out.data)
            peak = np.zeros(out.shape[1])
            counts = np.diff(out.indptr)
            if mags.size:
                full = counts > 0
                peak[full] = np.maximum.reduceat(mags, out.indptr[:-1][full])
            keep = (mags >= low) & np.repeat(peak >= high, counts)
            out.data = np.where(keep, out.data, 0).astype(out.dtype)
            out.eliminate_zeros()
            return out
        arr = np.asarray(values)
        mags = np.abs(arr)
        peak = mags.max(axis=0) if arr.size else np.zeros(arr.shape[1:])
        return np.where((mags >= low) & (peak >= high), arr, 0).astype(arr.dtype)


def _f(x: float) -> str:
    from .literals import format_value

    return format_value(x)


def _dtype(values: Any) -> np.dtype[Any]:
    dtype = np.asarray(values).dtype if not sp.issparse(values) else values.dtype
    if dtype.kind in "OUS":
        raise InvalidArgumentTypeError("String")
    return dtype
