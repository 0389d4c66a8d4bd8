"""Scalars of a ZarrDaf: named values (bool, numbers, strings) stored as one-element arrays."""

from __future__ import annotations

from typing import Any

from ...errors import CorruptDafError, DafMissingError
from .names import can_be_stored, check_name, join_path
from .storage import UNDEF, DafStorage
from .values import scalar_array


class Scalars:
    """``has_scalar``, ``scalars_set``, ``get_scalar``, ``set_scalar``, ``delete_scalar``."""

    def __init__(self, storage: DafStorage) -> None:
        self._storage = storage

    def has_scalar(self, name: str) -> bool:
        """``ZarrDaf.has_scalar``: whether ``scalars/<name>`` is an array."""
        return (
            can_be_stored(name) and self._storage.node_kind(join_path("scalars", name)) == "array"
        )

    def scalars_set(self) -> set[str]:
        """``ZarrDaf.scalars_set``: the arrays under ``scalars``."""
        return {n for n in self._storage.backend.children("scalars") if self.has_scalar(n)}

    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        """``ZarrDaf.get_scalar``: the one value of ``scalars/<name>``, else ``default``."""
        if not self.has_scalar(name):
            if default is UNDEF:
                raise DafMissingError(
                    f"missing scalar: {name}\nin the daf data: {self._storage.name}"
                )
            return default
        arr = self._storage.read_array(join_path("scalars", name))
        if arr.size != 1:
            raise CorruptDafError(f"{self._storage.path}: scalar {name!r} holds {arr.size} values")
        return arr.reshape(-1)[0]

    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> None:
        """``ZarrDaf.set_scalar``: write ``scalars/<name>``, a one-element array."""
        self._storage.check_writable()
        check_name(name, "scalar")
        data, dt = scalar_array(value, f"scalar {name!r}")
        path = join_path("scalars", name)
        with self._storage.changing(
            f"setting the scalar {name}",
            [(path, f"scalar {name}", overwrite, f"existing scalar: {name}")],
        ):
            self._storage.write(self._storage.array_items(path, data, dt))

    def delete_scalar(self, name: str, *, must_exist: bool = True) -> None:
        """``ZarrDaf.delete_scalar``: delete the node ``scalars/<name>``."""
        self._storage.check_writable()
        if self._storage.nothing_to_delete(
            self.has_scalar(name), must_exist, f"missing scalar: {name}", f"scalar {name}"
        ):
            return
        with self._storage.changing(f"deleting the scalar {name}"):
            self._storage.delete_node(join_path("scalars", name))
