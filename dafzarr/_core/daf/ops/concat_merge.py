"""The ``merge`` step of :func:`~dafzarr.daf.ops.concatenate`: scalars, vectors of the axes
that are not concatenated and matrices between them, skipped, taken from the last data set
that has them, or collected along the dataset axis."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ....errors import DafExistsError, DafMismatchError
from ...casting import cast_for_storage
from ...progress import Progress
from .concat_checks import NO_EMPTY, ConcatPlan
from .concat_dtypes import Dtype, empty_dtype, is_zero, merge_dtypes, saves_storage, texts
from .concat_sources import read_vector, vector_info
from .merge import MergeAction, action_for

__all__ = ["MergePlan", "plan_merge", "write_merge"]

_NO_AXIS = (
    "of the daf data sets concatenated into the daf data: {}\nbecause no data set axis was created"
)


@dataclass
class MergeItem:
    """One merged property: ``key`` is ``"name"``, ``(axis, name)`` or ``(rows, cols,
    name)``."""

    key: Any
    action: MergeAction
    dtype: Dtype | None = None
    empty: Any = None
    sparse: bool = False


@dataclass
class MergePlan:
    """The merged properties, in the order they are written."""

    items: list[MergeItem] = field(default_factory=list)


def _scalar_dtype(value: Any) -> Dtype | None:
    return empty_dtype(value.item() if isinstance(value, np.ndarray) else value)


def _collect_scalar(plan: ConcatPlan, name: str) -> MergeItem:
    dest = plan.destination.name
    if plan.dataset_axis is None:
        raise DafMismatchError(
            f"can't collect axis for the scalar: {name}\n" + _NO_AXIS.format(dest)
        )
    empty = plan.empty.get(name)
    types = []
    for src in plan.sources:
        if src.has_scalar(name):
            types.append(_scalar_dtype(src.get_scalar(name)))
        elif empty is NO_EMPTY:
            raise DafMismatchError(
                f"no empty value for the scalar: {name}\nwhich is missing "
                f"from the daf data: {src.name}\n{plan.into}"
            )
    value = None if empty is NO_EMPTY else empty
    return MergeItem(name, MergeAction.CollectAxis, merge_dtypes(types, value), value)


def _collect_vector(plan: ConcatPlan, axis: str, name: str) -> MergeItem:
    dest = plan.destination.name
    if plan.dataset_axis is None:
        raise DafMismatchError(
            f"can't collect axis for the vector: {name}\nof the axis: "
            f"{axis}\n" + _NO_AXIS.format(dest)
        )
    empty = plan.empty.get((axis, name))
    infos = [vector_info(src, axis, name) for src in plan.sources]
    for src, info in zip(plan.sources, infos, strict=True):
        if info is None and empty is NO_EMPTY:
            raise DafMismatchError(
                f"no empty value for the vector: {name}\nof the axis: {axis}"
                f"\nwhich is missing from the daf data: {src.name}\n"
                f"{plan.into}"
            )
    value = None if empty is NO_EMPTY else empty
    dtype = merge_dtypes([i.dtype if i is not None else None for i in infos], value)
    assert dtype is not None
    n = len(plan.other_axes[axis])
    stored = sum(
        (i.stored if i.sparse else n) if i is not None else (0 if is_zero(value) else n)
        for i in infos
    )
    sparse = saves_storage(dtype, n * len(infos), stored, plan.fraction)
    return MergeItem((axis, name), MergeAction.CollectAxis, dtype, value, sparse)


def plan_merge(plan: ConcatPlan) -> MergePlan:
    """Every merged property with its action, checked before anything is written."""
    out = MergePlan()
    if not plan.merge:
        return out
    scalars: set[str] = set()
    for src in plan.sources:
        scalars |= src.scalars_set()
    for name in sorted(scalars):
        action = action_for(plan.merge, name)
        if action is MergeAction.CollectAxis:
            out.items.append(_collect_scalar(plan, name))
        elif action is MergeAction.LastValue:
            if plan.destination.has_scalar(name) and not plan.overwrite:
                raise DafExistsError(
                    f"existing scalar: {name}\nin the daf data: {plan.destination.name}"
                )
            out.items.append(MergeItem(name, action))
    others = sorted(plan.other_axes)
    for axis in others:
        names: set[str] = set()
        for src in plan.sources:
            if src.has_axis(axis):
                names |= src.vectors_set(axis)
        for name in sorted(names):
            action = action_for(plan.merge, (axis, name))
            if action is MergeAction.CollectAxis:
                out.items.append(_collect_vector(plan, axis, name))
            elif action is MergeAction.LastValue:
                out.items.append(MergeItem((axis, name), action))
    for rows in others:
        for cols in others:
            names = set()
            for src in plan.sources:
                if src.has_axis(rows) and src.has_axis(cols):
                    names |= src.matrices_set(rows, cols, relayout=False)
            for name in sorted(names):
                action = action_for(plan.merge, (rows, cols, name))
                if action is MergeAction.CollectAxis:
                    raise DafMismatchError(
                        f"can't collect axis for the matrix: {name}\nof the rows axis: {rows}\n"
                        f"and the columns axis: {cols}\nof the daf data sets concatenated into "
                        f"the daf data: {plan.destination.name}\nbecause that would create a "
                        "3D tensor, which is not supported"
                    )
                if action is MergeAction.LastValue:
                    out.items.append(MergeItem((rows, cols, name), action))
    return out


def _last(plan: ConcatPlan, has: Any) -> Any:
    return next(src for src in reversed(plan.sources) if has(src))


def _as_value(got: Any, n: int) -> Any:
    """A vector as read (dense, or 0-based positions and values) as a value to store."""
    if isinstance(got, tuple):
        pos, vals = got
        return sp.csr_matrix((vals, pos, np.array([0, len(pos)])), shape=(1, n))
    return got


def _collected_scalars(plan: ConcatPlan, item: MergeItem) -> np.ndarray[Any, Any]:
    values = [
        src.get_scalar(item.key) if src.has_scalar(item.key) else item.empty for src in plan.sources
    ]
    if isinstance(item.dtype, str):
        return np.array([texts(np.array([v]))[0] for v in values], dtype=object)
    where = f"scalar {item.key} collected into the daf data: {plan.destination.name}"
    return np.array(
        [cast_for_storage(np.array(v), item.dtype, where) for v in values], dtype=item.dtype
    )


def _collected_vectors(plan: ConcatPlan, item: MergeItem) -> Any:
    axis, name = item.key
    n = len(plan.other_axes[axis])
    where = f"vector {name} of the axis {axis} collected into the daf data: {plan.destination.name}"
    columns = []
    for src in plan.sources:
        if src.has_axis(axis) and src.has_vector(axis, name):
            got = read_vector(src, axis, name)
            if isinstance(got, tuple):
                dense = np.zeros(n, got[1].dtype)
                dense[got[0]] = got[1]
                got = dense
        else:
            got = np.full(n, item.empty)
        if isinstance(item.dtype, str):
            columns.append(texts(got))
        else:
            columns.append(cast_for_storage(got, item.dtype, where))
    matrix = np.stack(columns, axis=1) if columns else np.zeros((n, 0))
    matrix = np.asfortranarray(matrix)
    return sp.csc_matrix(matrix) if item.sparse else matrix


def write_merge(plan: ConcatPlan, merged: MergePlan, dest: Any, bar: Progress) -> None:
    """Write the merged properties."""
    ow = plan.overwrite
    for item in merged.items:
        key = item.key
        if isinstance(key, str):
            if item.action is MergeAction.LastValue:
                src = _last(plan, lambda s, k=key: s.has_scalar(k))
                dest.set_scalar(key, src.get_scalar(key), overwrite=ow)
            else:
                assert plan.dataset_axis is not None
                dest.set_vector(
                    plan.dataset_axis, key, _collected_scalars(plan, item), overwrite=ow
                )
        elif len(key) == 2:
            axis, name = key
            if item.action is MergeAction.LastValue:
                src = _last(plan, lambda s, a=axis, v=name: s.has_axis(a) and s.has_vector(a, v))
                dest.set_vector(
                    axis,
                    name,
                    _as_value(read_vector(src, axis, name), src.axis_length(axis)),
                    overwrite=ow,
                )
            else:
                assert plan.dataset_axis is not None
                dest.set_matrix(
                    axis,
                    plan.dataset_axis,
                    name,
                    _collected_vectors(plan, item),
                    relayout=False,
                    overwrite=ow,
                )
        else:
            rows, cols, name = key
            src = _last(
                plan,
                lambda s, r=rows, c=cols, m=name: (
                    s.has_axis(r) and s.has_axis(c) and s.has_matrix(r, c, m, relayout=False)
                ),
            )
            dest.set_matrix(
                rows,
                cols,
                name,
                src.get_np_matrix(rows, cols, name, relayout=False),
                relayout=False,
                overwrite=ow,
            )
        bar.step(what=key if isinstance(key, str) else "/".join(key))
