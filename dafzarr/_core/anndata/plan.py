"""A write plan: every Daf property an AnnData object becomes, checked before the first write.

Encoding an AnnData object only records what to write; names are checked (valid Daf names,
no two elements mapped to one property, no clash with what the destination holds) as they
are planned, so an element that cannot be kept raises before the data set is touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import AnnDataConversionError, DafzarrError
from ..daf.layout import element_type
from ..daf.names import check_name
from ..daf.zarrdaf import ZarrDaf
from .escapes import daf_name

__all__ = ["ConversionPlan", "Spec", "daf_dtype"]

Spec = dict[str, Any]  # the manifest entry of one element


def daf_dtype(dtype: Any, where: str) -> None:
    """Refuse (naming ``where``) a numpy dtype Daf has no element type for."""
    try:
        element_type(dtype, where)
    except (DafzarrError, TypeError):
        raise AnnDataConversionError(
            f"{where}: dtype {dtype} has no Daf element type (Daf stores bool, int8..int64, "
            "uint8..uint64, float32, float64 and strings)"
        ) from None


class ConversionPlan:
    """The axes, vectors, matrices and scalars to write, in order, for one AnnData object."""

    def __init__(self, existing: ZarrDaf | None, relayout: bool) -> None:
        self.existing = existing
        self.relayout = relayout
        self.axes: dict[str, np.ndarray[Any, Any]] = {}
        self._owners: dict[tuple[str, ...], str] = {}
        self._ops: list[Callable[[ZarrDaf], Any]] = []

    def _claim(self, key: tuple[str, ...], where: str) -> None:
        for part in key[1:]:
            try:
                check_name(part, key[0])
            except DafzarrError as exc:
                raise AnnDataConversionError(f"{where}: no valid Daf name: {exc}") from None
        if key in self._owners:
            raise AnnDataConversionError(
                f"{where}: its Daf {key[0]} {key[-1]!r} is already taken by {self._owners[key]}"
            )
        self._owners[key] = where

    def axis(self, name: str, entries: Any, where: str) -> None:
        """An axis with these entries; one planned or stored already must have the same ones.

        Every name a plan takes is an AnnData name, stored under :func:`daf_name`."""
        name = daf_name(name)
        values = np.asarray(entries, dtype=object)
        known = self.axes.get(name)
        if known is None and self.existing is not None and self.existing.has_axis(name):
            known = np.asarray(self.existing.axis_np_entries(name), dtype=object)
            self.axes[name] = known
        if known is not None:
            if not np.array_equal(known, values):
                raise AnnDataConversionError(
                    f"{where}: needs the axis {name!r} with {len(values)} entries, but that axis "
                    f"holds {len(known)} other entries ({self._owners.get(('axis', name), 'the destination')})"
                )
            return
        if not all(isinstance(v, str) for v in values.tolist()):
            raise AnnDataConversionError(f"{where}: the entries of axis {name!r} are not all str")
        if len(set(values.tolist())) != len(values):
            raise AnnDataConversionError(f"{where}: the entries of axis {name!r} are not unique")
        self._claim(("axis", name), where)
        self.axes[name] = values
        self._ops.append(lambda d: d.add_axis(name, values.tolist()))  # a list: no per-name check

    def _check_free(self, kind: str, *key: str, where: str) -> None:
        self._claim((kind, *key), where)
        d = self.existing
        if d is None:
            return
        taken = {
            "vector": lambda: d.has_axis(key[0]) and d.has_vector(key[0], key[1]),
            "matrix": lambda: (
                d.has_axis(key[0]) and d.has_axis(key[1]) and d.has_matrix(key[0], key[1], key[2])
            ),
            "scalar": lambda: d.has_scalar(key[0]),
        }[kind]()
        if taken:
            raise AnnDataConversionError(
                f"{where}: the destination holds the {kind} {'/'.join(key)} already"
            )

    def vector(self, axis: str, name: str, values: Any, where: str) -> None:
        """A vector on a planned axis."""
        axis, name = daf_name(axis), daf_name(name)
        self._check_free("vector", axis, name, where=where)
        self._ops.append(lambda d: d.set_vector(axis, name, values))

    def matrix(
        self, rows: str, cols: str, name: str, value: Any, where: str, indtype: Any = None
    ) -> None:
        """A matrix on two planned axes (both layouts with ``relayout``, never for a square);
        ``indtype``: the index type of a sparse one."""
        rows, cols, name = daf_name(rows), daf_name(cols), daf_name(name)
        self._check_free("matrix", rows, cols, name, where=where)
        if self.relayout and rows != cols:
            self._check_free("matrix", cols, rows, name, where=where)
        self._ops.append(
            lambda d: d.set_matrix(rows, cols, name, value, relayout=self.relayout, indtype=indtype)
        )

    def reserve_scalar(self, name: str, where: str) -> None:
        """Claim a scalar name the caller writes itself after :meth:`run`."""
        self._check_free("scalar", daf_name(name), where=where)

    def scalar(self, name: str, value: Any, where: str) -> None:
        """A scalar."""
        name = daf_name(name)
        self._check_free("scalar", name, where=where)
        self._ops.append(lambda d: d.set_scalar(name, value))

    def run(self, daf: ZarrDaf) -> None:
        """Write everything in the planned order (each axis before what lies on it)."""
        for op in self._ops:
            op(daf)
