"""Chains: several Daf data sets read as one, the later ones overriding the earlier ones.

``chain_reader([base, derived])`` answers each lookup from the last member that has the
property; listings are the unions of the members'. ``chain_writer([base, scratch])`` also
writes, always into the last member: a vector or matrix on an axis the last member lacks
first copies that axis into it. The rules are DataAxesFormats.jl's (``src/chains.jl``):

- An axis held by several members must have the same entries in the same order; this is
  checked when the chain is made (``different number of entries: ...`` or ``different
  entry#k: ...`` naming the axis, both data sets and the chain; ``k`` is 1-based).
- A matrix is read in the requested layout from the last member that stores that layout;
  only when no member does is another layout transposed (DataAxesFormats.jl leaves open the
  case of an early member with one layout and a later one with the other; here the requested
  layout wins wherever it is).
- Deleting what an earlier member holds is refused (``failed to delete the vector: ...`` /
  ``because it exists in the earlier: ...``): overriding it is the only way. Writing over a
  property held by any member needs ``overwrite=True``.
- A writer chain's last member must be writable (``read-only final data: ...``).

Decisions: an empty list raises ``InvalidArgumentError``; a reader chain of one data set is a
read-only chain over it and a writer chain of one unnamed data set is that data set, as in
DataAxesFormats.jl; the default name (members' names joined by ``;``) is made unique in the
process as data set names are. Mismatched axes raise ``InvalidArgumentError``, refused
writes ``DafReadOnlyError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

import numpy as np

from ...errors import DafExistsError, DafReadOnlyError, InvalidArgumentError
from ..aliases import Array
from .names import unique_name
from .query.cache import QueryCache
from .reader import ReaderBase

__all__ = ["ReadChain", "WriteChain", "chain_reader", "chain_writer"]


def chain_reader(dafs: Sequence[Any], *, name: str | None = None) -> ReadChain:
    """A read-only data set that is the union of ``dafs``, the later overriding the earlier.

    Parameters
    ----------
    dafs : sequence of data sets
        The members, first to last (any readers: ``ZarrDaf``, views, chains).
    name : str, optional
        The chain's name (by default the members' names joined by ``;``, made unique).

    Returns
    -------
    ReadChain
        The chain; a lookup is answered by the last member that has the property.

    Raises
    ------
    InvalidArgumentError
        ``dafs`` is empty, or an axis held by several members has different entries (the
        message names the axis, both data sets and the chain).

    Examples
    --------
    >>> base = dafzarr.memory_daf(name="base").add_axis("cell", ["A", "B"])
    >>> base = base.set_vector("cell", "age", [3, 5]).set_vector("cell", "batch", [1, 1])
    >>> fix = dafzarr.memory_daf(name="fix").add_axis("cell", ["A", "B"])
    >>> chain = dafzarr.chain_reader([base, fix.set_vector("cell", "age", [4, 6])])
    >>> chain.get_np_vector("cell", "age").tolist(), sorted(chain.vectors_set("cell"))
    ([4, 6], ['age', 'batch'])
    """
    members = _members(dafs, name)
    return ReadChain(members, _chain_name(members, name))


def chain_writer(dafs: Sequence[Any], *, name: str | None = None) -> Any:
    """Like :func:`chain_reader`, but writes go to the last data set, which must be
    writable (a single unnamed data set is returned as it is).

    Parameters
    ----------
    dafs : sequence of data sets
        The members, first to last; the last one is written.
    name : str, optional
        The chain's name (by default the members' names joined by ``;``, made unique).

    Returns
    -------
    WriteChain or data set
        The chain (or the only member, when ``dafs`` has one and no ``name`` is given).
        A vector or matrix written on an axis the last member lacks first copies that axis
        into it.

    Raises
    ------
    InvalidArgumentError
        ``dafs`` is empty, or an axis held by several members has different entries.
    DafReadOnlyError
        The last member is read-only (``read-only final data: ...``); later, deleting
        what an earlier member holds.
    DafExistsError
        Later, writing over an existing property without ``overwrite=True``.

    Examples
    --------
    >>> base = dafzarr.memory_daf(name="base").add_axis("cell", ["A", "B"])
    >>> scratch = dafzarr.memory_daf(name="scratch")
    >>> chain = dafzarr.chain_writer([base, scratch])
    >>> chain = chain.set_vector("cell", "score", [0.5, 1.5])
    >>> sorted(scratch.axes_set()), chain.get_np_vector("cell", "score").tolist()
    (['cell'], [0.5, 1.5])
    """
    members = _members(dafs, name)
    if getattr(members[-1], "read_only", True):
        suffix = "" if name is None else f": {name}"
        raise DafReadOnlyError(f"read-only final data: {members[-1].name}\nin write chain{suffix}")
    if len(members) == 1 and name is None:
        return members[0]
    return WriteChain(members, _chain_name(members, name))


def _members(dafs: Sequence[Any], name: str | None) -> list[Any]:
    members = list(dafs)
    if not members:
        raise InvalidArgumentError("empty chain" + ("" if name is None else f": {name}"))
    return members


def _chain_name(members: list[Any], name: str | None) -> str:
    chain_name = unique_name(name if name is not None else ";".join(d.name for d in members))
    seen: dict[str, tuple[str, Array]] = {}
    for daf in members:
        for axis in sorted(daf.axes_set()):
            entries = np.asarray(daf.axis_np_entries(axis))
            if axis not in seen:
                seen[axis] = (daf.name, entries)
                continue
            first, old = seen[axis]
            if len(entries) != len(old):
                raise InvalidArgumentError(
                    f"different number of entries: {len(entries)}\nfor the axis: {axis}\n"
                    f"in the daf data: {daf.name}\nfrom the number of entries: {len(old)}\n"
                    f"for the axis: {axis}\nin the daf data: {first}\n"
                    f"in the chain: {chain_name}"
                )
            differ = np.flatnonzero(entries != old)
            if differ.size:
                k = int(differ[0])
                raise InvalidArgumentError(
                    f"different entry#{k + 1}: {entries[k]}\nfor the axis: {axis}\n"
                    f"in the daf data: {daf.name}\nfrom the entry#{k + 1}: {old[k]}\n"
                    f"for the axis: {axis}\nin the daf data: {first}\n"
                    f"in the chain: {chain_name}"
                )
    return chain_name


class ReadChain(ReaderBase):
    """A read-only union of data sets (made by :func:`chain_reader`)."""

    def __init__(self, dafs: list[Any], name: str) -> None:
        self._dafs = dafs
        self._name = name
        self._query_cache = QueryCache()

    @property
    def name(self) -> str:
        """The chain's name."""
        return self._name

    @property
    def dafs(self) -> list[Any]:
        """The members, first to last."""
        return list(self._dafs)

    def close(self) -> None:
        """Close the data sets the chain opened itself (:func:`~dafzarr.complete_daf`'s);
        members it was given stay open (their owner closes them). The chain's query cache is
        dropped."""
        self._query_cache.clear()
        owned: list[Any] = getattr(self, "_owned", [])
        self._owned: list[Any] = []
        for daf in owned:
            daf.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _data_version(self) -> Any:
        return tuple(daf._data_version() for daf in self._dafs)

    def _header(self) -> list[str]:
        kind = "ReadOnly" if self.read_only else "Write"
        return [f"type: {kind} Chain", "chain:", *(f"- {daf.name}" for daf in self._dafs)]

    def _last_with(self, test: Any) -> Any:
        """The last member for which ``test(member)`` holds, or ``None``."""
        for daf in reversed(self._dafs):
            if test(daf):
                return daf
        return None

    def has_scalar(self, name: str) -> bool:
        """Whether any member has the scalar."""
        return any(daf.has_scalar(name) for daf in self._dafs)

    def scalars_set(self) -> set[str]:
        """The scalars of all members."""
        return set().union(*(daf.scalars_set() for daf in self._dafs))

    def _scalar(self, name: str) -> Any:
        return self._last_with(lambda d: d.has_scalar(name)).get_scalar(name)

    def has_axis(self, axis: str) -> bool:
        """Whether any member has the axis."""
        return any(daf.has_axis(axis) for daf in self._dafs)

    def axes_set(self) -> set[str]:
        """The axes of all members."""
        return set().union(*(daf.axes_set() for daf in self._dafs))

    def _entries(self, axis: str) -> Array:
        return np.asarray(self._last_with(lambda d: d.has_axis(axis)).axis_np_entries(axis))

    def _vector_holder(self, axis: str, name: str) -> Any:
        return self._last_with(lambda d: d.has_axis(axis) and d.has_vector(axis, name))

    def _has_stored_vector(self, axis: str, name: str) -> bool:
        return self._vector_holder(axis, name) is not None

    def _stored_vector(self, axis: str, name: str) -> Array:
        return np.asarray(self._vector_holder(axis, name).get_np_vector(axis, name))

    def _vectors(self, axis: str) -> set[str]:
        return set().union(*(daf.vectors_set(axis) for daf in self._dafs if daf.has_axis(axis)))

    def _matrix_holder(self, rows_axis: str, columns_axis: str, name: str) -> Any:
        return self._last_with(
            lambda d: (
                d.has_axis(rows_axis)
                and d.has_axis(columns_axis)
                and d.has_matrix(rows_axis, columns_axis, name, relayout=False)
            )
        )

    def _has_layout(self, rows_axis: str, columns_axis: str, name: str) -> bool:
        return self._matrix_holder(rows_axis, columns_axis, name) is not None

    def _layout_matrix(self, rows_axis: str, columns_axis: str, name: str) -> Any:
        holder = self._matrix_holder(rows_axis, columns_axis, name)
        return holder.get_np_matrix(rows_axis, columns_axis, name, relayout=False)

    def _layout_names(self, rows_axis: str, columns_axis: str) -> set[str]:
        return set().union(
            *(
                daf.matrices_set(rows_axis, columns_axis, relayout=False)
                for daf in self._dafs
                if daf.has_axis(rows_axis) and daf.has_axis(columns_axis)
            )
        )


