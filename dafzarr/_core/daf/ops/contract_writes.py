"""The writer API of a :class:`~dafzarr.daf.ops.ContractDaf` for scalars, axes and vectors:
every write is a contract access, refused for what the contract does not list and for its
inputs (``modifying RequiredInput ...``), and marked used."""

from __future__ import annotations

from typing import Any, Self

from .contract import key_kind
from .contract_access import ContractAccess

__all__ = ["ContractWrites"]


class ContractWrites(ContractAccess):
    """Writing the scalars, axes and vectors of a data set through its contract."""

    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> Self:
        """Store a scalar (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        name : str
            The scalar's name.
        value : bool, int, float, str or numpy scalar
            Its value.
        overwrite : bool, default False
            Whether an existing scalar is replaced.

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the scalar (and is not relaxed), or lists it as an
            input (``modifying RequiredInput scalar: ...``).
        DafExistsError
            The scalar exists and ``overwrite`` is false.
        DafReadOnlyError
            The wrapped data set is read-only.
        InvalidArgumentTypeError
            The value is of no scalar type of Daf.

        Examples
        --------
        >>> contract = dafzarr.Contract(
        ...     data={"version": (dafzarr.CreatedOutput, "integer", "The version.")})
        >>> daf = dafzarr.memory_daf(name="cells")
        >>> _ = dafzarr.contractor("example", contract, daf).set_scalar("version", 3)
        >>> int(daf.get_scalar("version"))
        3
        """
        self._scalar_access(name, True)
        self._daf.set_scalar(name, value, overwrite=overwrite)
        return self

    def delete_scalar(self, name: str, *, must_exist: bool = True) -> Self:
        """Delete a scalar (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        name : str
            The scalar's name.
        must_exist : bool, default True
            Whether a missing scalar is an error (else nothing happens).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the scalar (and is not relaxed), or lists it as an
            input.
        DafMissingError
            The scalar is missing and ``must_exist`` is true.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(
        ...     data={"version": (dafzarr.OptionalOutput, "integer", "The version.")})
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> _ = dafzarr.contractor("example", contract, daf).delete_scalar("version")
        >>> daf.has_scalar("version")
        False
        """
        self._scalar_access(name, True)
        self._daf.delete_scalar(name, must_exist=must_exist)
        return self

    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> Self:
        """Create an axis (a contract access: an output of the contract, marked used); the
        tensors of the contract along it are expanded to its entries.

        Parameters
        ----------
        axis : str
            The axis' name.
        entries : sequence of str
            Its unique entry names, in order.
        overwrite : bool, default False
            Whether an existing axis is replaced (with every property along it deleted).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the axis (and is not relaxed), or lists it as an
            input (``modifying RequiredInput axis: ...``).
        DafExistsError
            The axis exists and ``overwrite`` is false.
        DafReadOnlyError
            The wrapped data set is read-only.
        DafFormatError
            The entries are not unique.
        InvalidArgumentTypeError
            The entries are not strings.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"type": (dafzarr.CreatedOutput, "The types.")})
        >>> daf = dafzarr.memory_daf(name="cells")
        >>> _ = dafzarr.contractor("example", contract, daf).add_axis("type", ["B", "T"])
        >>> daf.axis_np_entries("type").tolist()
        ['B', 'T']
        """
        self._axis_access(axis, True)
        self._daf.add_axis(axis, entries, overwrite=overwrite)
        for key in [k for k in self._data if key_kind(k) == "tensor" and axis in k[:3]]:
            if all(self._daf.has_axis(a) for a in key[:3]):
                self._expand(key)
        return self

    def delete_axis(self, axis: str, *, must_exist: bool = True) -> Self:
        """Delete an axis and every property along it (a contract access: an output of the
        contract, marked used).

        Parameters
        ----------
        axis : str
            The axis' name.
        must_exist : bool, default True
            Whether a missing axis is an error (else nothing happens).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the axis (and is not relaxed), or lists it as an
            input.
        DafMissingError
            The axis is missing and ``must_exist`` is true.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"type": (dafzarr.OptionalOutput, "The types.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("type", ["B", "T"])
        >>> _ = dafzarr.contractor("example", contract, daf).delete_axis("type")
        >>> daf.has_axis("type")
        False
        """
        self._axis_access(axis, True)
        self._daf.delete_axis(axis, must_exist=must_exist)
        return self

    def set_vector(
        self, axis: str, name: str, value: Any, *, overwrite: bool = False, **options: Any
    ) -> Self:
        """Store a vector (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        value : array-like or scipy sparse
            One value per entry of the axis.
        overwrite : bool, default False
            Whether an existing vector is replaced.
        **options
            Passed on to the wrapped data set's ``set_vector`` (e.g. ``indtype``).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector (and is not relaxed), or lists
            the vector as an input (``modifying RequiredInput vector: ...``).
        DafExistsError
            The vector exists and ``overwrite`` is false.
        DafMissingError
            The axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.
        InvalidArgumentError
            The value's length is not the axis' length.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.CreatedOutput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = dafzarr.contractor("example", contract, daf).set_vector("cell", "age", [1, 2])
        >>> daf.get_np_vector("cell", "age").tolist()
        [1, 2]
        """
        self._vector_access(axis, name, True)
        self._daf.set_vector(axis, name, value, overwrite=overwrite, **options)
        return self

    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> Self:
        """Delete a vector (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        must_exist : bool, default True
            Whether a missing vector is an error (else nothing happens).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector (and is not relaxed), or lists
            the vector as an input.
        DafMissingError
            The axis is missing, or the vector is and ``must_exist`` is true.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.RequiredInput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", contract, daf.set_vector("cell", "age", [1, 2]))
        >>> cells.delete_vector("cell", "age")
        Traceback (most recent call last):
        ...
        dafzarr.errors.DafContractError: modifying RequiredInput vector: age
        ...
        """
        self._vector_access(axis, name, True)
        self._daf.delete_vector(axis, name, must_exist=must_exist)
        return self

    def empty_dense_vector(self, axis: str, name: str, eltype: Any, **options: Any) -> Any:
        """A context manager giving a new dense vector to fill in place, stored when the
        block ends (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        eltype : numpy dtype or type
            Its element type (a number type of Daf).
        **options
            Passed on to the wrapped data set (e.g. ``overwrite``).

        Returns
        -------
        contextlib.AbstractContextManager
            Yields the uninitialized ``numpy.ndarray`` of the axis' length.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector (and is not relaxed), or lists
            the vector as an input.
        DafExistsError
            The vector exists (without ``overwrite=True``).
        DafMissingError
            The axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.CreatedOutput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> with dafzarr.contractor("example", contract, daf).empty_dense_vector(
        ...         "cell", "age", np.int32) as ages:
        ...     ages[:] = [1, 2]
        >>> daf.get_np_vector("cell", "age").tolist()
        [1, 2]
        """
        self._vector_access(axis, name, True)
        return self._daf.empty_dense_vector(axis, name, eltype, **options)

    def empty_sparse_vector(
        self, axis: str, name: str, eltype: Any, nnz: int, *args: Any, **options: Any
    ) -> Any:
        """A context manager giving the arrays of a new sparse vector to fill in place,
        stored when the block ends (a contract access: an output of the contract, marked
        used).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        eltype : numpy dtype or type
            Its element type (a number type of Daf).
        nnz : int
            The number of stored values.
        *args
            Passed on to the wrapped data set (its ``indtype``, the index type).
        **options
            Passed on to the wrapped data set (e.g. ``overwrite``).

        Returns
        -------
        contextlib.AbstractContextManager
            Yields ``(indices, values)``: the 1-based positions (increasing, as in
            DataAxesFormats.jl) and the values of the stored elements, ``nnz`` each.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector (and is not relaxed), or lists
            the vector as an input.
        DafExistsError
            The vector exists (without ``overwrite=True``).
        DafMissingError
            The axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.CreatedOutput, "integer", "Their ages.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B", "C"])
        >>> with dafzarr.contractor("example", contract, daf).empty_sparse_vector(
        ...         "cell", "age", np.int32, 1) as (indices, values):
        ...     indices[:], values[:] = [2], [7]
        >>> daf.get_np_vector("cell", "age").tolist()
        [0, 7, 0]
        """
        self._vector_access(axis, name, True)
        return self._daf.empty_sparse_vector(axis, name, eltype, nnz, *args, **options)
