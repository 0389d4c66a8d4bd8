"""Vectors of a ZarrDaf: one value per entry of an axis, stored dense or sparse (``nzind``,
``nzval``, 1-based), plus the reserved ``name`` and ``index`` vectors every axis has."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import CorruptDafError, DafMissingError, InvalidArgumentError
from ..casting import unmasked
from . import layout as lay
from .axes import Axes
from .names import RESERVED_VECTORS, can_be_stored, check_name, check_not_reserved, join_path
from .storage import UNDEF, DafStorage
from .values import check_sparse, dense, index_dtype, scalar_array, zero_based_indices


class Vectors:
    """Read, write and delete the vectors of the axes."""

    def __init__(self, storage: DafStorage, axes: Axes) -> None:
        self._storage = storage
        self._axes = axes

    def has_vector(self, axis: str, name: str) -> bool:
        """``ZarrDaf.has_vector``: whether ``vectors/<axis>/<name>`` is a node."""
        self._axes.require_axis(axis)
        if name in RESERVED_VECTORS:
            return True
        return (
            can_be_stored(name)
            and self._storage.node_kind(join_path("vectors", axis, name)) is not None
        )

    def vectors_set(self, axis: str) -> set[str]:
        """``ZarrDaf.vectors_set``: the nodes under ``vectors/<axis>``."""
        self._axes.require_axis(axis)
        base = join_path("vectors", axis)
        return {
            n
            for n in self._storage.backend.children(base)
            if self._storage.node_kind(join_path(base, n))
        }

    def vector(self, axis: str, name: str) -> np.ndarray[Any, Any] | None:
        if name == "name":
            return self._axes.axis_np_entries(axis)
        if name == "index":
            return np.arange(self._axes.axis_length(axis))
        if not can_be_stored(name):
            return None
        path = join_path("vectors", axis, name)
        n = self._axes.axis_len(axis)
        return self._storage.one_state(path, lambda: self._stored_vector(path, axis, n))

    def _stored_vector(self, path: str, axis: str, n: int) -> np.ndarray[Any, Any] | None:
        """The vector stored at ``path`` (within :meth:`DafStorage.one_state`), or None."""
        kind = self._storage.node_kind(path)
        if kind is None:
            return None
        if kind == "array":
            arr = self._storage.read_array(path)
            if arr.shape != (n,):
                raise CorruptDafError(
                    f"{self._storage.path}: vector {path!r} has shape {arr.shape}, "
                    f"axis {axis!r} has length {n}"
                )
            return arr
        nzind, nzval = self.sparse_vector(path, n)
        out = np.zeros(n, dtype=nzval.dtype) if nzval.dtype != object else np.full(n, "", object)
        out[nzind] = nzval
        out.flags.writeable = False
        return out

    def sparse_vector(self, path: str, n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The 0-based positions and the values of the sparse vector at ``path``, read from
        one state of it (:meth:`DafStorage.one_state`)."""
        return self._storage.one_state(path, lambda: self._sparse_vector(path, n))

    def _sparse_vector(
        self, path: str, n: int
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        self._storage.require_group(path)
        nzind = self._storage.read_array(join_path(path, "nzind"))
        if self._storage.node_kind(join_path(path, "nzval")) == "array":
            nzval = self._storage.read_array(join_path(path, "nzval"))
        else:
            nzval = np.ones(nzind.size, dtype=np.bool_)
        if nzind.shape != nzval.shape or nzind.ndim != 1:
            raise CorruptDafError(
                f"{self._storage.path}: sparse vector {path!r}: nzind has shape "
                f"{nzind.shape} but nzval has shape {nzval.shape}"
            )
        pos = zero_based_indices(nzind, n, f"{self._storage.path}: {path}/nzind")
        if pos.size > 1 and bool(np.any(pos[1:] <= pos[:-1])):
            # a repeated position would make two stored values claim one entry
            at = int(np.argmax(pos[1:] <= pos[:-1])) + 1
            raise CorruptDafError(
                f"{self._storage.path}: {path}/nzind is not strictly increasing: "
                f"stored index {int(pos[at]) + 1} at position {at + 1} "
                f"follows {int(pos[at - 1]) + 1}"
            )
        return pos, nzval

    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> np.ndarray[Any, Any]:
        """``ZarrDaf.get_np_vector``: :meth:`vector`, else ``default`` made to the axis' length."""
        self._axes.require_axis(axis)
        out = self.vector(axis, name)
        if out is not None:
            return out
        if default is UNDEF:
            raise DafMissingError(
                f"missing vector: {name}\nfor the axis: {axis}\n"
                f"in the daf data: {self._storage.name}"
            )
        if default is None:
            return None  # type: ignore[return-value]
        n = self._axes.axis_length(axis)
        if np.ndim(default) == 0:
            return np.full(n, default)
        arr = np.asarray(default)
        if arr.shape != (n,):
            raise InvalidArgumentError(
                f"default vector length {arr.shape} is different from axis: "
                f"{axis} length: {n}\nin the daf data: {self._storage.name}"
            )
        return arr

    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        """``ZarrDaf.get_pd_vector``: :meth:`get_np_vector` indexed by the axis' entries."""
        import pandas as pd

        values: Any = self.get_np_vector(axis, name, default=default)
        if values is None:
            return None
        return pd.Series(
            values,
            index=pd.Index(self._axes.axis_np_entries(axis), name=axis),
            name=name,
            copy=False,
        )

    def set_vector(
        self,
        axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        indtype: Any = None,
    ) -> None:
        """``ZarrDaf.set_vector``: write ``vectors/<axis>/<name>`` (dense, or sparse
        ``nzind``/``nzval``)."""
        self._storage.check_writable()
        self._axes.require_axis(axis)
        check_name(name, "vector")
        check_not_reserved(axis, name, self._storage.name)
        n = self._axes.axis_length(axis)
        path = join_path("vectors", axis, name)
        value = unmasked(
            value, f"vector {name!r} of the axis {axis}\nin the daf data: {self._storage.name}"
        )
        if hasattr(value, "index") and hasattr(value, "to_numpy"):  # a pandas Series
            index = np.asarray(value.index, dtype=object)
            if len(index) == n and not np.array_equal(index, self._axes.axis_np_entries(axis)):
                raise InvalidArgumentError(
                    f"the vector's index does not match the entries of axis: "
                    f"{axis}\nin the daf data: {self._storage.name}"
                )
            value = value.to_numpy()
        items: list[tuple[str, Any]]
        if sp.issparse(value):
            if value.shape not in ((n,), (1, n), (n, 1)):
                raise InvalidArgumentError(
                    f"sparse value shape: {value.shape}\nis not ({n},), (1, {n}) or ({n}, 1) "
                    f"for the axis: {axis} of length: {n}\nin the daf data: {self._storage.name}"
                )
            check_sparse(
                value, f"vector {name!r} of the axis {axis}\nin the daf data: {self._storage.name}"
            )
            coo = sp.coo_array(value)
            coo.sum_duplicates()  # sorted by position, duplicates added up
            pos = coo.coords[0] if value.shape[0] == n else coo.coords[1]
            order = np.argsort(pos, kind="stable")
            vals = coo.data[order]
            dt = lay.element_type(vals.dtype, f"vector {name!r}")
            items = self._sparse_vector_items(path, pos[order], vals, dt, n, indtype)
        else:
            if np.ndim(value) == 0:
                arr0, dt = scalar_array(
                    value.item() if isinstance(value, np.ndarray) else value, f"vector {name!r}"
                )
                data = np.full(n, arr0[0], dtype=object if isinstance(dt, str) else dt)
            else:
                raw = np.asarray(value)
                if raw.ndim != 1 or raw.shape[0] != n:
                    raise InvalidArgumentError(
                        f"value length: {raw.shape[0] if raw.ndim == 1 else raw.shape}\n"
                        f"is different from axis: {axis} length: {n}\n"
                        f"in the daf data: {self._storage.name}"
                    )
                dt = lay.element_type(raw.dtype, f"vector {name!r}")
                data = dense(raw, dt, f"vector {name!r} of the axis {axis}")
            items = self._storage.array_items(path, data, dt)
        with self._storage.changing(
            f"setting the vector {name} of the axis {axis}",
            self.vector_replace(path, axis, name, overwrite),
        ):
            self._storage.write(items)

    def vector_replace(
        self, path: str, axis: str, name: str, overwrite: bool
    ) -> list[tuple[str, str, bool, str]]:
        """What a write of the vector at ``path`` replaces (see :meth:`DafStorage.changing`)."""
        return [
            (
                path,
                f"vector {name} of the axis {axis}",
                overwrite,
                f"existing vector: {name}\nfor the axis: {axis}",
            )
        ]

    def _sparse_vector_items(
        self,
        path: str,
        pos0: np.ndarray[Any, Any],
        vals: np.ndarray[Any, Any],
        dt: np.dtype[Any] | str,
        n: int,
        indtype: Any,
    ) -> list[tuple[str, Any]]:
        idt = index_dtype(indtype, n, path)
        items = self._storage.array_items(join_path(path, "nzind"), (pos0 + 1).astype(idt), idt)
        if not (isinstance(dt, np.dtype) and dt.kind == "b" and bool(np.all(vals))):
            items += self._storage.array_items(join_path(path, "nzval"), dense(vals, dt, path), dt)
        items += self._storage.layout.group_docs(path).items()
        return items

    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> None:
        """``ZarrDaf.delete_vector``: delete the node ``vectors/<axis>/<name>``."""
        self._storage.check_writable()
        self._axes.require_axis(axis)
        path = join_path("vectors", axis, name)
        if self._storage.nothing_to_delete(
            self._storage.node_kind(path) is not None,
            must_exist,
            f"missing vector: {name}\nfor the axis: {axis}",
            f"vector {name} of the axis {axis}",
        ):
            return
        with self._storage.changing(f"deleting the vector {name} of the axis {axis}"):
            self._storage.delete_node(path)