class WriteChain(ReadChain):
    """A chain whose writes go to its last member (made by :func:`chain_writer`)."""

    @property
    def read_only(self) -> bool:
        """Writers work (into the last member)."""
        return False

    @property
    def last(self) -> Any:
        """The member every write goes to."""
        return self._dafs[-1]

    def _with_axes(self, *axes: str) -> Any:
        """The last member, holding ``axes`` (copied from the chain when it lacks them)."""
        last = self.last
        for axis in axes:
            if not last.has_axis(axis):
                last.add_axis(axis, self.axis_np_entries(axis))
        return last

    def _refuse_delete(self, exists: Any, what: str) -> None:
        """Refuse deleting what an earlier member holds."""
        for daf in self._dafs[:-1]:
            if exists(daf):
                raise DafReadOnlyError(
                    f"failed to delete the {what}\nfrom the daf data: "
                    f"{self.last.name}\nof the chain: {self._name}\n"
                    f"because it exists in the earlier: {daf.name}"
                )

    def _check_new(self, exists: bool, overwrite: bool, what: str) -> None:
        if exists and not overwrite:
            raise DafExistsError(f"existing {what}\nin the daf data: {self._name}")

    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> Self:
        """Store a scalar in the last member."""
        self._check_new(self.has_scalar(name), overwrite, f"scalar: {name}")
        self.last.set_scalar(name, value, overwrite=overwrite)
        return self

    def delete_scalar(self, name: str, *, must_exist: bool = True) -> Self:
        """Delete a scalar the last member alone holds."""
        self._refuse_delete(lambda d: d.has_scalar(name), f"scalar: {name}")
        self.last.delete_scalar(name, must_exist=must_exist)
        return self

    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> Self:
        """Create an axis in the last member (an axis of an earlier member stays as it is)."""
        if not overwrite:
            self._check_new(self.has_axis(axis), False, f"axis: {axis}")
        else:
            self._refuse_delete(lambda d: d.has_axis(axis), f"axis: {axis}")
        self.last.add_axis(axis, entries, overwrite=overwrite)
        return self

    def delete_axis(self, axis: str, *, must_exist: bool = True) -> Self:
        """Delete an axis the last member alone holds."""
        self._refuse_delete(lambda d: d.has_axis(axis), f"axis: {axis}")
        self.last.delete_axis(axis, must_exist=must_exist)
        return self

    def set_vector(
        self, axis: str, name: str, value: Any, *, overwrite: bool = False, **options: Any
    ) -> Self:
        """Store a vector in the last member (copying the axis into it if needed)."""
        self._check_new(
            self.has_vector(axis, name), overwrite, f"vector: {name}\nfor the axis: {axis}"
        )
        self._with_axes(axis).set_vector(axis, name, value, overwrite=overwrite, **options)
        return self

    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> Self:
        """Delete a vector the last member alone holds."""
        self._refuse_delete(
            lambda d: d.has_axis(axis) and d.has_vector(axis, name),
            f"vector: {name}\nof the axis: {axis}",
        )
        self.last.delete_vector(axis, name, must_exist=must_exist)
        return self

    def set_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        value: Any,
        *,
        overwrite: bool = False,
        **options: Any,
    ) -> Self:
        """Store a matrix in the last member (copying the axes into it if needed); with
        ``relayout=False`` a stored other layout does not count as existing, as for a
        single data set."""
        relayout = bool(options.get("relayout", True)) and rows_axis != columns_axis
        self._check_new(
            self.has_matrix(rows_axis, columns_axis, name, relayout=relayout),
            overwrite,
            f"matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns axis: {columns_axis}",
        )
        last = self._with_axes(rows_axis, columns_axis)
        last.set_matrix(rows_axis, columns_axis, name, value, overwrite=overwrite, **options)
        return self

    def relayout_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, overwrite: bool = False
    ) -> Self:
        """Store the other layout of a matrix in the last member."""
        last = self._with_axes(rows_axis, columns_axis)
        if not last.has_matrix(rows_axis, columns_axis, name, relayout=False):
            value = self.get_np_matrix(rows_axis, columns_axis, name, relayout=False)
            last.set_matrix(rows_axis, columns_axis, name, value, relayout=False)
        last.relayout_matrix(rows_axis, columns_axis, name, overwrite=overwrite)
        return self

    def delete_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        *,
        must_exist: bool = True,
        relayout: bool = True,
    ) -> Self:
        """Delete a matrix the last member alone holds."""
        self._refuse_delete(
            lambda d: (
                d.has_axis(rows_axis)
                and d.has_axis(columns_axis)
                and d.has_matrix(rows_axis, columns_axis, name, relayout=relayout)
            ),
            f"matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns axis: {columns_axis}",
        )
        self.last.delete_matrix(
            rows_axis, columns_axis, name, must_exist=must_exist, relayout=relayout
        )
        return self

    @contextmanager
    def _filling(
        self, axes: tuple[str, ...], method: str, *args: Any, **options: Any
    ) -> Iterator[Any]:
        with getattr(self._with_axes(*axes), method)(*args, **options) as out:
            yield out

    def empty_dense_vector(self, axis: str, name: str, eltype: Any, **options: Any) -> Any:
        """Fill a new dense vector of the last member in place."""
        return self._filling((axis,), "empty_dense_vector", axis, name, eltype, **options)

    def empty_sparse_vector(
        self, axis: str, name: str, eltype: Any, nnz: int, *args: Any, **options: Any
    ) -> Any:
        """Fill a new sparse vector of the last member in place."""
        return self._filling(
            (axis,), "empty_sparse_vector", axis, name, eltype, nnz, *args, **options
        )

    def empty_dense_matrix(
        self, rows_axis: str, columns_axis: str, name: str, eltype: Any, **options: Any
    ) -> Any:
        """Fill a new dense matrix of the last member in place."""
        return self._filling(
            (rows_axis, columns_axis),
            "empty_dense_matrix",
            rows_axis,
            columns_axis,
            name,
            eltype,
            **options,
        )

    def empty_sparse_matrix(
        self,
        rows_axis: str,
        columns_axis: str,
        name: str,
        eltype: Any,
        nnz: int,
        *args: Any,
        **options: Any,
    ) -> Any:
        """Fill a new sparse matrix of the last member in place."""
        return self._filling(
            (rows_axis, columns_axis),
            "empty_sparse_matrix",
            rows_axis,
            columns_axis,
            name,
            eltype,
            nnz,
            *args,
            **options,
        )
