"""Axes of a ZarrDaf: named lists of unique entry names that vectors and matrices run along."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DafArgumentError, DafExistsError, DafMissingError
from ..casting import unmasked
from . import layout as lay
from .names import can_be_stored, check_name, entry_positions, join_path
from .storage import DafStorage
from .values import as_strings


@dataclass(frozen=True)
class EncodedNames:
    """An axis' ``count`` entries as the vlen-utf8 ``chunk`` that stores them (checked)."""

    chunk: bytes
    count: int


class Axes:
    """The axes, their entries and positions (cached as read); ``require_axis`` for the
    properties on them."""

    def __init__(self, storage: DafStorage) -> None:
        self._storage = storage
        self._cache: dict[str, np.ndarray[Any, Any]] = {}

    @property
    def cache(self) -> dict[str, np.ndarray[Any, Any]]:
        """The entries of the axes read so far, by axis."""
        return self._cache

    def require_axis(self, axis: str) -> None:
        if not self.has_axis(axis):
            raise DafMissingError(f"missing axis: {axis}\nin the daf data: {self._storage.name}")

    def has_axis(self, axis: str) -> bool:
        """``ZarrDaf.has_axis``: whether ``axes/<axis>`` is an array."""
        return can_be_stored(axis) and self._storage.node_kind(join_path("axes", axis)) == "array"

    def axes_set(self) -> set[str]:
        """``ZarrDaf.axes_set``: the arrays under ``axes``."""
        return {n for n in self._storage.backend.children("axes") if self.has_axis(n)}

    def axis_length(self, axis: str) -> int:
        """``ZarrDaf.axis_length``: the length of ``axes/<axis>`` (from its metadata)."""
        self.require_axis(axis)
        return self.axis_len(axis)

    def axis_len(self, axis: str) -> int:
        shape = self._storage.array_info(join_path("axes", axis)).shape
        return int(shape[0]) if shape else 0

    def axis_np_entries(self, axis: str) -> np.ndarray[Any, Any]:
        """``ZarrDaf.axis_np_entries``: ``axes/<axis>`` read once, then cached."""
        self.require_axis(axis)
        cached = self._cache.get(axis)
        if cached is None:
            cached = self._storage.read_array(join_path("axes", axis)).reshape(-1)
            self._cache[axis] = cached
        return cached

    def axis_dict(self, axis: str) -> dict[str, int]:
        """``ZarrDaf.axis_dict``: the cached entries, numbered."""
        return {str(n): i for i, n in enumerate(self.axis_np_entries(axis))}

    def axis_np_indices(
        self,
        axis: str,
        names: Sequence[str],
        *,
        allow_empty: bool = False,
        allow_missing: bool = False,
    ) -> np.ndarray[Any, Any]:
        """``ZarrDaf.axis_np_indices``: ``names`` looked up in :meth:`axis_dict`."""
        return entry_positions(
            self.axis_dict(axis), names, axis, self._storage.name, allow_empty, allow_missing
        )

    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> None:
        """``ZarrDaf.add_axis``: check the entries, then :meth:`add_checked_axis`."""
        self._storage.check_writable()
        check_name(axis, "axis")
        where = f"entries of the axis {axis}\nin the daf data: {self._storage.name}"
        names = as_strings(unmasked(entries, where), where).reshape(-1)
        if len(set(names.tolist())) != len(names):
            raise self.repeated_entries(axis)
        self.add_checked_axis(axis, names, overwrite)

    def repeated_entries(self, axis: str) -> DafArgumentError:
        return DafArgumentError(
            f"non-unique entries for new axis: {axis}\nin the daf data: {self._storage.name}"
        )

    def add_checked_axis(
        self, axis: str, names: np.ndarray[Any, Any] | EncodedNames, overwrite: bool = False
    ) -> None:
        """:meth:`add_axis` of entries known to be unique strings."""
        with self._storage.lock:
            exists = self.has_axis(axis)
            if exists:
                if not overwrite:
                    raise DafExistsError(
                        f"existing axis: {axis}\nin the daf data: {self._storage.name}"
                    )
                self._storage.check_deletable(f"axis {axis}")
            with self._storage.changing(f"setting the axis {axis}"):
                if exists:
                    self.delete_axis(axis)
                self._write_axis(axis, names)

    def _write_axis(self, axis: str, names: np.ndarray[Any, Any] | EncodedNames) -> None:
        """The axis' entries, and the groups of its vectors and matrices that are missing."""
        L = self._storage.layout
        others = sorted(self.axes_set())
        items: list[tuple[str, Any]] = []
        for path in itertools.chain(
            [join_path("vectors", axis), join_path("matrices", axis)],
            [join_path("matrices", axis, o) for o in [*others, axis]],
            [join_path("matrices", o, axis) for o in others],
        ):
            if self._storage.node_kind(path) is None:
                items += L.group_docs(path).items()
        if isinstance(names, EncodedNames):
            path = join_path("axes", axis)
            items.append((L.chunk_key(path, 1), names.chunk))
            items += L.array_docs(path, lay.STRING, (names.count,)).items()
        else:
            items += self._storage.array_items(join_path("axes", axis), names, lay.STRING)
        self._storage.write(items)
        self._cache.pop(axis, None)

    def delete_axis(self, axis: str, *, must_exist: bool = True) -> None:
        """``ZarrDaf.delete_axis``: delete ``axes/<axis>`` and the groups along it."""
        self._storage.check_writable()
        if self._storage.nothing_to_delete(
            self.has_axis(axis), must_exist, f"missing axis: {axis}", f"axis {axis}"
        ):
            return
        with self._storage.changing(f"deleting the axis {axis}"):
            self._storage.delete_node(join_path("axes", axis))
            self._cache.pop(axis, None)
            self._storage.delete_node(join_path("vectors", axis))
            self._storage.delete_node(join_path("matrices", axis))
            for other in self._storage.backend.children("matrices"):
                self._storage.delete_node(join_path("matrices", other, axis))
