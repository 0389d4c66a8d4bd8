"""One archive as a store holds it: the options, the lock, the mapping, the state, and the
synchronous operations on them that open, read, write, commit, compact and close it.

:class:`~dafzarr.zipstore.MmapZipStore` holds one :class:`ArchiveHandle` and delegates to it:
the store is zarr's Store API and the mapping protocol, the handle the archive behind them.
Each method takes the lock where it writes, opens the archive on first use, and hands the
work to the package's steps with the explicit state (the
:class:`~dafzarr._core.zipstore.state.Archive` and the mapping): ``open`` and ``recover`` load
the archive, ``write`` and ``commit`` append and commit, ``read`` serves entries,
``space`` accounts for bytes, ``repack`` compacts.

The store checks that it is writable (zarr's ``_check_writable``) before it asks the handle
to write; the handle refuses a write on a read-only archive too, as a second guard.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..._posix import FileMapping
from ...errors import (
    BatchOpenError,
    DafzarrError,
    EntryNotFoundError,
    InvalidArgumentError,
    UnsupportedEntryError,
)
from ..aliases import OpenMode
from ..ioerror import Operation, storage_io
from . import commit, read, recover, space, write
from . import open as _open
from .input import as_bytes_view, encode_key
from .repack import compact_in_place, worth_renewing
from .space import ArchiveSpace
from .state import Archive, Txn

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["DEFAULT_MAX_DECOMPRESSED", "DEFAULT_MAX_FILE_SIZE", "ArchiveHandle"]

MODES: tuple[str, ...] = ("r", "r+", "w+", "w")
DEFAULT_MAX_FILE_SIZE = 1 << 40
# Decoded size above which a compressed foreign entry is refused (zip-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 1 << 34
# Below a megabyte, populating a reservation's pages saves less than the call costs.
_POPULATE_MIN = 1 << 20


class ArchiveHandle:
    """The archive a store holds, and what can be done with it synchronously.

    Takes the options :class:`~dafzarr.zipstore.MmapZipStore` documents, checks them and the
    path, and opens nothing (:meth:`open` and :meth:`ensure_open` do).
    """

    #: Least space a batch's relocation of the directory leaves for the entries that follow
    #: (it grows with the batch; the commit gives back what stays unused). A larger floor
    #: saves relocations in long batches but makes every short one allocate it and give it
    #: back: 16 MiB cost each 1 MiB append along time 7 ms more.
    batch_room = 1 << 16

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: OpenMode,
        read_only: bool | None,
        max_file_size: int,
        durable: bool,
        max_decompressed_size: int,
        append_only: bool,
        renew_limit: int | None,
        lock: bool = True,
    ) -> None:
        if mode not in MODES:
            raise InvalidArgumentError(
                f"invalid mode: {mode!r} (expected one of 'r', 'r+', 'w+', 'w')"
            )
        if read_only is None:
            read_only = mode == "r"
        elif read_only:
            mode = "r"
        elif mode == "r":
            mode = "r+"
        if max_file_size <= 0:
            raise InvalidArgumentError(f"max_file_size must be positive, got {max_file_size}")
        if renew_limit is not None and (
            isinstance(renew_limit, bool) or not isinstance(renew_limit, int) or renew_limit < 0
        ):
            raise InvalidArgumentError(
                f"renew_limit must be None or a number of bytes >= 0, got {renew_limit!r}"
            )
        self.read_only = bool(read_only)
        self.is_open = False
        self.path = os.path.abspath(os.fspath(path))
        self.mode: OpenMode = mode
        self.max_file_size = int(max_file_size)
        self.durable = bool(durable)
        self.max_decompressed_size = int(max_decompressed_size)
        self.append_only = bool(append_only)
        self.renew_limit = renew_limit
        self.lock = bool(lock)
        self._truncate_on_open = mode == "w"
        self._lock = threading.RLock()
        self.fm: FileMapping | None = None
        # The mapping close_after_views() left to the views alive then (see there).
        self._parked: weakref.ref[FileMapping] | None = None
        self.staging = 0  # large writes being copied in worker threads now (see store.set)
        self.archive = Archive(
            self.path,
            self.max_file_size,
            self.durable,
            self.max_decompressed_size,
            lock=self.lock,
        )
        if mode in ("r", "r+") and not os.path.exists(self.path):
            raise _open.missing_file(self.path)

    # --- Opening ------------------------------------------------------------------------

    def open(self) -> None:
        """Open the archive (a writable open takes the lock, recovers, and for mode ``"w"``
        at the first open empties it); :class:`~dafzarr.errors.AlreadyOpenError` if open."""
        with self._lock:
            if self.is_open:
                raise _open.already_open(self.path)
            if self._take_back_parked():
                return
            if self.read_only:
                fm = _open.open_read_only(self.archive)
            else:
                if self._truncate_on_open and self.append_only:
                    _open.refuse_truncating(self.path)
                with self._io(f"opening for writing (mode {self.mode!r})"):
                    fm = _open.open_writable(
                        self.archive, self.mode in ("w+", "w"), self._truncate_on_open
                    )
                self._truncate_on_open = False
            self.fm = fm
            self.is_open = True
            a = self.archive
            if not self.read_only and a.first_listed > a.dead_prefix:
                # Dead entries first (a writer killed after a commit, before it renewed the
                # archive; or another writer's archive): mark them, renew if they matter.
                commit.mark_unlisted_start(a, fm)
                self._renew_start()

    def ensure_open(self) -> FileMapping:
        """The mapping, the archive opened first if it is not open."""
        if not self.is_open:
            with self._lock:  # threads that arrive together open the store once
                if not self.is_open:
                    self.open()
        assert self.fm is not None
        return self.fm

    def _writable_mapping(self) -> FileMapping:
        if self.read_only:
            raise InvalidArgumentError(
                f"{self.path}: store was opened in read-only mode and does not support writing"
            )
        return self.ensure_open()

    def mapped_archive(self) -> tuple[Archive, FileMapping]:
        """The state and its mapping, opened if need be (for ``repack`` and the release of
        read pages)."""
        return self.archive, self.ensure_open()

    def follow_rename(self, path: str) -> None:
        """The file this open, writable handle maps was given the name ``path`` (and lost
        its old one): renewals, compactions and reopens go by that name from now on."""
        with self._lock:
            self.path = self.archive.path = os.path.abspath(path)
            if self.fm is not None:
                self.fm.path = self.path

    @property
    def generation(self) -> int:
        """Changes whenever this handle loads the archive or commits to it (for caches)."""
        return self.archive.generation

    @property
    def comment(self) -> bytes:
        """The archive comment (kept, byte for byte, by every append)."""
        self.ensure_open()
        return self.archive.comment

    # --- Reading ------------------------------------------------------------------------

    def entry_bytes(self, key: str) -> memoryview | None:
        """The decoded bytes of entry ``key`` (a zero-copy view when it is stored), or None."""
        self.ensure_open()
        e = self.archive.index.get(key)
        if e is None:
            return None
        fm = self.fm
        assert fm is not None
        return read.read_entry(self.archive, fm, e)

    def key_list(self) -> list[str]:
        """The keys, in the order of their first write since the archive opened."""
        self.ensure_open()
        return list(self.archive.index)

    def has(self, key: object) -> bool:
        """Whether entry ``key`` exists."""
        self.ensure_open()
        return key in self.archive.index

    def count(self) -> int:
        """How many keys there are."""
        self.ensure_open()
        return len(self.archive.index)

    def size(self, key: str) -> int | None:
        """The decoded size of entry ``key``, or None if it is absent."""
        self.ensure_open()
        e = self.archive.index.get(key)
        return None if e is None else e.usize

    def mmap_entry_as(
        self,
        key: str,
        dtype: npt.DTypeLike,
        shape: int | Iterable[int],
        order: Literal["C", "F"],
    ) -> np.ndarray[Any, Any] | None:
        """A read-only array aliasing entry ``key`` (see ``read.mmap_entry_as``), or None."""
        fm = self.ensure_open()
        return read.mmap_entry_as(self.archive, fm, key, dtype, shape, order)

    def space(self) -> ArchiveSpace:
        """The byte accounting of the archive."""
        with self._lock:
            return space.space(self.archive, self.ensure_open())

    def verify(self) -> list[str]:
        """The keys whose data does not match their CRC-32."""
        return space.verify(self.archive, self.ensure_open())

    def info(self) -> list[dict[str, Any]]:
        """One dict per entry of the central directory, in archive order."""
        return space.info(self.archive, self.ensure_open())

    # --- Writing ------------------------------------------------------------------------

    def stage(
        self, key: str, value: Any, *, exist_ok: bool = False, grouped: bool = False
    ) -> Txn | None:
        """Write one entry into the open transaction (opening one); commit nothing
        (see ``write.stage``)."""
        raw = encode_key(key, self.path)
        data = as_bytes_view(value, f"{self.path}: entry {key!r}")
        with self._lock, self._io(f"writing entry {key!r}"):
            fm = self._writable_mapping()
            return write.stage(
                self.archive,
                fm,
                key,
                raw,
                data,
                exist_ok=exist_ok,
                grouped=grouped,
                append_only=self.append_only,
                batch_room=self.batch_room,
            )

    def _io(self, operation: str) -> contextlib.AbstractContextManager[Operation]:
        """:func:`~dafzarr._core.ioerror.storage_io` of ``operation`` (naming the key) here."""
        return storage_io(operation, self.path, write.KEPT)

    def flush(self, tx: Txn | None, key: str) -> None:
        """Commit ``tx`` (it wrote ``key``) unless that happened already; raise if abandoned.

        Inside a ``batch()`` block the block's exit commits; nothing to do here.
        """
        if tx is None:
            return
        with self._lock, self._io(f"committing entry {key!r}"):
            if not tx.done and self.archive.tx is tx and tx.depth == 0:
                fm = self.fm
                assert fm is not None
                commit.commit(self.archive, fm, tx)
                if tx.failure is None:
                    self._renew_start()
        if tx.done and tx.failure is not None:
            raise write.failed(tx.failure, f"committing entry {key!r}", self.path) from tx.failure

    def stage_in_batch(self, key: str, value: Any) -> bool:
        """Inside a batch, stage new small entry ``key`` through the compiled path
        (``write.stage_small``); whether it did (else write it with :meth:`append`)."""
        if self.archive.tx is None:
            return False
        with self._lock:
            fm = self.fm
            return fm is not None and write.stage_small(self.archive, fm, key, value)

    def append(self, key: str, value: Any, *, exist_ok: bool = False) -> bool:
        """Write one entry and commit it; False if nothing needed writing."""
        tx = self.stage(key, value, exist_ok=exist_ok)
        self.flush(tx, key)
        return tx is not None

    @contextlib.contextmanager
    def batch(self, size_hint: int = 0) -> Iterator[None]:
        """Group the writes of the block into one commit (see ``MmapZipStore.batch``)."""
        with self._lock:
            fm = self._writable_mapping()
            tx = commit.begin(self.archive, fm, batch=True, size_hint=size_hint)
        try:
            yield
        except BaseException as exc:
            with self._lock:
                commit.leave_failed(self.archive, self.fm, tx, exc)
            raise
        with self._lock, self._io("committing a batch of writes"):
            commit.end(self.archive, fm, tx)
            if tx.failure is None and tx.depth == 0:
                self._renew_start()
        failure = tx.failure
        if isinstance(failure, OSError):
            raise write.failed(failure, "committing a batch of writes", self.path) from failure
        if failure is not None:
            raise failure

    def set_many(self, pairs: list[Any]) -> None:
        """Write ``(key, value)`` pairs in order in one batch, runs of new small entries by
        one compiled call each."""
        with self.batch():
            i, n = 0, len(pairs)
            while i < n:
                with self._lock:
                    fm = self.fm
                    if fm is not None:
                        i = write.stage_small_run(self.archive, fm, pairs, i)
                if i < n:
                    key, value = pairs[i]
                    self.append(key, value)
                    i += 1

    def reserve_entry(self, key: str, nbytes: int, populate: bool) -> npt.NDArray[np.uint8]:
        """Append entry ``key`` of ``nbytes`` zero bytes; a writable view of its data."""
        raw = encode_key(key, self.path)
        nbytes = int(nbytes)
        if nbytes < 0:
            raise InvalidArgumentError(f"cannot reserve a negative size ({nbytes}) for {key!r}")
        with self._lock, self._io(f"reserving entry {key!r}"):
            fm = self._writable_mapping()
            offset = write.reserve(
                self.archive,
                fm,
                key,
                raw,
                nbytes,
                append_only=self.append_only,
                batch_room=self.batch_room,
            )
            if populate and nbytes >= _POPULATE_MIN:
                fm.populate(offset, nbytes, writable=True)
            return np.frombuffer(fm.view(offset, nbytes, writable=True), np.uint8)

    def set_streamed(self, key: str, nbytes: int, blocks: Iterable[Any]) -> None:
        """Store new entry ``key`` of ``nbytes`` bytes from consecutive ``blocks``."""
        raw = encode_key(key, self.path)
        nbytes = int(nbytes)
        if nbytes < 0:
            raise InvalidArgumentError(f"cannot store a negative size ({nbytes}) for {key!r}")
        with self.batch(), self._io(f"writing entry {key!r}"):
            with self._lock:
                fm = self._writable_mapping()
                start = write.reserve(
                    self.archive,
                    fm,
                    key,
                    raw,
                    nbytes,
                    append_only=self.append_only,
                    batch_room=self.batch_room,
                )
            pos, end, crc = start, start + nbytes, 0
            for block in blocks:
                mv = as_bytes_view(block, f"{self.path}: entry {key!r}")
                if mv.nbytes > end - pos:
                    pos += mv.nbytes
                    break
                with self._lock:  # the batch keeps the mapping open and the entry in place
                    crc = fm.write_crc32(pos, mv, crc)
                pos += mv.nbytes
            if pos != end:
                raise InvalidArgumentError(
                    f"{self.path}: the blocks given for {key!r} "
                    f"{'overflow' if pos > end else 'do not fill'} its {nbytes} bytes"
                )
            with self._lock:
                commit.patch_crc(self.archive, fm, self.archive.index[key], crc)

    def patch_entry_crc(self, key: str) -> int:
        """Store the CRC-32 of entry ``key``'s current data; return it."""
        with self._lock, self._io(f"storing the CRC-32 of entry {key!r}"):
            fm = self._writable_mapping()
            e = self.archive.index.get(key)
            if e is None:
                raise EntryNotFoundError(f"no entry {key!r} in {self.path}")
            if e.method != 0 or e.lfh_offset < 0:
                raise UnsupportedEntryError(f"{self.path}: entry {key!r} is not stored")
            return commit.patch_crc(self.archive, fm, e)

    def copy_entry(self, key: str, source: ArchiveHandle, source_key: str) -> bool:
        """Store new entry ``key`` with the bytes of ``source``'s entry ``source_key``,
        copied by the kernel; False, and nothing written, when that is not a stored entry
        with a known CRC."""
        src_fm = source.ensure_open()
        with source._lock:
            e = source.archive.index.get(source_key)
            if (
                e is None
                or e.method != 0
                or e.csize != e.usize
                or source_key in source.archive.unpatched
            ):
                return False
            offset, nbytes, crc = read.data_offset(source.archive, src_fm, e), e.usize, e.crc
        raw = encode_key(key, self.path)
        with self.batch(), self._io(f"writing entry {key!r}"), self._lock:
            fm = self._writable_mapping()
            # The data at the source's offset within a page: the kernel copies whole pages.
            start = write.reserve(
                self.archive,
                fm,
                key,
                raw,
                nbytes,
                append_only=self.append_only,
                batch_room=self.batch_room,
                page_offset=offset % 4096,
            )
            write.copy_range(src_fm, offset, fm, start, nbytes)
            commit.patch_crc(self.archive, fm, self.archive.index[key], crc)
        return True

    # --- Deleting -----------------------------------------------------------------------

    def delete(self, key: str, *, missing_ok: bool = True) -> None:
        """Drop ``key`` (one commit); :class:`~dafzarr.errors.EntryNotFoundError` if it is
        absent and not ``missing_ok``."""
        if not self.delete_keys([key]) and not missing_ok:
            raise EntryNotFoundError(key)

    def delete_keys(self, keys: Iterable[str]) -> int:
        """Drop ``keys`` from the archive in one commit; absent keys are ignored.

        The entries' bytes stay in the file (dead space until compaction), so views of
        them stay valid; when no entry is left and nothing maps them, a fresh empty
        archive replaces the file (see ``_renew_start``). Returns how many keys were
        deleted.
        """
        keys = list(keys)
        with self._lock, self._io(f"deleting {write.describe_keys(keys)}"):
            fm = self._writable_mapping()
            deleted = write.delete_keys(self.archive, fm, keys, append_only=self.append_only)
            if deleted:
                self._renew_start()
            return deleted

    def delete_dir(self, prefix: str) -> None:
        """The keys under ``prefix/`` and the folder entries there (``zip -r`` writes
        them; listings would still show the deleted prefix), in one commit. An
        append-only store keeps the folder entries: they hold no data."""
        with self._lock, self._io(f"deleting the keys under {prefix!r}"):
            fm = self._writable_mapping()
            with commit.write_step(self.archive, fm) as tx:
                self.delete_keys(write.keys_under(self.archive, prefix))
                if not self.append_only:
                    write.drop_folders(self.archive, tx, prefix)
            self._renew_start()

    def clear(self) -> None:
        """Drop every key in one commit."""
        self._writable_mapping()
        self.delete_keys(write.keys_under(self.archive, ""))

    # --- Compacting ---------------------------------------------------------------------

    def compact_in_place(self, *, progress: bool = False) -> ArchiveSpace:
        """Compact the archive in place; the handle keeps serving the result.

        Rewrites the live entries into a fresh archive (temporary file in the same directory,
        fsync, rename), so every dead byte is given back. Raises
        :class:`~dafzarr.errors.ArchiveInUseError` while zero-copy views of the mapping are
        alive. Other threads must not use the store during the call.
        """
        with self._lock, self._io("compacting the archive"):
            old = self._writable_mapping()
            new = compact_in_place(self.archive, old, progress=progress)
            self.fm = new
            self.archive.reset()
            recover.load_writable(self.archive, new)
            # A view made since the check keeps the old mapping (and the old file) alive
            # until it goes; the old file is no longer at the path, so nothing can be lost.
            with contextlib.suppress(BufferError):
                old.close()
            return space.space(self.archive, new)

    def _renew_start(self) -> bool:
        """Rewrite the archive when its first bytes would hide it from 7-Zip.

        Called after every commit outside a batch and at :meth:`close`; costs nothing
        unless the file starts with dead bytes that matter. Two cases:

        - no entry stays listed: the dead bytes hold nothing anybody asked to keep, and a
          fresh empty archive replaces them;
        - the first listed entry comes after dead entries whose data is not plain text
          (compressed or binary chunks, in which 7-Zip may detect another format), or
          after 4 MiB or more of them (7-Zip looks for an archive within the first 8 MiB
          only): the archive is compacted, so that it starts with a listed entry again,
          unless its live entries hold more than ``renew_limit`` bytes (then it keeps
          its dead bytes until a compaction; ``7z -tzip`` reads it meanwhile).

        Both go the way compaction does (temporary file, fsync, rename: a kill leaves the
        committed archive or the renewed one). Skipped, leaving the committed (valid) archive
        as it is, while views of the mapping are alive, reservations are open, the file has
        other hard links, or the fresh file cannot be written. Returns whether the archive
        was rewritten.
        """
        a = self.archive
        if self.read_only or (a.entries and a.plain_start):
            return False  # the common case, decided without a look at the file
        try:
            if not worth_renewing(a, self.fm, self.renew_limit):
                return False
            self.compact_in_place()
        except (OSError, DafzarrError):
            return False
        return True

    # --- Closing ------------------------------------------------------------------------

    def close_if_unused(self) -> bool:
        """Close (as :meth:`close`) only if no zero-copy view of the archive is alive;
        whether it closed."""
        with self._lock:
            self._take_back_parked()
            self._commit_pending()
            fm = self.fm
            if fm is not None and fm.exports and self.archive.tx is None:
                return False
            self.close()
            return True

    def _commit_pending(self) -> None:
        """Commit the writes whose commit is pending (outside any batch)."""
        tx = self.archive.tx
        if tx is not None and tx.depth == 0 and self.fm is not None:
            with self._io("committing pending writes"):
                commit.commit(self.archive, self.fm, tx)

    def close(self, grace: float = read.VIEW_GRACE) -> None:
        """Unmap and close the archive, waiting at most ``grace`` seconds for views that
        another thread is releasing; the next use opens it again."""
        with self._lock:
            self._take_back_parked()
            self._settle_for_close()
            fm = self.fm
            if fm is not None:
                read.views_gone(fm, grace)
                fm.close()
                self.fm = None
                self.archive.reset()
            self.is_open = False

    def _settle_for_close(self) -> None:
        """What a writer does before it lets the mapping go: commit what is pending, renew
        the archive if due, and give back the free room before the directory."""
        self._commit_pending()
        if self.archive.tx is not None:
            raise BatchOpenError(f"cannot close {self.path} inside a batch")
        if self.fm is not None:
            self._renew_start()  # views that deferred a renewal may be gone now
        if self.fm is not None and not self.read_only:
            # On failure (a full disk) the archive stays as the last commit left it:
            # valid, with its free room.
            with contextlib.suppress(OSError):
                commit.settle(self.archive, self.fm)

    def close_after_views(self) -> bool:
        """Close now, or, while zero-copy views are alive, when the last goes (True when
        closed now)."""
        with self._lock:
            self._take_back_parked()
            self._settle_for_close()
            fm = self.fm
            if fm is None or not fm.exports:
                self.close()
                return True
            self._parked = weakref.ref(fm)
            self.fm = None
            self.is_open = False
            return False

    def _take_back_parked(self) -> bool:
        """Take back the mapping :meth:`close_after_views` left to views, if it is still
        alive (its state is as it was: the lock was held throughout); whether it was."""
        ref, self._parked = self._parked, None
        if ref is None:
            return False
        fm = ref()
        if fm is None or fm.closed:
            self.archive.reset()  # the archive may have changed since: load it afresh
            return False
        self.fm = fm
        self.is_open = True
        return True

    def close_leaving_views(self) -> None:
        """Close; if views of the mapping are alive, let the mapping go when they do (on the
        way out of a ``with`` block that raised: the exception in flight is not masked)."""
        try:
            self.close()
        except BufferError:
            with self._lock:
                self.fm = None
                self.archive.reset()
                self.is_open = False
