"""A data set that holds a computation to its :class:`~dafzarr.daf.ops.Contract`.

:func:`contractor` wraps a data set in a :class:`ContractDaf`, which answers the reader and
writer API of the data set it wraps (and Daf queries, which read through it) while checking
every access against the contract, as DataAxesFormats.jl's ``ContractDaf`` does:

* reading or writing an axis or property the contract does not list is refused
  (``accessing non-contract vector: ...``), unless the contract is relaxed; the ``name`` and
  ``index`` vectors of a listed axis are always readable. Existence checks and listings
  (``has_vector``, ``vectors_set``, ...) are always allowed;
* writing (or deleting) an input is refused (``modifying RequiredInput vector: ...``);
* every read and write marks the property used. A query marks what it reads (its evaluation
  reads through the wrapper); a query answered from the wrapper's own result cache reads
  nothing again, which is fine, as its first evaluation marked its properties.

:meth:`ContractDaf.verify_input` (before the computation) checks that each required input
exists, that no created output pre-exists (without ``overwrite``) and that every listed
property that exists has one of the contract's element types; :meth:`ContractDaf.verify_output`
(after) checks the outputs the same way, that each created output exists, and that each
required input that exists was used (one never read should be optional). The element types
of stored properties are read from their metadata, without decoding their data.

A tensor key (``(main_axis, rows_axis, columns_axis, name)``) stands for the matrices
``"<entry>_<name>"`` of each entry of ``main_axis``, expanded when that axis exists (when the
wrapper is made, or when the computation creates the axis through it).

Unlike DataAxesFormats.jl, ``axis_dict`` counts as a read of its axis (as every other read
of the entries does), and the messages about matrices always say ``of the rows axis`` /
``and the columns axis``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from ....errors import DafContractError, InvalidArgumentTypeError
from ..interface import DafReader, DafWriter
from ..names import join_path, unique_name
from ..queries import Queries
from ..query.cache import QueryCache
from ..reader import pd_matrix, pd_vector
from ..storage import UNDEF
from ..zarrdaf import ZarrDaf
from .contract import (
    Contract,
    ContractExpectation,
    CreatedOutput,
    ElementType,
    GuaranteedOutput,
    OptionalInput,
    OptionalOutput,
    RequiredInput,
    check_daf,
    dtype_name,
    key_kind,
    value_type_name,
)
from .contract_docs import contract_listing, contract_read, contract_write, describe_wrapped

__all__ = ["ContractDaf", "contractor"]


def contractor(
    computation: str,
    contract: Contract,
    daf: Any,
    *,
    name: str | None = None,
    overwrite: bool = False,
) -> ContractDaf:
    """Wrap ``daf`` so that ``computation`` is held to ``contract``.

    Making the wrapper checks that the axes of each vector, matrix and tensor are listed with
    a compatible expectation (else ``non-contract axis: ...`` or
    ``incompatible ... axis: ...``, a :class:`~dafzarr.errors.DafContractError`). Unlike
    DataAxesFormats.jl's ``contractor``, it always wraps: ``DAFZARR_ENFORCE_CONTRACTS=0``
    only makes :func:`~dafzarr.daf.ops.computation` skip the wrapper.

    Parameters
    ----------
    computation : str
        The computation's name, for the messages.
    contract : Contract
        Its :class:`~dafzarr.daf.ops.Contract`.
    daf : ZarrDaf, view, chain or ContractDaf
        The data set (a :class:`~dafzarr.ZarrDaf`, view, chain, or another wrapper).
    name : str, optional
        The base of the wrapper's name (default: the data set's name); the wrapper is named
        ``<name>.for.<computation>``.
    overwrite : bool, default False
        Whether created outputs may exist before (the computation overwrites them).

    Returns
    -------
    ContractDaf
        The wrapper; pass it to the computation, and call its
        :meth:`~ContractDaf.verify_input` before and :meth:`~ContractDaf.verify_output` after
        (the :func:`~dafzarr.daf.ops.computation` decorator does all three).

    Raises
    ------
    InvalidArgumentTypeError
        ``contract`` is not a :class:`~dafzarr.daf.ops.Contract`, or ``daf`` is not a Daf
        data set.
    DafContractError
        A vector, matrix or tensor of the contract lies on an axis the contract does not
        list, or lists with an incompatible expectation (e.g. a required input vector on a
        created axis).

    Examples
    --------
    >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
    ...     data={("cell", "age"): (dafzarr.CreatedOutput, "integer", "Their ages.")})
    >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
    >>> cells = dafzarr.contractor("example", contract, daf)
    >>> cells.verify_input()
    >>> _ = cells.set_vector("cell", "age", np.array([3, 5]))
    >>> cells.verify_output()
    >>> daf.get_np_vector("cell", "age").tolist()
    [3, 5]
    """
    if not isinstance(contract, Contract):
        raise InvalidArgumentTypeError(
            f"not a Contract: {contract!r}\nfor the computation: {computation}"
        )
    check_daf(daf, f"for the computation: {computation}")
    return ContractDaf(computation, contract, daf, name=name, overwrite=overwrite)


@dataclass
class Tracker:
    """The contract's expectation of one axis or property, and whether it was used."""

    expectation: ContractExpectation
    type: ElementType | None = None
    accessed: bool = False
    main_axis: str | None = None


