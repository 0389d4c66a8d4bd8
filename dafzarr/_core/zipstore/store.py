"""The :class:`MmapZipStore` facade: zarr's Store API and the mapping protocol over the
archive an :class:`~dafzarr._core.zipstore.handle.ArchiveHandle` holds.
"""

from __future__ import annotations

import asyncio
import errno
import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import numpy as np
from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ...errors import (
    AlreadyOpenError,
    EntryNotFoundError,
    InvalidArgumentTypeError,
    MissingFileError,
)
from ..addrspace import fitting_max_file_size
from ..aliases import OpenMode
from ..io import byte_range_bounds
from . import commit, read, write
from .handle import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_FILE_SIZE, ArchiveHandle
from .input import encode_key
from .space import ArchiveSpace
from .write import copy_range

__all__ = ["ArchiveSpace", "MmapZipStore"]

# Appends at least this large run off the event loop.
_THREAD_THRESHOLD = 1 << 20
# How long a commit waits for concurrent large writes to join it, and how often it looks.
_GROUP_WAIT, _GROUP_POLL = 0.02, 0.0002


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
            path, mode, read_only, max_file_size, durable, max_decompressed_size, append_only,
            renew_limit, lock,
        )
        # Open now: a writable store holds the archive's lock from here on (a second
        # writer is refused at once), and mode "w" has emptied the archive when this returns.
        self._open_sync()

    # --- Opening ------------------------------------------------------------------------

    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> MmapZipStore:
        """Construct (and so open) a store: zarr's ``Store.open``."""
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
        """The keys, each once (in the order of their first write since the archive opened)."""
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
        """A store on the same archive, opened at its first use (as zarr expects)."""
        other = type(self).__new__(type(self))
        other.__setstate__({**self.__getstate__(), "mode": "r" if read_only else "r+"})
        return other

    def _get_buffer(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None
    ) -> Buffer | None:
        self._ensure_open_sync()
        e = self._archive.index.get(key)
        if e is None:
            return None
        data = self._read(e)
        start, stop = byte_range_bounds(len(data), byte_range)
        return prototype.buffer.from_array_like(np.frombuffer(data[start:stop], np.uint8))

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return [self._get_buffer(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        self._ensure_open_sync()
        return key in self._archive.index

    def _check_buffer(self, value: Buffer) -> None:
        if not isinstance(value, Buffer):
            raise InvalidArgumentTypeError(
                f"MmapZipStore.set(): `value` must be a Buffer instance. Got an instance of "
                f"{type(value)} instead."
            )

    async def set(self, key: str, value: Buffer) -> None:
        """Write ``key``; durable when this returns.

        Concurrent writes (zarr writes the chunks of an array concurrently) share one
        commit: each writes its entry, yields to the event loop so the others can write
        theirs, and the first to resume commits them all.
        """
        self._check_writable()
        self._check_buffer(value)
        if len(value) >= _THREAD_THRESHOLD:
            self._staging += 1  # (on the event loop's thread, as is the decrement)
            try:
                tx = await asyncio.to_thread(self._stage, key, value, grouped=True)
            finally:
                self._staging -= 1
        else:
            tx = self._stage(key, value, grouped=True)
        if tx is not None:
            await asyncio.sleep(0)
            # Group commit: writes still being copied in threads join this commit, unless
            # they keep it waiting longer than a copy takes.
            deadline = time.monotonic() + _GROUP_WAIT
            while self._staging and not tx.done and time.monotonic() < deadline:
                await asyncio.sleep(_GROUP_POLL)
            self._flush(tx, key)

    def set_sync(self, key: str, value: Buffer) -> None:
        self._check_writable()
        self._check_buffer(value)
        self._append(key, value)

    def copy_entry(self, key: str, source: MmapZipStore, source_key: str) -> bool:
        """Store a new entry ``key`` holding the bytes of ``source``'s entry ``source_key``,
        copied from file to file by the kernel (``copy_file_range``), with the CRC-32 the
        source records (no pass over the bytes in this process). False, and nothing
        written, when the source entry is not a stored (uncompressed) one with a known CRC;
        the caller then writes the bytes itself. The key must not exist.
        """
        src_fm = source._ensure_open_sync()
        with source._lock:
            e = source._archive.index.get(source_key)
            if (e is None or e.method != 0 or e.csize != e.usize
                    or source_key in source._archive.unpatched):
                return False
            offset, nbytes, crc = read.data_offset(source._archive, src_fm, e), e.usize, e.crc
        raw = encode_key(key, self.path)
        with self.batch(), self._io(f"writing entry {key!r}"), self._lock:
            fm = self._check_writable_sync()
            # The data at the source's offset within a page: the kernel copies whole pages.
            start = write.reserve(self._archive, fm, key, raw, nbytes,
                                   append_only=self.append_only,
                                   batch_room=self._batch_room, page_offset=offset % 4096)
            copy_range(src_fm, offset, fm, start, nbytes)
            commit.patch_crc(self._archive, fm, self._archive.index[key], crc)
        return True

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._check_writable()
        self._check_buffer(value)
        self._append(key, value, exist_ok=True)

    async def delete(self, key: str) -> None:
        """Drop ``key`` at once (one commit); a no-op for an absent key."""
        self._delete_sync(key)

    def delete_sync(self, key: str) -> None:
        self._delete_sync(key)

    async def delete_dir(self, prefix: str) -> None:
        """Drop every key under ``prefix/`` in one commit (all keys for ``""``)."""
        self._check_writable()
        self._ensure_open_sync()
        self._delete_dir(prefix)

    def delete_dir_sync(self, prefix: str) -> None:
        """Synchronous :meth:`delete_dir`."""
        self._check_writable()
        self._ensure_open_sync()
        self._delete_dir(prefix)

    async def clear(self) -> None:
        """Drop every key in one commit (anndata's ``write_zarr`` starts with it).

        Outside a :meth:`batch`, and while no view of the mapping is alive, a fresh empty
        archive then takes the file's place (temporary file, fsync, rename); read-only
        handles opened before keep reading the file they mapped. Inside a batch, the clear
        is part of the batch's one commit.
        """
        self._check_writable()
        self._ensure_open_sync()
        self._delete_keys(write.keys_under(self._archive, ""))

    async def getsize(self, key: str) -> int:
        self._ensure_open_sync()
        e = self._archive.index.get(key)
        if e is None:
            raise MissingFileError(errno.ENOENT, f"no entry {key!r} in {self.path}", key)
        return e.usize

    async def list(self) -> AsyncIterator[str]:
        for key in self.keys():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        seen: set[str] = set()
        for key in self.keys():
            if key.startswith(base):
                child = key[len(base) :].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child
