"""Copying everything of one Daf data set into another (DataAxesFormats.jl's ``copy_all!``).

Unlike DataAxesFormats.jl, which may fail midway with some scalars already written, the copy
is validated in full before anything is written: axis relations, existing properties,
missing ``empty`` values, ``types`` and the conversions they need (the source values are
checked), the ``empty`` values' types. On a ZIP destination the writes are then one batch:
one commit, and a failure or a crash leaves the destination as it was.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np
import scipy.sparse as sp

from ....errors import DafExistsError, DafMissingError, DafReadOnlyError, InvalidArgumentError
from ...progress import Progress
from ..storage import UNDEF
from ..zarrdaf import ZarrDaf
from .align import SOURCE_IS_SUBSET, Relation, missing_entries, new_axis_relation, relate_axis
from .convert import STRING, Target, convert_array, convert_value, element_type_of, target_type
from .copies import transfer_vector, vector_where
from .copy_matrix import matrix_where, transfer_matrix
from .sources import SparseVector, read_vector
from .stored import copy_stored_axis

__all__ = ["copy_all"]

MatrixKey = tuple[str, str, str]


@dataclass
class _CopyAllPlan:
    """What a validated ``copy_all`` writes, in order."""

    scalars: list[tuple[str, Any]] = field(default_factory=list)
    axes: list[str] = field(default_factory=list)
    vectors: list[tuple[str, str, Any, Any]] = field(default_factory=list)
    matrices: list[tuple[str, str, str, Any, Any, bool]] = field(default_factory=list)


def _as_dict(data: Any, what: str) -> dict[Any, Any]:
    """``empty``/``types`` as a dict keyed by data keys (a mapping or ``(key, value)``
    pairs)."""
    if data is None:
        return {}
    pairs = list(data.items()) if hasattr(data, "items") else [tuple(p) for p in data]
    out: dict[Any, Any] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise InvalidArgumentError(f"invalid {what} entry: {pair!r} (not a key and a value)")
        key, value = pair
        if not (
            isinstance(key, str)
            or (
                isinstance(key, tuple)
                and 2 <= len(key) <= 4
                and all(isinstance(p, str) for p in key)
            )
        ):
            raise InvalidArgumentError(
                f"invalid {what} key: {key!r}\n(a scalar name, (axis, name), (rows_axis, "
                "columns_axis, name) or (main_axis, rows_axis, columns_axis, name))"
            )
        out[key] = value
    return out


def _expand_tensors(
    data: dict[Any, Any], dafs: list[Any]
) -> tuple[dict[Any, Any], list[tuple[Any, Any]]]:
    """Tensor keys replaced by the matrix keys of their main axis' entries in ``dafs``."""
    tensors = [
        (key, value) for key, value in data.items() if isinstance(key, tuple) and len(key) == 4
    ]
    out = {
        key: value for key, value in data.items() if not (isinstance(key, tuple) and len(key) == 4)
    }
    for (main, rows, columns, name), value in tensors:
        for daf in dafs:
            if daf.has_axis(main):
                for entry in daf.axis_np_entries(main).tolist():
                    out[(rows, columns, f"{entry}_{name}")] = value
    return out, tensors


def _either(data: dict[Any, Any], rows: str, columns: str, name: str) -> Any:
    found = data.get((rows, columns, name))
    return data.get((columns, rows, name)) if found is None else found


def _check_values(
    values: Any, dtype_to: Target | None, empty: Any, subset: bool, where: str
) -> None:
    """Convert (and discard) what the copy will convert: the values to ``dtype_to`` unless
    numpy casts them safely, and ``empty`` to the copied element type."""
    if isinstance(values, SparseVector):
        values = values.values
    elif sp.issparse(values):
        values = values.data
    source = element_type_of(values, where)
    if (
        dtype_to is not None
        and dtype_to != STRING
        and source != dtype_to
        and not (source != STRING and np.can_cast(values.dtype, dtype_to, "safe"))
    ):
        convert_array(np.asarray(values), dtype_to, where)
    if subset:
        convert_value(empty, dtype_to or source, f"the empty value for {where}")


