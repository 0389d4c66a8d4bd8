"""Daf queries on a ZarrDaf: thin methods over :mod:`dafzarr.daf.query`, which reads the data
set only through its public reader API."""

from __future__ import annotations

from typing import Any

__all__ = ["Queries"]


class Queries:
    """``get_np_query``, ``get_pd_query``, ``daf[query]``, ``has_query``, ``get_pd_frame``
    and ``empty_cache``."""

    def get_np_query(self, query: Any, *, cache: bool | None = None) -> Any:
        """The result of a query (text or query object): a ``set`` of names, a scalar, a
        numpy vector (a zero-copy view for a stored vector asked for whole), a numpy matrix
        or a ``scipy.sparse.csc_matrix``. Results are cached until the data set changes
        (``cache=False``: not stored)."""
        from .query.results import get_np_query

        return get_np_query(self, query, cache=cache)

    def get_pd_query(self, query: Any, *, cache: bool | None = None) -> Any:
        """The result of a query with vectors as ``pandas.Series`` (indexed by entry names,
        index name = the axis) and matrices as dense ``pandas.DataFrame``."""
        from .query.results import get_pd_query

        return get_pd_query(self, query, cache=cache)

    def __getitem__(self, query: Any) -> Any:
        """``daf[query]``: :meth:`get_pd_query` without storing the result in the cache."""
        return self.get_pd_query(query, cache=False)

    def has_query(self, query: Any) -> bool:
        """Whether every axis, property and named entry the query needs exists."""
        from .query.results import has_query

        return has_query(self, query)

    def get_pd_frame(self, axis: Any, columns: Any = None, *, cache: bool | None = None
                     ) -> Any:
        """A ``pandas.DataFrame``: rows = the entries of an axis query, columns = vector
        queries of them (default: ``name`` and every vector of the axis, sorted)."""
        from .query.results import get_pd_frame

        return get_pd_frame(self, axis, columns, cache=cache)

    def empty_cache(self, *, clear: str | None = None, keep: str | None = None) -> None:
        """Drop the cached query results and lookup tables.

        ``clear``/``keep`` take DataAxesFormats.jl's cache groups (``"QueryData"``,
        ``"MappedData"``, ``"MemoryData"``): only ``"QueryData"`` is cached here, so it is
        dropped unless ``keep="QueryData"`` or ``clear`` names another group."""
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
