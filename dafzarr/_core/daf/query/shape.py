"""The shape of a query's result, without data: :func:`query_result_dimensions`.

A small state machine over the operations follows the phrases of evaluation at the level of
kinds only (names, scalar, axis, two axes, vector, matrix, and a pending group-by), so a query
no data set could answer raises here too, with the same ``invalid operation(s)`` message and
caret as evaluation (without naming a data set).
"""

from __future__ import annotations

from typing import Any

from ....errors import DafQueryError
from . import operations as _ops
from .parse import parse_query
from .registry import EltwiseOperation, ReduceToColumn, ReduceToRow, ReductionOperation

__all__ = ["query_result_dimensions"]

_DIMENSIONS = {"names": -1, "scalar": 0, "axis": 1, "vector": 1, "matrix": 2}
_COMPARE = (
    _ops.IsEqual,
    _ops.IsNotEqual,
    _ops.IsLess,
    _ops.IsLessEqual,
    _ops.IsGreater,
    _ops.IsGreaterEqual,
    _ops.IsMatch,
    _ops.IsNotMatch,
)
_MASKS = (_ops.BeginMask, _ops.BeginNegatedMask)
_GROUPS = {
    _ops.GroupBy: ReductionOperation,
    _ops.GroupRowsBy: ReduceToRow,
    _ops.GroupColumnsBy: ReduceToColumn,
}


