"""Copying one matrix, or the matrices of a tensor, from a Daf data set into another
(DataAxesFormats.jl's ``copy_matrix!`` and ``copy_tensor!``).

Both axes are related by their entries (:mod:`._align`), rows first. A matrix whose axes
match the destination's in the same order is passed to the setter as it is: a dense matrix
stored in a ZIP archive is written from its zero-copy view, a sparse one from its stored
arrays; with ``relayout`` and a source that stores both layouts, each layout is copied as it
is stored (no transposition). When the destination has entries the source lacks, the result
is a fill over the destination's axes: sparse when ``empty`` is 0 (the source's values
embedded), sparse with the fill values stored when the source is sparse, else dense.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ....errors import DafExistsError
from ...aliases import Array
from ..storage import UNDEF
from .align import SOURCE_IS_SUBSET, Relation, check_subset, relate_axis
from .convert import STRING, Target, convert_array, convert_value, element_type_of, target_type
from .copies import check_fraction
from .stored import copy_stored_layouts

__all__ = ["aligned_matrix", "copy_matrix", "copy_tensor", "matrix_where", "transfer_matrix"]


def matrix_where(
    source: Any,
    rows_axis: str,
    columns_axis: str,
    name: str,
    destination: Any,
    rows_target: str,
    columns_target: str,
    target: str,
) -> str:
    """How errors about a copied matrix name it."""
    return (
        f"the matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns axis: "
        f"{columns_axis}\nof the source daf data: {source.name}\ncopied to the matrix: "
        f"{target}\nfor the rows axis: {rows_target}\nand the columns axis: "
        f"{columns_target}\nof the target daf data: {destination.name}"
    )


def _converted(value: Any, target: Target | None, where: str) -> Any:
    """A matrix converted to ``target``; sparse stays sparse (strings are dense)."""
    if target is None:
        return value
    if sp.issparse(value):
        if target == STRING:
            return convert_array(value.toarray(order="F"), target, where)
        csc = value.tocsc()
        data = convert_array(csc.data, target, where)
        if data is csc.data:
            return value
        return sp.csc_matrix((data, csc.indices, csc.indptr), shape=csc.shape)
    return convert_array(value, target, where)


def _selected(value: Any, rows: Array | None, columns: Array | None) -> Any:
    """The rows and columns at these source positions (``None``: all, in order)."""
    if columns is not None:
        value = value[:, columns]
    if rows is not None:
        value = value[rows, :]
    return value.tocsc() if sp.issparse(value) else np.asfortranarray(value)


def _is_zero(value: Any) -> bool:
    return not isinstance(value, str | np.str_) and bool(value == 0)


def aligned_matrix(
    value: Any, rows: Relation, columns: Relation, empty: Any, eltype: Target | None, where: str
) -> Any:
    """The source matrix ``value`` (converted to ``eltype``) placed at the destination's
    rows and columns (see the module's rules for the entries the source lacks)."""
    value = _converted(value, eltype, where)
    if rows.identity and columns.identity:
        return value
    rows_at, rows_from = rows.present()
    columns_at, columns_from = columns.present()
    sub = _selected(
        value, None if rows.identity else rows_from, None if columns.identity else columns_from
    )
    if SOURCE_IS_SUBSET not in (rows.kind, columns.kind):
        return sub
    kind = element_type_of(value, where)
    fill = convert_value(empty, kind, f"the empty value for {where}")
    shape = (rows.n_destination, columns.n_destination)
    if kind != STRING and (_is_zero(fill) or sp.issparse(sub)):
        if sp.issparse(sub):
            coo = sub.tocoo()
            at_rows, at_columns, data = rows_at[coo.row], columns_at[coo.col], coo.data
        else:
            nz_rows, nz_columns = np.nonzero(sub)
            at_rows, at_columns = rows_at[nz_rows], columns_at[nz_columns]
            data = sub[nz_rows, nz_columns]
        if not _is_zero(fill):  # a sparse source: the fill values are stored too
            missing_rows, missing_columns = rows.missing(), columns.missing()
            every_column = np.arange(shape[1])
            at_rows = np.concatenate(
                [
                    at_rows,
                    np.repeat(missing_rows, shape[1]),
                    np.repeat(rows_at, missing_columns.size),
                ]
            )
            at_columns = np.concatenate(
                [
                    at_columns,
                    np.tile(every_column, missing_rows.size),
                    np.tile(missing_columns, rows_at.size),
                ]
            )
            data = np.concatenate([data, np.full(at_rows.size - data.size, fill, dtype=data.dtype)])
        return sp.csc_matrix((data, (at_rows, at_columns)), shape=shape, dtype=data.dtype)
    if sp.issparse(sub):
        sub = sub.toarray(order="F")
    out = np.full(shape, fill, dtype=object if kind == STRING else sub.dtype, order="F")
    out[np.ix_(rows_at, columns_at)] = sub
    return out


def _bestified(value: Any, fraction: float) -> Any:
    """Sparse or dense, whichever saves at least ``fraction`` of the dense size (a sparse
    matrix costs a 4-byte index per stored value and per column, plus one)."""
    dtype = value.dtype
    if dtype.kind not in "biuf":
        return value
    n_rows, n_columns = value.shape
    dense_bytes = n_rows * n_columns * dtype.itemsize
    nnz = int(np.count_nonzero(value.data if sp.issparse(value) else value))
    saving = dense_bytes - nnz * (dtype.itemsize + 4) - (n_columns + 1) * 4
    if dense_bytes and saving / dense_bytes >= fraction:
        if not sp.issparse(value):
            return sp.csc_matrix(value)
        out = value.tocsc(copy=True)
        out.eliminate_zeros()
        return out
    return value.toarray(order="F") if sp.issparse(value) else value


def copy_matrix(
    *,
    destination: Any,
    source: Any,
    rows_axis: str,
    columns_axis: str,
    name: str,
    rows_reaxis: str | None = None,
    columns_reaxis: str | None = None,
    rename: str | None = None,
    eltype: Any = None,
    default: Any = UNDEF,
    empty: Any = None,
    bestify: bool = False,
    min_sparse_saving_fraction: float = 0.25,
    relayout: bool = True,
    overwrite: bool = False,
    insist: bool = True,
) -> None:
    """Copy the ``rows_axis x columns_axis`` matrix ``name`` of ``source`` into
    ``destination`` as ``rename or name`` of ``rows_reaxis or rows_axis`` x
    ``columns_reaxis or columns_axis``.

    Each axis is related to its destination axis as for :func:`copy_vector` (rows first;
    the errors name the failing axis); a destination axis with fewer entries selects them
    even when the other axis has more. Where the destination has entries the source lacks,
    the result is filled with ``empty``: a sparse matrix when ``empty`` is 0 (or
    ``False``), whatever the source's format; a sparse one with the fill values stored when
    the source is sparse; else a dense one (strings are always dense). ``relayout``
    (default) reads a matrix stored only in the other layout (transposed) and stores both
    layouts in the destination (a source that stores both has each copied as it is
    stored); ``relayout=False`` reads and writes exactly the requested layout. A square
    matrix is never relaid out. ``eltype``, ``bestify``, ``min_sparse_saving_fraction``,
    ``default``, ``overwrite`` and ``insist`` are as for :func:`copy_vector`.

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    rows_axis : str
        The matrix' rows axis in ``source``.
    columns_axis : str
        Its columns axis in ``source``.
    name : str
        Its name in ``source``.
    rows_reaxis : str, optional
        The rows axis in ``destination`` (default: ``rows_axis``).
    columns_reaxis : str, optional
        The columns axis in ``destination`` (default: ``columns_axis``).
    rename : str, optional
        Its name in ``destination`` (default: ``name``).
    eltype : numpy dtype, type or str, optional
        The element type to store (default: the source's).
    default : optional
        What to do when ``source`` lacks the matrix: ``None`` copies nothing, a value is
        stored instead (default: raise).
    empty : optional
        The value of the destination's entries that ``source`` lacks.
    bestify : bool, default False
        Whether numeric values are stored in whichever of sparse or dense is smaller.
    min_sparse_saving_fraction : float, default 0.25
        With ``bestify``, the fraction of the dense size sparse storage must save.
    relayout : bool, default True
        Whether a matrix stored only in the other layout is read, and both layouts are
        stored in ``destination``.
    overwrite : bool, default False
        Whether an existing destination matrix is replaced.
    insist : bool, default True
        Whether an existing destination matrix (without ``overwrite``) is an error rather
        than left alone.

    Raises
    ------
    DafMissingError
        An axis is missing, or a source matrix is and no ``default`` is given.
    DafMismatchError
        A destination axis has entries the source's lacks and no ``empty`` is given
        (``missing entries in the axis: ...``), or the entry sets are disjoint.
    DafExistsError
        ``destination`` has the matrix, without ``overwrite`` and with ``insist``.
    UnsafeCastError
        ``eltype`` cannot hold a value (or ``empty``) exactly.
    InvalidArgumentError
        ``min_sparse_saving_fraction`` is not in [0, 1).
    DafReadOnlyError
        ``destination`` is read-only.

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").add_axis("cell", ["A", "B"])
    >>> _ = source.add_axis("gene", ["X", "Y"])
    >>> _ = source.set_matrix("cell", "gene", "UMIs", np.array([[1, 2], [3, 4]]))
    >>> destination = dafzarr.memory_daf(name="destination").add_axis("cell", ["B"])
    >>> _ = destination.add_axis("gene", ["Y", "X", "Z"])
    >>> dafzarr.copy_matrix(destination=destination, source=source, rows_axis="cell",
    ...                     columns_axis="gene", name="UMIs", empty=0)
    >>> destination.get_np_matrix("cell", "gene", "UMIs").toarray().tolist()
    [[4, 3, 0]]
    """
    check_fraction(min_sparse_saving_fraction)
    transfer_matrix(
        destination,
        source,
        rows_axis,
        columns_axis,
        name,
        rows_reaxis or rows_axis,
        columns_reaxis or columns_axis,
        rename or name,
        eltype=eltype,
        default=default,
        empty=empty,
        bestify=bestify,
        fraction=min_sparse_saving_fraction,
        relayout=relayout,
        overwrite=overwrite,
        insist=insist,
    )


def exists_error(destination: Any, rows: str, columns: str, name: str) -> DafExistsError:
    return DafExistsError(
        f"existing matrix: {name}\nfor the rows axis: {rows}\nand the "
        f"columns axis: {columns}\nin the daf data: {destination.name}"
    )


def transfer_matrix(
    destination: Any,
    source: Any,
    rows_axis: str,
    columns_axis: str,
    name: str,
    rows_target: str,
    columns_target: str,
    target: str,
    *,
    eltype: Any,
    default: Any,
    empty: Any,
    bestify: bool,
    fraction: float,
    relayout: bool,
    overwrite: bool,
    insist: bool,
    relations: tuple[Relation, Relation] | None = None,
) -> None:
    """:func:`copy_matrix` with resolved names (``relations``: the rows' and the columns'
    relations, when the caller computed them)."""
    relayout = relayout and rows_axis != columns_axis
    if (
        not overwrite
        and not insist
        and destination.has_matrix(rows_target, columns_target, target, relayout=relayout)
    ):
        return
    if relations is None:
        what_for = None if empty is not None else f"the matrix: {name}\nto the matrix: {target}"
        rows = relate_axis(source, rows_axis, destination, rows_target)
        check_subset(rows, source.name, destination.name, what_for)
        columns = relate_axis(source, columns_axis, destination, columns_target)
        check_subset(columns, source.name, destination.name, what_for)
    else:
        rows, columns = relations
    where = matrix_where(
        source, rows_axis, columns_axis, name, destination, rows_target, columns_target, target
    )
    to_type = target_type(eltype, where)
    if (
        to_type is None
        and not bestify
        and rows.identity
        and columns.identity
        and source.has_matrix(rows_axis, columns_axis, name, relayout=False)
    ):
        if not overwrite and destination.has_matrix(
            rows_target, columns_target, target, relayout=relayout
        ):
            raise exists_error(destination, rows_target, columns_target, target)
        if copy_stored_layouts(
            source,
            destination,
            (rows_axis, columns_axis, name),
            (rows_target, columns_target, target),
            overwrite,
            both=relayout,
        ):
            return
    value = source.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
    if value is None:
        return
    if not overwrite and destination.has_matrix(
        rows_target, columns_target, target, relayout=relayout
    ):
        raise exists_error(destination, rows_target, columns_target, target)
    out = aligned_matrix(value, rows, columns, empty, to_type, where)
    if bestify:
        out = _bestified(out, fraction)
    as_stored = (
        relayout
        and not bestify
        and rows.identity
        and columns.identity
        and source.has_matrix(columns_axis, rows_axis, name, relayout=False)
    )
    if not as_stored:
        destination.set_matrix(
            rows_target, columns_target, target, out, overwrite=overwrite, relayout=relayout
        )
        return
    flipped = _converted(
        source.get_np_matrix(columns_axis, rows_axis, name, relayout=False), to_type, where
    )
    # An overwrite replaces both old layouts; only an earlier member of a chain can still
    # hold the other one, which the chain's relayout then overrides.
    destination.set_matrix(
        rows_target, columns_target, target, out, overwrite=overwrite, relayout=False
    )
    if destination.has_matrix(columns_target, rows_target, target, relayout=False):
        destination.relayout_matrix(rows_target, columns_target, target, overwrite=True)
    else:
        destination.set_matrix(columns_target, rows_target, target, flipped, relayout=False)


def copy_tensor(
    *,
    destination: Any,
    source: Any,
    main_axis: str,
    rows_axis: str,
    columns_axis: str,
    name: str,
    rows_reaxis: str | None = None,
    columns_reaxis: str | None = None,
    rename: str | None = None,
    eltype: Any = None,
    empty: Any = None,
    bestify: bool = False,
    min_sparse_saving_fraction: float = 0.25,
    relayout: bool = True,
    overwrite: bool = False,
    insist: bool = True,
) -> None:
    """Copy the matrices ``<entry>_<name>`` of a tensor, for each entry of ``main_axis``
    **in the destination** (the source need not have that axis), with :func:`copy_matrix`
    (as ``<entry>_<rename>`` when ``rename`` is given). With ``empty``, an entry whose
    matrix the source lacks gets a matrix full of ``empty``; without, it is skipped.

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    main_axis : str
        The tensor's main axis (in ``destination``).
    rows_axis : str
        The matrix' rows axis in ``source``.
    columns_axis : str
        Its columns axis in ``source``.
    name : str
        The tensor's name: the matrices are ``<entry>_<name>``.
    rows_reaxis : str, optional
        The rows axis in ``destination`` (default: ``rows_axis``).
    columns_reaxis : str, optional
        The columns axis in ``destination`` (default: ``columns_axis``).
    rename : str, optional
        The tensor's name in ``destination`` (default: ``name``).
    eltype : numpy dtype, type or str, optional
        The element type to store (default: the source's).
    empty : optional
        The value of the destination's entries that ``source`` lacks, and of every element
        of a matrix ``source`` lacks (without it, such a matrix is skipped).
    bestify : bool, default False
        Whether numeric values are stored in whichever of sparse or dense is smaller.
    min_sparse_saving_fraction : float, default 0.25
        With ``bestify``, the fraction of the dense size sparse storage must save.
    relayout : bool, default True
        Whether a matrix stored only in the other layout is read, and both layouts are
        stored in ``destination``.
    overwrite : bool, default False
        Whether an existing destination matrix is replaced.
    insist : bool, default True
        Whether an existing destination matrix (without ``overwrite``) is an error rather
        than left alone.

    Raises
    ------
    DafMissingError
        An axis is missing (``main_axis`` in ``destination``).
    DafMismatchError
        A destination axis has entries the source's lacks and no ``empty`` is given
        (``missing entries in the axis: ...``), or the entry sets are disjoint.
    DafExistsError
        ``destination`` has the matrix, without ``overwrite`` and with ``insist``.
    UnsafeCastError
        ``eltype`` cannot hold a value (or ``empty``) exactly.
    InvalidArgumentError
        ``min_sparse_saving_fraction`` is not in [0, 1).
    DafReadOnlyError
        ``destination`` is read-only.

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").add_axis("cell", ["A", "B"])
    >>> _ = source.add_axis("gene", ["X"]).set_matrix("cell", "gene", "B_UMIs", [[1], [2]])
    >>> destination = dafzarr.memory_daf(name="destination").add_axis("batch", ["B", "C"])
    >>> _ = destination.add_axis("cell", ["A", "B"]).add_axis("gene", ["X"])
    >>> dafzarr.copy_tensor(destination=destination, source=source, main_axis="batch",
    ...                     rows_axis="cell", columns_axis="gene", name="UMIs", empty=0)
    >>> sorted(destination.matrices_set("cell", "gene"))
    ['B_UMIs', 'C_UMIs']
    """
    check_fraction(min_sparse_saving_fraction)
    rows_target, columns_target = rows_reaxis or rows_axis, columns_reaxis or columns_axis
    relations = None
    for entry in destination.axis_np_entries(main_axis).tolist():
        entry_name, entry_target = f"{entry}_{name}", f"{entry}_{rename or name}"
        if relations is None:
            what_for = (
                None
                if empty is not None
                else f"the matrix: {entry_name}\nto the matrix: {entry_target}"
            )
            rows = relate_axis(source, rows_axis, destination, rows_target)
            check_subset(rows, source.name, destination.name, what_for)
            columns = relate_axis(source, columns_axis, destination, columns_target)
            check_subset(columns, source.name, destination.name, what_for)
            relations = (rows, columns)
        transfer_matrix(
            destination,
            source,
            rows_axis,
            columns_axis,
            entry_name,
            rows_target,
            columns_target,
            entry_target,
            eltype=eltype,
            default=empty,
            empty=empty,
            bestify=bestify,
            fraction=min_sparse_saving_fraction,
            relayout=relayout,
            overwrite=overwrite,
            insist=insist,
            relations=relations,
        )
