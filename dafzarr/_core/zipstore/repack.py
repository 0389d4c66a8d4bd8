"""Compaction of MmapZipStore archives: a fresh archive in one streaming pass.

It writes (and so does ``pack``) entries in the store's own layout (each local header with its ZIP64 extra and the
``0xDAF1`` padding that puts the data on an 8-byte boundary, the central directory right after
the last entry, the 98-byte ZIP64 trailer, then the archive comment): byte for byte what
appending the same entries to a new :class:`~dafzarr.MmapZipStore` in one batch writes.

The new archive is written to a temporary file in the destination's directory, fsynced, and
renamed over the destination (then the directory is fsynced), as every whole output of the
package is (:mod:`dafzarr._core.atomic`): a process killed at any instant leaves the old file or the
complete new one.

A compaction in place replaces the file by a rename and never writes into the old one, so a
read-only handle opened before it (in any process) keeps reading the archive as it was, from
the old file, until it reopens; the old file's space returns when the last such handle closes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import types
from collections.abc import Callable
from typing import Any, Protocol, Self, overload

from ..._posix import FileMapping
from ...errors import (
    ArchiveInUseError,
    BatchOpenError,
    CorruptArchiveError,
    PackSourceError,
    UnsupportedEntryError,
)
from ..addrspace import reservation_error
from ..atomic import (
    check_destination,
    copy_mode,
    fsync_directory,
    locked_temporary,
    new_temporary,
    no_space,
    publish_file,
    remove_stale_temporaries,
)
from ..crc import crc32
from ..progress import Progress
from . import ziprecords as zf
from .commit import commit
from .lead import leading_bytes
from .read import VIEW_GRACE, raw_records, views_gone
from .space import ArchiveSpace
from .state import Archive

__all__ = [
    "CompactMethod",
    "compact_in_place",
    "compact_path",
    "copy_live_entries",
    "remove_stale_temporaries",
    "worth_renewing",
]


# Names of Zarr metadata documents, written first so a reader finds them at the start.
METADATA_NAMES = frozenset({".zgroup", ".zattrs", ".zarray", ".zmetadata", "zarr.json"})


# --- Writing an archive -------------------------------------------------------------------


def _pwrite_all(fd: int, parts: list[Any], offset: int, path: str) -> None:
    """Write every byte of ``parts`` at ``offset`` (short writes are continued).

    The views it makes are released on the way out, even when a write fails: a traceback
    must not keep a zero-copy view of a store's mapping alive.
    """
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    made = list(views)
    try:
        while views:
            n = os.pwritev(fd, views, offset)
            if n <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            offset += n
            while views and n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            if n:
                views[0] = views[0][n:]
                made.append(views[0])
    finally:
        views.clear()
        for v in made:
            v.release()


class ArchiveWriter:
    """Appends entries in the store's layout to an empty file; :meth:`finish` ends it."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd, self.path = fd, path
        self.pos = 0  # where the next local header goes
        self.cd = bytearray()
        self.count = 0

    def add_leading(self, data: Any) -> None:
        """Write the bytes that precede the archive (before any entry)."""
        assert self.pos == 0, "leading bytes go before any entry"
        _pwrite_all(self.fd, [data], 0, self.path)
        self.pos = len(data)

    def _place(self, raw: bytes) -> tuple[int, int]:
        """Padding and header length of an entry named ``raw`` at the current position."""
        pad = zf.alignment_padding(self.pos, len(raw))
        return pad, zf.LFH_SIZE + len(raw) + 20 + pad

    def _record(
        self, raw: bytes, size: int, crc: int, pad: int, method: int, usize: int, flags: int
    ) -> bytes:
        header = zf.local_header(
            raw, size, crc, self.pos, pad, method=method, usize=usize, flags=flags
        )
        self.cd += zf.central_entry(
            raw, size, crc, self.pos, method=method, usize=usize, flags=flags
        )
        self.count += 1
        return header

    def add(
        self,
        raw: bytes,
        data: Any,
        crc: int,
        *,
        method: int = 0,
        usize: int | None = None,
        flags: int = zf.FLAG_UTF8,
    ) -> None:
        """Append an entry whose (stored) bytes and CRC-32 are known."""
        size = len(data)
        pad, head_len = self._place(raw)
        header = self._record(raw, size, crc, pad, method, size if usize is None else usize, flags)
        _pwrite_all(self.fd, [header, data], self.pos, self.path)
        self.pos += head_len + size

    def add_file(self, raw: bytes, fd: int, size: int, buf: memoryview, source: str) -> None:
        """Append a stored entry with the ``size`` bytes of the open file ``fd``.

        The data is written first and its local header last (its CRC is known only then).
        """
        pad, head_len = self._place(raw)
        data_at = self.pos + head_len
        crc = 0
        done = 0
        while done < size:
            want = min(len(buf), size - done)
            chunk = buf[:want]
            got = 0
            while got < want:
                n = os.preadv(fd, [chunk[got:]], done + got)
                if n == 0:
                    raise PackSourceError(
                        f"{source} shrank while being packed (from {size} bytes); "
                        "pack a directory that no process is writing"
                    )
                got += n
            crc = crc32(chunk, crc)
            _pwrite_all(self.fd, [chunk], data_at + done, self.path)
            done += want
        if os.pread(fd, 1, size):
            raise PackSourceError(
                f"{source} grew while being packed (past {size} bytes); pack a directory "
                "that no process is writing"
            )
        header = self._record(raw, size, crc, pad, 0, size, zf.FLAG_UTF8)
        _pwrite_all(self.fd, [header], self.pos, self.path)
        self.pos = data_at + size

    def finish(self, comment: bytes = b"") -> int:
        """Write the central directory, the trailer and ``comment``; return the file size."""
        cd_at = self.pos
        tail = zf.trailer(self.count, len(self.cd), cd_at, len(comment))
        _pwrite_all(self.fd, [self.cd, tail, comment], cd_at, self.path)
        return cd_at + len(self.cd) + len(tail) + len(comment)