class _Shape:
    """A cursor over the operations of one query, with the kind of its current result."""

    def __init__(self, query: Any) -> None:
        self.query = parse_query(query)
        self.ops = list(self.query)
        self.i = 0
        self.kind = "start"
        self.group: type | None = None

    def fail(self) -> DafQueryError:
        if self.i >= len(self.ops):
            return DafQueryError(f"invalid query: {self.query}")
        start = sum(len(op.text()) + 1 for op in self.ops[: self.i])
        width = len(self.ops[self.i].text())
        return DafQueryError(
            f"invalid operation(s)\nin the query: {self.query}\n"
            f"at location:  {' ' * start}{'▲' * width}"
        )

    def is_(self, *classes: Any) -> bool:
        return self.i < len(self.ops) and isinstance(self.ops[self.i], classes)

    def skip(self, *classes: Any) -> bool:
        if self.is_(*classes):
            self.i += 1
            return True
        return False

    def entry(self) -> None:
        """``@ axis = entry`` (both operands required)."""
        if not (self.is_(_ops.Axis) and self.ops[self.i].operand is not None):
            raise self.fail()
        self.i += 1
        if not self.skip(_ops.IsEqual):
            raise self.fail()

    def column(self) -> None:
        """What makes a matrix a vector: ``@ other = entry``, ``@| e`` or ``@- e``."""
        if not self.skip(_ops.SquareColumnIs, _ops.SquareRowIs):
            self.entry()

    def column_follows(self) -> bool:
        return self.is_(_ops.SquareColumnIs, _ops.SquareRowIs) or (
            self.is_(_ops.Axis)
            and self.i + 1 < len(self.ops)
            and isinstance(self.ops[self.i + 1], _ops.IsEqual)
        )

    def dimensions(self) -> int:
        while self.i < len(self.ops):
            self.step(self.ops[self.i])
        if self.kind in ("start", "axes") or self.group is not None:
            raise self.fail()
        return _DIMENSIONS[self.kind]

    def start(self, op: Any) -> None:
        self.i += 1
        if isinstance(op, _ops.LookupScalar | _ops.Axis) and op.operand is None:
            self.kind = "names" if self.skip(_ops.Names) else "bad"
        elif isinstance(op, _ops.LookupScalar):
            self.skip(_ops.IfMissing)
            self.kind = "scalar"
        elif isinstance(op, _ops.Axis):
            self.kind = "axis"
        elif isinstance(op, _ops.LookupVector | _ops.LookupMatrix) and op.operand is not None:
            self.skip(_ops.IfMissing)
            self.entry()
            if isinstance(op, _ops.LookupMatrix):
                self.entry()
            self.kind = "scalar"
        else:
            self.kind = "bad"
        if self.kind == "bad":
            self.i -= 1
            raise self.fail()

    def step(self, op: Any) -> None:
        kind = self.kind
        if kind == "start":
            return self.start(op)
        if kind == "names" or isinstance(op, _ops.Bang | _ops.Names):
            raise self.fail()
        self.i += 1
        lookup = isinstance(op, _ops.LookupVector | _ops.LookupMatrix)
        if lookup and op.operand is None:
            names = self.skip(_ops.Names)
            if not names or (kind, type(op)) not in (
                ("axis", _ops.LookupVector),
                ("axes", _ops.LookupMatrix),
            ):
                self.i -= 1 if not names else 2
                raise self.fail()
            self.kind = "names"
        elif kind == "axis" and isinstance(op, _MASKS):
            while not self.skip(_ops.EndMask):
                if self.i >= len(self.ops):
                    raise self.fail()
                self.i += 1
        elif kind == "axis" and isinstance(op, _ops.Axis) and op.operand is not None:
            while self.is_(*_MASKS):
                self.kind = "axis"
                self.step(self.ops[self.i])
            self.kind = "axes"
        elif kind == "axes" and isinstance(op, _ops.LookupMatrix):
            self.skip(_ops.IfMissing)
            self.kind = "matrix"
        elif kind == "scalar" and isinstance(op, EltwiseOperation | _ops.IfMissing):
            pass
        elif kind in ("axis", "vector", "matrix"):
            self.in_vector_or_matrix(op)
        else:
            self.i -= 1
            raise self.fail()
        return None

    def in_vector_or_matrix(self, op: Any) -> None:
        matrix = self.kind == "matrix"
        if isinstance(op, _ops.LookupVector | _ops.LookupMatrix):
            self.skip(_ops.IfMissing)
            if isinstance(op, _ops.LookupMatrix):
                self.column()
            self.kind = "matrix" if matrix else "vector"
        elif isinstance(op, (EltwiseOperation, _ops.AsAxis, _ops.IfNot, *_COMPARE)):
            self.kind = "matrix" if matrix else "vector"
        elif isinstance(op, _ops.IfMissing) or (
            self.group is not None
            and isinstance(op, _ops.Axis | _ops.SquareColumnIs | _ops.SquareRowIs)
        ):
            if isinstance(op, _ops.Axis):
                self.skip(_ops.IsEqual)
        elif type(op) in _GROUPS and (type(op) is _ops.GroupBy) != matrix:
            if self.group is not None:
                self.i -= 1
                raise self.fail()
            self.group = _GROUPS[type(op)]
            if self.column_follows():
                self.column()
        elif self.group is not None and isinstance(op, ReductionOperation | ReduceToColumn):
            if type(op) is not self.group and not (
                self.group is ReductionOperation and isinstance(op, ReductionOperation)
            ):
                self.i -= 1
                raise self.fail()
            self.group = None
            self.kind = "matrix" if matrix else "vector"
        elif isinstance(op, ReductionOperation):
            self.kind = "scalar"
        elif matrix and isinstance(op, ReduceToColumn):
            self.kind = "vector"
        elif not matrix and isinstance(op, _ops.CountBy):
            if self.column_follows():
                self.column()
            self.kind = "matrix"
        else:
            self.i -= 1
            raise self.fail()


def query_result_dimensions(query: Any) -> int:
    """What a query gives, without data: -1 names, 0 a scalar, 1 a vector, 2 a matrix.

    Parameters
    ----------
    query : str, QuerySequence or QueryOperation
        The query.

    Returns
    -------
    int
        -1 for names (a ``set``), 0 for a scalar, 1 for a vector, 2 for a matrix.

    Raises
    ------
    DafQuerySyntaxError
        If the text does not parse.
    DafQueryError
        If no data set could answer the query (operations in an order that does not apply).
    InvalidArgumentTypeError
        If ``query`` is neither a text nor a query object.

    Examples
    --------
    >>> dafzarr.query_result_dimensions("@ cell : age >> Sum")
    0
    >>> dafzarr.query_result_dimensions("@ cell @ gene :: UMIs -/ type >- Sum")
    2
    >>> dafzarr.query_result_dimensions("@ ?")
    -1
    """
    return _Shape(query).dimensions()
