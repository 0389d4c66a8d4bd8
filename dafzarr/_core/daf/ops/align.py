"""Relating an axis of a source data set to an axis of a destination data set, and placing
values read along the one at the entries of the other.

The two axes' entry sets are compared (DataAxesFormats.jl's rule):

* equal: ``same`` (values move by entry name, so an equal set in another order is aligned,
  where DataAxesFormats.jl would fail in the setter);
* the source has more entries: ``destination_is_subset`` (the extra source values are
  dropped);
* the destination has more entries: ``source_is_subset`` (the other entries need an
  ``empty`` value);
* anything else (including a partial overlap): ``disjoint entries in the axis: ...``, a
  :class:`~dafzarr.errors.DafMismatchError`, whatever ``empty`` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import DafMismatchError
from ...aliases import Array

__all__ = [
    "DESTINATION_IS_SUBSET",
    "SAME",
    "SOURCE_IS_SUBSET",
    "Relation",
    "check_subset",
    "missing_entries",
    "relate_axis",
]


SAME = "same"
DESTINATION_IS_SUBSET = "destination_is_subset"
SOURCE_IS_SUBSET = "source_is_subset"


@dataclass(frozen=True)
class Relation:
    """How the entries of ``source_axis`` (of the source) map onto ``destination_axis``.

    ``positions[i]`` is the source position of the destination's entry ``i`` (``-1`` when
    the source lacks it); ``None`` when both axes hold the same entries in the same order
    (values are used as they are, without a copy).
    """

    kind: str
    source_axis: str
    destination_axis: str
    n_source: int
    n_destination: int
    positions: Array | None

    @property
    def identity(self) -> bool:
        """Whether the source's values are the destination's as they are (same order)."""
        return self.positions is None

    def present(self) -> tuple[Array, Array]:
        """The destination positions the source has, and their source positions (both in
        the destination's order)."""
        if self.positions is None:
            every = np.arange(self.n_destination, dtype=np.int64)
            return every, every
        where = np.flatnonzero(self.positions >= 0)
        return where, self.positions[where]

    def missing(self) -> Array:
        """The destination positions the source lacks."""
        if self.positions is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.positions < 0)

    def destination_of_source(self) -> Array:
        """For each source position, its destination position (``-1``: dropped)."""
        out = np.full(self.n_source, -1, dtype=np.int64)
        where, sources = self.present()
        out[sources] = where
        return out


def new_axis_relation(axis: str, n: int) -> Relation:
    """The relation of a source axis to the copy of it that a copy creates."""
    return Relation(SAME, axis, axis, n, n, None)


def relate_axis(source: Any, source_axis: str, destination: Any, destination_axis: str) -> Relation:
    """The :class:`Relation` of ``source_axis`` of ``source`` to ``destination_axis`` of
    ``destination``. A missing axis raises :class:`~dafzarr.errors.DafMissingError` (naming
    its data set); entry sets that are neither equal nor one inside the other raise
    :class:`~dafzarr.errors.DafMismatchError`."""
    src = np.asarray(source.axis_np_entries(source_axis))
    dst = np.asarray(destination.axis_np_entries(destination_axis))
    if len(src) == len(dst) and (src is dst or bool(np.array_equal(src, dst))):
        return Relation(SAME, source_axis, destination_axis, len(src), len(dst), None)
    index = {name: i for i, name in enumerate(src.tolist())}
    positions = np.fromiter(
        (index.get(name, -1) for name in dst.tolist()), dtype=np.int64, count=len(dst)
    )
    found = int(np.count_nonzero(positions >= 0))
    if found == len(dst) == len(src):
        kind = SAME
    elif found == len(dst):
        kind = DESTINATION_IS_SUBSET
    elif found == len(src):
        kind = SOURCE_IS_SUBSET
    else:
        raise DafMismatchError(
            f"disjoint entries in the axis: {source_axis}\nof the source daf data: "
            f"{source.name}\nand the axis: {destination_axis}\nof the target daf data: "
            f"{destination.name}"
        )
    return Relation(kind, source_axis, destination_axis, len(src), len(dst), positions)


def missing_entries(
    relation: Relation, source_name: str, destination_name: str, what_for: str
) -> DafMismatchError:
    """The error of a destination axis with entries the source lacks and no ``empty``
    value to fill them (``what_for``: ``the vector: age\\nto the vector: age``)."""
    return DafMismatchError(
        f"missing entries in the axis: {relation.source_axis}\nof the source daf data: "
        f"{source_name}\nwhich are needed for copying {what_for}\nof the axis: "
        f"{relation.destination_axis}\nof the target daf data: {destination_name}"
    )


def check_subset(
    relation: Relation, source_name: str, destination_name: str, what_for: str | None
) -> None:
    """Refuse a ``source_is_subset`` relation when there is no ``empty`` value
    (``what_for`` is then the text naming the copied property; ``None``: there is one)."""
    if relation.kind == SOURCE_IS_SUBSET and what_for is not None:
        raise missing_entries(relation, source_name, destination_name, what_for)
