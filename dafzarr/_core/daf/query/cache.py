"""The query cache of a data set, and the reads a query makes through the reader API.

:class:`QueryCache` keeps, per data set handle, the results of queries (keyed on the canonical
text) and per-axis lookup tables: a ``pandas.Index`` of each axis' entries, the stored string
vectors as decoded, and the integer codes of stored string vectors in the axis their values
name (or their distinct values), through which they are compared and looked up. Everything
is tagged with the data set's change counter (bumped by every write and delete of the data
set, in its storage layer) and dropped when that moves on, or by ``empty_cache()``.

:class:`Reader` is what evaluation sees of the data set: only the public reader API
(``get_scalar``, ``axis_np_entries``, ``get_np_vector``, ``get_np_matrix`` with relayout,
``*_set``, ``has_*``), so that other readers (views, chains) can stand in for a ``ZarrDaf``;
and, where the data set has it, a ``ZarrDaf``'s stored CSC arrays, which a group-by of rows
sums in place instead of reading the matrix as scipy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...aliases import Array

__all__ = ["QueryCache", "Reader"]


class QueryCache:
    """Results and lookup tables of one data set, valid for one value of its change counter."""

    def __init__(self) -> None:
        self.version: Any = None
        self.results: dict[str, Any] = {}
        self.tables: dict[Any, Any] = {}

    def sync(self, version: Any) -> None:
        """Drop everything if the data set changed since it was stored."""
        if version != self.version:
            self.clear()
            self.version = version

    def clear(self) -> None:
        """Drop every result and table."""
        self.results.clear()
        self.tables.clear()


class Reader:
    """The data set as evaluation reads it, with the per-axis tables of its cache."""

    def __init__(self, daf: Any, cache: QueryCache) -> None:
        self.daf = daf
        self.cache = cache
        self.name: str = daf.name
        #: Whether a matrix was read in the layout it is not stored in.
        self.relayout = False

    def entries(self, axis: str) -> Array:
        """The entry names of an axis (raises the reader's missing-axis error)."""
        return np.asarray(self.daf.axis_np_entries(axis))

    def index(self, axis: str) -> Any:
        """A ``pandas.Index`` of the axis' entries (hash lookups of many names at once)."""
        key = ("index", axis)
        found = self.cache.tables.get(key)
        if found is None:
            import pandas as pd

            found = pd.Index(self.entries(axis), dtype=object)
            self.cache.tables[key] = found
        return found

    def codes(
        self, axis: str, values: Array, source: tuple[str, str] | None, positions: Array | None
    ) -> Array:
        """The positions of ``values`` in ``axis`` (-1 where a value is not an entry).

        When the values are a stored vector (``source``, at ``positions`` or whole), the codes
        of the whole stored vector are computed once and kept."""
        if source is None:
            return np.asarray(self.index(axis).get_indexer(np.asarray(values, dtype=object)))
        key = ("codes", source, axis)
        full = self.cache.tables.get(key)
        if full is None:
            stored = self.vector(source[0], source[1], None)
            full = np.asarray(self.index(axis).get_indexer(np.asarray(stored, dtype=object)))
            self.cache.tables[key] = full
        return full if positions is None else full[positions]

    def factors(self, source: tuple[str, str, Array | None]) -> tuple[Array, Array]:
        """The integer codes and distinct values of the stored string vector ``source``
        (``(axis, name, positions or None)``), factorized once and kept."""
        from .stack import factorize

        key = ("factors", source[0], source[1])
        found = self.cache.tables.get(key)
        if found is None:
            found = factorize(self.vector(source[0], source[1], None))
            self.cache.tables[key] = found
        codes, uniques = found
        return (codes if source[2] is None else codes[source[2]]), uniques

    def position(self, axis: str, entry: str) -> int:
        """The position of one entry (-1 if it is not one)."""
        return int(self.index(axis).get_indexer([entry])[0])

    def vector(self, axis: str, name: str, default: Any) -> Array:
        """The whole vector ``name`` of ``axis``: ``name`` the entries, ``index`` the 1-based
        positions, a missing vector the ``default`` (an ``IfMissing``) repeated or the
        reader's missing-vector error."""
        if name == "name":
            return self.entries(axis)
        if name == "index":
            return np.arange(1, len(self.entries(axis)) + 1, dtype=np.int64)
        key = ("vector", axis, name)
        found: Array | None = self.cache.tables.get(key)
        if found is not None:
            return found
        if default is not None and not self.daf.has_vector(axis, name):
            return _filled(len(self.entries(axis)), default)
        values = np.asarray(self.daf.get_np_vector(axis, name))
        if values.dtype.kind == "O":
            # Decoded strings are kept (as a read-only view: the reader's own array keeps its
            # flags); numbers are views of the stored bytes, cheap to ask for again, and
            # keeping them would keep the data set's mapping in use after it is closed.
            if values.flags.writeable:
                values = values.view()
                values.flags.writeable = False
            self.cache.tables[key] = values
        return values

    def positions(self, axis: str) -> Array:
        """``0 .. n-1`` for the ``n`` entries of an axis (read-only, kept)."""
        key = ("positions", axis)
        found: Array | None = self.cache.tables.get(key)
        if found is None:
            found = np.arange(len(self.entries(axis)))
            found.flags.writeable = False
            self.cache.tables[key] = found
        return found

    def matrix(self, rows: str, columns: str, name: str, default: Any) -> Any:
        """The ``rows x columns`` matrix (relayout allowed), or the ``default`` repeated (a
        zero default gives an all-zero sparse matrix)."""
        if not self.daf.has_matrix(rows, columns, name, relayout=False) and self.daf.has_matrix(
            rows, columns, name
        ):
            self.relayout = True
        if default is not None and not self.daf.has_matrix(rows, columns, name):
            shape = (len(self.entries(rows)), len(self.entries(columns)))
            if default.dtype is not None and default.value == 0:
                return sp.csc_matrix(shape, dtype=default.dtype)
            dtype = object if default.dtype is None else default.dtype  # strings: object
            return np.full(shape, default.value, dtype=dtype, order="F")
        return self.daf.get_np_matrix(rows, columns, name, relayout=True)

    def stored_csc(self, rows: str, columns: str, name: str) -> Any:
        """The stored CSC arrays of a sparse ``rows x columns`` matrix stored in this layout,
        1-based as stored (a :class:`~._registry.Compressed`), for a pass that reads them in
        place; ``None`` if the data set does not expose them (views, chains), or the matrix
        is dense, absent in this layout or has no values array."""
        hook = getattr(self.daf, "_stored_csc_arrays", None)
        if hook is None or not self.daf.has_matrix(rows, columns, name, relayout=False):
            return None
        arrays = hook(rows, columns, name)
        if arrays is None:
            return None
        from .registry import Compressed

        data, indices, indptr = arrays
        return Compressed(
            data, indices, indptr, (len(self.entries(rows)), len(self.entries(columns))), base=1
        )

    def matrix_line(
        self, rows: str, columns: str, name: str, default: Any, at: int, row: bool
    ) -> Array:
        """Row ``at`` (``row``) or column ``at`` of the ``rows x columns`` matrix, read from
        the layout it is stored in (a row of the other layout is a column of this one: no
        relayout), or of the ``default`` matrix."""
        daf = self.daf
        if daf.has_matrix(rows, columns, name, relayout=False):
            stored, take_row = daf.get_np_matrix(rows, columns, name, relayout=False), row
        elif daf.has_matrix(columns, rows, name, relayout=False):
            stored, take_row = daf.get_np_matrix(columns, rows, name, relayout=False), not row
        else:
            n = len(self.entries(columns if row else rows))
            return (
                _filled(n, default)
                if default is not None
                else self.matrix(rows, columns, name, None)
            )  # raises the missing-matrix error
        if sp.issparse(stored):
            return _sparse_line(stored, at, take_row)
        return np.asarray(stored[at, :] if take_row else stored[:, at])

    def has_matrix(self, rows: str, columns: str, name: str) -> bool:
        """Whether the matrix exists in either layout."""
        return bool(self.daf.has_matrix(rows, columns, name))


def _sparse_line(matrix: Any, at: int, row: bool) -> Array:
    """Row or column ``at`` of a sparse matrix, dense: a column of a CSC matrix is a slice of
    its arrays, a row is found by one pass over its row indices."""
    if matrix.format != "csc":
        picked = matrix[[at], :] if row else matrix[:, [at]]
        return np.asarray(picked.toarray()).reshape(-1)
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    out = np.zeros(matrix.shape[1] if row else matrix.shape[0], dtype=matrix.dtype)
    if row:
        hits = np.flatnonzero(indices == at)
        out[np.searchsorted(indptr, hits, side="right") - 1] = data[hits]
    else:
        start, end = int(indptr[at]), int(indptr[at + 1])
        out[indices[start:end]] = data[start:end]
    return out


def _filled(n: int, default: Any) -> Array:
    if default.dtype is None:
        return np.full(n, default.value, dtype=object)
    return np.full(n, default.value, dtype=default.dtype)
