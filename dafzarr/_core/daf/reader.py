"""The reader API of a Daf data set, shared by :class:`~dafzarr.daf.ZarrDaf`, views and chains.

:class:`DafReader` (in :mod:`.interface`) lists the public reader API, and documents it.
:class:`ReaderBase` implements that API for data sets that are not stored themselves
(views, chains) from a few primitives they define (``_entries``, ``_stored_vector``,
``_stored_matrix`` in one layout, ...), with the query methods of :mod:`._queries`; its writers
raise :class:`~dafzarr.errors.DafReadOnlyError`. The helpers ``default_vector``,
``default_matrix``, ``pd_vector``, ``pd_matrix`` and ``entry_positions`` are shared with
``ZarrDaf`` so that every reader answers alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DafMissingError, DafReadOnlyError, InvalidArgumentError
from ..aliases import Array
from ..documented import documented_by
from .interface import DafReader, DafWriter
from .names import entry_positions
from .queries import Queries
from .storage import UNDEF
from .values import plain, zero_matrix

__all__ = [
    "DafReader",
    "ReaderBase",
    "default_matrix",
    "default_vector",
    "entry_positions",
    "pd_matrix",
    "pd_vector",
]


def default_vector(n: int, default: Any, axis: str, daf_name: str) -> Any:
    """The value of a missing vector given ``default`` (``None``; a scalar broadcast to ``n``
    entries; a vector of ``n`` values)."""
    if default is None:
        return None
    if np.ndim(default) == 0:
        return np.full(n, default)
    arr = np.asarray(default)
    if arr.shape != (n,):
        raise InvalidArgumentError(
            f"default vector length {arr.shape} is different from axis: "
            f"{axis} length: {n}\nin the daf data: {daf_name}"
        )
    return arr


def default_matrix(shape: tuple[int, int], default: Any) -> Any:
    """The value of a missing matrix given ``default`` (``None``, a scalar, or a matrix); a
    zero scalar gives an all-zero sparse CSC matrix of its type."""
    if default is None:
        return None
    if np.ndim(default) == 0:
        zeros = zero_matrix(shape, default)
        return zeros if zeros is not None else np.full(shape, default, order="F")
    arr = np.asarray(default)
    if arr.shape != shape:
        raise InvalidArgumentError(f"default matrix shape {arr.shape} is different from {shape}")
    return np.asfortranarray(arr)


def pd_vector(values: Any, entries: Array, axis: str, name: str) -> Any:
    """A vector as a ``pandas.Series`` indexed by the axis' entry names (``None`` stays)."""
    import pandas as pd

    if values is None:
        return None
    return pd.Series(values, index=pd.Index(entries, name=axis), name=name, copy=False)


def pd_matrix(
    m: Any, row_entries: Array, rows_axis: str, column_entries: Array, columns_axis: str
) -> Any:
    """A matrix as a ``pandas.DataFrame`` named by the axes' entries (sparse: a sparse
    frame; ``None`` stays)."""
    import pandas as pd
    import scipy.sparse as sp

    if m is None:
        return None
    index = pd.Index(row_entries, name=rows_axis)
    columns = pd.Index(column_entries, name=columns_axis)
    if sp.issparse(m):
        return pd.DataFrame.sparse.from_spmatrix(m, index=index, columns=columns)
    return pd.DataFrame(m, index=index, columns=columns, copy=False)


