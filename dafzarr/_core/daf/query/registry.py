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

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from ....errors import DafQueryParameterError, DafzarrDeprecationWarning
from ...aliases import Array
from .literals import FLOAT_TYPES, TYPES, format_value, parse_as
from .runs import Compressed, Runs
from .sequence import QueryOperation

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
    """A parameter of an element-wise or reduction operation (in its ``PARAMETERS``).

    Parameters
    ----------
    name : str
        The name the parameter is given by in a query (``% Log base 2``).
    kind : str
        ``"number_type"`` (the name of a number type, or ``auto``), ``"float_type"``
        (Float32, Float64 or ``auto``) or ``"float"`` (a number).
    default : Any
        The value when the parameter is not given.
    required : bool
        Whether the parameter must be given.
    check : callable or None
        Called with a given value and all the parameters (a dict), returns what the value must
        be when it is not valid (``"positive"``), else ``None``.

    Raises
    ------
    None
        Making a parameter raises no exception; a value that does not fit it raises
        :class:`~dafzarr.errors.DafQueryParameterError` when the operation is made.

    Examples
    --------
    >>> from dafzarr.daf.query import Log, Parameter
    >>> Parameter("by", "float", 2.0)
    Parameter(name='by', kind='float', default=2.0, required=False, check=None)
    >>> [p.name for p in Log.PARAMETERS]
    ['type', 'base', 'eps']
    """

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
                raise DafQueryParameterError(
                    f"the parameter: {name}\ndoes not exist for the operation: {self.NAME}", name
                )
        for p in self.PARAMETERS:
            if p.name in params and params[p.name] is not None:
                self.given.add(p.name)
                self.params[p.name] = self._value(p, params[p.name])
            elif p.required:
                raise DafQueryParameterError(
                    f"missing required parameter: {p.name}\nfor the eltwise operation: {self.NAME}",
                    None,
                )
            else:
                self.params[p.name] = p.default
        for p in self.PARAMETERS:
            if p.check is not None and p.name in self.given:
                must = p.check(self.params[p.name], self.params)
                if must is not None:
                    raise self._invalid(p, params[p.name], must)

    def _invalid(self, p: Parameter, value: Any, must: str) -> DafQueryParameterError:
        return DafQueryParameterError(
            f'invalid value: "{value}"\nvalue must be: {must}\n'
            f"for the parameter: {p.name}\nfor the operation: "
            f"{self.NAME}",
            p.name,
        )

    def _value(self, p: Parameter, value: Any) -> Any:
        if p.kind == "float":
            try:
                return float(parse_as(value, TYPES["Float64"]) if isinstance(value, str) else value)
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

    def out_type(
        self, dtype: np.dtype[Any], default: Callable[[np.dtype[Any]], np.dtype[Any]]
    ) -> np.dtype[Any]:
        """The element type of a result: the ``type`` parameter if given, else
        ``default(dtype)``.

        Parameters
        ----------
        dtype : numpy.dtype
            The element type of the input values.
        default : callable
            The default result type of an input type.

        Returns
        -------
        numpy.dtype
            The type to give the result.

        Raises
        ------
        None
            This method raises no exception of its own; ``default`` may.

        Examples
        --------
        >>> from dafzarr.daf.query import Abs
        >>> Abs().out_type(np.dtype("int8"), lambda dtype: np.dtype("uint8"))
        dtype('uint8')
        >>> Abs(type="Int64").out_type(np.dtype("int8"), lambda dtype: np.dtype("uint8"))
        dtype('int64')
        """
        given = self.params.get("type")
        return given if given is not None else default(dtype)


def _type_text(dtype: np.dtype[Any]) -> str:
    from .literals import type_name

    return type_name(dtype)


