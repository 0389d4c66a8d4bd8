"""The phrases of grouping, counting and matrices: ``/``, ``*``, ``-/``, ``|/``, ``>>``,
``>|``, ``>-`` on matrices, and matrix values used as entries.

Groups are integer codes: the sorted distinct values of the grouping vector
(``numpy.unique(..., return_inverse=True)``), or, after ``=@``, the positions of the values in
the axis (values that are not entries belong to no group). Members are sorted by code once and
each group's values reduced as one segment. Sparse matrices are never made dense: a column
reduction and a group-by of rows run over the CSC arrays (the reduction's compiled pass), a row
reduction and a group-by of columns over the CSC arrays of the transpose if stored, else each
stored value scattered into the result (the reduction's ``_grouped_columns``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ...aliases import Array
from .literals import format_value, parse_as, type_name
from .operations import (
    AsAxis,
    CountBy,
    GroupBy,
    GroupColumnsBy,
    GroupRowsBy,
    IfMissing,
    IfNot,
    LookupMatrix,
    LookupVector,
)
from .registry import Compressed, EltwiseOperation, ReduceToColumn, ReduceToRow, ReductionOperation
from .stack import COMPARISONS, Mat, Vec, compare, dtype_error, factorize, is_strings, settle

if TYPE_CHECKING:
    from ....errors import DafQueryError
    from .cache import Reader

__all__ = ["Grouping"]


class Grouping:
    """The grouping, counting and matrix phrases of :class:`~._eval.Evaluator`."""

    GROUP_BY: ClassVar[type] = GroupBy
    COUNT_BY: ClassVar[type] = CountBy

    if TYPE_CHECKING:
        r: Reader
        i: int
        checking: bool
        fail: Callable[..., DafQueryError]
        invalid: Callable[[], DafQueryError]
        missing_entry: Callable[[str, str], DafQueryError]
        take: Callable[..., Any]
        is_: Callable[..., bool]
        peek: Callable[..., Any]
        if_missing: Callable[[], IfMissing | None]
        operand_term: Callable[[Vec, str], Vec]
        scalar_tail: Callable[[Any], tuple[str, Any]]
        vector_tail: Callable[[Vec], Any]
        eltwise: Callable[[EltwiseOperation, Any], Any]
        target_axis: Callable[[Vec], str | None]
        matrix_kind: Callable[[], tuple[str, ...]]
        full_values: Callable[[str, str, IfMissing | None, tuple[str, ...] | None], Array]
        _factors: Callable[[Vec], tuple[Array, Array] | None]

    # --- Groups ----------------------------------------------------------------------------

    def _keys(self, names: Array, axis: str | None, positions: Array | None) -> Vec:
        if axis is None or positions is None:
            raise self.fail("invalid operation(s)", self.i - 1)
        return Vec(
            values=names,
            names=names,
            axis=axis,
            positions=positions,
            is_axis=True,
            whole=len(positions) == len(self.r.entries(axis)),
        )

    def _groups(self, vec: Vec) -> tuple[Array, Array, str | None]:
        """Codes (-1: in no group), names and axis of the groups of ``vec``'s values."""
        if vec.as_axis is not None:
            names = self.r.entries(vec.as_axis)
            source = None if vec.source is None else (vec.source[0], vec.source[1])
            codes = self.r.codes(
                vec.as_axis,
                vec.values,
                source,  # a stored vector: kept
                None if vec.source is None else vec.source[2],
            )
            return codes, names, vec.as_axis
        # Hashing, in order of appearance; a stored string vector's codes are kept per data
        # version, as ``=@``'s are.
        kept = self._factors(vec)
        if kept is None:
            codes, uniques = factorize(np.asarray(vec.values))
        else:  # the values of the entries kept only (a mask may leave some out)
            codes, uniques = kept
            present = np.bincount(codes, minlength=len(uniques)) > 0
            if not bool(present.all()):
                renumber = np.cumsum(present) - 1
                codes, uniques = renumber[codes], uniques[present]
        order = np.argsort(uniques, kind="stable")  # the few distinct values, sorted
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        names = np.asarray([format_value(u) for u in uniques[order]], dtype=object)
        return rank[codes] if len(codes) else codes, names, None

    def _grouping(
        self, names: Array, axis: str | None, positions: Array | None, op: Any
    ) -> tuple[Array, Array, Array, str | None]:
        """Evaluates ``op`` (a group or count operation) for entries ``names``: the member
        rows (into the given entries), their codes, the group names and axis."""
        keys = self._keys(names, axis, positions)
        group = settle(self.operand_term(keys, op.operand), self.fail)
        assert positions is not None
        assert group.positions is not None
        if len(group.positions) == len(positions):  # every entry kept, in order
            rows = np.arange(len(positions))
        else:
            rows = np.searchsorted(positions, group.positions)
        codes, group_names, group_axis = self._groups(group)
        return rows, codes, group_names, group_axis

    def _empty_groups(
        self, out: Array, counts: Array, names: Array, axis: str | None, default: IfMissing | None
    ) -> Array:
        empty = counts == 0
        if not bool(empty.any()):
            return out
        if default is None:
            raise self.fail(
                f"no IfMissing value specified for the unused entry: "
                f"{names[int(np.argmax(empty))]}\nof the axis: {axis}",
                self.i - 1,
            )
        value = self._cast(default, out.dtype)
        out[empty] = value
        return out

    def _cast(self, default: IfMissing, dtype: np.dtype[Any]) -> Any:
        if dtype.kind in "OUS":
            return str(default.value)
        try:
            return parse_as(format_value(default.value), dtype)
        except ValueError:
            raise self.fail(
                f"error converting: {type_name(default.dtype)}\nmissing value: "
                f"{format_value(default.value)}\nto type: {type_name(dtype)}",
                self.i - 2,
                self.i - 1,
            ) from None  # the reduction and its default

    def group_vector(self, vec: Vec) -> Vec:
        """``V / g ... >> R [DEF]``: one value per group."""
        vec = settle(vec, self.fail)
        op = self.take()
        rows, codes, names, axis = self._grouping(vec.names, vec.axis, vec.positions, op)
        reduction = self.take(ReductionOperation)
        default = self.if_missing()
        values = np.asarray(vec.values)[rows]
        if is_strings(values) and not reduction.STRINGS:
            raise self.fail(dtype_error("reduction", reduction.NAME), self.i - 1)
        valid = codes >= 0
        codes, values = codes[valid], values[valid]
        counts = np.bincount(codes, minlength=len(names))
        out = reduction._keyed(values, codes, counts)
        out = self._empty_groups(out, counts, names, axis, default)
        return Vec(
            values=out,
            names=names,
            axis=axis,
            positions=None if axis is None else np.arange(len(names)),
            whole=axis is not None,
        )

    def count(self, vec: Vec) -> Mat:
        """``V * g``: the number of entries of each pair of values."""
        vec = settle(vec, self.fail)
        op = self.take()
        rows, codes, names, axis = self._grouping(vec.names, vec.axis, vec.positions, op)
        first = (
            vec
            if len(rows) == len(vec.values)
            else replace(vec, values=np.asarray(vec.values)[rows], source=None)
        )  # kept codes: every entry
        first_codes, first_names, first_axis = self._groups(first)
        valid = (codes >= 0) & (first_codes >= 0)
        size = len(first_names) * len(names)
        flat = np.bincount(first_codes[valid] * len(names) + codes[valid], minlength=size)
        n = len(vec.values)
        dtype = next(
            np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64) if n <= np.iinfo(t).max
        )
        values = np.asfortranarray(flat.reshape(len(first_names), len(names)).astype(dtype))
        return Mat(
            values=values,
            row_names=first_names,
            row_axis=first_axis,
            row_positions=None if first_axis is None else np.arange(len(first_names)),
            col_names=names,
            col_axis=axis,
            col_positions=None if axis is None else np.arange(len(names)),
        )

    # --- Matrix phrases --------------------------------------------------------------------

    def matrix_tail(self, mat: Mat) -> Any:
        """A matrix, then element-wise operations, comparisons, reductions and groups."""
        while True:
            op = self.peek()
            if type(op) in COMPARISONS:
                self.take()
                mat = replace(mat, values=compare(op, mat.values, "matrix", self.fail), prop=None)
            elif isinstance(op, EltwiseOperation):
                self.take()
                mat = replace(mat, values=self.eltwise(op, mat.values))
            elif isinstance(op, ReductionOperation):
                self.take()
                return self.scalar_tail(self._reduce_all(mat, op, self.if_missing()))
            elif type(op) in (ReduceToColumn, ReduceToRow):
                self.take()
                return self.vector_tail(self._reduce_side(mat, op, self.if_missing()))
            elif type(op) in (GroupRowsBy, GroupColumnsBy):
                mat = self._group_matrix(mat, type(op) is GroupColumnsBy)
            elif isinstance(op, AsAxis | IfNot | LookupVector | LookupMatrix):
                mat = self._matrix_lookup(mat)
            else:
                return mat

    def _reduce_all(self, mat: Mat, op: ReductionOperation, default: IfMissing | None) -> Any:
        values = mat.values
        n = values.shape[0] * values.shape[1]
        if n == 0:
            if default is None:
                raise self.fail(
                    "no IfMissing value specified for reducing an empty matrix", self.i - 1
                )
            return default.value
        self._check_strings(values, op)
        data = values.data if sp.issparse(values) else np.asarray(values).reshape(-1)
        return op._segments(np.asarray(data), np.array([0, len(data)]), np.array([n]))[0]

    def _check_strings(self, values: Any, op: ReductionOperation) -> None:
        if is_strings(values) and not op.STRINGS:
            raise self.fail(dtype_error("reduction", op.NAME), self.i - 1)

    def reduce_columns(self, values: Any, op: ReductionOperation) -> Array:
        """One value per column (no empty input): the runs of a CSC matrix are its columns,
        those of a CSR matrix are found by key (no conversion)."""
        nr, nc = values.shape
        if sp.issparse(values) and values.format == "csr":
            if nc < np.iinfo(np.int32).max:  # all rows one group: the compiled scatter pass
                found = op._grouped_columns(
                    Compressed(values.data, values.indices, values.indptr, (nc, nr)),
                    np.zeros(nr, dtype=np.int32),
                    1,
                )
                if found is not None:
                    return np.asarray(found[0])
            return op._keyed(values.data, values.indices, np.full(nc, nr))
        if sp.issparse(values):
            csc = sp.csc_matrix(values)
            if nr < np.iinfo(np.int32).max:  # all rows one group: the compiled column pass
                out = op._grouped_rows(
                    Compressed(csc.data, csc.indices, csc.indptr, (nr, nc)),
                    np.zeros(nr, dtype=np.int32),
                    1,
                )
                if out is not None:
                    return np.asarray(out[0])
            return op._segments(csc.data, csc.indptr, np.full(nc, nr))
        return op._dense(np.asarray(values).T)

    def _reduce_side(self, mat: Mat, reduce: Any, default: IfMissing | None) -> Vec:
        op = reduce.reduction
        rows = type(reduce) is ReduceToColumn
        names, axis, positions = (
            (mat.row_names, mat.row_axis, mat.row_positions)
            if rows
            else (mat.col_names, mat.col_axis, mat.col_positions)
        )
        out = None
        if mat.values is None:  # the stored arrays (before a row reduction only)
            if len(mat.row_names) * len(mat.col_names):
                out = _reduce_stored_rows(mat, op)
            if out is None:
                mat = self._read(mat)
        if out is None:
            out = self._reduce_values(mat.values.T if rows else mat.values, op, default)
        return Vec(
            values=out,
            names=names,
            axis=axis,
            positions=positions,
            whole=axis is not None
            and positions is not None
            and len(positions) == len(self.r.entries(axis)),
        )

    def _reduce_values(
        self, values: Any, op: ReductionOperation, default: IfMissing | None
    ) -> Array:
        """One value per column of ``values`` (the default for an empty matrix)."""
        nr, nc = values.shape
        if nr * nc == 0:
            if default is None:
                raise self.fail(
                    "no IfMissing value specified for reducing an empty matrix", self.i - 1
                )
            return np.full(nc, default.value, dtype=default.dtype or object)
        self._check_strings(values, op)
        return self.reduce_columns(values, op)

    def _group_matrix(self, mat: Mat, by_columns: bool) -> Mat:
        op = self.take()
        if by_columns:
            mat = _transposed(mat)
        rows, codes, names, axis = self._grouping(
            mat.row_names, mat.row_axis, mat.row_positions, op
        )
        reduce = self.take(ReduceToColumn if by_columns else ReduceToRow)
        if type(reduce) is not (ReduceToColumn if by_columns else ReduceToRow):
            raise self.fail("invalid operation(s)", self.i - 1)
        default = self.if_missing()
        valid = codes >= 0
        codes, rows = codes[valid], rows[valid]
        counts = np.bincount(codes, minlength=len(names))
        out = None
        if mat.values is None:  # the stored arrays, read in place by the one pass
            if mat.stored is not None:
                out = _grouped_csc(mat.stored, rows, codes, counts, reduce.reduction)
            elif mat.stored_t is not None:
                out = _grouped_csr(mat.stored_t, rows, codes, counts, reduce.reduction)
            if out is None:  # no such pass: read the matrix after all
                mat = self._read(mat)
        if out is None:
            self._check_strings(mat.values, reduce.reduction)
            out = self._group_values(mat.values, rows, codes, counts, len(names), reduce.reduction)
        if not bool(np.all(counts)):
            if default is None:
                raise self.fail(
                    f"no IfMissing value specified for the unused entry: "
                    f"{names[int(np.argmin(counts))]}\nof the axis: {axis}",
                    self.i - 1,
                )
            out[counts == 0] = self._cast(default, out.dtype)
        result = Mat(
            values=np.asfortranarray(out),
            row_names=names,
            row_axis=axis,
            row_positions=None if axis is None else np.arange(len(names)),
            col_names=mat.col_names,
            col_axis=mat.col_axis,
            col_positions=mat.col_positions,
        )
        return _transposed(result) if by_columns else result

    def _read(self, mat: Mat) -> Mat:
        """``mat`` with its values read (it held only the stored arrays)."""
        assert mat.row_axis is not None
        assert mat.col_axis is not None
        assert mat.prop is not None
        return replace(
            mat,
            values=self.r.matrix(mat.row_axis, mat.col_axis, mat.prop, None),
            stored=None,
            stored_t=None,
        )

    def _group_values(
        self,
        values: Any,
        rows: Array,
        codes: Array,
        counts: Array,
        count: int,
        op: ReductionOperation,
    ) -> Array:
        """The groups of ``rows`` (by ``codes``) of a matrix, reduced column by column."""
        if sp.issparse(values):
            return _group_sparse_rows(values, rows, codes, counts, op)
        order = np.argsort(codes, kind="stable")
        picked = np.asarray(values)[rows[order], :]
        starts = np.concatenate([[0], np.cumsum(counts)])
        out = np.empty((count, values.shape[1]), dtype=op.result_type(values.dtype))
        for k in np.flatnonzero(counts):
            out[k] = self.reduce_columns(picked[starts[k] : starts[k + 1]], op)
        return out

    def _matrix_lookup(self, mat: Mat) -> Mat:
        """``M [=@ [axis]] [?? value] : q [DEF]`` (or ``:: m [DEF] @ other = e``, ``@| e``,
        ``@- e``): each value replaced by a property of the entry it names."""
        as_axis = mat.as_axis
        if self.is_(AsAxis):
            as_axis = self.take().operand
        final = None
        if self.is_(IfNot):
            final = self.take().operand
            if final is None:
                raise self.fail("a final value is required for ?? on a matrix", self.i - 1)
        lookup = self.take((LookupVector, LookupMatrix))
        if lookup.operand is None or not is_strings(mat.values):
            raise self.fail("invalid operation(s)", self.i - 1)
        default = self.if_missing()
        kind = self.matrix_kind() if isinstance(lookup, LookupMatrix) else None
        probe = Vec(
            values=np.zeros(0, dtype=object),
            names=np.zeros(0),
            axis=None,
            positions=None,
            prop=mat.prop,
            as_axis=as_axis,
        )
        axis = self.target_axis(probe)
        assert axis is not None
        flat = np.asarray(mat.values, dtype=object).reshape(-1, order="F")
        codes = self.r.codes(axis, flat, None, None)
        empty = (flat == "") if final is not None else np.zeros(len(flat), dtype=bool)
        bad = (codes < 0) & ~empty
        if bool(bad.any()) and not self.checking:
            raise self.missing_entry(str(flat[int(np.argmax(bad))]), axis)
        full = self.full_values(axis, lookup.operand, default, kind)
        out = full[np.where(codes >= 0, codes, 0)] if len(full) else np.zeros(len(flat), full.dtype)
        if final is not None and bool(empty.any()):
            out = out.copy()
            dtype = None if is_strings(out) else out.dtype
            try:
                out[empty] = parse_as(final, dtype)
            except ValueError:
                raise self.fail(
                    f"error parsing final value: {final}\nas type: {type_name(dtype)}", self.i - 1
                ) from None
        values = out.reshape(mat.values.shape, order="F")
        return replace(mat, values=values, prop=lookup.operand, as_axis=None)


