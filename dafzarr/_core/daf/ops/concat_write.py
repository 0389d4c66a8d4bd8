"""Writing a concatenated matrix block by block: each data set's columns are read, converted
and written in turn, straight into the destination's entry (ZIP) or file (directory), so the
memory used is bounded by one data set's part, never by the result."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from ....errors import DafMismatchError
from ...casting import cast_for_storage
from ..names import join_path
from ..values import StreamedChunk, default_indtype
from .concat_sources import Csc, check_rows, csc_parts, matrix_value, release_pages

__all__ = ["MatrixPart", "write_dense_matrix", "write_sparse_matrix"]

# Values per block read, converted and written at a time (16 MiB of float32).
_BLOCK = 1 << 22


class Pieces(StreamedChunk):
    """A flat chunk of ``size`` values of ``dtype`` written from consecutive blocks."""

    def __init__(
        self,
        dtype: np.dtype[Any],
        shape: tuple[int, ...],
        make: Callable[[], Iterator[np.ndarray[Any, Any]]],
        where: str,
    ) -> None:
        self.dtype = dtype
        self.shape = shape
        self.size = int(np.prod(shape))
        self.nbytes = self.size * dtype.itemsize
        self._make = make
        self._where = where

    def blocks(self) -> Iterator[Any]:
        count = 0
        for block in self._make():
            arr = np.ascontiguousarray(block, dtype=self.dtype).reshape(-1)
            count += arr.size
            if count > self.size:
                break
            yield arr
        if count != self.size:
            raise DafMismatchError(
                f"{self._where}: the data sets changed while they were "
                f"concatenated ({count} values instead of {self.size})"
            )

    def fill(self, out: np.ndarray[Any, Any]) -> None:
        flat = out.reshape(-1).view(self.dtype)
        pos = 0
        for block in self.blocks():
            flat[pos : pos + block.size] = block
            pos += block.size


class MatrixPart:
    """One data set's columns of a ``rows x cols`` matrix concatenated along ``cols``:
    present in ``source``, or missing and filled with ``empty``."""

    def __init__(
        self,
        source: Any,
        rows: str,
        cols: str,
        name: str,
        nrows: int,
        ncols: int,
        empty: Any,
        dtype: np.dtype[Any],
    ) -> None:
        self.source, self.rows, self.cols, self.name = source, rows, cols, name
        self.nrows, self.ncols, self.empty, self.dtype = nrows, ncols, empty, dtype
        self.where = f"matrix {name} of the rows axis {rows} and the columns axis {cols}" + (
            f"\nin the daf data: {source.name}" if source is not None else ""
        )

    def _value(self) -> Any:
        """The stored CSC arrays (zero-copy), else the matrix as the reader gives it."""
        raw = csc_parts(self.source, self.rows, self.cols, self.name)
        return (
            raw if raw is not None else matrix_value(self.source, self.rows, self.cols, self.name)
        )

    def stored_nonzeros(self) -> int:
        """How many values the part stores in a sparse result."""
        if self.source is None:
            return 0 if _zero(self.empty) else self.nrows * self.ncols
        value = self._value()
        if isinstance(value, Csc):
            return int(value.rowval.size)
        if sp.issparse(value):
            return int(value.nnz)
        return int(np.count_nonzero(value))

    def _column_ranges(self, colptr: np.ndarray[Any, Any]) -> list[tuple[int, int]]:
        """Column ranges of about ``_BLOCK`` stored values each."""
        out: list[tuple[int, int]] = []
        a = 0
        base = int(colptr[0])
        while a < self.ncols:
            target = int(colptr[a]) - base + _BLOCK
            b = int(np.searchsorted(colptr, target + base, side="right")) - 1
            b = min(max(b, a + 1), self.ncols)
            out.append((a, b))
            a = b
        return out

    def csc_blocks(
        self, rows_checked: bool = False
    ) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """Blocks of columns: (stored values per column, 1-based rows, values);
        ``rows_checked``: stored rows out of range raise (the pass that writes them)."""
        nr, nc = self.nrows, self.ncols
        if self.source is None:
            if _zero(self.empty):
                yield np.zeros(nc, np.int64), np.zeros(0, np.int64), np.zeros(0, self.dtype)
                return
            step = max(1, _BLOCK // max(nr, 1))
            rows = np.arange(1, nr + 1, dtype=np.int64)
            fill = cast_for_storage(np.asarray(self.empty), self.dtype, self.where)
            for a in range(0, nc, step):
                b = min(a + step, nc)
                yield (
                    np.full(b - a, nr, np.int64),
                    np.tile(rows, b - a),
                    np.full((b - a) * nr, fill, self.dtype),
                )
            return
        value = self._value()
        if isinstance(value, Csc) or sp.issparse(value):
            if isinstance(value, Csc):
                colptr, rowval, nzval = value
            else:
                colptr, rowval, nzval = value.indptr, value.indices, value.data
            base = int(colptr[0])
            for a, b in self._column_ranges(colptr):
                lo, hi = int(colptr[a]) - base, int(colptr[b]) - base
                counts = np.diff(colptr[a : b + 1].astype(np.int64))
                rows = rowval[lo:hi]
                if base == 1 and rows_checked:
                    check_rows(self.source, self.rows, self.cols, self.name, rows, nr)
                yield counts, (rows if base == 1 else rows.astype(np.int64) + 1), nzval[lo:hi]
                # written out: the source's pages just read need not stay in this process
                release_pages(self.source, rowval[lo:hi])
                release_pages(self.source, nzval[lo:hi])
            return
        step = max(1, _BLOCK // max(nr, 1))
        for a in range(0, nc, step):
            block = sp.csc_matrix(np.asarray(value[:, a : a + step]))
            block.eliminate_zeros()
            yield (
                np.diff(block.indptr).astype(np.int64),
                block.indices.astype(np.int64) + 1,
                block.data,
            )

    def dense_blocks(self) -> Iterator[np.ndarray[Any, Any]]:
        """Blocks of whole columns, each ``(columns, rows)`` (the column-major bytes)."""
        nr, nc = self.nrows, self.ncols
        step = max(1, _BLOCK // max(nr, 1))
        if self.source is None:
            fill = cast_for_storage(np.asarray(self.empty), self.dtype, self.where)
            for a in range(0, nc, step):
                yield np.full((min(a + step, nc) - a, nr), fill, self.dtype)
            return
        value = matrix_value(self.source, self.rows, self.cols, self.name)
        for a in range(0, nc, step):
            block = value[:, a : a + step]
            if sp.issparse(block):
                block = block.toarray()
            stored = np.asarray(block).T
            yield cast_for_storage(stored, self.dtype, self.where)
            if stored.flags.c_contiguous:  # written out: a stored view need not stay mapped
                release_pages(self.source, stored)


def _zero(value: Any) -> bool:
    return value is not None and not isinstance(value, str) and bool(value == 0)


def write_dense_matrix(
    dest: Any,
    rows: str,
    cols: str,
    name: str,
    parts: list[MatrixPart],
    dtype: np.dtype[Any],
    step: Callable[[], None],
) -> None:
    """Write the parts' columns one after another as the dense ``rows x cols`` matrix."""
    nr = dest.axis_length(rows)
    nc = sum(p.ncols for p in parts)
    path = join_path("matrices", rows, cols, name)
    where = f"{dest.path}: {path}"

    def blocks() -> Iterator[np.ndarray[Any, Any]]:
        for part in parts:
            yield from part.dense_blocks()
            step()

    dest._write(dest._array_items(path, Pieces(dtype, (nc, nr), blocks, where), dtype))


