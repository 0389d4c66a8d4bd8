"""ArrayFile: many n-dimensional arrays in one object, with delta sidecars and compaction.

Layout of a file set (compatible with the Rust crate ``array-format``, footer v4/v5):
``{stem}.af`` is the base, ``{stem}.N.af`` (N >= 1) are sidecars written by :meth:`flush`, and
``{stem}.stats`` holds per-array statistics. Reads resolve each chunk newest layer first.

Where this implementation deliberately departs from the crate:

* A chunk is found through a per-layer hash index, not a linear scan.
* A tombstone stops the fall-through to older layers, and an array deleted and re-defined before
  one flush is written as two sidecars (the tombstone, then the new definition), so no
  pre-delete data ever shows through, before or after :meth:`compact`.
* Attributes are resolved in the layer that holds the array's metadata, and each new layer's
  attribute dictionaries extend the previous layer's with stable indices (cumulative), which
  the crate's own lookups also read right.
* The next sidecar is ``max(N) + 1``, created with a create-only put (another writer's sidecar
  is never replaced).
* :meth:`compact` writes the new base first (atomic replace), then deletes sidecars oldest
  first: every intermediate state reads the same data.
* Caches are keyed by object version, so nothing read before a ``compact`` is served after it.
* An LZ4 block is still one LZ4 block for every reader, but is made of independently
  compressed segments of whole chunks, found through a table between the blocks and the
  footer (which other readers skip): a chunk read decodes its segment, not its 8 MiB block.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import posixpath
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any, Self

import numpy as np

from .._casting import cast_for_storage, check_value_fits
from .._zstdframes import LZ4_MAX_RATIO, decode_exact
from ..errors import (
    ArrayExistsError,
    ArrayNotFoundError,
    CorruptArrayFileError,
    CorruptFooterError,
    StatisticsWarning,
    UnsafeCastError,
    UnsupportedElementTypeError,
)
from . import _format as fmt
from . import _segments as seg
from ._backends import (
    Backend,
    FileRange,
    LocalBackend,
    MemoryBackend,
    ObstoreBackend,
    Tail,
)
from ._cache import DeltaCache
from ._types import (
    U32_MAX,
    DTypeInfo,
    attribute_to_python,
    chunk_stats,
    decode_chunk,
    dtype_from_tag,
    dtype_info,
    encode_chunk,
    fill_element,
    python_to_attribute,
    python_to_fill,
    stat_key,
    stat_to_python,
)

__all__ = [
    "ArrayExistsError",
    "ArrayFile",
    "ArrayInfo",
    "ArrayNotFoundError",
    "ArrayStats",
    "CorruptArrayFileError",
    "FileConfig",
    "UnsupportedElementTypeError",
]

MiB = 1 << 20
_TAIL_READ = 64 * 1024  # one suffix read per layer covers footers up to this size
_MAX_SEGMENT_TABLE = 256 << 20  # a larger gap before the footer is not a segment table
_tokens = itertools.count(1)


@dataclass(frozen=True, kw_only=True)
class FileConfig:
    """Options of an :class:`ArrayFile`.

    Parameters
    ----------
    codec
        Block compression: ``"lz4"`` (LZ4 block with a 4-byte size prefix, as the crate's
        ``lz4_flex`` writes), ``"zstd"`` or ``None``.
    zstd_level
        Zstandard level.
    block_target_size
        A block is compressed and closed once it holds this many bytes (chunks never span
        blocks); must be below 4 GiB.
    cache_capacity, io_cache_capacity
        Budgets of the private cache (decompressed blocks, raw bytes) used when ``cache`` is
        None.
    cache
        A :class:`DeltaCache` shared with other files, under its own budget.
    """

    codec: str | None = "lz4"
    zstd_level: int = 3
    block_target_size: int = 8 * MiB
    cache_capacity: int = 256 * MiB
    io_cache_capacity: int = 64 * MiB
    cache: DeltaCache | None = None

    def __post_init__(self) -> None:
        if self.codec not in (None, "lz4", "zstd"):
            raise ValueError(f"codec must be 'lz4', 'zstd' or None, not {self.codec!r}")
        if not 1 <= self.block_target_size <= U32_MAX:
            raise ValueError(
                f"block_target_size must be between 1 and 4 GiB - 1 (the format's u32 chunk "
                f"offsets), not {self.block_target_size}"
            )


@dataclass(frozen=True)
class ArrayStats:
    """Statistics of one array as of the last flush (the crate's rules).

    ``min``/``max`` are taken over stored elements that differ from the fill value (None when
    there are none); ``row_count`` is the number of elements; ``null_count`` counts the
    elements that are the fill value or were never written.
    """

    min: Any
    max: Any
    null_count: int
    row_count: int


@dataclass(frozen=True)
class ArrayInfo:
    """Shape, type and chunking of one array."""

    name: str
    dtype: Any
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dim_names: tuple[str, ...]
    fill_value: Any


# --- In-memory model -------------------------------------------------------------------


@dataclass
class _Meta:
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
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunk_shape, strict=True))

    def same_layout(self, other: _Meta) -> bool:
        return (
            self.dtype_raw == other.dtype_raw
            and self.shape == other.shape
            and self.chunk_shape == other.chunk_shape
        )

    def key(self, coord: Sequence[int]) -> int:
        k = 0
        for c, g in zip(coord, self.grid, strict=True):
            k = k * g + c
        return k

    def keys(self, coords: np.ndarray) -> list[int]:
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

    def copy(self) -> _Meta:
        return dc_replace(self, dim_names=list(self.dim_names), attrs=dict(self.attrs))

    def element(self) -> Any:
        return fill_element(self.require_info(), self.fill)

    def require_info(self) -> DTypeInfo:
        if self.info is None:
            raise UnsupportedElementTypeError(
                f"array {self.name!r}: element type {self.dtype_raw[0]} cannot be read or "
                "written (no element implementation in the format)"
            )
        return self.info


class _LayerArray:
    __slots__ = ("_index", "deleted", "meta", "table")

    def __init__(self, meta: _Meta, deleted: bool, table: fmt.ChunkTable) -> None:
        self.meta = meta
        self.deleted = deleted
        self.table = table
        self._index: dict[int, int] | None = None

    def lookup(self, key: int) -> int | None:
        if self._index is None:
            keys = self.meta.keys(self.table.coords)
            self._index = dict(zip(keys, range(len(keys)), strict=True))
        return self._index.get(key)


@dataclass
class _Layer:
    key: str
    number: int
    version: str
    footer: dict[str, Any]
    blocks: dict[int, tuple[int, int, int, str | None]]
    arrays: dict[str, _LayerArray]
    stats_cache: dict[tuple[str, int], tuple[Any, Any, int]] = field(default_factory=dict)
    # LZ4 segment tables by block id; None until read from between the blocks and the footer
    segments: dict[int, Any] | None = None
    gap: tuple[int, int] = (0, 0)  # where a segment table can be: [last block end, footer)
    # unique per loaded generation: cache keys never match bytes of another generation, even
    # if a file system reuses an inode number and timestamp for a rewritten sidecar
    token: int = field(default_factory=lambda: next(_tokens))


class _PendingArray:
    __slots__ = ("chunks", "deleted", "fresh", "meta", "recreated", "tomb_meta")

    def __init__(self, meta: _Meta, *, deleted: bool = False, recreated: bool = False) -> None:
        self.meta = meta
        self.deleted = deleted
        self.fresh = False  # defined since the last flush
        # deleted and defined again before one flush: the tombstone (of tomb_meta) is
        # written in a sidecar of its own below the new definition
        self.recreated = recreated
        self.tomb_meta = meta
        # key -> (coord, block id, offset, size, chunk stats)
        self.chunks: dict[int, tuple[tuple[int, ...], int, int, int, Any]] = {}


# --- Block codecs and the block allocator ----------------------------------------------


def _decompress(codec: str | None, data: Any, usize: int) -> Any:
    if codec is None:
        out = data
    elif codec == "lz4":
        import lz4.block

        if len(data) < 4 or int.from_bytes(bytes(data[:4]), "little") != usize:
            raise ValueError(f"the LZ4 size prefix does not announce {usize} bytes")
        if usize > LZ4_MAX_RATIO * len(data):
            raise ValueError(f"{len(data)} bytes of LZ4 data cannot decode to {usize} bytes")
        out = lz4.block.decompress(memoryview(data)[4:], uncompressed_size=usize)
    elif codec == "zstd":
        out = memoryview(decode_exact(data, usize))
    else:
        raise ValueError(f"unknown block codec {codec!r}")
    if len(out) != usize:
        raise ValueError(f"the block decodes to {len(out)} bytes, its footer says {usize}")
    return out


def _materialise(stored: Any) -> Any:
    return stored.read() if isinstance(stored, FileRange) else stored


class _Allocator:
    """Packs chunk payloads into blocks of about ``target`` bytes, compressing full blocks.

    Sealed blocks stay in memory up to ``spill_bytes`` in total; past that they go to an
    anonymous temporary file, so a large flush or compaction does not need its size in RAM.
    LZ4 blocks are made of independently decodable segments of whole chunks (see
    :mod:`._segments`), so a read of one chunk decompresses its segment, not its block.
    """

    spill_bytes = 256 * MiB

    def __init__(self, config: FileConfig, spill_dir: str | None = None) -> None:
        self.spill_dir = spill_dir
        self.codec = config.codec
        self.level = config.zstd_level
        self.target = config.block_target_size
        # (stored bytes or FileRange, uncompressed size, LZ4 segment table or None)
        self.sealed: list[tuple[Any, int, Any]] = []
        self.cur = bytearray()
        self.bounds = [0]  # segment boundaries in cur
        self.token = next(_tokens)
        self._in_memory = 0
        self._spool: Any = None
        self._spool_end = 0

    def append(self, data: Any) -> tuple[int, int, int]:
        size = len(data) if not isinstance(data, memoryview) else data.nbytes
        if size > U32_MAX:
            raise OverflowError(f"a {size}-byte chunk does not fit the format's u32 sizes")
        bid, off = len(self.sealed), len(self.cur)
        self.cur += data
        if len(self.cur) - self.bounds[-1] >= seg.SEGMENT_MIN:
            self.bounds.append(len(self.cur))
        if len(self.cur) >= self.target:
            self.seal()
        return bid, off, size

    def seal(self) -> None:
        if not self.cur:
            return
        raw = self.cur
        table = None
        stored: Any
        if self.bounds[-1] != len(raw):
            self.bounds.append(len(raw))
        if self.codec == "lz4":
            stored, table = seg.compress(raw, self.bounds)
        elif self.codec == "zstd":
            stored, table = seg.compress_zstd(raw, self.bounds, self.level)
        else:
            stored = raw
        self.cur = bytearray()
        self.bounds = [0]
        if self._spool is None and self._in_memory + len(stored) > self.spill_bytes:
            self._spool = tempfile.TemporaryFile(  # noqa: SIM115
                prefix=".dafzarr-af-", dir=self.spill_dir
            )
        if self._spool is not None:
            n = os.pwrite(self._spool.fileno(), stored, self._spool_end)
            if n != len(stored):
                raise OSError(f"short write to the temporary block file ({n} bytes)")
            stored = FileRange(self._spool.fileno(), self._spool_end, n)
            self._spool_end += n
        else:
            self._in_memory += len(stored)
        self.sealed.append((stored, len(raw), table))

    def chunk(self, cache: DeltaCache, bid: int, off: int, size: int) -> bytes:
        if bid == len(self.sealed):
            return bytes(self.cur[off : off + size])
        stored, usize, _ = self.sealed[bid]
        if self.codec is None:
            if isinstance(stored, FileRange):
                return os.pread(stored.fd, size, stored.offset + off)
            return bytes(stored[off : off + size])
        ck = ("pending", self.token, bid)
        block = cache.blocks.get(ck)
        if block is None:
            block = _decompress(self.codec, _materialise(stored), usize)
            cache.blocks.put(ck, block)
        return bytes(block[off : off + size])

    def finish(self) -> list[tuple[Any, int, Any]]:
        self.seal()
        return self.sealed

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


# --- Attribute dictionaries ------------------------------------------------------------


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


class _AttrDict:
    """A layer's attribute dictionaries, extending the previous layer's (stable indices)."""

    def __init__(self, keys: list[str], values: list[Any]) -> None:
        self.keys = list(keys)
        self.values = list(values)
        self._k: dict[str, int] = {}
        for i, k in enumerate(self.keys):
            self._k.setdefault(k, i)
        self._v: dict[Any, int] = {}
        for i, v in enumerate(self.values):
            self._v.setdefault(_hashable(v), i)

    def pairs(self, attrs: dict[str, tuple[Any, ...]]) -> tuple[Any, ...]:
        out = []
        for k, v in attrs.items():
            ki = self._k.get(k)
            if ki is None:
                ki = self._k[k] = len(self.keys)
                self.keys.append(k)
            hv = _hashable(v)
            vi = self._v.get(hv)
            if vi is None:
                vi = self._v[hv] = len(self.values)
                self.values.append(v)
            out.append({"k": ki, "v": vi})
        out.sort(key=lambda p: p["k"])
        top = max((max(p["k"], p["v"]) for p in out), default=0)
        width = "U16" if top <= 0xFFFF else "U32" if top <= U32_MAX else "U64"
        return (width, out)


# --- Targets ---------------------------------------------------------------------------


def _target(target: Any) -> tuple[Backend, str, str]:
    """(backend, key of the base object, hint written into sidecars)."""
    if isinstance(target, tuple):
        if len(target) != 2 or not isinstance(target[1], str):
            raise TypeError("an object-store target is a tuple (obstore_store, 'key.af')")
        store, key = target
        key = key.lstrip("/")
        if not key.endswith(".af"):
            raise ValueError(f"an ArrayFile key must end in '.af': {key!r}")
        return ObstoreBackend(store), key, key
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(
            f"target must be a path ending in '.af' or (obstore_store, key), not {target!r}"
        )
    path = os.path.abspath(os.fspath(target))
    if not path.endswith(".af"):
        raise ValueError(f"an ArrayFile path must end in '.af': {path!r}")
    return LocalBackend(), path, os.path.basename(path)


def _sidecar_number(stem_base: str, name: str) -> int | None:
    """N when ``name`` is ``{stem}.{N}.af`` with N a non-zero u32 (the crate's rule)."""
    if not (name.startswith(stem_base + ".") and name.endswith(".af")):
        return None
    mid = name[len(stem_base) + 1 : -3]
    if not mid.isascii() or not mid.isdigit():
        return None
    n = int(mid)
    return n if 0 < n <= U32_MAX else None


# --- The file --------------------------------------------------------------------------


class ArrayFile:
    """Many n-dimensional arrays in one object, with delta sidecars and compaction.

    Create one with :meth:`create`, :meth:`open` or :meth:`create_memory`; a target is a local
    path ending in ``.af`` or a tuple ``(obstore_store, "key.af")``. Changes collect in memory
    until :meth:`flush` writes them as one sidecar; :meth:`compact` merges everything into a
    new base. Use it as a context manager: leaving the block normally flushes and closes;
    leaving it with an exception closes without writing the pending changes.

    One handle may be shared by threads (operations are serialised). The ``*_async``
    methods run the blocking work in a worker thread. A handle dropped without
    :meth:`close` discards its unflushed changes.
    """

    def __init__(
        self, backend: Backend, key: str, hint: str, config: FileConfig, *, _token: object
    ) -> None:
        if _token is not _PRIVATE:
            raise TypeError("use ArrayFile.create(), ArrayFile.open() or ArrayFile.create_memory()")
        self._backend = backend
        self._key = key
        self._hint = hint
        self._config = config
        self._cache = config.cache or DeltaCache(config.cache_capacity, config.io_cache_capacity)
        self._stem = key[:-3]
        self._lock = threading.RLock()
        self._layers: list[_Layer] = []
        self._pending: dict[str, _PendingArray] = {}
        self._alloc: _Allocator | None = None
        self._stats: list[dict[str, Any]] = []
        self._stats_gen = 0
        self._closed = False

    # --- Construction ------------------------------------------------------------------

    @classmethod
    def create(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """Create a new, empty file set at ``target`` (``FileExistsError`` if one exists)."""
        backend, key, hint = _target(target)
        self = cls(backend, key, hint, config or FileConfig(), _token=_PRIVATE)
        if self._discover() or backend.exists(self._stem + ".stats"):
            raise FileExistsError(
                f"{key}: sidecars or statistics of an earlier file set exist next to it"
            )
        data = fmt.encode_footer(fmt.empty_footer())
        version = backend.put(key, [data], create_only=True)
        self._layers = [self._layer_from_footer(key, 0, version, fmt.empty_footer())]
        return self

    @classmethod
    def open(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """Open an existing file set: the base, every sidecar, and the statistics."""
        backend, key, hint = _target(target)
        self = cls(backend, key, hint, config or FileConfig(), _token=_PRIVATE)
        self._layers = [self._load_layer(key, 0)]
        for number, skey in self._discover():
            self._layers.append(self._load_layer(skey, number))
        self._load_stats()
        return self

    @classmethod
    def create_memory(cls, config: FileConfig | None = None) -> ArrayFile:
        """A file set held in process memory (key ``memory.af``)."""
        backend = MemoryBackend()
        self = cls(backend, "memory.af", "memory.af", config or FileConfig(), _token=_PRIVATE)
        version = backend.put("memory.af", [fmt.encode_footer(fmt.empty_footer())],
                              create_only=True)
        self._layers = [self._layer_from_footer("memory.af", 0, version, fmt.empty_footer())]
        return self

    @classmethod
    async def create_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`create` in a worker thread."""
        return await asyncio.to_thread(cls.create, target, config=config)

    @classmethod
    async def open_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`open` in a worker thread."""
        return await asyncio.to_thread(cls.open, target, config=config)

    def _discover(self) -> list[tuple[int, str]]:
        stem_base = posixpath.basename(self._stem)
        found = []
        try:
            siblings = self._backend.siblings(self._key)
        except FileNotFoundError:
            return []
        for k in siblings:
            n = _sidecar_number(stem_base, posixpath.basename(k))
            if n is not None:
                found.append((n, k))
        found.sort()
        return found

    def _corrupt(self, key: str, msg: str) -> CorruptArrayFileError:
        return CorruptArrayFileError(f"{key}: {msg}")

    def _read_tail_object(self, key: str, magic: bytes) -> tuple[memoryview, int, Tail]:
        """The payload before the trailer, where it starts, and the suffix read."""
        tail = self._backend.tail(key, _TAIL_READ)
        try:
            n = fmt.split_trailer(tail.data, magic, tail.size)
        except CorruptFooterError as exc:
            raise self._corrupt(key, f"truncated or not an array-format object ({exc})") from exc
        have = len(tail.data) - 12
        if n > have:
            head = self._backend.read(key, tail.version, tail.size - 12 - n, tail.size - 12 - have)
            payload = memoryview(bytes(head) + bytes(tail.data[: len(tail.data) - 12]))
        else:
            payload = memoryview(tail.data)[have - n : have]
        return payload, tail.size - 12 - n, tail

    def _load_layer(self, key: str, number: int) -> _Layer:
        payload, data_end, tail = self._read_tail_object(key, fmt.FOOTER_MAGIC)
        version = tail.version
        try:
            footer = fmt.decode_footer(payload)
        except CorruptFooterError as exc:
            raise self._corrupt(key, str(exc)) from exc
        layer = self._layer_from_footer(key, number, version, footer, data_end=data_end)
        lo, hi = layer.gap
        tail_start = tail.size - len(tail.data)
        if hi > lo >= tail_start:  # the suffix read already holds the segment table
            layer.segments = seg.decode_table(
                memoryview(tail.data)[lo - tail_start : hi - tail_start], layer.blocks)
        return layer

    def _layer_from_footer(
        self, key: str, number: int, version: str, footer: dict[str, Any],
        data_end: int | None = None, segments: dict[int, Any] | None = None,
    ) -> _Layer:
        blocks: dict[int, tuple[int, int, int, str | None]] = {}
        for b in footer["blocks"]:
            codec = None if b["codec"][0] == "None" else b["codec"][1]
            if codec not in (None, "lz4", "zstd"):
                raise self._corrupt(key, f"block {b['id']} uses the unknown codec {codec!r}")
            if data_end is not None and b["file_offset"] + b["compressed_size"] > data_end:
                raise self._corrupt(key, f"block {b['id']} lies outside the data region")
            if codec is None and b["compressed_size"] != b["uncompressed_size"]:
                raise self._corrupt(key, f"uncompressed block {b['id']} has two sizes")
            if b["uncompressed_size"] > U32_MAX + (1 << 32):
                raise self._corrupt(key, f"block {b['id']} claims {b['uncompressed_size']} bytes")
            blocks[b["id"]] = (b["file_offset"], b["compressed_size"], b["uncompressed_size"],
                               codec)
        keys, values = footer["attr_keys"], footer["attr_values"]
        arrays: dict[str, _LayerArray] = {}
        for a in footer["arrays"]:
            meta = self._meta_from_footer(key, a, keys, values)
            table: fmt.ChunkTable = a["layout"]["storage"]["chunks"]
            if len(table):
                self._check_table(key, meta, table, blocks)
            else:
                table = fmt.ChunkTable.empty(len(meta.shape))
            arrays[meta.name] = _LayerArray(meta, bool(a["deleted"]), table)
        layer = _Layer(key, number, version, footer, blocks, arrays, segments=segments)
        if segments is None:
            blocks_end = max((b[0] + b[1] for b in blocks.values()), default=0)
            if data_end is None or not any(b[3] in seg.CODECS for b in blocks.values()):
                layer.segments = {}
            else:
                layer.gap = (blocks_end, data_end)
        return layer

    def _meta_from_footer(
        self, key: str, a: dict[str, Any], keys: list[str], values: list[Any]
    ) -> _Meta:
        name = a["name"]
        layout = a["layout"]
        shape = tuple(layout["shape"])
        chunk_shape = tuple(layout["storage"]["chunk_shape"])
        if len(chunk_shape) != len(shape) or 0 in chunk_shape:
            raise self._corrupt(key, f"array {name!r}: chunk shape {chunk_shape} for {shape}")
        try:
            info: DTypeInfo | None = dtype_from_tag(a["dtype"][0])
        except ValueError:
            info = None
        attrs = {}
        for p in a["attributes"][1]:
            if p["k"] >= len(keys) or p["v"] >= len(values):
                raise self._corrupt(key, f"array {name!r}: attribute index out of range")
            attrs[keys[p["k"]]] = values[p["v"]]
        return _Meta(name, a["dtype"], info, shape, list(layout["dimension_names"]),
                     chunk_shape, a["fill_value"], attrs)

    def _check_table(
        self, key: str, meta: _Meta, table: fmt.ChunkTable,
        blocks: dict[int, tuple[int, int, int, str | None]],
    ) -> None:
        if table.coords.shape[1] != len(meta.shape):
            raise self._corrupt(key, f"array {meta.name!r}: chunk coordinates of wrong length")
        if len(meta.shape) and np.any(table.coords >= np.asarray(meta.grid, np.uint64)):
            raise self._corrupt(key, f"array {meta.name!r}: a chunk lies outside the array")
        bids, inverse = np.unique(table.addrs[:, 0], return_inverse=True)
        usize = np.array([blocks.get(int(b), (0, 0, -1, None))[2] for b in bids], np.int64)
        if np.any(usize < 0):
            raise self._corrupt(key, f"array {meta.name!r}: a chunk names a missing block")
        ends = table.addrs[:, 1].astype(np.int64) + table.addrs[:, 2]
        if np.any(ends > usize[inverse.reshape(-1)]):
            raise self._corrupt(key, f"array {meta.name!r}: a chunk runs past its block")

    def _load_stats(self) -> None:
        """Read ``{stem}.stats``. A missing one means no statistics; an unreadable one too
        (as the format's reference implementation reads it), with a :class:`StatisticsWarning`.
        The next flush rewrites it with the arrays it touches; :meth:`compact` rebuilds all."""
        key = self._stem + ".stats"
        self._stats = []
        try:
            payload, _, _ = self._read_tail_object(key, fmt.STATS_MAGIC)
            gen, entries = fmt.decode_stats(payload)
            _check_stats_entries(entries)
        except FileNotFoundError:
            return
        except (CorruptArrayFileError, CorruptFooterError, OSError) as exc:
            reason = str(exc).removeprefix(f"{key}: ")
            warnings.warn(
                f"{key}: the statistics sidecar is unreadable and is ignored (statistics are "
                f"reported missing; the data are not affected): {reason}",
                StatisticsWarning, stacklevel=3,
            )
            return
        self._stats_gen, self._stats = gen, entries

    # --- Basic state -------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self._key}: the ArrayFile is closed")

    @property
    def num_layers(self) -> int:
        """Committed layers: the base plus one per sidecar."""
        return len(self._layers)

    @property
    def path(self) -> str:
        """The key (or absolute path) of the base object."""
        return self._key

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.num_layers} layers"
        return f"<ArrayFile {self._key!r} ({state})>"

    def _entry(self, name: str) -> tuple[_Meta, bool] | None:
        """(newest metadata, deleted) for ``name``, or None if no layer mentions it."""
        p = self._pending.get(name)
        if p is not None:
            return p.meta, p.deleted
        for layer in reversed(self._layers):
            la = layer.arrays.get(name)
            if la is not None:
                return la.meta, la.deleted
        return None

    def _meta(self, name: str) -> _Meta:
        e = self._entry(name)
        if e is None or e[1]:
            raise ArrayNotFoundError(f"{self._key}: no array named {name!r}")
        return e[0]

    def list_arrays(self) -> list[str]:
        """Names of the visible arrays, oldest definition first."""
        with self._lock:
            self._check_open()
            names: dict[str, None] = {}
            for layer in self._layers:
                names.update(dict.fromkeys(layer.arrays))
            names.update(dict.fromkeys(self._pending))
            return [n for n in names if not self._entry(n)[1]]  # type: ignore[index]

    def array_info(self, name: str) -> ArrayInfo:
        """Shape, dtype, chunk shape, dimension names and fill value of ``name``."""
        with self._lock:
            self._check_open()
            m = self._meta(name)
            info = m.require_info()
            dtype: Any = (str if info.tag == "String" else bytes) if info.vlen else info.np_dtype
            fill = None if m.fill is None else m.fill[1]
            return ArrayInfo(name, dtype, m.shape, m.chunk_shape, tuple(m.dim_names), fill)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            e = self._entry(name) if isinstance(name, str) else None
            return e is not None and not e[1]

    # --- Defining, deleting, attributes ------------------------------------------------

    def define_array(
        self,
        name: str,
        dtype: Any,
        dim_names: Sequence[str],
        shape: Sequence[int],
        *,
        chunk_shape: Sequence[int] | None = None,
        fill_value: Any = None,
    ) -> None:
        """Declare a new array (nothing is written until data arrives).

        Shapes are fixed. Every axis must have a length of at least 1 and at most 2**32 - 1
        (the format stores u32 extents); one chunk of a fixed-width type must stay below
        4 GiB. ``chunk_shape=None`` makes the whole array one chunk.
        """
        with self._lock:
            self._check_open()
            if not isinstance(name, str) or not name:
                raise ValueError("an array name must be a non-empty string")
            info = dtype_info(dtype)
            shape_t = _u32_tuple(shape, f"array {name!r}: shape")
            if 0 in shape_t:
                raise ValueError(
                    f"array {name!r}: shape {shape_t} has a zero-length axis, which the format "
                    "cannot chunk"
                )
            cs = shape_t if chunk_shape is None else _u32_tuple(
                chunk_shape, f"array {name!r}: chunk_shape"
            )
            if len(cs) != len(shape_t):
                raise ValueError(
                    f"array {name!r}: chunk_shape {cs} has {len(cs)} axes, shape has "
                    f"{len(shape_t)}"
                )
            if 0 in cs:
                raise ValueError(f"array {name!r}: chunk_shape {cs} has a zero-length axis")
            dims = [str(d) for d in dim_names]
            if len(dims) != len(shape_t):
                raise ValueError(
                    f"array {name!r}: {len(dims)} dimension names for {len(shape_t)} axes"
                )
            if not info.vlen:
                nbytes = info.np_dtype.itemsize
                for c in cs:
                    nbytes *= c
                if nbytes > U32_MAX:
                    raise OverflowError(
                        f"array {name!r}: a {nbytes}-byte chunk does not fit the format's u32 "
                        "chunk sizes; use a smaller chunk_shape"
                    )
            if fill_value is not None and not info.vlen and not (
                info.tag == "TimestampNs" and isinstance(fill_value, str)
            ):
                check_value_fits(fill_value, info.np_dtype,
                                 f"{self._key}: array {name!r}: fill_value")
            fill = python_to_fill(info, fill_value)
            e = self._entry(name)
            if e is not None and not e[1]:
                raise ArrayExistsError(f"{self._key}: an array named {name!r} exists")
            p = self._pending.get(name)
            meta = _Meta(name, (info.tag,), info, shape_t, dims, cs, fill)
            self._pending.pop(name, None)
            new = self._pending[name] = _PendingArray(meta, recreated=p is not None)
            new.fresh = True
            if p is not None:
                new.tomb_meta = p.tomb_meta

    def delete(self, name: str) -> None:
        """Hide ``name`` at once; its bytes go away at the next :meth:`compact`."""
        with self._lock:
            self._check_open()
            meta = self._meta(name).copy()
            p = self._pending.get(name)
            pa = _PendingArray(meta, deleted=True, recreated=p is not None and p.recreated)
            if p is not None:
                pa.tomb_meta = p.tomb_meta
            self._pending[name] = pa

    def _pending_for_write(self, name: str) -> _PendingArray:
        p = self._pending.get(name)
        if p is not None and not p.deleted:
            return p
        meta = self._meta(name).copy()
        p = self._pending[name] = _PendingArray(meta)
        return p

    def set_attribute(self, name: str, key: str, value: Any) -> None:
        """Set attribute ``key`` of array ``name`` (bool, int, float, str or numpy scalar)."""
        with self._lock:
            self._check_open()
            v = python_to_attribute(value)
            self._pending_for_write(name).meta.attrs[str(key)] = v

    def get_attribute(self, name: str, key: str, default: Any = None) -> Any:
        """Attribute ``key`` of array ``name``, or ``default`` if it has none."""
        with self._lock:
            self._check_open()
            v = self._meta(name).attrs.get(key)
            return default if v is None else attribute_to_python(v)

    def attributes(self, name: str) -> dict[str, Any]:
        """All attributes of array ``name``."""
        with self._lock:
            self._check_open()
            return {k: attribute_to_python(v) for k, v in self._meta(name).attrs.items()}

    # --- Chunk resolution --------------------------------------------------------------

    def _reachable(self, meta: _Meta) -> Iterator[tuple[_Layer, _LayerArray]]:
        """Committed layers holding ``meta``'s array, newest first, down to a tombstone."""
        for layer in reversed(self._layers):
            la = layer.arrays.get(meta.name)
            if la is None:
                continue
            if la.deleted or not la.meta.same_layout(meta):
                return
            yield layer, la

    def _locate(self, meta: _Meta, key: int) -> Any:
        p = self._pending.get(meta.name)
        if p is not None:
            if p.deleted:
                return None
            rec = p.chunks.get(key)
            if rec is not None:
                return ("p", rec)
            if p.recreated:
                return None
        for layer, la in self._reachable(meta):
            row = la.lookup(key)
            if row is not None:
                return (layer, la, row)
        return None

    def _segment_tables(self, layer: _Layer) -> dict[int, Any]:
        """The layer's LZ4 segment tables, read on first use (one range read)."""
        if layer.segments is None:
            lo, hi = layer.gap
            if hi - lo < 32 or hi - lo > _MAX_SEGMENT_TABLE:
                layer.segments = {}
            else:
                data = self._backend.read(layer.key, layer.version, lo, hi)
                layer.segments = seg.decode_table(data, layer.blocks)
        return layer.segments

    def _segment(self, layer: _Layer, bid: int, off: int, size: int) -> Any:
        """Chunk bytes from the segment that holds them, or None to decode the whole block."""
        table = self._segment_tables(layer).get(bid)
        if table is None:
            return None
        boff, csize, usize, codec = layer.blocks[bid]
        assert codec is not None  # tables are only kept for compressed blocks
        i, out_lo, out_hi, in_lo, in_hi = seg.segment_span(table, off, usize, csize)
        if off + size > out_hi:
            return None  # not written by a segmenting writer: chunks straddle segments
        ck = (self._backend.ident, layer.key, layer.version, layer.token, bid, i)
        data = self._cache.blocks.get(ck)
        if data is None:
            raw = self._cache.io.get(ck[:-1])
            stored: Any
            if raw is not None:
                stored = memoryview(raw)[in_lo:in_hi]
            else:
                stored = self._backend.read(layer.key, layer.version, boff + in_lo, boff + in_hi)
                if len(stored) != in_hi - in_lo:
                    raise self._corrupt(layer.key, f"block {bid} is truncated")
            try:
                data = seg.decode_segment(table, i, stored, usize, csize, codec)
            except Exception as exc:
                raise self._corrupt(
                    layer.key, f"block {bid}, segment {i} does not decode ({exc})") from exc
            self._cache.blocks.put(ck, data)
        return memoryview(data)[off - out_lo : off - out_lo + size]

    def _block(self, layer: _Layer, bid: int) -> Any:
        ck = (self._backend.ident, layer.key, layer.version, layer.token, bid)
        block = self._cache.blocks.get(ck)
        if block is not None:
            return block
        try:
            off, csize, usize, codec = layer.blocks[bid]
        except KeyError:
            raise self._corrupt(layer.key, f"block {bid} is not in the footer") from None
        raw = self._cache.io.get(ck) if codec is not None else None
        if raw is None:
            raw = self._backend.read(layer.key, layer.version, off, off + csize)
            if len(raw) != csize:
                raise self._corrupt(layer.key, f"block {bid} is truncated")
            if codec is not None:
                self._cache.io.put(ck, raw)
        try:
            block = _decompress(codec, raw, usize)
        except Exception as exc:
            raise self._corrupt(layer.key, f"block {bid} does not decode ({exc})") from exc
        self._cache.blocks.put(ck, block)
        return block

    def _raw_chunk(self, loc: Any, *, direct: bool = False) -> Any:
        """The stored bytes of a chunk. ``direct``: a lone chunk of an uncompressed block
        that is not cached is read by itself (a range read of the chunk, not of the block)."""
        if loc[0] == "p":
            _, bid, off, size, _ = loc[1]
            assert self._alloc is not None
            return self._alloc.chunk(self._cache, bid, off, size)
        layer, la, row = loc
        bid, off, size = (int(x) for x in la.table.addrs[row])
        if direct:
            meta = layer.blocks.get(bid)
            if meta is not None and meta[3] is None and self._cache.blocks.get(
                (self._backend.ident, layer.key, layer.version, layer.token, bid)
            ) is None:
                start = meta[0] + off
                data = self._backend.read(layer.key, layer.version, start, start + size)
                if len(data) != size:
                    raise self._corrupt(layer.key, f"block {bid} is truncated")
                return data
        meta = layer.blocks.get(bid)
        if meta is not None and meta[3] in seg.CODECS and self._cache.blocks.get(
            (self._backend.ident, layer.key, layer.version, layer.token, bid)
        ) is None:
            chunk = self._segment(layer, bid, off, size)
            if chunk is not None:
                return chunk
        return memoryview(self._block(layer, bid))[off : off + size]

    def _chunk_values(
        self, meta: _Meta, coord: tuple[int, ...], loc: Any, *, direct: bool = False
    ) -> np.ndarray:
        raw = self._raw_chunk(loc, direct=direct)
        cshape = _clipped(meta, coord)
        try:
            return decode_chunk(meta.require_info(), raw, cshape)
        except ValueError as exc:
            where = self._key if loc[0] == "p" else loc[0].key
            raise self._corrupt(where, f"array {meta.name!r}, chunk {coord}: {exc}") from exc

    # --- Reading -----------------------------------------------------------------------

    def read_array(
        self, name: str, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """Read a region (default: the whole array); unwritten elements read as the fill value.

        ``str``/``bytes`` arrays come back as numpy object arrays.
        """
        with self._lock:
            self._check_open()
            meta = self._meta(name)
            info = meta.require_info()
            st, sh = _region(meta, start, shape)
            pieces = list(_chunks_in(meta, st, sh))
            lone = len(pieces) == 1
            if lone and pieces[0][1] == pieces[0][2] and sh == _clipped(meta, pieces[0][0]):
                # exactly one whole chunk: decode it straight into the result
                coord = pieces[0][0]
                loc = self._locate(meta, meta.key(coord))
                if loc is not None:
                    return self._chunk_values(meta, coord, loc, direct=True).copy()
            out = np.full(sh, meta.element(), dtype=info.np_dtype)
            for coord, dst, src in pieces:
                loc = self._locate(meta, meta.key(coord))
                if loc is None:
                    continue
                out[dst] = self._chunk_values(meta, coord, loc, direct=lone)[src]
            return out

    async def read_array_async(
        self, name: str, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """:meth:`read_array` in a worker thread."""
        return await asyncio.to_thread(self.read_array, name, start, shape)

    # --- Writing -----------------------------------------------------------------------

    def write_array(self, name: str, start: Sequence[int], data: Any) -> None:
        """Write ``data`` at ``start``; chunks only partly covered are read, patched, rewritten."""
        with self._lock:
            self._check_open()
            meta = self._meta(name)
            info = meta.require_info()
            arr = _as_array(info, data, f"{self._key}: array {name!r}")
            st, sh = _region(meta, start, arr.shape, write=True)
            encoded = []  # every chunk is encoded before any is stored: all or nothing
            for coord, dst, src in _chunks_in(meta, st, sh):
                cshape = _clipped(meta, coord)
                key = meta.key(coord)
                piece = arr[dst]
                if piece.shape == cshape:
                    values = piece
                else:
                    loc = self._locate(meta, key)
                    if loc is None:
                        values = np.full(cshape, meta.element(), dtype=info.np_dtype)
                    else:
                        values = self._chunk_values(meta, coord, loc).copy()
                    values[src] = piece
                encoded.append((key, coord, encode_chunk(info, values),
                                chunk_stats(info, meta.fill, values)))
            p = self._pending_for_write(name)
            if self._alloc is None:
                self._alloc = _Allocator(self._config, self._spill_dir())
            for key, coord, payload, stats in encoded:
                bid, off, size = self._alloc.append(payload)
                p.chunks[key] = (coord, bid, off, size, stats)

    async def write_array_async(self, name: str, start: Sequence[int], data: Any) -> None:
        """:meth:`write_array` in a worker thread."""
        await asyncio.to_thread(self.write_array, name, start, data)

    # --- Flush -------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the pending changes as a new sidecar and update the statistics."""
        with self._lock:
            self._check_open()
            self._flush()

    async def flush_async(self) -> None:
        """:meth:`flush` in a worker thread."""
        await asyncio.to_thread(self.flush)

    def _spill_dir(self) -> str | None:
        """Where blocks beyond the memory budget go: next to a local file set (same file
        system, so a flush copies them in the kernel), else the temporary directory."""
        return os.path.dirname(self._key) if isinstance(self._backend, LocalBackend) else None

    def _footer_version(self) -> int:
        return int(self._layers[-1].footer["version"])

    def _attr_dict(self) -> _AttrDict:
        f = self._layers[-1].footer
        return _AttrDict(f["attr_keys"], f["attr_values"])

    def _array_entry(
        self, meta: _Meta, deleted: bool, table: fmt.ChunkTable, attrs: _AttrDict
    ) -> dict[str, Any]:
        return {
            "name": meta.name,
            "dtype": meta.dtype_raw,
            "layout": {
                "shape": list(meta.shape),
                "dimension_names": list(meta.dim_names),
                "storage": {"chunk_shape": list(meta.chunk_shape), "chunks": table},
            },
            "fill_value": meta.fill,
            "deleted": deleted,
            "attributes": attrs.pairs(meta.attrs),
        }

    def _write_layer(
        self, entries: list[tuple[_Meta, bool, fmt.ChunkTable]],
        blocks: list[tuple[Any, int, Any]],
        *, base: bool,
    ) -> _Layer:
        attrs = self._attr_dict()
        block_meta = []
        offset = 0
        tables = {}
        for i, (stored, usize, table) in enumerate(blocks):
            codec = ("None",) if self._config.codec is None else ("Named", self._config.codec)
            block_meta.append({"id": i, "file_offset": offset, "compressed_size": len(stored),
                               "uncompressed_size": usize, "codec": codec})
            offset += len(stored)
            if table is not None:
                tables[i] = (table, len(stored), usize)
        # LZ4 segment tables go between the blocks and the footer, where other readers,
        # which address blocks by offset, never look
        segment_table = seg.encode_table(tables)
        segments = {i: t[0].astype(np.int64) for i, t in tables.items()}
        arrays = [self._array_entry(m, d, t, attrs) for m, d, t in entries]
        footer = {
            "version": self._footer_version(), "blocks": block_meta, "arrays": arrays,
            "attr_keys": attrs.keys, "attr_values": attrs.values,
            "overlay_index": 0, "base_file_hint": "" if base else self._hint,
        }
        stored_parts = [b[0] for b in blocks]
        if segment_table:
            stored_parts.append(segment_table)

        def parts(data: bytes) -> Iterator[Any]:
            yield from stored_parts
            yield data

        if base:
            data = fmt.encode_footer(footer)
            version = self._backend.put(self._key, parts(data), create_only=False)
            return self._layer_from_footer(self._key, 0, version, footer, segments=segments)
        number = max(layer.number for layer in self._layers) + 1
        while True:
            if number > U32_MAX:
                raise OverflowError(f"{self._key}: sidecar numbers are exhausted; compact")
            footer["overlay_index"] = number
            data = fmt.encode_footer(footer)
            key = f"{self._stem}.{number}.af"
            try:
                version = self._backend.put(key, parts(data), create_only=True)
            except FileExistsError:
                number += 1  # another writer took this number: never replace its sidecar
                continue
            return self._layer_from_footer(key, number, version, footer, segments=segments)

    def _flush(self) -> None:
        if not self._pending:
            return
        pending, alloc = self._pending, self._alloc
        blocks = alloc.finish() if alloc is not None else []
        recreated = [p for p in pending.values() if p.recreated]
        if recreated:
            # The tombstones first, in a sidecar of their own: readers stop there, so nothing
            # older shows through the re-defined arrays.
            tomb = [
                (p.tomb_meta, True, fmt.ChunkTable.empty(len(p.tomb_meta.shape)))
                for p in recreated
            ]
            self._layers.append(self._write_layer(tomb, [], base=False))
            for p in recreated:
                p.recreated = False
        entries = [(p.meta, p.deleted, _table(p)) for p in pending.values()]
        layer = self._write_layer(entries, blocks, base=False)
        self._layers.append(layer)
        for p in pending.values():
            if not p.deleted:
                for key, (_, _, _, _, stats) in p.chunks.items():
                    layer.stats_cache[(p.meta.name, key)] = stats
        self._pending = {}
        self._alloc = None
        if alloc is not None:
            alloc.close()
        self._update_stats(pending)

    # --- Statistics --------------------------------------------------------------------

    def _visible_chunks(self, meta: _Meta) -> dict[int, Any]:
        """key -> location of every stored chunk of ``meta``'s array, newest first."""
        found: dict[int, Any] = {}
        p = self._pending.get(meta.name)
        if p is not None:
            if p.deleted:
                return found
            for key, rec in p.chunks.items():
                found[key] = ("p", rec)
            if p.recreated:
                return found
        for layer, la in self._reachable(meta):
            keys = meta.keys(la.table.coords)
            for row, key in enumerate(keys):
                found.setdefault(key, (layer, la, row))
        return found

    def _loc_stats(self, meta: _Meta, key: int, loc: Any) -> tuple[Any, Any, int]:
        if loc[0] == "p":
            return loc[1][4]  # type: ignore[no-any-return]
        layer: _Layer = loc[0]
        sk = (meta.name, key)
        st = layer.stats_cache.get(sk)
        if st is None:
            coord = tuple(int(c) for c in loc[1].table.coords[loc[2]])
            values = self._chunk_values(meta, coord, loc)
            st = layer.stats_cache[sk] = chunk_stats(meta.require_info(), meta.fill, values)
        return st

    def _compute_stats(self, meta: _Meta, chunks: dict[int, Any]) -> dict[str, Any]:
        info = meta.require_info()
        lo = hi = None
        count = 0
        for key, loc in chunks.items():
            cmin, cmax, n = self._loc_stats(meta, key, loc)
            count += n
            if cmin is not None and (lo is None or stat_key(info, cmin) < stat_key(info, lo)):
                lo = cmin
            if cmax is not None and (hi is None or stat_key(info, cmax) > stat_key(info, hi)):
                hi = cmax
        rows = 1
        for s in meta.shape:
            rows *= s
        return {"name": meta.name, "min": lo, "max": hi, "null_count": rows - count,
                "row_count": rows}

    def _update_stats(self, pending: dict[str, _PendingArray]) -> None:
        table = {e["name"]: e for e in self._stats}
        changed = False
        for name, p in pending.items():
            if p.chunks and not p.deleted and p.meta.info is not None:
                table[name] = self._compute_stats(p.meta, self._visible_chunks(p.meta))
                changed = True
            elif p.deleted or p.fresh:  # gone, or defined anew without data yet
                changed |= table.pop(name, None) is not None
        if changed:
            self._write_stats(list(table.values()))

    def _write_stats(self, entries: list[dict[str, Any]]) -> None:
        self._backend.put(
            self._stem + ".stats", [fmt.encode_stats(entries, generation=self._stats_gen)],
            create_only=False,
        )
        self._stats = entries

    def array_stats(self, name: str) -> ArrayStats | None:
        """Statistics of ``name`` as of the last flush, or None if there are none."""
        with self._lock:
            self._check_open()
            meta = self._meta(name)
            for e in self._stats:
                if e["name"] == name:
                    return ArrayStats(stat_to_python(meta.info, e["min"]),
                                      stat_to_python(meta.info, e["max"]),
                                      int(e["null_count"]), int(e["row_count"]))
            return None

    # --- Compaction --------------------------------------------------------------------

    def compact(self) -> None:
        """Merge every layer into a new base, then delete the sidecars.

        Pending changes are flushed first. The new base replaces the old one atomically,
        then sidecars are deleted oldest first; a crash at any point leaves a file set that
        reads the same data.
        """
        with self._lock:
            self._check_open()
            self._flush()
            alloc = _Allocator(self._config, self._spill_dir())
            try:
                entries = []
                stats = []
                for name in self.list_arrays():
                    meta = self._meta(name)
                    chunks = self._visible_chunks(meta)
                    order = sorted(chunks)
                    coords = np.zeros((len(order), len(meta.shape)), np.uint32)
                    addrs = np.zeros((len(order), 3), np.uint32)
                    for i, key in enumerate(order):
                        loc = chunks[key]
                        raw = self._raw_chunk(loc)
                        addrs[i] = alloc.append(raw)
                        coords[i] = loc[1].table.coords[loc[2]]
                    entries.append((meta, False, fmt.ChunkTable(coords, addrs)))
                    if meta.info is not None:
                        stats.append(self._compute_stats(meta, chunks))
                base = self._write_layer(entries, alloc.finish(), base=True)
            finally:
                alloc.close()
            old = self._layers[1:]
            self._layers = [base]
            try:
                for layer in old:  # oldest first: what remains always reads the same
                    self._backend.delete(layer.key)
            finally:
                # sidecars left by a failed delete, or written meanwhile by other writers,
                # stay above the new base; the next sidecar number must exceed theirs
                for number, skey in self._discover():
                    self._layers.append(self._load_layer(skey, number))
            self._write_stats(stats)

    async def compact_async(self) -> None:
        """:meth:`compact` in a worker thread."""
        await asyncio.to_thread(self.compact)

    # --- Closing -----------------------------------------------------------------------

    def close(self, *, flush: bool = True) -> None:
        """Flush pending changes (unless ``flush=False``) and release every handle."""
        with self._lock:
            if self._closed:
                return
            try:
                if flush:
                    self._flush()
            finally:
                self._closed = True
                self._pending = {}
                if self._alloc is not None:
                    self._alloc.close()
                self._alloc = None
                self._backend.close()

    async def close_async(self) -> None:
        """:meth:`close` in a worker thread."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(flush=exc_type is None)

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self._backend.close()


_PRIVATE = object()


# --- Helpers ---------------------------------------------------------------------------


def _check_stats_entries(entries: list[dict[str, Any]]) -> None:
    """``CorruptFooterError`` unless every statistics entry names one array once."""
    seen: set[str] = set()
    for e in entries:
        name = e["name"]
        if name in seen:
            raise CorruptFooterError(f"the statistics list array {name!r} twice")
        seen.add(name)
        if e["null_count"] > e["row_count"]:
            raise CorruptFooterError(
                f"array {name!r}: {e['null_count']} nulls among {e['row_count']} elements")


def _u32_tuple(values: Sequence[int], what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{what}: {v!r} is not an integer")
        iv = int(v)
        if iv < 0 or iv > U32_MAX:
            raise OverflowError(f"{what}: {iv} does not fit the format's u32 (0..4294967295)")
        out.append(iv)
    return tuple(out)


def _table(p: _PendingArray) -> fmt.ChunkTable:
    n = len(p.chunks)
    ndim = len(p.meta.shape)
    if p.deleted or n == 0:
        return fmt.ChunkTable.empty(ndim)
    recs = list(p.chunks.values())
    coords = np.array([r[0] for r in recs], np.uint32).reshape(n, ndim)
    addrs = np.array([r[1:4] for r in recs], np.uint32).reshape(n, 3)
    return fmt.ChunkTable(coords, addrs)


def _clipped(meta: _Meta, coord: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(
        min(c * cs + cs, s) - c * cs
        for c, cs, s in zip(coord, meta.chunk_shape, meta.shape, strict=True)
    )


def _region(
    meta: _Meta, start: Sequence[int] | None, shape: Sequence[int] | None, *, write: bool = False
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    nd = len(meta.shape)
    st = (0,) * nd if start is None else tuple(int(s) for s in start)
    if len(st) != nd:
        raise ValueError(f"array {meta.name!r}: start {st} has {len(st)} axes, not {nd}")
    sh = tuple(s - a for s, a in zip(meta.shape, st, strict=True)) if shape is None else tuple(
        int(s) for s in shape
    )
    if len(sh) != nd:
        raise ValueError(f"array {meta.name!r}: shape {sh} has {len(sh)} axes, not {nd}")
    for a, n, s in zip(st, sh, meta.shape, strict=True):
        if a < 0 or n < 0 or a + n > s:
            what = "data" if write else "region"
            raise IndexError(
                f"array {meta.name!r}: {what} at {st} of shape {sh} does not fit in "
                f"{meta.shape}"
            )
    return st, sh


def _chunks_in(
    meta: _Meta, start: tuple[int, ...], shape: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], tuple[Any, ...], tuple[Any, ...]]]:
    """(chunk coord, slice of the region, slice of the clipped chunk) for each chunk hit."""
    if any(n == 0 for n in shape):
        return
    if not shape:  # 0-d: index with ``...`` so object arrays yield arrays, not elements
        yield (), (Ellipsis,), (Ellipsis,)
        return
    ranges = [
        range(a // c, (a + n - 1) // c + 1)
        for a, n, c in zip(start, shape, meta.chunk_shape, strict=True)
    ]
    for coord in itertools.product(*ranges):
        dst = []
        src = []
        for c, cs, a, n in zip(coord, meta.chunk_shape, start, shape, strict=True):
            lo = max(c * cs, a)
            hi = min(c * cs + cs, a + n)
            dst.append(slice(lo - a, hi - a))
            src.append(slice(lo - c * cs, hi - c * cs))
        yield coord, tuple(dst), tuple(src)


def _as_array(info: DTypeInfo, data: Any, where: str) -> np.ndarray:
    """``data`` as an array of the element type, under the package's cast rule."""
    if info.vlen:
        arr = np.asarray(data, dtype=object)
        want = str if info.tag == "String" else bytes
        for x in arr.ravel().tolist():
            if not isinstance(x, want):
                raise UnsafeCastError(
                    f"{where}: {type(x).__name__} data cannot be stored as {want.__name__}: "
                    f"the array holds {want.__name__} values, got {x!r}"
                )
        return arr
    return cast_for_storage(data, info.np_dtype, where)
