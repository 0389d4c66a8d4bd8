"""The contract every byte source keeps: one object, read by byte ranges, never trusted blindly.

A source is one object (a local file, bytes in memory, a key of an object store or a URL).
Its bytes are read by ranges ``[start, stop)``; every answer has exactly the length asked for,
or the read raises. A missing object raises :class:`FileNotFoundError`; an object replaced
since its version was seen raises :class:`FileNotFoundError` with ``errno.ESTALE``.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...errors import InvalidArgumentError

__all__ = [
    "ByteSource",
    "BytesLike",
    "Head",
    "check_ranges",
    "check_read",
    "replaced",
    "wrong_length",
]

BytesLike = bytes | bytearray | memoryview


@dataclass(frozen=True)
class Head:
    """What is known about an object without its bytes: its size and a version token.

    The token identifies one immutable generation of the object (inode, mtime and size for a
    local file; the ETag and version for an object store), so bytes cached under it are
    never served for a replaced object.
    """

    size: int
    version: str


@runtime_checkable
class ByteSource(Protocol):
    """One object read by byte ranges (see the module doc for the guarantees)."""

    #: How messages name the object (a path, a URL, a store and key).
    where: str

    def head(self) -> Head:
        """The object's size and version."""
        ...

    def size(self) -> int:
        """The object's size in bytes."""
        ...

    def read(self, start: int, stop: int, *, version: str | None = None) -> BytesLike:
        """Exactly the bytes ``[start, stop)``; of generation ``version`` if given."""
        ...

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, version: str | None = None
    ) -> list[BytesLike]:
        """The bytes of each ``(start, stop)`` in ``ranges``, read concurrently where the
        source allows it, in the order asked."""
        ...

    def read_tail(self, n: int) -> tuple[BytesLike, Head]:
        """The last ``n`` bytes (all of them if fewer), with the object's size and version,
        in one request."""
        ...

    def read_all(self, limit: int) -> BytesLike:
        """The whole object; an object longer than ``limit`` bytes is an error."""
        ...


def check_ranges(where: str, ranges: Sequence[tuple[int, int]]) -> None:
    """Refuse a range that is not ``0 <= start <= stop``."""
    for start, stop in ranges:
        if not 0 <= start <= stop:
            raise InvalidArgumentError(f"{where}: invalid byte range [{start}, {stop})")


def wrong_length(where: str, start: int, stop: int, got: int) -> str:
    """The message for an answer to ``[start, stop)`` with ``got`` bytes."""
    how = "more than" if got > stop - start else "only"
    return (
        f"{where}: the answer to Range bytes={start}-{stop - 1} has {how} "
        f"{min(got, stop - start)} bytes, not {stop - start}"
    )


def check_read(where: str, start: int, stop: int, version: str | None, current: str) -> None:
    """Refuse an invalid range, or a read pinned to a ``version`` other than ``current``."""
    check_ranges(where, [(start, stop)])
    if version is not None and version != current:
        raise replaced(where)


def replaced(where: str) -> FileNotFoundError:
    """The error for an object replaced since the version asked for was seen."""
    return FileNotFoundError(errno.ESTALE, "replaced since it was opened", where)
