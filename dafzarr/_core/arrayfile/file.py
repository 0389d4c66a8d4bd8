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
  first: every intermediate state reads the same data. An open racing another process's
  compaction reads again until it sees one state, before or after it (never a mix).
* Caches are keyed by object version, so nothing read before a ``compact`` is served after it.
* An LZ4 block is still one LZ4 block for every reader, but is made of independently
  compressed segments of whole chunks, found through a table between the blocks and the
  footer (which other readers skip): a chunk read decodes its segment, not its 8 MiB block.

:class:`ArrayFile` holds the handle's state and lock; each step lives in its own module:
:mod:`._records` (layers, pending changes, and what a name or chunk resolves to),
:mod:`._allocator` (block placement), :mod:`._reader` (chunk bytes and values),
:mod:`._footer` (footers to layers and back), :mod:`._sidecars` (the objects on the backend),
:mod:`._flush`, :mod:`._compact` and :mod:`._stats`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any, Self, cast

import numpy as np

from ...errors import ClosedError, InvalidArgumentTypeError, OutputExistsError
from ..ioerror import Operation, storage_io
from . import format as fmt
from .allocator import BlockAllocator
from .chunk_reader import ChunkReader
from .compact import compact
from .direct import whole_array_runs
from .fileconfig import FileConfig
from .flush import flush
from .footer import layer_from_footer
from .geometry import chunks_in, clipped, region
from .lru import DeltaCache
from .objects import ArrayFileStorage, LocalStorage, MemoryStorage
from .records import ArrayInfo, ArrayStats, Layer, Meta, Records, new_meta
from .sidecars import discover, load_layers, load_stats, resolve_target, write_stats
from .stats import array_stats, updated_stats
from .types import as_array, attribute_to_python, chunk_stats, encode_chunk, python_to_attribute

__all__ = ["ArrayFile"]

_PRIVATE = object()


def _direct_buffer(
    meta: Meta, coord: tuple[int, ...], src: tuple[Any, ...], dst: np.ndarray
) -> memoryview | None:
    """``dst`` (where chunk ``coord`` goes in a result) as bytes, if the chunk is wanted
    whole and ``dst`` is contiguous, so that the stored chunk can be read into it as is."""
    if not dst.flags.c_contiguous:
        return None
    cshape = clipped(meta, coord)
    if cshape and any(s.start != 0 or s.stop != c for s, c in zip(src, cshape, strict=True)):
        return None
    return memoryview(cast(Any, dst.reshape(-1).view(np.uint8)))


