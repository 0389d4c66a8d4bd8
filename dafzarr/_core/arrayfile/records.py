"""The in-memory records of an ArrayFile: what each layer holds, what is pending, what is seen.

A file set is a stack of committed layers (the base, then one per sidecar) plus the changes
pending since the last flush. :class:`Records` answers which metadata and which stored chunk
a name and a chunk key resolve to (newest first, stopping at a tombstone or a change of
layout) and applies definitions, deletions and writes to the pending changes. It does no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from ...errors import (
    ArrayExistsError,
    ArrayNotFoundError,
    FormatLimitError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedElementTypeError,
)
from ..casting import check_value_fits
from . import format as fmt
from .types import U32_MAX, DTypeInfo, dtype_info, fill_element, python_to_fill

__all__ = [
    "ArrayInfo",
    "ArrayStats",
    "Layer",
    "LayerArray",
    "Meta",
    "PendingArray",
    "Records",
    "new_meta",
    "pending_table",
]

_tokens = itertools.count(1)

# A chunk's pending record: (coord, block id, offset, size, chunk stats)
ChunkRecord = tuple[tuple[int, ...], int, int, int, Any]


@dataclass(frozen=True)
class ArrayStats:
    """Statistics of one array as of the last flush (the crate's rules).

    ``min``/``max`` are taken over stored elements that differ from the fill value (None when
    there are none); ``row_count`` is the number of elements; ``null_count`` counts the
    elements that are the fill value or were never written.

    Parameters
    ----------
    min, max
        The smallest and largest stored element that is not the fill value, or None.
    null_count
        How many elements are the fill value or were never written.
    row_count
        How many elements the array has.

    Raises
    ------
    None
        A plain record, made by :meth:`ArrayFile.array_stats`.

    Examples
    --------
    >>> from dafzarr.arrayfile import ArrayFile
    >>> with ArrayFile.create("stats.af") as f:
    ...     f.define_array("a", "int32", ["x"], [4], fill_value=0)
    ...     f.write_array("a", [0], [0, 5, 7, 0])
    ...     f.flush()
    ...     f.array_stats("a")
    ArrayStats(min=5, max=7, null_count=2, row_count=4)
    """

    min: Any
    max: Any
    null_count: int
    row_count: int


@dataclass(frozen=True)
class ArrayInfo:
    """Shape, type and chunking of one array (what :meth:`ArrayFile.array_info` returns).

    Parameters
    ----------
    name
        The array's name.
    dtype
        Its numpy dtype; ``str`` or ``bytes`` for variable-length arrays.
    shape, chunk_shape
        Its extent and the extent of one chunk, along each axis.
    dim_names
        The names of its axes.
    fill_value
        What unwritten elements read as (None: the type's zero).

    Raises
    ------
    None
        A plain record.

    Examples
    --------
    >>> from dafzarr.arrayfile import ArrayFile
    >>> with ArrayFile.create("info.af") as f:
    ...     f.define_array("m", "float32", ["row", "col"], [4, 6], chunk_shape=[2, 6])
    ...     info = f.array_info("m")
    >>> info.shape, info.chunk_shape, info.dim_names
    ((4, 6), (2, 6), ('row', 'col'))
    """

    name: str
    dtype: Any
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dim_names: tuple[str, ...]
    fill_value: Any


@dataclass
class Meta:
    """One array's metadata as one layer (or the pending changes) states it."""

    name: str
    dtype_raw: tuple[Any, ...]
    info: DTypeInfo | None
    shape: tuple[int, ...]
    dim_names: list[str]
    chunk_shape: tuple[int, ...]
    fill: tuple[Any, ...] | None
    attrs: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def grid(self) -> tuple[int, ...]:
        """Chunks along each axis."""
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunk_shape, strict=True))

    def same_layout(self, other: Meta) -> bool:
        """Whether chunks of ``other`` are chunks of this array (type, shape, chunking)."""
        return (
            self.dtype_raw == other.dtype_raw
            and self.shape == other.shape
            and self.chunk_shape == other.chunk_shape
        )

    def key(self, coord: Sequence[int]) -> int:
        """The chunk key (row-major index in the grid) of a chunk coordinate."""
        k = 0
        for c, g in zip(coord, self.grid, strict=True):
            k = k * g + c
        return k

    def keys(self, coords: np.ndarray) -> list[int]:
        """:meth:`key` of each row of an (n, ndim) coordinate array."""
        grid = self.grid
        total = 1
        for g in grid:
            total *= g
        if total < (1 << 62):
            keys = np.zeros(len(coords), np.int64)
            for axis, g in enumerate(grid):
                keys *= g
                keys += coords[:, axis]
            out: list[int] = keys.tolist()
            return out
        return [self.key(c) for c in coords.tolist()]

    def copy(self) -> Meta:
        """A copy whose dimension names and attributes can change alone."""
        return dc_replace(self, dim_names=list(self.dim_names), attrs=dict(self.attrs))

    def element(self) -> Any:
        """The fill value as a numpy element."""
        return fill_element(self.require_info(), self.fill)

    def require_info(self) -> DTypeInfo:
        """The element type, or :class:`UnsupportedElementTypeError`."""
        if self.info is None:
            raise UnsupportedElementTypeError(
                f"array {self.name!r}: element type {self.dtype_raw[0]} cannot be read or "
                "written (no element implementation in the format)"
            )
        return self.info


