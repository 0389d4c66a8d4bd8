"""A local file as a byte source: one open descriptor, so one generation of the file."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...errors import InvalidArgumentError, TruncatedDataError
from .source import BytesLike, Head, check_read

__all__ = ["FileSource", "file_version"]


def file_version(st: os.stat_result) -> str:
    """The version token of a file: device, inode, modification time and size."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


class FileSource:
    """The file at ``path`` as it was when opened: a reader keeps seeing that generation even
    after the name is replaced (reads use the descriptor, not the name)."""

    def __init__(self, path: str, fd: int | None = None) -> None:
        """Open ``path``; or, given ``fd`` (which it then owns), read the file open there."""
        self.where = path
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC) if fd is None else fd
        try:
            self._head = self._stat()
        except BaseException:
            os.close(self._fd)
            raise

    def _stat(self) -> Head:
        st = os.fstat(self._fd)
        return Head(st.st_size, file_version(st))

    def head(self) -> Head:
        """Size and version now (a file appended to in place gets a new version)."""
        return self._stat()

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    @property
    def version(self) -> str:
        """The version seen when the file was opened."""
        return self._head.version

    def read(self, start: int, stop: int, *, version: str | None = None) -> BytesLike:
        check_read(self.where, start, stop, version, self._head.version)
        data = os.pread(self._fd, stop - start, start)
        if len(data) != stop - start:
            raise TruncatedDataError(f"{self.where}: short read of [{start}, {stop})")
        return data

    def read_ranges(
        self, ranges: Sequence[tuple[int, int]], *, version: str | None = None
    ) -> list[BytesLike]:
        return [self.read(a, b, version=version) for a, b in ranges]

    def read_tail(self, n: int) -> tuple[BytesLike, Head]:
        head = self._stat()
        start = max(0, head.size - n)
        return os.pread(self._fd, head.size - start, start), head

    def read_all(self, limit: int) -> BytesLike:
        size = self.size()
        if size > limit:
            raise InvalidArgumentError(
                f"{self.where}: {size} bytes, more than the limit={limit} allowed"
            )
        return self.read(0, size)

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
