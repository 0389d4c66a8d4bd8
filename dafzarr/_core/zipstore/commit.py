"""The commit protocol: appends keep the file a valid ZIP archive at every instant.

State: committed entries end at ``E`` (where the next local header goes); the live central
directory (CD) sits at ``C >= E`` followed by the 98-byte trailer and the archive comment
(kept from a foreign archive, usually empty), which end at EOF ``S``. The comment is written
before the end record, so a complete end record implies a complete comment. The bytes
``[E, C)`` are *free room* that no entry claims: the next commits write their entries there.
Readers find the live CD through the trailer at EOF, and accept free room before it.
A commit never stores into the bytes of a live entry or of the live CD + trailer:

1. If the new entries' bytes ``[E, W)`` would reach the live CD, first *relocate* it: grow the
   file and copy the live CD + trailer past the old EOF. That copy becomes the live one (it is
   at EOF) and the old one becomes free room. A crash before the copy completes leaves a
   zero (or partly written) tail; recovery scans back to the old, intact trailer.
2. Write each entry's local header, data and CRC at ``W``; they are invisible until step 3.
3. Place the new CD + trailer, one write of it (``need`` bytes in all):

   - *down*, when it fits below the live copy with ``need`` bytes of room left after the
     entries: write it at ``W + need``, then ``ftruncate`` the live copy away (the commit
     point). The room left is where the next commit's entries go, and where :func:`settle`
     moves the directory down to with one write;
   - *up*, otherwise: write it past EOF after a zeroed hole (the commit point: the trailer
     complete at EOF). The old CD + trailer and the hole become free room, enough for the
     next commit to go down again. The hole is about twice this commit's bytes, so
     alternating commits of similar size write the directory once each;
   - *canonical*, when going up would pass ``max_file_size``: right after the data (below
     the live copy, then truncate; or past EOF first, then copied down and truncated).

A batch is steps 1-3 with many entries in step 2: N appends cost O(N) bytes, and a crash
anywhere in the batch rolls back the whole batch. Within each copy the CD is written before
the trailer, so a complete trailer implies a complete CD. ``durable=True`` adds msync/fsync
after step 1, and around the commit point of step 3 (the entries before it), so the order
also holds across power loss. :func:`settle` (at ``close()``) moves the directory right
after the last entry with the same placement rule: a closed archive has exactly the layout
of ``mmap-zip-store`` (entries contiguous, CD right after the last entry).

Reservations (``reserve_entry``) commit an entry whose data is filled later through a
writable view, with CRC 0 until ``patch_entry_crc`` stores the real CRC (local header first,
CD last, so the CD is authoritative). A writable open rolls back unpatched reservations.

Each step is a function of the :class:`~dafzarr._core.zipstore.state.Archive` (the directory in
memory, the open transaction) and the mapping it writes through; the caller holds the lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..._posix import FileMapping
from ..._zipdir import gather_records, renumber
from ..crc import mapped_crc32
from . import ziprecords as zf
from .read import data_offset
from .state import Archive, Txn, live_index

__all__ = [
    "PLAIN_START_LIMIT", "abort", "add_entry", "begin", "commit", "end", "leave_failed",
    "make_room", "mark_unlisted_start", "move_directory", "patch_crc", "place_directory",
    "settle", "write_step", "write_trailer",
]  # fmt: skip

_U32 = struct.Struct("<I")

# Crash-test instrumentation: when set, called with the name of each step of the commit
# protocol just after that step (tests install a hook that SIGKILLs the process).
step_hook: Any = None


def _step(name: str) -> None:
    if step_hook is not None:
        step_hook(name)


def write_trailer(a: Archive, fm: FileMapping, at: int, n: int, cd_size: int, cd_at: int) -> None:
    """The end records (and the archive comment) of a directory at ``cd_at``.

    The comment goes first: a complete end record implies a complete comment.
    """
    if a.comment:
        fm.write(at + zf.TRAILER_SIZE, a.comment)
    fm.write(at, zf.trailer(n, cd_size, cd_at, len(a.comment)))


def _write_past_end(
    a: Archive, fm: FileMapping, at: int, cd: memoryview | bytearray, n: int, step: str
) -> None:
    """Write a directory and its end records at ``at``, the end of the file, with pwrite(2):
    the file grows with what is written (a crash leaves a tail that recovery cuts).

    Unlike room reserved with ``fm.resize`` (``posix_fallocate``), these bytes get their
    blocks only when the kernel writes them back, and a later ``ftruncate`` that cuts the
    copy away frees no allocated extent: a commit that cuts the copy it relocated (every
    single append into an archive whose directory is larger than the entry) no longer waits
    for the file system's journal (milliseconds per commit on ext4).
    """
    size = len(cd)
    fm.pwrite(at, cd)
    _step(step + "cd")
    if a.comment:
        fm.pwrite(at + size + zf.TRAILER_SIZE, a.comment)
    fm.pwrite(at + size, zf.trailer(n, size, at, len(a.comment)))
    _step(step + "trailer")


def begin(a: Archive, fm: FileMapping, batch: bool = False, size_hint: int = 0) -> Txn:
    """Enter the open transaction, opening one if there is none.

    ``size_hint``: about how many bytes the entries this holder writes take, local headers
    included (about 60 bytes and the name each): when the directory moves out of their
    way (:func:`add_entry`), it makes room for exactly them, not room that grows as the
    batch goes and whose unused (allocated) part the commit gives back.
    """
    tx = a.tx
    if tx is None:
        tx = Txn(len(a.entries), len(a.cd), a.data_end, a.data_end, a.cd_offset, fm.size)
        tx.dirty.append((a.data_end, fm.size))
        a.tx = tx
    tx.depth += 1
    tx.batch = tx.batch or batch
    if size_hint > 0:
        tx.reach = max(tx.reach, tx.write + int(size_hint))
    return tx


def make_room(a: Archive, fm: FileMapping, tx: Txn, need: int, room: int, what: str) -> None:
    """Ensure ``[tx.write, tx.write + need)`` is free, relocating the live CD if not."""
    end = tx.write + need
    if end <= tx.live_cd:
        return
    live_len = tx.cd_len0
    tlen = a.trailer_len()
    limit = a.reserve_size() - live_len - tlen
    new_cd = max(tx.live_end, min(end + room, limit))
    new_end = new_cd + live_len + tlen
    a.check_reserve(new_end, what)
    # The room for the entries is allocated (they are stored through the mapping, and a
    # store into a hole of a full disk would raise SIGBUS); the copy of the directory past it
    # grows the file by pwrite (ENOSPC is an error there).
    if new_cd > fm.size:
        fm.resize(new_cd)
    _step("relocate:resized")
    # Views released on the way out, also when a write fails: a view alive in the frames
    # of the exception in flight would keep ``a.cd`` from growing or shrinking after.
    with memoryview(a.cd) as whole, whole[:live_len] as live:
        _write_past_end(a, fm, new_cd, live, tx.n0, "relocate:")
    if a.durable:
        fm.msync(new_cd, live_len + tlen)
        fm.fsync()
    tx.dirty.append((tx.live_cd, tx.live_end))
    tx.live_cd, tx.live_end = new_cd, new_end
    tx.relocated = True


#: Least bytes of the zeroed hole an *up* commit leaves before its directory (on top of
#: twice the commit's own bytes): the next two commits fit in it when they are about as
#: large as this one.
_HOLE_SLACK = 4 << 10


@dataclass(slots=True)
class _Directory:
    """The directory a commit makes live: its bytes and entry count, and, after rewrites
    or deletes, the entries it keeps (installed in memory at the commit point)."""

    cd: memoryview | bytearray
    n: int
    pruned: tuple[bytearray, list[zf.Entry]] | None

    def install(self, a: Archive, tx: Txn) -> None:
        """At the commit point: memory follows the file."""
        if self.pruned is not None:
            data, keep = self.pruned
            a.first_listed = renumber(keep)
            a.entries = keep
            a.cd = data
            a.shadowed = False
            a.dropped_folders.clear()
            tx.pruned = False

    def release(self) -> None:
        """Let go of the view of ``a.cd`` (so that it can grow or shrink again)."""
        if isinstance(self.cd, memoryview):
            self.cd.release()


def _new_directory(a: Archive, tx: Txn) -> _Directory:
    """The directory to place: after a rewrite or delete (or on the first commit to a
    foreign archive that repeats a name) only the live entries, gathered in compiled loops
    (their ``cd_pos`` still describe ``a.cd`` until it is installed); the superseded bytes
    stay in the file as dead space, so views of them stay valid."""
    if tx.pruned or a.shadowed:
        keep = a.live_entries()
        data = gather_records(keep, a.cd)
        return _Directory(data, len(keep), (data, keep))
    return _Directory(memoryview(a.cd), len(a.entries), None)


def _set_live(a: Archive, data_end: int, cd_offset: int) -> None:
    a.generation += 1
    a.data_end = a.limit = data_end
    a.cd_offset = cd_offset
    a.placed = True


def _place_below(a: Archive, fm: FileMapping, tx: Txn, d: _Directory, at: int, step: str) -> None:
    """Write the directory at ``at`` (its bytes end below the live copy), then cut the live
    copy away with ``ftruncate``: the commit point."""
    size = len(d.cd)
    end = at + size + a.trailer_len()
    fm.write(at, d.cd)
    _step(step + "cd")
    write_trailer(a, fm, at + size, d.n, size, at)
    _step(step + "trailer")
    if a.durable:
        fm.msync(tx.start, end - tx.start)
        fm.fsync()
    fm.resize(end)  # commit point: cuts off the old live directory
    tx.committed = True  # (a failure after it must not roll back into the committed bytes)
    d.install(a, tx)
    _set_live(a, tx.write, at)
    _step(step + "truncated")
    if a.durable:
        fm.fsync()


def _place_past_end(a: Archive, fm: FileMapping, tx: Txn, d: _Directory, x: int) -> None:
    """Write the directory at ``x``, past the end of the file, after zeroing the hole up to
    it: the complete trailer at EOF is the commit point, and the old directory becomes
    free room.

    The hole is written, not left sparse: the next entries may be stored into it through
    the mapping, where a store into a hole of a full disk would raise SIGBUS.
    """
    if a.durable and tx.write > tx.start:
        fm.msync(tx.start, tx.write - tx.start)  # the entries before the directory lists them
        fm.fsync()
    if x > tx.live_end:
        fm.pwrite(tx.live_end, bytes(x - tx.live_end))
    _step("commit:up-zeros")
    _write_past_end(a, fm, x, d.cd, d.n, "commit:up-")  # commit point
    tx.committed = True
    d.install(a, tx)
    _set_live(a, tx.write, x)
    if a.durable:
        fm.fsync()


def _place_canonical(a: Archive, fm: FileMapping, tx: Txn, d: _Directory, step: str) -> None:
    """Make the directory live right after the data at ``tx.write``: below the live copy
    when it fits there, else past EOF first (the commit point), then copied down and the
    copy cut off."""
    w, size = tx.write, len(d.cd)
    tlen = a.trailer_len()
    final_end = w + size + tlen
    if final_end <= tx.live_cd:
        _place_below(a, fm, tx, d, w, step)
        return
    x = max(tx.live_end, final_end)
    a.check_reserve(x + size + tlen, "the central directory")
    if x > fm.size:  # the copy-down below stores into [live_end, x) through the mapping
        fm.resize(x)
    _step(step + "x-resized")
    if a.durable and w > tx.start:
        fm.msync(tx.start, w - tx.start)
        fm.fsync()
    _write_past_end(a, fm, x, d.cd, d.n, step + "x-")  # commit point: end records at EOF
    tx.committed = True
    d.install(a, tx)
    _set_live(a, w, x)
    if a.durable:
        fm.fsync()
    fm.write(w, d.cd)
    _step(step + "cd")
    write_trailer(a, fm, w + size, d.n, size, w)
    _step(step + "trailer")
    if a.durable:
        fm.msync(w, size + tlen)
    fm.resize(final_end)
    _set_live(a, w, w)
    _step(step + "truncated")
    if a.durable:
        fm.fsync()


def place_directory(a: Archive, fm: FileMapping, tx: Txn) -> None:
    """Make the new directory live (the commit), with one write of it: down into the free
    room, or up past the end of the file (see the module's step 3)."""
    d = _new_directory(a, tx)
    try:
        _place(a, fm, tx, d)
    finally:
        d.release()


def _place(a: Archive, fm: FileMapping, tx: Txn, d: _Directory) -> None:
    """:func:`place_directory` of the directory ``d``."""
    w, size = tx.write, len(d.cd)
    need = size + a.trailer_len()
    # Down: ``need`` bytes of room stay after the entries (less near max_file_size).
    at = min(w + need, a.max_file_size - need)
    if w <= at and at + need <= tx.live_cd:
        _place_below(a, fm, tx, d, at, "commit:")
        return
    # Up: a hole for about two more commits of this size, unless they are as large as the
    # directory (then writing the directory twice costs no more than zeroing the hole).
    grown = tx.write - tx.start + max(len(a.cd) - tx.cd_len0, 0)
    x = tx.live_end + min(2 * grown + _HOLE_SLACK, max(need, _HOLE_SLACK))
    if x + need <= a.max_file_size:
        _place_past_end(a, fm, tx, d, x)
        return
    _place_canonical(a, fm, tx, d, "commit:")


def move_directory(a: Archive, fm: FileMapping, data_end: int, step: str = "commit:") -> None:
    """Make the in-memory CD live right after ``data_end``, through the canonical placement.

    Used to roll back entries and to close the free room before the directory: the live
    CD is where ``a.cd_offset`` says, and the file ends with its trailer. ``step`` prefixes
    the names the crash tests see.
    """
    tx = Txn(len(a.entries), len(a.cd), data_end, data_end, a.cd_offset, fm.size)
    a.tx = tx
    d = _new_directory(a, tx)
    try:
        _place_canonical(a, fm, tx, d, step)
    finally:
        d.release()
        a.tx = None


def settle(a: Archive, fm: FileMapping) -> None:
    """Move the directory right after the last entry when a commit of this handle left free
    room before it (``close()``): one write of the directory, then ``ftruncate``. The file
    then has exactly the layout of a store that never kept room."""
    if a.tx is None and a.placed and a.data_end < a.cd_offset and not fm.closed:
        move_directory(a, fm, a.data_end, "settle:")


@contextlib.contextmanager
def write_step(
    a: Archive, fm: FileMapping, *, batch: bool = False, keep_open: bool = False
) -> Iterator[Txn]:
    """One write step inside the open transaction (opening one); the caller holds the lock.

    If the step raises, the transaction is abandoned unless something else holds it.
    Otherwise it commits when this step was its outermost holder; with ``keep_open``
    it stays open instead, for the next commit to take along.
    """
    tx = begin(a, fm, batch=batch)
    try:
        yield tx
    except BaseException as exc:
        leave_failed(a, fm, tx, exc)
        raise
    if keep_open:
        tx.depth -= 1
    else:
        end(a, fm, tx)


def leave_failed(a: Archive, fm: FileMapping | None, tx: Txn, exc: BaseException) -> None:
    """A holder of ``tx`` failed: abandon it if nothing else holds it."""
    if tx.depth == 1:
        abort(a, fm, tx, exc)
    else:
        tx.depth -= 1


def end(a: Archive, fm: FileMapping, tx: Txn) -> None:
    """A holder of ``tx`` is done: commit it if that was the last one."""
    tx.depth -= 1
    if tx.depth:
        return
    commit(a, fm, tx)


def commit(a: Archive, fm: FileMapping, tx: Txn) -> None:
    """Make everything ``tx`` wrote durable (one directory write), or abandon it."""
    pruned = tx.pruned or a.shadowed
    try:
        if len(a.entries) != tx.n0 or tx.live_cd != a.cd_offset or pruned:
            place_directory(a, fm, tx)
    except BaseException as exc:
        abort(a, fm, tx, exc)
        raise
    a.tx = None
    tx.done = True
    if a.first_listed > a.dead_prefix:
        mark_unlisted_start(a, fm)


#: How many leading dead bytes may precede the first listed entry: 7-Zip looks for an
#: archive past leading bytes only within its first 8 MiB.
PLAIN_START_LIMIT = 4 << 20
# Bytes that are not plain text (JSON metadata is; compressed or binary chunk data is not,
# and 7-Zip may detect another format in it, such as a zstd frame).
_NOT_TEXT = re.compile(rb"[^\t\n\r\x20-\x7e]")


def mark_unlisted_start(a: Archive, fm: FileMapping) -> None:
    """Mark the local headers before the first listed entry as listed by no directory.

    Their copies stay readable for views and older readers (only the 4 signature bytes
    of each header change, and readers accept the mark); tools that look for an archive
    at the start of the file (7-Zip) then see leading bytes instead of entries missing
    from the directory. 7-Zip finds the archive past such bytes only when they are fewer
    than 8 MiB and hold no signature of another format, which plain-text metadata cannot;
    ``a.plain_start`` records whether that is known to hold (the store renews the archive
    when it is not, see ``ArchiveHandle._renew_start``).
    """
    pos, end = a.dead_prefix, a.first_listed
    plain = a.plain_start and end <= PLAIN_START_LIMIT
    dead = _U32.pack(zf.DEAD_LFH_SIG)
    while pos < end:
        rec = zf.read_local_record(fm.read, pos, end, a.path)
        if rec is None:
            plain = False
            break  # not a record this store wrote: leave the bytes alone
        if plain and (rec.method != 0 or _NOT_TEXT.search(fm.read(rec.data_offset, rec.csize))):
            plain = False
        if not rec.dead:
            fm.write(pos, dead)
        pos = rec.data_offset + rec.csize
    a.dead_prefix = pos
    a.plain_start = plain


def _file_size(fm: FileMapping) -> int:
    """The size of the file: more than ``fm.size`` when a write that grew it failed before
    the mapping followed (the largest we know of, if ``fstat`` fails too)."""
    try:
        return max(fm.size, os.fstat(fm.fd).st_size)
    except OSError:
        return fm.size


def abort(
    a: Archive, fm: FileMapping | None, tx: Txn, failure: BaseException | None = None
) -> None:
    """Forget the entries of a failed transaction; the live CD on disk is still valid."""
    a.tx = None
    tx.done = True
    if tx.committed:
        return  # failed after the commit point: the entries are durable, keep them
    tx.failure = failure or RuntimeError(f"a batch of writes to {a.path} was abandoned")
    if fm is not None and not fm.closed and _file_size(fm) > tx.live_end:
        with contextlib.suppress(OSError):
            fm.resize(tx.live_end)  # drop a half-written copy past the live trailer
    for e in a.entries[tx.n0 :]:
        a.unpatched.discard(e.name)
    del a.entries[tx.n0 :]
    # A copy, not ``del a.cd[...]``: the failed step's frames (kept by the exception in
    # flight) may still hold a view of the directory, which a bytearray cannot be resized
    # under.
    a.cd = a.cd[: tx.cd_len0]
    # Superseded and deleted keys come back: the committed directory still lists them.
    a.index = live_index(a.entries)
    a.first_listed = min((e.lfh_offset for e in a.entries), default=-1)
    a.dropped_folders.clear()
    tx.pruned = False
    a.cd_offset = tx.live_cd
    a.data_end = tx.start
    if fm is not None and not fm.closed and fm.exports == 0 and tx.relocated:
        # Give back the room the relocation took (no view can point into it); without a
        # relocation, the abandoned entries' bytes are free room again as they are.
        with contextlib.suppress(OSError, ValueError):
            # On failure it is still a valid archive, with more free room.
            move_directory(a, fm, tx.start)


#: Most room a batch's relocation of the directory leaves ahead of an entry (allocated).
_ROOM_CAP = 256 << 20


def _page_padding(start: int, page_offset: int) -> int:
    """Padding that puts data that would start at ``start`` at ``page_offset`` within a
    page (0, or at least 4 bytes: the extra field's own header)."""
    pad = (page_offset - start) % _PAGE
    return pad + _PAGE if 0 < pad < 4 else pad


_PAGE = 4096


def add_entry(
    a: Archive,
    fm: FileMapping,
    tx: Txn,
    key: str,
    raw: bytes,
    data: memoryview | None,
    size: int,
    batch_room: int,
    page_offset: int | None = None,
) -> zf.Entry:
    """Write one entry (``data``, or ``size`` zero bytes when None) at ``tx.write``.

    Inside a batch, a relocation of the directory leaves at least ``batch_room`` bytes for
    the entries that follow. ``page_offset`` (a multiple of 8): the data starts at that
    offset within a page (a copy from another file at the same offset within its page
    moves whole pages in the kernel, not two pieces of each).
    """
    w = tx.write
    pad = zf.alignment_padding(w, len(raw))
    if page_offset is not None and page_offset % zf.ALIGNMENT == 0:
        pad = _page_padding(w + zf.LFH_SIZE + len(raw) + 20, page_offset)
    header_len = zf.LFH_SIZE + len(raw) + 20 + pad
    entry_cd_len = zf.CD_SIZE + len(raw) + 28
    tail = len(a.cd) + entry_cd_len + a.trailer_len()  # directory + end records
    # Inside a batch more entries follow: the directory moves far enough ahead for
    # several more of this size, or as much as the batch wrote so far (the commit gives
    # back what they leave unused); or, when the batch announced its size, right past
    # the entries announced (nothing to give back: cutting allocated room costs the file
    # system a journal transaction). The room's blocks are allocated (see
    # FileMapping.resize), so it stays within _ROOM_CAP: a batch holding a 2 GB entry
    # must not need 8 GB more of free disk for a while.
    room = tail
    if tx.batch:
        ahead = min(max(w - tx.start, 4 * (header_len + size)), _ROOM_CAP)
        if tx.reach > w:  # the batch said how far its entries go: room for exactly them
            batch_room = ahead = max(tx.reach - (w + header_len + size), 0) + tail
        room = max(tail, ahead, batch_room)
    a.check_size(w + header_len + size + tail, repr(key))
    make_room(a, fm, tx, header_len + size, room, repr(key))
    offset = w + header_len
    if data is None:
        crc = 0
        for lo, hi in tx.dirty:  # a reservation reads as zeros until it is filled
            start, stop = max(lo, offset), min(hi, offset + size)
            if start < stop:
                fm.zero(start, stop - start)
    else:
        crc = fm.write_crc32(offset, data)
    _step("entry:data")
    fm.write(w, zf.local_header(raw, size, crc, w, pad))
    _step("entry:header")
    record = zf.central_entry(raw, size, crc, w)
    entry = zf.Entry(key, 0, zf.FLAG_UTF8, crc, size, size, w, len(a.cd), len(record), offset)
    a.cd += record
    a.entries.append(entry)
    if a.first_listed < 0:
        a.first_listed = w
    if key in a.index:
        tx.pruned = True  # a newer copy: the next directory lists only this one
        a.unpatched.discard(key)
    a.index[key] = entry
    tx.write = offset + size
    return entry


def patch_crc(a: Archive, fm: FileMapping, e: zf.Entry, value: int | None = None) -> int:
    """Store the CRC-32 of a stored entry's current data (``value``, when the caller
    computed it as it wrote the data): local header first, then the live directory (when
    the entry is committed) and the directory in memory."""
    off = data_offset(a, fm, e)
    if value is None:
        value = mapped_crc32(fm, off, e.csize)
    packed = _U32.pack(value)
    fm.write(e.lfh_offset + zf.LFH_CRC_OFFSET, packed)
    _step("patch:header")
    a.cd[e.cd_pos + zf.CD_CRC_OFFSET : e.cd_pos + zf.CD_CRC_OFFSET + 4] = packed
    tx = a.tx
    live_cd = tx.live_cd if tx is not None else a.cd_offset
    # Committed entries sit in the live directory at the same position as in memory
    # (a transaction only appends records to it until its commit).
    in_live_cd = tx is None or e.cd_pos < tx.cd_len0
    if in_live_cd:
        fm.write(live_cd + e.cd_pos + zf.CD_CRC_OFFSET, packed)
        _step("patch:cd")
    if a.durable:
        fm.msync(off, e.csize)
        fm.msync(e.lfh_offset, zf.LFH_SIZE)
        if in_live_cd:  # (an entry new in a batch has no record there before its commit)
            fm.msync(live_cd + e.cd_pos, e.cd_len)
        fm.fsync()
    e.crc = value
    a.unpatched.discard(e.name)
    return value
