"""Loading an archive for writing: find its directory, and bring an interrupted writer's
archive back to a prefix of what was committed.

:func:`load_writable` reads the trailer at the end of the file; failing that, it scans back
for the latest end record whose directory validates (:func:`scan_for_trailer`) and, failing
that too, rebuilds a directory from the local headers (:func:`salvage`). :func:`recover` then
rolls back entries a crash left incomplete and cuts bytes past the trailer, through the
commit protocol's own placement, and keeps the free room before the directory for the next
commits.
"""

from __future__ import annotations

import errno
import os
import struct
import warnings
from typing import NoReturn

from ..._posix import FileMapping
from ...errors import (
    CorruptArchiveError,
    RecoveryWarning,
    UnsafeEntryNameError,
    UnsupportedEntryError,
)
from ..crc import mapped_crc32
from . import ziprecords as zf
from .commit import move_directory
from .lead import leading_bytes
from .read import data_offset, decoded
from .state import Archive

__all__ = [
    "check_apart", "load_writable", "read_directory", "read_entries", "recover", "salvage", "scan_for_trailer", "write_empty",
]  # fmt: skip

_U32 = struct.Struct("<I")

_SCAN_BUDGET_FACTOR = 4
"""The recovery scan parses candidate directories totalling at most this many times the file's
size (plus 64 MiB)."""


def write_empty(fm: FileMapping, durable: bool) -> None:
    """Make the file an empty archive.

    Truncate, then lay the 98 bytes down with one pwrite: a crash leaves a prefix of the
    empty archive, which a writable open completes (never 98 zero bytes).

    A file that already is the empty archive (mode ``"w"`` on a new path creates one
    first) is left as it is: ext4 remembers a truncation to zero and writes the whole file
    out when it is closed (its guard for files rewritten in place), which made closing a
    store freshly written with 1 GB wait about 0.4 s for the disk.
    """
    size = len(zf.EMPTY_ARCHIVE)
    if fm.size == size and fm.read(0, size) == zf.EMPTY_ARCHIVE:
        if durable:
            fm.fsync()
        return
    fm.resize(0)
    fm.pwrite(0, zf.EMPTY_ARCHIVE)
    if durable:
        fm.fsync()


def read_directory(
    read: zf.ReadAt, tr: zf.Trailer, path: str, *, apart: bool = True
) -> tuple[list[zf.Entry], bytearray]:
    """The entries of the directory ``tr`` points to, and its bytes (the buffer
    :meth:`Archive.install` keeps); ``apart``: checked not to share bytes too."""
    cd = bytearray(read(tr.cd_offset, tr.cd_size))
    entries = zf.parse_central_directory(cd, tr, path)
    if apart:
        zf.check_no_overlap(entries, path)
    return entries, cd


def check_apart(entries: list[zf.Entry], path: str) -> None:
    """Refuse entries of a complete directory that share bytes, saying what to do.

    ``zipfile`` reads such an archive (entry ``a``'s data may hold entry ``b`` whole), but
    the store serves and writes none: overlapping compressed entries are the overlapping-entry
    ZIP bomb, and rebuilding the directory from the local headers, as a recovery does, would
    drop the entries hidden inside others. The directory is complete, so this is how the
    archive was made, not an interrupted write: nothing is recovered or changed.
    """
    try:
        zf.check_no_overlap(entries, path)
    except CorruptArchiveError as exc:
        raise CorruptArchiveError(_shared_bytes(str(exc))) from None


def _shared_bytes(what: str) -> str:
    return (
        f"{what}; the store neither reads nor writes an archive whose entries share bytes "
        "(nothing was changed, and no entry was dropped): extract the entries with another "
        "tool (Python's zipfile reads them) into a new archive"
    )


def _hides_an_entry(a: Archive, fm: FileMapping, e: zf.Entry, limit: int) -> str | None:
    """The name of the entry whose local header lies inside ``e``'s data, when that is all
    that fails ``e``'s check (its header, data and CRC check out up to ``limit``)."""
    inner = e.end_limit
    if inner < 0 or inner >= limit:
        return None
    offset = e.data_offset
    e.end_limit = -1
    try:
        intact = _entry_ok(a, fm, e, limit)
    finally:
        e.end_limit, e.data_offset = inner, offset
    if not intact:
        return None
    return next((o.name for o in a.entries if o.lfh_offset == inner), f"at offset {inner}")


def read_entries(read: zf.ReadAt, tr: zf.Trailer, path: str) -> list[zf.Entry]:
    """The entries of the directory ``tr`` points to, without keeping its bytes (a reader's
    memory then holds the entries and one piece of the directory at a time); not yet
    checked to lie apart (:func:`check_apart`)."""
    return zf.parse_central_directory_in_pieces(read, tr, path)


