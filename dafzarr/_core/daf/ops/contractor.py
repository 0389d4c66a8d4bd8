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

from typing import Any

from ....errors import DafContractError, InvalidArgumentTypeError
from ..names import join_path
from ..zarrdaf import ZarrDaf
from .contract import (
    Contract,
    CreatedOutput,
    RequiredInput,
    check_daf,
    dtype_name,
    key_kind,
    value_type_name,
)
from .contract_access import Tracker
from .contract_matrices import ContractMatrices
from .contract_reads import ContractReads
from .contract_writes import ContractWrites

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


class ContractDaf(ContractMatrices, ContractWrites, ContractReads):
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

    # --- Verification --------------------------------------------------------------------------

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
