"""The built-in reductions: ``Sum``, ``Count``, ``Mean``, ``Median``, ``Quantile``, ``Min``,
``Max``, ``Mode``, ``GeoMean``, ``Var``, ``Std``, ``VarN``, ``StdN``.

Every reduction works on :class:`~._registry.Runs`: the stored values of each result value
plus a number of implicit zeros, which is how the columns (consecutive runs) and rows (runs by
key) of a sparse matrix, the groups of a group-by and the rows of a dense matrix are all
presented. Sums, means, variances and geometric means are sums of per-value terms
(``np.bincount`` or ``np.add.reduceat``, no sorting); ``Min`` and ``Max`` use
``ufunc.at``/``reduceat``; ``Median`` and ``Quantile`` sort the stored values once
(``np.lexsort`` by run and value) and place the implicit zeros by rank. Nothing is made dense.
Variances are population (uncorrected) variances. ``Mode`` breaks ties by the value whose
count reached the maximum first when scanning a dense run in order; in sparse runs the
implicit zeros count as if after the stored values.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...aliases import Array
from .grouped import (
    THREADS,
    grouped_logs,
    grouped_modes,
    grouped_moments,
    grouped_quantiles,
    index_pair,
)
from .literals import float_of, sum_of
from .opdocs import EX_MASKS, registered_doc
from .opdocs import registered_example as _example
from .registry import (
    EPS,
    FLOAT_TYPE,
    TYPE,
    Compressed,
    Parameter,
    ReductionOperation,
    Runs,
    register_reduction,
)
from .scattered import (
    column_sizes,
    scattered_extremes,
    scattered_logs,
    scattered_modes,
    scattered_moments,
    scattered_quantiles,
    scattered_sums,
)

__all__ = [
    "Count",
    "GeoMean",
    "Max",
    "Mean",
    "Median",
    "Min",
    "Mode",
    "Quantile",
    "Std",
    "StdN",
    "Sum",
    "Var",
    "VarN",
]


def _group_sums(
    values: Compressed, groups: Array, count: int, dtype: np.dtype[Any]
) -> Array | None:
    """The sums of each group of rows of the CSC matrix ``values``, column by column, as a
    Fortran-ordered ``count x columns`` array of float64 (for a float ``dtype``) or of
    ``dtype`` (an integer type: wrapping sums), by the compiled one-pass kernel; ``None`` for
    data it does not take or an index out of range (the caller falls back to keyed runs)."""
    from ...._groupby import group_sums

    data = values.data
    if data.dtype.kind not in "fiub" or (data.dtype.kind == "f" and data.dtype.itemsize < 4):
        return None
    columns = values.shape[1]
    if dtype.kind == "f":
        out = np.zeros((columns, count), dtype=np.float64)
    elif dtype.kind in "iu" and data.dtype.kind in "iub":
        out = np.zeros((columns, count), dtype=np.uint64)
    else:
        return None
    indices, indptr = index_pair(values)
    bad = group_sums(np.ascontiguousarray(data), indices, indptr, groups, out, THREADS, values.base)
    if bad >= 0:
        return None
    return out.T if dtype.kind == "f" else out.view(np.int64).T.astype(dtype)


def _moments(runs: Runs, sizes: Array) -> tuple[Array, Array]:
    """Mean and population variance of each run, implicit zeros included."""
    n = np.maximum(sizes.astype(np.float64), 1.0)
    mean = runs.sums(runs.data) / n
    dev = runs.sums((runs.data.astype(np.float64) - runs.per_value(mean)) ** 2)
    zeros = sizes - runs.counts
    return mean, (dev + zeros * mean**2) / n


class _Float(ReductionOperation):
    """A reduction whose result is the float type of its input (or ``type``)."""

    PARAMETERS: ClassVar[tuple[Parameter, ...]] = (FLOAT_TYPE,)

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, float_of)

    def _typed(self, values: Array, runs: Runs) -> Array:
        return np.asarray(values.astype(self.result_type(runs.data.dtype)))


@register_reduction
class Sum(_Float):
    __doc__ = registered_doc(
        "``>> Sum`` (``>| Sum``, ``>- Sum``): the sum of the values.",
        "type (number type, auto): the result type (default: Int32 or UInt32 for smaller "
        "integers and Bool, else the input type).",
        _example("@ cell : age >> Sum", "96", 'Sum(type="Float64")', ">> Sum type Float64"),
    )

    NAME = "Sum"
    PARAMETERS = (TYPE,)

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, sum_of)

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        dtype = self.result_type(values.data.dtype)
        sums = _group_sums(values, groups, count, dtype)
        return None if sums is None else sums.astype(dtype, copy=False)

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        dtype = self.result_type(values.data.dtype)
        sums = scattered_sums(values, groups, count, dtype)
        return None if sums is None else sums.astype(dtype, copy=False)

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        dtype = self.result_type(runs.data.dtype)
        if dtype.kind == "f":
            return self._typed(runs.sums(runs.data), runs)
        out = np.zeros(runs.count, dtype=dtype)  # exact integer sums
        if runs.keys is not None:
            np.add.at(out, runs.keys, runs.data.astype(dtype))
            return out
        full = runs.counts > 0
        if runs.data.size and bool(full.any()):
            assert runs.indptr is not None
            out[full] = np.add.reduceat(runs.data.astype(dtype), runs.indptr[:-1][full])
        return out


@register_reduction
class Count(_Float):
    __doc__ = registered_doc(
        "``>> Count``: the number of values, zeros included; String values are counted too.",
        "type (number type, auto): the result type (default: UInt32).",
        _example(
            "@ cell : age / is_doublet >> Count",
            "array([2, 1], dtype=uint32)",
            "Count()",
            ">> Count",
            setup=EX_MASKS,
        ),
    )

    NAME = "Count"
    PARAMETERS = (TYPE,)
    STRINGS = True

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return self.out_type(dtype, lambda _: np.dtype(np.uint32))

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        rows = np.bincount(groups[groups >= 0], minlength=count)
        dtype = self.result_type(values.data.dtype)
        return np.asfortranarray(np.repeat(rows[:, None], values.shape[1], axis=1), dtype)

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        dtype = self.result_type(values.data.dtype)
        sizes = column_sizes(groups, count)
        return np.repeat(sizes[:, None], values.shape[0], axis=1).astype(dtype)

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        return self._typed(np.asarray(sizes), runs)


@register_reduction
class Mean(_Float):
    __doc__ = registered_doc(
        "``>> Mean``: the mean of the values.",
        "type (float type, auto): the result type (default: the float type of the input).",
        _example("@ cell : age >> Mean", "32.0", 'Mean(type="Float32")', ">> Mean type Float32"),
    )

    NAME = "Mean"

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        sums = _group_sums(values, groups, count, np.dtype(np.float64))
        if sums is None:
            return None
        rows = np.bincount(groups[groups >= 0], minlength=count)
        mean = sums / np.maximum(rows.astype(np.float64), 1.0)[:, None]
        return np.asarray(mean.astype(self.result_type(values.data.dtype), copy=False))

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        sums = scattered_sums(values, groups, count, np.dtype(np.float64))
        if sums is None:
            return None
        sizes = column_sizes(groups, count)
        mean = sums / np.maximum(sizes.astype(np.float64), 1.0)[:, None]
        return np.asarray(mean.astype(self.result_type(values.data.dtype), copy=False))

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        return self._typed(_moments(runs, sizes)[0], runs)


class _Spread(_Float):
    """A variance or a standard deviation (``ROOT``), over the mean plus ``eps`` (``NORMAL``)."""

    ROOT: ClassVar[bool] = False
    NORMAL: ClassVar[bool] = False

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        found = grouped_moments(values, groups, count)
        if found is None:
            return None
        mean, var, _ = found
        return self._finish(mean, var, values.data.dtype)

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        found = scattered_moments(values, groups, count)
        return None if found is None else self._finish(found[0], found[1], values.data.dtype)

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        mean, var = _moments(runs, sizes)
        return self._finish(mean, var, runs.data.dtype)

    def _finish(self, mean: Array, out: Array, dtype: np.dtype[Any]) -> Array:
        if self.ROOT:
            out = np.sqrt(out)
        if self.NORMAL:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out / (mean + self.params["eps"])
        return np.asarray(out.astype(self.result_type(dtype), copy=False))


@register_reduction
class Var(_Spread):
    __doc__ = registered_doc(
        "``>> Var``: the population (uncorrected) variance of the values.",
        "type (float type, auto): the result type (default: the float type of the input).",
        _example("@ cell : age >> Var", "78.0", "Var()", ">> Var"),
    )

    NAME = "Var"


@register_reduction
class Std(_Spread):
    __doc__ = registered_doc(
        "``>> Std``: the population (uncorrected) standard deviation of the values.",
        "type (float type, auto): the result type (default: the float type of the input).",
        _example("@ cell : age >> Std", "8.831760866327848", "Std()", ">> Std"),
    )

    NAME = "Std"
    ROOT = True


@register_reduction
class VarN(_Spread):
    __doc__ = registered_doc(
        "``>> VarN``: the variance of the values divided by (their mean + ``eps``).",
        "type (float type, auto): the result type (default: the float type of the input).\n"
        "eps (float, 0): added to the mean first (not negative).",
        _example("@ cell : age >> VarN", "2.4375", "VarN(eps=1)", ">> VarN eps 1.0"),
    )

    NAME = "VarN"
    PARAMETERS = (FLOAT_TYPE, EPS)
    NORMAL = True


@register_reduction
class StdN(_Spread):
    __doc__ = registered_doc(
        "``>> StdN``: the standard deviation of the values divided by (their mean + ``eps``).",
        "type (float type, auto): the result type (default: the float type of the input).\n"
        "eps (float, 0): added to the mean first (not negative).",
        _example("@ cell : age >> StdN eps 1", "0.26762911716144994", "StdN()", ">> StdN eps 0.0"),
    )

    NAME = "StdN"
    PARAMETERS = (FLOAT_TYPE, EPS)
    ROOT = NORMAL = True


@register_reduction
class GeoMean(_Float):
    __doc__ = registered_doc(
        "``>> GeoMean``: the geometric mean, ``exp(mean(log(x + eps))) - eps``.",
        "type (float type, auto): the result type (default: the float type of the input).\n"
        "eps (float, 0): added to each value first, taken away from the result (not negative).",
        _example(
            "@ cell : age >> GeoMean", "30.616858866136536", "GeoMean(eps=1)", ">> GeoMean eps 1.0"
        ),
    )

    NAME = "GeoMean"
    PARAMETERS = (FLOAT_TYPE, EPS)

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        found = grouped_logs(values, groups, count, self.params["eps"])
        if found is None:
            return None
        logs, seen, rows = found
        out = self._finish(logs, rows[:, None] - seen.astype(np.int64), rows[:, None])
        return np.asarray(out.astype(self.result_type(values.data.dtype), copy=False))

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        found = scattered_logs(values, groups, count, self.params["eps"])
        if found is None:
            return None
        logs, seen, sizes = found
        out = self._finish(logs, sizes[:, None] - seen.astype(np.int64), sizes[:, None])
        return np.asarray(out.astype(self.result_type(values.data.dtype), copy=False))

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        eps = self.params["eps"]
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = runs.sums(np.log(runs.data.astype(np.float64) + eps))
        return self._typed(self._finish(logs, sizes - runs.counts, sizes), runs)

    def _finish(self, logs: Array, zeros: Array, sizes: Array) -> Array:
        """``exp`` of the mean log, from the sums of the stored values' logs."""
        eps = self.params["eps"]
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = logs + np.where(zeros > 0, zeros * np.log(eps) if eps else -np.inf, 0.0)
            return np.asarray(np.exp(logs / np.maximum(sizes, 1)) - eps)