class EltwiseOperation(RegisteredOperation):
    """``% Name params``: an element-wise operation, applied to each value.

    The base of the element-wise operations. A new one is a subclass with a ``NAME``, its
    ``PARAMETERS`` (:class:`Parameter`) and an :meth:`apply`, registered by
    :func:`register_eltwise`; ``NO_SCALAR = True`` refuses a scalar (for operations over a
    whole vector or column), ``STRINGS = True`` accepts String values. An instance holds the
    parameter values in ``params`` (``None`` for a ``type`` that is ``auto``) and prints as
    its canonical text.

    Parameters
    ----------
    **params : str or float
        The parameters by name, as given after the operation's name in a query.

    Raises
    ------
    DafQueryParameterError
        If a parameter does not exist for the operation, a required one is missing or a value
        is not valid.

    Examples
    --------
    >>> from dafzarr.daf.query import EltwiseOperation, Parameter, register_eltwise
    >>> @register_eltwise
    ... class Scale(EltwiseOperation):
    ...     NAME = "Scale"
    ...     PARAMETERS = (Parameter("by", "float", 2.0),)
    ...
    ...     def apply(self, values):
    ...         return values * self.params["by"]
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"])
    >>> d = d.set_vector("cell", "age", np.array([20, 35, 41]))
    >>> d.get_np_query("@ cell : age % Scale by 0.5")
    array([10. , 17.5, 20.5])
    >>> str(Scale(by=3))
    '% Scale by 3.0'
    """

    OPERATOR = "%"
    KIND = "eltwise"
    #: Whether the operation refuses a scalar (Fraction, Significant).
    NO_SCALAR: ClassVar[bool] = False

    def apply(self, values: Any) -> Any:
        """The operation applied to ``values``.

        Parameters
        ----------
        values : numpy scalar, numpy.ndarray or scipy.sparse.csc_matrix
            A scalar, a vector, a matrix (whole columns) or a sparse CSC matrix.

        Returns
        -------
        numpy scalar, numpy.ndarray or scipy.sparse.csc_matrix
            The result, of the same shape (a sparse result may stay sparse).

        Raises
        ------
        InvalidArgumentError
            If a value cannot be represented in the result type.
        InvalidArgumentTypeError
            If the values are of a type the operation does not take (strings).

        Examples
        --------
        >>> from dafzarr.daf.query import Abs, Log
        >>> Abs().apply(np.array([-1, 2], "int8"))
        array([1, 2], dtype=uint8)
        >>> Log(base=2).apply(np.array([1.0, 8.0]))
        array([0., 3.])
        """
        raise NotImplementedError


#: The evaluator's reduction passes, public under these names in earlier releases.
_FORMER_HOOKS = ("reduce", "segments", "keyed", "grouped_rows", "grouped_columns", "dense")