class LayerArray:
    """One array in one committed layer: metadata, tombstone flag, chunk table."""

    __slots__ = ("_index", "deleted", "meta", "table", "whole_plan")

    def __init__(self, meta: Meta, deleted: bool, table: fmt.ChunkTable) -> None:
        self.meta = meta
        self.deleted = deleted
        self.table = table
        self._index: dict[int, int] | None = None
        # how a whole-array read is made of direct reads (see ._direct), once worked out
        self.whole_plan: Any = None

    def lookup(self, key: int) -> int | None:
        """The table row of chunk ``key`` (a hash index built on first use), or None."""
        if self._index is None:
            keys = self.meta.keys(self.table.coords)
            self._index = dict(zip(keys, range(len(keys)), strict=True))
        return self._index.get(key)


@dataclass
class Layer:
    """One committed object of the file set (the base, number 0, or a sidecar)."""

    key: str
    number: int
    version: str
    footer: dict[str, Any]
    blocks: dict[int, tuple[int, int, int, str | None]]
    arrays: dict[str, LayerArray]
    stats_cache: dict[tuple[str, int], tuple[Any, Any, int]] = field(default_factory=dict)
    # LZ4 segment tables by block id; None until read from between the blocks and the footer
    segments: dict[int, Any] | None = None
    gap: tuple[int, int] = (0, 0)  # where a segment table can be: [last block end, footer)
    # unique per loaded generation: cache keys never match bytes of another generation, even
    # if a file system reuses an inode number and timestamp for a rewritten sidecar
    token: int = field(default_factory=lambda: next(_tokens))


class PendingArray:
    """One array's changes since the last flush."""

    __slots__ = ("chunks", "deleted", "fresh", "meta", "recreated", "tomb_meta")

    def __init__(self, meta: Meta, *, deleted: bool = False, recreated: bool = False) -> None:
        self.meta = meta
        self.deleted = deleted
        self.fresh = False  # defined since the last flush
        # deleted and defined again before one flush: the tombstone (of tomb_meta) is
        # written in a sidecar of its own below the new definition
        self.recreated = recreated
        self.tomb_meta = meta
        self.chunks: dict[int, ChunkRecord] = {}


def pending_table(p: PendingArray) -> fmt.ChunkTable:
    """The chunk table a flush writes for ``p``."""
    n = len(p.chunks)
    ndim = len(p.meta.shape)
    if p.deleted or n == 0:
        return fmt.ChunkTable.empty(ndim)
    recs = list(p.chunks.values())
    coords = np.array([r[0] for r in recs], np.uint32).reshape(n, ndim)
    addrs = np.array([r[1:4] for r in recs], np.uint32).reshape(n, 3)
    return fmt.ChunkTable(coords, addrs)


