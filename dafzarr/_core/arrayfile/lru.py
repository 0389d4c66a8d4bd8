"""Byte-budgeted LRU caches for decompressed blocks and raw object bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from ...errors import InvalidArgumentError

__all__ = ["DeltaCache", "LRUBytes"]


class LRUBytes:
    """A thread-safe least-recently-used map whose entries are weighed by their length."""

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise InvalidArgumentError(f"cache capacity must be >= 0, not {capacity}")
        self.capacity = int(capacity)
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        n = len(value)
        if n > self.capacity:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._size -= len(old)
            self._data[key] = value
            self._size += n
            while self._size > self.capacity:
                _, dropped = self._data.popitem(last=False)
                self._size -= len(dropped)

    def discard_prefix(self, prefix: tuple[Any, ...]) -> None:
        """Drop every entry whose key starts with ``prefix``."""
        k = len(prefix)
        with self._lock:
            for key in [key for key in self._data if key[:k] == prefix]:  # type: ignore[index]
                self._size -= len(self._data.pop(key))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._size = 0


class DeltaCache:
    """Caches shared by one or more :class:`~dafzarr.ArrayFile` handles under one byte budget.

    Parameters
    ----------
    block_bytes
        Budget for decompressed blocks (the level every chunk read goes through).
    io_bytes
        Budget for raw, still-compressed block bytes, so that a block evicted from the first
        level is decompressed again without another read from storage.

    Raises
    ------
    InvalidArgumentError
        A budget is negative.

    Notes
    -----
    Entries are keyed by (storage, object key, object version, block id): a block read before
    ``compact`` replaced an object is never served for the new object. Both budgets at 0 turn
    caching off.

    Examples
    --------
    >>> from dafzarr.arrayfile import ArrayFile, DeltaCache, FileConfig
    >>> shared = FileConfig(cache=DeltaCache(block_bytes=64 << 20, io_bytes=16 << 20))
    >>> with ArrayFile.create("one.af", config=shared) as one:
    ...     one.define_array("a", "int8", ["x"], [2])
    >>> with ArrayFile.open("one.af", config=shared) as again:
    ...     again.list_arrays()
    ['a']
    """

    def __init__(self, block_bytes: int = 256 << 20, io_bytes: int = 64 << 20) -> None:
        self.blocks = LRUBytes(block_bytes)
        self.io = LRUBytes(io_bytes)

    def __repr__(self) -> str:
        return (
            f"DeltaCache(block_bytes={self.blocks.capacity}, io_bytes={self.io.capacity}; "
            f"holding {self.blocks.nbytes} + {self.io.nbytes} bytes)"
        )

    def clear(self) -> None:
        """Drop every entry (of both levels); the next reads load their blocks again.

        Raises
        ------
        None
            Clearing cannot fail.

        Examples
        --------
        >>> from dafzarr.arrayfile import DeltaCache
        >>> cache = DeltaCache()
        >>> cache.clear()
        >>> cache
        DeltaCache(block_bytes=268435456, io_bytes=67108864; holding 0 + 0 bytes)
        """
        self.blocks.clear()
        self.io.clear()