# --- Compaction -----------------------------------------------------------------------------


def _entry_flags(e: zf.Entry) -> int:
    return (e.flags & ~zf.FLAG_DATA_DESCRIPTOR) | zf.FLAG_UTF8


def copy_live_entries(a: Archive, fm: FileMapping, writer: ArchiveWriter, progress: bool) -> None:
    """Copy the bytes before the archive, if any (a self-extracting stub, the file it was
    appended to: see ``lead``), then every live entry of ``a``, in file order, as it is
    stored (never decoded).

    Stored entries are CRC-checked on the way: a damaged entry stops the copy.
    """
    lead = leading_bytes(fm, a.first_listed, a.cd_offset, a.path)
    if lead:
        with fm.view(0, lead) as view:
            writer.add_leading(view)
    records = raw_records(a, fm)
    with Progress(len(a.live_entries()), "compacting", progress, unit="entries") as bar:
        written: set[str] = set()
        for e, view in records:
            with view:
                if e.name in written:  # a folder a foreign archive lists twice: once is enough
                    continue
                written.add(e.name)
                if e.flags & zf.FLAG_ENCRYPTED:
                    raise UnsupportedEntryError(
                        f"{a.path}: entry {e.name!r} is encrypted; archives with encrypted "
                        "entries cannot be compacted"
                    )
                if e.method == 0 and (e.csize != e.usize or crc32(view) != e.crc):
                    raise CorruptArchiveError(
                        f"{a.path}: entry {e.name!r} fails its CRC-32 check; compaction "
                        f"would copy damaged data (see: dafzarr zip verify {a.path})"
                    )
                writer.add(
                    e.name.encode("utf-8"),
                    view,
                    e.crc,
                    method=e.method,
                    usize=e.usize,
                    flags=_entry_flags(e),
                )
            bar.step()


def _ready_for_compaction(a: Archive, fm: FileMapping) -> None:
    """Commit pending writes; refuse inside a batch, with views alive or reservations open."""
    tx = a.tx
    if tx is not None and tx.depth == 0:
        commit(a, fm, tx)
    if a.tx is not None:
        raise BatchOpenError(f"cannot compact {a.path} inside a batch")
    if not views_gone(fm, VIEW_GRACE):
        raise ArchiveInUseError(
            f"cannot compact {a.path}: {fm.exports} zero-copy view(s) of its mapping are "
            "alive (arrays from try_mmap_entry_as, memoryviews from store[key]); release them "
            "first"
        )
    if a.unpatched:
        raise ArchiveInUseError(
            f"cannot compact {a.path}: reserved entries {sorted(a.unpatched)[:5]!r} "
            "have no CRC yet; fill them and call patch_entry_crc first"
        )


def compact_in_place(a: Archive, fm: FileMapping, *, progress: bool = False) -> FileMapping:
    """Compact the archive ``fm`` maps (``a`` describes it) in place; return the new mapping.

    Rewrites the live entries into a fresh archive (temporary file in the same directory,
    fsync, rename), so every dead byte is given back; the new mapping holds the writer's
    lock, and the caller loads it (the old mapping still maps the old file). Raises
    :class:`~dafzarr.errors.ArchiveInUseError` while zero-copy views of the mapping are
    alive. The caller holds the store's lock.
    """
    _ready_for_compaction(a, fm)
    real = os.path.realpath(a.path)
    st = os.stat(real)
    if st.st_nlink > 1:
        raise ArchiveInUseError(
            f"cannot compact {a.path} in place: the file has {st.st_nlink} hard links, "
            "which would keep the old archive; compact it to another path (out=...)"
        )
    tmp = new_temporary(real)
    new: FileMapping | None = None
    try:
        try:
            new = FileMapping(tmp, True, a.reserve_size(), a.lock)  # holds the writer's lock
        except OSError as exc:
            if exc.errno != errno.ENOMEM:
                raise
            raise reservation_error(
                a.path,
                a.max_file_size,
                a.reserve_size(),
                "compact {path} (its compacted copy is mapped beside it, with a second "
                "reservation of the same size)",
            ) from None
        writer = ArchiveWriter(new.fd, tmp)
        try:
            copy_live_entries(a, fm, writer, progress)
            size = writer.finish(a.comment)
            new.resize(size)
        except OSError as exc:
            raise no_space(exc, f"the compacted copy of {a.path}", tmp) from None
        copy_mode(new.fd, st)
        os.fsync(new.fd)
        os.rename(tmp, real)  # the commit point
    except BaseException:
        if new is not None:
            new.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(os.path.dirname(real))
    new.path = fm.path
    return new