class _Extreme(_Float):
    """``Min`` or ``Max``: the input type; implicit zeros take part."""

    PARAMETERS = ()
    UFUNC: ClassVar[Any] = np.minimum

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return dtype

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        from ...._groupby import group_extremes

        data = values.data
        if data.dtype.kind not in "fiub" or (data.dtype.kind == "f" and data.dtype.itemsize < 4):
            return None
        indices, indptr = index_pair(values)
        out = np.zeros((values.shape[1], count), dtype=data.dtype)
        seen = np.zeros((values.shape[1], count), dtype=np.uint32)
        if (
            group_extremes(
                np.ascontiguousarray(data),
                indices,
                indptr,
                groups,
                out,
                seen,
                self.UFUNC is np.maximum,
                THREADS,
                values.base,
            )
            >= 0
        ):
            return None
        rows = np.bincount(groups[groups >= 0], minlength=count)
        partial = (seen > 0) & (seen < rows[None, :])  # implicit zeros take part
        out[partial] = self.UFUNC(out[partial], 0)
        return np.asarray(out.T)

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        return scattered_extremes(values, groups, count, self.UFUNC is np.maximum)

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        data = runs.data
        full = runs.counts > 0
        out = np.zeros(runs.count, dtype=data.dtype)
        if runs.keys is not None:
            out[:] = self._identity(data.dtype)
            self.UFUNC.at(out, runs.keys, data)
            out[~full] = 0
        elif data.size and bool(full.any()):
            assert runs.indptr is not None
            out[full] = self.UFUNC.reduceat(data, runs.indptr[:-1][full])
        partial = full & (runs.counts < sizes)
        out[partial] = self.UFUNC(out[partial], 0)
        return out

    def _identity(self, dtype: np.dtype[Any]) -> Any:
        """The value every value replaces: the largest of the type for Min, else the least."""
        high = self.UFUNC is np.minimum
        if dtype.kind == "b":
            return high
        if dtype.kind == "f":
            return np.inf if high else -np.inf
        info = np.iinfo(dtype)
        return info.max if high else info.min