def _u32_tuple(values: Sequence[int], what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgumentTypeError(f"{what}: {v!r} is not an integer")
        iv = int(v)
        if iv < 0 or iv > U32_MAX:
            raise FormatLimitError(f"{what}: {iv} does not fit the format's u32 (0..4294967295)")
        out.append(iv)
    return tuple(out)


def new_meta(
    where: str,
    name: str,
    dtype: Any,
    dim_names: Sequence[str],
    shape: Sequence[int],
    chunk_shape: Sequence[int] | None,
    fill_value: Any,
) -> Meta:
    """The metadata of a new array, checked against the format's limits (``where`` names
    the file in messages)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("an array name must be a non-empty string")
    info = dtype_info(dtype)
    shape_t = _u32_tuple(shape, f"array {name!r}: shape")
    if 0 in shape_t:
        raise InvalidArgumentError(
            f"array {name!r}: shape {shape_t} has a zero-length axis, which the format cannot chunk"
        )
    cs = shape_t if chunk_shape is None else _u32_tuple(chunk_shape, f"array {name!r}: chunk_shape")
    if len(cs) != len(shape_t):
        raise InvalidArgumentError(
            f"array {name!r}: chunk_shape {cs} has {len(cs)} axes, shape has {len(shape_t)}"
        )
    if 0 in cs:
        raise InvalidArgumentError(f"array {name!r}: chunk_shape {cs} has a zero-length axis")
    dims = [str(d) for d in dim_names]
    if len(dims) != len(shape_t):
        raise InvalidArgumentError(
            f"array {name!r}: {len(dims)} dimension names for {len(shape_t)} axes"
        )
    if not info.vlen:
        nbytes = info.np_dtype.itemsize
        for c in cs:
            nbytes *= c
        if nbytes > U32_MAX:
            raise FormatLimitError(
                f"array {name!r}: a {nbytes}-byte chunk does not fit the format's u32 "
                "chunk sizes; use a smaller chunk_shape"
            )
    if (
        fill_value is not None
        and not info.vlen
        and not (info.tag == "TimestampNs" and isinstance(fill_value, str))
    ):
        check_value_fits(fill_value, info.np_dtype, f"{where}: array {name!r}: fill_value")
    fill = python_to_fill(info, fill_value)
    return Meta(name, (info.tag,), info, shape_t, dims, cs, fill)


class Records:
    """The committed layers (oldest first) and the pending changes of one file set.

    A chunk location is ``("p", record)`` for a pending chunk, or ``(layer, layer array,
    row)`` for a committed one.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.layers: list[Layer] = []
        self.pending: dict[str, PendingArray] = {}

    def entry(self, name: str) -> tuple[Meta, bool] | None:
        """(newest metadata, deleted) for ``name``, or None if no layer mentions it."""
        p = self.pending.get(name)
        if p is not None:
            return p.meta, p.deleted
        for layer in reversed(self.layers):
            la = layer.arrays.get(name)
            if la is not None:
                return la.meta, la.deleted
        return None

    def visible(self, name: object) -> bool:
        """Whether ``name`` is a visible array."""
        e = self.entry(name) if isinstance(name, str) else None
        return e is not None and not e[1]

    def meta(self, name: str) -> Meta:
        """The metadata of visible array ``name``, or :class:`ArrayNotFoundError`."""
        e = self.entry(name)
        if e is None or e[1]:
            raise ArrayNotFoundError(f"{self.key}: no array named {name!r}")
        return e[0]

    def names(self) -> list[str]:
        """Names of the visible arrays, oldest definition first."""
        names: dict[str, None] = {}
        for layer in self.layers:
            names.update(dict.fromkeys(layer.arrays))
        names.update(dict.fromkeys(self.pending))
        return [n for n in names if not self.entry(n)[1]]  # type: ignore[index]

    def define(self, meta: Meta) -> None:
        """Add a new array; :class:`ArrayExistsError` if one of that name is visible."""
        name = meta.name
        if self.visible(name):
            raise ArrayExistsError(f"{self.key}: an array named {name!r} exists")
        p = self.pending.pop(name, None)
        new = self.pending[name] = PendingArray(meta, recreated=p is not None)
        new.fresh = True
        if p is not None:
            new.tomb_meta = p.tomb_meta

    def delete(self, name: str) -> None:
        """Hide visible array ``name`` (a tombstone at the next flush)."""
        meta = self.meta(name).copy()
        p = self.pending.get(name)
        pa = PendingArray(meta, deleted=True, recreated=p is not None and p.recreated)
        if p is not None:
            pa.tomb_meta = p.tomb_meta
        self.pending[name] = pa

    def for_write(self, name: str) -> PendingArray:
        """The pending changes of visible array ``name``, started if there are none."""
        p = self.pending.get(name)
        if p is not None and not p.deleted:
            return p
        meta = self.meta(name).copy()
        p = self.pending[name] = PendingArray(meta)
        return p

    def reachable(self, meta: Meta) -> Iterator[tuple[Layer, LayerArray]]:
        """Committed layers holding ``meta``'s array, newest first, down to a tombstone."""
        for layer in reversed(self.layers):
            la = layer.arrays.get(meta.name)
            if la is None:
                continue
            if la.deleted or not la.meta.same_layout(meta):
                return
            yield layer, la

    def locate(self, meta: Meta, key: int) -> Any:
        """Where chunk ``key`` of ``meta``'s array is stored, or None (never written)."""
        p = self.pending.get(meta.name)
        if p is not None:
            if p.deleted:
                return None
            rec = p.chunks.get(key)
            if rec is not None:
                return ("p", rec)
            if p.recreated:
                return None
        for layer, la in self.reachable(meta):
            row = la.lookup(key)
            if row is not None:
                return (layer, la, row)
        return None

    def visible_chunks(self, meta: Meta) -> dict[int, Any]:
        """key -> location of every stored chunk of ``meta``'s array, newest first."""
        found: dict[int, Any] = {}
        p = self.pending.get(meta.name)
        if p is not None:
            if p.deleted:
                return found
            for key, rec in p.chunks.items():
                found[key] = ("p", rec)
            if p.recreated:
                return found
        for layer, la in self.reachable(meta):
            keys = meta.keys(la.table.coords)
            for row, key in enumerate(keys):
                found.setdefault(key, (layer, la, row))
        return found