class ReductionOperation(RegisteredOperation):
    """``>> Name params``: a reduction, many values to one.

    The base of the reductions; ``>>`` reduces a vector or a whole matrix to one value, a
    group-by (``/ property >> Name``) reduces each group, and :class:`ReduceToColumn` and
    :class:`ReduceToRow` (``>| Name``, ``>- Name``) reduce each row or column of a matrix. A new
    reduction is a subclass with a ``NAME``, its ``PARAMETERS`` (:class:`Parameter`), a
    :meth:`result_type` and a :meth:`one`, registered by :func:`register_reduction`;
    ``STRINGS = True`` accepts String values. The built-in reductions compute all the values at
    once over the stored values (the implicit zeros of a sparse matrix are never made).

    Parameters
    ----------
    **params : str or float
        The parameters by name, as given after the operation's name in a query.

    Raises
    ------
    DafQueryParameterError
        If a parameter does not exist for the operation, a required one is missing or a value
        is not valid.

    Examples
    --------
    >>> from dafzarr.daf.query import ReductionOperation, register_reduction
    >>> @register_reduction
    ... class Range(ReductionOperation):
    ...     NAME = "Range"
    ...
    ...     def result_type(self, dtype):
    ...         return dtype
    ...
    ...     def one(self, values):
    ...         return values.max() - values.min()
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"])
    >>> d = d.set_vector("cell", "age", np.array([20, 35, 41]))
    >>> d = d.set_vector("cell", "type", np.array(["T", "B", "T"]))
    >>> d.get_np_query("@ cell : age >> Range")
    21
    >>> d.get_np_query("@ cell : age / type >> Range")
    array([ 0, 21])
    """

    OPERATOR = ">>"
    KIND = "reduction"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass written for releases where the evaluator's passes were public keeps its
        behaviour: its ``reduce`` (say) becomes the pass ``_reduce``, with a warning."""
        super().__init_subclass__(**kwargs)
        for name in _FORMER_HOOKS:
            if name in vars(cls) and f"_{name}" not in vars(cls):
                warnings.warn(
                    f"{cls.__qualname__}.{name}: a reduction defines result_type and one; "
                    f"the evaluator's pass {name} is private (_{name}) and will stop being "
                    "called by its old name",
                    DafzarrDeprecationWarning,
                    stacklevel=2,
                )
                setattr(cls, f"_{name}", vars(cls)[name])

    if not TYPE_CHECKING:  # the old names are not part of the typed API

        def __getattr__(self, name: str) -> Any:
            if name in _FORMER_HOOKS:
                warnings.warn(
                    f"ReductionOperation.{name} is deprecated: the evaluator's passes are "
                    f"private (_{name}); a reduction is called through queries",
                    DafzarrDeprecationWarning,
                    stacklevel=2,
                )
                return getattr(self, f"_{name}")
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def result_type(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        """The element type of the result for values of ``dtype``.

        Parameters
        ----------
        dtype : numpy.dtype
            The element type of the values reduced.

        Returns
        -------
        numpy.dtype
            The element type of the reduced values.

        Raises
        ------
        NotImplementedError
            If a subclass does not define it.

        Examples
        --------
        >>> from dafzarr.daf.query import Count, Mean
        >>> Mean().result_type(np.dtype("int32")), Count().result_type(np.dtype("int32"))
        (dtype('float32'), dtype('uint32'))
        """
        raise NotImplementedError

    def one(self, values: Array) -> Any:
        """One reduced value: of ``values``, all the values of a vector, a group, a row or a
        column (implicit zeros included).

        Parameters
        ----------
        values : numpy.ndarray
            The values to reduce (at least one).

        Returns
        -------
        Any
            The reduced value, of :meth:`result_type`.

        Raises
        ------
        NotImplementedError
            If a subclass defines neither this nor a faster way over all values.

        Examples
        --------
        >>> from dafzarr.daf.query import Mode
        >>> int(Mode().one(np.array([3, 1, 3, 2])))
        3
        """
        raise NotImplementedError

    def _reduce(self, runs: Runs, sizes: Array) -> Array:
        """One value per run. The default sorts the runs and calls :meth:`one` on each
        non-empty one (the value of an empty run is left undefined)."""
        data, indptr = runs.sorted()
        out = np.empty(runs.count, dtype=self.result_type(data.dtype))
        for i in np.flatnonzero(sizes):
            run = data[indptr[i] : indptr[i + 1]]
            zeros = int(sizes[i]) - run.size
            if zeros:
                run = np.concatenate([run, np.zeros(zeros, dtype=run.dtype)])
            out[i] = self.one(run)
        return out

    def _segments(self, data: Array, indptr: Array, sizes: Array) -> Array:
        """One value per consecutive run ``data[indptr[i]:indptr[i+1]]`` (plus its zeros)."""
        return self._reduce(Runs(data, len(sizes), indptr=indptr), sizes)

    def _keyed(self, data: Array, keys: Array, sizes: Array) -> Array:
        """One value per run, ``keys`` giving the run of each value."""
        return self._reduce(Runs(data, len(sizes), keys=keys), sizes)

    def _grouped_rows(self, values: Compressed, groups: Array, count: int) -> Array | None:
        """The ``count x columns`` result of the groups of rows of the CSC matrix ``values``
        (``groups``: int32, the group of each row, -1 for none), computed in one pass over
        its stored values; ``None`` when this reduction has no such pass, or the arrays hold
        an index out of range (the caller then reduces the runs by key)."""
        return None

    def _grouped_columns(self, values: Compressed, groups: Array, count: int) -> Array | None:
        """The ``count x rows`` result of the groups of columns of the CSC matrix ``values``
        (``groups``: int32, the group of each column, -1 for none), each stored value sent to
        the result of its row and group (no transposed copy); ``None`` when this reduction
        has no such pass, or the arrays hold an index out of range."""
        return None

    def _dense(self, values: Array) -> Array:
        """Each row of the 2-D ``values`` to one value."""
        rows, columns = values.shape
        flat = np.ascontiguousarray(values).reshape(-1)
        return self._segments(flat, np.arange(rows + 1) * columns, np.full(rows, columns))


class ReduceToColumn(QueryOperation):
    """``>| Name params``: each row of a matrix to one value (a vector over the rows).

    Parameters
    ----------
    reduction : ReductionOperation
        The reduction of each row.

    Raises
    ------
    None
        Making the operation raises no exception.

    Examples
    --------
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"]).add_axis("gene", ["X", "Y"])
    >>> d = d.set_matrix("cell", "gene", "UMIs", np.array([[1, 0], [3, 4], [0, 6]], "int32"))
    >>> d.get_np_query("@ cell @ gene :: UMIs >| Sum")
    array([1, 7, 6], dtype=int32)
    >>> from dafzarr.daf.query import ReduceToColumn, Sum
    >>> str(ReduceToColumn(Sum()))
    '>| Sum'
    """

    OPERATOR = ">|"

    def __init__(self, reduction: ReductionOperation) -> None:
        super().__init__(None)
        self.reduction = reduction

    def text(self) -> str:
        return self.OPERATOR + self.reduction.text()[2:]


class ReduceToRow(ReduceToColumn):
    """``>- Name params``: each column of a matrix to one value (a vector over the columns).

    Parameters
    ----------
    reduction : ReductionOperation
        The reduction of each column.

    Raises
    ------
    None
        Making the operation raises no exception.

    Examples
    --------
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"]).add_axis("gene", ["X", "Y"])
    >>> d = d.set_matrix("cell", "gene", "UMIs", np.array([[1, 0], [3, 4], [0, 6]], "int32"))
    >>> d.get_np_query("@ cell @ gene :: UMIs >- Max")
    array([3, 6], dtype=int32)
    >>> from dafzarr.daf.query import Max, ReduceToRow
    >>> str(ReduceToRow(Max()))
    '>- Max'
    """

    OPERATOR = ">-"


ELTWISE: dict[str, type[EltwiseOperation]] = {}
REDUCTIONS: dict[str, type[ReductionOperation]] = {}
_E = TypeVar("_E", bound=type[EltwiseOperation])
_R = TypeVar("_R", bound=type[ReductionOperation])


def register_eltwise(cls: _E) -> _E:
    """Register an element-wise operation class under its ``NAME`` (a class decorator).

    The class is a subclass of :class:`EltwiseOperation` with a ``NAME``, its ``PARAMETERS``
    and an ``apply(values)`` that takes a scalar, a vector, a matrix or a sparse CSC matrix;
    once registered, ``% NAME params`` in a query is an instance of it. A class registered
    under the name of another replaces it.

    Parameters
    ----------
    cls : type
        The operation class.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    None
        Registering raises no exception.

    Examples
    --------
    >>> from dafzarr.daf.query import EltwiseOperation, register_eltwise
    >>> @register_eltwise
    ... class Negate(EltwiseOperation):
    ...     NAME = "Negate"
    ...
    ...     def apply(self, values):
    ...         return -values
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"])
    >>> d = d.set_vector("cell", "score", np.array([1.5, -2.0]))
    >>> d.get_np_query("@ cell : score % Negate")
    array([-1.5,  2. ])
    """
    ELTWISE[cls.NAME] = cls
    return cls


def register_reduction(cls: _R) -> _R:
    """Register a reduction class under its ``NAME`` (a class decorator).

    The class is a subclass of :class:`ReductionOperation` with a ``NAME``, its
    ``PARAMETERS``, a ``result_type(dtype)`` (the element type of the result) and a
    ``one(values)`` (one value of all the values of a vector, group, row or column, implicit
    zeros included); once registered, ``>> NAME``, ``>| NAME`` and ``>- NAME`` in a query
    use it. A class registered under the name of another replaces it.

    Parameters
    ----------
    cls : type
        The reduction class.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    None
        Registering raises no exception.

    Examples
    --------
    >>> from dafzarr.daf.query import ReductionOperation, register_reduction
    >>> @register_reduction
    ... class Last(ReductionOperation):
    ...     NAME = "Last"
    ...
    ...     def result_type(self, dtype):
    ...         return dtype
    ...
    ...     def one(self, values):
    ...         return values[-1]
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B"]).add_axis("gene", ["X", "Y"])
    >>> d = d.set_matrix("cell", "gene", "UMIs", np.array([[1, 2], [3, 4]]))
    >>> d.get_np_query("@ cell @ gene :: UMIs >| Last")
    array([2, 4])
    """
    REDUCTIONS[cls.NAME] = cls
    return cls