#: What a failure after a flush's commit leaves.
_FLUSHED = "the arrays are flushed"


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
        self, backend: ArrayFileStorage, key: str, hint: str, config: FileConfig, *, _token: object
    ) -> None:
        if _token is not _PRIVATE:
            raise InvalidArgumentTypeError(
                "use ArrayFile.create(), ArrayFile.open() or ArrayFile.create_memory()")
        self._backend = backend
        self._key = key
        self._hint = hint
        self._config = config
        self._cache = config.cache or DeltaCache(config.cache_capacity, config.io_cache_capacity)
        self._stem = key[:-3]
        self._lock = threading.RLock()
        self._records = Records(key)
        self._reader = ChunkReader(backend, self._cache, key)
        self._alloc: BlockAllocator | None = None
        self._stats: list[dict[str, Any]] = []
        # the statistics entries by name, made on first use for the entries it names
        self._stats_by_name: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None = None
        self._stats_gen = 0
        self._closed = False

    # --- Construction ------------------------------------------------------------------

    @classmethod
    def create(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """Create a new, empty file set at ``target`` (``FileExistsError`` if one exists)."""
        backend, key, hint = resolve_target(target)
        self = cls(backend, key, hint, config or FileConfig(), _token=_PRIVATE)
        backend.sweep()
        if discover(backend, key) or backend.exists(self._stem + ".stats"):
            raise OutputExistsError(
                f"{key}: sidecars or statistics of an earlier file set exist next to it"
            )
        self._put_empty_base()
        return self

    @classmethod
    def open(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """Open an existing file set: the base, every sidecar, and the statistics.

        Temporaries that writers killed in the middle of a put left next to a local file set
        are removed once stale (no process holds them, a minute old)."""
        backend, key, hint = resolve_target(target)
        self = cls(backend, key, hint, config or FileConfig(), _token=_PRIVATE)
        with self._io("opening"):
            backend.sweep()
            self._records.layers = load_layers(backend, key)
        self._stats_gen, self._stats = load_stats(backend, self._stem + ".stats")
        return self

    @classmethod
    def create_memory(cls, config: FileConfig | None = None) -> ArrayFile:
        """A file set held in process memory (key ``memory.af``)."""
        self = cls(MemoryStorage(), "memory.af", "memory.af", config or FileConfig(),
                   _token=_PRIVATE)
        self._put_empty_base()
        return self

    def _put_empty_base(self) -> None:
        footer = fmt.empty_footer()
        version = self._backend.put(self._key, [fmt.encode_footer(footer)], create_only=True)
        self._records.layers = [layer_from_footer(self._key, 0, version, footer)]

    @classmethod
    async def create_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`create` in a worker thread."""
        return await asyncio.to_thread(cls.create, target, config=config)

    @classmethod
    async def open_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`open` in a worker thread."""
        return await asyncio.to_thread(cls.open, target, config=config)

    # --- Basic state -------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"{self._key}: the ArrayFile is closed")

    @property
    def num_layers(self) -> int:
        """Committed layers: the base plus one per sidecar."""
        return len(self._records.layers)

    @property
    def path(self) -> str:
        """The key (or absolute path) of the base object."""
        return self._key

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.num_layers} layers"
        return f"<ArrayFile {self._key!r} ({state})>"

    def list_arrays(self) -> list[str]:
        """Names of the visible arrays, oldest definition first."""
        with self._lock:
            self._check_open()
            return self._records.names()

    def array_info(self, name: str) -> ArrayInfo:
        """Shape, dtype, chunk shape, dimension names and fill value of ``name``."""
        with self._lock:
            self._check_open()
            m = self._records.meta(name)
            info = m.require_info()
            dtype: Any = (str if info.tag == "String" else bytes) if info.vlen else info.np_dtype
            fill = None if m.fill is None else m.fill[1]
            return ArrayInfo(name, dtype, m.shape, m.chunk_shape, tuple(m.dim_names), fill)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return self._records.visible(name)

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
            meta = new_meta(self._key, name, dtype, dim_names, shape, chunk_shape, fill_value)
            self._records.define(meta)

    def delete(self, name: str) -> None:
        """Hide ``name`` at once; its bytes go away at the next :meth:`compact`."""
        with self._lock:
            self._check_open()
            self._records.delete(name)

    def set_attribute(self, name: str, key: str, value: Any) -> None:
        """Set attribute ``key`` of array ``name`` (bool, int, float, str or numpy scalar)."""
        with self._lock:
            self._check_open()
            v = python_to_attribute(value)
            self._records.for_write(name).meta.attrs[str(key)] = v

    def get_attribute(self, name: str, key: str, default: Any = None) -> Any:
        """Attribute ``key`` of array ``name``, or ``default`` if it has none."""
        with self._lock:
            self._check_open()
            v = self._records.meta(name).attrs.get(key)
            return default if v is None else attribute_to_python(v)

    def attributes(self, name: str) -> dict[str, Any]:
        """All attributes of array ``name``."""
        with self._lock:
            self._check_open()
            return {k: attribute_to_python(v) for k, v in self._records.meta(name).attrs.items()}

    # --- Reading -----------------------------------------------------------------------

    def read_array(
        self, name: str, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """Read a region (default: the whole array); unwritten elements read as the fill value.

        ``str``/``bytes`` arrays come back as numpy object arrays.
        """
        with self._lock:
            self._check_open()
            records, reader = self._records, self._reader
            meta = records.meta(name)
            info = meta.require_info()
            if start is None and shape is None:
                st, sh = (0,) * len(meta.shape), meta.shape
            else:
                st, sh = region(meta, start, shape)
            out = np.empty(sh, dtype=info.np_dtype)
            whole = whole_array_runs(records, reader, meta) if sh == meta.shape else None
            if whole is not None:
                layer, whole_runs = whole
                raw = memoryview(cast(Any, out.reshape(-1).view(np.uint8)))
                if len(whole_runs) == 1:  # the array is one piece of the file
                    begin = whole_runs[0][0]
                    reader.read_runs([(layer, begin, begin + raw.nbytes, [raw])])
                else:
                    reader.read_runs([(layer, begin, begin + size, [raw[at : at + size]])
                                      for begin, at, size in whole_runs])
                return out
            pieces = list(chunks_in(meta, st, sh))
            # a chunk of an uncompressed local block is read by itself, not with its block
            direct = len(pieces) == 1 or reader.backend.direct_reads
            # chunks of uncompressed blocks go straight from the file into ``out``: one
            # vectored read per run of chunks that are adjacent in the file
            runs: list[tuple[Layer, int, int, list[memoryview]]] = []
            for coord, dst, src in pieces:
                loc = records.locate(meta, meta.key(coord))
                if loc is None:
                    out[dst] = meta.element()
                    continue
                buf = None if info.vlen else _direct_buffer(meta, coord, src, out[dst])
                span = None if buf is None else reader.direct_span(loc)
                if span is not None and buf is not None and span[2] == buf.nbytes:
                    layer, begin, size = span
                    last = runs[-1] if runs else None
                    if last is not None and last[0] is layer and last[2] == begin:
                        last[3].append(buf)
                        runs[-1] = (layer, last[1], begin + size, last[3])
                    else:
                        runs.append((layer, begin, begin + size, [buf]))
                    continue
                out[dst] = reader.chunk_values(meta, coord, loc, self._alloc, direct=direct)[src]
            reader.read_runs(runs)
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
            records = self._records
            meta = records.meta(name)
            info = meta.require_info()
            arr = as_array(info, data, f"{self._key}: array {name!r}")
            st, sh = region(meta, start, arr.shape, write=True)
            encoded = []  # every chunk is encoded before any is stored: all or nothing
            for coord, dst, src in chunks_in(meta, st, sh):
                cshape = clipped(meta, coord)
                key = meta.key(coord)
                piece = arr[dst]
                if piece.shape == cshape:
                    values = piece
                else:
                    loc = records.locate(meta, key)
                    if loc is None:
                        values = np.full(cshape, meta.element(), dtype=info.np_dtype)
                    else:
                        values = self._reader.chunk_values(meta, coord, loc, self._alloc).copy()
                    values[src] = piece
                encoded.append((key, coord, encode_chunk(info, values),
                                chunk_stats(info, meta.fill, values)))
            p = records.for_write(name)
            if self._alloc is None:
                spill = self._spill_dir()
                self._alloc = BlockAllocator(self._config, spill, stage=spill is not None)
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

    def _io(self, what: str) -> contextlib.AbstractContextManager[Operation]:
        """:func:`~dafzarr._core.ioerror.storage_io` of ``what`` done to this file set."""
        return storage_io(what, self._key, "the file set keeps its last flushed state")

    async def flush_async(self) -> None:
        """:meth:`flush` in a worker thread."""
        await asyncio.to_thread(self.flush)

    def _spill_dir(self) -> str | None:
        """Where blocks beyond the memory budget go: next to a local file set (same file
        system, so a flush copies them in the kernel), else the temporary directory."""
        return os.path.dirname(self._key) if isinstance(self._backend, LocalStorage) else None

    def _flush(self) -> None:
        if not self._records.pending:
            return
        alloc = self._alloc
        names = ", ".join(repr(n) for n in self._records.pending)
        with self._io(f"flushing the arrays {names}"):
            flushed = flush(self._records, alloc, self._backend, self._hint,
                            self._config.codec)
        self._alloc = None
        if alloc is not None:
            with storage_io(f"releasing the staged blocks of the arrays {names}", self._key,
                            _FLUSHED):
                alloc.close()
        entries = updated_stats(self._stats, flushed, self._records, self._reader)
        if entries is not None:
            with storage_io(f"writing the statistics of the arrays {names}", self._key,
                            f"{_FLUSHED}; their statistics read as missing"):
                self._write_stats(entries)

    # --- Statistics --------------------------------------------------------------------

    def _write_stats(self, entries: list[dict[str, Any]]) -> None:
        write_stats(self._backend, self._stem + ".stats", entries, self._stats_gen)
        self._stats = entries

    def array_stats(self, name: str) -> ArrayStats | None:
        """Statistics of ``name`` as of the last flush, or None if there are none."""
        with self._lock:
            self._check_open()
            meta = self._records.meta(name)
            by_name = self._stats_by_name
            if by_name is None or by_name[0] is not self._stats:  # the entries changed
                by_name = self._stats_by_name = (self._stats, {e["name"]: e for e in self._stats})
            return array_stats(meta, by_name[1])

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
            with self._io("compacting"):
                stats = compact(self._records, self._reader, self._backend, self._config,
                                self._spill_dir())
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
                self._records.pending = {}
                alloc, self._alloc = self._alloc, None
                with self._io("closing"):
                    if alloc is not None:
                        alloc.close()
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
