"""The :class:`MmapZipStore` facade: zarr's Store API (``protocol``), the mapping protocol
and the store's own operations (``store_ops``) over the archive an
:class:`~dafzarr._core.zipstore.handle.ArchiveHandle` holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ...errors import AlreadyOpenError, EntryNotFoundError
from ..addrspace import fitting_max_file_size
from ..aliases import OpenMode
from . import listing, protocol, store_ops
from .handle import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_FILE_SIZE, ArchiveHandle
from .space import ArchiveSpace

__all__ = ["ArchiveSpace", "MmapZipStore"]


class MmapZipStore(ArchiveHandle):
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
        self._configure(
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
        # Open now: a writable store holds the archive's lock from here on (a second
        # writer is refused at once), and mode "w" has emptied the archive when this returns.
        self._open_sync()

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
        self._ensure_open_sync()

    # --- Mapping API --------------------------------------------------------------------

    def __getitem__(self, key: str) -> memoryview:
        self._ensure_open_sync()
        e = self._archive.index.get(key)
        if e is None:
            raise EntryNotFoundError(key)
        return self._read(e)

    def __setitem__(self, key: str, value: Any) -> None:
        self._set_item(key, value)

    def __delitem__(self, key: str) -> None:
        self._delete_sync(key, missing_ok=False)

    def __contains__(self, key: object) -> bool:
        self._ensure_open_sync()
        return key in self._archive.index

    def __iter__(self) -> Iterator[str]:
        self._ensure_open_sync()
        return iter(list(self._archive.index))

    def keys(self) -> list[str]:
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
        self._ensure_open_sync()
        return list(self._archive.index)

    def __len__(self) -> int:
        self._ensure_open_sync()
        return len(self._archive.index)

    def _follow_rename(self, path: str) -> None:
        """The file this open, writable store maps was given the name ``path`` (and lost
        its old one): renewals, compactions and reopens go by that name from now on."""
        with self._lock:
            self.path = self._archive.path = os.path.abspath(path)
            if self._fm is not None:
                self._fm.path = self.path

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
        self._configure(
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

    # --- zarr Store API -----------------------------------------------------------------

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

    # zarr's Store API (``protocol``, ``listing``) and the store's own operations
    # (``store_ops``).
    get = protocol.get
    get_sync = protocol.get_sync
    get_partial_values = protocol.get_partial_values
    exists = listing.exists
    set = protocol.set
    set_sync = protocol.set_sync
    set_if_not_exists = protocol.set_if_not_exists
    delete = protocol.delete
    delete_sync = protocol.delete_sync
    delete_dir = protocol.delete_dir
    delete_dir_sync = protocol.delete_dir_sync
    clear = protocol.clear
    getsize = listing.getsize
    list = listing.list
    list_prefix = listing.list_prefix
    list_dir = listing.list_dir
    set_many = store_ops.set_many
    reserve_entry = store_ops.reserve_entry
    set_streamed = store_ops.set_streamed
    patch_entry_crc = store_ops.patch_entry_crc
    copy_entry = store_ops.copy_entry
    try_mmap_entry_as = store_ops.try_mmap_entry_as
    space = store_ops.space
    verify = store_ops.verify
    info = store_ops.info