def _group_sparse_rows(
    values: Any, rows: Array, codes: Array, counts: Array, op: ReductionOperation
) -> Array:
    """Groups of rows of a sparse matrix, reduced column by column in one pass over the
    stored values: by the reduction's own pass over a CSC matrix if it has one (``Sum``,
    ``Mean``, ``Min``, ``Max``, ``Count``), else as runs keyed by (group of its row, its
    column)."""
    nr, nc = values.shape
    if values.format not in ("csc", "csr"):
        values = sp.csc_matrix(values)
    if values.format == "csc":
        fast = _grouped_csc(
            Compressed(values.data, values.indices, values.indptr, (nr, nc)),
            rows,
            codes,
            counts,
            op,
        )
    else:  # the CSC arrays of the transpose: each value scattered into its group's result
        fast = _grouped_csr(
            Compressed(values.data, values.indices, values.indptr, (nc, nr)),
            rows,
            codes,
            counts,
            op,
        )
    if fast is not None:
        return fast
    major = np.repeat(
        np.arange(values.shape[0 if values.format == "csr" else 1]), np.diff(values.indptr)
    )
    row_of, col_of = (values.indices, major) if values.format == "csc" else (major, values.indices)
    group_of_row = np.full(nr, -1, dtype=np.int64)
    group_of_row[rows] = codes
    group = group_of_row[row_of]
    keep = group >= 0
    keys = group[keep] * nc + col_of[keep]
    out = op._keyed(values.data[keep], keys, np.repeat(counts, nc))
    return np.asarray(out.reshape(len(counts), nc))


