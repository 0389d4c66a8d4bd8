"""The built-in reductions: ``Sum``, ``Count``, ``Mean``, ``Median``, ``Quantile``, ``Min``,
``Max``, ``Mode``, ``GeoMean``, ``Var``, ``Std``, ``VarN``, ``StdN``.

Every reduction works on *segments* (:meth:`ReductionOperation.segments`): runs of stored
values plus a number of implicit zeros, which is how the columns of a sparse CSC matrix, the
groups of a group-by and the rows of a dense matrix are all presented. The common reductions
are vectorized over all segments at once (``np.add.reduceat`` on the stored values, the
implicit zeros counted, never materialized); ``Median``, ``Quantile`` and ``Mode`` sort each
segment's stored values and place the implicit zeros by position. Variances are population
(uncorrected) variances. ``Mode`` breaks ties by the value whose count reached the maximum
first when scanning a dense run in order; on sparse segments the implicit zeros count as if
they came after the stored values.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ._registry import (
    EPS,
    FLOAT_TYPE,
    TYPE,
    Parameter,
    ReductionOperation,
    register_reduction,
)
from ._values import float_of, sum_of

__all__ = ["segment_sums"]

Array = np.ndarray[Any, Any]


def segment_sums(data: Array, indptr: Array, dtype: Any = None) -> Array:
    """The sum of each segment ``data[indptr[i]:indptr[i+1]]`` (0 for an empty one)."""
    counts = np.diff(indptr)
    values = data if dtype is None else data.astype(dtype, copy=False)
    out = np.zeros(len(counts), dtype=values.dtype if values.size else (dtype or data.dtype))
    full = counts > 0
    if values.size and bool(np.any(full)):
        out[full] = np.add.reduceat(values, indptr[:-1][full])
    return out


def _moments(data: Array, indptr: Array, sizes: Array) -> tuple[Array, Array]:
    """Mean and population variance of each segment, implicit zeros included."""
    x = data.astype(np.float64, copy=False)
    n = np.maximum(sizes.astype(np.float64), 1.0)
    mean = segment_sums(x, indptr) / n
    per = np.repeat(mean, np.diff(indptr))
    dev = segment_sums((x - per) ** 2, indptr)
    zeros = sizes - np.diff(indptr)
    return mean, (dev + zeros * mean**2) / n


class _Float(ReductionOperation):
    """A reduction whose result is the float type of its input (or ``type``)."""

    PARAMETERS: ClassVar[tuple[Parameter, ...]] = (FLOAT_TYPE,)

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, float_of)

    def dense(self, values: Array) -> Array:
        starts = np.arange(values.shape[0] + 1) * values.shape[1]
        sizes = np.full(values.shape[0], values.shape[1])
        return self.segments(np.ascontiguousarray(values).reshape(-1), starts, sizes)


@register_reduction
class Sum(_Float):
    """The sum of the values (type: the sum type of the input)."""

    NAME = "Sum"
    PARAMETERS = (TYPE,)

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, sum_of)

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        return segment_sums(data, indptr, self.result_type(data.dtype))


@register_reduction
class Count(_Float):
    """The number of values, zeros included (UInt32 unless ``type`` says otherwise)."""

    NAME = "Count"
    PARAMETERS = (TYPE,)
    STRINGS = True

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, lambda _: np.dtype(np.uint32))

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        return np.asarray(sizes).astype(self.result_type(data.dtype))


@register_reduction
class Mean(_Float):
    """The mean of the values."""

    NAME = "Mean"

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        return _moments(data, indptr, sizes)[0].astype(self.result_type(data.dtype))


class _Spread(_Float):
    """A variance or a standard deviation (``ROOT``), over the mean plus ``eps`` (``NORMAL``)."""

    ROOT: ClassVar[bool] = False
    NORMAL: ClassVar[bool] = False

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        mean, out = _moments(data, indptr, sizes)
        if self.ROOT:
            out = np.sqrt(out)
        if self.NORMAL:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out / (mean + self.params["eps"])
        return np.asarray(out.astype(self.result_type(data.dtype)))


@register_reduction
class Var(_Spread):
    """The population variance of the values."""

    NAME = "Var"


@register_reduction
class Std(_Spread):
    """The population standard deviation of the values."""

    NAME = "Std"
    ROOT = True


@register_reduction
class VarN(_Spread):
    """The variance divided by (the mean + ``eps``)."""

    NAME = "VarN"
    PARAMETERS = (FLOAT_TYPE, EPS)
    NORMAL = True


@register_reduction
class StdN(_Spread):
    """The standard deviation divided by (the mean + ``eps``)."""

    NAME = "StdN"
    PARAMETERS = (FLOAT_TYPE, EPS)
    ROOT = NORMAL = True


@register_reduction
class GeoMean(_Float):
    """``exp(mean(log(x + eps))) - eps``."""

    NAME = "GeoMean"
    PARAMETERS = (FLOAT_TYPE, EPS)

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        eps = self.params["eps"]
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = segment_sums(np.log(data.astype(np.float64) + eps), indptr)
            zeros = sizes - np.diff(indptr)
            logs = logs + np.where(zeros > 0, zeros * np.log(eps) if eps else -np.inf, 0.0)
            out = np.exp(logs / np.maximum(sizes, 1)) - eps
        return np.asarray(out.astype(self.result_type(data.dtype)))


class _Extreme(_Float):
    """``Min`` or ``Max``: the input type; implicit zeros take part."""

    PARAMETERS = ()
    UFUNC: Any = np.minimum

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return dtype

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        counts = np.diff(indptr)
        out = np.zeros(len(counts), dtype=data.dtype)
        full = counts > 0
        if data.size and bool(np.any(full)):
            out[full] = self.UFUNC.reduceat(data, indptr[:-1][full])
        partial = full & (counts < sizes)
        out[partial] = self.UFUNC(out[partial], 0)
        return out


@register_reduction
class Min(_Extreme):
    """The smallest value."""

    NAME = "Min"


@register_reduction
class Max(_Extreme):
    """The largest value."""

    NAME = "Max"
    UFUNC = np.maximum


def _order_statistic(nonzero: Array, zeros: int, k: int) -> Any:
    """The ``k``-th smallest (0-based) of the sorted ``nonzero`` values plus ``zeros`` zeros."""
    negatives = int(np.searchsorted(nonzero, 0, "left"))
    if k < negatives:
        return nonzero[k]
    if k < negatives + zeros:
        return 0
    return nonzero[k - zeros]


def _quantile(data: Array, indptr: Array, sizes: Array, p: float) -> Array:
    out = np.empty(len(sizes), dtype=np.float64)
    for i in range(len(sizes)):
        seg = np.sort(data[indptr[i]:indptr[i + 1]]).astype(np.float64)
        n = int(sizes[i])
        if n == 0:
            out[i] = np.nan
            continue
        h = (n - 1) * p
        lo = int(np.floor(h))
        hi = min(lo + 1, n - 1)
        a = _order_statistic(seg, n - seg.size, lo)
        b = _order_statistic(seg, n - seg.size, hi)
        out[i] = a + (h - lo) * (b - a)
    return out


@register_reduction
class Median(_Float):
    """The median (the mean of the middle two of an even count)."""

    NAME = "Median"

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        return _quantile(data, indptr, sizes, 0.5).astype(self.result_type(data.dtype))


def _fraction(x: float, _: dict[str, Any]) -> str | None:
    return "at least 0" if x < 0 else "at most 1" if x > 1 else None


@register_reduction
class Quantile(_Float):
    """The ``p`` quantile, interpolating linearly between order statistics."""

    NAME = "Quantile"
    PARAMETERS = (FLOAT_TYPE, Parameter("p", "float", required=True, check=_fraction))

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        out = _quantile(data, indptr, sizes, self.params["p"])
        return np.asarray(out.astype(self.result_type(data.dtype)))


def _mode(values: Array) -> Any:
    uniques, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    best = counts.max()
    tied = np.flatnonzero(counts == best)
    if tied.size == 1:
        return uniques[tied[0]]
    reached = [np.flatnonzero(inverse == t)[best - 1] for t in tied]
    return uniques[tied[int(np.argmin(reached))]]


@register_reduction
class Mode(_Float):
    """The most frequent value (the input type; strings accepted)."""

    NAME = "Mode"
    PARAMETERS = ()
    STRINGS = True

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return dtype

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        out = np.empty(len(sizes), dtype=data.dtype)
        for i in range(len(sizes)):
            seg = data[indptr[i]:indptr[i + 1]]
            zeros = int(sizes[i]) - seg.size
            if zeros:
                seg = np.concatenate([seg, np.zeros(zeros, dtype=data.dtype)])
            out[i] = _mode(seg)
        return out
