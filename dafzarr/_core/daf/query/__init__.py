"""Daf queries: the query language of DataAxesFormats.jl (0.2/0.3 syntax), dafr and dafpy.

``@ cell [ ! is_doublet ] : type : color``, ``@ cell @ gene [ is_marker ] :: UMIs``,
``@ cell @ gene :: UMIs -/ type =@ >- Sum``: the same strings give the same answers as in
Julia and R. Stored arrays asked for as they are come back as zero-copy views; sparse
matrices stay sparse through masks, slices, element-wise operations that keep zero and
reductions.

The modules, from the bottom up (each imports only modules listed before it):

- ``literals``: element-type names, typed values (``||`` defaults, parameters), their text.
- ``tokens``: the lexer; ``escape_value`` and ``unescape_value``.
- ``opdocs``: the numpydoc text shared by the operation classes, and their example data.
- ``sequence``: the base of the operations and a whole query, with its canonical text
  (:class:`QueryOperation`, :class:`QuerySequence`).
- ``operations``: the operation classes of a query.
- ``runs``: the stored values a reduction reduces (CSC arrays, runs with implicit zeros).
- ``registry``: element-wise and reduction operations by name, with typed parameters;
  ``eltwise`` and ``reductions`` hold the built-ins (registering more:
  :func:`register_eltwise`, :func:`register_reduction`).
- ``parse``: :func:`parse_query` (errors with a caret under the failing token),
  :func:`is_axis_query`; ``shape``: :func:`query_result_dimensions`.
- ``stack``: the vector and matrix states of evaluation; comparisons, ``??`` final values.
- ``cache``: the per-data-set cache and the reads through the reader API.
- ``group``, ``eval``: the stack machine over phrases (grouping, counting and matrices in
  ``group``).
- ``results``: running a query (cached), numpy/pandas/scipy results, ``has_query``,
  ``get_pd_frame``.

Decisions where DataAxesFormats.jl is silent or odd:

- The virtual vector ``index`` is **1-based**, as in Julia and R, so that queries give the
  same numbers everywhere (``ZarrDaf.get_np_vector(axis, "index")`` stays 0-based).
- ``&!``, ``|!``, ``^!`` are syntax errors asking for a space (``& !``).
- Latin-1 letters are escaped by :func:`escape_value` (the lexer, like the anchor's, does not
  take them bare).
- Comparisons of Bool values accept ``true``/``false`` besides numbers (as dafr does).
- Regular expressions are searched anywhere in the value (Python's ``re.search``), as the
  anchor's code does; anchor them with ``^...$``.
- A value that is not an entry (``@ cell = nope``, or ``""`` in a chained lookup without
  ``??``) raises ``DafQueryError`` naming the entry and the axis.
- ``??`` on a matrix needs a final value (a clear error otherwise).
- ``Log`` with ``eps 0`` on a sparse matrix gives the dense result (``-inf`` at zeros).
- ``Mode`` ties: the value whose count reached the maximum first when scanning in order; in
  sparse columns the implicit zeros count as if after the stored values.
- ``Median`` and ``Quantile`` order NaNs after every number (they do not propagate), and
  ``Mode`` counts the NaNs as one value.
- A group-by of the rows of a sparse matrix, and a reduction of each of its columns, read its
  stored values column by column, never all at once: the extra memory of ``Var``, ``Std``,
  ``GeoMean``, ``Median``, ``Quantile`` and ``Mode`` is the result, a few arrays of its size,
  a code per row and one column's values.
- A group-by of the columns (``M |/ g >| R``) and a reduction of each row (``M >| R``) read
  the layout whose columns are ``M``'s rows if the data set stores it, as above; else they
  read the stored columns in place and send each value to the result of its row and group
  (no transposed copy): every built-in reduction keeps the extra memory to the result, a few
  arrays of its size and of one entry per row or column, and, for ``Median``, ``Quantile``
  and ``Mode``, a block of 65,536 values (12 bytes each; a longer row takes its own block)
  of consecutive rows, each column read on from where the last block stopped (a column whose
  rows are out of order is read whole for each block). Sums then add each result's values in
  column order (so do the runs by key they replace; a sum of another order may differ in the
  last bits).
- Closing a data set drops its query cache.
- The cache keys on the canonical text and the data set's change counter.
"""