def write_sparse_matrix(
    dest: Any,
    rows: str,
    cols: str,
    name: str,
    parts: list[MatrixPart],
    dtype: np.dtype[Any],
    step: Callable[[], None],
) -> None:
    """Write the parts' columns one after another as the CSC ``rows x cols`` matrix: the
    column pointer, the rows, then the values, each streamed part by part."""
    nr = dest.axis_length(rows)
    nc = sum(p.ncols for p in parts)
    nnz = sum(p.stored_nonzeros() for p in parts)
    idt = default_indtype(max(nr, nnz + 1))
    path = join_path("matrices", rows, cols, name)
    where = f"{dest.path}: {path}"

    def colptr() -> Iterator[np.ndarray[Any, Any]]:
        yield np.ones(1, idt)
        offset = 1
        for part in parts:
            for counts, _rows, _values in part.csc_blocks():
                ends = np.cumsum(counts) + offset
                if ends.size:
                    offset = int(ends[-1])
                yield ends

    def rowval() -> Iterator[np.ndarray[Any, Any]]:
        for part in parts:
            for _counts, rows_, _values in part.csc_blocks(rows_checked=True):
                yield rows_

    def nzval() -> Iterator[np.ndarray[Any, Any]]:
        for part in parts:
            for _counts, _rows, values in part.csc_blocks():
                yield cast_for_storage(values, dtype, part.where)
            step()

    items: list[tuple[str, Any]] = []
    items += dest._array_items(
        join_path(path, "colptr"), Pieces(idt, (nc + 1,), colptr, where), idt
    )
    items += dest._array_items(join_path(path, "rowval"), Pieces(idt, (nnz,), rowval, where), idt)
    items += dest._array_items(join_path(path, "nzval"), Pieces(dtype, (nnz,), nzval, where), dtype)
    items += dest._layout.group_docs(path).items()
    dest._write(items)
