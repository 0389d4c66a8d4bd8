"""The public reader API of a Daf data set, as a ``Protocol``: anything that has these
methods (:class:`~dafzarr.daf.ZarrDaf`, views, chains) is read alike by the query package,
:func:`~dafzarr.anndata.daf_to_anndata` and the xarray exports."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..aliases import Array
from .storage import UNDEF

__all__ = ["DafReader"]


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
            The value (a number, bool or str), or ``default``.

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
        """The axis' entry names, in order.

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        numpy.ndarray
            The entry names (a string array); do not modify it.

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
        """The ``rows_axis x columns_axis`` matrix (numpy, column-major, or scipy CSC).

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
        sparse_class : Any, optional
            The scipy class of a sparse answer (``"csc_matrix"`` or ``"csc_array"``).

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
            Its name, type, scalars, axes, vectors and matrices, one per line.

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
