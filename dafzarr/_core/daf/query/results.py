"""Running a query on a data set: the cache, the conversion of results to numpy, pandas and
scipy, ``has_query``, ``query_result_dimensions`` and ``get_pd_frame``.

Results: a ``set`` of ``str`` for names; a Python scalar; a vector as a numpy array (a stored
vector asked for whole is the reader's zero-copy array) or a ``pandas.Series`` indexed by the
entry names (index name: the axis, or ``None``); a matrix as a numpy array or, when sparse, a
``scipy.sparse.csc_matrix`` (``get_np_query``), or a dense ``pandas.DataFrame``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ....errors import DafMissingEntryError, DafMissingError, DafQueryError
from .cache import QueryCache, Reader
from .eval import Evaluator
from .operations import Axis, LookupVector, QuerySequence
from .parse import parse_query
from .stack import Mat, Vec

__all__ = [
    "evaluate",
    "get_np_query",
    "get_pd_frame",
    "get_pd_query",
    "has_query",
    "query_requires_relayout",
]


def _cache_of(daf: Any) -> QueryCache:
    cache: QueryCache = daf._query_cache
    cache.sync(daf._data_version())
    return cache


def evaluate(daf: Any, query: Any, cache: bool | None) -> Any:
    """The internal result of ``query`` on ``daf`` (``cache``: store it; ``False`` still uses
    a stored result)."""
    parsed = parse_query(query)
    store = _cache_of(daf)
    version = store.version
    key = str(parsed)
    found = store.results.get(key)
    if found is not None:
        return found
    result = Evaluator(Reader(daf, store), parsed).run()
    if cache is not False and daf._data_version() == version:  # no write while it ran
        store.results[key] = _frozen(result)
    return result


def _frozen(result: Any) -> Any:
    if isinstance(result, Vec | Mat) and isinstance(result.values, np.ndarray):
        result.values.flags.writeable = False
    return result


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def get_np_query(daf: Any, query: Any, *, cache: bool | None = None) -> Any:
    """The result with vectors and matrices as numpy arrays (sparse matrices: scipy CSC)."""
    result = evaluate(daf, query, cache)
    if isinstance(result, tuple):
        return _scalar(result[1])
    if isinstance(result, Vec):
        return result.values
    if isinstance(result, Mat):
        values = result.values
        if sp.issparse(values) and values.format != "csc":
            return sp.csc_matrix(values)
        return values
    return set(result)


def get_pd_query(daf: Any, query: Any, *, cache: bool | None = None) -> Any:
    """The result with vectors as ``pandas.Series`` and matrices as dense
    ``pandas.DataFrame`` (entry names on both sides)."""
    import pandas as pd

    result = evaluate(daf, query, cache)
    if isinstance(result, tuple):
        return _scalar(result[1])
    if isinstance(result, Vec):
        index = pd.Index(result.names, name=result.axis, dtype=object)
        return pd.Series(result.values, index=index, copy=False)
    if isinstance(result, Mat):
        values = result.values
        dense = values.toarray() if sp.issparse(values) else values
        return pd.DataFrame(
            dense,
            index=pd.Index(result.row_names, name=result.row_axis, dtype=object),
            columns=pd.Index(result.col_names, name=result.col_axis, dtype=object),
            copy=False,
        )
    return set(result)


def has_query(daf: Any, query: Any) -> bool:
    """Whether the query applies: every axis, property and named entry it needs exists (or
    has a default). Values are not checked (values used as entries, empty reductions, unused
    groups). A query that does not parse, or whose operations do not combine, raises."""
    parsed = parse_query(query)
    try:
        Evaluator(Reader(daf, _cache_of(daf)), parsed, checking=True).run()
    except (DafMissingError, DafMissingEntryError):
        return False
    except DafQueryError as exc:
        if str(exc).startswith(("invalid operation", "invalid query")):
            raise
    return True


def query_requires_relayout(daf: Any, query: Any) -> bool:
    """Whether answering the query reads a matrix in the layout it is not stored in (a
    transposed copy)."""
    reader = Reader(daf, _cache_of(daf))
    Evaluator(reader, parse_query(query), checking=True).run()
    return reader.relayout


def get_pd_frame(daf: Any, axis: Any, columns: Any = None, *, cache: bool | None = None) -> Any:
    """A ``pandas.DataFrame`` whose rows are the entries of an axis query (``"cell"`` means
    ``@ cell``) and whose columns are vector queries of those entries.

    ``columns``: ``None`` (``name`` then every vector, sorted), names (``"age"`` is
    ``: age``), ``(column, query)`` pairs or a dict. A query not starting with ``@`` is
    appended to the axis query; one starting with ``@`` may use ``@ __axis__`` for it."""
    import pandas as pd

    axis_query = parse_query(axis, Axis)
    rows = evaluate(daf, axis_query, cache)
    if not isinstance(rows, Vec) or not rows.is_axis:
        raise DafQueryError(f"invalid axis query: {axis_query}\nof the daf data: {daf.name}")
    assert rows.axis is not None
    if columns is None:
        columns = ["name", *sorted(daf.vectors_set(rows.axis))]
    pairs = (
        list(columns.items())
        if isinstance(columns, dict)
        else [(c, c) if isinstance(c, str) else tuple(c) for c in columns]
    )
    data: dict[str, Any] = {}
    for column, text in pairs:
        query = _column_query(axis_query, text)
        result = evaluate(daf, query, cache)
        # As DataAxesFormats.jl: a column is one value per row, named as the rows (a group
        # result keyed by the rows' names fits, whatever its axis).
        if (
            not isinstance(result, Vec)
            or len(result.names) != len(rows.names)
            or not bool(
                np.all(
                    np.asarray(result.names, dtype=object) == np.asarray(rows.names, dtype=object)
                )
            )
        ):
            raise DafQueryError(
                f"invalid column query: {query}\n"
                f"for the axis query: {axis_query}\n"
                f"of the daf data: {daf.name}"
            )
        data[column] = result.values
    index = pd.Index(rows.names, name=rows.axis, dtype=object)
    return pd.DataFrame(data, index=index)


def _column_query(axis_query: QuerySequence, text: Any) -> QuerySequence:
    """A column's query: appended to the axis query, unless it starts with an axis (then
    ``@ __axis__`` in it stands for the axis query)."""
    parsed = parse_query(text, LookupVector) if isinstance(text, str) else parse_query(text)
    if not parsed or not isinstance(parsed[0], Axis):
        return axis_query | parsed
    ops: list[Any] = []
    for op in parsed:
        is_axis = type(op) is Axis and op.operand == "__axis__"
        ops += list(axis_query) if is_axis else [op]
    return QuerySequence(ops)
