"""ArrayFile: many n-dimensional arrays in one object, with delta sidecars and compaction.

Layout of a file set (compatible with the Rust crate ``array-format``, footer v4/v5):
``{stem}.af`` is the base, ``{stem}.N.af`` (N >= 1) are sidecars written by :meth:`flush`, and
``{stem}.stats`` holds per-array statistics. Reads resolve each chunk newest layer first.

:class:`ArrayFile` holds the handle's state, its lock and its methods; the steps they take
live in modules of their own, as functions of explicit arguments: ``records`` (layers,
pending changes, and what a name or chunk resolves to), ``allocator`` (block placement),
``chunk_reader`` (chunk bytes and values), ``region`` (the chunks a region covers, read or
encoded), ``footer`` (footers to layers and back), ``sidecars`` (the objects on the backend),
``flush``, ``compact``, ``stats`` (per-array statistics) and ``threaded`` (which makes the
``*_async`` methods from the synchronous ones). Where the implementation departs from the
crate: see the package's docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from ...errors import ClosedError, InvalidArgumentTypeError, OutputExistsError
from ..ioerror import Operation, storage_io
from . import format as fmt
from .allocator import BlockAllocator
from .chunk_reader import ChunkReader
from .compact import compact
from .fileconfig import FileConfig
from .flush import flush
from .footer import layer_from_footer
from .lru import DeltaCache
from .objects import ArrayFileStorage, LocalStorage, MemoryStorage
from .records import ArrayInfo, ArrayStats, Records, new_meta
from .region import encode_region, read_region
from .sidecars import discover, load_layers, load_stats, resolve_target, write_stats
from .stats import updated_stats, user_stats
from .threaded import in_thread
from .types import attribute_to_python, python_to_attribute

__all__ = ["ArrayFile"]

_PRIVATE = object()


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

    Parameters
    ----------
    backend, key, hint, config, _token
        Internal: the constructor is not called directly (use :meth:`create`, :meth:`open`
        or :meth:`create_memory`).

    Raises
    ------
    InvalidArgumentTypeError
        The constructor was called directly.

    Examples
    --------
    >>> from dafzarr.arrayfile import ArrayFile
    >>> with ArrayFile.create("example.af") as f:
    ...     f.define_array("a", "float64", ["row", "col"], [2, 3])
    ...     f.write_array("a", [0, 0], np.ones((2, 3)))
    >>> with ArrayFile.open("example.af") as f:
    ...     f.read_array("a", [1, 1], [1, 2])
    array([[1., 1.]])
    """

    def __init__(
        self, backend: ArrayFileStorage, key: str, hint: str, config: FileConfig, *, _token: object
    ) -> None:
        if _token is not _PRIVATE:
            raise InvalidArgumentTypeError(
                "use ArrayFile.create(), ArrayFile.open() or ArrayFile.create_memory()"
            )
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

    # --- Construction -----------------------------------------------------------------

    @classmethod
    def create(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """Create a new, empty file set at ``target``.

        Parameters
        ----------
        target : str or tuple
            A local path ending in ``.af``, or ``(obstore_store, "key.af")``.
        config : FileConfig, optional
            The options; default ``FileConfig()``.

        Returns
        -------
        ArrayFile
            The open handle.

        Raises
        ------
        InvalidArgumentError
            ``target`` is not a path or key ending in ``.af``.
        OutputExistsError
            A file set (its base, sidecars or statistics) exists at ``target``.
        StorageIOError
            The storage failed.

        Examples
        --------
        >>> from dafzarr.arrayfile import ArrayFile
        >>> f = ArrayFile.create("new.af")
        >>> f.num_layers, f.list_arrays()
        (1, [])
        >>> f.close()
        """
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
        are removed once stale (no process holds them, a minute old).

        Parameters
        ----------
        target : str or tuple
            A local path ending in ``.af``, or ``(obstore_store, "key.af")``.
        config : FileConfig, optional
            The options; default ``FileConfig()``.

        Returns
        -------
        ArrayFile
            The open handle.

        Raises
        ------
        InvalidArgumentError
            ``target`` is not a path or key ending in ``.af``.
        StorageIOError
            The base is missing or the storage failed.
        CorruptArrayFileError
            An object of the file set is not an ArrayFile, or is damaged.

        Examples
        --------
        >>> from dafzarr.arrayfile import ArrayFile
        >>> ArrayFile.create("existing.af").close()
        >>> with ArrayFile.open("existing.af") as f:
        ...     f.path.endswith("existing.af")
        True
        """
        backend, key, hint = resolve_target(target)
        self = cls(backend, key, hint, config or FileConfig(), _token=_PRIVATE)
        with self._io("opening"):
            backend.sweep()
            self._records.layers = load_layers(backend, key)
        self._stats_gen, self._stats = load_stats(backend, self._stem + ".stats")
        return self

    @classmethod
    def create_memory(cls, config: FileConfig | None = None) -> ArrayFile:
        """A file set held in process memory (key ``memory.af``).

        Parameters
        ----------
        config : FileConfig, optional
            The options; default ``FileConfig()``.

        Returns
        -------
        ArrayFile
            The open handle.

        Raises
        ------
        None
            Nothing is stored outside the process.

        Examples
        --------
        >>> from dafzarr.arrayfile import ArrayFile
        >>> with ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.path, f.list_arrays()
        ('memory.af', ['a'])
        """
        self = cls(
            MemoryStorage(), "memory.af", "memory.af", config or FileConfig(), _token=_PRIVATE
        )
        self._put_empty_base()
        return self

    def _put_empty_base(self) -> None:
        footer = fmt.empty_footer()
        version = self._backend.put(self._key, [fmt.encode_footer(footer)], create_only=True)
        self._records.layers = [layer_from_footer(self._key, 0, version, footer)]

    @classmethod
    async def create_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`create` in a worker thread.

        Parameters
        ----------
        target : str or tuple
            A local path ending in ``.af``, or ``(obstore_store, "key.af")``.
        config : FileConfig, optional
            The options; default ``FileConfig()``.

        Returns
        -------
        ArrayFile
            The open handle.

        Raises
        ------
        OutputExistsError, InvalidArgumentError, StorageIOError
            As :meth:`create`.

        Examples
        --------
        >>> import asyncio
        >>> from dafzarr.arrayfile import ArrayFile
        >>> f = asyncio.run(ArrayFile.create_async("async.af"))
        >>> f.close()
        """
        return await asyncio.to_thread(cls.create, target, config=config)

    @classmethod
    async def open_async(cls, target: Any, *, config: FileConfig | None = None) -> ArrayFile:
        """:meth:`open` in a worker thread.

        Parameters
        ----------
        target : str or tuple
            A local path ending in ``.af``, or ``(obstore_store, "key.af")``.
        config : FileConfig, optional
            The options; default ``FileConfig()``.

        Returns
        -------
        ArrayFile
            The open handle.

        Raises
        ------
        InvalidArgumentError, StorageIOError, CorruptArrayFileError
            As :meth:`open`.

        Examples
        --------
        >>> import asyncio
        >>> from dafzarr.arrayfile import ArrayFile
        >>> ArrayFile.create("async_open.af").close()
        >>> f = asyncio.run(ArrayFile.open_async("async_open.af"))
        >>> f.close()
        """
        return await asyncio.to_thread(cls.open, target, config=config)

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

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return self._records.visible(name)

    # --- Arrays and attributes --------------------------------------------------------

    def list_arrays(self) -> list[str]:
        """Names of the visible arrays, oldest definition first.

        Returns
        -------
        list of str
            The names.

        Raises
        ------
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("b", "int8", ["x"], [2])
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.list_arrays()
        ['b', 'a']
        """
        with self._lock:
            self._check_open()
            return self._records.names()

    def array_info(self, name: str) -> ArrayInfo:
        """Shape, dtype, chunk shape, dimension names and fill value of ``name``.

        Parameters
        ----------
        name : str
            The array.

        Returns
        -------
        ArrayInfo
            Its description.

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int16", ["x"], [5], fill_value=-1)
        ...     f.array_info("a").fill_value
        -1
        """
        with self._lock:
            self._check_open()
            m = self._records.meta(name)
            info = m.require_info()
            dtype: Any = (str if info.tag == "String" else bytes) if info.vlen else info.np_dtype
            fill = None if m.fill is None else m.fill[1]
            return ArrayInfo(name, dtype, m.shape, m.chunk_shape, tuple(m.dim_names), fill)

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
        4 GiB.

        Parameters
        ----------
        name : str
            The new array's name.
        dtype : numpy dtype-like, str or bytes
            Its element type (``str``, ``bytes``: variable-length strings or bytes).
        dim_names : sequence of str
            The names of its axes.
        shape : sequence of int
            Its extent along each axis.
        chunk_shape : sequence of int, optional
            The extent of one chunk; default the whole array as one chunk.
        fill_value : scalar, optional
            What unwritten elements read as; default the type's zero.

        Raises
        ------
        ArrayExistsError
            A visible array is named ``name``.
        InvalidArgumentError
            An empty name, mismatched axes, or an axis or chunk of length 0.
        FormatLimitError
            An extent or chunk the format cannot store.
        UnsupportedElementTypeError
            A ``dtype`` the format has no type for.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("m", "uint8", ["row", "col"], [4, 4], chunk_shape=[2, 4])
        ...     f.array_info("m").chunk_shape
        (2, 4)
        """
        with self._lock:
            self._check_open()
            meta = new_meta(self._key, name, dtype, dim_names, shape, chunk_shape, fill_value)
            self._records.define(meta)

    def delete(self, name: str) -> None:
        """Hide ``name`` at once; its bytes go away at the next :meth:`compact`.

        Parameters
        ----------
        name : str
            The array.

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.delete("a")
        ...     "a" in f
        False
        """
        with self._lock:
            self._check_open()
            self._records.delete(name)

    def set_attribute(self, name: str, key: str, value: Any) -> None:
        """Set attribute ``key`` of array ``name``.

        Parameters
        ----------
        name : str
            The array.
        key : str
            The attribute.
        value : bool, int, float, str or numpy scalar
            Its value.

        Raises
        ------
        InvalidArgumentTypeError
            ``value`` is of another type.
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.set_attribute("a", "units", "m")
        ...     f.get_attribute("a", "units")
        'm'
        """
        with self._lock:
            self._check_open()
            v = python_to_attribute(value)
            self._records.for_write(name).meta.attrs[str(key)] = v

    def get_attribute(self, name: str, key: str, default: Any = None) -> Any:
        """Attribute ``key`` of array ``name``, or ``default`` if it has none.

        Parameters
        ----------
        name : str
            The array.
        key : str
            The attribute.
        default : object, optional
            What to return when the array has no attribute ``key``.

        Returns
        -------
        object
            The attribute's value (a Python scalar), or ``default``.

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.get_attribute("a", "units", "none")
        'none'
        """
        with self._lock:
            self._check_open()
            v = self._records.meta(name).attrs.get(key)
            return default if v is None else attribute_to_python(v)

    def attributes(self, name: str) -> dict[str, Any]:
        """All attributes of array ``name``.

        Parameters
        ----------
        name : str
            The array.

        Returns
        -------
        dict
            Attribute names to values (Python scalars).

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.set_attribute("a", "scale", 2.5)
        ...     f.attributes("a")
        {'scale': 2.5}
        """
        with self._lock:
            self._check_open()
            return {k: attribute_to_python(v) for k, v in self._records.meta(name).attrs.items()}

    # --- Reading and writing ----------------------------------------------------------

    def read_array(
        self, name: str, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """Read a region (default: the whole array); unwritten elements read as the fill value.

        Parameters
        ----------
        name : str
            The array.
        start : sequence of int, optional
            The region's first element; default the array's first.
        shape : sequence of int, optional
            The region's extent; default the rest of the array from ``start``.

        Returns
        -------
        numpy.ndarray
            The values (an object array for ``str``/``bytes`` arrays).

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        OutOfBoundsError
            The region is not inside the array.
        InvalidArgumentError
            ``start`` or ``shape`` does not have one value per axis.
        CorruptArrayFileError
            A chunk's stored bytes are damaged.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int32", ["x"], [5], fill_value=-1)
        ...     f.write_array("a", [1], [10, 20])
        ...     f.read_array("a")
        array([-1, 10, 20, -1, -1], dtype=int32)
        """
        with self._lock:
            self._check_open()
            return read_region(self._records, self._reader, self._alloc, name, start, shape)

    read_array_async = in_thread(
        read_array,
        """
    >>> import asyncio
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     asyncio.run(f.read_array_async("a"))
    array([0, 0], dtype=int8)
    """,
    )

    def write_array(self, name: str, start: Sequence[int], data: Any) -> None:
        """Write ``data`` at ``start``; chunks only partly covered are read, patched, rewritten.

        Nothing is written unless every chunk of ``data`` can be; the change is stored at the
        next :meth:`flush`.

        Parameters
        ----------
        name : str
            The array.
        start : sequence of int
            Where the first element of ``data`` goes.
        data : array-like
            The values, of the array's number of axes.

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        OutOfBoundsError
            ``data`` does not fit in the array at ``start``.
        InvalidArgumentTypeError
            ``data`` cannot be cast to the array's type without loss.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("m", "float32", ["row", "col"], [2, 2])
        ...     f.write_array("m", [1, 0], [[1.5, 2.5]])
        ...     f.read_array("m")
        array([[0. , 0. ],
               [1.5, 2.5]], dtype=float32)
        """
        with self._lock:
            self._check_open()
            records = self._records
            encoded = encode_region(
                records, self._reader, self._alloc, self._key, name, start, data
            )
            p = records.for_write(name)
            if self._alloc is None:
                spill = self._spill_dir()
                self._alloc = BlockAllocator(self._config, spill, stage=spill is not None)
            for key, coord, payload, stats in encoded:
                bid, off, size = self._alloc.append(payload)
                p.chunks[key] = (coord, bid, off, size, stats)

    write_array_async = in_thread(
        write_array,
        """
    >>> import asyncio
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     asyncio.run(f.write_array_async("a", [0], [4, 5]))
    ...     f.read_array("a")
    array([4, 5], dtype=int8)
    """,
    )

    # --- Flushing, statistics, compacting ---------------------------------------------

    def flush(self) -> None:
        """Write the pending changes as a new sidecar and update the statistics.

        Raises
        ------
        StorageIOError
            The storage failed; the file set keeps its last flushed state.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create("flushed.af") as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.flush()
        ...     f.num_layers
        2
        """
        with self._lock:
            self._check_open()
            self._flush()

    def _io(self, what: str) -> contextlib.AbstractContextManager[Operation]:
        """:func:`~dafzarr._core.ioerror.storage_io` of ``what`` done to this file set."""
        return storage_io(what, self._key, "the file set keeps its last flushed state")

    flush_async = in_thread(
        flush,
        """
    >>> import asyncio
    >>> with dafzarr.arrayfile.ArrayFile.create("flushed_async.af") as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     asyncio.run(f.flush_async())
    ...     f.num_layers
    2
    """,
    )

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
            flushed = flush(self._records, alloc, self._backend, self._hint, self._config.codec)
        self._alloc = None
        if alloc is not None:
            with storage_io(
                f"releasing the staged blocks of the arrays {names}", self._key, _FLUSHED
            ):
                alloc.close()
        entries = updated_stats(self._stats, flushed, self._records, self._reader)
        if entries is not None:
            with storage_io(
                f"writing the statistics of the arrays {names}",
                self._key,
                f"{_FLUSHED}; their statistics read as missing",
            ):
                self._write_stats(entries)

    def _write_stats(self, entries: list[dict[str, Any]]) -> None:
        write_stats(self._backend, self._stem + ".stats", entries, self._stats_gen)
        self._stats = entries

    def array_stats(self, name: str) -> ArrayStats | None:
        """Statistics of ``name`` as of the last flush.

        Parameters
        ----------
        name : str
            The array.

        Returns
        -------
        ArrayStats or None
            The statistics, or None if there are none (not flushed since written).

        Raises
        ------
        ArrayNotFoundError
            No visible array is named ``name``.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
        ...     f.define_array("a", "int8", ["x"], [3])
        ...     f.write_array("a", [0], [3, 1, 2])
        ...     f.flush()
        ...     f.array_stats("a").max
        3
        """
        with self._lock:
            self._check_open()
            meta = self._records.meta(name)
            by_name = self._stats_by_name
            if by_name is None or by_name[0] is not self._stats:  # the entries changed
                by_name = self._stats_by_name = (self._stats, {e["name"]: e for e in self._stats})
            return user_stats(meta, by_name[1])

    def compact(self) -> None:
        """Merge every layer into a new base, then delete the sidecars.

        Pending changes are flushed first. The new base replaces the old one atomically,
        then sidecars are deleted oldest first; a crash at any point leaves a file set that
        reads the same data.

        Raises
        ------
        StorageIOError
            The storage failed; the file set reads the same data.
        CorruptArrayFileError
            A chunk's stored bytes are damaged.
        ClosedError
            The handle is closed.

        Examples
        --------
        >>> with dafzarr.arrayfile.ArrayFile.create("compacted.af") as f:
        ...     f.define_array("a", "int8", ["x"], [2])
        ...     f.flush()
        ...     f.compact()
        ...     f.num_layers
        1
        """
        with self._lock:
            self._check_open()
            self._flush()
            with self._io("compacting"):
                stats = compact(
                    self._records, self._reader, self._backend, self._config, self._spill_dir()
                )
                self._write_stats(stats)

    compact_async = in_thread(
        compact,
        """
    >>> import asyncio
    >>> with dafzarr.arrayfile.ArrayFile.create("compacted_async.af") as f:
    ...     f.define_array("a", "int8", ["x"], [2])
    ...     asyncio.run(f.compact_async())
    ...     f.num_layers
    1
    """,
    )

    # --- Closing ----------------------------------------------------------------------

    def close(self, *, flush: bool = True) -> None:
        """Flush pending changes (unless ``flush=False``) and release every handle.

        Closing a closed handle does nothing.

        Parameters
        ----------
        flush : bool, default True
            Write the pending changes first; False discards them.

        Raises
        ------
        StorageIOError
            The flush failed; the file set keeps its last flushed state (the handle is
            closed all the same).

        Examples
        --------
        >>> from dafzarr.arrayfile import ArrayFile
        >>> f = ArrayFile.create("discarded.af")
        >>> f.define_array("a", "int8", ["x"], [2])
        >>> f.close(flush=False)
        >>> with ArrayFile.open("discarded.af") as again:
        ...     again.list_arrays()
        []
        """
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
        """:meth:`close` in a worker thread.

        Raises
        ------
        StorageIOError
            As :meth:`close`.

        Examples
        --------
        >>> import asyncio
        >>> f = dafzarr.arrayfile.ArrayFile.create("closed_async.af")
        >>> asyncio.run(f.close_async())
        """
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(flush=exc_type is None)

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self._backend.close()
