"""MmapZipStore: an append-only Zarr store over one memory-mapped ZIP archive.

Reads are zero-copy views of one mapping whose base address never moves while the file
grows; appends keep the file a valid ZIP archive at every instant, so a process killed at
any point leaves an archive that the next writable open recovers to a prefix of what was
committed.

--- The commit protocol -------------------------------------------------------------------

State: committed entries end at ``E`` (where the next local header goes); the live central
directory (CD) sits at ``C >= E`` followed by the 98-byte trailer and the archive comment
(kept from a foreign archive, usually empty), which end at EOF ``S``. The comment is written
before the end record, so a complete end record implies a complete comment.
Readers find the live CD through the trailer at EOF. A commit never stores into the bytes of
the live CD + trailer:

1. If the new entries' bytes ``[E, W)`` would reach the live CD, first *relocate* it: grow the
   file and copy the live CD + trailer past the old EOF. That copy becomes the live one (it is
   at EOF) and the old one becomes dead space. A crash before the copy completes leaves a
   zero (or partly written) tail; recovery scans back to the old, intact trailer.
2. Write each entry's local header and data at ``W``; they are invisible until step 3.
3. Place the new CD + trailer right after the data. If that range is below the live copy,
   write it there, then ``ftruncate`` the live copy away: the truncate is the commit point.
   Otherwise write it past EOF first (the commit point: it is complete and at EOF), then copy
   it down and truncate.

A batch is steps 1-3 with many entries in step 2: N appends cost O(N) bytes, and a crash
anywhere in the batch rolls back the whole batch. Within each copy the CD is written before
the trailer, so a complete trailer implies a complete CD. ``durable=True`` adds msync/fsync
after steps 1 and 3 so the order also holds across power loss. The final bytes are exactly
the layout of ``mmap-zip-store`` (entries contiguous, CD right after the last entry).

Reservations (``reserve_entry``) commit an entry whose data is filled later through a
writable view, with CRC 0 until ``patch_entry_crc`` stores the real CRC (local header first,
CD last, so the CD is authoritative). A writable open rolls back unpatched reservations.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import math
import os
import struct
import threading
import time
import types
import warnings
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import numpy as np
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from .._addrspace import fitting_max_file_size, probe_reservation, reservation_error
from .._byteranges import byte_range_bounds as _slice
from .._posix import FileMapping, crc32
from .._zipdecode import decode_entry
from ..errors import (
    AppendOnlyError,
    ArchiveLockedError,
    CorruptArchiveError,
    EntryExistsError,
    RecoveryWarning,
    RefusedEntryWarning,
    UnsafeEntryNameError,
    UnsupportedEntryError,
)
from . import _format as zf
from ._copy import CompactMethod, pack_directory, restart_if_empty

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["ArchiveSpace", "MmapZipStore"]

Mode = Literal["r", "r+", "w+", "w"]
MODES: tuple[str, ...] = ("r", "r+", "w+", "w")
DEFAULT_MAX_FILE_SIZE = 1 << 40
# Decoded size above which a compressed foreign entry is refused (zip-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 1 << 34
# How long a read-only open retries an archive whose end is not a valid trailer (a writer
# in another process may be in the middle of a commit).
_READ_RETRY_SECONDS = 1.0
_READ_SETTLE_SECONDS = 0.02
# Appends at least this large run off the event loop.
_THREAD_THRESHOLD = 1 << 20
# How long a commit waits for concurrent large writes to join it, and how often it looks.
_GROUP_WAIT, _GROUP_POLL = 0.02, 0.0002
_U32 = struct.Struct("<I")

# Crash-test instrumentation: when set, called with the name of each step of the commit
# protocol just after that step (tests install a hook that SIGKILLs the process).
_step_hook: Any = None


def _step(name: str) -> None:
    if _step_hook is not None:
        _step_hook(name)


@dataclass(slots=True)
class _Txn:
    """An open transaction: entries being appended and where the live CD currently is."""

    n0: int  # entries committed when it began
    cd_len0: int  # bytes of CD committed when it began
    start: int  # data end when it began
    write: int  # where the next local header goes
    live_cd: int  # offset of the live CD
    live_end: int  # EOF (end of the live trailer)
    dirty: list[tuple[int, int]] = field(default_factory=list)  # ranges holding stale bytes
    depth: int = 0
    batch: bool = False
    committed: bool = False  # the new directory is live (past the commit point)
    pruned: bool = False  # an entry was superseded or deleted: the next CD leaves it out
    done: bool = False  # committed, or abandoned (then ``failure`` says why)
    failure: BaseException | None = None


def _as_bytes_view(data: Any) -> memoryview:
    """A flat unsigned-byte view of a bytes-like object or numpy array, without a copy."""
    if isinstance(data, Buffer):
        data = data.as_buffer_like()
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return memoryview(data.reshape(-1).view(np.uint8))
    try:
        mv = memoryview(data)
    except TypeError:
        raise TypeError(
            f"expected a bytes-like object or numpy array, got {type(data).__name__}"
        ) from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv


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


def _live_index(entries: Iterable[zf.Entry]) -> dict[str, zf.Entry]:
    """Key -> entry for the non-directory entries that are served (names not refused); the
    last of duplicate names wins."""
    return {e.name: e for e in entries if not e.is_dir and e.refused is None}


def _encode_key(key: str, path: str) -> bytes:
    if not isinstance(key, str):
        raise TypeError(f"keys are str, got {type(key).__name__}: {key!r}")
    if not key:
        raise ValueError(f"{path}: empty key")
    if key.endswith("/") or "//" in key:
        raise ValueError(f"{path}: invalid key {key!r} (empty path component)")
    reason = zf.unsafe_name_reason(key)
    if reason is not None:
        raise ValueError(f"{path}: invalid key {key!r}: {reason.replace('its name', 'it')}")
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{path}: key is not encodable as UTF-8: {key!r}") from None
    if len(raw) > zf.MAX_NAME:
        raise ValueError(
            f"{path}: key is {len(raw)} bytes long in UTF-8; ZIP names are limited to "
            f"{zf.MAX_NAME} bytes: {key[:60]!r}..."
        )
    return raw


def _writer_lock_held(st: os.stat_result) -> bool | None:
    """Whether some process holds a writer's ``flock`` on the file ``st`` describes.

    Read from Linux's ``/proc/locks`` (lines such as ``1: FLOCK ADVISORY WRITE 4242
    fd:01:1311269 0 EOF``); None where that table cannot be read.
    """
    try:
        with open("/proc/locks", "rb") as f:
            table = f.read()
    except OSError:
        return None
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}".encode()
    for line in table.splitlines():
        fields = line.split()
        if ident in fields and b"FLOCK" in fields and b"WRITE" in fields and b"->" not in fields:
            return True
    return False


def _create_empty(path: str) -> None:
    """Create a 98-byte empty archive at ``path`` atomically, unless a file is there."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(zf.EMPTY_ARCHIVE)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


