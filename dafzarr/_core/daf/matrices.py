"""Matrices of a ZarrDaf: one value per pair of entries of two axes, stored column-major
(dense) or as 1-based CSC (``colptr``, ``rowval``, ``nzval``), in one or both layouts."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from ...errors import (
    CorruptDafError,
    DafArgumentError,
    DafMissingError,
    InvalidArgumentError,
)
from ..casting import unmasked
from . import layout as lay
from .axes import Axes
from .names import can_be_stored, check_name, join_path
from .storage import UNDEF, DafStorage
from .values import (
    NotCanonicalError,
    OneBased,
    check_sparse,
    column_major,
    csc_of,
    dense,
    index_dtype,
    index_width,
    scalar_array,
    zero_based_indices,
    zero_matrix,
)


class Matrices:
    """Read, write, relayout and delete the matrices of pairs of axes."""

    def __init__(self, storage: DafStorage, axes: Axes) -> None:
        self._storage = storage
        self._axes = axes

    def matrix_kind(self, rows: str, cols: str, name: str) -> str | None:
        if not can_be_stored(rows, cols, name):
            return None
        return self._storage.node_kind(join_path("matrices", rows, cols, name))

    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        """``ZarrDaf.has_matrix``: whether ``matrices/<rows>/<columns>/<name>`` (or, with
        ``relayout``, the flipped path) is a node."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        if self.matrix_kind(rows_axis, columns_axis, name) is not None:
            return True
        return relayout and self.matrix_kind(columns_axis, rows_axis, name) is not None

    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        """``ZarrDaf.matrices_set``: the nodes under ``matrices/<rows>/<columns>`` (and the
        flipped group)."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        pairs = [(rows_axis, columns_axis)]
        if relayout:
            pairs.append((columns_axis, rows_axis))
        out: set[str] = set()
        for r, c in pairs:
            base = join_path("matrices", r, c)
            out |= {
                n
                for n in self._storage.backend.children(base)
                if self._storage.node_kind(join_path(base, n))
            }
        return out

    def _stored_matrix(
        self, rows: str, cols: str, name: str, kind: str, *, sparse_class: str
    ) -> Any:
        """The stored ``rows x cols`` matrix (of the ``kind`` just looked up): F-ordered
        numpy (a view) or scipy CSC, read from one state of it
        (:meth:`DafStorage.one_state`)."""
        path = join_path("matrices", rows, cols, name)
        return self._storage.one_state(
            path, lambda: self._stored_state(rows, cols, name, kind, sparse_class)
        )

    def _found_matrix(self, rows: str, cols: str, name: str, sparse_class: str) -> Any:
        """The stored ``rows x cols`` matrix, or None when there is none, looked up and read
        from one state (an overwrite by another thread is never seen as a missing matrix)."""
        path = join_path("matrices", rows, cols, name)

        def read() -> Any:
            kind = self.matrix_kind(rows, cols, name)
            if kind is None:
                return None
            return self._stored_state(rows, cols, name, kind, sparse_class)

        return self._storage.one_state(path, read)

    def _stored_state(self, rows: str, cols: str, name: str, kind: str, sparse_class: str) -> Any:
        """:meth:`_stored_layout` of the kind looked up before the matrix was pinned, or, when
        that is no longer its kind there (it was replaced meanwhile), of its kind now."""
        try:
            return self._stored_layout(rows, cols, name, kind, sparse_class)
        except DafMissingError:
            now = self._storage.node_kind(join_path("matrices", rows, cols, name))
            if now is None or now == kind:
                raise
        return self._stored_layout(rows, cols, name, now, sparse_class)

    def _stored_layout(self, rows: str, cols: str, name: str, kind: str, sparse_class: str) -> Any:
        path = join_path("matrices", rows, cols, name)
        nr, nc = self._axes.axis_length(rows), self._axes.axis_length(cols)
        if kind == "array":
            arr = self._storage.read_array(path)
            if arr.shape != (nc, nr):
                raise CorruptDafError(
                    f"{self._storage.path}: matrix {path!r} has Zarr shape {arr.shape}, "
                    f"expected {(nc, nr)} (reversed {rows} x {cols})"
                )
            return arr.T
        nzval, rowval, colptr = self._stored_sparse(path, nc, populate=True)
        where = f"{self._storage.path}: {path}"
        # The index type scipy would choose, written directly: it neither scans nor copies.
        width = index_width(nr, nc, rowval.size)
        indptr = zero_based_indices(colptr, rowval.size + 1, f"{where}/colptr", width)
        indices = zero_based_indices(rowval, nr, f"{where}/rowval", width)
        cls = sp.csc_array if sparse_class == "csc_array" else sp.csc_matrix
        return cls((nzval, indices, indptr), shape=(nr, nc), copy=False)

    def _stored_sparse(
        self, path: str, nc: int, *, populate: bool = False
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The stored ``nzval`` (all true when absent), 1-based ``rowval`` and ``colptr`` of
        the sparse matrix at ``path`` with ``nc`` columns, as stored (views of the data); the
        column pointer is checked, the row indices are not. All from one state of the
        matrix (:meth:`DafStorage.one_state`)."""
        return self._storage.one_state(
            path, lambda: self._stored_sparse_parts(path, nc, populate=populate)
        )

    def _stored_sparse_parts(
        self, path: str, nc: int, *, populate: bool
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        self._storage.require_group(path)
        colptr = self._storage.read_array(join_path(path, "colptr"), populate=populate)
        rowval = self._storage.read_array(join_path(path, "rowval"), populate=populate)
        if self._storage.node_kind(join_path(path, "nzval")) == "array":
            nzval = self._storage.read_array(join_path(path, "nzval"))
        else:
            nzval = np.ones(rowval.size, dtype=np.bool_)
        where = f"{self._storage.path}: {path}"
        if colptr.shape != (nc + 1,) or nzval.shape != rowval.shape:
            raise CorruptDafError(
                f"{where}: colptr has {colptr.size} entries (expected {nc + 1}), "
                f"rowval {rowval.size}, nzval {nzval.size}"
            )
        if (
            int(colptr[0]) != 1
            or int(colptr[-1]) != rowval.size + 1
            or np.any(np.diff(colptr.astype(np.int64)) < 0)
        ):
            raise CorruptDafError(
                f"{where}: colptr is not a valid 1-based CSC column pointer "
                f"for {rowval.size} stored values"
            )
        return nzval, rowval, colptr

    def stored_csc_arrays(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
        """The stored arrays of the sparse ``rows_axis x columns_axis`` matrix in this layout:
        ``nzval``, the 1-based ``rowval`` and ``colptr`` (checked; the row indices are not),
        as stored, for kernels that read them in place (query group-by); ``None`` when the
        matrix is dense, absent in this layout or has no stored values array (Bool)."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        path = join_path("matrices", rows_axis, columns_axis, name)
        nc = self._axes.axis_length(columns_axis)

        def read() -> (
            tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None
        ):
            if self.matrix_kind(rows_axis, columns_axis, name) != "group":
                return None
            if self._storage.node_kind(join_path(path, "nzval")) != "array":
                return None
            return self._stored_sparse(path, nc)

        return self._storage.one_state(path, read)

    def get_np_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
        sparse_class: Literal["csc_matrix", "csc_array"] = "csc_matrix",
    ) -> Any:
        """``ZarrDaf.get_np_matrix``: the stored layout, else the flipped one transposed,
        else ``default``."""
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        found = self._found_matrix(rows_axis, columns_axis, name, sparse_class)
        if found is not None:
            return found
        if relayout:
            other = self._found_matrix(columns_axis, rows_axis, name, sparse_class)
            if other is not None:
                if sp.issparse(other):
                    return other.T.tocsc()
                return np.asfortranarray(other.T)
        if default is UNDEF:
            raise DafMissingError(
                f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                f"axis: {columns_axis}\nin the daf data: {self._storage.name}"
            )
        if default is None:
            return None
        shape = (self._axes.axis_length(rows_axis), self._axes.axis_length(columns_axis))
        if np.ndim(default) == 0:  # 0: all-zero sparse, as DataAxesFormats.jl's spzeros
            zeros = zero_matrix(
                shape, default, sp.csc_array if sparse_class == "csc_array" else None
            )
            return zeros if zeros is not None else np.full(shape, default, order="F")
        arr = np.asarray(default)
        if arr.shape != shape:
            raise InvalidArgumentError(
                f"default matrix shape {arr.shape} is different from {shape}"
            )
        return np.asfortranarray(arr)

    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        """``ZarrDaf.get_pd_matrix``: :meth:`get_np_matrix` named by the axes' entries."""
        import pandas as pd

        m = self.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
        if m is None:
            return None
        index = pd.Index(self._axes.axis_np_entries(rows_axis), name=rows_axis)
        columns = pd.Index(self._axes.axis_np_entries(columns_axis), name=columns_axis)
        if sp.issparse(m):
            return pd.DataFrame.sparse.from_spmatrix(m, index=index, columns=columns)
        return pd.DataFrame(m, index=index, columns=columns, copy=False)

    def _matrix_items(
        self,
        rows: str,
        cols: str,
        name: str,
        value: Any,
        indtype: Any,
        check_indices: bool = False,
    ) -> list[tuple[str, Any]]:
        """The keys and chunks of one layout of a matrix. ``check_indices``: the indices of
        a sparse value whose canonical format is not known are checked as they are written
        (:class:`NotCanonicalError` if they are not canonical or not in range), not
        scanned first."""
        nr, nc = self._axes.axis_length(rows), self._axes.axis_length(cols)
        path = join_path("matrices", rows, cols, name)
        where = f"matrix {name!r}"
        if sp.issparse(value):
            if value.shape != (nr, nc):
                raise InvalidArgumentError(
                    f"value shape: {value.shape}\nis different from the axes: "
                    f"{rows} x {cols} shape: {(nr, nc)}\n"
                    f"in the daf data: {self._storage.name}"
                )
            # A CSC value is used as it is, keeping the canonical-format flag scipy cached
            # on it in _check_sparse (no second scan).
            csc = csc_of(value)
            check = (csc.indptr, nr) if check_indices else None
            if check is None and not csc.has_canonical_format:  # never reorder in place
                csc = csc.copy()
                csc.sum_duplicates()
            dt = lay.element_type(csc.data.dtype, where)
            idt = index_dtype(indtype, max(nr, csc.nnz), where)
            items = self._storage.array_items(
                join_path(path, "colptr"), OneBased(csc.indptr, idt), idt
            )
            items += self._storage.array_items(
                join_path(path, "rowval"), OneBased(csc.indices, idt, check), idt
            )
            if not (isinstance(dt, np.dtype) and dt.kind == "b" and bool(np.all(csc.data))):
                items += self._storage.array_items(
                    join_path(path, "nzval"), dense(csc.data, dt, where), dt
                )
            items += self._storage.layout.group_docs(path).items()
            return items
        if np.ndim(value) == 0:
            scalar = value[()] if isinstance(value, np.ndarray) else value  # keeps its dtype
            arr0, dt = scalar_array(scalar, where)
            value = np.full((nr, nc), arr0[0], dtype=object if isinstance(dt, str) else dt)
        arr = np.asarray(value)
        if arr.shape != (nr, nc):
            raise InvalidArgumentError(
                f"value shape: {arr.shape}\nis different from the axes: {rows} x "
                f"{cols} shape: {(nr, nc)}\nin the daf data: {self._storage.name}"
            )
        dt = lay.element_type(arr.dtype, where)
        data = dense(arr, dt, where)
        # Column-major bytes: the Zarr array is the transpose, C-ordered (a view of a
        # Fortran-ordered value; else computed tile by tile where it is stored).
        return self._storage.array_items(path, column_major(data), dt)

    def set_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        relayout: bool = True,
        indtype: Any = None,
    ) -> None:
        """``ZarrDaf.set_matrix``: write ``matrices/<rows>/<columns>/<name>`` (and, with
        ``relayout``, the flipped layout)."""
        self._storage.check_writable()
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        check_name(name, "matrix")
        pairs = [(rows_axis, columns_axis)]
        if relayout and rows_axis != columns_axis:
            pairs.append((columns_axis, rows_axis))
        where = (
            f"matrix {name!r} of the axes {rows_axis} x {columns_axis}"
            f"\nin the daf data: {self._storage.name}"
        )
        # A CSC value stored in one layout (the flipped layout converts the value, which
        # needs its indices checked first) has its indices checked as they are written,
        # unless the store is append-only (what a fault leaves written cannot be deleted).
        deferred = False
        value = unmasked(value, where)
        if sp.issparse(value):
            deferred = check_sparse(
                value,
                where,
                defer_indices=len(pairs) == 1 and not self._storage.backend.append_only,
            )
        else:
            value = np.asarray(value)

        def items_of(check_indices: bool) -> list[tuple[str, Any]]:
            items = self._matrix_items(rows_axis, columns_axis, name, value, indtype, check_indices)
            if len(pairs) == 2:
                flipped = value.T if sp.issparse(value) or np.ndim(value) else value
                if getattr(value, "format", None) in ("csr", "csc") and getattr(
                    value, "_has_canonical_format", False
                ):
                    flipped.has_canonical_format = True  # the same arrays, each slice sorted
                items += self._matrix_items(columns_axis, rows_axis, name, flipped, indtype)
            return items

        items = items_of(deferred)
        with self._storage.changing(
            f"setting the matrix {name} of the axes {rows_axis} x {columns_axis}",
            self.matrix_replaces(
                rows_axis, columns_axis, name, overwrite, relayout=len(pairs) == 2
            ),
        ):
            try:
                self._storage.write(items)
                if deferred:  # every index was checked as written: cache it as scipy would
                    value.has_canonical_format = True
            except NotCanonicalError:
                # Unsorted or duplicate indices (or out of range): drop what was written of
                # the matrix (in the open change), check it in full, write it canonical.
                for r, c in pairs:
                    self._storage.delete_node(join_path("matrices", r, c, name))
                check_sparse(value, where)
                self._storage.write(items_of(False))

    @staticmethod
    def _matrix_replace(
        rows: str, cols: str, name: str, overwrite: bool
    ) -> tuple[str, str, bool, str]:
        """What a write of the ``rows x cols`` layout of a matrix replaces there (see
        :meth:`DafStorage.changing`)."""
        what = f"matrix {name} of the axes {rows} x {cols}"
        exists_text = (
            f"existing matrix: {name}\nfor the rows axis: {rows}\nand the columns axis: {cols}"
        )
        return join_path("matrices", rows, cols, name), what, overwrite, exists_text

    def matrix_replaces(
        self, rows: str, cols: str, name: str, overwrite: bool, *, relayout: bool
    ) -> list[tuple[str, str, bool, str]]:
        """What a write of a matrix replaces: its ``rows x cols`` layout and, with
        ``relayout``, the flipped one (each refused when it exists, unless ``overwrite``).

        An overwrite replaces the flipped layout even when it writes only one: left in
        place, the flipped layout would keep the old values for readers of
        ``cols x rows``. A new layout (no ``overwrite``) beside a stored flipped one leaves
        that one alone, as DataAxesFormats.jl does.
        """
        layouts = [(rows, cols)]
        if rows != cols and (relayout or overwrite):
            layouts.append((cols, rows))
        return [self._matrix_replace(r, c, name, overwrite) for r, c in layouts]

    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> None:
        """``ZarrDaf.relayout_matrix``: write the flipped layout of a stored matrix."""
        self._storage.check_writable()
        if rows_axis == columns_axis:
            raise DafArgumentError(
                f"can't relayout square matrix: {name}\nof the axis: "
                f"{rows_axis}\nin the daf data: {self._storage.name}"
            )
        kind = self.matrix_kind(rows_axis, columns_axis, name)
        if kind is None:
            raise DafMissingError(
                f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                f"axis: {columns_axis}\nin the daf data: {self._storage.name}"
            )
        m = self._stored_matrix(rows_axis, columns_axis, name, kind, sparse_class="csc_matrix")
        items = self._matrix_items(columns_axis, rows_axis, name, m.T, None)
        with self._storage.changing(
            f"relayout of the matrix {name} of the axes {rows_axis} x {columns_axis}",
            [self._matrix_replace(columns_axis, rows_axis, name, overwrite)],
        ):
            self._storage.write(items)

    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> None:
        """``ZarrDaf.delete_matrix``: delete the matrix' node (and, with ``relayout``, the
        flipped one)."""
        self._storage.check_writable()
        self._axes.require_axis(rows_axis)
        self._axes.require_axis(columns_axis)
        pairs = [(rows_axis, columns_axis)]
        if relayout and rows_axis != columns_axis:
            pairs.append((columns_axis, rows_axis))
        found = [(r, c) for r, c in pairs if self.matrix_kind(r, c, name) is not None]
        if self._storage.nothing_to_delete(
            bool(found),
            must_exist,
            f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns axis: "
            f"{columns_axis}",
            f"matrix {name} of the axes {rows_axis} x {columns_axis}",
        ):
            return
        with self._storage.changing(
            f"deleting the matrix {name} of the axes {rows_axis} x {columns_axis}"
        ):
            for r, c in found:
                self._storage.delete_node(join_path("matrices", r, c, name))
