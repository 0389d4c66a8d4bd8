"""The checks :func:`~dafzarr.daf.ops.concatenate` makes before it writes anything: its
arguments, the axes of the destination and of the data sets, and the ``empty`` values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....errors import (
    DafExistsError,
    DafMismatchError,
    DafMissingError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from .merge import MergeAction, PropertyKey, merge_entries

__all__ = ["ConcatPlan", "Empty", "check_arguments"]

#: What a lookup of ``empty`` gives for a key it does not hold.
NO_EMPTY: Any = object()


class Empty:
    """The ``empty`` argument: fill values of properties missing from some data sets, by
    data key (``"name"``, ``(axis, name)``, ``(rows_axis, columns_axis, name)``)."""

    def __init__(self, empty: Mapping[Any, Any] | None, dafs: Sequence[Any] = ()) -> None:
        self._values: dict[Any, Any] = {}
        for key, value in (empty or {}).items():
            key = tuple(key) if isinstance(key, list) else key
            if isinstance(key, tuple) and len(key) == 4:
                # a tensor: the matrices "<entry>_<name>" for each entry of its main axis
                main, rows, cols, name = key
                holder = next((d for d in dafs if d.has_axis(main)), None)
                if holder is None:
                    raise DafMissingError(
                        f"missing axis: {main}\nfor the empty value of the tensor: {name}"
                    )
                for entry in holder.axis_np_entries(main):
                    self._values[(rows, cols, f"{entry}_{name}")] = value
            else:
                self._values[key] = value

    def get(self, *keys: Any) -> Any:
        """The value of the first of ``keys`` that is given, else :data:`NO_EMPTY`."""
        for key in keys:
            value = self._values.get(key, NO_EMPTY)
            if value is not NO_EMPTY and value is not None:
                return value
        return NO_EMPTY


@dataclass
class ConcatPlan:
    """The checked arguments of one concatenation."""

    destination: Any
    sources: list[Any]
    axes: list[str]
    names: list[str]
    prefixes: list[bool]
    prefixed: list[set[str]] | None
    dataset_axis: str | None
    dataset_property: bool
    fraction: float
    overwrite: bool
    empty: Empty
    merge: list[tuple[PropertyKey, MergeAction]]
    other_axes: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)

    @property
    def into(self) -> str:
        """The closing line of messages: ``concatenated into the daf data: D``."""
        return f"concatenated into the daf data: {self.destination.name}"


def _per_axis(value: Any, count: int, what: str, kind: type) -> list[Any]:
    if isinstance(value, kind):
        return [value] * count
    if isinstance(value, Sequence) and not isinstance(value, str):
        out = list(value)
        if len(out) != count or not all(isinstance(v, kind) for v in out):
            raise InvalidArgumentError(
                f"{what} must be one {kind.__name__} or one per concatenated axis ({count})"
            )
        return out
    raise InvalidArgumentError(
        f"{what} must be one {kind.__name__} or one per concatenated axis ({count}), got {value!r}"
    )


def _prefixed(prefixed: Any, count: int) -> list[set[str]] | None:
    if prefixed is None:
        return None
    if isinstance(prefixed, set | frozenset):
        sets = [prefixed] * count
    elif (
        isinstance(prefixed, Sequence)
        and not isinstance(prefixed, str)
        and all(isinstance(s, set | frozenset) for s in prefixed)
    ):
        sets = list(prefixed)
    else:
        raise InvalidArgumentError(
            f"prefixed must be a set of names or one set per concatenated axis, got {prefixed!r}"
        )
    if len(sets) != count:
        raise InvalidArgumentError(f"prefixed has {len(sets)} sets for {count} concatenated axes")
    return [set(s) for s in sets]


def check_arguments(
    destination: Any,
    axis: str | Sequence[str],
    sources: Sequence[Any],
    names: Sequence[str] | None,
    dataset_axis: str | None,
    dataset_property: bool,
    prefix: bool | Sequence[bool],
    prefixed: Any,
    empty: Mapping[Any, Any] | None,
    fraction: float,
    merge: Any,
    overwrite: bool,
) -> ConcatPlan:
    """The arguments checked (§8.1 of the operations' specification) and the entries of the
    axes that are not concatenated; raises before anything is written."""
    axes = [axis] if isinstance(axis, str) else list(axis)
    if not axes or not all(isinstance(a, str) for a in axes):
        raise InvalidArgumentError("concatenate needs at least one axis name")
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"the concatenated axes are not unique: {axes}")
    sources = list(sources)
    if not sources:
        raise InvalidArgumentError("concatenate needs at least one data set to concatenate")
    names = [s.name for s in sources] if names is None else list(names)
    if len(names) != len(sources) or not all(isinstance(n, str) for n in names):
        raise InvalidArgumentError(f"{len(names)} names for {len(sources)} data sets")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"the data set names are not unique: {names}")
    if not (isinstance(fraction, float | int) and 0 < fraction < 1):
        raise InvalidArgumentError(
            f"sparse_if_saves_storage_fraction must be between 0 and 1, got {fraction!r}"
        )
    if empty is not None and not isinstance(empty, Mapping):
        raise InvalidArgumentTypeError("empty must be a mapping of data keys to values")
    plan = ConcatPlan(
        destination,
        sources,
        axes,
        names,
        _per_axis(prefix, len(axes), "prefix", bool),
        _prefixed(prefixed, len(axes)),
        dataset_axis,
        bool(dataset_property),
        float(fraction),
        bool(overwrite),
        Empty(empty, [destination, *sources]),
        merge_entries(merge),
    )
    _check_axes(plan)
    return plan


def _require_no_axis(axis: str, daf: Any) -> None:
    if daf.has_axis(axis):
        raise DafExistsError(f"existing axis: {axis}\nin the daf data: {daf.name}")


def _check_axes(plan: ConcatPlan) -> None:
    dest = plan.destination
    for a in plan.axes:
        _require_no_axis(a, dest)
        for src in plan.sources:
            if not src.has_axis(a):
                raise DafMissingError(
                    f"missing axis: {a}\nfor: concatenate!\nof the daf data: {src.name}"
                )
    for rows in plan.axes:
        for cols in plan.axes:
            for src in plan.sources:
                for m in sorted(src.matrices_set(rows, cols, relayout=False)):
                    raise DafMismatchError(
                        f"can't concatenate the matrix: {m}\nfor the concatenated rows axis: "
                        f"{rows}\nand the concatenated columns axis: {cols}\nin the daf data: "
                        f"{src.name}\n{plan.into}"
                    )
    if plan.dataset_axis is not None:
        if plan.dataset_axis in plan.axes:
            raise InvalidArgumentError(
                f"the dataset axis: {plan.dataset_axis}\nis also a concatenated axis"
            )
        for daf in (dest, *plan.sources):
            _require_no_axis(plan.dataset_axis, daf)
    first: dict[str, str] = {}
    for src in plan.sources:
        for a in sorted(src.axes_set()):
            if a in plan.axes:
                continue
            entries = np.asarray(src.axis_np_entries(a))
            if a not in plan.other_axes:
                _require_no_axis(a, dest)
                plan.other_axes[a] = entries
                first[a] = src.name
            elif not np.array_equal(plan.other_axes[a], entries):
                raise DafMismatchError(
                    f"different entries for the axis: {a}\nbetween the daf "
                    f"data: {first[a]}\nand the daf data: {src.name}\n"
                    f"{plan.into}"
                )
