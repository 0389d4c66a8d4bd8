"""The compiled passes of reductions over groups of columns of the CSC arrays of a sparse
matrix.

A group-by of the columns of a sparse matrix (``M |/ g >| R``), and the reduction of each of
its rows (``M >| R``, all columns one group), read from the CSC arrays send each stored value
to the result of its row and its column's group: sums, counts, extremes and squared deviations
(``Var``, ``Std``, ``VarN``, ``StdN``; a second pass) and sums of logarithms (``GeoMean``)
accumulate in arrays of the result's size, the values of each result added in column order.
The order statistics (``Median``, ``Quantile``) and ``Mode`` gather the stored values of a
block of rows at a time (about :data:`BLOCK` values; each column read on from where the last
block stopped), the number of stored values of each row counted first. No array of one entry per
stored value is made, but the logarithms of ``GeoMean``, taken by numpy a few columns at a
time. Every function takes the CSC arrays of a ``rows x columns`` matrix and ``groups`` (int32,
the group of each column, -1 for none) and gives ``count x rows`` results; it returns ``None``
for data the kernels do not take or for arrays holding an index out of range (the caller
then reduces the runs by key, which reports the damage).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...aliases import Array
from .grouped import column_chunks, index_pair, pointer_ok, takes
from .registry import Compressed

__all__ = [
    "BLOCK",
    "column_sizes",
    "scattered_extremes",
    "scattered_logs",
    "scattered_modes",
    "scattered_moments",
    "scattered_quantiles",
    "scattered_sums",
]


#: The stored values of the rows whose order statistics or modes are found at once (or one
#: row, if it has more).
BLOCK = 1 << 16


def column_sizes(groups: Array, count: int) -> Array:
    """The number of columns of each group."""
    return np.bincount(groups[groups >= 0], minlength=count).astype(np.int64)


def scattered_sums(
    values: Compressed, groups: Array, count: int, dtype: np.dtype[Any]
) -> Array | None:
    """The sums of each row over each group of columns: float64 for a float ``dtype``, else
    wrapping sums of ``dtype`` (an integer type)."""
    from ...._groupby import scatter_sums

    data = values.data
    if not takes(data):
        return None
    shape = (count, values.shape[0])
    if dtype.kind == "f":
        out = np.zeros(shape)
    elif dtype.kind in "iu" and data.dtype.kind in "iub":
        out = np.zeros(shape, dtype=np.uint64)
    else:
        return None
    indices, indptr = index_pair(values)
    if scatter_sums(np.ascontiguousarray(data), indices, indptr, groups, out, values.base) >= 0:
        return None
    return out if dtype.kind == "f" else out.view(np.int64).astype(dtype)


def scattered_extremes(values: Compressed, groups: Array, count: int, high: bool) -> Array | None:
    """The largest (``high``) or smallest value of each row over each group of columns,
    implicit zeros included (0 for an empty group), of the type of the values."""
    from ...._groupby import scatter_extremes

    data = values.data
    if not takes(data):
        return None
    shape = (count, values.shape[0])
    out = np.zeros(shape, dtype=data.dtype)
    seen = np.zeros(shape, dtype=np.uint32)
    indices, indptr = index_pair(values)
    if (
        scatter_extremes(
            np.ascontiguousarray(data), indices, indptr, groups, out, seen, high, values.base
        )
        >= 0
    ):
        return None
    sizes = column_sizes(groups, count)
    partial = (seen > 0) & (seen < sizes[:, None])  # implicit zeros take part
    out[partial] = (np.maximum if high else np.minimum)(out[partial], 0)
    return out


def scattered_moments(values: Compressed, groups: Array, count: int) -> tuple[Array, Array] | None:
    """The mean and the population variance of each row over each group of columns,
    implicit zeros included (the mean of an empty group is 0)."""
    from ...._groupby import scatter_moments

    data = values.data
    if not takes(data):
        return None
    sizes = column_sizes(groups, count)
    n = np.maximum(sizes.astype(np.float64), 1.0)
    shape = (count, values.shape[0])
    sums, devs = np.zeros(shape), np.zeros(shape)
    seen = np.zeros(shape, dtype=np.uint32)
    indices, indptr = index_pair(values)
    if (
        scatter_moments(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            n,
            sums,
            devs,
            seen,
            True,
            values.base,
        )
        >= 0
    ):
        return None
    mean = sums
    mean /= n[:, None]  # in place: a few arrays of the result's size at most
    zeros = np.subtract(sizes[:, None], seen, dtype=np.float64)
    del seen
    zeros *= np.square(mean)
    devs += zeros
    del zeros
    devs /= n[:, None]
    return mean, devs


def scattered_logs(
    values: Compressed, groups: Array, count: int, eps: float
) -> tuple[Array, Array, Array] | None:
    """The sum of ``log(x + eps)`` of the stored values of each row over each group of
    columns, the number of those values and the group sizes (one per group); the logarithms
    are taken by numpy a chunk of columns at a time."""
    from ...._groupby import scatter_moments

    data = values.data
    if not takes(data):
        return None
    indices, indptr = index_pair(values)
    if not pointer_ok(values, indptr):
        return None
    sizes = column_sizes(groups, count)
    n = np.maximum(sizes.astype(np.float64), 1.0)
    shape = (count, values.shape[0])
    sums = np.zeros(shape)
    seen = np.zeros(shape, dtype=np.uint32)
    for c0, c1, start, stop in column_chunks(indptr, values.base):
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(np.asarray(data[start:stop]).astype(np.float64) + eps)
        pointer = indptr[c0 : c1 + 1] - indptr.dtype.type(start)
        if (
            scatter_moments(
                logs,
                indices[start:stop],
                pointer,
                np.ascontiguousarray(groups[c0:c1]),
                n,
                sums,
                sums,
                seen,
                False,
                values.base,
            )
            >= 0
        ):
            return None
    return sums, seen, sizes


def scattered_quantiles(values: Compressed, groups: Array, count: int, p: float) -> Array | None:
    """The ``p`` quantile of each row over each group of columns (float64), implicit zeros
    included."""
    from ...._groupby import scatter_quantiles

    data = values.data
    if not takes(data):
        return None
    out = np.zeros((count, values.shape[0]))
    indices, indptr = index_pair(values)
    if (
        scatter_quantiles(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            column_sizes(groups, count),
            p,
            out,
            values.base,
            BLOCK,
        )
        != -1
    ):
        return None
    return out


def scattered_modes(values: Compressed, groups: Array, count: int) -> Array | None:
    """The most frequent value of each row over each group of columns (of the type of the
    values), implicit zeros included."""
    from ...._groupby import scatter_modes

    data = values.data
    if not takes(data):
        return None
    out = np.zeros((count, values.shape[0]), dtype=data.dtype)
    indices, indptr = index_pair(values)
    if (
        scatter_modes(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            column_sizes(groups, count),
            out,
            values.base,
            BLOCK,
        )
        != -1
    ):
        return None
    return out
