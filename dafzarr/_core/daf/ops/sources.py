"""Reading the properties to copy from any Daf reader, in the form they are stored.

The reader API gives every vector dense; a copy keeps a sparse vector sparse, so it asks the
data set that stores it: a :class:`~dafzarr.daf.ZarrDaf` directly, a view through the base
property it passes through unchanged, a chain through the member that holds the vector.
Anything else (a computed view property, another reader class) is read dense.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...aliases import Array
from ..chain import ReadChain
from ..names import join_path
from ..storage import UNDEF
from ..view import DafView
from ..zarrdaf import ZarrDaf

__all__ = ["SparseVector", "read_vector", "stored_sparse_vector"]


@dataclass(frozen=True)
class SparseVector:
    """A vector of ``n`` entries with values stored at ``positions`` (0-based, increasing)."""

    n: int
    positions: Array
    values: Array

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' element type."""
        dtype: np.dtype[Any] = self.values.dtype
        return dtype

    def dense(self) -> Array:
        """The vector with every entry (zeros where nothing is stored)."""
        out = np.zeros(self.n, dtype=self.values.dtype)
        out[self.positions] = self.values
        return out


def stored_sparse_vector(reader: Any, axis: str, name: str) -> SparseVector | None:
    """The vector as it is stored, if it is stored sparse (else ``None``)."""
    if isinstance(reader, ZarrDaf):
        path = join_path("vectors", axis, name)
        if name in ("name", "index") or reader._node_kind(path) != "group":
            return None
        n = reader.axis_length(axis)
        positions, values = reader._sparse_vector(path, n)
        return SparseVector(n, positions.astype(np.int64, copy=False), values)
    if isinstance(reader, DafView):
        rule = reader._vector_rule(axis, name)
        return stored_sparse_vector(reader.base, axis, name) if rule and rule[1] else None
    if isinstance(reader, ReadChain):
        holder = reader._vector_holder(axis, name)
        return None if holder is None else stored_sparse_vector(holder, axis, name)
    return None


def read_vector(
    reader: Any, axis: str, name: str, default: Any = UNDEF
) -> Array | SparseVector | None:
    """The vector: sparse if stored sparse, else dense as the reader gives it (a zero-copy
    view where the reader has one); ``default`` for a missing one (``None``: nothing)."""
    if reader.has_vector(axis, name):
        found = stored_sparse_vector(reader, axis, name)
        if found is not None:
            return found
    value: Array | None = reader.get_np_vector(axis, name, default=default)
    return value
