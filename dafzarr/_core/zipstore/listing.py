"""zarr's Store API over an archive: which entries exist, their sizes and their listings
(each function is a method of :class:`~dafzarr.zipstore.MmapZipStore`, bound there).

The examples run the coroutines with :func:`asyncio.run`.
"""

from __future__ import annotations

import builtins
import errno
from collections.abc import AsyncIterator

from ...errors import MissingFileError
from .handle import ArchiveHandle

__all__ = ["exists", "getsize", "list", "list_dir", "list_prefix"]


def _keys(self: ArchiveHandle) -> builtins.list[str]:
    self._ensure_open_sync()
    return builtins.list(self._archive.index)


async def exists(self: ArchiveHandle, key: str) -> bool:
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
    self._ensure_open_sync()
    return key in self._archive.index


async def getsize(self: ArchiveHandle, key: str) -> int:
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
    self._ensure_open_sync()
    e = self._archive.index.get(key)
    if e is None:
        raise MissingFileError(errno.ENOENT, f"no entry {key!r} in {self.path}", key)
    return e.usize


async def list(self: ArchiveHandle) -> AsyncIterator[str]:
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
    for key in _keys(self):
        yield key


async def list_prefix(self: ArchiveHandle, prefix: str) -> AsyncIterator[str]:
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
    for key in _keys(self):
        if key.startswith(prefix):
            yield key


async def list_dir(self: ArchiveHandle, prefix: str) -> AsyncIterator[str]:
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
    for key in _keys(self):
        if key.startswith(base):
            child = key[len(base) :].split("/", 1)[0]
            if child not in seen:
                seen.add(child)
                yield child
