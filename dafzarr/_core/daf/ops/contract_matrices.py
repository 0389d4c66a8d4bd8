"""The matrices of a :class:`~dafzarr.daf.ops.ContractDaf`: existence checks and listings are
always allowed; every read and write is a contract access (a matrix listed for one layout
covers the other; writing an input is refused), and marks the matrix used."""

from __future__ import annotations

from typing import Any, Self

from ..reader import pd_matrix
from ..storage import UNDEF
from .contract_access import ContractAccess

__all__ = ["ContractMatrices"]


class ContractMatrices(ContractAccess):
    """Reading and writing the matrices of a data set through its contract."""

    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        """Whether the matrix exists (always allowed, not a contract access).

        Parameters
        ----------
        rows_axis : str
            The matrix' rows axis.
        columns_axis : str
            Its columns axis.
        name : str
            Its name.
        relayout : bool, default True
            Whether a matrix stored only in the other layout counts.

        Returns
        -------
        bool
            Whether the wrapped data set has the matrix.

        Raises
        ------
        DafMissingError
            Either axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]],
        ...                                            relayout=False)
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> cells.has_matrix("gene", "cell", "UMIs"), cells.has_matrix(
        ...     "gene", "cell", "UMIs", relayout=False)
        (True, False)
        """
        return bool(self._daf.has_matrix(rows_axis, columns_axis, name, relayout=relayout))

    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        """The names of the matrices of an axis pair (always allowed, not a contract access).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        relayout : bool, default True
            Whether matrices stored only in the other layout are listed.

        Returns
        -------
        set of str
            The names, listed in the contract or not.

        Raises
        ------
        DafMissingError
            Either axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> dafzarr.contractor("example", dafzarr.Contract(), daf).matrices_set("gene", "cell")
        {'UMIs'}
        """
        return set(self._daf.matrices_set(rows_axis, columns_axis, relayout=relayout))

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
        """The ``rows_axis x columns_axis`` matrix (a contract access: both axes and the
        matrix are marked used).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
        default : optional
            The value of every element when the matrix is missing (default: raise).
        relayout : bool, default True
            Whether a matrix stored only in the other layout is read transposed.
        sparse_class : str, default "csc_matrix"
            The scipy class of a sparse matrix (``"csc_array"`` for the array API).

        Returns
        -------
        numpy.ndarray or scipy.sparse matrix
            A column-major dense array, or a CSC sparse matrix.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (``accessing non-contract
            matrix: ...``) and is not relaxed.
        DafMissingError
            An axis, or the matrix (without ``default``), is missing.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.RequiredInput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> dafzarr.contractor("example", contract, daf).get_np_matrix(
        ...     "gene", "cell", "UMIs").tolist()
        [[1, 2]]
        """
        self._matrix_access(rows_axis, columns_axis, name)
        return self._daf.get_np_matrix(
            rows_axis,
            columns_axis,
            name,
            default=default,
            relayout=relayout,
            sparse_class=sparse_class,
        )

    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        """The matrix as a ``pandas.DataFrame`` indexed by the rows axis' entries, with the
        columns axis' entries as columns (a contract access, as :meth:`get_np_matrix`).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
        default : optional
            The value of every element when the matrix is missing (default: raise).
        relayout : bool, default True
            Whether a matrix stored only in the other layout is read transposed.

        Returns
        -------
        pandas.DataFrame
            The matrix with its entries as labels (sparse matrices are made dense).

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix and is not relaxed.
        DafMissingError
            An axis, or the matrix (without ``default``), is missing.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.RequiredInput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> dafzarr.contractor("example", contract, daf).get_pd_matrix(
        ...     "cell", "gene", "UMIs").to_dict()
        {'X': {'A': 1, 'B': 2}}
        """
        m = self.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
        return pd_matrix(
            m,
            self._daf.axis_np_entries(rows_axis),
            rows_axis,
            self._daf.axis_np_entries(columns_axis),
            columns_axis,
        )

    def set_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        **options: Any,
    ) -> Self:
        """Store a matrix (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
        value : array-like or scipy sparse
            A ``rows_axis x columns_axis`` matrix.
        overwrite : bool, default False
            Whether an existing matrix is replaced.
        **options
            Passed on to the wrapped data set's ``set_matrix`` (e.g. ``relayout``).

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (and is not relaxed), or lists
            the matrix as an input (``modifying RequiredInput matrix: ...``).
        DafExistsError
            The matrix exists and ``overwrite`` is false.
        DafMissingError
            An axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.
        InvalidArgumentError
            The value's shape is not the axes' lengths.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.CreatedOutput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"]).add_axis(
        ...     "gene", ["X"])
        >>> _ = dafzarr.contractor("example", contract, daf).set_matrix(
        ...     "cell", "gene", "UMIs", [[1], [2]])
        >>> daf.get_np_matrix("cell", "gene", "UMIs").tolist()
        [[1], [2]]
        """
        self._matrix_access(rows_axis, columns_axis, name, True)
        self._daf.set_matrix(rows_axis, columns_axis, name, value, overwrite=overwrite, **options)
        return self

    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> Self:
        """Store the other layout of a matrix: the ``columns_axis x rows_axis`` matrix (a
        contract access: that matrix is an output of the contract, marked used).

        Parameters
        ----------
        rows_axis : str
            The rows axis of the stored matrix.
        columns_axis : str
            Its columns axis.
        name : str
            The matrix' name.
        overwrite : bool, default False
            Whether an existing other layout is replaced.

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (and is not relaxed), or lists
            the matrix as an input.
        DafExistsError
            The other layout exists and ``overwrite`` is false.
        DafMissingError
            An axis, or the stored matrix, is missing.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("gene", "cell", "UMIs"): (dafzarr.CreatedOutput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]],
        ...                                            relayout=False)
        >>> cells = dafzarr.contractor("example", contract, daf, overwrite=True)
        >>> _ = cells.relayout_matrix("cell", "gene", "UMIs")
        >>> daf.has_matrix("gene", "cell", "UMIs", relayout=False)
        True
        """
        self._matrix_access(columns_axis, rows_axis, name, True)
        self._daf.relayout_matrix(rows_axis, columns_axis, name, overwrite=overwrite)
        return self

    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> Self:
        """Delete a matrix (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
        must_exist : bool, default True
            Whether a missing matrix is an error (else nothing happens).
        relayout : bool, default True
            Whether the other layout is deleted too.

        Returns
        -------
        ContractDaf
            This wrapper, to chain calls.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (and is not relaxed), or lists
            the matrix as an input.
        DafMissingError
            An axis is missing, or the matrix is and ``must_exist`` is true.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.OptionalOutput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> _ = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> _ = dafzarr.contractor("example", contract, daf).delete_matrix("cell", "gene", "UMIs")
        >>> daf.has_matrix("cell", "gene", "UMIs")
        False
        """
        self._matrix_access(rows_axis, columns_axis, name, True)
        self._daf.delete_matrix(
            rows_axis, columns_axis, name, must_exist=must_exist, relayout=relayout
        )
        return self

    def empty_dense_matrix(
        self, rows_axis: str, columns_axis: str, name: str, eltype: Any, **options: Any
    ) -> Any:
        """A context manager giving a new dense matrix to fill in place, stored when the
        block ends (a contract access: an output of the contract, marked used).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
        eltype : numpy dtype or type
            Its element type (a number type of Daf).
        **options
            Passed on to the wrapped data set (e.g. ``overwrite``).

        Returns
        -------
        contextlib.AbstractContextManager
            Yields the uninitialized column-major ``numpy.ndarray`` of the axes' lengths.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (and is not relaxed), or lists
            the matrix as an input.
        DafExistsError
            The matrix exists (without ``overwrite=True``).
        DafMissingError
            An axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.CreatedOutput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"]).add_axis(
        ...     "gene", ["X"])
        >>> with dafzarr.contractor("example", contract, daf).empty_dense_matrix(
        ...         "cell", "gene", "UMIs", np.int32) as umis:
        ...     umis[:, 0] = [1, 2]
        >>> daf.get_np_matrix("cell", "gene", "UMIs").tolist()
        [[1], [2]]
        """
        self._matrix_access(rows_axis, columns_axis, name, True)
        return self._daf.empty_dense_matrix(rows_axis, columns_axis, name, eltype, **options)

    def empty_sparse_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        *args: Any,
        **options: Any,
    ) -> Any:
        """A context manager giving the CSC arrays of a new sparse matrix to fill in place,
        stored when the block ends (a contract access: an output of the contract, marked
        used).

        Parameters
        ----------
        rows_axis : str
            The rows axis.
        columns_axis : str
            The columns axis.
        name : str
            The matrix' name.
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
            Yields ``(colptr, rowval, nzval)``: the 1-based CSC column starts (one more than
            the columns), row positions and values, as in DataAxesFormats.jl.

        Raises
        ------
        DafContractError
            The contract does not list an axis or the matrix (and is not relaxed), or lists
            the matrix as an input.
        DafExistsError
            The matrix exists (without ``overwrite=True``).
        DafMissingError
            An axis is missing.
        DafReadOnlyError
            The wrapped data set is read-only.

        Examples
        --------
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells."),
        ...                                   "gene": (dafzarr.RequiredInput, "The genes.")},
        ...     data={("cell", "gene", "UMIs"): (dafzarr.CreatedOutput, "integer", "Counts.")})
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"]).add_axis(
        ...     "gene", ["X"])
        >>> with dafzarr.contractor("example", contract, daf).empty_sparse_matrix(
        ...         "cell", "gene", "UMIs", np.int32, 1) as (colptr, rowval, nzval):
        ...     colptr[:], rowval[:], nzval[:] = [1, 2], [2], [7]
        >>> daf.get_np_matrix("cell", "gene", "UMIs").toarray().tolist()
        [[0], [7]]
        """
        self._matrix_access(rows_axis, columns_axis, name, True)
        return self._daf.empty_sparse_matrix(
            rows_axis, columns_axis, name, eltype, nnz, *args, **options
        )