def _grouped_csc(
    values: Compressed, rows: Array, codes: Array, counts: Array, op: ReductionOperation
) -> Array | None:
    """The reduction's own one-pass result for the groups of rows of CSC arrays, if any."""
    if len(counts) >= np.iinfo(np.int32).max:
        return None
    group_of = np.full(values.shape[0], -1, dtype=np.int32)
    group_of[rows] = codes
    return op._grouped_rows(values, group_of, len(counts))


def _grouped_csr(
    values: Compressed, rows: Array, codes: Array, counts: Array, op: ReductionOperation
) -> Array | None:
    """The reduction's own one-pass result for the groups of rows of a matrix whose
    transpose's CSC arrays are ``values`` (the groups of its columns), if any."""
    if len(counts) >= np.iinfo(np.int32).max or values.shape[1] >= np.iinfo(np.int32).max:
        return None
    group_of = np.full(values.shape[1], -1, dtype=np.int32)
    group_of[rows] = codes
    return op._grouped_columns(values, group_of, len(counts))


def _reduce_stored_rows(mat: Mat, op: ReductionOperation) -> Array | None:
    """Each row of a matrix held as stored arrays (``mat.values`` is ``None``) reduced by the
    reduction's own pass: over the other layout's columns, or scattered from this one's."""
    columns = len(mat.col_names)
    if columns >= np.iinfo(np.int32).max:
        return None
    one = np.zeros(columns, dtype=np.int32)  # all columns one group
    if mat.stored_t is not None:
        out = op._grouped_rows(mat.stored_t, one, 1)
    else:
        assert mat.stored is not None
        out = op._grouped_columns(mat.stored, one, 1)
    return None if out is None else np.asarray(out[0])


def _transposed(mat: Mat) -> Mat:
    return Mat(
        values=None if mat.values is None else mat.values.T,
        row_names=mat.col_names,
        row_axis=mat.col_axis,
        row_positions=mat.col_positions,
        col_names=mat.row_names,
        col_axis=mat.row_axis,
        col_positions=mat.row_positions,
        prop=mat.prop,
        as_axis=mat.as_axis,
        stored=mat.stored_t,
        stored_t=mat.stored,
    )