def refuse_unsafe_names(path: str, names: str) -> NoReturn:
    """Refuse to write next to entries whose names are unsafe (``names`` says which)."""
    raise UnsafeEntryNameError(
        f"{path}: the archive holds entries with unsafe names ({names}), which "
        "dafzarr does not write next to; nothing was changed. Open it read-only (mode "
        "'r') to read every other entry, or copy them into a new archive."
    )


def load_writable(a: Archive, fm: FileMapping) -> None:
    """Load the archive's directory into ``a``, recovering an interrupted writer's archive."""
    size = fm.size
    if size < zf.TRAILER_SIZE and zf.EMPTY_ARCHIVE.startswith(fm.read(0, size)):
        # Interrupted creation (or truncation): the bytes are a prefix of an empty archive.
        write_empty(fm, a.durable)
        size = fm.size
    read = fm.read
    try:
        tr = zf.find_trailer(read, size, a.path)
        entries, cd = read_directory(read, tr, a.path, apart=False)
    except CorruptArchiveError as first:
        found = scan_for_trailer(a, fm)
        if found is None:
            if salvage(a, fm):
                return
            raise CorruptArchiveError(
                f"{first}\nno valid central directory was found anywhere in the file, "
                "and it does not start with intact local headers; it cannot be recovered "
                "automatically"
            ) from None
        tr, entries, cd = found
    else:
        check_apart(entries, a.path)  # complete: refused, never rebuilt without some
    a.install(entries, cd, tr, fm.read(tr.end - tr.comment, tr.comment))
    if a.refused:  # an intact archive, or not: either way, write nothing
        refuse_unsafe_names(a.path, a.refused_list())
    a.lead = a.dead_prefix = leading_bytes(fm, a.first_listed, a.cd_offset, a.path)
    if a.shadowed:
        check_newest_copies(a, fm)
    recover(a, fm, tr)


def check_newest_copies(a: Archive, fm: FileMapping) -> None:
    """Refuse to write an archive whose directory lists a name twice when the newer record
    does not describe that name's data: the next commit would keep it and drop the older
    copy, which may be the only intact one (a damaged directory, not a superseded copy).
    """
    seen: set[str] = set()
    for e in a.entries:
        if e.refused is not None or e.is_dir:
            continue
        if e.name in seen:
            newest = a.index[e.name]
            try:
                data_offset(a, fm, newest)
            except CorruptArchiveError as exc:
                raise CorruptArchiveError(
                    f"{exc}\n{a.path} lists {e.name!r} more than once, and a commit would "
                    "keep only this record: the archive is not opened for writing (it can "
                    "still be read)"
                ) from None
        seen.add(e.name)


def salvage(a: Archive, fm: FileMapping) -> bool:
    """Rebuild the directory by walking local headers from offset 0 (last resort).

    Keeps the longest run of entries whose headers are intact and whose data checks
    (CRC of stored data; decoding with CRC check for compressed data); of several copies
    of a key, the newest. Copies marked as unlisted are skipped, but a deleted key whose
    copy carries no mark comes back: the warning says so. Returns False when the file
    does not start with such an entry.
    """
    size = fm.size
    pos = 0
    found: dict[str, tuple[zf.Entry, bytes]] = {}
    copies = 0
    while True:
        rec = zf.read_local_record(fm.read, pos, size, a.path)
        if rec is None:
            break
        if rec.dead:  # a copy that was deleted or superseded: not brought back
            pos = rec.data_offset + rec.csize
            continue
        e = zf.Entry(
            rec.name,
            rec.method,
            rec.flags,
            rec.crc,
            rec.csize,
            rec.usize,
            pos,
            0,
            0,
            rec.data_offset,
        )
        try:
            if rec.method == 0:
                ok = (
                    rec.csize == rec.usize
                    and mapped_crc32(fm, rec.data_offset, rec.csize) == rec.crc
                )
            else:
                decoded(a, e, fm.read(rec.data_offset, rec.csize))
                ok = True
        except (CorruptArchiveError, UnsupportedEntryError):
            ok = False
        if not ok:
            break
        if rec.refused is not None:
            # An intact entry the rebuilt directory could not list: rebuilding would
            # drop it, and cutting the walk here would drop every entry after it.
            refuse_unsafe_names(a.path, f"{rec.name!r} ({rec.refused}) at offset {pos}")
        record = zf.central_entry(
            rec.raw_name,
            rec.csize,
            rec.crc,
            pos,
            method=rec.method,
            usize=rec.usize,
            flags=rec.flags,
        )
        copies += rec.name in found
        found.pop(rec.name, None)  # a newer copy: it goes last, in file order
        found[rec.name] = (e, record)
        pos = rec.data_offset + rec.csize
    if not found:
        return False
    cd = bytearray()
    entries: list[zf.Entry] = []
    for e, record in found.values():
        e.cd_pos, e.cd_len = len(cd), len(record)
        cd += record
        entries.append(e)
    final_end = pos + len(cd) + zf.TRAILER_SIZE  # the comment went with the end record
    if final_end > size:
        a.check_size(final_end, "the rebuilt central directory")
        fm.resize(final_end)
    fm.write(pos, cd)
    fm.write(pos + len(cd), zf.trailer(len(entries), len(cd), pos))
    if final_end < size:
        fm.resize(final_end)
    if a.durable:
        fm.fsync()
    a.install(entries, bytes(cd), zf.Trailer(pos, len(cd), len(entries), pos, final_end))
    a.data_end = pos
    older = (
        f"; {copies} older copies of rewritten keys were left out, and keys deleted "
        "since their last write may have come back"
        if copies
        else ""
    )
    warnings.warn(
        f"{a.path}: no valid central directory was found; rebuilt it from the local "
        f"headers of {len(entries)} intact entries (anything after them was dropped"
        f"{older})",
        RecoveryWarning,
        stacklevel=5,
    )
    return True