@register_reduction
class Min(_Extreme):
    __doc__ = registered_doc(
        "``>> Min``: the smallest value (of the input type; implicit zeros take part).",
        "",
        _example("@ cell : age >> Min", "20", "Min()", ">> Min"),
    )

    NAME = "Min"


@register_reduction
class Max(_Extreme):
    __doc__ = registered_doc(
        "``>> Max``: the largest value (of the input type; implicit zeros take part).",
        "",
        _example("@ cell : age >> Max", "41", "Max()", ">> Max"),
    )

    NAME = "Max"
    UFUNC = np.maximum


def _quantiles(runs: Runs, sizes: Array, p: float) -> Array:
    """The ``p`` quantile of each run (linear interpolation), implicit zeros placed by rank."""
    data, indptr = runs.sorted()
    counts = runs.counts
    run_of = np.repeat(np.arange(runs.count), counts)
    ordered = data[np.lexsort((data, run_of))].astype(np.float64)
    starts = indptr[:-1]
    negatives = np.bincount(run_of[ordered < 0], minlength=runs.count)
    zeros = sizes - counts
    n = sizes.astype(np.int64)
    h = (n - 1) * p
    low = np.floor(h).astype(np.int64)
    high = np.minimum(low + 1, np.maximum(n - 1, 0))

    def rank(k: Array) -> Array:
        stored = np.where(k < negatives, k, k - zeros)
        at = np.clip(starts + stored, 0, max(ordered.size - 1, 0))
        value = ordered[at] if ordered.size else np.zeros(len(k))
        is_zero = (k >= negatives) & (k < negatives + zeros)
        return np.where(is_zero, 0.0, value)

    a, b = rank(low), rank(high)
    out = a + (h - low) * (b - a)
    return np.where(n > 0, out, np.nan)


