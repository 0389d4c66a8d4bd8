"""Write operations on an archive: stage an entry, reserve one, delete keys and folders.

Each takes the :class:`~dafzarr._core.zipstore.state.Archive` and the writable mapping, under the
store's lock, and works inside the open transaction of the commit protocol (``commit``):
what it writes becomes durable when that transaction commits.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from ..._posix import FileMapping
from ..._zipdir import stage_small as _stage_small
from ..._zipdir import stage_small_run as _stage_small_run
from ...errors import AppendOnlyError, CorruptArchiveError, EntryExistsError
from ..ioerror import storage_error
from . import commit
from .read import unchanged
from .state import Archive, Txn

__all__ = [
    "KEPT",
    "copy_range",
    "delete_keys",
    "describe_keys",
    "drop_folders",
    "failed",
    "keys_under",
    "refuse_rewrite",
    "reserve",
    "stage",
    "stage_small",
    "stage_small_run",
]


#: What a failed write leaves (see the commit protocol in ``commit``).
KEPT = "the archive keeps its last committed state"


def failed(exc: BaseException, operation: str, path: str) -> Exception:
    """The error of a write whose transaction ``exc`` abandoned: a
    :class:`~dafzarr.errors.StorageIOError` for a failed system call (see ``_ioerror``)."""
    if isinstance(exc, OSError):
        return storage_error(exc, operation, path, KEPT)
    return CorruptArchiveError(
        f"{path}: the commit that was to make this write durable failed: {exc}"
    )


def describe_keys(keys: list[str]) -> str:
    """``entry 'a'``, or ``entry 'a' and 2 more``, for a message."""
    if len(keys) == 1:
        return f"entry {keys[0]!r}"
    return f"entry {keys[0]!r} and {len(keys) - 1} more" if keys else "no entry"


def refuse_rewrite(path: str, key: str, what: str = "overwrite") -> None:
    """Refuse, for an append-only store, to change the existing entry ``key``."""
    raise AppendOnlyError(
        f"MmapZipStore is append-only (opened with append_only=True); cannot {what} "
        f"entry {key!r} in {path}"
    )


def stage(
    a: Archive,
    fm: FileMapping,
    key: str,
    raw: bytes,
    data: memoryview,
    *,
    exist_ok: bool,
    grouped: bool,
    append_only: bool,
    batch_room: int,
) -> Txn | None:
    """Write one entry into the open transaction (opening one); commit nothing.

    Returns the transaction that will make it durable, or None when nothing was written
    (``exist_ok`` and the key exists, or the same bytes are stored already).
    """
    existing = a.index.get(key)
    if existing is not None:
        if exist_ok or unchanged(a, fm, existing, data):
            return None
        if append_only:
            refuse_rewrite(a.path, key)
    with commit.write_step(a, fm, batch=grouped, keep_open=True) as tx:
        commit.add_entry(a, fm, tx, key, raw, data, data.nbytes, batch_room)
    return tx


def stage_small(a: Archive, fm: FileMapping, key: object, value: object) -> bool:
    """Write a new small entry into the open batch in one compiled call
    (:func:`dafzarr._zipdir.stage_small`); False when :func:`stage` must write it.

    The same bytes, entry and index slot as :func:`stage` and ``_commit.add_entry``, for the
    common case only: a plain ASCII key not in the archive, a ``bytes``-like value of at
    most 16 KiB, room below the live directory (no relocation) and within
    ``max_file_size``. Crash hooks of the tests see the general path only.
    """
    return commit.step_hook is None and _stage_small(a, fm, key, value)


def stage_small_run(a: Archive, fm: FileMapping, items: list[object], start: int) -> int:
    """:func:`stage_small` of the ``(key, value)`` pairs ``items[start:]`` in order, up to
    the first that :func:`stage` must write; returns its index (``len(items)``: all done)."""
    if commit.step_hook is not None:
        return start
    return _stage_small_run(a, fm, items, start)


def reserve(
    a: Archive,
    fm: FileMapping,
    key: str,
    raw: bytes,
    nbytes: int,
    *,
    append_only: bool,
    batch_room: int,
    page_offset: int | None = None,
) -> int:
    """Commit an entry of ``nbytes`` zero bytes under the new key ``key``; return where its
    data starts (at ``page_offset`` within a page, when given: see ``_commit.add_entry``)."""
    if key in a.index:
        if append_only:
            refuse_rewrite(a.path, key, "reserve existing")
        raise EntryExistsError(
            f"cannot reserve {key!r} in {a.path}: the entry exists; delete it "
            "first (a reservation cannot supersede an entry)"
        )
    with commit.write_step(a, fm) as tx:
        entry = commit.add_entry(a, fm, tx, key, raw, None, nbytes, batch_room, page_offset)
    if nbytes:
        a.unpatched.add(key)
    return entry.data_offset


def keys_under(a: Archive, prefix: str) -> list[str]:
    """The keys under ``prefix/`` (every key for ``""``)."""
    prefix = prefix.rstrip("/")
    base = f"{prefix}/" if prefix else ""
    return [k for k in list(a.index) if k.startswith(base)]


def delete_keys(a: Archive, fm: FileMapping, keys: Iterable[str], *, append_only: bool) -> int:
    """Drop ``keys`` from the archive in one commit; absent keys are ignored.

    The entries' bytes stay in the file (dead space until compaction), so views of them
    stay valid. Returns how many keys were deleted.
    """
    present = [k for k in keys if k in a.index]
    if not present:
        return 0
    if append_only:
        refuse_rewrite(a.path, present[0], "delete")
    with commit.write_step(a, fm) as tx:
        for k in present:
            del a.index[k]
            a.unpatched.discard(k)
        tx.pruned = True
    return len(present)


def drop_folders(a: Archive, tx: Txn, prefix: str) -> None:
    """Leave the folder entries under ``prefix/`` out of the next directory."""
    prefix = prefix.rstrip("/")
    base = f"{prefix}/" if prefix else ""
    names = {e.name for e in a.entries if e.is_dir and e.name.startswith(base)}
    if names - a.dropped_folders:
        a.dropped_folders |= names
        tx.pruned = True


def copy_range(
    src: FileMapping, src_offset: int, dst: FileMapping, dst_offset: int, nbytes: int
) -> None:
    """Copy ``nbytes`` from ``src``'s file at ``src_offset`` into ``dst``'s at
    ``dst_offset``, already mapped and reserved: by the kernel from page cache to page cache
    (``copy_file_range``; no page of either mapping is touched here), or through the
    mappings where the file systems do not allow it."""
    done = 0
    while done < nbytes:
        try:
            n = os.copy_file_range(
                src.fd, dst.fd, nbytes - done, src_offset + done, dst_offset + done
            )
        except InterruptedError:
            continue
        except OSError as exc:
            if exc.errno not in _NO_COPY_RANGE:
                raise
            break
        if n <= 0:
            break  # a source cut short: the copy through the mappings reports it
        done += n
    if done < nbytes:
        with src.view(src_offset + done, nbytes - done) as rest:
            dst.write(dst_offset + done, rest)


# copy_file_range refused: another file system, a kernel or file system without it.
_NO_COPY_RANGE = frozenset({errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})