def scan_for_trailer(
    a: Archive, fm: FileMapping
) -> tuple[zf.Trailer, list[zf.Entry], bytearray] | None:
    """The latest end record in the file whose directory validates, at any distance.

    Hostile bytes may hold many end records, each claiming a different large directory:
    the directories copied and parsed add up to at most ``_SCAN_BUDGET_FACTOR`` times the
    file's size (plus 64 MiB), after which the scan gives up (None), so refusing such a
    file costs time linear in its size.
    """
    sig = _U32.pack(zf.EOCD_SIG)
    cd_sig = _U32.pack(zf.CD_SIG)
    end = fm.size
    rejected: set[tuple[int, int, int]] = set()
    budget = _SCAN_BUDGET_FACTOR * fm.size + (64 << 20)
    while True:
        pos = fm.rfind(sig, 0, end)
        if pos < 0:
            return None
        end = pos + len(sig) - 1
        try:
            tr = zf.read_trailer_at(fm.read, fm.size, pos, a.path)
        except CorruptArchiveError:
            continue
        claim = (tr.cd_offset, tr.cd_size, tr.n_entries)
        # Cheap rejections first: a directory that does not start with a record, or one
        # already refused for an earlier candidate, is never copied and parsed again.
        if claim in rejected or (tr.n_entries and fm.read(tr.cd_offset, 4) != cd_sig):
            continue
        budget -= tr.cd_size
        if budget < 0:
            return None
        try:
            entries, cd = read_directory(fm.read, tr, a.path)
        except CorruptArchiveError:
            rejected.add(claim)
            continue
        return tr, entries, cd


def _entry_ok(a: Archive, fm: FileMapping, e: zf.Entry, limit: int) -> bool:
    """Whether the entry's local header and (stored) data check out; a local header whose
    CRC an interrupted patch left stale is repaired from the directory's."""
    if not zf.local_header_matches(fm.read, e, limit):
        return False
    if e.method != 0 or e.flags & zf.FLAG_ENCRYPTED:
        return True  # foreign compressed entries are taken as valid without decoding
    if e.csize != e.usize:
        return False
    if e.end_limit >= 0:
        limit = min(limit, e.end_limit)
    try:
        off = zf.resolve_data_offset(fm.read, e, limit, a.path)
    except CorruptArchiveError:
        return False
    e.data_offset = off
    if mapped_crc32(fm, off, e.csize) != e.crc:
        return False
    if not e.flags & zf.FLAG_DATA_DESCRIPTOR and zf.local_crc(fm.read, e) != e.crc:
        # Interrupted CRC patch: the directory's CRC is authoritative; repair the header.
        fm.write(e.lfh_offset + zf.LFH_CRC_OFFSET, _U32.pack(e.crc))
    return True


def _entry_end(a: Archive, fm: FileMapping, e: zf.Entry, limit: int) -> int:
    if e.end_limit >= 0:
        limit = min(limit, e.end_limit)
    if e.data_offset < 0:
        e.data_offset = zf.resolve_data_offset(fm.read, e, limit, a.path)
    return e.data_offset + e.csize