def worth_renewing(a: Archive, fm: FileMapping | None, live_limit: int | None) -> bool:
    """Whether the archive should be rewritten now so that it starts with a listed entry
    (see ``ArchiveHandle._renew_start``).

    Yes when no entry is listed any more but dead bytes remain, or when the bytes before
    the first listed entry may hide the archive from 7-Zip (``a.plain_start`` is False) and
    the live entries hold at most ``live_limit`` bytes (None: any number). Never inside a
    transaction, while views of the mapping are alive or reservations are open, when the
    file has other hard links, or when bytes that are not the archive's precede it (see
    ``lead``: the file stays what it was; :meth:`~dafzarr.MmapZipStore.compact` keeps them).
    """
    if a.tx is not None or fm is None or a.data_end == 0 or a.unpatched or a.lead:
        return False
    if a.entries:
        if a.plain_start or a.first_listed <= 0:
            return False
        if live_limit is not None and sum(e.csize for e in a.live_entries()) > live_limit:
            return False
    if not views_gone(fm):
        return False
    return os.stat(os.path.realpath(a.path)).st_nlink <= 1


class _Handle(Protocol):
    """What compaction needs of the archive a store holds (an
    :class:`~dafzarr._core.zipstore.handle.ArchiveHandle`)."""

    def mapped_archive(self) -> tuple[Archive, FileMapping]: ...

    def compact_in_place(self, *, progress: bool = False) -> ArchiveSpace: ...


class _Store(Protocol):
    """What compaction by path needs of a store (an :class:`~dafzarr.MmapZipStore`)."""

    @property
    def comment(self) -> bytes: ...

    def space(self) -> ArchiveSpace: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None: ...


def compact_path(
    store_type: Callable[[str | os.PathLike[str], str], _Store],
    handle_of: Callable[[Any], _Handle],
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    progress: bool = False,
) -> ArchiveSpace:
    """Compact the archive at ``path``: in place, or into a new archive ``out``.

    In place (``out=None``), the archive's writer lock is held throughout (another writer is
    refused with :class:`~dafzarr.errors.ArchiveLockedError`). Into ``out``, the source is
    read as it is when the call starts and left unchanged; an existing ``out`` is replaced
    only with ``force`` (otherwise :class:`~dafzarr.errors.OutputExistsError`). Returns the
    space accounting of the compacted archive. ``store_type`` opens an archive (the store
    class), ``handle_of`` gives the archive handle a store holds.
    """
    source = os.path.realpath(os.fspath(path))
    if not os.path.exists(source):
        raise _missing(os.fspath(path), "file")
    target = os.path.realpath(os.fspath(out)) if out is not None else source
    if target == source or (os.path.exists(target) and os.path.samefile(source, target)):
        with store_type(path, "r+") as store:
            return handle_of(store).compact_in_place(progress=progress)
    check_destination(target, force)
    with store_type(path, "r") as store, locked_temporary(target) as (fd, tmp):
        writer = ArchiveWriter(fd, tmp)
        try:
            copy_live_entries(*handle_of(store).mapped_archive(), writer, progress)
            writer.finish(store.comment)
        except OSError as exc:
            raise no_space(exc, f"the compacted copy of {path} to {target}", tmp) from None
        publish_file(fd, tmp, target, force)
    with store_type(target, "r") as result:
        return result.space()


# ``store.compact()`` and ``MmapZipStore.compact(path, out)`` are one attribute.


class _CompactPath(Protocol):
    def __call__(
        self,
        path: str | os.PathLike[str],
        out: str | os.PathLike[str] | None = None,
        *,
        force: bool = False,
        progress: bool = False,
    ) -> ArchiveSpace: ...


class _CompactOpen(Protocol):
    def __call__(self, *, progress: bool = False) -> ArchiveSpace: ...


class CompactMethod:
    """``store.compact()`` on an open store; ``MmapZipStore.compact(path, out)`` on the class.

    ``handle_of`` gives the archive handle a store holds (it does the work).
    """

    def __init__(self, handle_of: Callable[[Any], _Handle]) -> None:
        self._handle_of = handle_of

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _CompactPath: ...

    @overload
    def __get__(self, obj: _Store, owner: type[Any]) -> _CompactOpen: ...

    def __get__(self, obj: _Store | None, owner: type[Any]) -> _CompactPath | _CompactOpen:
        if obj is None:
            by_path: _CompactPath = functools.partial(compact_path, owner, self._handle_of)
            return by_path
        return self._handle_of(obj).compact_in_place


def _missing(path: str, what: str) -> Exception:
    from ...errors import MissingFileError  # here: the module's imports fill a screen

    return MissingFileError(errno.ENOENT, f"no such {what}: {path}", path)
