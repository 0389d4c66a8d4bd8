"""The compiled passes of grouped reductions over the CSC arrays of a sparse matrix.

A group-by of the rows of a sparse matrix (``M -/ g >- R``), and the reduction of each column
of one (``M >- R``, all rows one group), read its stored values column by column: sums,
counts and squared deviations (``Var``, ``Std``, ``VarN``, ``StdN``) and sums of logarithms
(``GeoMean``) accumulate in arrays of the result's size; the order statistics (``Median``,
``Quantile``) and ``Mode`` gather one column's values of each group at a time. No array of
one entry per stored value is made, but the logarithms of ``GeoMean``, taken by numpy a few
columns at a time. Every function returns ``None`` for data the kernels do not take or for
arrays holding an index out of range (the caller then reduces the runs by key, which reports
the damage).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from ...aliases import Array
from .registry import Compressed

__all__ = [
    "column_chunks",
    "grouped_logs",
    "grouped_modes",
    "grouped_moments",
    "grouped_quantiles",
    "index_pair",
    "pointer_ok",
    "takes",
]


THREADS = max(1, min(4, os.cpu_count() or 1))

#: The stored values whose logarithms are taken at once (or one column, if it has more).
_CHUNK = 1 << 16


def index_pair(values: Compressed) -> tuple[Array, Array]:
    """The indices and pointer of ``values`` in one type the kernels take."""
    indices, indptr = values.indices, values.indptr
    if indices.dtype != indptr.dtype or indices.dtype.str not in ("<i4", "<i8", "<u4", "<u8"):
        kind = "u" if values.base else "i"  # unsigned: a stored 0 or negative is refused
        indices = indices.astype(f"<{kind}8")
        indptr = indptr.astype(f"<{kind}8")
    return np.ascontiguousarray(indices), np.ascontiguousarray(indptr)


def takes(data: Array) -> bool:
    return data.dtype.kind in "fiub" and not (data.dtype.kind == "f" and data.dtype.itemsize < 4)


def _rows(groups: Array, count: int) -> Array:
    """The number of rows of each group."""
    return np.bincount(groups[groups >= 0], minlength=count).astype(np.int64)


def grouped_moments(
    values: Compressed, groups: Array, count: int
) -> tuple[Array, Array, Array] | None:
    """The mean and the population variance of each group of rows (``groups``: int32, -1 for
    none) in each column, implicit zeros included, and the group sizes: two ``count x
    columns`` float64 arrays and one int64 array (the mean of an empty group is 0)."""
    from ...._groupby import group_moments

    data = values.data
    if not takes(data):
        return None
    rows = _rows(groups, count)
    n = np.maximum(rows.astype(np.float64), 1.0)
    shape = (values.shape[1], count)
    sums, devs = np.zeros(shape), np.zeros(shape)
    seen = np.zeros(shape, dtype=np.uint32)
    indices, indptr = index_pair(values)
    if (
        group_moments(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            n,
            sums,
            devs,
            seen,
            True,
            THREADS,
            values.base,
        )
        >= 0
    ):
        return None
    mean = sums / n
    del sums
    zeros = rows - seen.astype(np.int64)
    del seen
    var = (devs + zeros * mean**2) / n
    return mean.T, var.T, rows


def pointer_ok(values: Compressed, indptr: Array) -> bool:
    """Whether the column pointer starts in range, never decreases and ends in range."""
    p = indptr.astype(np.int64)  # a value past int64 wraps negative: refused
    return bool(
        len(p) >= 1
        and p[0] - values.base >= 0
        and np.all(np.diff(p) >= 0)
        and p[-1] - values.base <= len(values.data)
    )


def column_chunks(indptr: Array, base: int) -> Iterator[tuple[int, int, int, int]]:
    """Consecutive columns ``c0:c1`` holding about :data:`_CHUNK` stored values (at least one
    column), and their values' range ``start:stop``."""
    p = indptr.astype(np.int64) - base
    columns = len(p) - 1
    c0 = 0
    while c0 < columns:
        c1 = int(np.searchsorted(p, p[c0] + _CHUNK, side="right")) - 1
        c1 = min(max(c1, c0 + 1), columns)
        yield c0, c1, int(p[c0]), int(p[c1])
        c0 = c1


def grouped_logs(
    values: Compressed, groups: Array, count: int, eps: float
) -> tuple[Array, Array, Array] | None:
    """The sum of ``log(x + eps)`` of the stored values of each group of rows in each column,
    the number of those values (both ``count x columns``) and the group sizes; the
    logarithms are taken by numpy a chunk of columns at a time."""
    from ...._groupby import group_moments

    data = values.data
    if not takes(data):
        return None
    indices, indptr = index_pair(values)
    if not pointer_ok(values, indptr):
        return None
    rows = _rows(groups, count)
    n = np.maximum(rows.astype(np.float64), 1.0)
    shape = (values.shape[1], count)
    sums = np.zeros(shape)
    seen = np.zeros(shape, dtype=np.uint32)
    for c0, c1, start, stop in column_chunks(indptr, values.base):
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(np.asarray(data[start:stop]).astype(np.float64) + eps)
        pointer = indptr[c0 : c1 + 1] - indptr.dtype.type(start)
        part = sums[c0:c1]
        if (
            group_moments(
                logs,
                indices[start:stop],
                pointer,
                groups,
                n,
                part,
                part,
                seen[c0:c1],
                False,
                1,
                values.base,
            )
            >= 0
        ):
            return None
    return sums.T, seen.T, rows


def grouped_quantiles(values: Compressed, groups: Array, count: int, p: float) -> Array | None:
    """The ``p`` quantile of each group of rows in each column (``count x columns``
    float64), implicit zeros included."""
    from ...._groupby import group_quantiles

    data = values.data
    if not takes(data):
        return None
    out = np.zeros((values.shape[1], count))
    indices, indptr = index_pair(values)
    if (
        group_quantiles(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            _rows(groups, count),
            p,
            out,
            THREADS,
            values.base,
        )
        >= 0
    ):
        return None
    return out.T


def grouped_modes(values: Compressed, groups: Array, count: int) -> Array | None:
    """The most frequent value of each group of rows in each column (``count x columns``, of
    the type of the values), implicit zeros included."""
    from ...._groupby import group_modes

    data = values.data
    if not takes(data):
        return None
    out = np.zeros((values.shape[1], count), dtype=data.dtype)
    indices, indptr = index_pair(values)
    if (
        group_modes(
            np.ascontiguousarray(data),
            indices,
            indptr,
            groups,
            _rows(groups, count),
            out,
            THREADS,
            values.base,
        )
        >= 0
    ):
        return None
    return out.T