def recover(a: Archive, fm: FileMapping, tr: zf.Trailer) -> None:
    """Roll back incomplete entries and cut bytes past the trailer ``tr`` (a
    :class:`RecoveryWarning` says what); find where the next entry goes, keeping the free
    room before the directory."""
    entries = a.entries
    limit = tr.cd_offset
    n = len(entries)
    first_bad = n
    while first_bad > 0 and not _entry_ok(a, fm, entries[first_bad - 1], limit):
        first_bad -= 1
    for i in range(first_bad):
        e = entries[i]
        if e.crc == 0 and e.csize > 0 and e.method == 0 and not _entry_ok(a, fm, e, limit):
            first_bad = i  # an unpatched reservation followed by other entries
            break
    for e in entries[first_bad:]:
        inner = _hides_an_entry(a, fm, e, limit)
        if inner is not None:  # intact, with another entry inside: never rolled back
            raise CorruptArchiveError(
                _shared_bytes(
                    f"{a.path}: not a valid ZIP archive: entries {e.name!r} and {inner!r} overlap"
                )
            )
    dropped = [e.name for e in entries[first_bad:]]
    junk = fm.size - tr.end
    # Where the next entry goes: right after the last kept entry's data (reusing any gap
    # an interrupted commit left before the directory), unless that entry is followed
    # by a data descriptor of unknown length.
    kept = entries[:first_bad]
    data_end = a.lead
    if kept:
        last = max(kept, key=lambda e: e.lfh_offset)
        data_end = _entry_end(a, fm, last, limit)
        if last.flags & zf.FLAG_DATA_DESCRIPTOR:
            # A data descriptor of 12 to 24 bytes follows: keep clear of all of it, or
            # leave the directory where it is when nothing is rolled back.
            data_end = min(data_end + 24, tr.cd_offset) if dropped else tr.cd_offset
    if dropped:
        cut = entries[first_bad].cd_pos
        del a.entries[first_bad:]
        del a.cd[cut:]
        a.install(a.entries, bytes(a.cd), tr, a.comment)
        if junk:
            fm.resize(tr.end)
        move_directory(a, fm, data_end)
    elif junk:
        fm.resize(tr.end)
        if a.durable:
            fm.fsync()
    # Dead entries (deleted, superseded) may sit between the last listed entry and the
    # directory: they are committed bytes that a reader may still map, so they stay. The
    # rest up to the directory is free room: a writer's room between commits (a handle
    # that was not closed) or an interrupted commit's leftovers (old directories, zeros,
    # entries it never committed). The next commits write into it; close() gives back what
    # they leave.
    if not dropped and data_end < a.cd_offset:
        data_end = _skip_local_records(a, fm, data_end, a.cd_offset)
    gap = a.cd_offset - data_end if not dropped else 0
    if gap > 0 and not a.entries:
        # No entry: make it the plain empty archive (unzip rejects an empty archive whose
        # directory is not at offset 0), with the commit's crash-safe placement.
        move_directory(a, fm, data_end)
    elif gap > 0:
        _back_free_room(a, fm, data_end, gap)
        gap = 0
    a.data_end = min(data_end, a.cd_offset)
    if dropped or junk or gap > 0:
        what = []
        if dropped:
            what.append(f"rolled back {len(dropped)} incomplete entries {dropped[:10]!r}")
        if junk:
            what.append(f"removed {junk} bytes after the end of the archive")
        if gap > 0:
            what.append(f"closed a gap of {gap} bytes before the central directory")
        warnings.warn(
            f"{a.path}: recovered from an interrupted write: " + "; ".join(what),
            RecoveryWarning,
            stacklevel=5,
        )


def _back_free_room(a: Archive, fm: FileMapping, start: int, length: int) -> None:
    """Allocate the blocks of the free room ``[start, start + length)``: the next entries
    are stored into it through the mapping, where a store into a hole of a full disk would
    raise SIGBUS (a power loss may leave holes where zeros were written). Allocated blocks
    cost nothing more; filesystems without ``fallocate`` are left as they are."""
    try:
        os.posix_fallocate(fm.fd, start, length)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise OSError(
                exc.errno,
                f"{a.path}: cannot allocate the free room before the central "
                f"directory ({length} bytes): {exc.strerror}",
                a.path,
            ) from None


def _skip_local_records(a: Archive, fm: FileMapping, pos: int, limit: int) -> int:
    """The end of the run of complete local records that starts at ``pos``."""
    while pos < limit:
        rec = zf.read_local_record(fm.read, pos, limit, a.path)
        if rec is None:
            break
        pos = rec.data_offset + rec.csize
    return pos
