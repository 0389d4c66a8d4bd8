"""What an archive holds: byte accounting, CRC checks and a listing of its directory.

The functions behind :meth:`~dafzarr.zipstore.MmapZipStore.space`,
:meth:`~dafzarr.zipstore.MmapZipStore.verify` and :meth:`~dafzarr.zipstore.MmapZipStore.info`;
each reads the :class:`~dafzarr._core.zipstore.state.Archive` and the mapping, and writes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..._posix import FileMapping
from ...errors import CorruptArchiveError, UnsupportedEntryError
from ..crc import crc32
from . import ziprecords as zf
from .lead import leading_bytes
from .read import data_offset, read_entry
from .state import Archive

__all__ = ["ArchiveSpace", "info", "space", "verify"]


@dataclass(frozen=True, slots=True)
class ArchiveSpace:
    """Byte accounting of an archive (:meth:`MmapZipStore.space`).

    Parameters
    ----------
    entries : int
        Live keys.
    live_bytes : int
        Local headers and data of the live entries.
    dead_bytes : int
        Superseded and deleted copies, and other unclaimed bytes among them.
    directory_bytes : int
        Central directory, end records and comment.
    file_size : int
        The file's size once every pending write is committed.
    free_bytes : int, default 0
        Room between the entries and the directory that a writer keeps for its next commits
        (its ``close()`` gives it back; 0 in a closed archive).
    leading_bytes : int, default 0
        Bytes before the archive that are not its own (a self-extracting stub, or the file
        it was appended to): kept by every write and by compaction.

    Raises
    ------
    None
        A plain record.

    Examples
    --------
    >>> with dafzarr.MmapZipStore("accounted.zip", mode="w") as store:
    ...     store["a"] = b"xy"
    >>> with dafzarr.MmapZipStore("accounted.zip") as store:
    ...     print(store.space())
    1 entries: 58 live bytes, 0 dead bytes, 173 bytes of directory, 231 bytes in all
    """

    entries: int
    live_bytes: int
    dead_bytes: int
    directory_bytes: int
    file_size: int
    free_bytes: int = 0
    leading_bytes: int = 0

    def __str__(self) -> str:
        free = f", {self.free_bytes} free bytes" if self.free_bytes else ""
        lead = f"{self.leading_bytes} leading bytes, " if self.leading_bytes else ""
        return (
            f"{self.entries} entries: {lead}{self.live_bytes} live bytes, {self.dead_bytes} "
            f"dead bytes{free}, {self.directory_bytes} bytes of directory, {self.file_size} "
            "bytes in all"
        )


def space(a: Archive, fm: FileMapping) -> ArchiveSpace:
    """How the archive's bytes are used, once the open transaction (if any) commits
    (its free room: as it is before the live directory now)."""
    tx = a.tx
    if tx is not None:
        end, cd_at = tx.write, max(tx.live_cd, tx.write)
    else:
        end = a.data_end if a.unkept_cd_size < 0 else _reader_data_end(a, fm)
        cd_at = a.cd_offset
    live = 0
    for e in a.live_entries():
        if not e.is_dir:
            try:
                live += data_offset(a, fm, e) + e.csize - e.lfh_offset
            except CorruptArchiveError:
                live += e.csize
    directory = a.directory_size() + a.trailer_len()
    lead = (
        a.lead if a.unkept_cd_size < 0 else leading_bytes(fm, a.first_listed, a.cd_offset, a.path)
    )
    return ArchiveSpace(
        entries=len(a.index),
        live_bytes=live,
        dead_bytes=max(end - live - lead, 0),
        directory_bytes=directory,
        file_size=cd_at + directory,
        free_bytes=cd_at - end,
        leading_bytes=lead,
    )


def _reader_data_end(a: Archive, fm: FileMapping) -> int:
    """Where a read-only archive's entries end: after the last listed entry and the dead
    entries that follow it; the bytes from there to the directory are a writer's free room.

    The tail is read with ``pread``, not through the mapping: a writer may have cut it off
    since this handle mapped the file.
    """
    last = max(a.entries, key=lambda e: e.lfh_offset, default=None)
    if last is not None and last.flags & zf.FLAG_DATA_DESCRIPTOR:
        return a.cd_offset  # a descriptor of unknown length follows: no room assumed
    size = fm.size

    def read(offset: int, length: int) -> bytes:
        out = os.pread(fm.fd, length, offset) if 0 <= offset <= size - length else b""
        if len(out) != length:
            raise CorruptArchiveError(f"{a.path}: the file shrank while being read")
        return out

    try:
        pos = 0 if last is None else data_offset(a, fm, last) + last.csize
        while pos < a.cd_offset:
            rec = zf.read_local_record(read, pos, a.cd_offset, a.path)
            if rec is None:
                break
            pos = rec.data_offset + rec.csize
    except (CorruptArchiveError, OSError):
        return a.cd_offset
    return min(pos, a.cd_offset)


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
        rows.append(
            {
                "name": e.name,
                "method": e.method,
                "compressed_size": e.csize,
                "size": e.usize,
                "crc32": e.crc,
                "header_offset": e.lfh_offset,
                "data_offset": offset,
                "error": error,
                "refused": e.refused,
            }
        )
    return rows
