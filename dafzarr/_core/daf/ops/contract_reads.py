"""The reader API of a :class:`~dafzarr.daf.ops.ContractDaf` for scalars, axes and vectors:
existence checks and listings are always allowed; every read is a contract access (refused
for what the contract does not list, and marked used)."""

from __future__ import annotations

from typing import Any

from ..reader import pd_vector
from ..storage import UNDEF
from .contract_access import ContractAccess

__all__ = ["ContractReads"]


class ContractReads(ContractAccess):
    """Reading the scalars, axes and vectors of a data set through its contract."""

    def description(self) -> str:
        """The wrapped data set's description (``describe`` is the same method).

        Returns
        -------
        str
            The description of the wrapped data set: its name, type, axes and properties.

        Raises
        ------
        DafzarrError
            Never for a data set that is open; whatever the wrapped data set raises when
            describing itself.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> print(cells.description())
        name: cells...
        ...
          cell: 2 entries
        """
        return str(self._daf.description())

    describe = description

    def has_scalar(self, name: str) -> bool:
        """Whether the scalar exists (always allowed, not a contract access).

        Parameters
        ----------
        name : str
            The scalar's name.

        Returns
        -------
        bool
            Whether the wrapped data set has the scalar.

        Raises
        ------
        DafzarrError
            None of its own; whatever the wrapped data set raises.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> cells.has_scalar("version"), cells.has_scalar("organism")
        (True, False)
        """
        return bool(self._daf.has_scalar(name))

    def scalars_set(self) -> set[str]:
        """The names of all scalars (always allowed, not a contract access).

        Returns
        -------
        set of str
            The names of the wrapped data set's scalars, listed in the contract or not.

        Raises
        ------
        DafzarrError
            None of its own; whatever the wrapped data set raises.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> dafzarr.contractor("example", dafzarr.Contract(), daf).scalars_set()
        {'version'}
        """
        return set(self._daf.scalars_set())

    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        """The scalar's value (a contract access: the scalar is marked used).

        Parameters
        ----------
        name : str
            The scalar's name.
        default : optional
            Returned when the scalar is missing (default: raise).

        Returns
        -------
        Any
            The scalar's value (a Python or numpy scalar, or a ``str``), or ``default``.

        Raises
        ------
        DafContractError
            The contract does not list the scalar (``accessing non-contract scalar: ...``)
            and is not relaxed.
        DafMissingError
            The scalar is missing and no ``default`` is given.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").set_scalar("version", 3)
        >>> contract = dafzarr.Contract(
        ...     data={"version": (dafzarr.RequiredInput, "integer", "The version.")})
        >>> int(dafzarr.contractor("example", contract, daf).get_scalar("version"))
        3
        """
        self._scalar_access(name)
        return self._daf.get_scalar(name, default=default)

    def has_axis(self, axis: str) -> bool:
        """Whether the axis exists (always allowed, not a contract access).

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        bool
            Whether the wrapped data set has the axis.

        Raises
        ------
        DafzarrError
            None of its own; whatever the wrapped data set raises.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> cells.has_axis("cell"), cells.has_axis("gene")
        (True, False)
        """
        return bool(self._daf.has_axis(axis))

    def axes_set(self) -> set[str]:
        """The names of all axes (always allowed, not a contract access).

        Returns
        -------
        set of str
            The names of the wrapped data set's axes, listed in the contract or not.

        Raises
        ------
        DafzarrError
            None of its own; whatever the wrapped data set raises.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> dafzarr.contractor("example", dafzarr.Contract(), daf).axes_set()
        {'cell'}
        """
        return set(self._daf.axes_set())

    def axis_length(self, axis: str) -> int:
        """The number of entries of an axis (a contract access: the axis is marked used).

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
        DafContractError
            The contract does not list the axis (``accessing non-contract axis: ...``) and
            is not relaxed.
        DafMissingError
            The data set has no such axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")})
        >>> dafzarr.contractor("example", contract, daf).axis_length("cell")
        2
        """
        self._axis_access(axis)
        return int(self._daf.axis_length(axis))

    def axis_np_entries(self, axis: str) -> Any:
        """The axis' entry names, in order (a contract access: the axis is marked used;
        ``axis_np_vector`` is the same method).

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        numpy.ndarray
            The entry names (strings).

        Raises
        ------
        DafContractError
            The contract does not list the axis (``accessing non-contract axis: ...``) and
            is not relaxed.
        DafMissingError
            The data set has no such axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")})
        >>> dafzarr.contractor("example", contract, daf).axis_np_entries("cell").tolist()
        ['A', 'B']
        """
        self._axis_access(axis)
        return self._daf.axis_np_entries(axis)

    axis_np_vector = axis_np_entries

    def axis_dict(self, axis: str) -> dict[str, int]:
        """Each entry name's 0-based position (a contract access: the axis is marked used).

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
        DafContractError
            The contract does not list the axis (``accessing non-contract axis: ...``) and
            is not relaxed.
        DafMissingError
            The data set has no such axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")})
        >>> dafzarr.contractor("example", contract, daf).axis_dict("cell")
        {'A': 0, 'B': 1}
        """
        return {str(n): i for i, n in enumerate(self.axis_np_entries(axis))}

    def axis_np_indices(
        self, axis: str, names: Any, *, allow_empty: bool = False, allow_missing: bool = False
    ) -> Any:
        """The 0-based positions of entry names (a contract access: the axis is marked used).

        Parameters
        ----------
        axis : str
            The axis' name.
        names : sequence of str
            The entry names to look up.
        allow_empty : bool, default False
            Whether ``""`` is accepted (its position is ``-1``).
        allow_missing : bool, default False
            Whether names that are not entries are accepted (their position is ``-1``).

        Returns
        -------
        numpy.ndarray
            The positions, one per name.

        Raises
        ------
        DafContractError
            The contract does not list the axis (``accessing non-contract axis: ...``) and
            is not relaxed.
        DafMissingError
            The data set has no such axis, or a name is no entry (``missing entry: ...``)
            and ``allow_missing`` is false.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")})
        >>> cells = dafzarr.contractor("example", contract, daf)
        >>> cells.axis_np_indices("cell", ["B", "Z"], allow_missing=True).tolist()
        [1, -1]
        """
        self._axis_access(axis)
        return self._daf.axis_np_indices(
            axis, names, allow_empty=allow_empty, allow_missing=allow_missing
        )

    def has_vector(self, axis: str, name: str) -> bool:
        """Whether the vector exists (always allowed, not a contract access).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name (``name`` and ``index`` always exist).

        Returns
        -------
        bool
            Whether the wrapped data set has the vector.

        Raises
        ------
        DafMissingError
            The data set has no such axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> cells.has_vector("cell", "name"), cells.has_vector("cell", "age")
        (True, False)
        """
        return bool(self._daf.has_vector(axis, name))

    def vectors_set(self, axis: str) -> set[str]:
        """The names of the vectors of an axis (always allowed, not a contract access).

        Parameters
        ----------
        axis : str
            The axis' name.

        Returns
        -------
        set of str
            The names of the axis' vectors, listed in the contract or not.

        Raises
        ------
        DafMissingError
            The data set has no such axis.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> cells = dafzarr.contractor("example", dafzarr.Contract(), daf)
        >>> _ = daf.set_vector("cell", "age", [1, 2])
        >>> cells.vectors_set("cell")
        {'age'}
        """
        return set(self._daf.vectors_set(axis))

    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        """The vector as a numpy array (a contract access: the axis and the vector are
        marked used; the ``name`` and ``index`` vectors of a listed axis are always allowed).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        default : optional
            The value of every entry when the vector is missing (default: raise).

        Returns
        -------
        numpy.ndarray
            One value per entry of the axis.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector (``accessing non-contract
            vector: ...``) and is not relaxed.
        DafMissingError
            The axis, or the vector (without ``default``), is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.RequiredInput, "integer", "Their ages.")})
        >>> cells = dafzarr.contractor("example", contract, daf.set_vector("cell", "age", [1, 2]))
        >>> cells.get_np_vector("cell", "age").tolist()
        [1, 2]
        """
        self._vector_access(axis, name)
        return self._daf.get_np_vector(axis, name, default=default)

    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        """The vector as a ``pandas.Series`` indexed by the axis' entries (a contract access,
        as :meth:`get_np_vector`).

        Parameters
        ----------
        axis : str
            The vector's axis.
        name : str
            The vector's name.
        default : optional
            The value of every entry when the vector is missing (default: raise).

        Returns
        -------
        pandas.Series
            One value per entry, named ``name``.

        Raises
        ------
        DafContractError
            The contract does not list the axis or the vector and is not relaxed.
        DafMissingError
            The axis, or the vector (without ``default``), is missing.

        Examples
        --------
        >>> daf = dafzarr.memory_daf(name="cells").add_axis("cell", ["A", "B"])
        >>> contract = dafzarr.Contract(axes={"cell": (dafzarr.RequiredInput, "The cells.")},
        ...     data={("cell", "age"): (dafzarr.RequiredInput, "integer", "Their ages.")})
        >>> cells = dafzarr.contractor("example", contract, daf.set_vector("cell", "age", [1, 2]))
        >>> cells.get_pd_vector("cell", "age").to_dict()
        {'A': 1, 'B': 2}
        """
        values = self.get_np_vector(axis, name, default=default)
        return pd_vector(values, self._daf.axis_np_entries(axis), axis, name)