def _compatible_axis(data: ContractExpectation, axis: ContractExpectation) -> bool:
    """Whether a property of expectation ``data`` may lie on an axis of expectation ``axis``."""
    if data in (OptionalInput, OptionalOutput):
        return True
    if data is RequiredInput:
        return axis is RequiredInput
    return axis in (RequiredInput, CreatedOutput, GuaranteedOutput)


class ContractDaf(Queries):
    """A data set seen by a computation through its contract (made by :func:`contractor`).

    It has the reader and writer methods of the data set it wraps (and Daf queries, which
    read through it): existence checks and listings are always allowed; every other read or
    write is checked against the contract and marks the axis or property used.

    Parameters
    ----------
    computation : str
        The computation's name, for the messages.
    contract : Contract
        Its contract.
    daf : ZarrDaf, view, chain or ContractDaf
        The wrapped data set.
    name : str, optional
        The base of the wrapper's name (default: the data set's name); the wrapper is
        named ``<name>.for.<computation>``.
    overwrite : bool, default False
        Whether created outputs may exist before the computation.

    Raises
    ------
    DafContractError
        A vector, matrix or tensor of the contract lies on an axis the contract does not
        list (``non-contract axis: ...``), or on an axis whose expectation does not allow it
        (``incompatible ... axis: ...``).

    Examples
    --------
    >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")})
    >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
    >>> cells = dafzarr.contractor("example", contract, daf)
    >>> cells.computation, cells.axis_length("cell")
    ('example', 2)
    >>> cells.get_np_vector("cell", "age")
    Traceback (most recent call last):
    ...
    dafzarr.errors.DafContractError: accessing non-contract vector: age
    ...
    """

    def __init__(
        self,
        computation: str,
        contract: Contract,
        daf: Any,
        *,
        name: str | None = None,
        overwrite: bool = False,
    ) -> None:
        self._daf = daf
        self._computation = computation
        self._relaxed = contract.is_relaxed
        self._overwrite = bool(overwrite)
        base = daf.name if name is None else name
        self._name = unique_name(f"{base}.for.{computation.split('.')[-1]}")
        self._query_cache = QueryCache()
        self._axes = {axis: Tracker(spec.expectation) for axis, spec in contract.axes}
        self._data: dict[Any, Tracker] = {}
        for key, dspec in contract.data:
            self._data[key] = Tracker(dspec.expectation, dspec.type)
            self._check_axes(key, dspec.expectation)
        for key in [k for k in self._data if key_kind(k) == "tensor"]:
            if daf.has_axis(key[0]):
                self._expand(key)

    # --- Identity -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The wrapper's name: ``<data set>.for.<computation>``."""
        return self._name

    @property
    def daf(self) -> Any:
        """The wrapped data set."""
        return self._daf

    @property
    def computation(self) -> str:
        """The computation's name."""
        return self._computation

    @property
    def read_only(self) -> bool:
        """Whether the wrapped data set's writers raise."""
        return bool(getattr(self._daf, "read_only", True))

    def __repr__(self) -> str:
        return f"Contract {type(self._daf).__name__} {self._name}"

    def _data_version(self) -> Any:
        return self._daf._data_version()

    # --- Checks of the contract ---------------------------------------------------------------

    def _where(self) -> str:
        return f"for the computation: {self._computation}\non the daf data: {self._daf.name}"

    def _check_axes(self, key: Any, expectation: ContractExpectation) -> None:
        kind = key_kind(key)
        if kind == "scalar":
            return
        what = f"{expectation} {kind}: {key[-1]}"
        if kind == "vector":
            needs = [(key[0], f"for the {what}")]
        elif kind == "matrix":
            needs = [
                (key[0], f"for the rows of the {what}\nwith the columns axis: {key[1]}"),
                (key[1], f"for the columns of the {what}\nwith the rows axis: {key[0]}"),
            ]
        else:
            main = f"{what}\nwith the rows axis: {key[1]}\nand the columns axis: {key[2]}"
            rows = f"{what}\nwith the main axis: {key[0]}\nand the columns axis: {key[2]}"
            columns = f"{what}\nwith the main axis: {key[0]}\nand the rows axis: {key[1]}"
            needs = [
                (key[0], f"for the main of the {main}"),
                (key[1], f"for the rows of the {rows}"),
                (key[2], f"for the columns of the {columns}"),
            ]
        for axis, what_for in needs:
            tracker = self._axes.get(axis)
            if tracker is None:
                raise DafContractError(f"non-contract axis: {axis}\n{what_for}\n{self._where()}")
            if not _compatible_axis(expectation, tracker.expectation):
                raise DafContractError(
                    f"incompatible {tracker.expectation} axis: {axis}\n{what_for}\n{self._where()}"
                )

    def _expand(self, key: tuple[str, ...]) -> None:
        """Replace a tensor key by the matrix keys of its main axis' entries."""
        main, rows, columns, name = key
        tracker = self._data.pop(key)
        tracker.main_axis = main
        for entry in self._daf.axis_np_entries(main):
            self._data[(rows, columns, f"{entry}_{name}")] = tracker

    def _refuse(self, tracker: Tracker | None, modify: bool, what: str) -> bool:
        """Whether the access is allowed untracked (relaxed); raise if it is not allowed."""
        if tracker is None:
            if self._relaxed:
                return True
            raise DafContractError(f"accessing non-contract {what}\n{self._where()}")
        if modify and tracker.expectation.is_input:
            raise DafContractError(f"modifying {tracker.expectation} {what}\n{self._where()}")
        tracker.accessed = True
        return False

    def _scalar_access(self, name: str, modify: bool = False) -> None:
        self._refuse(self._data.get(name), modify, f"scalar: {name}")

    def _axis_access(self, axis: str, modify: bool = False) -> None:
        self._refuse(self._axes.get(axis), modify, f"axis: {axis}")

    def _vector_access(self, axis: str, name: str, modify: bool = False) -> None:
        self._axis_access(axis)
        tracker = self._data.get((axis, name))
        if tracker is None and name in ("name", "index"):
            return
        self._refuse(tracker, modify, f"vector: {name}\nof the axis: {axis}")

    def _matrix_access(
        self, rows_axis: str, columns_axis: str, name: str, modify: bool = False
    ) -> None:
        self._axis_access(rows_axis)
        self._axis_access(columns_axis)
        tracker = self._data.get((rows_axis, columns_axis, name))
        if tracker is None:
            tracker = self._data.get((columns_axis, rows_axis, name))
        what = (
            f"matrix: {name}\nof the rows axis: {rows_axis}\nand the columns axis: {columns_axis}"
        )
        if (
            not self._refuse(tracker, modify, what)
            and tracker is not None
            and tracker.main_axis is not None
        ):
            self._axis_access(tracker.main_axis)

    # --- Scalars, axes and vectors: reads -----------------------------------------------------

    @describe_wrapped(DafReader.description)
    def description(self) -> str:
        return str(self._daf.description())

    describe = description

    @contract_listing(DafReader.has_scalar)
    def has_scalar(self, name: str) -> bool:
        return bool(self._daf.has_scalar(name))

    @contract_listing(DafReader.scalars_set)
    def scalars_set(self) -> set[str]:
        return set(self._daf.scalars_set())

    @contract_read(DafReader.get_scalar)
    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        self._scalar_access(name)
        return self._daf.get_scalar(name, default=default)

    @contract_listing(DafReader.has_axis)
    def has_axis(self, axis: str) -> bool:
        return bool(self._daf.has_axis(axis))

    @contract_listing(DafReader.axes_set)
    def axes_set(self) -> set[str]:
        return set(self._daf.axes_set())

    @contract_read(DafReader.axis_length)
    def axis_length(self, axis: str) -> int:
        self._axis_access(axis)
        return int(self._daf.axis_length(axis))

    @contract_read(DafReader.axis_np_entries)
    def axis_np_entries(self, axis: str) -> Any:
        self._axis_access(axis)
        return self._daf.axis_np_entries(axis)

    axis_np_vector = axis_np_entries

    @contract_read(DafWriter.axis_dict)
    def axis_dict(self, axis: str) -> dict[str, int]:
        return {str(n): i for i, n in enumerate(self.axis_np_entries(axis))}

    @contract_read(DafWriter.axis_np_indices)
    def axis_np_indices(
        self, axis: str, names: Any, *, allow_empty: bool = False, allow_missing: bool = False
    ) -> Any:
        self._axis_access(axis)
        return self._daf.axis_np_indices(
            axis, names, allow_empty=allow_empty, allow_missing=allow_missing
        )

    @contract_listing(DafReader.has_vector)
    def has_vector(self, axis: str, name: str) -> bool:
        return bool(self._daf.has_vector(axis, name))

    @contract_listing(DafReader.vectors_set)
    def vectors_set(self, axis: str) -> set[str]:
        return set(self._daf.vectors_set(axis))

    @contract_read(DafReader.get_np_vector)
    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        self._vector_access(axis, name)
        return self._daf.get_np_vector(axis, name, default=default)

    @contract_read(DafWriter.get_pd_vector)
    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        values = self.get_np_vector(axis, name, default=default)
        return pd_vector(values, self._daf.axis_np_entries(axis), axis, name)

    # --- Scalars, axes and vectors: writes ----------------------------------------------------

    @contract_write(DafWriter.set_scalar)
    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> Self:
        self._scalar_access(name, True)
        self._daf.set_scalar(name, value, overwrite=overwrite)
        return self

    @contract_write(DafWriter.delete_scalar)
    def delete_scalar(self, name: str, *, must_exist: bool = True) -> Self:
        self._scalar_access(name, True)
        self._daf.delete_scalar(name, must_exist=must_exist)
        return self

    @contract_write(DafWriter.add_axis, expands=True)
    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> Self:
        self._axis_access(axis, True)
        self._daf.add_axis(axis, entries, overwrite=overwrite)
        for key in [k for k in self._data if key_kind(k) == "tensor" and axis in k[:3]]:
            if all(self._daf.has_axis(a) for a in key[:3]):
                self._expand(key)
        return self

    @contract_write(DafWriter.delete_axis)
    def delete_axis(self, axis: str, *, must_exist: bool = True) -> Self:
        self._axis_access(axis, True)
        self._daf.delete_axis(axis, must_exist=must_exist)
        return self

    @contract_write(DafWriter.set_vector)
    def set_vector(
        self,
        axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        indtype: Any = None,
    ) -> Self:
        self._vector_access(axis, name, True)
        self._daf.set_vector(axis, name, value, overwrite=overwrite, indtype=indtype)
        return self

    @contract_write(DafWriter.delete_vector)
    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> Self:
        self._vector_access(axis, name, True)
        self._daf.delete_vector(axis, name, must_exist=must_exist)
        return self

    @contract_write(DafWriter.empty_dense_vector)
    def empty_dense_vector(
        self, axis: str, name: str, eltype: Any, *, overwrite: bool = False
    ) -> Any:
        self._vector_access(axis, name, True)
        return self._daf.empty_dense_vector(axis, name, eltype, overwrite=overwrite)

    @contract_write(DafWriter.empty_sparse_vector)
    def empty_sparse_vector(
        self,
        axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        indtype: Any = None,
        *,
        overwrite: bool = False,
    ) -> Any:
        self._vector_access(axis, name, True)
        return self._daf.empty_sparse_vector(axis, name, eltype, nnz, indtype, overwrite=overwrite)

    # --- Matrices -----------------------------------------------------------------------------

    @contract_listing(DafReader.has_matrix)
    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        return bool(self._daf.has_matrix(rows_axis, columns_axis, name, relayout=relayout))

    @contract_listing(DafReader.matrices_set)
    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        return set(self._daf.matrices_set(rows_axis, columns_axis, relayout=relayout))

    @contract_read(DafReader.get_np_matrix)
    def get_np_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
        sparse_class: str = "csc_matrix",
    ) -> Any:
        self._matrix_access(rows_axis, columns_axis, name)
        return self._daf.get_np_matrix(
            rows_axis,
            columns_axis,
            name,
            default=default,
            relayout=relayout,
            sparse_class=sparse_class,
        )

    @contract_read(DafWriter.get_pd_matrix)
    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        m = self.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
        return pd_matrix(
            m,
            self._daf.axis_np_entries(rows_axis),
            rows_axis,
            self._daf.axis_np_entries(columns_axis),
            columns_axis,
        )

    @contract_write(DafWriter.set_matrix)
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
    ) -> Self:
        self._matrix_access(rows_axis, columns_axis, name, True)
        self._daf.set_matrix(
            rows_axis,
            columns_axis,
            name,
            value,
            overwrite=overwrite,
            relayout=relayout,
            indtype=indtype,
        )
        return self

    @contract_write(DafWriter.relayout_matrix, other_layout=True)
    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> Self:
        self._matrix_access(columns_axis, rows_axis, name, True)
        self._daf.relayout_matrix(rows_axis, columns_axis, name, overwrite=overwrite)
        return self

    @contract_write(DafWriter.delete_matrix)
    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> Self:
        self._matrix_access(rows_axis, columns_axis, name, True)
        self._daf.delete_matrix(
            rows_axis, columns_axis, name, must_exist=must_exist, relayout=relayout
        )
        return self

    @contract_write(DafWriter.empty_dense_matrix)
    def empty_dense_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        *,
        overwrite: bool = False,
    ) -> Any:
        self._matrix_access(rows_axis, columns_axis, name, True)
        return self._daf.empty_dense_matrix(
            rows_axis, columns_axis, name, eltype, overwrite=overwrite
        )

    @contract_write(DafWriter.empty_sparse_matrix)
    def empty_sparse_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        indtype: Any = None,
        *,
        overwrite: bool = False,
    ) -> Any:
        self._matrix_access(rows_axis, columns_axis, name, True)
        return self._daf.empty_sparse_matrix(
            rows_axis, columns_axis, name, eltype, nnz, indtype, overwrite=overwrite
        )

    # --- Verification -------------------------------------------------------------------------

    def verify_input(self) -> None:
        """Check the data set before the computation: the required inputs exist, the created
        outputs do not (unless the wrapper was made with ``overwrite``), and every listed
        property that exists has one of the contract's element types (read from the
        metadata, without decoding data).

        Raises
        ------
        DafContractError
            ``missing input ...`` (a required input is missing), ``pre-existing
            CreatedOutput ...`` or ``unexpected type: ...`` (a listed property has another
            element type).

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.RequiredInput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> dafzarr.contractor("example", contract, daf).verify_input()
        Traceback (most recent call last):
        ...
        dafzarr.errors.DafContractError: missing input vector: age
        ...
        """
        self._verify(False)

    def verify_output(self) -> None:
        """Check the data set after the computation: the created outputs exist, every listed
        property that exists has one of the contract's element types, and every required
        input that exists was used (read through this wrapper).

        Raises
        ------
        DafContractError
            ``missing output ...`` (a created output was not written), ``unexpected type:
            ...`` or ``unused RequiredInput ...`` (a required input was never read: it
            should be optional).

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.CreatedOutput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", contract, daf)
        >>> cells.verify_input()
        >>> _ = cells.set_vector("cell", "age", [1, 2])
        >>> cells.verify_output()
        """
        self._verify(True)

    def _verify(self, output: bool) -> None:
        direction = "output" if output else "input"
        for axis, tracker in self._axes.items():
            self._verify_one(
                tracker, self._daf.has_axis(axis), None, output, f"axis: {axis}", "", direction
            )
        stored = {key: self._stored_type(key) for key in self._data if key_kind(key) != "tensor"}
        for key, found in stored.items():
            tracker = self._data[key]
            kind = key_kind(key)
            what, where = _what(key)
            typed = (
                f"\nwith type: {tracker.type}"
                if kind == "scalar"
                else f"\nwith element type: {tracker.type}"
            )
            self._verify_one(
                tracker, found is not None, found, output, what + where, typed, direction
            )
        if not output:
            return
        for key, found in stored.items():
            tracker = self._data[key]
            if tracker.expectation is RequiredInput and not tracker.accessed and found is not None:
                what, where = _what(key)
                raise DafContractError(
                    f"unused RequiredInput {what}{where}\nof the computation:"
                    f" {self._computation}\non the daf data: {self._daf.name}"
                )
        for axis, tracker in self._axes.items():
            if (
                tracker.expectation is RequiredInput
                and not tracker.accessed
                and self._daf.has_axis(axis)
            ):
                raise DafContractError(
                    f"unused RequiredInput axis: {axis}\nof the computation: "
                    f"{self._computation}\non the daf data: {self._daf.name}"
                )

    def _verify_one(
        self,
        tracker: Tracker,
        exists: bool,
        found: str | None,
        output: bool,
        what: str,
        typed: str,
        direction: str,
    ) -> None:
        if not exists:
            mandatory = tracker.expectation is (CreatedOutput if output else RequiredInput)
            if mandatory:
                head, _, rest = what.partition("\n")
                rest = f"\n{rest}" if rest else ""
                raise DafContractError(f"missing {direction} {head}{rest}{typed}\n{self._where()}")
            return
        if not output and tracker.expectation is CreatedOutput and not self._overwrite:
            raise DafContractError(f"pre-existing CreatedOutput {what}\n{self._where()}")
        if tracker.type is not None and found is not None and not tracker.type.admits(found):
            raise DafContractError(
                f"unexpected type: {found}\ninstead of type: {tracker.type}\n"
                f"for the {direction} {what}\n{self._where()}"
            )

    def _stored_type(self, key: Any) -> str | None:
        """The element type of a property that exists, else ``None`` (from the metadata of
        a ZarrDaf, so that nothing is decoded)."""
        daf = self._daf
        kind = key_kind(key)
        if kind == "scalar":
            if not daf.has_scalar(key):
                return None
            if isinstance(daf, ZarrDaf):
                return _metadata_type(daf, join_path("scalars", key))
            return value_type_name(daf.get_scalar(key))
        if not all(daf.has_axis(a) for a in key[:-1]):
            return None
        if kind == "vector":
            if not daf.has_vector(*key):
                return None
            if isinstance(daf, ZarrDaf) and key[1] not in ("name", "index"):
                return _metadata_type(daf, join_path("vectors", *key))
            return dtype_name(daf.get_np_vector(*key).dtype)
        rows, columns, name = key
        if not daf.has_matrix(rows, columns, name, relayout=False):
            if not daf.has_matrix(rows, columns, name):
                return None
            rows, columns = columns, rows
        if isinstance(daf, ZarrDaf):
            return _metadata_type(daf, join_path("matrices", rows, columns, name))
        return dtype_name(daf.get_np_matrix(rows, columns, name, relayout=False).dtype)


def _what(key: Any) -> tuple[str, str]:
    """``("vector: age", "\\nof the axis: cell")`` for the messages about a key."""
    kind = key_kind(key)
    if kind == "scalar":
        return f"scalar: {key}", ""
    if kind == "vector":
        return f"vector: {key[1]}", f"\nof the axis: {key[0]}"
    return f"matrix: {key[2]}", f"\nof the rows axis: {key[0]}\nand the columns axis: {key[1]}"


def _metadata_type(daf: ZarrDaf, path: str) -> str:
    """The element type of a stored vector or matrix, from its metadata."""
    stored = str(daf._property(path)["dtype"])
    try:
        return dtype_name(stored)
    except TypeError:
        return stored
