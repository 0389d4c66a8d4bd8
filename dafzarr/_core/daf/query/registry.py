"""Element-wise (``%``) and reduction (``>>``, ``>|``, ``>-``) operations, registered by name.

Each operation is a class with typed parameters (:class:`Parameter`); an instance holds the
parameter values and prints as ``% Log base 2.0 eps 0.0`` (every parameter but ``type``,
which prints only when given). The built-ins (:mod:`._eltwise`, :mod:`._reductions`) are
exactly those of DataAxesFormats.jl; users add their own with :func:`register_eltwise` and
:func:`register_reduction` (a decorator of the class, keyed by its ``NAME``).

Parameter errors are raised as :class:`~dafzarr.errors.DafQueryParameterError` (also known
here as ``ParameterError``) with the anchor's message lines; the parser adds the query and
the caret.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from ....errors import DafQueryParameterError
from ...aliases import Array
from .literals import FLOAT_TYPES, TYPES, format_value, parse_as
from .operations import QueryOperation

__all__ = [
    "ELTWISE",
    "REDUCTIONS",
    "Compressed",
    "EltwiseOperation",
    "Parameter",
    "ParameterError",
    "ReduceToColumn",
    "ReduceToRow",
    "ReductionOperation",
    "RegisteredOperation",
    "Runs",
    "register_eltwise",
    "register_reduction",
]


# The name this module has always offered.
ParameterError = DafQueryParameterError


@dataclass(frozen=True)
class Parameter:
    """A parameter: ``kind`` is ``"number_type"`` (any number type or ``auto``),
    ``"float_type"`` (Float32, Float64 or ``auto``) or ``"float"``; ``check`` returns what the
    value must be when it is not valid (it sees the other parameters), else ``None``."""

    name: str
    kind: str
    default: Any = None
    required: bool = False
    check: Callable[[float, dict[str, Any]], str | None] | None = None


def positive(x: float, _: dict[str, Any]) -> str | None:
    """A check: the value must be positive."""
    return None if x > 0 else "positive"


def not_negative(x: float, _: dict[str, Any]) -> str | None:
    """A check: the value must not be negative."""
    return None if x >= 0 else "not negative"


TYPE = Parameter("type", "number_type")
FLOAT_TYPE = Parameter("type", "float_type")
EPS = Parameter("eps", "float", 0.0, check=not_negative)


class RegisteredOperation(QueryOperation):
    """An operation found by name in a registry, with its parameters in ``params``."""

    NAME: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    PARAMETERS: ClassVar[tuple[Parameter, ...]] = ()
    #: Whether String values are accepted (``Count`` and ``Mode``).
    STRINGS: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        super().__init__(None)
        self.given: set[str] = set()
        self.params: dict[str, Any] = {}
        spec = {p.name: p for p in self.PARAMETERS}
        for name in params:
            if name not in spec:
                raise DafQueryParameterError(f"the parameter: {name}\ndoes not exist for "
                                             f"the operation: {self.NAME}", name)
        for p in self.PARAMETERS:
            if p.name in params and params[p.name] is not None:
                self.given.add(p.name)
                self.params[p.name] = self._value(p, params[p.name])
            elif p.required:
                raise DafQueryParameterError(f"missing required parameter: {p.name}\nfor the "
                                             f"eltwise operation: {self.NAME}", None)
            else:
                self.params[p.name] = p.default
        for p in self.PARAMETERS:
            if p.check is not None and p.name in self.given:
                must = p.check(self.params[p.name], self.params)
                if must is not None:
                    raise self._invalid(p, params[p.name], must)

    def _invalid(self, p: Parameter, value: Any, must: str) -> DafQueryParameterError:
        return DafQueryParameterError(f'invalid value: "{value}"\nvalue must be: {must}\n'
                                      f"for the parameter: {p.name}\nfor the operation: "
                                      f"{self.NAME}", p.name)

    def _value(self, p: Parameter, value: Any) -> Any:
        if p.kind == "float":
            try:
                return float(parse_as(value, TYPES["Float64"]) if isinstance(value, str)
                             else value)
            except (TypeError, ValueError):
                raise self._invalid(p, value, "a valid Float64") from None
        text = value if isinstance(value, str) else getattr(value, "__name__", str(value))
        if text == "auto":
            return None
        allowed = FLOAT_TYPES if p.kind == "float_type" else set(TYPES) - {"String", "string"}
        if text not in allowed:
            must = "a float type" if p.kind == "float_type" else "a number type"
            raise self._invalid(p, text, must)
        return TYPES[text]

    def text(self) -> str:
        parts = [self.OPERATOR, self.NAME]
        for p in self.PARAMETERS:
            if p.kind == "float":
                if p.name in self.given or not p.required:
                    parts += [p.name, format_value(float(self.params[p.name]))]
            elif p.name in self.given:
                dtype = self.params[p.name]
                parts += [p.name, "auto" if dtype is None else _type_text(dtype)]
        return " ".join(parts)

    def out_type(self, dtype: np.dtype[Any], default: Callable[[np.dtype[Any]], np.dtype[Any]]
                 ) -> np.dtype[Any]:
        """The ``type`` parameter if given, else ``default(dtype)``."""
        given = self.params.get("type")
        return given if given is not None else default(dtype)


def _type_text(dtype: np.dtype[Any]) -> str:
    from .literals import type_name

    return type_name(dtype)


class EltwiseOperation(RegisteredOperation):
    """``% Name params``: applied to each value; see :meth:`apply`."""

    OPERATOR = "%"
    KIND = "eltwise"
    #: Whether the operation refuses a scalar (Fraction, Significant).
    NO_SCALAR: ClassVar[bool] = False

    def apply(self, values: Any) -> Any:
        """The result for ``values``: a numpy scalar, a 1-D array, a 2-D array (the operation
        sees whole columns where it matters) or a scipy sparse CSC matrix."""
        raise NotImplementedError


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

    def __init__(self, data: Array, count: int, *, indptr: Array | None = None,
                 keys: Array | None = None) -> None:
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


class ReductionOperation(RegisteredOperation):
    """``>> Name params``: many values to one, computed over :class:`Runs` by :meth:`reduce`;
    each run also holds ``sizes[i] - counts[i]`` implicit zeros (of a sparse matrix)."""

    OPERATOR = ">>"
    KIND = "reduction"

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        """The element type of the result for input of ``dtype``."""
        raise NotImplementedError

    def one(self, values: Array) -> Any:
        """The result for one whole run of values (the default of :meth:`reduce`)."""
        raise NotImplementedError

    def reduce(self, runs: Runs, sizes: Array) -> Array:
        """One value per run. The default sorts the runs and calls :meth:`one` on each
        non-empty one (the value of an empty run is left undefined)."""
        data, indptr = runs.sorted()
        out = np.empty(runs.count, dtype=self.result_type(data.dtype))
        for i in np.flatnonzero(sizes):
            run = data[indptr[i]:indptr[i + 1]]
            zeros = int(sizes[i]) - run.size
            if zeros:
                run = np.concatenate([run, np.zeros(zeros, dtype=run.dtype)])
            out[i] = self.one(run)
        return out

    def segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        """One value per consecutive run ``data[indptr[i]:indptr[i+1]]`` (plus its zeros)."""
        return self.reduce(Runs(data, len(sizes), indptr=indptr), sizes)

    def keyed(self, data: Array, keys: Array, sizes: Array) -> Array:
        """One value per run, ``keys`` giving the run of each value."""
        return self.reduce(Runs(data, len(sizes), keys=keys), sizes)

    def grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        """The ``count x columns`` result of the groups of rows of the CSC matrix ``values``
        (``groups``: int32, the group of each row, -1 for none), computed in one pass over
        its stored values; ``None`` when this reduction has no such pass, or the arrays hold
        an index out of range (the caller then reduces the runs by key)."""
        return None

    def grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        """The ``count x rows`` result of the groups of columns of the CSC matrix ``values``
        (``groups``: int32, the group of each column, -1 for none), each stored value sent to
        the result of its row and group (no transposed copy); ``None`` when this reduction
        has no such pass, or the arrays hold an index out of range."""
        return None

    def dense(self, values: Array) -> Array:
        """Each row of the 2-D ``values`` to one value."""
        rows, columns = values.shape
        flat = np.ascontiguousarray(values).reshape(-1)
        return self.segments(flat, np.arange(rows + 1) * columns, np.full(rows, columns))


class ReduceToColumn(QueryOperation):
    """``>| Name params``: each row of a matrix to one value (a vector over the rows)."""

    OPERATOR = ">|"

    def __init__(self, reduction: ReductionOperation) -> None:
        super().__init__(None)
        self.reduction = reduction

    def text(self) -> str:
        return self.OPERATOR + self.reduction.text()[2:]


class ReduceToRow(ReduceToColumn):
    """``>- Name params``: each column of a matrix to one value (a vector over the columns)."""

    OPERATOR = ">-"


ELTWISE: dict[str, type[EltwiseOperation]] = {}
REDUCTIONS: dict[str, type[ReductionOperation]] = {}
_E = TypeVar("_E", bound=type[EltwiseOperation])
_R = TypeVar("_R", bound=type[ReductionOperation])


def register_eltwise(cls: _E) -> _E:
    """Register an element-wise operation class under its ``NAME`` (a class decorator)."""
    ELTWISE[cls.NAME] = cls
    return cls


def register_reduction(cls: _R) -> _R:
    """Register a reduction class under its ``NAME`` (a class decorator)."""
    REDUCTIONS[cls.NAME] = cls
    return cls
