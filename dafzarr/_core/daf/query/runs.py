"""The stored values a reduction reduces: the CSC arrays of a matrix, and values split into
runs (one per result value) with their implicit zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...aliases import Array

__all__ = ["Compressed", "Runs"]


@dataclass(frozen=True)
class Compressed:
    """The CSC arrays of a ``shape`` matrix: its stored ``data``, the row ``indices`` and the
    column pointer ``indptr``, both ``base``-based (0: scipy's, 1: as Daf stores them)."""

    data: Array
    indices: Array
    indptr: Array
    shape: tuple[int, int]
    base: int = 0


class Runs:
    """Stored values split into runs (one per result value): either consecutive
    (``data[indptr[i]:indptr[i+1]]``, as the columns of a CSC matrix) or by ``keys`` (the run
    of each value, in any order, as the rows of a CSC matrix or the groups of a group-by).

    Reductions that are sums of per-value terms use :meth:`sums` and :meth:`per_value`, which
    need no sorting; the others use :meth:`sorted`.
    """

    def __init__(
        self, data: Array, count: int, *, indptr: Array | None = None, keys: Array | None = None
    ) -> None:
        self.data = data
        self.count = count
        self.indptr = indptr
        self.keys = keys
        if keys is not None:
            self.counts = np.bincount(keys, minlength=count)
        else:
            assert indptr is not None
            self.counts = np.diff(indptr)

    def sums(self, values: Array) -> Array:
        """The sum of ``values`` (one per stored value) over each run, as float64."""
        if self.keys is not None:
            return np.bincount(self.keys, weights=values, minlength=self.count)
        assert self.indptr is not None
        out = np.zeros(self.count, dtype=np.float64)
        full = self.counts > 0
        if values.size and bool(full.any()):  # summed in float64, with no float64 copy
            out[full] = np.add.reduceat(values, self.indptr[:-1][full], dtype=np.float64)
        return out

    def per_value(self, per_run: Array) -> Array:
        """A value per run, repeated for each stored value of the run."""
        if self.keys is not None:
            return per_run[self.keys]
        return np.repeat(per_run, self.counts)

    def sorted(self) -> tuple[Array, Array]:
        """The stored values grouped by run, and the run boundaries."""
        indptr = np.concatenate([[0], np.cumsum(self.counts)])
        if self.keys is None:
            return self.data, indptr
        return self.data[np.argsort(self.keys, kind="stable")], indptr