from __future__ import annotations

from typing import Any

from . import eltwise, reductions  # noqa: F401  (register the built-in operations)
from .eltwise import Abs, Clamp, Convert, Fraction, Log, Round, Significant
from .operations import *  # its ``__all__``; ``__all__`` below lists the public names
from .parse import is_axis_query, parse_query, query_axis_name
from .reductions import *  # its ``__all__``, every one public
from .registry import (
    EltwiseOperation,
    Parameter,
    ReduceToColumn,
    ReduceToRow,
    ReductionOperation,
    register_eltwise,
    register_reduction,
)
from .shape import query_result_dimensions
from .tokens import escape_value, unescape_value


def query_requires_relayout(daf: Any, query: Any) -> bool:
    """Whether answering ``query`` on ``daf`` reads a matrix in the layout it is not stored
    in (a transposed copy).

    Parameters
    ----------
    daf : ZarrDaf
        The data set (or a view or chain of data sets).
    query : str, QuerySequence or QueryOperation
        The query.

    Returns
    -------
    bool
        Whether a matrix would be read in the other layout.

    Raises
    ------
    DafQuerySyntaxError
        If the text does not parse.
    DafQueryError
        If the query does not apply to the data set's data.
    DafMissingError
        If an axis or property the query reads is missing (and has no default).

    Examples
    --------
    >>> d = dafzarr.memory_daf("d").add_axis("cell", ["A", "B", "C"]).add_axis("gene", ["X", "Y"])
    >>> umis = np.array([[1, 0], [3, 4], [0, 6]], "int32")
    >>> d = d.set_matrix("cell", "gene", "UMIs", umis, relayout=False)
    >>> from dafzarr.daf.query import query_requires_relayout
    >>> query_requires_relayout(d, "@ cell @ gene :: UMIs >| Sum")
    False
    >>> query_requires_relayout(d, "@ gene @ cell :: UMIs")
    True
    """
    from .results import query_requires_relayout as requires

    return requires(daf, query)


__all__ = [
    "Abs",
    "AndMask",
    "AndNegatedMask",
    "AsAxis",
    "Axis",
    "BeginMask",
    "BeginNegatedMask",
    "Clamp",
    "Convert",
    "Count",
    "CountBy",
    "EltwiseOperation",
    "EndMask",
    "Fraction",
    "GeoMean",
    "GroupBy",
    "GroupColumnsBy",
    "GroupRowsBy",
    "IfMissing",
    "IfNot",
    "IsEqual",
    "IsGreater",
    "IsGreaterEqual",
    "IsLess",
    "IsLessEqual",
    "IsMatch",
    "IsNotEqual",
    "IsNotMatch",
    "Log",
    "LookupMatrix",
    "LookupScalar",
    "LookupVector",
    "Max",
    "Mean",
    "Median",
    "Min",
    "Mode",
    "Names",
    "OrMask",
    "OrNegatedMask",
    "Parameter",
    "Quantile",
    "QueryOperation",
    "QuerySequence",
    "ReduceToColumn",
    "ReduceToRow",
    "ReductionOperation",
    "Round",
    "Significant",
    "SquareColumnIs",
    "SquareRowIs",
    "Std",
    "StdN",
    "Sum",
    "Var",
    "VarN",
    "XorMask",
    "XorNegatedMask",
    "escape_value",
    "is_axis_query",
    "parse_query",
    "query_axis_name",
    "query_requires_relayout",
    "query_result_dimensions",
    "register_eltwise",
    "register_reduction",
    "unescape_value",
]