class MmapZipStore(Store):
    """An append-only Zarr store over one ZIP archive, served zero-copy from a memory map.

    Parameters
    ----------
    path
        The archive file.
    mode
        ``"r"`` read-only; ``"r+"`` read-write, the file must exist; ``"w+"`` read-write,
        created if missing; ``"w"`` read-write, created or truncated to an empty archive.
    read_only
        Overrides ``mode``: ``True`` opens read-only, ``False`` writable (``"r"`` becomes
        ``"r+"``). Default: read-only exactly when ``mode == "r"``.
    max_file_size
        The largest size the archive may reach while this handle is open; a writable open
        reserves twice as much address space (reserving costs no memory). Default: 1 TiB,
        or less under an address-space limit (``ulimit -v``): a quarter of the address
        space still free. A reservation that fails raises
        :class:`~dafzarr.errors.AddressSpaceError` naming the size and this option.
    durable
        Also ``msync``/``fsync`` at the protocol's ordering points, so that a power loss
        (not only a process crash) leaves a prefix of the committed entries.
    max_decompressed_size
        Compressed foreign entries that claim to decode to more bytes are refused. Below
        it, memory follows what an entry's data proves, not what its record claims (see
        :mod:`dafzarr._zipdecode`): a claim the method cannot produce from the compressed
        bytes is refused before decoding; an entry claiming more than four times its
        compressed size plus 256 KiB is decoded twice, first in 64 KiB pieces that are
        checked (length, CRC-32) and discarded, then into one buffer of the claimed size.
    append_only
        Refuse to rewrite or delete an existing entry
        (:class:`~dafzarr.errors.AppendOnlyError` naming the key), for write-once archives.
        By default a rewrite appends a newer copy and a delete drops the key; the next
        commit lists only live entries, and the old bytes stay in the file as dead space
        (see :meth:`space`) until :meth:`compact`.

    Notes
    -----
    The store is a :class:`zarr.abc.store.Store` (use it with ``zarr.open_group`` and
    friends) and also a synchronous mapping: ``store[key]`` returns a read-only zero-copy
    ``memoryview`` (decoded bytes for compressed foreign entries), ``store[key] = data``
    appends, ``key in store``, ``iter(store)``, ``len(store)``.

    The constructor opens the archive: a writable open takes an exclusive ``flock`` (a
    second one, in any process, raises :class:`~dafzarr.errors.ArchiveLockedError` at
    once), recovers an interrupted writer's archive, and mode ``"w"`` empties the archive.
    Read-only handles take no lock and see the archive as it was when they opened. A store
    that was unpickled opens at its first use. After :meth:`close`, the next use opens the
    archive again (without emptying it).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Mode = "r",
        *,
        read_only: bool | None = None,
        max_file_size: int | None = None,
        durable: bool = False,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED,
        append_only: bool = False,
    ) -> None:
        if max_file_size is None:
            max_file_size = fitting_max_file_size(DEFAULT_MAX_FILE_SIZE)
        self._configure(
            path, mode, read_only, max_file_size, durable, max_decompressed_size, append_only
        )
        # Open now: a writable store holds the archive's lock from here on (a second
        # writer is refused at once), and mode "w" has emptied the archive when this returns.
        self._open_sync()

    def _configure(
        self,
        path: str | os.PathLike[str],
        mode: Mode,
        read_only: bool | None,
        max_file_size: int,
        durable: bool,
        max_decompressed_size: int,
        append_only: bool,
    ) -> None:
        """Set the options and check the path; open nothing."""
        if mode not in MODES:
            raise ValueError(f"invalid mode: {mode!r} (expected one of 'r', 'r+', 'w+', 'w')")
        if read_only is None:
            read_only = mode == "r"
        elif read_only:
            mode = "r"
        elif mode == "r":
            mode = "r+"
        if max_file_size <= 0:
            raise ValueError(f"max_file_size must be positive, got {max_file_size}")
        super().__init__(read_only=read_only)
        self.path = os.path.abspath(os.fspath(path))
        self.mode: Mode = mode
        self.max_file_size = int(max_file_size)
        self.durable = bool(durable)
        self.max_decompressed_size = int(max_decompressed_size)
        self.append_only = bool(append_only)
        self._truncate_on_open = mode == "w"
        self._lock = threading.RLock()
        self._fm: FileMapping | None = None
        self._staging = 0  # large writes being copied in worker threads now (see set)
        self._reset_state()
        if mode in ("r", "r+") and not os.path.exists(self.path):
            raise FileNotFoundError(errno.ENOENT, f"no such file: {self.path}", self.path)

    def _reset_state(self) -> None:
        # Entries in central-directory order (ascending local-header offset for the entries
        # this store writes); after a rewrite or delete, until the next commit, the list
        # still holds the superseded entries, which ``_index`` no longer points to.
        self._entries: list[zf.Entry] = []
        # Key -> its live entry. Readers look keys up without the lock: one dict lookup.
        self._index: dict[str, zf.Entry] = {}
        self._shadowed = False  # the directory repeats a name (a foreign archive)
        # Lowest local-header offset the directory lists (-1: none), and how far the local
        # headers before it are marked as listed by no directory.
        self._first_listed = -1
        self._dead_prefix = 0
        self._comment = b""
        self._cd = bytearray()
        self._cd_offset = 0
        self._data_end = 0
        self._limit = 0
        self._unpatched: set[str] = set()
        self._tx: _Txn | None = None
        # Folder entries (``zip -r`` writes them) under deleted prefixes: the next directory
        # leaves them out.
        self._dropped_folders: set[str] = set()

    # --- Opening ------------------------------------------------------------------------

    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> MmapZipStore:
        """Construct (and so open) a store: zarr's ``Store.open``."""
        return cls(*args, **kwargs)

    async def _open(self) -> None:
        # After close(), or for a store made by with_read_only() or unpickled: open now
        # (mode "w" empties the archive only at its first open).
        if self._is_open:
            raise ValueError("store is already open")
        self._ensure_open_sync()

    def _open_sync(self) -> None:
        with self._lock:
            if self._is_open:
                raise ValueError("store is already open")
            if self.read_only:
                fm = self._open_read_only()
            else:
                # Refuse an address-space reservation that can't succeed before creating
                # anything (under ulimit -v), with an error that names max_file_size.
                probe_reservation(self.path, self.max_file_size, self._reserve_size())
                if self.mode in ("w+", "w") and not os.path.exists(self.path):
                    _create_empty(self.path)
                fm = self._map_writable()
                try:
                    if self._truncate_on_open:
                        self._write_empty(fm)
                    self._load_writable(fm)
                except BaseException:
                    self._reset_state()
                    fm.close()
                    raise
                self._truncate_on_open = False
            self._fm = fm
            self._is_open = True

    def _map_writable(self) -> FileMapping:
        """Map the archive writable, holding its lock, as it is at the path now.

        A compaction replaces the file by a rename: a lock won on the file it replaced
        (opened just before the rename) is let go, and the new file is opened instead.
        """
        while True:
            try:
                fm = FileMapping(self.path, True, self._reserve_size())
            except BlockingIOError as e:
                raise ArchiveLockedError(
                    e.errno,
                    f"{self.path} is already open for writing (by this or another "
                    "process); an archive has one writer at a time",
                    self.path,
                ) from None
            except OSError as e:
                if e.errno != errno.ENOMEM:
                    raise
                raise reservation_error(
                    self.path, self.max_file_size, self._reserve_size()
                ) from None
            try:
                here = os.stat(self.path)
            except FileNotFoundError:
                here = None
            mapped = os.fstat(fm.fd)
            if here is not None and (here.st_dev, here.st_ino) == (mapped.st_dev, mapped.st_ino):
                return fm
            fm.close()
            if here is None:
                raise FileNotFoundError(errno.ENOENT, f"no such file: {self.path}", self.path)

    def _ensure_open_sync(self) -> FileMapping:
        if not self._is_open:
            with self._lock:  # threads that arrive together open the store once
                if not self._is_open:
                    self._open_sync()
        assert self._fm is not None
        return self._fm

    def _check_writable_sync(self) -> FileMapping:
        self._check_writable()
        return self._ensure_open_sync()

    def _write_empty(self, fm: FileMapping) -> None:
        # Truncate, then lay the 98 bytes down with one pwrite: a crash leaves a prefix of
        # the empty archive, which a writable open completes (never 98 zero bytes).
        fm.resize(0)
        fm.pwrite(0, zf.EMPTY_ARCHIVE)
        if self.durable:
            fm.fsync()

    def _install(
        self, entries: list[zf.Entry], cd: bytes, tr: zf.Trailer, comment: bytes = b""
    ) -> None:
        self._comment = comment
        self._entries = entries
        self._cd = bytearray(cd)
        self._cd_offset = tr.cd_offset
        self._data_end = tr.cd_offset
        self._limit = tr.cd_offset
        self._index = _live_index(entries)
        self._refused = [e for e in entries if e.refused is not None]
        self._shadowed = len(self._index) != sum(
            1 for e in entries if not e.is_dir and e.refused is None
        )
        self._first_listed = min((e.lfh_offset for e in entries), default=-1)

    def _parse(self, read: zf.Reader, tr: zf.Trailer) -> tuple[list[zf.Entry], bytes]:
        cd = read(tr.cd_offset, tr.cd_size)
        entries = zf.parse_central_directory(cd, tr, self.path)
        zf.check_no_overlap(entries, self.path)
        return entries, cd

    def _open_read_only(self) -> FileMapping:
        """Map the archive and load its directory, waiting out a writer's commit.

        A writer in another process may be between two steps of a commit: the file grown
        and its end not yet a complete trailer, or shrinking under the reader. Such a state
        lasts milliseconds, so while a writer holds the archive's lock a failed load is
        retried on a fresh mapping (for up to ``_READ_RETRY_SECONDS``). With no writer, a
        damaged file (an interrupted writer's archive, say) is refused at once, after one
        more look in case the writer had just finished. Where the lock cannot be seen (no
        ``/proc/locks``), a load is retried while the file keeps changing and refused once
        it stays the same for ``_READ_SETTLE_SECONDS``.
        """
        start = time.monotonic()
        settled = start
        seen: tuple[int, int, int, bytes] | None = None
        pause = 0.0005
        last_look = False
        while True:
            fm = FileMapping(self.path, False, 0)
            try:
                self._load_read_only(fm)
                return fm
            except CorruptArchiveError:
                held = _writer_lock_held(os.fstat(fm.fd))
                fm.close()
                self._reset_state()
                now = time.monotonic()
                if held is False:
                    if last_look:
                        raise
                    last_look = True
                    continue
                last_look = False
                if held is None:
                    current = self._fingerprint()
                    if current != seen:
                        seen, settled = current, now
                    elif now - settled >= _READ_SETTLE_SECONDS:
                        raise
                if now - start >= _READ_RETRY_SECONDS:
                    raise
            except BaseException:
                fm.close()
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def _fingerprint(self) -> tuple[int, int, int, bytes]:
        """What changes while a writer commits: size, times and the last bytes."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                tail = os.pread(f.fileno(), 4096, max(st.st_size - 4096, 0))
        except OSError:
            return (-1, -1, -1, b"")
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, tail)

    def _load_read_only(self, fm: FileMapping) -> None:
        # The directory is read with pread, not through the mapping: a writer in another
        # process may be in the middle of a commit and shrink the file past what we mapped.
        fd, size = fm.fd, fm.size

        def read(offset: int, length: int) -> bytes:
            if offset < 0 or length < 0 or offset + length > size:
                raise zf._bad(self.path, "a record points outside the file")
            out = os.pread(fd, length, offset)
            if len(out) != length:
                raise CorruptArchiveError(f"{self.path}: the file shrank while being read")
            return out

        try:
            tr = zf.find_trailer(read, size, self.path)
            entries, cd = self._parse(read, tr)
        except CorruptArchiveError as e:
            raise CorruptArchiveError(
                f"{e}\n(if a writer was interrupted, a writable open - mode 'r+' - recovers "
                f"the archive, or run: dafzarr zip repair {self.path})"
            ) from None
        self._install(entries, cd, tr, read(tr.end - tr.comment, tr.comment))
        if self._refused:
            warnings.warn(
                f"{self.path}: entries whose names are unsafe are not served: "
                f"{self._refused_list()}",
                RefusedEntryWarning,
                stacklevel=5,
            )

    def _refused_list(self, most: int = 5) -> str:
        parts = [f"{e.name!r} ({e.refused})" for e in self._refused[:most]]
        more = len(self._refused) - most
        return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")

    def _refuse_unsafe_names(self, names: str) -> NoReturn:
        raise UnsafeEntryNameError(
            f"{self.path}: the archive holds entries with unsafe names ({names}), which "
            "dafzarr does not write next to; nothing was changed. Open it read-only (mode "
            "'r') to read every other entry, or copy them into a new archive."
        )

    def _load_writable(self, fm: FileMapping) -> None:
        size = fm.size
        if size < zf.TRAILER_SIZE and zf.EMPTY_ARCHIVE.startswith(fm.read(0, size)):
            # Interrupted creation (or truncation): the bytes are a prefix of an empty archive.
            self._write_empty(fm)
            size = fm.size
        read = fm.read
        try:
            tr = zf.find_trailer(read, size, self.path)
            entries, cd = self._parse(read, tr)
        except CorruptArchiveError as first:
            found = self._scan_for_trailer(fm)
            if found is None:
                if self._salvage(fm):
                    return
                raise CorruptArchiveError(
                    f"{first}\nno valid central directory was found anywhere in the file, "
                    "and it does not start with intact local headers; it cannot be recovered "
                    "automatically"
                ) from None
            tr, entries, cd = found
        self._install(entries, cd, tr, fm.read(tr.end - tr.comment, tr.comment))
        if self._refused:  # an intact archive, or not: either way, write nothing
            self._refuse_unsafe_names(self._refused_list())
        self._recover(fm, tr)

    def _salvage(self, fm: FileMapping) -> bool:
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
            rec = zf.read_local_record(fm.read, pos, size, self.path)
            if rec is None:
                break
            if rec.dead:  # a copy that was deleted or superseded: not brought back
                pos = rec.data_offset + rec.csize
                continue
            e = zf.Entry(
                rec.name, rec.method, rec.flags, rec.crc, rec.csize, rec.usize, pos, 0, 0,
                rec.data_offset,
            )
            try:
                if rec.method == 0:
                    ok = rec.csize == rec.usize and fm.crc32(rec.data_offset, rec.csize) == rec.crc
                else:
                    self._decompress(e, fm.read(rec.data_offset, rec.csize))
                    ok = True
            except (CorruptArchiveError, UnsupportedEntryError):
                ok = False
            if not ok:
                break
            if rec.refused is not None:
                # An intact entry the rebuilt directory could not list: rebuilding would
                # drop it, and cutting the walk here would drop every entry after it.
                self._refuse_unsafe_names(f"{rec.name!r} ({rec.refused}) at offset {pos}")
            record = zf.central_entry(
                rec.raw_name, rec.csize, rec.crc, pos, method=rec.method, usize=rec.usize,
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
            self._check_size(final_end, "the rebuilt central directory")
            fm.resize(final_end)
        fm.write(pos, cd)
        fm.write(pos + len(cd), zf.trailer(len(entries), len(cd), pos))
        if final_end < size:
            fm.resize(final_end)
        if self.durable:
            fm.fsync()
        self._install(entries, bytes(cd), zf.Trailer(pos, len(cd), len(entries), pos, final_end))
        self._data_end = pos
        older = (
            f"; {copies} older copies of rewritten keys were left out, and keys deleted "
            "since their last write may have come back"
            if copies else ""
        )
        warnings.warn(
            f"{self.path}: no valid central directory was found; rebuilt it from the local "
            f"headers of {len(entries)} intact entries (anything after them was dropped"
            f"{older})",
            RecoveryWarning,
            stacklevel=4,
        )
        return True

    def _scan_for_trailer(
        self, fm: FileMapping
    ) -> tuple[zf.Trailer, list[zf.Entry], bytes] | None:
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
                tr = zf.read_trailer_at(fm.read, fm.size, pos, self.path)
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
                entries, cd = self._parse(fm.read, tr)
            except CorruptArchiveError:
                rejected.add(claim)
                continue
            return tr, entries, cd

    # --- Recovery -----------------------------------------------------------------------

    def _entry_ok(self, fm: FileMapping, e: zf.Entry, limit: int) -> bool:
        if not zf.local_header_matches(fm.read, e, limit):
            return False
        if e.method != 0 or e.flags & zf.FLAG_ENCRYPTED:
            return True  # foreign compressed entries are taken as valid without decoding
        if e.csize != e.usize:
            return False
        if e.end_limit >= 0:
            limit = min(limit, e.end_limit)
        try:
            off = zf.resolve_data_offset(fm.read, e, limit, self.path)
        except CorruptArchiveError:
            return False
        e.data_offset = off
        if fm.crc32(off, e.csize) != e.crc:
            return False
        if not e.flags & zf.FLAG_DATA_DESCRIPTOR and zf.local_crc(fm.read, e) != e.crc:
            # Interrupted CRC patch: the directory's CRC is authoritative; repair the header.
            fm.write(e.lfh_offset + zf.LFH_CRC_OFFSET, _U32.pack(e.crc))
        return True

    def _entry_end(self, fm: FileMapping, e: zf.Entry, limit: int) -> int:
        if e.end_limit >= 0:
            limit = min(limit, e.end_limit)
        if e.data_offset < 0:
            e.data_offset = zf.resolve_data_offset(fm.read, e, limit, self.path)
        return e.data_offset + e.csize

    def _recover(self, fm: FileMapping, tr: zf.Trailer) -> None:
        entries = self._entries
        limit = tr.cd_offset
        n = len(entries)
        first_bad = n
        while first_bad > 0 and not self._entry_ok(fm, entries[first_bad - 1], limit):
            first_bad -= 1
        for i in range(first_bad):
            e = entries[i]
            if e.crc == 0 and e.csize > 0 and e.method == 0 and not self._entry_ok(fm, e, limit):
                first_bad = i  # an unpatched reservation followed by other entries
                break
        dropped = [e.name for e in entries[first_bad:]]
        junk = fm.size - tr.end
        # Where the next entry goes: right after the last kept entry's data (reusing any gap
        # an interrupted commit left before the directory), unless that entry is followed
        # by a data descriptor of unknown length.
        kept = entries[:first_bad]
        data_end = 0
        if kept:
            last = max(kept, key=lambda e: e.lfh_offset)
            data_end = self._entry_end(fm, last, limit)
            if last.flags & zf.FLAG_DATA_DESCRIPTOR:
                # A data descriptor of 12 to 24 bytes follows: keep clear of all of it, or
                # leave the directory where it is when nothing is rolled back.
                data_end = min(data_end + 24, tr.cd_offset) if dropped else tr.cd_offset
        if dropped:
            cut = entries[first_bad].cd_pos
            del self._entries[first_bad:]
            del self._cd[cut:]
            self._install(self._entries, bytes(self._cd), tr)
            if junk:
                fm.resize(tr.end)
            self._move_directory(fm, data_end)
        elif junk:
            fm.resize(tr.end)
            if self.durable:
                fm.fsync()
        # Deleted entries may sit between the last live entry and the directory: they are
        # committed bytes that a reader may still map, so they stay. An interrupted
        # commit's leftovers end in bytes that are no local record (the old directory,
        # zeros): then the whole gap is leftovers and goes.
        if (
            not dropped
            and data_end < self._cd_offset
            and self._skip_local_records(fm, data_end, self._cd_offset) == self._cd_offset
        ):
            data_end = self._cd_offset
        gap = self._cd_offset - data_end if not dropped else 0
        if gap > 0:
            # An interrupted commit left dead bytes before the directory: move it down (the
            # same crash-safe placement as a commit), so the archive is exactly the layout
            # every reader expects (unzip rejects an empty archive whose directory is not
            # at offset 0).
            self._move_directory(fm, data_end)
        self._data_end = min(data_end, self._cd_offset)
        if dropped or junk or gap > 0:
            what = []
            if dropped:
                what.append(f"rolled back {len(dropped)} incomplete entries {dropped[:10]!r}")
            if junk:
                what.append(f"removed {junk} bytes after the end of the archive")
            if gap > 0:
                what.append(f"closed a gap of {gap} bytes before the central directory")
            warnings.warn(
                f"{self.path}: recovered from an interrupted write: " + "; ".join(what),
                RecoveryWarning,
                stacklevel=4,
            )

    def _skip_local_records(self, fm: FileMapping, pos: int, limit: int) -> int:
        """The end of the run of complete local records that starts at ``pos``."""
        while pos < limit:
            rec = zf.read_local_record(fm.read, pos, limit, self.path)
            if rec is None:
                break
            pos = rec.data_offset + rec.csize
        return pos

    # --- Writing ------------------------------------------------------------------------

    def _reserve_size(self) -> int:
        # A commit may briefly hold a second copy of the central directory past the final
        # end of the file; the directory is never larger than the file, so twice the limit
        # (plus room for two trailers) always suffices. Address space costs no memory.
        return 2 * self.max_file_size + 2 * (zf.TRAILER_SIZE + zf.MAX_COMMENT)

    @property
    def comment(self) -> bytes:
        """The archive comment (kept, byte for byte, by every append)."""
        self._ensure_open_sync()
        return self._comment

    def _trailer_len(self) -> int:
        return zf.TRAILER_SIZE + len(self._comment)

    def _write_trailer(self, fm: FileMapping, at: int, n: int, cd_size: int, cd_at: int) -> None:
        """The end records (and the archive comment) of a directory at ``cd_at``.

        The comment goes first: a complete end record implies a complete comment.
        """
        if self._comment:
            fm.write(at + zf.TRAILER_SIZE, self._comment)
        fm.write(at, zf.trailer(n, cd_size, cd_at, len(self._comment)))

    def _check_size(self, required: int, what: str) -> None:
        """Refuse a commit whose final file size would pass ``max_file_size``."""
        if required > self.max_file_size:
            raise ValueError(
                f"append of {what} would grow {self.path} past max_file_size = "
                f"{self.max_file_size} bytes (required: {required})"
            )

    def _check_reserve(self, required: int, what: str) -> None:
        """Refuse a temporary size past the reserved address space (never expected)."""
        if required > self._reserve_size():
            raise ValueError(
                f"append of {what} would need {required} bytes of {self.path} mapped, more than "
                f"the {self._reserve_size()} bytes reserved for max_file_size = "
                f"{self.max_file_size}"
            )

    def _begin(self, fm: FileMapping, batch: bool = False) -> _Txn:
        tx = self._tx
        if tx is None:
            tx = _Txn(
                len(self._entries), len(self._cd), self._data_end, self._data_end,
                self._cd_offset, fm.size,
            )
            tx.dirty.append((self._data_end, fm.size))
            self._tx = tx
        tx.depth += 1
        tx.batch = tx.batch or batch
        return tx

    def _make_room(self, fm: FileMapping, tx: _Txn, need: int, room: int, what: str) -> None:
        """Ensure ``[tx.write, tx.write + need)`` is free, relocating the live CD if not."""
        end = tx.write + need
        if end <= tx.live_cd:
            return
        live_len = tx.cd_len0
        tlen = self._trailer_len()
        limit = self._reserve_size() - live_len - tlen
        new_cd = max(tx.live_end, min(end + room, limit))
        new_end = new_cd + live_len + tlen
        self._check_reserve(new_end, what)
        fm.resize(new_end)
        _step("relocate:resized")
        fm.write(new_cd, memoryview(self._cd)[:live_len])
        _step("relocate:cd")
        self._write_trailer(fm, new_cd + live_len, tx.n0, live_len, new_cd)
        _step("relocate:trailer")
        if self.durable:
            fm.msync(new_cd, live_len + tlen)
            fm.fsync()
        tx.dirty.append((tx.live_cd, tx.live_end))
        tx.live_cd, tx.live_end = new_cd, new_end

    def _live_entries(self) -> list[zf.Entry]:
        """What the next directory lists, in order: each key's live copy, each folder once."""
        index = self._index
        dropped = self._dropped_folders
        folders = {e.name: e for e in self._entries if e.is_dir and e.name not in dropped}
        return [
            e for e in self._entries
            if (folders.get(e.name) if e.is_dir else index.get(e.name)) is e
        ]

    def _pruned_directory(self) -> tuple[bytes, list[zf.Entry], list[int]]:
        """The directory without superseded, deleted and shadowed entries.

        Returns its bytes, its entries and their record positions in it; the entries' own
        ``cd_pos`` still describe ``self._cd`` until the new directory is installed.
        """
        keep = self._live_entries()
        cd = self._cd
        parts = []
        positions = []
        pos = 0
        for e in keep:
            parts.append(cd[e.cd_pos : e.cd_pos + e.cd_len])
            positions.append(pos)
            pos += e.cd_len
        return b"".join(parts), keep, positions

    def _place_directory(self, fm: FileMapping, tx: _Txn) -> None:
        """Make the in-memory CD live right after the data at ``tx.write`` (the commit).

        After a rewrite or delete (or on the first commit to a foreign archive that repeats
        a name), the new directory lists only live entries; the superseded bytes stay in
        the file as dead space, so views of them stay valid.
        """
        pruned: tuple[bytes, list[zf.Entry], list[int]] | None = None
        if tx.pruned or self._shadowed:
            pruned = self._pruned_directory()
            cd: memoryview | bytes = pruned[0]
            n = len(pruned[1])
        else:
            cd = memoryview(self._cd)
            n = len(self._entries)

        def install() -> None:  # at the commit point: memory follows the file
            if pruned is not None:
                data, keep, positions = pruned
                for e, p in zip(keep, positions, strict=True):
                    e.cd_pos = p
                self._entries = keep
                self._cd = bytearray(data)
                self._shadowed = False
                self._first_listed = min((e.lfh_offset for e in keep), default=-1)
                self._dropped_folders.clear()
                tx.pruned = False

        w, size = tx.write, len(cd)
        tlen = self._trailer_len()
        final_end = w + size + tlen
        if final_end <= tx.live_cd:
            fm.write(w, cd)
            _step("commit:cd")
            self._write_trailer(fm, w + size, n, size, w)
            _step("commit:trailer")
            if self.durable:
                fm.msync(tx.start, final_end - tx.start)
                fm.fsync()
            fm.resize(final_end)  # commit point: cuts off the old live directory
            install()
            _step("commit:truncated")
        else:
            x = max(tx.live_end, final_end)
            self._check_reserve(x + size + tlen, "the central directory")
            fm.resize(x + size + tlen)
            _step("commit:x-resized")
            fm.write(x, cd)
            _step("commit:x-cd")
            self._write_trailer(fm, x + size, n, size, x)  # commit point: complete, at EOF
            _step("commit:x-trailer")
            tx.committed = True
            install()
            self._cd_offset, self._data_end, self._limit = x, w, w
            if self.durable:
                fm.msync(tx.start, x + size + tlen - tx.start)
                fm.fsync()
            fm.write(w, cd)
            _step("commit:cd")
            self._write_trailer(fm, w + size, n, size, w)
            _step("commit:trailer")
            if self.durable:
                fm.msync(w, size + tlen)
            fm.resize(final_end)
            _step("commit:truncated")
        if self.durable:
            fm.fsync()
        self._cd_offset = w
        self._data_end = w
        self._limit = w

    def _move_directory(self, fm: FileMapping, data_end: int) -> None:
        """Make the in-memory CD live right after ``data_end``, through the commit placement.

        Used to roll back entries and to close a gap before the directory: the live CD is
        where ``self._cd_offset`` says, and the file ends with its trailer.
        """
        tx = _Txn(len(self._entries), len(self._cd), data_end, data_end, self._cd_offset,
                  fm.size)
        self._tx = tx
        try:
            self._place_directory(fm, tx)
        finally:
            self._tx = None

    @contextlib.contextmanager
    def _write_step(
        self, fm: FileMapping, *, batch: bool = False, keep_open: bool = False
    ) -> Iterator[_Txn]:
        """One write step inside the open transaction (opening one), under the lock.

        If the step raises, the transaction is abandoned unless something else holds it.
        Otherwise it commits when this step was its outermost holder; with ``keep_open``
        it stays open instead, for the next commit to take along.
        """
        tx = self._begin(fm, batch=batch)
        try:
            yield tx
        except BaseException as exc:
            self._leave_failed(tx, exc)
            raise
        if keep_open:
            tx.depth -= 1
        else:
            self._end(fm, tx)

    def _leave_failed(self, tx: _Txn, exc: BaseException) -> None:
        """A holder of ``tx`` failed: abandon it if nothing else holds it."""
        if tx.depth == 1:
            self._abort(tx, exc)
        else:
            tx.depth -= 1

    def _end(self, fm: FileMapping, tx: _Txn) -> None:
        tx.depth -= 1
        if tx.depth:
            return
        self._commit(fm, tx)

    def _commit(self, fm: FileMapping, tx: _Txn) -> None:
        """Make everything ``tx`` wrote durable (one directory write), or abandon it."""
        pruned = tx.pruned or self._shadowed
        try:
            if len(self._entries) != tx.n0 or tx.live_cd != self._cd_offset or pruned:
                self._place_directory(fm, tx)
        except BaseException as exc:
            self._abort(tx, exc)
            raise
        self._tx = None
        tx.done = True
        if self._first_listed > self._dead_prefix:
            self._mark_unlisted_start(fm)

    def _mark_unlisted_start(self, fm: FileMapping) -> None:
        """Mark the local headers before the first listed entry as listed by no directory.

        Their copies stay readable for views and older readers (only the 4 signature bytes
        of each header change, and readers accept the mark); tools that look for an archive
        at the start of the file (7-Zip) then see leading bytes instead of entries missing
        from the directory.
        """
        pos, end = self._dead_prefix, self._first_listed
        dead = _U32.pack(zf.DEAD_LFH_SIG)
        while pos < end:
            rec = zf.read_local_record(fm.read, pos, end, self.path)
            if rec is None:
                break  # not a record this store wrote: leave the bytes alone
            if not rec.dead:
                fm.write(pos, dead)
            pos = rec.data_offset + rec.csize
        self._dead_prefix = pos

    def _abort(self, tx: _Txn, failure: BaseException | None = None) -> None:
        """Forget the entries of a failed transaction; the live CD on disk is still valid."""
        self._tx = None
        tx.done = True
        if tx.committed:
            return  # failed after the commit point: the entries are durable, keep them
        tx.failure = failure or RuntimeError(f"a batch of writes to {self.path} was abandoned")
        fm = self._fm
        if fm is not None and not fm.closed and fm.size > tx.live_end:
            with contextlib.suppress(OSError):
                fm.resize(tx.live_end)  # drop a half-written copy past the live trailer
        for e in self._entries[tx.n0 :]:
            self._unpatched.discard(e.name)
        del self._entries[tx.n0 :]
        del self._cd[tx.cd_len0 :]
        # Superseded and deleted keys come back: the committed directory still lists them.
        self._index = _live_index(self._entries)
        self._first_listed = min((e.lfh_offset for e in self._entries), default=-1)
        self._dropped_folders.clear()
        tx.pruned = False
        self._cd_offset = tx.live_cd
        self._data_end = tx.start
        if fm is not None and not fm.closed and fm.exports == 0 and tx.live_cd > tx.start:
            # Close the gap the abandoned entries left (no view can point into it).
            with contextlib.suppress(OSError, ValueError):
                # On failure it is still a valid archive; the next writable open closes it.
                self._move_directory(fm, tx.start)

    def _add_entry(
        self, fm: FileMapping, tx: _Txn, key: str, raw: bytes, data: memoryview | None, size: int
    ) -> zf.Entry:
        w = tx.write
        pad = zf.alignment_padding(w, len(raw))
        header_len = zf.LFH_SIZE + len(raw) + 20 + pad
        entry_cd_len = zf.CD_SIZE + len(raw) + 28
        tail = len(self._cd) + entry_cd_len + self._trailer_len()  # directory + end records
        # Inside a batch more entries follow: the directory moves far enough ahead for
        # several more of this size (the commit gives back what they leave unused).
        room = tail if not tx.batch else max(tail, w - tx.start, 4 * (header_len + size),
                                             self._batch_room)
        self._check_size(w + header_len + size + tail, repr(key))
        self._make_room(fm, tx, header_len + size, room, repr(key))
        data_offset = w + header_len
        if data is None:
            crc = 0
            for lo, hi in tx.dirty:  # a reservation reads as zeros until it is filled
                a, b = max(lo, data_offset), min(hi, data_offset + size)
                if a < b:
                    fm.zero(a, b - a)
        else:
            crc = fm.write_crc32(data_offset, data)
        _step("entry:data")
        fm.write(w, zf.local_header(raw, size, crc, w, pad))
        _step("entry:header")
        record = zf.central_entry(raw, size, crc, w)
        entry = zf.Entry(
            key, 0, zf.FLAG_UTF8, crc, size, size, w, len(self._cd), len(record), data_offset
        )
        self._cd += record
        self._entries.append(entry)
        if self._first_listed < 0:
            self._first_listed = w
        if key in self._index:
            tx.pruned = True  # a newer copy: the next directory lists only this one
            self._unpatched.discard(key)
        self._index[key] = entry
        tx.write = data_offset + size
        return entry

    def _unchanged(self, e: zf.Entry, data: memoryview) -> bool:
        """Whether ``data`` equals the entry's bytes (a rewrite that changes nothing)."""
        if e.usize != data.nbytes:
            return False
        try:
            with self._read(e) as existing:
                return bool(existing == data)
        except (CorruptArchiveError, UnsupportedEntryError):
            return False  # an unreadable old copy is simply superseded

    def _refuse_rewrite(self, key: str, what: str = "overwrite") -> None:
        raise AppendOnlyError(
            f"MmapZipStore is append-only (opened with append_only=True); cannot {what} "
            f"entry {key!r} in {self.path}"
        )

    def _stage(
        self, key: str, value: Any, *, exist_ok: bool = False, grouped: bool = False
    ) -> _Txn | None:
        """Write one entry into the open transaction (opening one); commit nothing.

        Returns the transaction that will make it durable, or None when nothing was written
        (``exist_ok`` and the key exists, or the same bytes are stored already).
        """
        raw = _encode_key(key, self.path)
        data = _as_bytes_view(value)
        with self._lock:
            fm = self._check_writable_sync()
            existing = self._index.get(key)
            if existing is not None:
                if exist_ok or self._unchanged(existing, data):
                    return None
                if self.append_only:
                    self._refuse_rewrite(key)
            with self._write_step(fm, batch=grouped, keep_open=True) as tx:
                self._add_entry(fm, tx, key, raw, data, data.nbytes)
            return tx

    def _flush(self, tx: _Txn | None) -> None:
        """Commit ``tx`` unless that happened already; raise if it was abandoned.

        Inside a ``batch()`` block the block's exit commits; nothing to do here.
        """
        if tx is None:
            return
        with self._lock:
            if not tx.done and self._tx is tx and tx.depth == 0:
                fm = self._fm
                assert fm is not None
                self._commit(fm, tx)
        if tx.done and tx.failure is not None:
            raise CorruptArchiveError(
                f"{self.path}: the commit that was to make this write durable failed: "
                f"{tx.failure}"
            ) from tx.failure

    def _append(self, key: str, value: Any, *, exist_ok: bool = False) -> bool:
        """Write one entry and commit it; False if nothing needed writing."""
        tx = self._stage(key, value, exist_ok=exist_ok)
        self._flush(tx)
        return tx is not None

    @contextlib.contextmanager
    def batch(self) -> Iterator[MmapZipStore]:
        """Group writes into one commit: one central-directory write for all of them.

        Inside the block, writes (``store[k] = v``, zarr writes, deletes, reservations)
        are visible at once in this process but become durable together when the block
        exits; if the block raises, or the process dies inside it, none of them survive.
        Writes other threads make while the block is open join it.
        """
        with self._lock:
            fm = self._check_writable_sync()
            tx = self._begin(fm, batch=True)
        try:
            yield self
        except BaseException as exc:
            with self._lock:
                self._leave_failed(tx, exc)
            raise
        with self._lock:
            self._end(fm, tx)
        if tx.failure is not None:
            raise tx.failure

    def reserve_entry(self, key: str, nbytes: int) -> npt.NDArray[np.uint8]:
        """Append an entry of ``nbytes`` zero bytes and return a writable view of its data.

        Fill the view in place, then call :meth:`patch_entry_crc`. Until then the entry has
        CRC 0, and the next writable open rolls it back (and every entry after it). The key
        must not exist: a reservation cannot supersede an entry, since rolling back an
        unfinished one would lose the old value too (delete the old entry first).
        """
        raw = _encode_key(key, self.path)
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot reserve a negative size ({nbytes}) for {key!r}")
        with self._lock:
            fm = self._check_writable_sync()
            if key in self._index:
                if self.append_only:
                    self._refuse_rewrite(key, "reserve existing")
                raise EntryExistsError(
                    f"cannot reserve {key!r} in {self.path}: the entry exists; delete it "
                    "first (a reservation cannot supersede an entry)"
                )
            with self._write_step(fm) as tx:
                entry = self._add_entry(fm, tx, key, raw, None, nbytes)
            if nbytes:
                self._unpatched.add(key)
            return np.frombuffer(fm.view(entry.data_offset, nbytes, writable=True), np.uint8)

    def patch_entry_crc(self, key: str) -> int:
        """Store the CRC-32 of an entry's current data (after filling a reservation)."""
        with self._lock:
            fm = self._check_writable_sync()
            e = self._lookup(key)
            if e is None:
                raise KeyError(f"no entry {key!r} in {self.path}")
            if e.method != 0 or e.lfh_offset < 0:
                raise UnsupportedEntryError(f"{self.path}: entry {key!r} is not stored")
            off = self._data_offset(e)
            value = fm.crc32(off, e.csize)
            packed = _U32.pack(value)
            fm.write(e.lfh_offset + zf.LFH_CRC_OFFSET, packed)
            _step("patch:header")
            self._cd[e.cd_pos + zf.CD_CRC_OFFSET : e.cd_pos + zf.CD_CRC_OFFSET + 4] = packed
            tx = self._tx
            live_cd = tx.live_cd if tx is not None else self._cd_offset
            # Committed entries sit in the live directory at the same position as in memory
            # (a transaction only appends records to it until its commit).
            if tx is None or e.cd_pos < tx.cd_len0:
                fm.write(live_cd + e.cd_pos + zf.CD_CRC_OFFSET, packed)
                _step("patch:cd")
            if self.durable:
                fm.msync(off, e.csize)
                fm.msync(e.lfh_offset, zf.LFH_SIZE)
                fm.msync(live_cd + e.cd_pos, e.cd_len)
                fm.fsync()
            e.crc = value
            self._unpatched.discard(key)
            return value

    # --- Reading ------------------------------------------------------------------------

    def _lookup(self, key: str) -> zf.Entry | None:
        return self._index.get(key)

    def _data_offset(self, e: zf.Entry) -> int:
        if e.data_offset < 0:
            assert self._fm is not None
            limit = self._limit if e.end_limit < 0 else min(self._limit, e.end_limit)
            e.data_offset = zf.resolve_data_offset(self._fm.read, e, limit, self.path)
        return e.data_offset

    def _read(self, e: zf.Entry) -> memoryview:
        """The decoded bytes of an entry: a zero-copy view when it is stored."""
        fm = self._fm
        assert fm is not None
        if e.flags & zf.FLAG_ENCRYPTED:
            raise UnsupportedEntryError(
                f"{self.path}: entry {e.name!r} is encrypted; encrypted ZIP entries are not "
                "supported"
            )
        off = self._data_offset(e)
        if e.method == 0:
            if e.csize != e.usize:
                raise CorruptArchiveError(
                    f"{self.path}: stored entry {e.name!r} has compressed size {e.csize} "
                    f"but uncompressed size {e.usize}"
                )
            return fm.view(off, e.csize)
        return memoryview(self._decompress(e, fm.read(off, e.csize)))

    def _decompress(self, e: zf.Entry, raw: bytes) -> memoryview:
        return decode_entry(self.path, e, raw, self.max_decompressed_size)

    def try_mmap_entry_as(
        self,
        key: str,
        dtype: npt.DTypeLike,
        shape: int | Iterable[int],
        *,
        order: Literal["C", "F"] = "C",
    ) -> np.ndarray[Any, Any] | None:
        """A read-only numpy array aliasing the entry's bytes in the mapping, or ``None``.

        ``None`` when the entry is absent, compressed or encrypted, when its size is not
        ``prod(shape) * dtype.itemsize``, or when its data is not aligned for ``dtype``
        (then read ``store[key]``, which copies nothing either but gives bytes).
        """
        fm = self._ensure_open_sync()
        dt = np.dtype(dtype)
        shp = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
        e = self._lookup(key)
        if e is None or e.method != 0 or e.flags & zf.FLAG_ENCRYPTED or e.csize != e.usize:
            return None
        nbytes = math.prod(shp) * dt.itemsize
        if e.csize != nbytes:
            return None
        if nbytes == 0:
            empty = np.empty(shp, dt, order=order)
            empty.flags.writeable = False  # read-only, like every other view it returns
            return empty
        off = self._data_offset(e)
        if (fm.address + off) % dt.alignment:
            return None
        return np.frombuffer(fm.view(off, nbytes), dt).reshape(shp, order=order)

    def _raw_records(self) -> Iterator[tuple[zf.Entry, memoryview]]:
        """Each live entry (directories included) with its stored bytes, in file order.

        The bytes are the entry's data as it sits in the archive (still compressed for a
        compressed foreign entry), a zero-copy view of the mapping: release it before
        closing the store. For compaction, which copies entries without decoding them.
        """
        fm = self._ensure_open_sync()
        live = [e for e in self._entries if e.is_dir or self._index.get(e.name) is e]
        for e in sorted(live, key=lambda e: e.lfh_offset):
            off = self._data_offset(e)
            yield e, fm.view(off, e.csize)

    # Compaction and packing (``_copy``): ``store.compact()`` compacts an open
    # writable store in place; ``MmapZipStore.compact(path, out=None)`` an archive by path.
    compact = CompactMethod()
    pack = staticmethod(pack_directory)

    #: Least space a batch's relocation of the directory leaves for the entries that follow
    #: (it grows with the batch; the commit gives back what stays unused). A larger floor
    #: saves relocations in long batches but makes every short one allocate it and give it
    #: back: 16 MiB cost each 1 MiB append along time 7 ms more.
    _batch_room = 1 << 16

    def space(self) -> ArchiveSpace:
        """How the archive's bytes are used: live entries, dead copies, directory.

        Dead bytes are superseded and deleted entries (and anything else no entry claims);
        :meth:`compact` gives them back.
        """
        with self._lock:
            self._ensure_open_sync()
            tx = self._tx
            end = tx.write if tx is not None else self._data_end
            live = 0
            entries = self._live_entries()
            for e in entries:
                if not e.is_dir:
                    try:
                        live += self._data_offset(e) + e.csize - e.lfh_offset
                    except CorruptArchiveError:
                        live += e.csize
            directory = len(self._cd) + self._trailer_len()
            return ArchiveSpace(
                entries=len(self._index),
                live_bytes=live,
                dead_bytes=max(end - live, 0),
                directory_bytes=directory,
                file_size=end + directory,
            )

    def verify(self) -> list[str]:
        """CRC-check every entry; return the keys that fail (empty when all are intact)."""
        self._ensure_open_sync()
        bad = []
        for key, e in list(self._index.items()):
            try:
                with self._read(e) as data:  # releases the view
                    if e.method == 0 and crc32(data) != e.crc:
                        bad.append(key)
            except (CorruptArchiveError, UnsupportedEntryError):
                bad.append(key)
        return bad

    def info(self) -> list[dict[str, Any]]:
        """One dict per entry of the central directory, in archive order (``dafzarr zip ls``).

        Keys: ``name``, ``method``, ``compressed_size``, ``size``, ``crc32``,
        ``header_offset``, ``data_offset`` (None for directories and damaged entries),
        ``error`` (None, or why the entry cannot be read) and ``refused`` (None, or why its
        name is unsafe, so that it is not served): one bad entry does not hide the others.
        """
        self._ensure_open_sync()
        rows = []
        for e in self._entries:
            data_offset: int | None = None
            error: str | None = None
            if e.refused is not None:
                error = f"entry {e.name!r} is not served: {e.refused}"
            elif not e.is_dir:
                try:
                    data_offset = self._data_offset(e)
                except CorruptArchiveError as exc:
                    error = str(exc)
            rows.append({
                "name": e.name, "method": e.method, "compressed_size": e.csize,
                "size": e.usize, "crc32": e.crc, "header_offset": e.lfh_offset,
                "data_offset": data_offset, "error": error, "refused": e.refused,
            })
        return rows

    # --- Mapping API --------------------------------------------------------------------

    def __getitem__(self, key: str) -> memoryview:
        self._ensure_open_sync()
        e = self._lookup(key)
        if e is None:
            raise KeyError(key)
        return self._read(e)

    def __setitem__(self, key: str, value: Any) -> None:
        self._append(key, value)

    def __delitem__(self, key: str) -> None:
        self._delete_sync(key, missing_ok=False)

    def __contains__(self, key: object) -> bool:
        self._ensure_open_sync()
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        self._ensure_open_sync()
        return iter(list(self._index))

    def keys(self) -> list[str]:
        """The keys, each once (in the order of their first write since the archive opened)."""
        self._ensure_open_sync()
        return list(self._index)

    def __len__(self) -> int:
        self._ensure_open_sync()
        return len(self._index)

    def _delete_sync(self, key: str, *, missing_ok: bool = True) -> None:
        if not self._delete_keys([key]) and not missing_ok:
            raise KeyError(key)

    def _delete_keys(self, keys: Iterable[str]) -> int:
        """Drop ``keys`` from the archive in one commit; absent keys are ignored.

        The entries' bytes stay in the file (dead space until :meth:`compact`), so views
        of them stay valid; when no entry is left and nothing maps them, a fresh empty
        archive replaces the file (see ``restart_if_empty``). Returns how many keys were
        deleted.
        """
        self._check_writable()
        with self._lock:
            fm = self._check_writable_sync()
            present = [k for k in keys if k in self._index]
            if not present:
                return 0
            if self.append_only:
                self._refuse_rewrite(present[0], "delete")
            with self._write_step(fm) as tx:
                for k in present:
                    del self._index[k]
                    self._unpatched.discard(k)
                tx.pruned = True
            restart_if_empty(self)
            return len(present)

    def _keys_under(self, prefix: str) -> list[str]:
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        return [k for k in list(self._index) if k.startswith(base)]

    def close(self) -> None:
        """Unmap and close; ``BufferError`` while zero-copy views of the archive are alive."""
        with self._lock:
            if self._tx is not None and self._tx.depth == 0 and self._fm is not None:
                self._commit(self._fm, self._tx)  # writes whose commit is still pending
            if self._tx is not None:
                raise RuntimeError(f"cannot close {self.path} inside a batch")
            fm = self._fm
            if fm is not None:
                if fm.exports:
                    gc.collect()
                fm.close()
                self._fm = None
                self._reset_state()
            super().close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
            return
        # Do not mask the exception in flight: if views of the mapping are still alive (for
        # instance in the traceback's frames), let the mapping go when they do.
        try:
            self.close()
        except BufferError:
            with self._lock:
                self._fm = None
                self._reset_state()
                self._is_open = False

    def __repr__(self) -> str:
        return f"MmapZipStore({self.path!r}, mode={self.mode!r})"

    def __str__(self) -> str:
        return f"zip://{self.path}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, type(self))
            and self.path == other.path
            and self.read_only == other.read_only
        )

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": "r" if self.read_only else "r+",
            "max_file_size": self.max_file_size,
            "durable": self.durable,
            "max_decompressed_size": self.max_decompressed_size,
            "append_only": self.append_only,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        # An unpickled store (a copy sent to a worker) opens at its first use, so that
        # unpickling a writable store next to the open original does not meet its lock.
        self._configure(
            state["path"],
            state["mode"],
            None,
            state["max_file_size"],
            state["durable"],
            state["max_decompressed_size"],
            state.get("append_only", False),
        )

    # --- zarr Store API -----------------------------------------------------------------

    @property
    def supports_writes(self) -> bool:
        return True

    @property
    def supports_deletes(self) -> bool:
        return not self.append_only

    @property
    def supports_listing(self) -> bool:
        return True

    def with_read_only(self, read_only: bool = False) -> MmapZipStore:
        """A store on the same archive, opened at its first use (as zarr expects)."""
        other = type(self).__new__(type(self))
        other.__setstate__({**self.__getstate__(), "mode": "r" if read_only else "r+"})
        return other

    def _get_buffer(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None
    ) -> Buffer | None:
        self._ensure_open_sync()
        e = self._lookup(key)
        if e is None:
            return None
        data = self._read(e)
        start, stop = _slice(len(data), byte_range)
        return prototype.buffer.from_array_like(np.frombuffer(data[start:stop], np.uint8))

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        return self._get_buffer(key, prototype or default_buffer_prototype(), byte_range)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return [self._get_buffer(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        self._ensure_open_sync()
        return key in self._index

    def _check_buffer(self, value: Buffer) -> None:
        if not isinstance(value, Buffer):
            raise TypeError(
                f"MmapZipStore.set(): `value` must be a Buffer instance. Got an instance of "
                f"{type(value)} instead."
            )

    async def set(self, key: str, value: Buffer) -> None:
        """Write ``key``; durable when this returns.

        Concurrent writes (zarr writes the chunks of an array concurrently) share one
        commit: each writes its entry, yields to the event loop so the others can write
        theirs, and the first to resume commits them all.
        """
        self._check_writable()
        self._check_buffer(value)
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
            self._flush(tx)

    def set_sync(self, key: str, value: Buffer) -> None:
        self._check_writable()
        self._check_buffer(value)
        self._append(key, value)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._check_writable()
        self._check_buffer(value)
        self._append(key, value, exist_ok=True)

    async def delete(self, key: str) -> None:
        """Drop ``key`` at once (one commit); a no-op for an absent key."""
        self._delete_sync(key)

    def delete_sync(self, key: str) -> None:
        self._delete_sync(key)

    async def delete_dir(self, prefix: str) -> None:
        """Drop every key under ``prefix/`` in one commit (all keys for ``""``)."""
        self._check_writable()
        self._ensure_open_sync()
        self._delete_dir(prefix)

    def delete_dir_sync(self, prefix: str) -> None:
        """Synchronous :meth:`delete_dir`."""
        self._check_writable()
        self._ensure_open_sync()
        self._delete_dir(prefix)

    def _delete_dir(self, prefix: str) -> None:
        """The keys under ``prefix/`` and the folder entries there (``zip -r`` writes
        them; listings would still show the deleted prefix), in one commit."""
        with self._lock:
            fm = self._check_writable_sync()
            with self._write_step(fm) as tx:
                self._delete_keys(self._keys_under(prefix))
                self._drop_folders(tx, prefix)
            restart_if_empty(self)

    def _drop_folders(self, tx: _Txn, prefix: str) -> None:
        """Leave the folder entries under ``prefix/`` out of the next directory (an
        append-only store keeps them: they hold no data)."""
        if self.append_only:
            return
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        names = {e.name for e in self._entries if e.is_dir and e.name.startswith(base)}
        if names - self._dropped_folders:
            self._dropped_folders |= names
            tx.pruned = True

    async def clear(self) -> None:
        """Drop every key in one commit (anndata's ``write_zarr`` starts with it).

        Outside a :meth:`batch`, and while no view of the mapping is alive, a fresh empty
        archive then takes the file's place (temporary file, fsync, rename); read-only
        handles opened before keep reading the file they mapped. Inside a batch, the clear
        is part of the batch's one commit.
        """
        self._check_writable()
        self._ensure_open_sync()
        self._delete_keys(self._keys_under(""))

    async def getsize(self, key: str) -> int:
        self._ensure_open_sync()
        e = self._lookup(key)
        if e is None:
            raise FileNotFoundError(errno.ENOENT, f"no entry {key!r} in {self.path}", key)
        return e.usize

    async def list(self) -> AsyncIterator[str]:
        for key in self.keys():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        seen: set[str] = set()
        for key in self.keys():
            if key.startswith(base):
                child = key[len(base) :].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child


_SCAN_BUDGET_FACTOR = 4
"""The recovery scan parses candidate directories totalling at most this many times the file's
size (plus 64 MiB)."""
