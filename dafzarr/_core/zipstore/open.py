"""Opening an archive: mapping the file, the writer's lock, and read-only loads that wait
out another process' commit.

A writable open maps the file holding its ``flock`` (:func:`map_writable`) and loads it
through :mod:`._recover`; a read-only open takes no lock and loads the directory with
``pread`` (:func:`open_read_only`), retrying while a writer may be between two steps of a
commit.
"""

from __future__ import annotations

import errno
import os
import time
import warnings

from ..._posix import FileMapping
from ...errors import (
    AlreadyOpenError,
    AppendOnlyError,
    ArchiveLockedError,
    CorruptArchiveError,
    MissingFileError,
    OutputExistsError,
    RefusedEntryWarning,
)
from ..addrspace import named_map_refusal, probe_reservation, reservation_error
from ..atomic import fsync_directory, link_descriptor, locked_temporary, publish_file
from ..ioerror import LOCK_UNSUPPORTED, lock_unsupported_error
from . import ziprecords as zf
from .recover import check_apart, load_writable, read_entries, write_empty
from .state import Archive

__all__ = [
    "already_open", "create_empty", "load_read_only", "map_writable", "missing_file",
    "open_read_only", "open_writable", "refuse_truncating",
]  # fmt: skip

# How long a read-only open retries an archive whose end is not a valid trailer (a writer
# in another process may be in the middle of a commit).
_READ_RETRY_SECONDS = 1.0
_READ_SETTLE_SECONDS = 0.02


def missing_file(path: str, what: str = "file") -> MissingFileError:
    """The error of a ``what`` (a file, a directory) to open that does not exist."""
    return MissingFileError(errno.ENOENT, f"no such {what}: {path}", path)


def already_open(path: str) -> AlreadyOpenError:
    """The error of a store asked to open while it is open."""
    return AlreadyOpenError(f"{path}: store is already open")


def create_empty(path: str, durable: bool = False) -> None:
    """Create a 98-byte empty archive at ``path`` atomically, unless a file is there.

    The bytes are written to an anonymous file (``O_TMPFILE``) that gets its name with one
    ``linkat``, so a process killed at any instant leaves either no file or the whole empty
    archive, and never a temporary beside it. A file system without anonymous files gets a
    flocked named temporary instead; a later creation of the same path removes the one a
    killed process left, once it is stale. ``durable``: the bytes are fsynced before the
    file gets its name, and the directory after, so a power loss leaves no name for bytes
    that never reached the disk, nor loses the name of an archive that was created.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
        _create_empty_through_a_name(path)
        return
    try:
        _write_all(fd, zf.EMPTY_ARCHIVE)
        if durable:
            os.fsync(fd)
        link_descriptor(fd, path)
        if durable:
            fsync_directory(directory)
    except FileExistsError:
        pass
    except FileNotFoundError:
        if os.path.isdir("/proc/self/fd"):
            raise
        _create_empty_through_a_name(path)  # no /proc: name it the portable way
    finally:
        os.close(fd)


def _create_empty_through_a_name(path: str) -> None:
    with locked_temporary(path) as (fd, tmp):
        _write_all(fd, zf.EMPTY_ARCHIVE)
        try:
            publish_file(fd, tmp, path, force=False)
        except OutputExistsError:  # another process created it meanwhile
            os.unlink(tmp)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def writer_lock_held(st: os.stat_result) -> bool | None:
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


def refuse_truncating(path: str) -> None:
    """Refuse to empty the file at ``path`` for an append-only store, unless it holds no
    entry (absent, empty, or an archive without entries)."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return
    if size:
        a = Archive(path, 1)
        try:
            open_read_only(a).close()
            if not a.entries:
                return
            what = f"an archive of {len(a.entries)} entries"
        except CorruptArchiveError:
            what = f"a file of {size} bytes that is not a valid archive"
        raise AppendOnlyError(
            f"{path} holds {what}, and mode 'w' would empty it, which an append-only store "
            "never does; open it with mode 'w+' (created if missing, kept if present) or "
            "'r+', or delete the file first"
        )


