"""Bytes in memory as a byte source (zero-copy views of one immutable buffer)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ...errors import InvalidArgumentError, TruncatedDataError
from .source import BytesLike, Head, check_read

__all__ = ["MemorySource"]

_versions = itertools.count(1)


class MemorySource:
    """``data`` as one object; ``version`` names this generation (a fresh one if not given)."""

    def __init__(
        self, data: BytesLike, *, version: str | None = None, where: str = "memory"
    ) -> None:
        self.where = where
        self._data = memoryview(data).cast("B")
        self._head = Head(self._data.nbytes, version or f"m{next(_versions)}")

    def head(self) -> Head:
        return self._head

    def size(self) -> int:
        return self._head.size

    @property
    def version(self) -> str:
        return self._head.version

    def read(self, start: int, stop: int, *, version: str | None = None) -> BytesLike:
        check_read(self.where, start, stop, version, self._head.version)
        if stop > self._head.size:
            raise TruncatedDataError(f"{self.where}: short read of [{start}, {stop})")
        return self._data[start:stop]

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, version: str | None = None
    ) -> list[BytesLike]:
        return [self.read(a, b, version=version) for a, b in ranges]

    def read_tail(self, n: int) -> tuple[BytesLike, Head]:
        return self._data[max(0, self._head.size - n) :], self._head

    def read_all(self, limit: int) -> BytesLike:
        if self._head.size > limit:
            raise InvalidArgumentError(
                f"{self.where}: {self._head.size} bytes, more than the limit={limit} allowed"
            )
        return self._data