class ReaderBase(Queries):
    """The reader API over primitives a view or chain defines; writers raise.

    Primitives: ``name``, ``_data_version``, ``has_scalar``, ``scalars_set``,
    ``_scalar(name)`` (it exists), ``has_axis``, ``axes_set``, ``_entries(axis)`` (it exists),
    ``_has_stored_vector``/``_stored_vector``/``_vectors(axis)`` (not the virtual ``name`` and
    ``index``), ``_has_layout``/``_layout_matrix``/``_layout_names`` (one layout, no relayout)
    and ``_header()`` (the description lines after the name)."""

    _query_cache: Any

    # --- Primitives ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """Primitive: the name of the view or chain."""
        raise NotImplementedError

    def _data_version(self) -> Any:
        raise NotImplementedError

    def has_scalar(self, name: str) -> bool:
        """Whether the scalar exists."""
        raise NotImplementedError

    def scalars_set(self) -> set[str]:
        """The names of all scalars."""
        raise NotImplementedError

    def _scalar(self, name: str) -> Any:
        raise NotImplementedError

    def has_axis(self, axis: str) -> bool:
        """Whether the axis exists."""
        raise NotImplementedError

    def axes_set(self) -> set[str]:
        """The names of all axes."""
        raise NotImplementedError

    def _entries(self, axis: str) -> Array:
        raise NotImplementedError

    def _has_stored_vector(self, axis: str, name: str) -> bool:
        raise NotImplementedError

    def _stored_vector(self, axis: str, name: str) -> Array:
        raise NotImplementedError

    def _vectors(self, axis: str) -> set[str]:
        raise NotImplementedError

    def _has_layout(self, rows_axis: str, columns_axis: str, name: str) -> bool:
        raise NotImplementedError

    def _layout_matrix(self, rows_axis: str, columns_axis: str, name: str) -> Any:
        raise NotImplementedError

    def _layout_names(self, rows_axis: str, columns_axis: str) -> set[str]:
        raise NotImplementedError

    def _header(self) -> list[str]:
        raise NotImplementedError

    # --- The reader API --------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """``True``: the writers of a view or chain raise (a writing chain overrides it)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__} {self.name}"

    def _require_axis(self, axis: str) -> None:
        if not self.has_axis(axis):
            raise DafMissingError(f"missing axis: {axis}\nin the daf data: {self.name}")

    @documented_by(DafReader.get_scalar)
    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        if self.has_scalar(name):
            return self._scalar(name)
        if default is UNDEF:
            raise DafMissingError(f"missing scalar: {name}\nin the daf data: {self.name}")
        return default

    @documented_by(DafReader.axis_length)
    def axis_length(self, axis: str) -> int:
        return len(self.axis_np_entries(axis))

    @documented_by(DafReader.axis_np_entries)
    def axis_np_entries(self, axis: str) -> Array:
        self._require_axis(axis)
        return self._entries(axis)

    axis_np_vector = axis_np_entries

    @documented_by(DafWriter.axis_dict)
    def axis_dict(self, axis: str) -> dict[str, int]:
        return {str(n): i for i, n in enumerate(self.axis_np_entries(axis))}

    @documented_by(DafWriter.axis_np_indices)
    def axis_np_indices(
        self,
        axis: str,
        names: Sequence[str],
        *,
        allow_empty: bool = False,
        allow_missing: bool = False,
    ) -> Array:
        return entry_positions(
            self.axis_dict(axis), names, axis, self.name, allow_empty, allow_missing
        )

    @documented_by(DafReader.has_vector)
    def has_vector(self, axis: str, name: str) -> bool:
        self._require_axis(axis)
        return name in ("name", "index") or self._has_stored_vector(axis, name)

    @documented_by(DafReader.vectors_set)
    def vectors_set(self, axis: str) -> set[str]:
        self._require_axis(axis)
        return self._vectors(axis)

    @documented_by(DafReader.get_np_vector)
    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Array:
        entries = self.axis_np_entries(axis)
        if name == "name":
            return entries
        if name == "index":
            return np.arange(len(entries))
        if self._has_stored_vector(axis, name):
            return self._stored_vector(axis, name)
        if default is UNDEF:
            raise DafMissingError(
                f"missing vector: {name}\nfor the axis: {axis}\nin the daf data: {self.name}"
            )
        out: Array = default_vector(len(entries), default, axis, self.name)
        return out

    @documented_by(DafWriter.get_pd_vector)
    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        return pd_vector(
            self.get_np_vector(axis, name, default=default), self.axis_np_entries(axis), axis, name
        )

    @documented_by(DafReader.has_matrix)
    def has_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, relayout: bool = True
    ) -> bool:
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        return self._has_layout(rows_axis, columns_axis, name) or (
            relayout and self._has_layout(columns_axis, rows_axis, name)
        )

    @documented_by(DafReader.matrices_set)
    def matrices_set(self, rows_axis: str, columns_axis: str, *, relayout: bool = True) -> set[str]:
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        names = self._layout_names(rows_axis, columns_axis)
        if relayout:
            names |= self._layout_names(columns_axis, rows_axis)
        return names

    @documented_by(DafReader.get_np_matrix)
    def get_np_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
        sparse_class: str = "csc_matrix",
    ) -> Any:
        import scipy.sparse as sp

        m = self._matrix(rows_axis, columns_axis, name, default, relayout)
        if sp.issparse(m):
            cls = sp.csc_array if sparse_class == "csc_array" else sp.csc_matrix
            return m if isinstance(m, cls) else cls(m)
        return m

    def _matrix(
        self, rows_axis: str, columns_axis: str, name: str, default: Any, relayout: bool
    ) -> Any:
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        if self._has_layout(rows_axis, columns_axis, name):
            return self._layout_matrix(rows_axis, columns_axis, name)
        if relayout and self._has_layout(columns_axis, rows_axis, name):
            other = self._layout_matrix(columns_axis, rows_axis, name)
            return np.asfortranarray(other.T) if isinstance(other, np.ndarray) else other.T.tocsc()
        if default is UNDEF:
            raise DafMissingError(
                f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                f"axis: {columns_axis}\nin the daf data: {self.name}"
            )
        shape = (self.axis_length(rows_axis), self.axis_length(columns_axis))
        return default_matrix(shape, default)

    @documented_by(DafWriter.get_pd_matrix)
    def get_pd_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        default: Any = UNDEF,
        relayout: bool = True,
    ) -> Any:
        m = self.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
        return pd_matrix(
            m,
            self.axis_np_entries(rows_axis),
            rows_axis,
            self.axis_np_entries(columns_axis),
            columns_axis,
        )

    @documented_by(DafReader.description)
    def description(self) -> str:
        lines = [f"name: {self.name}", *self._header()]
        scalars = sorted(self.scalars_set())
        if scalars:
            lines += ["scalars:", *(f"  {s}: {plain(self.get_scalar(s))!r}" for s in scalars)]
        axes = sorted(self.axes_set())
        if axes:
            lines += ["axes:", *(f"  {a}: {self.axis_length(a)} entries" for a in axes)]
        vectors = [
            f"  {a}/{v}: {_kind(self.get_np_vector(a, v))}"
            for a in axes
            for v in sorted(self.vectors_set(a))
        ]
        if vectors:
            lines += ["vectors:", *vectors]
        matrices = [
            f"  {r},{c}/{m}: {_kind(self.get_np_matrix(r, c, m, relayout=False))}"
            for r in axes
            for c in axes
            for m in sorted(self.matrices_set(r, c, relayout=False))
        ]
        if matrices:
            lines += ["matrices:", *matrices]
        return "\n".join(lines) + "\n"

    describe = description

    def to_xarray(self, *, drop_variables: Any = None) -> Any:
        """The data set as an ``xarray.Dataset``, named as :meth:`ZarrDaf.to_xarray` names
        it (needs xarray)."""
        from .xarray import daf_to_xarray

        return daf_to_xarray(self, drop_variables)

    # --- Writers -----------------------------------------------------------------------------

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise DafReadOnlyError(f"can't modify the read-only daf data: {self.name}")

    set_scalar = delete_scalar = add_axis = delete_axis = _refuse
    set_vector = delete_vector = empty_dense_vector = empty_sparse_vector = _refuse
    set_matrix = delete_matrix = relayout_matrix = _refuse
    empty_dense_matrix = empty_sparse_matrix = _refuse


def _kind(values: Any) -> str:
    """``"float32 dense"`` or ``"bool sparse (12 nonzeros)"``."""
    import scipy.sparse as sp

    if sp.issparse(values):
        return f"{values.dtype} sparse ({values.nnz} nonzeros)"
    return f"{np.asarray(values).dtype} dense"