def existing_error(what: str, destination: Any) -> DafExistsError:
    return DafExistsError(f"existing {what}\nin the daf data: {destination.name}")


def _plan(
    destination: Any,
    source: Any,
    empty: dict[Any, Any],
    any_empty: bool,
    types: dict[Any, Any],
    overwrite: bool,
    insist: bool,
    relayout: bool,
) -> tuple[_CopyAllPlan, dict[str, Relation]]:
    plan = _CopyAllPlan()
    axes = sorted(source.axes_set())
    relations: dict[str, Relation] = {}
    for axis in axes:
        if destination.has_axis(axis):
            relation = relate_axis(source, axis, destination, axis)
            if relation.kind == SOURCE_IS_SUBSET and not any_empty:
                raise missing_entries(relation, source.name, destination.name, ": data")
            relations[axis] = relation
        else:
            relations[axis] = new_axis_relation(axis, source.axis_length(axis))
            plan.axes.append(axis)
    for name in sorted(source.scalars_set()):
        if not overwrite and destination.has_scalar(name):
            if insist:
                raise existing_error(f"scalar: {name}", destination)
            continue
        where = (
            f"the scalar: {name}\nof the source daf data: {source.name}\ncopied into "
            f"the daf data: {destination.name}"
        )
        value = convert_value(source.get_scalar(name), target_type(types.get(name), where), where)
        plan.scalars.append((name, value))
    for axis in axes:
        subset = relations[axis].kind == SOURCE_IS_SUBSET
        for name in sorted(source.vectors_set(axis)):
            if not overwrite and axis not in plan.axes and destination.has_vector(axis, name):
                if insist:
                    raise existing_error(f"vector: {name}\nfor the axis: {axis}", destination)
                continue
            fill = empty.get((axis, name))
            if subset and fill is None:
                raise missing_entries(
                    relations[axis],
                    source.name,
                    destination.name,
                    f"the vector: {name}\nto the vector: {name}",
                )
            where = vector_where(source, axis, name, destination, axis, name)
            to_type = target_type(types.get((axis, name)), where)
            if to_type is not None or subset:
                _check_values(read_vector(source, axis, name), to_type, fill, subset, where)
            plan.vectors.append((axis, name, fill, types.get((axis, name))))
    for i, rows in enumerate(axes):
        for columns in axes[i:]:
            for name in sorted(source.matrices_set(rows, columns, relayout=True)):
                # Without relayout, exactly the stored layouts: a matrix stored both ways is
                # copied both ways at once (an overwrite of one layout replaces the other).
                stored = source.has_matrix(rows, columns, name, relayout=False)
                flipped = source.has_matrix(columns, rows, name, relayout=False)
                layout = (rows, columns) if relayout or stored else (columns, rows)
                both = relayout or (stored and flipped)
                _plan_matrix(
                    plan,
                    destination,
                    source,
                    relations,
                    *layout,
                    name,
                    _either(empty, rows, columns, name),
                    _either(types, rows, columns, name),
                    overwrite,
                    insist,
                    both,
                    missing_ok=False,
                )
    return plan, relations


def _plan_matrix(
    plan: _CopyAllPlan,
    destination: Any,
    source: Any,
    relations: dict[str, Relation],
    rows: str,
    columns: str,
    name: str,
    fill: Any,
    eltype: Any,
    overwrite: bool,
    insist: bool,
    relayout: bool,
    *,
    missing_ok: bool,
) -> None:
    layouts = relayout and rows != columns
    new = rows in plan.axes or columns in plan.axes
    if not new and destination.has_matrix(rows, columns, name, relayout=layouts):
        if missing_ok:  # a tensor's matrix that exists is left as it is
            return
        if not overwrite:
            if insist:
                raise existing_error(
                    f"matrix: {name}\nfor the rows axis: {rows}\nand the columns axis: {columns}",
                    destination,
                )
            return
    for axis in (rows, columns):
        if relations[axis].kind == SOURCE_IS_SUBSET and fill is None:
            raise missing_entries(
                relations[axis],
                source.name,
                destination.name,
                f"the matrix: {name}\nto the matrix: {name}",
            )
    subset = SOURCE_IS_SUBSET in (relations[rows].kind, relations[columns].kind)
    where = matrix_where(source, rows, columns, name, destination, rows, columns, name)
    to_type = target_type(eltype, where)
    if source.has_matrix(rows, columns, name, relayout=layouts):
        if to_type is None and not subset:
            pass  # copied as it is: nothing to convert
        else:
            stored = (
                (rows, columns)
                if source.has_matrix(rows, columns, name, relayout=False)
                else (columns, rows)
            )
            _check_values(
                source.get_np_matrix(*stored, name, relayout=False), to_type, fill, subset, where
            )
    elif fill is None:
        raise DafMissingError(
            f"missing matrix: {name}\nfor the rows axis: {rows}\nand the "
            f"columns axis: {columns}\nin the daf data: {source.name}"
        )
    else:
        convert_value(fill, to_type, f"the empty value for {where}")
    plan.matrices.append((rows, columns, name, fill, eltype, layouts))


