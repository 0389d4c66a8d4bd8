"""The API of a Daf data set, as ``Protocol`` classes, and the one place it is documented.

:class:`DafReader` is the public reader API: anything that has these methods
(:class:`~dafzarr.daf.ZarrDaf`, views, chains) is read alike by the query package,
:func:`~dafzarr.anndata.daf_to_anndata` and the xarray exports. :class:`DafWriter` adds the
readers built on it and the writers. The classes implementing the API (``ZarrDaf``,
``ContractDaf``, the views and chains) take each method's docstring from here
(:func:`~dafzarr._core.documented.documented_by`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, Self, runtime_checkable

from ..aliases import Array
from .storage import UNDEF

__all__ = ["DafReader", "DafWriter"]


@runtime_checkable
class DafReader(Protocol):
    """The public reader API of a Daf data set (``ZarrDaf``, views and chains).

    A ``Protocol``: it is not made, but checked with ``isinstance``; everything that has
    these methods is read alike by the query package and the exports.

    Parameters
    ----------
    *args, **kwargs : Any
        Not used: a protocol is not instantiated (make data sets with
        :func:`~dafzarr.memory_daf`, :func:`~dafzarr.open_daf`, ...).

    Raises
    ------
    TypeError
        When instantiated (as for every ``Protocol``).

    Examples
    --------
    >>> daf = dafzarr.memory_daf(name="cells")
    >>> isinstance(daf, dafzarr.daf.DafReader)
    True
    """

    @property
    def name(self) -> str:
        """The data set's name."""

    def has_scalar(self, name: str) -> bool:
        """Whether the scalar exists.

        Parameters
        ----------
        name : str
            The scalar's name.

        Returns
        -------
        bool
            Whether the data set has the scalar.

        Raises
        ------
        InvalidArgumentTypeError
            ``name`` is not a ``str`` (a name the layout refuses names no scalar).
        DafzarrError
            None for a readable data set.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> daf.has_scalar("version"), daf.has_scalar("organism")
        (True, False)
        """

    def scalars_set(self) -> set[str]:
        """The names of all scalars.

        Returns
        -------
        set of str
            The scalars' names.

        Raises
        ------
        DafzarrError
            None for a readable data set.

        Examples
        --------
        >>> dafzarr.memory_daf(name="cells").set_scalar("version", 3).scalars_set()
        {'version'}
        """

    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        """The scalar's value; ``default`` if it is missing.

        Parameters
        ----------
        name : str
            The scalar's name.
        default : Any, optional
            Returned when the scalar is missing (by default, a missing scalar raises).

        Returns
        -------
        Any
            The value (a number or bool, as a numpy or Python scalar, or a ``str``), or
            ``default``.

        Raises
        ------
        DafMissingError
            The scalar is missing and no ``default`` is given.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> print(daf.get_scalar("version"), daf.get_scalar("organism", default=None))
        3 None
        """

    def has_axis(self, axis: str) -> bool:
        """Whether the axis exists.

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        bool
            Whether the data set has the axis.

        Raises
        ------
        InvalidArgumentTypeError
            ``axis`` is not a ``str`` (a name the layout refuses names no axis).
        DafzarrError
            None for a readable data set.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.has_axis("cell"), daf.has_axis("gene")
        (True, False)
        """

    def axes_set(self) -> set[str]:
        """The names of all axes.

        Returns
        -------
        set of str
            The axes' names.

        Raises
        ------
        DafzarrError
            None for a readable data set.

        Examples
        --------
        >>> dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"]).axes_set()
        {'cell'}
        """

    def axis_length(self, axis: str) -> int:
        """The number of entries of an axis.

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        int
            The number of entries.

        Raises
        ------
        DafMissingError
            The axis is missing.

        Examples
        --------
        >>> dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"]).axis_length("cell")
        2
        """

    def axis_np_entries(self, axis: str) -> Array:
        """The axis' entry names, in order (``axis_np_vector`` is the same method).

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        numpy.ndarray
            The entry names (an array of ``str``, read-only where the data set can make it
            so); do not modify it.

        Raises
        ------
        DafMissingError
            The axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.axis_np_entries("cell").tolist()
        ['A', 'B']
        """

    def has_vector(self, axis: str, name: str) -> bool:
        """Whether the vector exists (``name`` and ``index`` always do).

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.

        Returns
        -------
        bool
            Whether the axis has the vector.

        Raises
        ------
        InvalidArgumentTypeError
            ``name`` is not a ``str`` (a name the layout refuses names no vector).
        DafMissingError
            The axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.has_vector("cell", "name"), daf.has_vector("cell", "age")
        (True, False)
        """

    def vectors_set(self, axis: str) -> set[str]:
        """The names of the vectors of an axis.

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        set of str
            The stored vectors' names (without the implicit ``name`` and ``index``).

        Raises
        ------
        DafMissingError
            The axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", [3, 5]).vectors_set("cell")
        {'age'}
        """

    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Array:
        """The vector as a numpy array.

        ``name`` gives the entry names and ``index`` the 0-based positions. A stored dense
        vector is a zero-copy read-only view where the store allows it; a sparse vector is
        returned dense.

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.
        default : Any, optional
            Used when the vector is missing: ``None`` (returned as is), a scalar (repeated
            for every entry) or a vector of the axis' length (by default, a missing vector
            raises).

        Returns
        -------
        numpy.ndarray
            One value per entry of the axis (or ``None``); do not modify it.

        Raises
        ------
        DafMissingError
            The axis is missing, or the vector is missing and no ``default`` is given.
        InvalidArgumentError
            ``default`` is a vector of another length than the axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", [3, 5]).get_np_vector("cell", "age").tolist()
        [3, 5]
        >>> daf.get_np_vector("cell", "score", default=0.5).tolist()
        [0.5, 0.5]
        """

    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        """Whether the matrix exists (with ``relayout``, in either layout).

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        relayout : bool, optional
            Whether a matrix stored in the other layout (``columns_axis x rows_axis``)
            counts.

        Returns
        -------
        bool
            Whether the matrix exists.

        Raises
        ------
        InvalidArgumentTypeError
            A name is not a ``str`` (a name the layout refuses names no matrix).
        DafMissingError
            An axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A"]).add_axis("gene", ["X"])
        >>> daf = daf.set_matrix("cell", "gene", "UMIs", np.ones((1, 1)), relayout=False)
        >>> daf.has_matrix("gene", "cell", "UMIs"), daf.has_matrix("gene", "cell", "UMIs",
        ...                                                       relayout=False)
        (True, False)
        """

    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        """The names of the matrices of an axis pair.

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        relayout : bool, optional
            Whether matrices stored in the other layout count.

        Returns
        -------
        set of str
            The matrices' names.

        Raises
        ------
        DafMissingError
            An axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A"]).add_axis("gene", ["X"])
        >>> daf.set_matrix("cell", "gene", "UMIs", np.ones((1, 1))).matrices_set("gene", "cell")
        {'UMIs'}
        """

    def get_np_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
        sparse_class: Any = "csc_matrix",
    ) -> Any:
        """The ``rows_axis x columns_axis`` matrix.

        Dense: a column-major (Fortran-ordered) numpy array, a zero-copy read-only view where
        the store allows it. Sparse: a ``scipy.sparse.csc_matrix`` (or ``csc_array``) with
        0-based indices. With ``relayout``, a matrix stored only as
        ``columns_axis x rows_axis`` is transposed (a copy).

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        default : Any, optional
            Used when the matrix is missing: ``None`` (returned as is), a scalar (a zero
            gives an all-zero sparse matrix) or a matrix of the axes' shape (by default, a
            missing matrix raises).
        relayout : bool, optional
            Whether a matrix stored in the other layout is transposed to answer.
        sparse_class : {"csc_matrix", "csc_array"}, optional
            The scipy class of a sparse answer.

        Returns
        -------
        numpy.ndarray or scipy.sparse matrix
            The matrix (or ``None``); do not modify it.

        Raises
        ------
        DafMissingError
            An axis is missing, or the matrix is missing and no ``default`` is given.
        InvalidArgumentError
            ``default`` is a matrix of another shape than the axes'.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> daf.get_np_matrix("gene", "cell", "UMIs").tolist()
        [[1, 2]]
        """

    def description(self) -> str:
        """A human-readable summary of the data set.

        Returns
        -------
        str
            Its name, type (and path, mode or base data sets), scalars, axes, vectors and
            matrices (each matrix in the layouts it has), one per line.

        Raises
        ------
        DafzarrError
            None for a readable data set.

        Examples
        --------
        >>> print(dafzarr.memory_daf(name="cells").add_axis("cell", ["A"]).description())
        name: cells...
        axes:
          cell: 1 entries
        """

    def _data_version(self) -> Any:
        """What changes whenever the data set changes (the query cache follows it)."""


