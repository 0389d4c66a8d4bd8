"""zarr's Store API over an archive: reading, writing and deleting entries as zarr's
:class:`~zarr.abc.store.Store` asks (each function is a method of
:class:`~dafzarr.zipstore.MmapZipStore`, bound there), with their synchronous variants;
``listing`` has the rest.

The examples write values as zarr does, as :class:`~zarr.core.buffer.Buffer` objects, and
run the coroutines with :func:`asyncio.run`.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import Iterable

import numpy as np
from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ...errors import InvalidArgumentTypeError
from ..io import byte_range_bounds
from . import write
from .handle import ArchiveHandle

__all__ = [
    "clear",
    "delete",
    "delete_dir",
    "delete_dir_sync",
    "delete_sync",
    "get",
    "get_partial_values",
    "get_sync",
    "set",
    "set_if_not_exists",
    "set_sync",
]

# Appends at least this large run off the event loop.
_THREAD_THRESHOLD = 1 << 20
# How long a commit waits for concurrent large writes to join it, and how often it looks.
_GROUP_WAIT, _GROUP_POLL = 0.02, 0.0002


def _get_buffer(
    self: ArchiveHandle, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None
) -> Buffer | None:
    self._ensure_open_sync()
    e = self._archive.index.get(key)
    if e is None:
        return None
    data = self._read(e)
    start, stop = byte_range_bounds(len(data), byte_range)
    return prototype.buffer.from_array_like(np.frombuffer(data[start:stop], np.uint8))


async def get(
    self: ArchiveHandle,
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
    return _get_buffer(self, key, prototype or default_buffer_prototype(), byte_range)


def get_sync(
    self: ArchiveHandle,
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
    return _get_buffer(self, key, prototype or default_buffer_prototype(), byte_range)


async def get_partial_values(
    self: ArchiveHandle,
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
    return [_get_buffer(self, k, prototype, r) for k, r in key_ranges]


def _check_buffer(value: Buffer) -> None:
    if not isinstance(value, Buffer):
        raise InvalidArgumentTypeError(
            f"MmapZipStore.set(): `value` must be a Buffer instance. Got an instance of "
            f"{type(value)} instead."
        )


async def set(self: ArchiveHandle, key: str, value: Buffer) -> None:
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
    ValueError
        The store is read-only (zarr's error).

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
    _check_buffer(value)
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


def set_sync(self: ArchiveHandle, key: str, value: Buffer) -> None:
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
    ValueError
        The store is read-only (zarr's error).

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
    _check_buffer(value)
    self._append(key, value)


async def set_if_not_exists(self: ArchiveHandle, key: str, value: Buffer) -> None:
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
    ValueError
        The store is read-only (zarr's error).

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
    _check_buffer(value)
    self._append(key, value, exist_ok=True)


async def delete(self: ArchiveHandle, key: str) -> None:
    """Drop ``key`` at once (one commit); a no-op for an absent key.

    Parameters
    ----------
    key : str
        The entry.

    Raises
    ------
    AppendOnlyError
        The store is append-only and ``key`` exists.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> import asyncio
    >>> with dafzarr.MmapZipStore("delete.zip", mode="w") as store:
    ...     store["a"] = b"1"
    ...     asyncio.run(store.delete("a"))
    ...     store.keys()
    []
    """
    self._delete_sync(key)


def delete_sync(self: ArchiveHandle, key: str) -> None:
    """Synchronous :meth:`delete`.

    Parameters
    ----------
    key : str
        The entry.

    Raises
    ------
    AppendOnlyError
        The store is append-only and ``key`` exists.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> with dafzarr.MmapZipStore("delete_sync.zip", mode="w") as store:
    ...     store["a"] = b"1"
    ...     store.delete_sync("a")
    ...     "a" in store
    False
    """
    self._delete_sync(key)


async def delete_dir(self: ArchiveHandle, prefix: str) -> None:
    """Drop every key under ``prefix/`` in one commit (all keys for ``""``).

    Parameters
    ----------
    prefix : str
        The folder.

    Raises
    ------
    AppendOnlyError
        The store is append-only and a key is under ``prefix``.
    ValueError
        The store is read-only (zarr's error).

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
    self._ensure_open_sync()
    self._delete_dir(prefix)


def delete_dir_sync(self: ArchiveHandle, prefix: str) -> None:
    """Synchronous :meth:`delete_dir`.

    Parameters
    ----------
    prefix : str
        The folder.

    Raises
    ------
    AppendOnlyError
        The store is append-only and a key is under ``prefix``.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> with dafzarr.MmapZipStore("delete_dir_sync.zip", mode="w") as store:
    ...     store.set_many({"g/a": b"1", "h": b"3"})
    ...     store.delete_dir_sync("g")
    ...     store.keys()
    ['h']
    """
    self._check_writable()
    self._ensure_open_sync()
    self._delete_dir(prefix)


async def clear(self: ArchiveHandle) -> None:
    """Drop every key in one commit (anndata's ``write_zarr`` starts with it).

    Outside a :meth:`batch`, and while no view of the mapping is alive, a fresh empty
    archive then takes the file's place (temporary file, fsync, rename); read-only handles
    opened before keep reading the file they mapped. Inside a batch, the clear is part of
    the batch's one commit.

    Raises
    ------
    AppendOnlyError
        The store is append-only and holds entries.
    ValueError
        The store is read-only (zarr's error).

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
    self._ensure_open_sync()
    self._delete_keys(write.keys_under(self._archive, ""))