@register_reduction
class Median(_Float):
    __doc__ = registered_doc(
        "``>> Median``: the median of the values (the mean of the middle two of an even count; "
        "NaNs order after every number).",
        "type (float type, auto): the result type (default: the float type of the input).",
        _example("@ cell : age >> Median", "35.0", "Median()", ">> Median"),
    )

    NAME = "Median"

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        out = grouped_quantiles(values, groups, count, 0.5)
        return None if out is None else out.astype(self.result_type(values.data.dtype))

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        out = scattered_quantiles(values, groups, count, 0.5)
        return None if out is None else out.astype(self.result_type(values.data.dtype))

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        return self._typed(_quantiles(runs, sizes, 0.5), runs)


def _fraction(x: float, _: dict[str, Any]) -> str | None:
    return "at least 0" if x < 0 else "at most 1" if x > 1 else None


@register_reduction
class Quantile(_Float):
    __doc__ = registered_doc(
        "``>> Quantile p x``: the ``p`` quantile of the values, interpolating linearly between "
        "order statistics (NaNs order after every number).",
        "type (float type, auto): the result type (default: the float type of the input).\n"
        "p (float, required): the quantile, from 0 to 1.",
        _example("@ cell : age >> Quantile p 0.25", "27.5", "Quantile(p=0.9)", ">> Quantile p 0.9"),
    )

    NAME = "Quantile"
    PARAMETERS = (FLOAT_TYPE, Parameter("p", "float", required=True, check=_fraction))

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        out = grouped_quantiles(values, groups, count, self.params["p"])
        return None if out is None else out.astype(self.result_type(values.data.dtype))

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        out = scattered_quantiles(values, groups, count, self.params["p"])
        return None if out is None else out.astype(self.result_type(values.data.dtype))

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        return self._typed(_quantiles(runs, sizes, self.params["p"]), runs)


@register_reduction
class Mode(_Float):
    __doc__ = registered_doc(
        "``>> Mode``: the most frequent value (of the input type; String values too); a tie "
        "goes to the value whose count reached the maximum first.",
        "",
        _example("@ cell : type >> Mode", "'T'", "Mode()", ">> Mode", setup=EX_MASKS),
    )

    NAME = "Mode"
    PARAMETERS = ()
    STRINGS = True

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return dtype

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        return grouped_modes(values, groups, count)

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        return scattered_modes(values, groups, count)

    def one(self, values: Array) -> Any:
        uniques, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        best = counts.max()
        tied = np.flatnonzero(counts == best)
        if tied.size == 1:
            return uniques[tied[0]]
        reached = [np.flatnonzero(inverse == t)[best - 1] for t in tied]
        return uniques[tied[int(np.argmin(reached))]]

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        return ReductionOperation._reduce(self, runs, sizes)
