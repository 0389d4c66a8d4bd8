"""The :class:`MmapZipStore`: a zarr :class:`~zarr.abc.store.Store` and a mapping over one
ZIP archive, which it holds as an :class:`~dafzarr._core.zipstore.handle.ArchiveHandle` (the
options, the lock, the mapping, the state and commits) and delegates to.

The examples of zarr's coroutines run them with :func:`asyncio.run`, and write values as zarr
does, as :class:`~zarr.core.buffer.Buffer` objects.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import os
import time
import types
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ...errors import (
    AlreadyOpenError,
    EntryNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingFileError,
)
from ..addrspace import fitting_max_file_size
from ..aliases import OpenMode
from ..io import byte_range_bounds
from .handle import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_FILE_SIZE, ArchiveHandle
from .pack import pack_directory
from .repack import CompactMethod
from .space import ArchiveSpace

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["ArchiveSpace", "MmapZipStore", "handle_of"]

# Appends at least this large run off the event loop.
_THREAD_THRESHOLD = 1 << 20
# How long a commit waits for concurrent large writes to join it, and how often it looks.
_GROUP_WAIT, _GROUP_POLL = 0.02, 0.0002


def handle_of(store: MmapZipStore) -> ArchiveHandle:
    """The archive handle ``store`` holds, for the modules that work on its mapping and state
    (a daf backend closing or following its file, the release of pages read)."""
    return store._handle


class MmapZipStore(Store):
    """A Zarr store over one ZIP archive, served zero-copy from a memory map.

    Parameters
    ----------
    path
        The archive file.
    mode
        ``"r"`` read-only; ``"r+"`` read-write, the file must exist; ``"w+"`` read-write,
        created if missing; ``"w"`` read-write, created or truncated to an empty archive.
    read_only
        Overrides ``mode``: ``True`` opens read-only, ``False`` writable (``"r"`` becomes
        ``"r+"``). Default: read-only exactly when ``mode == "r"``.
    max_file_size
        The largest size the archive may reach while this handle is open; a writable open
        reserves twice as much address space (reserving costs no memory). Default: 1 TiB,
        or less under an address-space limit (``ulimit -v``): an eighth of the address
        space still free (a compaction reserves as much again for its copy). A reservation that fails raises
        :class:`~dafzarr.errors.AddressSpaceError` naming the size and this option.
    durable
        Also ``msync``/``fsync`` at the protocol's ordering points, so that a power loss
        or an operating-system crash (not only a process crash) leaves the archive as
        one of its commits, and every write, delete or compaction that returned is kept.
        Without it, a process crash is as safe, but after a power loss the kernel may
        have written the pages back in any order: commits that returned may be lost; a
        key rewritten or deleted by a lost commit may be gone with its old value; a
        read-only open may serve entries whose bytes never reached the disk (until a
        writable open's recovery drops them); and the archive may not open at all
        (``dafzarr zip repair`` then salvages the entries whose bytes are whole).
    max_decompressed_size
        Compressed foreign entries that claim to decode to more bytes are refused. Below
        it, memory follows what an entry's data proves, not what its record claims (see
        :mod:`dafzarr._core.codecs.decode`): a claim the method cannot produce from the compressed
        bytes is refused before decoding; an entry claiming more than four times its
        compressed size plus 256 KiB is decoded twice, first in 64 KiB pieces that are
        checked (length, CRC-32) and discarded, then into one buffer of the claimed size.
    append_only
        Refuse to rewrite or delete an existing entry
        (:class:`~dafzarr.errors.AppendOnlyError` naming the key), for write-once archives;
        mode ``"w"`` on a file that holds entries is refused too (use ``"w+"``).
        By default a rewrite appends a newer copy and a delete drops the key; the next
        commit lists only live entries, and the old bytes stay in the file as dead space
        (see :meth:`space`) until :meth:`compact`.
    renew_limit
        When a commit leaves the file starting with dead bytes that would hide the archive
        from 7-Zip (dead binary or compressed data first, or 4 MiB and more of dead bytes),
        the store renews the archive: its live entries are copied into a fresh file, as
        :meth:`compact` does. Default ``None``: always, so every tool reads the archive
        after every commit. An integer bounds the live bytes such a commit may copy: larger
        archives keep their dead start (valid, read by every other tool and by
        ``7z -tzip``) until :meth:`compact`, or until a commit or :meth:`close` finds them
        within the bound. Use it when deleting or rewriting the first entries of a very
        large archive must stay cheap.
    lock
        ``False`` opens for writing without the exclusive ``flock``, for file systems that
        have none: there a writable open raises :class:`~dafzarr.errors.StorageLockError`
        (an ``OSError`` with ``ENOLCK``, ``EOPNOTSUPP`` or ``ENOSYS``) that names this
        option. Without the lock nothing refuses a second writer, so you guarantee there is
        none: two writers at once each commit a directory that lists only their own new
        entries, so one's commits are lost, and may write their entries over the other's;
        one may even be killed by ``SIGBUS`` when the other shrinks the file. Entries
        committed before both opened stay intact. Readers need no lock.

    Notes
    -----
    The store is a :class:`zarr.abc.store.Store` (use it with ``zarr.open_group`` and
    friends) and also a synchronous mapping: ``store[key]`` returns a read-only zero-copy
    ``memoryview`` (decoded bytes for compressed foreign entries), ``store[key] = data``
    appends, ``key in store``, ``iter(store)``, ``len(store)``.

    The constructor opens the archive: a writable open takes an exclusive ``flock`` (a
    second one, in any process, raises :class:`~dafzarr.errors.ArchiveLockedError` at
    once), recovers an interrupted writer's archive, and mode ``"w"`` empties the archive.
    Read-only handles take no lock and see the archive as it was when they opened. A store
    that was unpickled opens at its first use. After :meth:`close`, the next use opens the
    archive again (without emptying it).

    Raises
    ------
    InvalidArgumentError
        An unknown ``mode``, or an option out of its range.
    MissingFileError
        Mode ``"r"`` or ``"r+"`` and no file at ``path``.
    ArchiveLockedError
        A writable open while another writable store holds the archive.
    CorruptArchiveError
        The file is not a ZIP archive the store can read.
    AddressSpaceError
        The address space for ``max_file_size`` cannot be reserved.
    AppendOnlyError
        Mode ``"w"`` with ``append_only`` on a file that holds entries.

    Examples
    --------
    >>> import zarr
    >>> with dafzarr.MmapZipStore("example.zip", mode="w") as store:
    ...     root = zarr.open_group(store, mode="w")
    ...     root.create_array("x", shape=(3,), dtype="int32")[:] = [1, 2, 3]
    >>> with dafzarr.MmapZipStore("example.zip") as store:
    ...     zarr.open_array(store, path="x", mode="r")[:]
    array([1, 2, 3], dtype=int32)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: OpenMode = "r",
        *,
        read_only: bool | None = None,
        max_file_size: int | None = None,
        durable: bool = False,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED,
        append_only: bool = False,
        renew_limit: int | None = None,
        lock: bool = True,
    ) -> None:
        if max_file_size is None:
            max_file_size = fitting_max_file_size(DEFAULT_MAX_FILE_SIZE)
        self._hold(
            ArchiveHandle(
                path,
                mode,
                read_only,
                max_file_size,
                durable,
                max_decompressed_size,
                append_only,
                renew_limit,
                lock,
            )
        )
        # Open now: a writable store holds the archive's lock from here on (a second
        # writer is refused at once), and mode "w" has emptied the archive when this returns.
        self._handle.open()

    def _hold(self, handle: ArchiveHandle) -> None:
        """Take ``handle`` as this store's archive (not open yet), and its options."""
        self._handle = handle
        super().__init__(read_only=handle.read_only)
        self.mode: OpenMode = handle.mode
        self.max_file_size = handle.max_file_size
        self.durable = handle.durable
        self.max_decompressed_size = handle.max_decompressed_size
        self.append_only = handle.append_only
        self.renew_limit = handle.renew_limit
        self.lock = handle.lock

    @property
    def path(self) -> str:
        """The archive file's absolute path."""
        return self._handle.path

    @property
    def _is_open(self) -> bool:
        return self._handle.is_open

    @_is_open.setter
    def _is_open(self, value: bool) -> None:
        self._handle.is_open = value

    # --- Opening ------------------------------------------------------------------------

    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> MmapZipStore:
        """Construct (and so open) a store: zarr's ``Store.open``.

        Parameters
        ----------
        *args, **kwargs
            The arguments of :class:`MmapZipStore`.

        Returns
        -------
        MmapZipStore
            The open store.

        Raises
        ------
        DafzarrError
            As the constructor does.

        Examples
        --------
        >>> import asyncio
        >>> store = asyncio.run(dafzarr.MmapZipStore.open("opened.zip", mode="w"))
        >>> store.read_only
        False
        >>> store.close()
        """
        return cls(*args, **kwargs)

    async def _open(self) -> None:
        # After close(), or for a store made by with_read_only() or unpickled: open now
        # (mode "w" empties the archive only at its first open).
        if self._is_open:
            raise AlreadyOpenError(f"{self.path}: store is already open")
        self._handle.ensure_open()

    @property
    def generation(self) -> int:
        """Changes whenever this store loads the archive or commits to it (for caches)."""
        return self._handle.archive.generation

    @property
    def comment(self) -> bytes:
        """The archive comment (kept, byte for byte, by every append)."""
        return self._handle.comment

    # --- Mapping API --------------------------------------------------------------------

    def _check_writable(self) -> None:
        # zarr's check, which every writing method of the store (and zarr) makes first: a
        # ``ValueError`` still, but the package's, naming the archive and the way out.
        if self.read_only:
            raise InvalidArgumentError(
                f"{self._handle.path}: store was opened in read-only mode and does not "
                "support writing (open it with mode 'r+' or 'a' to write)"
            )

    def __getitem__(self, key: str) -> memoryview:
        data = self._handle.entry_bytes(key)
        if data is None:
            raise EntryNotFoundError(key)
        return data

    def __setitem__(self, key: str, value: Any) -> None:
        # A new small entry inside a batch (the store is writable: the batch checked it)
        # goes through the compiled path; anything else is checked, written and committed.
        if not self._handle.stage_in_batch(key, value):
            self._check_writable()
            self._handle.append(key, value)

    def __delitem__(self, key: str) -> None:
        self._check_writable()
        self._handle.delete(key, missing_ok=False)

    def __contains__(self, key: object) -> bool:
        return self._handle.has(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._handle.key_list())

    def keys(self) -> builtins.list[str]:
        """The keys, each once (in the order of their first write since the archive opened).

        Returns
        -------
        list of str
            The keys.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("keys.zip", mode="w") as store:
        ...     store["b"] = b"1"
        ...     store["a"] = b"2"
        ...     store.keys()
        ['b', 'a']
        """
        return self._handle.key_list()

    def __len__(self) -> int:
        return self._handle.count()

    def __repr__(self) -> str:
        return f"MmapZipStore({self.path!r}, mode={self.mode!r})"

    def __str__(self) -> str:
        return f"zip://{self.path}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, type(self))
            and self.path == other.path
            and self.read_only == other.read_only
        )

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": "r" if self.read_only else "r+",
            "max_file_size": self.max_file_size,
            "durable": self.durable,
            "max_decompressed_size": self.max_decompressed_size,
            "append_only": self.append_only,
            "renew_limit": self.renew_limit,
            "lock": self.lock,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # An unpickled store (a copy sent to a worker) opens at its first use, so that
        # unpickling a writable store next to the open original does not meet its lock.
        self._hold(
            ArchiveHandle(
                state["path"],
                state["mode"],
                None,
                state["max_file_size"],
                state["durable"],
                state["max_decompressed_size"],
                state.get("append_only", False),
                state.get("renew_limit"),
                state.get("lock", True),
            )
        )

    # --- zarr Store API: properties and reading -----------------------------------------

    @property
    def supports_writes(self) -> bool:
        return True

    @property
    def supports_deletes(self) -> bool:
        return not self.append_only

    @property
    def supports_listing(self) -> bool:
        return True

    def with_read_only(self, read_only: bool = False) -> MmapZipStore:
        """A store on the same archive, opened at its first use (as zarr expects).

        Parameters
        ----------
        read_only : bool, default False
            Whether the new store is read-only.

        Returns
        -------
        MmapZipStore
            The new store (not open yet).

        Raises
        ------
        InvalidArgumentError
            The options of this store do not make a valid store (never, for a valid one).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("twice.zip", mode="w") as store:
        ...     store["a"] = b"1"
        >>> reader = store.with_read_only(True)
        >>> reader.read_only, bytes(reader["a"])
        (True, b'1')
        >>> reader.close()
        """
        other = type(self).__new__(type(self))
        other.__setstate__({**self.__getstate__(), "mode": "r" if read_only else "r+"})
        return other

    def _get_buffer(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None
    ) -> Buffer | None:
        data = self._handle.entry_bytes(key)
        if data is None:
            return None
        start, stop = byte_range_bounds(len(data), byte_range)
        return prototype.buffer.from_array_like(np.frombuffer(data[start:stop], np.uint8))

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """The value of ``key`` (or the bytes ``byte_range`` selects), or None if absent.

        Parameters
        ----------
        key : str
            The entry.
        prototype : BufferPrototype, optional
            The buffer type to return; default zarr's default prototype.
        byte_range : ByteRequest, optional
            A range, an offset or a suffix of the value; default all of it.

        Returns
        -------
        Buffer or None
            The bytes (decoded, for a compressed foreign entry).

        Raises
        ------
        CorruptArchiveError
            The entry's data is damaged (a compressed entry that does not decode to its CRC).
        InvalidArgumentError
            ``byte_range`` is not a range of the value.

        Examples
        --------
        >>> import asyncio
        >>> store = dafzarr.MmapZipStore("get.zip", mode="w")
        >>> store["a"] = b"abcdef"
        >>> asyncio.run(store.get("a")).to_bytes()
        b'abcdef'
        >>> asyncio.run(store.get("missing")) is None
        True
        >>> store.close()
        """
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """Synchronous :meth:`get`.

        Parameters
        ----------
        key : str
            The entry.
        prototype : BufferPrototype, optional
            The buffer type to return; default zarr's default prototype.
        byte_range : ByteRequest, optional
            A range, an offset or a suffix of the value; default all of it.

        Returns
        -------
        Buffer or None
            The bytes, or None if ``key`` is absent.

        Raises
        ------
        CorruptArchiveError
            The entry's data is damaged.
        InvalidArgumentError
            ``byte_range`` is not a range of the value.

        Examples
        --------
        >>> from zarr.abc.store import RangeByteRequest
        >>> store = dafzarr.MmapZipStore("get_sync.zip", mode="w")
        >>> store["a"] = b"abcdef"
        >>> store.get_sync("a", byte_range=RangeByteRequest(1, 3)).to_bytes()
        b'bc'
        >>> store.close()
        """
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> builtins.list[Buffer | None]:
        """Several values, or parts of values, at once.

        Parameters
        ----------
        prototype : BufferPrototype
            The buffer type to return.
        key_ranges : iterable of (str, ByteRequest or None)
            The keys, each with the range of its value to read (None: all of it).

        Returns
        -------
        list of Buffer or None
            One per pair, in order; None for an absent key.

        Raises
        ------
        CorruptArchiveError
            An entry's data is damaged.
        InvalidArgumentError
            A range is not a range of its value.

        Examples
        --------
        >>> import asyncio
        >>> from zarr.abc.store import SuffixByteRequest
        >>> from zarr.core.buffer import default_buffer_prototype
        >>> store = dafzarr.MmapZipStore("partial.zip", mode="w")
        >>> store["a"] = b"abcdef"
        >>> values = asyncio.run(store.get_partial_values(
        ...     default_buffer_prototype(), [("a", SuffixByteRequest(2)), ("b", None)]))
        >>> values[0].to_bytes(), values[1]
        (b'ef', None)
        >>> del values  # the buffers alias the mapping
        >>> store.close()
        """
        return [self._get_buffer(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        """Whether the archive has an entry ``key``.

        Parameters
        ----------
        key : str
            The entry.

        Returns
        -------
        bool
            True if it exists.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> import asyncio
        >>> with dafzarr.MmapZipStore("exists.zip", mode="w") as store:
        ...     store["a"] = b"1"
        ...     asyncio.run(store.exists("a")), asyncio.run(store.exists("b"))
        (True, False)
        """
        return self._handle.has(key)

    async def getsize(self, key: str) -> int:
        """The size of ``key``'s value, in bytes (decoded, for a compressed entry).

        Parameters
        ----------
        key : str
            The entry.

        Returns
        -------
        int
            Its size.

        Raises
        ------
        MissingFileError
            The archive has no entry ``key`` (a ``FileNotFoundError``, as zarr expects).

        Examples
        --------
        >>> import asyncio
        >>> with dafzarr.MmapZipStore("size.zip", mode="w") as store:
        ...     store["a"] = b"abc"
        ...     asyncio.run(store.getsize("a"))
        3
        """
        size = self._handle.size(key)
        if size is None:
            raise MissingFileError(errno.ENOENT, f"no entry {key!r} in {self.path}", key)
        return size

    async def list(self) -> AsyncIterator[str]:
        """Every key, each once.

        Yields
        ------
        str
            The keys, in the order of their first write since the archive opened.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> import asyncio
        >>> async def keys(store):
        ...     return [key async for key in store.list()]
        >>> with dafzarr.MmapZipStore("list.zip", mode="w") as store:
        ...     store.set_many({"a": b"1", "g/b": b"2"})
        ...     asyncio.run(keys(store))
        ['a', 'g/b']
        """
        for key in self._handle.key_list():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """The keys that start with ``prefix``.

        Parameters
        ----------
        prefix : str
            The start of the keys (a plain string prefix, not a folder).

        Yields
        ------
        str
            The keys, in the order of :meth:`list`.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> import asyncio
        >>> async def keys(store):
        ...     return [key async for key in store.list_prefix("g/")]
        >>> with dafzarr.MmapZipStore("list_prefix.zip", mode="w") as store:
        ...     store.set_many({"a": b"1", "g/b": b"2", "g/c/d": b"3"})
        ...     asyncio.run(keys(store))
        ['g/b', 'g/c/d']
        """
        for key in self._handle.key_list():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The names directly under the folder ``prefix`` (``""``: the top).

        Parameters
        ----------
        prefix : str
            The folder (a trailing ``/`` is ignored).

        Yields
        ------
        str
            Each child's name once: keys and subfolders, without the prefix.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> import asyncio
        >>> async def children(store):
        ...     return [name async for name in store.list_dir("g")]
        >>> with dafzarr.MmapZipStore("list_dir.zip", mode="w") as store:
        ...     store.set_many({"a": b"1", "g/b": b"2", "g/c/d": b"3", "g/c/e": b"4"})
        ...     asyncio.run(children(store))
        ['b', 'c']
        """
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        seen: builtins.set[str] = builtins.set()
        for key in self._handle.key_list():
            if key.startswith(base):
                child = key[len(base) :].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child

    # --- zarr Store API: writing and deleting -------------------------------------------

    @staticmethod
    def _check_buffer(value: Buffer) -> None:
        if not isinstance(value, Buffer):
            raise InvalidArgumentTypeError(
                f"MmapZipStore.set(): `value` must be a Buffer instance. Got an instance of "
                f"{type(value)} instead."
            )

    async def set(self, key: str, value: Buffer) -> None:
        """Write ``key``; durable when this returns.

        Concurrent writes (zarr writes the chunks of an array concurrently) share one commit:
        each writes its entry, yields to the event loop so the others can write theirs, and the
        first to resume commits them all.

        Parameters
        ----------
        key : str
            The entry (a newer copy supersedes an existing one).
        value : Buffer
            Its bytes.

        Raises
        ------
        InvalidArgumentTypeError
            ``value`` is not a zarr ``Buffer``.
        InvalidArgumentError
            ``key`` is not a valid entry name.
        AppendOnlyError
            The store is append-only and ``key`` exists.
        StorageIOError
            Writing or committing failed (a full disk); the archive keeps its last commit.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> import asyncio
        >>> from zarr.core.buffer import default_buffer_prototype
        >>> store = dafzarr.MmapZipStore("set.zip", mode="w")
        >>> asyncio.run(store.set("a", default_buffer_prototype().buffer.from_bytes(b"xyz")))
        >>> bytes(store["a"])
        b'xyz'
        >>> store.close()
        """
        self._check_writable()
        self._check_buffer(value)
        handle = self._handle
        if len(value) >= _THREAD_THRESHOLD:
            handle.staging += 1  # (on the event loop's thread, as is the decrement)
            try:
                tx = await asyncio.to_thread(handle.stage, key, value, grouped=True)
            finally:
                handle.staging -= 1
        else:
            tx = handle.stage(key, value, grouped=True)
        if tx is not None:
            await asyncio.sleep(0)
            # Group commit: writes still being copied in threads join this commit, unless
            # they keep it waiting longer than a copy takes.
            deadline = time.monotonic() + _GROUP_WAIT
            while handle.staging and not tx.done and time.monotonic() < deadline:
                await asyncio.sleep(_GROUP_POLL)
            handle.flush(tx, key)

    def set_sync(self, key: str, value: Buffer) -> None:
        """Synchronous :meth:`set` (one commit).

        Parameters
        ----------
        key : str
            The entry.
        value : Buffer
            Its bytes.

        Raises
        ------
        InvalidArgumentTypeError
            ``value`` is not a zarr ``Buffer``.
        AppendOnlyError
            The store is append-only and ``key`` exists.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> from zarr.core.buffer import default_buffer_prototype
        >>> store = dafzarr.MmapZipStore("set_sync.zip", mode="w")
        >>> store.set_sync("a", default_buffer_prototype().buffer.from_bytes(b"xyz"))
        >>> store.keys()
        ['a']
        >>> store.close()
        """
        self._check_writable()
        self._check_buffer(value)
        self._handle.append(key, value)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        """Write ``key`` unless it exists (then nothing is written).

        Parameters
        ----------
        key : str
            The entry.
        value : Buffer
            Its bytes.

        Raises
        ------
        InvalidArgumentTypeError
            ``value`` is not a zarr ``Buffer``.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> import asyncio
        >>> from zarr.core.buffer import default_buffer_prototype
        >>> store = dafzarr.MmapZipStore("once.zip", mode="w")
        >>> store["a"] = b"first"
        >>> asyncio.run(store.set_if_not_exists(
        ...     "a", default_buffer_prototype().buffer.from_bytes(b"second")))
        >>> bytes(store["a"])
        b'first'
        >>> store.close()
        """
        self._check_writable()
        self._check_buffer(value)
        self._handle.append(key, value, exist_ok=True)

    async def delete(self, key: str) -> None:
        """Drop ``key`` at once (one commit); a no-op for an absent key.

        Parameters
        ----------
        key : str
            The entry.

        Raises
        ------
        AppendOnlyError
            The store is append-only and ``key`` exists.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> import asyncio
        >>> with dafzarr.MmapZipStore("delete.zip", mode="w") as store:
        ...     store["a"] = b"1"
        ...     asyncio.run(store.delete("a"))
        ...     store.keys()
        []
        """
        self._check_writable()
        self._handle.delete(key)

    def delete_sync(self, key: str) -> None:
        """Synchronous :meth:`delete`.

        Parameters
        ----------
        key : str
            The entry.

        Raises
        ------
        AppendOnlyError
            The store is append-only and ``key`` exists.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("delete_sync.zip", mode="w") as store:
        ...     store["a"] = b"1"
        ...     store.delete_sync("a")
        ...     "a" in store
        False
        """
        self._check_writable()
        self._handle.delete(key)

    async def delete_dir(self, prefix: str) -> None:
        """Drop every key under ``prefix/`` in one commit (all keys for ``""``).

        Parameters
        ----------
        prefix : str
            The folder.

        Raises
        ------
        AppendOnlyError
            The store is append-only and a key is under ``prefix``.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> import asyncio
        >>> with dafzarr.MmapZipStore("delete_dir.zip", mode="w") as store:
        ...     store.set_many({"g/a": b"1", "g/b": b"2", "h": b"3"})
        ...     asyncio.run(store.delete_dir("g"))
        ...     store.keys()
        ['h']
        """
        self._check_writable()
        self._handle.delete_dir(prefix)

    def delete_dir_sync(self, prefix: str) -> None:
        """Synchronous :meth:`delete_dir`.

        Parameters
        ----------
        prefix : str
            The folder.

        Raises
        ------
        AppendOnlyError
            The store is append-only and a key is under ``prefix``.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("delete_dir_sync.zip", mode="w") as store:
        ...     store.set_many({"g/a": b"1", "h": b"3"})
        ...     store.delete_dir_sync("g")
        ...     store.keys()
        ['h']
        """
        self._check_writable()
        self._handle.delete_dir(prefix)

    async def clear(self) -> None:
        """Drop every key in one commit (anndata's ``write_zarr`` starts with it).

        Outside a :meth:`batch`, and while no view of the mapping is alive, a fresh empty
        archive then takes the file's place (temporary file, fsync, rename); read-only handles
        opened before keep reading the file they mapped. Inside a batch, the clear is part of
        the batch's one commit.

        Raises
        ------
        AppendOnlyError
            The store is append-only and holds entries.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> import asyncio
        >>> with dafzarr.MmapZipStore("clear.zip", mode="w") as store:
        ...     store["a"] = b"1"
        ...     asyncio.run(store.clear())
        ...     len(store)
        0
        """
        self._check_writable()
        self._handle.clear()

    # --- The store's own operations -----------------------------------------------------

    @contextlib.contextmanager
    def batch(self, size_hint: int = 0) -> Iterator[Self]:
        """Group writes into one commit: one central-directory write for all of them.

        Inside the block, writes (``store[k] = v``, zarr writes, deletes, reservations)
        are visible at once in this process but become durable together when the block
        exits; if the block raises, or the process dies inside it, none of them survive.
        Writes other threads make while the block is open join it.

        Parameters
        ----------
        size_hint : int, default 0
            About how many bytes the new entries take, headers included (see
            ``commit.begin``); a wrong hint costs speed only.

        Yields
        ------
        MmapZipStore
            This store.

        Raises
        ------
        StorageIOError
            Committing the batch failed (a full disk); none of its writes survive.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("batched.zip", mode="w")
        >>> with store.batch():
        ...     store["a"] = b"1"
        ...     store["b"] = b"2"
        >>> sorted(store)
        ['a', 'b']
        >>> store.close()
        """
        self._check_writable()
        with self._handle.batch(size_hint):
            yield self

    def set_many(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Write many entries in one commit: ``store[key] = value`` for each pair, in order,
        inside one :meth:`batch` (joining the open one, if any).

        Runs of new small entries are written by one compiled call each, the fastest way to add
        many small entries (see the README's benchmarks).

        Parameters
        ----------
        items : mapping or iterable of (str, bytes-like)
            The entries: a mapping, or ``(key, value)`` pairs.

        Raises
        ------
        InvalidArgumentError
            A key is not a valid entry name, or a value is not bytes-like; no entry of the
            call survives.
        AppendOnlyError
            The store is append-only and a key exists.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("many.zip", mode="w")
        >>> store.set_many({"a": b"1", "b": b"22"})
        >>> store.set_many([("c", b"333")])
        >>> store.keys()
        ['a', 'b', 'c']
        >>> store.close()
        """
        self._check_writable()
        self._handle.set_many(list(items.items() if isinstance(items, Mapping) else items))

    def reserve_entry(
        self, key: str, nbytes: int, *, populate: bool = False
    ) -> npt.NDArray[np.uint8]:
        """Append an entry of ``nbytes`` zero bytes and return a writable view of its data.

        Fill the view in place, then call :meth:`patch_entry_crc`. Until then the entry has
        CRC 0, and the next writable open rolls it back (and every entry after it). The key
        must not exist: a reservation cannot supersede an entry, since rolling back an
        unfinished one would lose the old value too (delete the old entry first).

        Parameters
        ----------
        key : str
            The new entry.
        nbytes : int
            Its size in bytes.
        populate : bool, default False
            Map the view's pages writable in one call first (for a view about to be filled
            whole), instead of a fault and a file-system callback at the first store into each
            page, several times slower on ext4; it allocates the entry's page cache (and
            blocks) at once, so leave it off for a view filled sparsely.

        Returns
        -------
        numpy.ndarray
            A writable ``uint8`` view of the entry's data in the mapping.

        Raises
        ------
        InvalidArgumentError
            ``nbytes`` is negative, the key exists or is not a valid entry name.
        AddressSpaceError
            The archive would grow past ``max_file_size``.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("reserved.zip", mode="w")
        >>> view = store.reserve_entry("x", 8)
        >>> view[:] = np.arange(8, dtype=np.uint8)
        >>> del view
        >>> crc = store.patch_entry_crc("x")
        >>> bytes(store["x"])
        b'\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07'
        >>> store.close()
        """
        self._check_writable()
        return self._handle.reserve_entry(key, nbytes, populate)

    def set_streamed(self, key: str, nbytes: int, blocks: Iterable[Any]) -> None:
        """Store a new entry of ``nbytes`` bytes from consecutive ``blocks`` (buffers).

        For values computed piece by piece (an iterator may compute the next block while the
        previous one is written) or too large to assemble in memory first: each block is written
        as it comes, large ones with pwrite(2) into the page cache, and the CRC-32 is computed
        from the blocks themselves. The entry appears, complete and with its CRC, when the call
        commits (or with the open batch).

        Parameters
        ----------
        key : str
            The new entry (it must not exist).
        nbytes : int
            Its size: what the blocks add up to.
        blocks : iterable of bytes-like
            Its data, in order.

        Raises
        ------
        InvalidArgumentError
            ``nbytes`` is negative, the blocks do not add up to it, a block is not bytes-like,
            or the key exists or is not a valid entry name; no entry is left.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("streamed.zip", mode="w")
        >>> store.set_streamed("x", 6, (b"ab", b"cd", b"ef"))
        >>> bytes(store["x"])
        b'abcdef'
        >>> store.close()
        """
        self._check_writable()
        self._handle.set_streamed(key, nbytes, blocks)

    def patch_entry_crc(self, key: str) -> int:
        """Store the CRC-32 of an entry's current data (after filling a reservation).

        Parameters
        ----------
        key : str
            The entry (made by :meth:`reserve_entry`).

        Returns
        -------
        int
            The CRC-32 stored.

        Raises
        ------
        EntryNotFoundError
            The archive has no entry ``key``.
        UnsupportedEntryError
            The entry is compressed: its data is not the bytes a view shows.
        InvalidArgumentError
            The store is read-only (also a ``ValueError``, as zarr's stores raise).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("patched.zip", mode="w")
        >>> view = store.reserve_entry("x", 3)
        >>> view[:] = [1, 2, 3]
        >>> del view
        >>> store.patch_entry_crc("x")
        1438416925
        >>> store.close()
        """
        self._check_writable()
        return self._handle.patch_entry_crc(key)

    def copy_entry(self, key: str, source: MmapZipStore, source_key: str) -> bool:
        """Store a new entry ``key`` holding the bytes of ``source``'s entry ``source_key``.

        The bytes are copied from file to file by the kernel (``copy_file_range``), with the
        CRC-32 the source records (no pass over the bytes in this process).

        Parameters
        ----------
        key : str
            The new entry (it must not exist).
        source : MmapZipStore
            The store to copy from (open or not).
        source_key : str
            The entry of ``source`` to copy.

        Returns
        -------
        bool
            True when copied; False, and nothing written, when the source entry is absent or
            not a stored (uncompressed) one with a known CRC: the caller then writes the bytes
            itself.

        Raises
        ------
        InvalidArgumentError
            The key exists or is not a valid entry name, or this store is read-only.

        Examples
        --------
        >>> with dafzarr.MmapZipStore("from.zip", mode="w") as source:
        ...     source["a"] = b"payload"
        >>> source = dafzarr.MmapZipStore("from.zip")
        >>> with dafzarr.MmapZipStore("to.zip", mode="w") as target:
        ...     target.copy_entry("b", source, "a")
        ...     bytes(target["b"])
        True
        b'payload'
        >>> source.close()
        """
        self._check_writable()
        return self._handle.copy_entry(key, source._handle, source_key)

    def try_mmap_entry_as(
        self,
        key: str,
        dtype: npt.DTypeLike,
        shape: int | Iterable[int],
        *,
        order: Literal["C", "F"] = "C",
    ) -> np.ndarray[Any, Any] | None:
        """A read-only numpy array aliasing the entry's bytes in the mapping, or ``None``.

        Parameters
        ----------
        key : str
            The entry.
        dtype : numpy dtype-like
            The array's element type.
        shape : int or sequence of int
            The array's shape.
        order : {"C", "F"}, default "C"
            Its memory layout.

        Returns
        -------
        numpy.ndarray or None
            The array; ``None`` when the entry is absent, compressed or encrypted, when its size
            is not ``prod(shape) * dtype.itemsize``, or when its data is not aligned for
            ``dtype`` (then read ``store[key]``, which copies nothing either but gives bytes).

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("mapped.zip", mode="w")
        >>> store["x"] = np.arange(4, dtype="<i4").tobytes()
        >>> store.try_mmap_entry_as("x", "<i4", 4)
        array([0, 1, 2, 3], dtype=int32)
        >>> store.try_mmap_entry_as("x", "<i4", 3) is None
        True
        >>> store.close()
        """
        return self._handle.mmap_entry_as(key, dtype, shape, order)

    def space(self) -> ArchiveSpace:
        """How the archive's bytes are used: live entries, dead copies, directory.

        Dead bytes are superseded and deleted entries (and anything else no entry claims);
        :meth:`compact` gives them back.

        Returns
        -------
        ArchiveSpace
            The byte accounting of the archive.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("space.zip", mode="w")
        >>> store["a"] = b"old"
        >>> store["a"] = b"new"
        >>> used = store.space()
        >>> used.entries, used.dead_bytes > 0
        (1, True)
        >>> store.close()
        """
        return self._handle.space()

    def verify(self) -> builtins.list[str]:
        """CRC-check every entry.

        Returns
        -------
        list of str
            The keys whose data does not match their CRC-32 (empty when all are intact).

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("checked.zip", mode="w") as store:
        ...     store["a"] = b"data"
        ...     store.verify()
        []
        """
        return self._handle.verify()

    def info(self) -> builtins.list[dict[str, Any]]:
        """One dict per entry of the central directory, in archive order (``dafzarr zip ls``).

        Returns
        -------
        list of dict
            Keys: ``name``, ``method``, ``compressed_size``, ``size``, ``crc32``,
            ``header_offset``, ``data_offset`` (None for directories and damaged entries),
            ``error`` (None, or why the entry cannot be read) and ``refused`` (None, or why its
            name is unsafe, so that it is not served): one bad entry does not hide the others.

        Raises
        ------
        CorruptArchiveError
            The archive cannot be opened (at a first use after :meth:`close`).

        Examples
        --------
        >>> with dafzarr.MmapZipStore("listed.zip", mode="w") as store:
        ...     store["a"] = b"xy"
        ...     [(e["name"], e["size"], e["error"]) for e in store.info()]
        [('a', 2, None)]
        """
        return self._handle.info()

    # Compaction and packing (``repack``): ``store.compact()`` compacts an open writable
    # store in place; ``MmapZipStore.compact(path, out=None)`` an archive by path.
    compact = CompactMethod(handle_of)
    pack = staticmethod(pack_directory)

    # --- Closing ------------------------------------------------------------------------

    def close_if_unused(self) -> bool:
        """Close (as :meth:`close`) only if no zero-copy view of the archive is alive.

        Never runs the garbage collector, so it costs nothing when views are legitimately
        alive (arrays returned to the caller).

        Returns
        -------
        bool
            Whether the store is closed.

        Raises
        ------
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("unused.zip", mode="w")
        >>> store["a"] = b"data"
        >>> view = store["a"]
        >>> store.close_if_unused()
        False
        >>> del view
        >>> store.close_if_unused()
        True
        """
        return self._handle.close_if_unused()

    def close(self) -> None:
        """Unmap and close the archive; the next use opens it again.

        A writer first moves the directory right after the last entry (one write of it),
        giving back the free room its commits kept before the directory. Views that another
        thread is releasing (zarr's I/O thread finishing a read) are waited for, a quarter
        of a second at most.

        Raises
        ------
        BufferError
            Zero-copy views of the archive are alive (see :meth:`close_after_views`).
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("closed.zip", mode="w")
        >>> store["a"] = b"data"
        >>> store.close()
        >>> bytes(store["a"])  # opens the archive again
        b'data'
        >>> store.close()
        """
        self._handle.close()

    def close_after_views(self) -> bool:
        """Close now, or, while zero-copy views are alive, when the last goes.

        A writer settles as :meth:`close` does now; the mapping, descriptor and writer's
        lock go with the last view. Using the store before that takes the mapping back.

        Returns
        -------
        bool
            True when closed now; False when the last view will close it.

        Raises
        ------
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("later.zip", mode="w")
        >>> store["a"] = b"data"
        >>> view = store["a"]
        >>> store.close_after_views()
        False
        >>> bytes(view)
        b'data'
        >>> del view
        """
        return self._handle.close_after_views()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        if exc_type is None:
            self._handle.close()
        else:
            # Do not mask the exception in flight: if views of the mapping are still alive
            # (for instance in the traceback's frames), let the mapping go when they do.
            self._handle.close_leaving_views()
