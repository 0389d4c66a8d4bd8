"""Copying one scalar, axis or vector from a Daf data set into another (DataAxesFormats.jl's
``copy_scalar!``, ``copy_axis!``, ``copy_vector!``), from any reader into any writer.

Values move by entry name (see :mod:`._align`). A dense source array is passed to the
destination's setter as it is (a zero-copy view of a ZIP archive is written without an
intermediate copy); a sparse vector stays sparse with the same stored positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ....errors import DafMissingError, InvalidArgumentError
from ...aliases import Array
from ..storage import UNDEF
from .align import SOURCE_IS_SUBSET, Relation, check_subset, relate_axis
from .convert import STRING, Target, convert_array, convert_value, element_type_of, target_type
from .sources import SparseVector, read_vector

__all__ = [
    "aligned_vector",
    "check_fraction",
    "copy_axis",
    "copy_scalar",
    "copy_vector",
    "storable_vector",
    "transfer_vector",
    "vector_where",
    "write_vector",
]


def check_fraction(fraction: float) -> None:
    if not 0 <= fraction < 1:
        raise InvalidArgumentError(f"min_sparse_saving_fraction: {fraction}\nis not in [0, 1)")


def copy_scalar(
    *,
    destination: Any,
    source: Any,
    name: str,
    rename: str | None = None,
    type: Any = None,
    default: Any = UNDEF,
    overwrite: bool = False,
    insist: bool = True,
) -> None:
    """Copy the scalar ``name`` of ``source`` into ``destination`` as ``rename or name``.

    ``type`` converts it (to ``str``: formatted as DataAxesFormats.jl prints it; from
    ``str``: parsed; between numbers: exactly, else
    :class:`~dafzarr.errors.UnsafeCastError`). A missing source scalar raises
    :class:`~dafzarr.errors.DafMissingError` unless ``default`` is given (``None``: copy
    nothing; a value: stored instead). An existing destination scalar is replaced with
    ``overwrite``, left alone with ``insist=False``, and otherwise refused
    (:class:`~dafzarr.errors.DafExistsError`).

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    name : str
        The scalar's name in ``source``.
    rename : str, optional
        Its name in ``destination`` (default: ``name``).
    type : numpy dtype, type or str, optional
        The element type to store (default: the source's).
    default : optional
        What to do when ``source`` lacks the scalar: ``None`` copies nothing, another value
        is stored instead (default: raise).
    overwrite : bool, default False
        Whether an existing destination scalar is replaced.
    insist : bool, default True
        Whether an existing destination scalar (without ``overwrite``) is an error rather
        than left alone.

    Raises
    ------
    DafMissingError
        ``source`` lacks the scalar and no ``default`` is given.
    DafExistsError
        ``destination`` has the scalar, without ``overwrite`` and with ``insist``.
    UnsafeCastError
        ``type`` cannot hold the value exactly, or a string does not parse as it.
    DafReadOnlyError
        ``destination`` is read-only.

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").set_scalar("version", 3)
    >>> destination = dafzarr.memory_daf(name="destination")
    >>> dafzarr.copy_scalar(destination=destination, source=source, name="version",
    ...                     rename="release", type=np.float32)
    >>> destination.get_scalar("release")
    np.float32(3.0)
    >>> dafzarr.copy_scalar(destination=destination, source=source, name="organism",
    ...                     default="human")
    >>> destination.get_scalar("organism")
    'human'
    """
    target = rename or name
    if not overwrite and not insist and destination.has_scalar(target):
        return
    value = source.get_scalar(name, default=default)
    if value is None:
        return
    where = (
        f"the scalar: {name}\nof the source daf data: {source.name}\ncopied to the "
        f"scalar: {target}\nof the target daf data: {destination.name}"
    )
    value = convert_value(value, target_type(type, where), where)
    destination.set_scalar(target, value, overwrite=overwrite)


def copy_axis(
    *,
    destination: Any,
    source: Any,
    axis: str,
    rename: str | None = None,
    default: Any = UNDEF,
    overwrite: bool = False,
    insist: bool = True,
) -> None:
    """Copy the axis ``axis`` of ``source`` (its entries, in order) into ``destination`` as
    ``rename or axis``.

    An existing destination axis is replaced with ``overwrite`` (which deletes every vector
    and matrix along it first), left alone with ``insist=False``, and otherwise refused
    (``existing axis: ...``). A missing source axis raises ``missing axis: ...`` naming the
    source, unless ``default`` is ``None`` (nothing is copied) or the entries to use.

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    axis : str
        The axis' name in ``source``.
    rename : str, optional
        Its name in ``destination`` (default: ``axis``).
    default : optional
        What to do when ``source`` lacks the axis: ``None`` copies nothing, a sequence of
        entry names is used instead (default: raise).
    overwrite : bool, default False
        Whether an existing destination axis is replaced (with every property along it).
    insist : bool, default True
        Whether an existing destination axis (without ``overwrite``) is an error rather
        than left alone.

    Raises
    ------
    DafMissingError
        ``source`` lacks the axis and no ``default`` is given.
    DafExistsError
        ``destination`` has the axis, without ``overwrite`` and with ``insist``.
    DafReadOnlyError
        ``destination`` is read-only.

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").add_axis("cell", ["A", "B"])
    >>> destination = dafzarr.memory_daf(name="destination")
    >>> dafzarr.copy_axis(destination=destination, source=source, axis="cell", rename="obs")
    >>> destination.axis_np_entries("obs").tolist()
    ['A', 'B']
    >>> dafzarr.copy_axis(destination=destination, source=source, axis="gene")
    Traceback (most recent call last):
    ...
    dafzarr.errors.DafMissingError: missing axis: gene
    in the daf data: source...
    """
    target = rename or axis
    if not overwrite and not insist and destination.has_axis(target):
        return
    if source.has_axis(axis):
        entries = source.axis_np_entries(axis)
    elif default is None:
        return
    elif default is UNDEF:
        raise DafMissingError(f"missing axis: {axis}\nin the daf data: {source.name}")
    else:
        entries = default
    destination.add_axis(target, entries, overwrite=overwrite)


def vector_where(
    source: Any, axis: str, name: str, destination: Any, target_axis: str, target: str
) -> str:
    """How errors about a copied vector name it."""
    return (
        f"the vector: {name}\nof the axis: {axis}\nof the source daf data: {source.name}"
        f"\ncopied to the vector: {target}\nof the axis: {target_axis}\n"
        f"of the target daf data: {destination.name}"
    )


def _converted(
    value: Array | SparseVector, target: Target | None, where: str
) -> Array | SparseVector:
    if isinstance(value, SparseVector):
        if target == STRING:  # strings are never sparse
            return convert_array(value.dense(), target, where)
        return SparseVector(value.n, value.positions, convert_array(value.values, target, where))
    return convert_array(np.asarray(value), target, where)


def _is_zero(value: Any) -> bool:
    return not isinstance(value, str | np.str_) and bool(value == 0)


def aligned_vector(
    value: Array | SparseVector, relation: Relation, empty: Any, eltype: Target | None, where: str
) -> Array | SparseVector:
    """The source vector ``value`` (converted to ``eltype``) placed at the entries of the
    destination axis; the destination's extra entries (``source_is_subset``) get ``empty``
    (converted to the vector's element type). A sparse vector stays sparse: its stored
    values move with their entries, and a non-zero ``empty`` is stored too."""
    value = _converted(value, eltype, where)
    if relation.identity:
        return value
    kind = element_type_of(value, where)
    fill = None
    if relation.kind == SOURCE_IS_SUBSET:
        fill = convert_value(empty, kind, f"the empty value for {where}")
    n = relation.n_destination
    assert relation.positions is not None
    if isinstance(value, SparseVector):
        dest = relation.destination_of_source()[value.positions]
        keep = dest >= 0
        positions, values = dest[keep], value.values[keep]
        if fill is not None and not _is_zero(fill):
            missing = relation.missing()
            positions = np.concatenate([positions, missing])
            values = np.concatenate([values, np.full(missing.size, fill, values.dtype)])
        order = np.argsort(positions, kind="stable")
        return SparseVector(n, positions[order], values[order])
    if relation.kind != SOURCE_IS_SUBSET:
        return value[relation.positions]
    out = np.full(n, fill, dtype=object if kind == STRING else value.dtype)
    where_present, sources = relation.present()
    out[where_present] = value[sources]
    return out


def _bestified(value: Array | SparseVector, fraction: float) -> Array | SparseVector:
    """Sparse or dense, whichever saves at least ``fraction`` of the dense size (a sparse
    value costs its element and a 4-byte index per stored value)."""
    if value.dtype.kind not in "biuf" or value.dtype == object:
        return value
    values = value.values if isinstance(value, SparseVector) else value
    n = value.n if isinstance(value, SparseVector) else len(value)
    size = value.dtype.itemsize
    nnz = int(np.count_nonzero(values))
    dense_bytes = n * size
    if dense_bytes and (dense_bytes - nnz * (size + 4)) / dense_bytes >= fraction:
        if isinstance(value, SparseVector):
            keep = values != 0
            return SparseVector(n, value.positions[keep], values[keep])
        positions = np.flatnonzero(value)
        return SparseVector(n, positions, value[positions])
    return value.dense() if isinstance(value, SparseVector) else value


def storable_vector(value: Array | SparseVector) -> Any:
    """What ``set_vector`` takes: the dense array, or an ``n x 1`` scipy CSC."""
    if not isinstance(value, SparseVector):
        return value
    indptr = np.array([0, value.positions.size], dtype=np.int64)
    return sp.csc_array((value.values, value.positions, indptr), shape=(value.n, 1))


def write_vector(
    destination: Any,
    axis: str,
    name: str,
    value: Array | SparseVector,
    *,
    bestify: bool,
    fraction: float,
    overwrite: bool,
) -> None:
    """Store a prepared vector (optionally in its best format)."""
    if bestify:
        value = _bestified(value, fraction)
    destination.set_vector(axis, name, storable_vector(value), overwrite=overwrite)


def copy_vector(
    *,
    destination: Any,
    source: Any,
    axis: str,
    name: str,
    reaxis: str | None = None,
    rename: str | None = None,
    eltype: Any = None,
    default: Any = UNDEF,
    empty: Any = None,
    bestify: bool = False,
    min_sparse_saving_fraction: float = 0.25,
    overwrite: bool = False,
    insist: bool = True,
) -> None:
    """Copy the vector ``name`` of ``axis`` of ``source`` into ``destination`` as the vector
    ``rename or name`` of ``reaxis or axis``.

    The two axes are related by their entries (:mod:`dafzarr._core.daf.ops.align`): values move
    by entry name; a destination axis with fewer entries takes the values of its entries; a
    destination axis with more entries needs ``empty`` for the others (else ``missing
    entries in the axis: ...``, a :class:`~dafzarr.errors.DafMismatchError`); entry sets
    that are neither raise ``disjoint entries in the axis: ...``. A sparse source stays
    sparse with the same stored positions (a non-zero ``empty`` is stored too); a dense or
    string source gives a dense vector. ``eltype`` converts the values exactly
    (:mod:`dafzarr._core.daf.ops.convert`); ``empty`` is converted to the vector's element type.
    ``bestify`` stores numeric values sparse when that saves at least
    ``min_sparse_saving_fraction`` of the dense size, else dense. ``default``,
    ``overwrite`` and ``insist`` are as for :func:`copy_scalar`; both axes must exist.

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    axis : str
        The vector's axis in ``source``.
    name : str
        The vector's name in ``source``.
    reaxis : str, optional
        Its axis in ``destination`` (default: ``axis``).
    rename : str, optional
        Its name in ``destination`` (default: ``name``).
    eltype : numpy dtype, type or str, optional
        The element type to store (default: the source's).
    default : optional
        What to do when ``source`` lacks the vector: ``None`` copies nothing, a value (or
        one value per entry) is stored instead (default: raise).
    empty : optional
        The value of the destination's entries that ``source`` lacks.
    bestify : bool, default False
        Whether numeric values are stored in whichever of sparse or dense is smaller.
    min_sparse_saving_fraction : float, default 0.25
        With ``bestify``, the fraction of the dense size sparse storage must save.
    overwrite : bool, default False
        Whether an existing destination vector is replaced.
    insist : bool, default True
        Whether an existing destination vector (without ``overwrite``) is an error rather
        than left alone.

    Raises
    ------
    DafMissingError
        An axis is missing, or the source vector is and no ``default`` is given.
    DafMismatchError
        The destination axis has entries the source's lacks and no ``empty`` is given
        (``missing entries in the axis: ...``), or the entry sets are disjoint.
    DafExistsError
        ``destination`` has the vector, without ``overwrite`` and with ``insist``.
    UnsafeCastError
        ``eltype`` cannot hold a value (or ``empty``) exactly.
    InvalidArgumentError
        ``min_sparse_saving_fraction`` is not in [0, 1).
    DafReadOnlyError
        ``destination`` is read-only.

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").add_axis("cell", ["A", "B", "C"])
    >>> _ = source.set_vector("cell", "age", [30, 40, 50])
    >>> destination = dafzarr.memory_daf(name="destination")
    >>> _ = destination.add_axis("cell", ["C", "A", "B", "D"])
    >>> dafzarr.copy_vector(destination=destination, source=source, axis="cell", name="age",
    ...                     empty=0, eltype=np.int16)
    >>> destination.get_np_vector("cell", "age")
    array([50, 30, 40,  0], dtype=int16)
    """
    check_fraction(min_sparse_saving_fraction)
    transfer_vector(
        destination,
        source,
        axis,
        name,
        reaxis or axis,
        rename or name,
        eltype=eltype,
        default=default,
        empty=empty,
        bestify=bestify,
        fraction=min_sparse_saving_fraction,
        overwrite=overwrite,
        insist=insist,
    )


def transfer_vector(
    destination: Any,
    source: Any,
    axis: str,
    name: str,
    target_axis: str,
    target: str,
    *,
    eltype: Any,
    default: Any,
    empty: Any,
    bestify: bool,
    fraction: float,
    overwrite: bool,
    insist: bool,
    relation: Relation | None = None,
) -> None:
    """:func:`copy_vector` with resolved names (``relation``: the axes' relation, when the
    caller computed it)."""
    if not overwrite and not insist and destination.has_vector(target_axis, target):
        return
    if relation is None:
        relation = relate_axis(source, axis, destination, target_axis)
    what_for = None if empty is not None else f"the vector: {name}\nto the vector: {target}"
    check_subset(relation, source.name, destination.name, what_for)
    value = read_vector(source, axis, name, default)
    if value is None:
        return
    where = vector_where(source, axis, name, destination, target_axis, target)
    out = aligned_vector(value, relation, empty, target_type(eltype, where), where)
    write_vector(
        destination,
        target_axis,
        target,
        out,
        bestify=bestify,
        fraction=fraction,
        overwrite=overwrite,
    )