def open_writable(a: Archive, create: bool, truncate: bool) -> FileMapping:
    """Map the archive writable (holding its lock, unless ``a.lock`` is False) and load it
    into ``a``.

    ``create``: make an empty archive first if there is no file; ``truncate``: empty it.
    """
    # Refuse an address-space reservation that can't succeed before creating anything
    # (under ulimit -v), with an error that names max_file_size.
    probe_reservation(a.path, a.max_file_size, a.reserve_size())
    if create and not os.path.exists(a.path):
        create_empty(a.path, a.durable)
    fm = map_writable(a)
    try:
        if truncate:
            write_empty(fm, a.durable)
        load_writable(a, fm)
    except BaseException:
        a.reset()
        fm.close()
        raise
    return fm


def map_writable(a: Archive) -> FileMapping:
    """Map the archive writable, holding its lock, as it is at the path now.

    A compaction replaces the file by a rename: a lock won on the file it replaced
    (opened just before the rename) is let go, and the new file is opened instead.
    """
    while True:
        try:
            fm = FileMapping(a.path, True, a.reserve_size(), a.lock)
        except BlockingIOError as e:
            raise ArchiveLockedError(
                e.errno,
                f"{a.path} is already open for writing (by this or another "
                "process); an archive has one writer at a time",
                a.path,
            ) from None
        except OSError as e:
            if e.errno in LOCK_UNSUPPORTED:
                raise lock_unsupported_error(
                    e,
                    a.path,
                    'MmapZipStore(path, "r+", lock=False), or '
                    'open_daf(path, "r+", lock=False) for a ZIP data set',
                ) from e
            if e.errno != errno.ENOMEM:
                raise
            raise reservation_error(a.path, a.max_file_size, a.reserve_size()) from None
        try:
            here = os.stat(a.path)
        except FileNotFoundError:
            here = None
        mapped = os.fstat(fm.fd)
        if here is not None and (here.st_dev, here.st_ino) == (mapped.st_dev, mapped.st_ino):
            return fm
        fm.close()
        if here is None:  # gone under a writer: the writer reports it as a failed call
            raise FileNotFoundError(errno.ENOENT, f"no such file: {a.path}", a.path)


def open_read_only(a: Archive) -> FileMapping:
    """Map the archive and load its directory into ``a``, waiting out a writer's commit.

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
        with named_map_refusal(a.path, lambda: os.path.getsize(a.path)):
            fm = FileMapping(a.path, False, 0)
        try:
            load_read_only(a, fm)
            return fm
        except CorruptArchiveError:
            held = writer_lock_held(os.fstat(fm.fd))
            fm.close()
            a.reset()
            now = time.monotonic()
            if held is False:
                if last_look:
                    raise
                last_look = True
                continue
            last_look = False
            if held is None:
                current = _fingerprint(a.path)
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


def _fingerprint(path: str) -> tuple[int, int, int, bytes]:
    """What changes while a writer commits: size, times and the last bytes."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            tail = os.pread(f.fileno(), 4096, max(st.st_size - 4096, 0))
    except OSError:
        return (-1, -1, -1, b"")
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, tail)


def load_read_only(a: Archive, fm: FileMapping) -> None:
    """Load the directory of the archive ``fm`` maps into ``a``, with ``pread``.

    Not through the mapping: a writer in another process may be in the middle of a commit
    and shrink the file past what was mapped.
    """
    fd, size = fm.fd, fm.size

    def read(offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > size:
            raise zf.bad(a.path, "a record points outside the file")
        out = os.pread(fd, length, offset)
        if len(out) != length:
            raise CorruptArchiveError(f"{a.path}: the file shrank while being read")
        return out

    try:
        tr = zf.find_trailer(read, size, a.path)
        entries = read_entries(read, tr, a.path)
    except CorruptArchiveError as e:
        raise CorruptArchiveError(
            f"{e}\n(if a writer was interrupted, a writable open - mode 'r+' - recovers "
            f"the archive, or run: dafzarr zip repair {a.path})"
        ) from None
    check_apart(entries, a.path)
    a.install(entries, None, tr, read(tr.end - tr.comment, tr.comment))
    if a.refused:
        warnings.warn(
            f"{a.path}: entries whose names are unsafe are not served: {a.refused_list()}",
            RefusedEntryWarning,
            stacklevel=5,
        )
