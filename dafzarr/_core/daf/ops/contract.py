"""Contracts of computations on Daf data: which axes and properties a computation reads and
writes, with their element types, as DataAxesFormats.jl's ``Contract`` states them.

A :class:`Contract` lists ``axes`` as ``{axis: (expectation, description)}`` and ``data`` as
``{key: (expectation, element_type, description)}`` (a mapping, or a sequence of pairs), where a
key is ``"name"`` (scalar), ``(axis, name)`` (vector), ``(rows_axis, columns_axis, name)``
(matrix) or ``(main_axis, rows_axis, columns_axis, name)`` (tensor: the matrices
``"<entry>_<name>"`` for each entry of ``main_axis``).

Element types (:class:`ElementType`) are the stored types of Daf: a numpy dtype or anything
``numpy.dtype`` accepts (``np.int32``, ``"float64"``; Python's ``int`` and ``float`` are
``int64`` and ``float64``), ``str``, ``bool``, an abstract kind - ``"integer"``,
``"signed"``, ``"unsigned"``, ``"float"``, ``"real"`` (integers and floats), ``"number"``
(the same, as numpy's ``np.number``; ``bool`` is not a number, as in numpy, unlike Julia),
``"any"`` - or numpy's abstract classes (``np.integer``, ``np.floating``, ``np.number``), or
a tuple of these (any of them, like Julia's ``Union``).

``first >> second`` combines the contracts of two steps run one after the other (Julia's
``first |> second``): ``>>`` and not ``|`` because the combination is ordered - a step may
read what an earlier one creates, not the other way round.

Where DataAxesFormats.jl is silent or differs: ``GuaranteedOutput`` properties are listed
among the outputs of the documentation (Julia leaves them out) and may lie on required,
created or guaranteed axes (Julia fails on them); every broken contract, and contracts that
cannot be combined, raise :class:`~dafzarr.errors.DafContractError`; a malformed contract
raises :class:`~dafzarr.errors.InvalidArgumentError` when it is made, not when it is used.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ....errors import DafContractError, InvalidArgumentError, InvalidArgumentTypeError
from .contract_types import ElementType, dtype_name, value_type_name

__all__ = [
    "AxisSpec",
    "Contract",
    "ContractExpectation",
    "CreatedOutput",
    "DataSpec",
    "ElementType",
    "GuaranteedOutput",
    "OptionalInput",
    "OptionalOutput",
    "RequiredInput",
    "check_daf",
    "dtype_name",
    "key_kind",
    "value_type_name",
]


class ContractExpectation(enum.Enum):
    """What a computation expects of an axis or property.

    ``RequiredInput``: must exist before, and is read. ``OptionalInput``: read if it exists.
    ``CreatedOutput``: always written (must not exist before, unless the computation is
    called with ``overwrite=True``). ``GuaranteedOutput``: exists afterwards (written unless
    it already exists). ``OptionalOutput``: may be written. The members are also exported
    alone (``dafzarr.RequiredInput``, ...).

    Parameters
    ----------
    *args
        The value of a member, to look it up (``ContractExpectation("required")`` is
        ``RequiredInput``); the members themselves are what contracts take.
    **kwds
        Not used (the enumeration's own).

    Raises
    ------
    ValueError
        A looked-up value is no member's (as for every ``enum.Enum``).

    Examples
    --------
    >>> dafzarr.ContractExpectation("required") is dafzarr.RequiredInput
    True
    >>> dafzarr.RequiredInput.is_input, dafzarr.CreatedOutput.is_input
    (True, False)
    >>> str(dafzarr.GuaranteedOutput), dafzarr.GuaranteedOutput.label
    ('GuaranteedOutput', 'guaranteed')
    """

    RequiredInput = "required"
    OptionalInput = "optional input"
    CreatedOutput = "created"
    GuaranteedOutput = "guaranteed"
    OptionalOutput = "optional output"

    def __str__(self) -> str:
        return self.name

    @property
    def is_input(self) -> bool:
        """Whether the computation only reads it."""
        return self in (ContractExpectation.RequiredInput, ContractExpectation.OptionalInput)

    @property
    def label(self) -> str:
        """The word the documentation shows: required, optional, created or guaranteed."""
        return self.value.split()[0]


RequiredInput = ContractExpectation.RequiredInput
OptionalInput = ContractExpectation.OptionalInput
CreatedOutput = ContractExpectation.CreatedOutput
GuaranteedOutput = ContractExpectation.GuaranteedOutput
OptionalOutput = ContractExpectation.OptionalOutput


_READER_METHODS = ("has_axis", "axis_np_entries", "vectors_set", "get_np_vector", "get_scalar")


def check_daf(daf: Any, where: str) -> None:
    """Refuse (:class:`~dafzarr.errors.InvalidArgumentTypeError`) what is not a Daf data set
    (a cheap check of the reader methods; ``where`` names the operation)."""
    if not (
        isinstance(getattr(daf, "name", None), str)
        and all(callable(getattr(daf, m, None)) for m in _READER_METHODS)
    ):
        raise InvalidArgumentTypeError(f"not a Daf data set: {daf!r}\n{where}")


class AxisSpec(NamedTuple):
    """What a contract says of an axis."""

    expectation: ContractExpectation
    description: str


class DataSpec(NamedTuple):
    """What a contract says of a scalar, vector, matrix or tensor."""

    expectation: ContractExpectation
    type: ElementType
    description: str


_KIND_OF_KEY = {1: "scalar", 2: "vector", 3: "matrix", 4: "tensor"}


def key_kind(key: Any) -> str:
    """``"scalar"``, ``"vector"``, ``"matrix"`` or ``"tensor"`` for a data key."""
    return _KIND_OF_KEY[1 if isinstance(key, str) else len(key)]


def _data_key(key: Any) -> str | tuple[str, ...]:
    if isinstance(key, str):
        return key
    if isinstance(key, tuple) and 2 <= len(key) <= 4 and all(isinstance(k, str) for k in key):
        return key
    raise InvalidArgumentError(
        f"invalid data key: {key!r} (a scalar name, or a tuple of 2 "
        "to 4 names: a vector, matrix or tensor)"
    )


def _expectation(value: Any, key: Any) -> ContractExpectation:
    if not isinstance(value, ContractExpectation):
        raise InvalidArgumentError(
            f"invalid expectation: {value!r}\nfor the contract key: {key!r} (a ContractExpectation)"
        )
    return value


def _description(value: Any, key: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"invalid description: {value!r}\nfor the contract key: {key!r} (a string)"
        )
    return value


def _pairs(given: Any, what: str) -> list[tuple[Any, Any]]:
    if given is None:
        return []
    items = given.items() if isinstance(given, Mapping) else given
    out = []
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise InvalidArgumentError(
                f"invalid contract {what} item: {item!r} (a pair of a key and its specification)"
            )
        out.append(item)
    return out


def _axis_spec(axis: Any, spec: Any) -> tuple[str, AxisSpec]:
    if not isinstance(axis, str):
        raise InvalidArgumentError(f"invalid axis key: {axis!r} (an axis name)")
    if not (isinstance(spec, tuple | list) and len(spec) == 2):
        raise InvalidArgumentError(
            f"invalid axis specification: {spec!r}\nfor the axis: "
            f"{axis} (expected (expectation, description))"
        )
    return axis, AxisSpec(_expectation(spec[0], axis), _description(spec[1], axis))


def _data_spec(key: Any, spec: Any) -> tuple[str | tuple[str, ...], DataSpec]:
    key = _data_key(key)
    if not (isinstance(spec, tuple | list) and len(spec) == 3):
        raise InvalidArgumentError(
            f"invalid data specification: {spec!r}\nfor the data: "
            f"{key!r} (expected (expectation, type, description))"
        )
    return key, DataSpec(
        _expectation(spec[0], key), ElementType.of(spec[1]), _description(spec[2], key)
    )


@dataclass(frozen=True, init=False)
class Contract:
    """The contract of a computation: the axes and data it reads and writes.

    Parameters
    ----------
    name
        The parameter of the computation holding the data set (default: its first
        parameter).
    is_relaxed
        Whether the computation may also access properties the contract does not list
        (e.g. through query parameters).
    axes
        ``{axis: (expectation, description)}`` or a sequence of such pairs.
    data
        ``{key: (expectation, element_type, description)}`` or a sequence of such pairs;
        keys and element types as described in the module's documentation.

    Raises
    ------
    InvalidArgumentError
        The contract is malformed (when it is made, not when it is used): a name that is
        not a string, a key that is no axis name or data key, a specification that is not
        ``(expectation, description)`` / ``(expectation, element_type, description)``, an
        expectation that is no :class:`ContractExpectation`, or an invalid element type.

    Examples
    --------
    >>> contract = dafzarr.Contract(
    ...     axes={"cell": (dafzarr.RequiredInput, "The cells.")},
    ...     data={("cell", "total"): (dafzarr.CreatedOutput, "integer", "Molecules per cell.")})
    >>> print(contract.documentation())
    Inputs
    ------
    Axes
        cell (required)
            The cells.
    <BLANKLINE>
    Outputs
    -------
    Vectors
        cell @ total : integer (created)
            Molecules per cell.
    >>> dafzarr.Contract(data={("cell", "total"): (dafzarr.CreatedOutput, "integer")})
    Traceback (most recent call last):
    ...
    dafzarr.errors.InvalidArgumentError: invalid data specification: ...
    """

    name: str | None
    is_relaxed: bool
    axes: tuple[tuple[str, AxisSpec], ...]
    data: tuple[tuple[str | tuple[str, ...], DataSpec], ...]

    def __init__(
        self, name: str | None = None, is_relaxed: bool = False, axes: Any = None, data: Any = None
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise InvalidArgumentError(f"invalid contract name: {name!r} (a parameter name)")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "is_relaxed", bool(is_relaxed))
        object.__setattr__(self, "axes", tuple(_axis_spec(*p) for p in _pairs(axes, "axes")))
        object.__setattr__(self, "data", tuple(_data_spec(*p) for p in _pairs(data, "data")))

    def __rshift__(self, later: Contract) -> Contract:
        """The contract of running this computation and then ``later`` (Julia's ``|>``;
        ``first >> second`` is ``first.then(second)``).

        What ``later`` reads that this one creates is no input of the combination; an axis
        or property both list must have the same description, compatible expectations and
        overlapping element types (the narrower one is kept).

        Parameters
        ----------
        later : Contract
            The contract of the computation run afterwards.

        Returns
        -------
        Contract
            The combined contract (relaxed if either is).

        Raises
        ------
        DafContractError
            The contracts cannot be combined: ``different description: ...``,
            ``incompatible expectation: ...`` (e.g. ``later`` creates what this one
            creates) or ``incompatible type: ...``.

        Examples
        --------
        >>> cells = (dafzarr.RequiredInput, "The cells.")
        >>> first = dafzarr.Contract(axes={"cell": cells},
        ...     data={("cell", "total"): (dafzarr.CreatedOutput, "real", "Molecules.")})
        >>> second = dafzarr.Contract(axes={"cell": cells},
        ...     data={("cell", "total"): (dafzarr.RequiredInput, "float32", "Molecules.")})
        >>> [(key, str(spec.expectation), str(spec.type)) for key, spec in first.then(second).data]
        [(('cell', 'total'), 'CreatedOutput', 'float32')]
        """
        if not isinstance(later, Contract):
            return NotImplemented
        name = (
            self.name
            if later.name is None
            else (later.name if self.name is None else f"{self.name}_{later.name}")
        )
        return Contract(
            name,
            self.is_relaxed or later.is_relaxed,
            _merged(self.axes, later.axes, "axis"),
            _merged(self.data, later.data, "data"),
        )

    then = __rshift__

    def documentation(self, *, title: str = "") -> str:
        """The ``Inputs`` and ``Outputs`` sections describing the contract, in numpydoc
        style (what :func:`~dafzarr.daf.ops.computation` puts in place of ``{CONTRACT}``).

        Parameters
        ----------
        title : str, default ""
            Added to the section names as ``Inputs (title)`` (the decorator gives the
            parameter's name when a function has several contracts).

        Returns
        -------
        str
            The sections, each listing scalars, axes, vectors, matrices and tensors with
            their element types, expectations and descriptions ("" for an empty contract).

        Raises
        ------
        DafzarrError
            Never: the contract was checked when it was made.

        Examples
        --------
        >>> contract = dafzarr.Contract(
        ...     data={"version": (dafzarr.RequiredInput, int, "Its version.")})
        >>> print(contract.documentation(title="daf"))
        Inputs (daf)
        ------------
        Scalars
            version : int64 (required)
                Its version.
        """
        return _documentation(self, title)


def _merged(
    earlier: tuple[tuple[Any, Any], ...], later: tuple[tuple[Any, Any], ...], what: str
) -> list[tuple[Any, Any]]:
    merged = dict(earlier)
    for key, spec in later:
        first = merged.get(key)
        if first is None:
            merged[key] = spec
            continue
        if first.description != spec.description:
            raise DafContractError(
                f"different description: {spec.description!r}\n"
                f"and description: {first.description!r}\n"
                f"for the contracts {what}: {key}"
            )
        expectation = _merged_expectation(first.expectation, spec.expectation, what, key)
        if what == "axis":
            merged[key] = AxisSpec(expectation, first.description)
        else:
            merged[key] = DataSpec(
                expectation, _narrowed(first.type, spec.type, key), first.description
            )
    return list(merged.items())


def _merged_expectation(
    first: ContractExpectation, then: ContractExpectation, what: str, key: Any
) -> ContractExpectation:
    if then.is_input and first is not OptionalOutput:
        return then if first is OptionalInput else first
    if first is OptionalOutput and then is OptionalInput:
        return first
    raise DafContractError(
        f"incompatible expectation: {first}\nand expectation: {then}\n"
        f"for the contracts {what}: {key}"
    )


def _narrowed(first: ElementType, then: ElementType, key: Any) -> ElementType:
    if first.dtypes <= then.dtypes:
        return first
    if then.dtypes <= first.dtypes:
        return then
    raise DafContractError(
        f"incompatible type: {first}\nand type: {then}\nfor the contracts data: {key}"
    )


def _entry_name(key: Any) -> str:
    if isinstance(key, str):
        return key
    if len(key) == 2:
        return f"{key[0]} @ {key[1]}"
    if len(key) == 3:
        return f"{key[0]}, {key[1]} @ {key[2]}"
    return f"{key[0]}; {key[1]}, {key[2]} @ {key[3]}"


def _documentation(contract: Contract, title: str) -> str:
    suffix = f" ({title})" if title else ""
    sections = []
    for heading, outputs in (("Inputs", False), ("Outputs", True)):
        groups: dict[str, list[str]] = {
            k: [] for k in ("Scalars", "Axes", "Vectors", "Matrices", "Tensors")
        }
        for axis, aspec in contract.axes:
            if aspec.expectation.is_input != outputs:
                groups["Axes"].append(_entry(axis, None, aspec.expectation, aspec.description))
        for key, dspec in contract.data:
            if dspec.expectation.is_input != outputs:
                group = {
                    "scalar": "Scalars",
                    "vector": "Vectors",
                    "matrix": "Matrices",
                    "tensor": "Tensors",
                }[key_kind(key)]
                groups[group].append(
                    _entry(_entry_name(key), dspec.type, dspec.expectation, dspec.description)
                )
        lines = []
        for group, entries in groups.items():
            if entries:
                lines += [group, *entries]
        if contract.is_relaxed:
            lines.append(
                "Additional outputs may be created depending on the parameters."
                if outputs
                else "Additional inputs may be used depending on the parameters."
            )
        if lines:
            name = heading + suffix
            sections.append("\n".join([name, "-" * len(name), *lines]))
    return "\n\n".join(sections)


def _entry(
    name: str, element_type: ElementType | None, expectation: ContractExpectation, description: str
) -> str:
    typed = f"{name} : {element_type}" if element_type is not None else name
    text = inspect.cleandoc(description).replace("\n", "\n        ")
    return f"    {typed} ({expectation.label})\n        {text}"