def _plan_tensors(
    plan: _CopyAllPlan,
    destination: Any,
    source: Any,
    relations: dict[str, Relation],
    tensors: list[tuple[Any, Any]],
    types: dict[Any, Any],
    relayout: bool,
) -> None:
    """The matrices of the tensors of ``empty`` that neither data set has: filled with the
    tensor's empty value, for each entry of the main axis in the destination."""
    planned = {(r, c, n) for r, c, n, *_ in plan.matrices}
    for (main, rows, columns, name), fill in tensors:
        holder = destination if destination.has_axis(main) else source
        if not holder.has_axis(main):
            raise DafMissingError(f"missing axis: {main}\nin the daf data: {destination.name}")
        for axis in (rows, columns):
            if axis not in relations:
                raise DafMissingError(f"missing axis: {axis}\nin the daf data: {source.name}")
        for entry in holder.axis_np_entries(main).tolist():
            matrix = f"{entry}_{name}"
            if (rows, columns, matrix) in planned or (columns, rows, matrix) in planned:
                continue
            _plan_matrix(
                plan,
                destination,
                source,
                relations,
                rows,
                columns,
                matrix,
                fill,
                _either(types, rows, columns, matrix),
                False,
                True,
                relayout,
                missing_ok=True,
            )


@contextlib.contextmanager
def _one_batch(destination: Any) -> Iterator[None]:
    """The writes into a ZarrDaf as one change (a ZIP: one commit, rolled back on failure)."""
    if isinstance(destination, ZarrDaf):
        with (
            destination._lock,
            destination._io(f"copying into {destination._name}"),
            destination._backend.transaction(),
        ):
            yield
    else:
        yield


