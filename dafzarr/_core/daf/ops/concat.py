"""``concatenate``: data sets stacked along one or more axes into a new data set
(DataAxesFormats.jl's ``concatenate!``).

Everything is checked and planned first (axes, ``empty`` values, element types, sparse or
dense, ``merge``), so that a refused concatenation writes nothing; then the axes are written,
then each concatenated property, the large matrices block by block (:mod:`._concat_write`).
On a ZIP data set the whole concatenation is one commit: an error or a crash midway leaves
the destination as it was.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import scipy.sparse as sp

from ....errors import DafExistsError, DafMismatchError, DafzarrError, InvalidArgumentTypeError
from ...casting import cast_for_storage
from ...progress import Progress
from ..chain import WriteChain
from ..zarrdaf import ZarrDaf
from .concat_checks import NO_EMPTY, ConcatPlan, check_arguments
from .concat_dtypes import Dtype, is_zero, merge_dtypes, saves_storage, texts
from .concat_merge import MergePlan, plan_merge, write_merge
from .concat_sources import SliceInfo, matrix_info, read_vector, vector_info
from .concat_write import MatrixPart, write_dense_matrix, write_sparse_matrix

__all__ = ["concatenate"]


@dataclass
class Stacked:
    """One property stacked along a concatenated axis: a vector of ``axis``, or the matrix
    ``rows x axis``; ``infos`` holds what each data set stores of it (``None``: missing)."""

    axis: str
    rows: str | None
    name: str
    infos: list[SliceInfo | None]
    empty: Any
    dtype: Dtype
    sparse: bool
    prefix: bool


def _missing_text(what: str, plan: ConcatPlan, src: Any) -> str:
    return (
        f"no empty value for the {what}\nwhich is missing from the daf data: {src.name}\n"
        f"{plan.into}"
    )


def _prefixes_vector(plan: ConcatPlan, index: int, name: str) -> bool:
    if plan.prefixed is not None:
        return name in plan.prefixed[index]
    return any(
        p and (name == a or name.startswith(a + "."))
        for a, p in zip(plan.axes, plan.prefixes, strict=True)
    )


def _stack(
    plan: ConcatPlan,
    axis: str,
    rows: str | None,
    name: str,
    infos: list[SliceInfo | None],
    empty: Any,
    prefix: bool,
    what: str,
) -> Stacked:
    for src, info in zip(plan.sources, infos, strict=True):
        if info is None and empty is NO_EMPTY:
            raise DafMismatchError(_missing_text(what, plan, src))
    value = None if empty is NO_EMPTY else empty
    dtype = merge_dtypes([i.dtype if i is not None else None for i in infos], value)
    assert dtype is not None  # some data set has the property
    if prefix:
        dtype = "str"
    sizes = [src.axis_length(axis) for src in plan.sources]
    nrows = 1 if rows is None else len(plan.other_axes[rows])
    stored = sum(
        (info.stored if info.sparse else size * nrows)
        if info is not None
        else (0 if is_zero(value) else size * nrows)
        for info, size in zip(infos, sizes, strict=True)
    )
    sparse = saves_storage(
        dtype, sum(sizes) * nrows, stored, plan.fraction, None if rows is None else sum(sizes)
    )
    return Stacked(axis, rows, name, infos, value, dtype, sparse, prefix)


def _plan_axis(plan: ConcatPlan, index: int) -> list[Stacked]:
    axis = plan.axes[index]
    out: list[Stacked] = []
    names: set[str] = set()
    for src in plan.sources:
        names |= src.vectors_set(axis)
        if (
            plan.dataset_axis is not None
            and plan.dataset_property
            and not plan.overwrite
            and plan.dataset_axis in names
        ):
            raise DafExistsError(
                f"existing vector: {plan.dataset_axis}\nfor the axis: {axis}\nin the daf data: "
                f"{src.name}\nwhere the dataset property of the concatenation goes\n"
                f"{plan.into}"
            )
    for name in sorted(names):
        infos = [vector_info(src, axis, name) for src in plan.sources]
        out.append(
            _stack(
                plan,
                axis,
                None,
                name,
                infos,
                plan.empty.get((axis, name)),
                _prefixes_vector(plan, index, name),
                f"vector: {name}\nof the axis: {axis}",
            )
        )
    for rows in plan.other_axes:
        names = set()
        for src in plan.sources:
            if src.has_axis(rows):
                names |= src.matrices_set(rows, axis, relayout=True)
        for name in sorted(names):
            infos = [matrix_info(src, rows, axis, name) for src in plan.sources]
            out.append(
                _stack(
                    plan,
                    axis,
                    rows,
                    name,
                    infos,
                    plan.empty.get((rows, axis, name), (axis, rows, name)),
                    False,
                    f"matrix: {name}\nof the rows axis: {rows}\nand the columns axis: {axis}",
                )
            )
    return out


def _entries(plan: ConcatPlan, index: int) -> np.ndarray[Any, Any]:
    axis = plan.axes[index]
    parts = []
    for src, name in zip(plan.sources, plan.names, strict=True):
        entries = np.asarray(src.axis_np_entries(axis), dtype=object)
        parts.append(
            np.array([f"{name}.{e}" for e in entries], dtype=object)
            if plan.prefixes[index]
            else entries
        )
    out = np.concatenate(parts) if parts else np.zeros(0, object)
    if len(set(out.tolist())) != out.size:
        raise DafMismatchError(
            f"non-unique entries for new axis: {axis}\nin the daf data: {plan.destination.name}"
        )
    return out


def _vector_value(plan: ConcatPlan, s: Stacked) -> Any:
    """The stacked vector: a dense array, or a ``1 x n`` sparse matrix."""
    sizes = [src.axis_length(s.axis) for src in plan.sources]
    n = sum(sizes)
    where = f"vector {s.name} of the axis {s.axis}\nin the daf data: {plan.destination.name}"
    if isinstance(s.dtype, str):
        out = np.empty(n, dtype=object)
        fill = texts(np.array([s.empty]))[0] if s.empty is not None else ""
    elif not s.sparse:
        out = np.empty(n, dtype=s.dtype)
        fill = cast_for_storage(np.array(s.empty), s.dtype, where) if s.empty is not None else None
    positions: list[np.ndarray[Any, Any]] = []
    values: list[np.ndarray[Any, Any]] = []
    offset = 0
    for src, name, info, size in zip(plan.sources, plan.names, s.infos, sizes, strict=True):
        if info is None:
            if s.sparse:
                if not is_zero(s.empty):
                    positions.append(np.arange(offset, offset + size))
                    values.append(
                        np.full(size, cast_for_storage(np.array(s.empty), s.dtype, where))
                    )
            else:
                out[offset : offset + size] = fill
            offset += size
            continue
        got = read_vector(src, s.axis, s.name)
        if s.sparse:
            pos, vals = got if isinstance(got, tuple) else (np.flatnonzero(got), None)
            if vals is None:
                vals = np.asarray(got)[pos]
            positions.append(np.asarray(pos, np.int64) + offset)
            values.append(cast_for_storage(vals, s.dtype, where))
        else:
            if isinstance(got, tuple):
                dense = np.zeros(size, got[1].dtype)
                dense[got[0]] = got[1]
                got = dense
            if isinstance(s.dtype, str):
                got = texts(got)
                if s.prefix:
                    got = np.array([f"{name}.{v}" if v != "" else v for v in got], object)
                out[offset : offset + size] = got
            else:
                out[offset : offset + size] = cast_for_storage(got, s.dtype, where)
        offset += size
    if not s.sparse:
        return out
    pos = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    vals = np.concatenate(values) if values else np.zeros(0, s.dtype)
    return sp.csr_matrix((vals, pos, np.array([0, pos.size])), shape=(1, n))


def _string_matrix(plan: ConcatPlan, s: Stacked) -> np.ndarray[Any, Any]:
    assert s.rows is not None
    nr = len(plan.other_axes[s.rows])
    blocks = []
    for src, info in zip(plan.sources, s.infos, strict=True):
        size = src.axis_length(s.axis)
        if info is None:
            blocks.append(np.full((nr, size), texts(np.array([s.empty]))[0], dtype=object))
            continue
        value = src.get_np_matrix(s.rows, s.axis, s.name)
        blocks.append(texts(value.toarray() if sp.issparse(value) else np.asarray(value)))
    return np.asfortranarray(np.concatenate(blocks, axis=1))


@contextlib.contextmanager
def _one_commit(dest: Any) -> Iterator[tuple[ZarrDaf, list[str]]]:
    """The ZarrDaf the stacked matrices are written into, and a list to name each axis
    created in it. On a ZIP every write of the block joins one commit, which an error rolls
    back; elsewhere an error deletes the axes created (and so what was written along them)."""
    target = dest.last if isinstance(dest, WriteChain) else dest
    if not isinstance(target, ZarrDaf):
        raise InvalidArgumentTypeError(
            f"concatenate writes into a ZarrDaf or a chain_writer, got {type(dest).__name__}"
        )
    target._check_writable()
    created: list[str] = []
    try:
        with target._backend.transaction():
            yield target, created
    except BaseException:
        if not target._backend.rolls_back:
            for axis in reversed(created):
                with contextlib.suppress(DafzarrError, OSError):
                    target.delete_axis(axis, must_exist=False)
        raise


def concatenate(
    destination: Any,
    axis: str | Sequence[str],
    sources: Sequence[Any],
    names: Sequence[str] | None = None,
    dataset_axis: str | None = "dataset",
    dataset_property: bool = True,
    prefix: bool | Sequence[bool] = False,
    prefixed: set[str] | Sequence[set[str]] | None = None,
    empty: Mapping[Any, Any] | None = None,
    sparse_if_saves_storage_fraction: float = 0.25,
    merge: Any = None,
    overwrite: bool = False,
    *,
    progress: bool | TextIO = False,
) -> None:
    """Concatenate data sets along one or more axes into ``destination``.

    Parameters
    ----------
    destination
        The data set written into (a writable :class:`~dafzarr.daf.ZarrDaf` or a
        ``chain_writer``); it must not have the concatenated axes, the other axes of the
        data sets, or the dataset axis.
    axis
        The concatenated axis, or a list of them. Every data set must have each; its entries
        are the data sets' entries one after another.
    sources
        The data sets (any Daf readers: ``ZarrDaf``, views, chains).
    names
        One unique name per data set (default: each data set's ``name``).
    dataset_axis
        An axis created with one entry per data set (``None``: none).
    dataset_property
        With a dataset axis, a ``str`` vector named like it on each concatenated axis, holding
        the data set each entry comes from.
    prefix
        Whether the entries of a concatenated axis (one bool, or one per axis) are prefixed
        with ``"<name>."``; the values of the vectors that refer to such an axis (named like
        it, or ``"<axis>.<anything>"``) are prefixed too.
    prefixed
        Instead of that rule, exactly the vectors to prefix (a set, or one set per axis).
    empty
        Fill values of properties missing from some data sets, by key: ``(axis, name)`` for
        vectors, ``(rows_axis, columns_axis, name)`` (either order) for matrices,
        ``(main_axis, rows_axis, columns_axis, name)`` for the matrices ``"<entry>_<name>"``
        of each entry of ``main_axis``, ``"name"`` for collected scalars. A missing property without one is an error. The value's type
        takes part in the element type of the result.
    sparse_if_saves_storage_fraction
        A result is stored sparse when that saves at least this fraction of the dense size.
    merge
        What to do with scalars, vectors of the other axes and matrices between them: a
        mapping (or pairs) from keys (``"name"``, ``(axis, name)``, ``(rows, columns,
        name)``, parts may be ``"*"``) to a :class:`MergeAction`; the last matching entry
        wins, properties with none are skipped.
    overwrite
        Replace merged properties the destination already has.
    progress
        Draw a progress bar on stderr (or on the stream given).

    Raises
    ------
    DafExistsError, DafMissingError, DafMismatchError, InvalidArgumentError
        Before anything is written: see the specification's rules.

    Examples
    --------
    >>> first = dafzarr.memory_daf(name="first").add_axis("cell", ["A", "B"])
    >>> _ = first.set_vector("cell", "age", [30, 40]).set_scalar("organism", "human")
    >>> second = dafzarr.memory_daf(name="second").add_axis("cell", ["A", "C"])
    >>> _ = second.set_vector("cell", "age", [50, 60]).set_scalar("organism", "mouse")
    >>> both = dafzarr.memory_daf(name="both")
    >>> dafzarr.concatenate(both, "cell", [first, second], names=["one", "two"], prefix=True,
    ...                     merge={"organism": dafzarr.MergeAction.CollectAxis})
    >>> both.axis_np_entries("cell").tolist(), both.get_np_vector("cell", "age").tolist()
    (['one.A', 'one.B', 'two.A', 'two.C'], [30, 40, 50, 60])
    >>> both.get_np_vector("cell", "dataset").tolist()
    ['one', 'one', 'two', 'two']
    >>> both.get_np_vector("dataset", "organism").tolist()
    ['human', 'mouse']
    """
    plan = check_arguments(
        destination,
        axis,
        sources,
        names,
        dataset_axis,
        dataset_property,
        prefix,
        prefixed,
        empty,
        sparse_if_saves_storage_fraction,
        merge,
        overwrite,
    )
    entries = [_entries(plan, i) for i in range(len(plan.axes))]
    stacked = [_plan_axis(plan, i) for i in range(len(plan.axes))]
    merged: MergePlan = plan_merge(plan)
    steps = sum(len(plan.sources) if s.rows is not None else 1 for per in stacked for s in per)
    stream = sys.stderr if progress is True else (progress or None)
    with (
        Progress(
            steps + len(merged.items), "concatenating", stream is not None, stream, unit="parts"
        ) as bar,
        _one_commit(destination) as (target, created),
    ):
        if plan.dataset_axis is not None:
            created.append(plan.dataset_axis)
            destination.add_axis(plan.dataset_axis, plan.names)
        for other, other_entries in plan.other_axes.items():
            created.append(other)
            destination.add_axis(other, other_entries)
        for a, axis_entries, per in zip(plan.axes, entries, stacked, strict=True):
            created.append(a)
            destination.add_axis(a, axis_entries)
            if plan.dataset_axis is not None and plan.dataset_property:
                sizes = [src.axis_length(a) for src in plan.sources]
                destination.set_vector(
                    a,
                    plan.dataset_axis,
                    np.repeat(np.array(plan.names, dtype=object), sizes),
                    overwrite=plan.overwrite,
                )
            for s in per:
                _write_stacked(plan, destination, target, s, bar)
        write_merge(plan, merged, destination, bar)


def _write_stacked(
    plan: ConcatPlan, destination: Any, target: ZarrDaf, s: Stacked, bar: Progress
) -> None:
    if s.rows is None:
        destination.set_vector(s.axis, s.name, _vector_value(plan, s), overwrite=plan.overwrite)
        bar.step(what=f"vector {s.name}")
        return
    if isinstance(s.dtype, str):
        destination.set_matrix(
            s.rows,
            s.axis,
            s.name,
            _string_matrix(plan, s),
            relayout=False,
            overwrite=plan.overwrite,
        )
        bar.step(len(plan.sources), what=f"matrix {s.name}")
        return
    nr = len(plan.other_axes[s.rows])
    parts = [
        MatrixPart(
            src if info is not None else None,
            s.rows,
            s.axis,
            s.name,
            nr,
            src.axis_length(s.axis),
            s.empty,
            s.dtype,
        )
        for src, info in zip(plan.sources, s.infos, strict=True)
    ]

    def step() -> None:
        bar.step(what=f"matrix {s.name}")

    write = write_sparse_matrix if s.sparse else write_dense_matrix
    write(target, s.rows, s.axis, s.name, parts, s.dtype, step)
