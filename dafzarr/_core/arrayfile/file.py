"""ArrayFile: many n-dimensional arrays in one object, with delta sidecars and compaction.

Layout of a file set (compatible with the Rust crate ``array-format``, footer v4/v5):
``{stem}.af`` is the base, ``{stem}.N.af`` (N >= 1) are sidecars written by :meth:`flush`, and
``{stem}.stats`` holds per-array statistics. Reads resolve each chunk newest layer first.

:class:`ArrayFile` holds the handle's state and lock; each step lives in its own module:
``records`` (layers, pending changes, and what a name or chunk resolves to), ``allocator``
(block placement), ``reader`` (chunk bytes and values), ``region`` (regions read and
written), ``footer`` (footers to layers and back), ``sidecars`` (the objects on the backend),
``flush``, ``compact``, ``stats`` and ``threaded`` (the ``*_async`` methods). Where the
implementation departs from the crate: see the package's docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import Any, Self

from ...errors import ClosedError, InvalidArgumentTypeError, OutputExistsError
from ..ioerror import Operation, storage_io
from . import arrays, region, stats
from . import format as fmt
from .allocator import BlockAllocator
from .chunk_reader import ChunkReader
from .compact import compact
from .fileconfig import FileConfig
from .flush import flush
from .footer import layer_from_footer
from .lru import DeltaCache
from .objects import ArrayFileStorage, LocalStorage, MemoryStorage
from .records import Records
from .sidecars import discover, load_layers, load_stats, resolve_target, write_stats
from .stats import updated_stats
from .threaded import in_thread

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

    # --- Construction ------------------------------------------------------------------

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

    # --- Arrays and attributes (``arrays``), reading (``region``) ----------------------

    list_arrays = arrays.list_arrays
    array_info = arrays.array_info
    define_array = arrays.define_array
    delete = arrays.delete
    set_attribute = arrays.set_attribute
    get_attribute = arrays.get_attribute
    attributes = arrays.attributes

    read_array = region.read_array
    read_array_async = region.read_array_async

    # --- Writing (``region``), flushing --------------------------------------------------

    write_array = region.write_array
    write_array_async = region.write_array_async

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

    array_stats = stats.array_stats

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

    # --- Closing -----------------------------------------------------------------------

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
