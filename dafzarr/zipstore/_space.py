"""What an archive holds: byte accounting, CRC checks and a listing of its directory.

The functions behind :meth:`~dafzarr.zipstore.MmapZipStore.space`,
:meth:`~dafzarr.zipstore.MmapZipStore.verify` and :meth:`~dafzarr.zipstore.MmapZipStore.info`;
each reads the :class:`~dafzarr.zipstore._state.Archive` and the mapping, and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._crc import crc32
from .._posix import FileMapping
from ..errors import CorruptArchiveError, UnsupportedEntryError
from ._read import data_offset, read_entry
from ._state import Archive

__all__ = ["ArchiveSpace", "info", "space", "verify"]


@dataclass(frozen=True, slots=True)
class ArchiveSpace:
    """Byte accounting of an archive (:meth:`MmapZipStore.space`)."""

    entries: int  # live keys
    live_bytes: int  # local headers and data of the live entries
    dead_bytes: int  # superseded and deleted copies, and other unclaimed bytes
    directory_bytes: int  # central directory, end records and comment
    file_size: int  # once every pending write is committed

    def __str__(self) -> str:
        return (
            f"{self.entries} entries: {self.live_bytes} live bytes, {self.dead_bytes} dead "
            f"bytes, {self.directory_bytes} bytes of directory, {self.file_size} bytes in all"
        )


def space(a: Archive, fm: FileMapping) -> ArchiveSpace:
    """How the archive's bytes are used, once the open transaction (if any) commits."""
    tx = a.tx
    end = tx.write if tx is not None else a.data_end
    live = 0
    for e in a.live_entries():
        if not e.is_dir:
            try:
                live += data_offset(a, fm, e) + e.csize - e.lfh_offset
            except CorruptArchiveError:
                live += e.csize
    directory = a.directory_size() + a.trailer_len()
    return ArchiveSpace(
        entries=len(a.index),
        live_bytes=live,
        dead_bytes=max(end - live, 0),
        directory_bytes=directory,
        file_size=end + directory,
    )


def verify(a: Archive, fm: FileMapping) -> list[str]:
    """The keys whose entries fail their CRC check or cannot be read."""
    bad = []
    for key, e in list(a.index.items()):
        try:
            with read_entry(a, fm, e) as data:  # releases the view
                if e.method == 0 and crc32(data) != e.crc:
                    bad.append(key)
        except (CorruptArchiveError, UnsupportedEntryError):
            bad.append(key)
    return bad


def info(a: Archive, fm: FileMapping) -> list[dict[str, Any]]:
    """One dict per entry of the central directory, in archive order (see
    :meth:`~dafzarr.zipstore.MmapZipStore.info`)."""
    rows = []
    for e in a.entries:
        offset: int | None = None
        error: str | None = None
        if e.refused is not None:
            error = f"entry {e.name!r} is not served: {e.refused}"
        elif not e.is_dir:
            try:
                offset = data_offset(a, fm, e)
            except CorruptArchiveError as exc:
                error = str(exc)
        rows.append({
            "name": e.name, "method": e.method, "compressed_size": e.csize,
            "size": e.usize, "crc32": e.crc, "header_offset": e.lfh_offset,
            "data_offset": offset, "error": error, "refused": e.refused,
        })
    return rows
