"""Daf queries on a ZarrDaf: thin methods over :mod:`dafzarr.daf.query`, which reads the data
set only through its public reader API."""

from __future__ import annotations

from typing import Any

__all__ = ["Queries"]


class Queries:
    """``get_np_query``, ``get_pd_query``, ``daf[query]``, ``has_query``, ``get_pd_frame``
    and ``empty_cache``."""

    def get_np_query(self, query: Any, *, cache: bool | None = None) -> Any:
        """The result of a query as numpy data.

        Parameters
        ----------
        query : str or QuerySequence
            The query, as text (``"@ cell : age"``) or parsed.
        cache : bool, optional
            ``False``: the result is not stored in the cache. Results are cached until the
            data set changes.

        Returns
        -------
        object
            A ``set`` of names, a scalar, a numpy vector (a zero-copy view for a stored
            vector asked for whole), a numpy matrix or a ``scipy.sparse.csc_matrix``.

        Raises
        ------
        DafQueryError
            The text does not parse (with a caret under the token at fault), or names an
            axis, property or entry the data set lacks.

        Examples
        --------
        >>> d = dafzarr.memory_daf("cells")
        >>> _ = d.add_axis("cell", ["A", "B", "C"])
        >>> _ = d.set_vector("cell", "age", np.array([3, 5, 4]))
        >>> d.get_np_query("@ cell [ age > 3 ] : age").tolist()
        [5, 4]
        """
        from .query.results import get_np_query

        return get_np_query(self, query, cache=cache)

    def get_pd_query(self, query: Any, *, cache: bool | None = None) -> Any:
        """The result of a query as pandas data.

        Parameters
        ----------
        query : str or QuerySequence
            The query, as text or parsed.
        cache : bool, optional
            ``False``: the result is not stored in the cache.

        Returns
        -------
        object
            As :meth:`get_np_query`, but vectors are ``pandas.Series`` indexed by entry
            names (index name: the axis) and matrices dense ``pandas.DataFrame``.

        Raises
        ------
        DafQueryError
            The text does not parse, or names what the data set lacks.

        Examples
        --------
        >>> d = dafzarr.memory_daf("cells")
        >>> _ = d.add_axis("cell", ["A", "B"])
        >>> _ = d.set_vector("cell", "age", np.array([3, 5]))
        >>> d.get_pd_query("@ cell : age").to_dict()
        {'A': 3, 'B': 5}
        """
        from .query.results import get_pd_query

        return get_pd_query(self, query, cache=cache)

    def __getitem__(self, query: Any) -> Any:
        """``daf[query]``: :meth:`get_pd_query` without storing the result in the cache."""
        return self.get_pd_query(query, cache=False)

    def has_query(self, query: Any) -> bool:
        """Whether every axis, property and named entry the query needs exists.

        Parameters
        ----------
        query : str or QuerySequence
            The query, as text or parsed.

        Returns
        -------
        bool
            ``True`` when :meth:`get_np_query` would find everything it reads.

        Raises
        ------
        DafQuerySyntaxError
            The text does not parse.

        Examples
        --------
        >>> d = dafzarr.memory_daf("cells")
        >>> _ = d.add_axis("cell", ["A", "B"])
        >>> d.has_query("@ cell"), d.has_query("@ cell : age")
        (True, False)
        """
        from .query.results import has_query

        return has_query(self, query)

    def get_pd_frame(self, axis: Any, columns: Any = None, *, cache: bool | None = None) -> Any:
        """A table of vectors of one axis.

        Parameters
        ----------
        axis : str or QuerySequence
            An axis query (``"cell"`` or ``"@ cell [ age > 3 ]"``): the rows.
        columns : sequence of str, or of (str, str) pairs, optional
            Vector queries of the rows (a property name, or a ``(column, query)`` pair);
            default: ``name`` and every vector of the axis, sorted.
        cache : bool, optional
            ``False``: the query results are not stored in the cache.

        Returns
        -------
        pandas.DataFrame
            One row per entry (indexed by entry names), one column per query.

        Raises
        ------
        DafQueryError
            A query does not parse, or names what the data set lacks.

        Examples
        --------
        >>> d = dafzarr.memory_daf("cells")
        >>> _ = d.add_axis("cell", ["A", "B"])
        >>> _ = d.set_vector("cell", "age", np.array([3, 5]))
        >>> d.get_pd_frame("cell")["age"].tolist()
        [3, 5]
        """
        from .query.results import get_pd_frame

        return get_pd_frame(self, axis, columns, cache=cache)

    def empty_cache(self, *, clear: str | None = None, keep: str | None = None) -> None:
        """Drop the cached query results and lookup tables.

        Parameters
        ----------
        clear : str, optional
            DataAxesFormats.jl's cache group to drop (``"QueryData"``, ``"MappedData"``,
            ``"MemoryData"``); only ``"QueryData"`` is cached here.
        keep : str, optional
            A cache group to keep: ``keep="QueryData"`` drops nothing.

        Raises
        ------
        InvalidArgumentError
            ``clear`` or ``keep`` is no cache group.

        Examples
        --------
        >>> d = dafzarr.memory_daf("cells")
        >>> _ = d.add_axis("cell", ["A", "B"])
        >>> _ = d.get_np_query("@ cell")
        >>> d.empty_cache()
        """
        groups = ("QueryData", "MappedData", "MemoryData")
        for group in (clear, keep):
            if group is not None and group not in groups:
                from ...errors import InvalidArgumentError

                raise InvalidArgumentError(f"unknown cache group: {group!r} (one of {groups})")
        if keep == "QueryData" or clear not in (None, "QueryData"):
            return
        cache: Any = self.__dict__.get("_query_cache")
        if cache is not None:
            cache.clear()