class DafWriter(DafReader, Protocol):
    """The rest of the API of a Daf data set: the readers built on :class:`DafReader`'s and
    the writers (a read-only data set has them too: they raise
    :class:`~dafzarr.errors.DafReadOnlyError`)."""

    def axis_dict(self, axis: str) -> dict[str, int]:
        """Each entry name's 0-based position.

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        dict of str to int
            Entry name to position.

        Raises
        ------
        DafMissingError
            The axis is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.axis_dict("cell")
        {'A': 0, 'B': 1}
        """

    def axis_np_indices(
        self,
        axis: str,
        names: Any,
        *,
        allow_empty: bool = False,
        allow_missing: bool = False,
    ) -> Array:
        """The 0-based positions of entry names; ``""`` (``allow_empty``) or unknown names
        (``allow_missing``) map to -1, else raise.

        Parameters
        ----------
        axis : str
            The axis' name.
        names : sequence of str
            The entry names to look up.
        allow_empty : bool, default False
            Whether ``""`` is accepted (its position is -1).
        allow_missing : bool, default False
            Whether names that are not entries are accepted (their position is -1).

        Returns
        -------
        numpy.ndarray
            The positions (int64), one per name.

        Raises
        ------
        DafMissingError
            The axis is missing, or a name is no entry (``missing entry: ...``) and not
            allowed.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.axis_np_indices("cell", ["B", ""], allow_empty=True).tolist()
        [1, -1]
        >>> daf.axis_np_indices("cell", ["B", "Z"], allow_missing=True).tolist()
        [1, -1]
        """

    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        """The vector as a ``pandas.Series`` indexed by the axis' entry names.

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.
        default : Any, optional
            As for :meth:`get_np_vector`.

        Returns
        -------
        pandas.Series
            One value per entry, named ``name`` (or ``None``).

        Raises
        ------
        DafMissingError
            The axis, or the vector (without ``default``), is missing.
        InvalidArgumentError
            ``default`` is a vector of another length than the axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", [3, 5]).get_pd_vector("cell", "age").to_dict()
        {'A': 3, 'B': 5}
        """

    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        """The matrix as a ``pandas.DataFrame``: rows and columns named by the axes'
        entries; a sparse matrix becomes a sparse frame.

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        default : Any, optional
            As for :meth:`get_np_matrix`.
        relayout : bool, optional
            As for :meth:`get_np_matrix`.

        Returns
        -------
        pandas.DataFrame
            The matrix (or ``None``).

        Raises
        ------
        DafMissingError
            An axis, or the matrix (without ``default``), is missing.
        InvalidArgumentError
            ``default`` is a matrix of another shape than the axes'.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> daf.get_pd_matrix("cell", "gene", "UMIs").loc["B", "X"]
        np.int64(2)
        """

    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> Self:
        """Store a scalar (bool, int, float, str or numpy scalar).

        Parameters
        ----------
        name : str
            The scalar's name.
        value : Any
            Its value.
        overwrite : bool, default False
            Whether an existing scalar is replaced.

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafArgumentError
            ``name`` is empty or no valid path component (``/``, NUL, ``.``, a Zarr
            metadata name).
        DafExistsError
            The scalar exists and ``overwrite`` is false.
        DafReadOnlyError
            The data set is read-only.
        InvalidArgumentError
            ``value`` is of no scalar type of Daf.

        Examples
        --------
        >>> dafzarr.memory_daf(name="cells").set_scalar("version", 3).scalars_set()
        {'version'}
        """

    def delete_scalar(self, name: str, *, must_exist: bool = True) -> Self:
        """Delete a scalar.

        Parameters
        ----------
        name : str
            The scalar's name.
        must_exist : bool, default True
            Whether a missing scalar raises (else nothing happens).

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafMissingError
            The scalar is missing and ``must_exist`` is true.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> daf.delete_scalar("version").scalars_set()
        set()
        """

    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> Self:
        """Create an axis with unique entry names.

        Parameters
        ----------
        axis : str
            The axis' name.
        entries : array-like of str
            Its unique entry names, in order.
        overwrite : bool, default False
            Whether an existing axis is replaced (with every vector and matrix along it
            deleted).

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafArgumentError
            ``axis`` is empty or no valid path component, or an entry is repeated.
        DafExistsError
            The axis exists and ``overwrite`` is false.
        InvalidArgumentError
            An entry name is not a string.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.axis_length("cell")
        2
        """

    def delete_axis(self, axis: str, *, must_exist: bool = True) -> Self:
        """Delete an axis and every vector and matrix along it.

        Parameters
        ----------
        axis : str
            The axis' name.
        must_exist : bool, default True
            Whether a missing axis raises (else nothing happens).

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafMissingError
            The axis is missing and ``must_exist`` is true.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.delete_axis("cell").axes_set()
        set()
        """

    def set_vector(
        self,
        axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        indtype: Any = None,
    ) -> Self:
        """Store a vector: a numpy array, a scalar to broadcast, or a scipy sparse vector.

        Sparse input (any scipy format: a 1-D sparse array of length ``n``, or ``1 x n`` or
        ``n x 1``) is stored sparse with 1-based ``nzind`` of type ``indtype`` (default: the
        smallest of uint32 and uint64 that holds them, as DataAxesFormats.jl chooses);
        duplicate positions are added up.

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name (not ``name`` nor ``index``).
        value : Any
            The values: one per entry of the axis, or a scalar.
        overwrite : bool, default False
            Whether an existing vector is replaced.
        indtype : Any, optional
            The type of a sparse vector's indices.

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafArgumentError
            ``name`` is empty or no valid path component, or reserved (``name``,
            ``index``).
        DafMissingError
            The axis is missing.
        DafExistsError
            The vector exists and ``overwrite`` is false.
        InvalidArgumentError
            ``value`` has another length than the axis, or an unsupported type.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", 7).get_np_vector("cell", "age").tolist()
        [7, 7]
        """

    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> Self:
        """Delete a vector.

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.
        must_exist : bool, default True
            Whether a missing vector raises (else nothing happens).

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafMissingError
            The axis, or the vector (with ``must_exist``), is missing.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf.set_vector("cell", "age", 7).delete_vector("cell", "age").vectors_set("cell")
        set()
        """

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
        """Store a matrix: numpy (any order), a scalar to broadcast, or any scipy sparse.

        With ``relayout`` (default) the transposed layout ``columns_axis x rows_axis`` is
        stored too, so both orientations read without a copy (never for a square pair).
        A sparse value's 1-based indices are stored as ``indtype``; by default the smallest
        of uint32 and uint64 that holds them, as DataAxesFormats.jl chooses.

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        value : Any
            The values.
        overwrite : bool, default False
            Whether an existing matrix is replaced.
        relayout : bool, default True
            Whether the other layout is stored too.
        indtype : Any, optional
            The type of a sparse matrix's indices.

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafArgumentError
            ``name`` is empty or no valid path component.
        DafMissingError
            An axis is missing.
        DafExistsError
            The matrix exists and ``overwrite`` is false.
        InvalidArgumentError
            ``value`` has another shape than the axes', or an unsupported type.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> daf.matrices_set("gene", "cell", relayout=False)
        {'UMIs'}
        """

    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> Self:
        """Store the ``columns_axis x rows_axis`` layout of a stored matrix.

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the stored layout.
        name : str
            The matrix' name.
        overwrite : bool, default False
            Whether an existing other layout is replaced.

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafMissingError
            An axis or the matrix is missing.
        DafExistsError
            The other layout exists and ``overwrite`` is false.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"])
        >>> daf = daf.set_matrix("cell", "gene", "UMIs", [[1], [2]], relayout=False)
        >>> daf.relayout_matrix("cell", "gene", "UMIs").matrices_set("gene", "cell",
        ...                                                          relayout=False)
        {'UMIs'}
        """

    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> Self:
        """Delete a matrix (with ``relayout``, both layouts).

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        must_exist : bool, default True
            Whether a missing matrix raises (else nothing happens).
        relayout : bool, default True
            Whether the other layout goes too.

        Returns
        -------
        Self
            This data set, to chain calls.

        Raises
        ------
        DafMissingError
            An axis, or the matrix (with ``must_exist``), is missing.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"]).set_matrix("cell", "gene", "UMIs", [[1], [2]])
        >>> daf.delete_matrix("cell", "gene", "UMIs").matrices_set("gene", "cell")
        set()
        """

    def empty_dense_vector(
        self, axis: str, name: str, eltype: Any, *, overwrite: bool = False
    ) -> AbstractContextManager[Array]:
        """Fill a new dense vector in place: ``with d.empty_dense_vector(...) as v: v[:] = ...``.

        The yielded array is the storage itself where the store allows it (ZIP: a reserved
        entry of the archive), so no second copy is made; the vector is stored when the
        block exits without error.

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.
        eltype : Any
            The numpy type of its values.
        overwrite : bool, default False
            Whether an existing vector is replaced.

        Returns
        -------
        numpy.ndarray
            Yields the vector to fill.

        Raises
        ------
        DafMissingError
            The axis is missing.
        DafExistsError
            The vector exists and ``overwrite`` is false.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> with daf.empty_dense_vector("cell", "age", np.int32) as age:
        ...     age[:] = [3, 5]
        >>> daf.get_np_vector("cell", "age").tolist()
        [3, 5]
        """

    def empty_sparse_vector(
        self,
        axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        indtype: Any = None,
        *,
        overwrite: bool = False,
    ) -> AbstractContextManager[tuple[Array, Array]]:
        """Fill a new sparse vector in place: yields ``(nzind, nzval)``; ``nzind`` is
        1-based and increasing (checked when the block exits, which stores the vector).

        Parameters
        ----------
        axis : str
            The axis' name.
        name : str
            The vector's name.
        eltype : Any
            The numpy type of its values.
        nnz : int
            The number of nonzero values.
        indtype : Any, optional
            The type of its indices.
        overwrite : bool, default False
            Whether an existing vector is replaced.

        Returns
        -------
        tuple of numpy.ndarray
            Yields ``(nzind, nzval)`` to fill.

        Raises
        ------
        DafMissingError
            The axis is missing.
        DafExistsError
            The vector exists and ``overwrite`` is false.
        InvalidArgumentError
            ``nzind`` is not increasing within the axis.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> with daf.empty_sparse_vector("cell", "age", np.int32, 1) as (nzind, nzval):
        ...     nzind[:], nzval[:] = [2], [5]
        >>> daf.get_np_vector("cell", "age").tolist()
        [0, 5]
        """

    def empty_dense_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        *,
        overwrite: bool = False,
    ) -> AbstractContextManager[Array]:
        """Fill a new dense matrix in place: yields a column-major ``rows x columns`` array,
        stored when the block exits without error.

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        eltype : Any
            The numpy type of its values.
        overwrite : bool, default False
            Whether an existing matrix is replaced.

        Returns
        -------
        numpy.ndarray
            Yields the matrix to fill.

        Raises
        ------
        DafMissingError
            An axis is missing.
        DafExistsError
            The matrix exists and ``overwrite`` is false.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"])
        >>> with daf.empty_dense_matrix("cell", "gene", "UMIs", np.int32) as m:
        ...     m[:] = [[1], [2]]
        >>> daf.get_np_matrix("cell", "gene", "UMIs").tolist()
        [[1], [2]]
        """

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
    ) -> AbstractContextManager[tuple[Array, Array, Array]]:
        """Fill a new CSC sparse matrix in place: yields 1-based ``(colptr, rowval, nzval)``
        (``colptr`` starts as ``[1, nnz+1, nnz+1, ...]``; checked when the block exits,
        which stores the matrix).

        Parameters
        ----------
        rows_axis, columns_axis : str
            The axes of the rows and of the columns.
        name : str
            The matrix' name.
        eltype : Any
            The numpy type of its values.
        nnz : int
            The number of nonzero values.
        indtype : Any, optional
            The type of its indices.
        overwrite : bool, default False
            Whether an existing matrix is replaced.

        Returns
        -------
        tuple of numpy.ndarray
            Yields ``(colptr, rowval, nzval)`` to fill.

        Raises
        ------
        DafMissingError
            An axis is missing.
        DafExistsError
            The matrix exists and ``overwrite`` is false.
        InvalidArgumentError
            The filled arrays are not a valid CSC matrix.
        DafReadOnlyError
            The data set is read-only.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> daf = daf.add_axis("gene", ["X"])
        >>> with daf.empty_sparse_matrix("cell", "gene", "UMIs", np.int32, 1) as (_, rows, values):
        ...     rows[:], values[:] = [2], [7]
        >>> daf.get_np_matrix("cell", "gene", "UMIs").toarray().tolist()
        [[0], [7]]
        """