def copy_all(
    *,
    destination: Any,
    source: Any,
    empty: Any = None,
    types: Any = None,
    overwrite: bool = False,
    insist: bool = True,
    relayout: bool = True,
    progress: bool | TextIO = False,
) -> None:
    """Copy every scalar, axis, vector and matrix of ``source`` into ``destination``.

    Axes the destination lacks are created; an axis it has is never replaced (not even with
    ``overwrite``) and must have the source's entries or a subset of them (values move by
    entry name), or more entries, which then need an ``empty`` value for each copied
    property: ``empty`` maps data keys to fill values, ``(axis, name)`` for a vector,
    ``(rows_axis, columns_axis, name)`` for a matrix (either axis order), and
    ``(main_axis, rows_axis, columns_axis, name)`` for the matrices ``<entry>_<name>`` of a
    tensor, which are also created, full of that value, for the entries of the main axis
    whose matrix neither data set has. ``types`` maps data keys (a scalar's name too) to
    element types to convert to (exactly, see :func:`copy_scalar`). ``empty`` and
    ``types`` may be dicts or lists of pairs.

    ``relayout=True`` (default) stores every copied matrix in both layouts; ``False``
    copies exactly the layouts the source stores. ``overwrite`` replaces existing
    properties; ``insist=False`` skips them; otherwise they are refused.

    Everything is validated before anything is written (relations, existing properties,
    missing ``empty`` values, ``types`` and the conversions they need); on a ZIP
    destination the writes are one commit. Errors name both data sets, the axis and the
    property. ``progress=True`` reports on stderr (or pass a stream).

    Parameters
    ----------
    destination : ZarrDaf or writer chain
        The data set written into.
    source : ZarrDaf, view or chain
        The data set read from.
    empty : mapping or sequence of pairs, optional
        Fill values by data key, for the entries of the destination's axes that ``source``
        lacks.
    types : mapping or sequence of pairs, optional
        Element types to convert to, by data key.
    overwrite : bool, default False
        Whether existing properties are replaced.
    insist : bool, default True
        Whether existing properties (without ``overwrite``) are an error rather than
        skipped.
    relayout : bool, default True
        Whether every copied matrix is stored in both layouts.
    progress : bool or text stream, default False
        Whether to report progress, on stderr or on the stream given.

    Raises
    ------
    DafReadOnlyError
        ``destination`` is read-only.
    DafExistsError
        ``destination`` has a property ``source`` has, without ``overwrite`` and with
        ``insist``.
    DafMismatchError
        An axis of both has entries that cannot be aligned (disjoint, or more entries in
        the destination without an ``empty`` value for a copied property).
    UnsafeCastError
        A value (or an ``empty`` value) does not convert exactly to its ``types`` entry.
    InvalidArgumentError
        ``empty`` or ``types`` is malformed (a key that is no data key).

    Examples
    --------
    >>> source = dafzarr.memory_daf(name="source").set_scalar("version", 3)
    >>> _ = source.add_axis("cell", ["A", "B"]).set_vector("cell", "age", [30, 40])
    >>> destination = dafzarr.memory_daf(name="destination").add_axis("cell", ["B", "A", "C"])
    >>> dafzarr.copy_all(destination=destination, source=source,
    ...                  empty={("cell", "age"): -1}, types={"version": "str"})
    >>> destination.get_scalar("version"), destination.get_np_vector("cell", "age").tolist()
    ('3', [40, 30, -1])
    """
    if getattr(destination, "read_only", True):
        raise DafReadOnlyError(
            f"can't modify the read-only daf data: {destination.name}\n"
            f"(copying from the daf data: {source.name})"
        )
    empties, tensors = _expand_tensors(_as_dict(empty, "empty"), [destination, source])
    types_map, _ = _expand_tensors(_as_dict(types, "types"), [destination, source])
    plan, relations = _plan(
        destination, source, empties, empty is not None, types_map, overwrite, insist, relayout
    )
    _plan_tensors(plan, destination, source, relations, tensors, types_map, relayout)
    stream = sys.stderr if progress is True else (progress or None)
    total = len(plan.scalars) + len(plan.axes) + len(plan.vectors) + len(plan.matrices)
    with (
        _one_batch(destination),
        Progress(total, "copying", stream is not None, stream, unit="properties") as bar,
    ):
        for name, value in plan.scalars:
            destination.set_scalar(name, value, overwrite=overwrite)
            bar.step(what=f"scalar {name}")
        for axis in plan.axes:
            if not copy_stored_axis(source, destination, axis):
                destination.add_axis(axis, source.axis_np_entries(axis))
            bar.step(what=f"axis {axis}")
        for axis, name, fill, eltype in plan.vectors:
            transfer_vector(
                destination,
                source,
                axis,
                name,
                axis,
                name,
                eltype=eltype,
                default=UNDEF,
                empty=fill,
                bestify=False,
                fraction=0.25,
                overwrite=overwrite,
                insist=True,
                relation=relations[axis],
            )
            bar.step(what=f"vector {axis}/{name}")
        for rows, columns, name, fill, eltype, layouts in plan.matrices:
            transfer_matrix(
                destination,
                source,
                rows,
                columns,
                name,
                rows,
                columns,
                name,
                eltype=eltype,
                default=UNDEF if fill is None else fill,
                empty=fill,
                bestify=False,
                fraction=0.25,
                relayout=layouts,
                overwrite=overwrite,
                insist=True,
                relations=(relations[rows], relations[columns]),
            )
            bar.step(what=f"matrix {rows},{columns}/{name}")
