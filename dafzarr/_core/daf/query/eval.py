"""Evaluation of a parsed query: a stack machine over phrases.

The machine keeps one state on top (names, a scalar, a :class:`Vec` or a :class:`Mat`) and
reads the operations left to right; each step is a *phrase*: the kind of the top state plus
a pattern of the next operations, tried most specific first. A second operand (a mask term, a
grouping or counting vector) is evaluated by the same vector phrases before the pending
combination fires, so operations that follow it apply to it, as DataAxesFormats.jl does.
Grouping, counting and matrix reductions are in :mod:`._group`.

When no phrase applies, evaluation stops with ``invalid operation(s)`` and a caret under the
operation in the canonical query text; a query that ends without one complete result is an
``invalid query``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ....errors import DafMissingEntryError, DafMissingError, DafQueryError
from ...aliases import Array
from . import operations as _ops
from .cache import Reader
from .group import Grouping
from .operations import IfMissing
from .registry import EltwiseOperation, ReduceToColumn, ReductionOperation
from .sequence import QueryOperation, QuerySequence
from .stack import COMPARISONS, Mat, Vec, compare, dtype_error, empties, is_strings, settle, truth

__all__ = ["Evaluator", "MissingEntryError"]

_COMBINE = {
    _ops.AndMask: np.logical_and,
    _ops.AndNegatedMask: np.logical_and,
    _ops.OrMask: np.logical_or,
    _ops.OrNegatedMask: np.logical_or,
    _ops.XorMask: np.logical_xor,
    _ops.XorNegatedMask: np.logical_xor,
}
# The name this module has always offered.
MissingEntryError = DafMissingEntryError
_NEGATED = (_ops.BeginNegatedMask, _ops.AndNegatedMask, _ops.OrNegatedMask, _ops.XorNegatedMask)


class Evaluator(Grouping):
    """Evaluates one query on one :class:`Reader` (``checking``: only verify that what the
    query needs exists, tolerating values that are not entries, for ``has_query``)."""

    def __init__(self, reader: Reader, query: QuerySequence, *, checking: bool = False) -> None:
        self.r = reader
        self.ops = list(query)
        self.i = 0
        self.checking = checking
        self.canonical = str(query)
        self.offsets: list[tuple[int, int]] = []
        at = 0
        for op in self.ops:
            text = op.text()
            self.offsets.append((at, at + len(text)))
            at += len(text) + 1

    # --- The cursor and errors -------------------------------------------------------------

    def fail(
        self, message: str, first: int | None = None, last: int | None = None
    ) -> DafQueryError:
        """An evaluation error under the operations ``first..last`` (default: the current)."""
        return self._error(DafQueryError, message, first, last)

    def _error(
        self, cls: type[DafQueryError], message: str, first: int | None, last: int | None
    ) -> DafQueryError:
        first = min(self.i, len(self.ops) - 1) if first is None else first
        last = first if last is None else last
        lines = [message, f"in the query: {self.canonical}"]
        if 0 <= first < len(self.offsets):
            start, end = self.offsets[first][0], self.offsets[max(first, last)][1]
            lines.append(f"at location:  {' ' * start}{'▲' * (end - start)}")
        lines.append(f"for the daf data: {self.r.name}")
        return cls("\n".join(lines))

    def missing_entry(self, entry: str, axis: str) -> DafQueryError:
        """The error of a value that is not an entry of ``axis``."""
        return self._error(
            DafMissingEntryError,
            f"missing entry: {entry!r}\nof the axis: {axis}",
            max(self.i - 1, 0),
            None,
        )

    def peek(self, k: int = 0) -> QueryOperation | None:
        """The ``k``-th next operation, if any."""
        return self.ops[self.i + k] if self.i + k < len(self.ops) else None

    def is_(self, cls: Any, k: int = 0) -> bool:
        """Whether the ``k``-th next operation is exactly of class ``cls`` (or one of them)."""
        op = self.peek(k)
        classes = cls if isinstance(cls, tuple) else (cls,)
        return op is not None and type(op) in classes

    def take(self, cls: Any = None) -> Any:
        """The next operation (which must be of ``cls`` if given, else invalid)."""
        if cls is not None and not (
            self.is_(cls) or (isinstance(cls, type) and isinstance(self.peek(), cls))
        ):
            raise self.invalid()
        self.i += 1
        return self.ops[self.i - 1]

    def invalid(self) -> DafQueryError:
        """``invalid operation(s)`` at the current operation, or ``invalid query`` at the end."""
        if self.i >= len(self.ops):
            return DafQueryError(
                f"invalid query: {self.canonical}\nfor the daf data: {self.r.name}"
            )
        return self.fail("invalid operation(s)")

    def if_missing(self) -> IfMissing | None:
        """A following ``|| value`` (consumed), if any."""
        return self.take() if self.is_(IfMissing) else None

    # --- Top level -------------------------------------------------------------------------

    def run(self) -> Any:
        """The result: a ``set`` of names, ``("scalar", value)``, a :class:`Vec` or a
        :class:`Mat`."""
        if not self.ops:
            raise self.invalid()
        try:
            result = self._top()
        except DafMissingError as exc:  # the reader's message, then the query
            raise DafMissingError(f"{exc}\nin the query: {self.canonical}") from None
        if self.i < len(self.ops):
            raise self.invalid()
        if isinstance(result, Vec):
            return settle(result, self.fail)
        return result

    def _names(self, names: Any) -> set[str]:
        self.take(_ops.Names)
        return {str(n) for n in names}

    def _top(self) -> Any:
        op = self.peek()
        daf = self.r.daf
        if isinstance(op, _ops.LookupScalar):
            self.take()
            if op.operand is None:
                return self._names(daf.scalars_set())
            default = self.if_missing()
            if default is not None and not daf.has_scalar(op.operand):
                return self.scalar_tail(default.value)
            return self.scalar_tail(daf.get_scalar(op.operand))
        if isinstance(op, _ops.Axis):
            self.take()
            if op.operand is None:
                return self._names(daf.axes_set())
            ax = self.axis_expr(op.operand)
            if (
                self.is_(_ops.LookupVector)
                and self.ops[self.i].operand is None
                and self.is_(_ops.Names, 1)
            ):
                self.take()
                return self._names(daf.vectors_set(op.operand))
            if self.is_(_ops.Axis) and self.ops[self.i].operand is not None:
                columns = self.axis_expr(self.take().operand)
                lookup = self.take(_ops.LookupMatrix)
                if lookup.operand is None:
                    return self._names(daf.matrices_set(op.operand, columns.axis))
                return self.matrix_tail(self.matrix(ax, columns, lookup.operand, self.if_missing()))
            return self.vector_tail(ax)
        if isinstance(op, _ops.LookupVector | _ops.LookupMatrix) and op.operand is not None:
            return self._entry_scalar()
        raise self.invalid()

    def _entry(self) -> tuple[str, int]:
        axis = self.take(_ops.Axis).operand
        if axis is None:
            raise self.fail("invalid operation(s)", self.i - 1)
        entry = self.take(_ops.IsEqual).operand or ""
        self.r.entries(axis)
        position = self.r.position(axis, entry)
        if position < 0:
            raise self.missing_entry(entry, axis)
        return axis, position

    def _entry_scalar(self) -> Any:
        op = self.take()
        default = self.if_missing()
        assert op.operand is not None
        if isinstance(op, _ops.LookupVector):
            axis, at = self._entry()
            return self.scalar_tail(self.r.vector(axis, op.operand, default)[at])
        rows, i = self._entry()
        columns, j = self._entry()
        value = self.r.matrix_line(rows, columns, op.operand, default, i, row=True)[j]
        return self.scalar_tail(value.item() if hasattr(value, "item") else value)

    def scalar_tail(self, value: Any) -> tuple[str, Any]:
        """A scalar, then any element-wise operations."""
        while isinstance(self.peek(), EltwiseOperation):
            op = self.take()
            if op.NO_SCALAR:
                raise self.fail(f"applying {op.NAME} eltwise operation to a scalar", self.i - 1)
            value = self.eltwise(op, np.asarray(value))
        return "scalar", value

    def eltwise(self, op: EltwiseOperation, values: Any) -> Any:
        """``op`` applied to ``values`` (errors raised at the operation)."""
        if is_strings(values):
            raise self.fail(dtype_error("eltwise", op.NAME), self.i - 1)
        try:
            return op.apply(values)
        except ValueError as exc:
            raise self.fail(f"error converting: {exc}", self.i - 1) from None

    # --- Axes and masks --------------------------------------------------------------------

    def axis_expr(self, axis: str) -> Vec:
        """``@ axis`` and the masks that follow it."""
        entries = self.r.entries(axis)
        vec = Vec(
            values=entries,
            names=entries,
            axis=axis,
            positions=self.r.positions(axis),
            is_axis=True,
            whole=True,
        )
        while self.is_((_ops.BeginMask, _ops.BeginNegatedMask)):
            vec = self._mask(vec)
        return vec

    def _mask(self, ax: Vec) -> Vec:
        begin = self.take()
        keep = self._term(ax, begin.operand)
        if isinstance(begin, _ops.BeginNegatedMask):
            keep = ~keep
        while not self.is_(_ops.EndMask):
            op = self.peek()
            if op is None or type(op) not in _COMBINE:
                raise self.invalid()
            self.take()
            term = self._term(ax, op.operand or "")
            keep = _COMBINE[type(op)](keep, ~term if isinstance(op, _NEGATED) else term)
        self.take()
        return replace(ax.subset(keep), whole=False)

    def _term(self, ax: Vec, name: str) -> Array:
        term = settle(self.operand_term(ax, name), self.fail)
        values = truth(term.values)
        if len(term.values) == len(ax.values):
            return values
        out = np.zeros(len(ax.values), dtype=bool)
        assert ax.positions is not None
        assert term.positions is not None
        out[np.searchsorted(ax.positions, term.positions)] = values
        return out

    def operand_term(self, keys: Vec, name: str) -> Vec:
        """The property ``name`` (a vector, or a matrix column or row by the operations that
        follow) looked up for each entry of ``keys``, then the vector phrases that apply."""
        default = self.if_missing()
        kind = self.matrix_kind() if self._matrix_follows() else None
        return self.chain(self.lookup(keys, name, default, kind))

    def _matrix_follows(self) -> bool:
        return self._column_follows() or self.is_((_ops.SquareColumnIs, _ops.SquareRowIs))

    def _column_follows(self) -> bool:
        return (
            self.is_(_ops.Axis)
            and self.is_(_ops.IsEqual, 1)
            and self.ops[self.i].operand is not None
        )

    def matrix_kind(self) -> tuple[str, ...]:
        if self._column_follows():
            other = self.take().operand
            return "column", other, self.take().operand or ""
        if self.is_(_ops.SquareColumnIs):
            return "square_column", self.take().operand
        if self.is_(_ops.SquareRowIs):
            return "square_row", self.take().operand
        raise self.invalid()

    # --- Vector phrases --------------------------------------------------------------------

    def target_axis(self, vec: Vec) -> str | None:
        """The axis whose entries the values of ``vec`` are (``=@``, the axis of an axis
        expression, or the axis named like the property, or its part before the first
        ``.``)."""
        if vec.as_axis is not None:
            return vec.as_axis
        if vec.is_axis:
            return vec.axis
        if vec.prop is None or not is_strings(vec.values):
            return None
        if self.r.daf.has_axis(vec.prop):
            return vec.prop
        return vec.prop.split(".")[0]

    def lookup(
        self, vec: Vec, name: str, default: IfMissing | None, kind: tuple[str, ...] | None
    ) -> Vec:
        """Property ``name`` of the entries that ``vec``'s values are."""
        axis = self.target_axis(vec)
        if axis is None or not (vec.is_axis or is_strings(vec.values)):
            raise self.fail("invalid operation(s)", self.i - 1)
        self.r.entries(axis)
        codes: Array
        if vec.is_axis and vec.as_axis is None:
            assert vec.positions is not None
            codes = vec.positions
        else:
            source = None if vec.source is None else (vec.source[0], vec.source[1])
            codes = self.r.codes(
                axis, vec.values, source, None if vec.source is None else vec.source[2]
            )
        active = codes >= 0
        every = bool(np.all(active))
        if vec.pending is not None:
            pending = vec.pending >= 0
            if not bool(np.all(active | pending)) and not self.checking:
                bad = int(np.flatnonzero(~(active | pending))[0])
                raise self.missing_entry(str(vec.values[bad]), axis)
        elif not every and not self.checking:
            raise self.missing_entry(str(vec.values[int(np.argmin(active))]), axis)
        full = self.full_values(axis, name, default, kind)
        if vec.whole and vec.as_axis is None:
            values = full
        elif len(full) == 0:
            values = np.zeros(len(codes), dtype=full.dtype)
        elif every:
            values = full[codes]
        else:
            values = full[np.where(active, codes, 0)]
        stored = None
        if kind is None and (
            default is None or name in ("name", "index") or self.r.daf.has_vector(axis, name)
        ):
            stored = (axis, name, None if vec.whole and vec.as_axis is None else codes)
        return replace(
            vec, values=values, prop=name, as_axis=None, source=stored, is_axis=False, whole=False
        )

    def full_values(
        self, axis: str, name: str, default: IfMissing | None, kind: tuple[str, ...] | None
    ) -> Array:
        """The whole vector ``name`` of ``axis``, or a column or row of a matrix."""
        if kind is None:
            return self.r.vector(axis, name, default)
        other = kind[1] if kind[0] == "column" else axis
        if default is None and not self.r.has_matrix(axis, other, name):
            self.r.matrix(axis, other, name, None)  # raises the missing-matrix error
        entry = kind[2] if kind[0] == "column" else kind[1]
        at = self.r.position(other, entry)
        if at < 0:
            raise self.missing_entry(entry, other)
        return self.r.matrix_line(axis, other, name, default, at, row=kind[0] == "square_row")

    def chain(self, vec: Vec) -> Vec:
        """Apply the vector phrases that follow: comparisons, element-wise operations, ``=@``,
        ``??`` and chained lookups."""
        while True:
            op = self.peek()
            if op is not None and type(op) in COMPARISONS:
                self.take()
                vec = settle(vec, self.fail)
                values = compare(op, vec.values, "vector", self.fail, self._factors(vec))
                vec = replace(
                    vec,
                    values=values,
                    prop=None,
                    as_axis=None,
                    source=None,
                    is_axis=False,
                    whole=False,
                )
            elif isinstance(op, EltwiseOperation):
                self.take()
                vec = settle(vec, self.fail)
                vec = replace(
                    vec,
                    values=self.eltwise(op, vec.values),
                    source=None,
                    as_axis=None,
                    is_axis=False,
                    whole=False,
                )
            elif isinstance(op, _ops.AsAxis):
                self.take()
                axis = op.operand if op.operand is not None else self.target_axis(vec)
                if axis is None:
                    raise self.fail("invalid operation(s)", self.i - 1)
                vec = replace(vec, as_axis=axis)
            elif isinstance(op, _ops.IfNot):
                vec = self._if_not(vec)
            elif isinstance(op, _ops.LookupVector) and op.operand is not None:
                self.take()
                vec = self.lookup(vec, op.operand, self.if_missing(), None)
            elif isinstance(op, _ops.LookupMatrix) and op.operand is not None:
                self.take()
                default = self.if_missing()
                vec = self.lookup(vec, op.operand, default, self.matrix_kind())
            else:
                return vec

    def _if_not(self, vec: Vec) -> Vec:
        op = self.take()
        k = 1 if self.is_(_ops.AsAxis) else 0
        after = self.peek(k)
        if not isinstance(after, _ops.LookupVector | _ops.LookupMatrix) or after.operand is None:
            raise self.fail("invalid operation(s)", self.i - 1)
        empty = empties(vec.values, self._factors(vec))
        if vec.pending is not None:
            empty &= vec.pending < 0
        if op.operand is None:
            return replace(vec.subset(~empty), whole=False)
        pending = (
            np.full(len(vec.values), -1, dtype=np.int64)
            if vec.pending is None
            else vec.pending.copy()
        )
        pending[empty] = len(vec.finals)
        return replace(vec, pending=pending, finals=(*vec.finals, op.operand))

    def _factors(self, vec: Vec) -> tuple[Array, Array] | None:
        """The codes and distinct values of a stored string vector (kept per data version)."""
        if vec.source is None or vec.pending is not None or not is_strings(vec.values):
            return None
        return self.r.factors(vec.source)

    def vector_tail(self, vec: Vec) -> Any:
        """A vector, then the vector phrases, reductions, group-by and count-by."""
        while True:
            vec = self.chain(vec)
            if isinstance(self.peek(), ReductionOperation):
                op = self.take()
                return self.scalar_tail(self.reduce_vector(vec, op, self.if_missing()))
            if self.is_(self.GROUP_BY):
                vec = self.group_vector(vec)
                continue
            if self.is_(self.COUNT_BY):
                return self.matrix_tail(self.count(vec))
            return vec

    def reduce_vector(self, vec: Vec, op: ReductionOperation, default: IfMissing | None) -> Any:
        """All values of ``vec`` to one."""
        vec = settle(vec, self.fail)
        n = len(vec.values)
        if n == 0:
            if default is None:
                raise self.fail(
                    "no IfMissing value specified for reducing an empty vector", self.i - 1
                )
            return default.value
        if is_strings(vec.values) and not op.STRINGS:
            raise self.fail(dtype_error("reduction", op.NAME), self.i - 1)
        out = op._segments(np.asarray(vec.values), np.array([0, n]), np.array([n]))
        return out[0]

    # --- Matrices --------------------------------------------------------------------------

    def matrix(self, rows: Vec, columns: Vec, name: str, default: IfMissing | None) -> Mat:
        """The matrix ``name`` of two axis expressions (masked rows and columns selected)."""
        assert rows.axis is not None
        assert columns.axis is not None
        if (
            rows.whole
            and columns.whole
            and default is None
            and self.is_((_ops.GroupRowsBy, _ops.GroupColumnsBy, ReduceToColumn))
        ):
            # Reduced in place by the group-by's or the row reduction's pass, if it has one:
            # from the layout it reads in order if stored, else from the other one.
            by_rows = self.is_(_ops.GroupRowsBy)
            stored = self.r.stored_csc(rows.axis, columns.axis, name) if by_rows else None
            stored_t = (
                None if stored is not None else self.r.stored_csc(columns.axis, rows.axis, name)
            )
            if stored is None and stored_t is None and not by_rows:
                stored = self.r.stored_csc(rows.axis, columns.axis, name)
            if stored is not None or stored_t is not None:
                return Mat(
                    values=None,
                    row_names=rows.names,
                    row_axis=rows.axis,
                    row_positions=rows.positions,
                    col_names=columns.names,
                    col_axis=columns.axis,
                    col_positions=columns.positions,
                    prop=name,
                    stored=stored,
                    stored_t=stored_t,
                )
        values = self.r.matrix(rows.axis, columns.axis, name, default)
        if not rows.whole:
            values = values[rows.positions, :]
        if not columns.whole:
            values = values[:, columns.positions]
        return Mat(
            values=values,
            row_names=rows.names,
            row_axis=rows.axis,
            row_positions=rows.positions,
            col_names=columns.names,
            col_axis=columns.axis,
            col_positions=columns.positions,
            prop=name,
        )
