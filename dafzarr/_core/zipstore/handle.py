"""One archive as a store holds it: the lock, the mapping, the state, and the synchronous
operations on them that open, write, commit and close it (the part of
:class:`~dafzarr.zipstore.MmapZipStore` that is not zarr's Store API, the mapping protocol
or the operations of ``store_ops``).

Each method takes the lock where it writes, opens the archive on first use, and hands the
work to the package's steps with the explicit state (the
:class:`~dafzarr._core.zipstore.state.Archive` and the mapping): ``open`` and ``recover`` load
the archive, ``write`` and ``commit`` append and commit, ``read`` serves entries,
``space`` accounts for bytes, ``repack`` compacts and packs.
"""

from __future__ import annotations

import contextlib
import os
import threading
import types
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Self

from zarr.abc.store import Store

from ..._posix import FileMapping
from ...errors import (
    BatchOpenError,
    DafzarrError,
    EntryNotFoundError,
    InvalidArgumentError,
)
from ..aliases import OpenMode
from ..ioerror import Operation, storage_io
from . import commit, read, recover, space, write
from . import open as _open
from . import ziprecords as zf
from .input import as_bytes_view, encode_key
from .pack import pack_directory
from .repack import CompactMethod, compact_in_place, worth_renewing
from .space import ArchiveSpace
from .state import Archive, Txn

__all__ = ["DEFAULT_MAX_DECOMPRESSED", "DEFAULT_MAX_FILE_SIZE", "ArchiveHandle"]

MODES: tuple[str, ...] = ("r", "r+", "w+", "w")
DEFAULT_MAX_FILE_SIZE = 1 << 40
# Decoded size above which a compressed foreign entry is refused (zip-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 1 << 34


class ArchiveHandle(Store):
    """The archive a store holds, and what can be done with it synchronously.

    Not used alone: :class:`~dafzarr.zipstore.MmapZipStore` adds zarr's Store API and the
    mapping protocol, and documents the options ``_configure`` takes.
    """

    def _configure(
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
        """Set the options and check the path; open nothing."""
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
        super().__init__(read_only=read_only)
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
        self._fm: FileMapping | None = None
        # The mapping close_after_views() left to the views alive then (see there).
        self._parked: weakref.ref[FileMapping] | None = None
        self._staging = 0  # large writes being copied in worker threads now (see set)
        self._archive = Archive(
            self.path,
            self.max_file_size,
            self.durable,
            self.max_decompressed_size,
            lock=self.lock,
        )
        if mode in ("r", "r+") and not os.path.exists(self.path):
            raise _open.missing_file(self.path)

    def _reset_state(self) -> None:
        """Forget the loaded directory (the archive is not open)."""
        self._archive.reset()

    def _open_sync(self) -> None:
        with self._lock:
            if self._is_open:
                raise _open.already_open(self.path)
            if self._take_back_parked():
                return
            if self.read_only:
                fm = _open.open_read_only(self._archive)
            else:
                if self._truncate_on_open and self.append_only:
                    _open.refuse_truncating(self.path)
                with self._io(f"opening for writing (mode {self.mode!r})"):
                    fm = _open.open_writable(
                        self._archive, self.mode in ("w+", "w"), self._truncate_on_open
                    )
                self._truncate_on_open = False
            self._fm = fm
            self._is_open = True
            a = self._archive
            if not self.read_only and a.first_listed > a.dead_prefix:
                # Dead entries first (a writer killed after a commit, before it renewed the
                # archive; or another writer's archive): mark them, renew if they matter.
                commit.mark_unlisted_start(a, fm)
                self._renew_start()

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

    @property
    def generation(self) -> int:
        """Changes whenever this handle loads the archive or commits to it (for caches)."""
        return self._archive.generation

    @property
    def comment(self) -> bytes:
        """The archive comment (kept, byte for byte, by every append)."""
        self._ensure_open_sync()
        return self._archive.comment

    # --- Writing ------------------------------------------------------------------------

    def _stage(
        self, key: str, value: Any, *, exist_ok: bool = False, grouped: bool = False
    ) -> Txn | None:
        """Write one entry into the open transaction (opening one); commit nothing
        (see ``_write.stage``)."""
        raw = encode_key(key, self.path)
        data = as_bytes_view(value, f"{self.path}: entry {key!r}")
        with self._lock, self._io(f"writing entry {key!r}"):
            fm = self._check_writable_sync()
            return write.stage(
                self._archive,
                fm,
                key,
                raw,
                data,
                exist_ok=exist_ok,
                grouped=grouped,
                append_only=self.append_only,
                batch_room=self._batch_room,
            )

    def _io(self, operation: str) -> contextlib.AbstractContextManager[Operation]:
        """:func:`~dafzarr._core.ioerror.storage_io` of ``operation`` (naming the key) here."""
        return storage_io(operation, self.path, write.KEPT)

    def _flush(self, tx: Txn | None, key: str) -> None:
        """Commit ``tx`` (it wrote ``key``) unless that happened already; raise if abandoned.

        Inside a ``batch()`` block the block's exit commits; nothing to do here.
        """
        if tx is None:
            return
        with self._lock, self._io(f"committing entry {key!r}"):
            if not tx.done and self._archive.tx is tx and tx.depth == 0:
                fm = self._fm
                assert fm is not None
                commit.commit(self._archive, fm, tx)
                if tx.failure is None:
                    self._renew_start()
        if tx.done and tx.failure is not None:
            raise write.failed(tx.failure, f"committing entry {key!r}", self.path) from tx.failure

    def _set_item(self, key: str, value: Any) -> None:
        """``store[key] = value``: inside a batch, a new small entry goes through the
        compiled path (``_write.stage_small``); anything else through :meth:`_append`."""
        if self._archive.tx is not None:
            with self._lock:
                fm = self._fm
                if fm is not None and write.stage_small(self._archive, fm, key, value):
                    return
        self._append(key, value)

    def _append(self, key: str, value: Any, *, exist_ok: bool = False) -> bool:
        """Write one entry and commit it; False if nothing needed writing."""
        tx = self._stage(key, value, exist_ok=exist_ok)
        self._flush(tx, key)
        return tx is not None

    @contextlib.contextmanager
    def batch(self, size_hint: int = 0) -> Iterator[Self]:
        """Group writes into one commit: one central-directory write for all of them.

        Inside the block, writes (``store[k] = v``, zarr writes, deletes, reservations)
        are visible at once in this process but become durable together when the block
        exits; if the block raises, or the process dies inside it, none of them survive.
        Writes other threads make while the block is open join it.

        Parameters
        ----------
        size_hint : int, default 0
            About how many bytes the new entries take, headers included (see
            ``commit.begin``); a wrong hint costs speed only.

        Yields
        ------
        MmapZipStore
            This store.

        Raises
        ------
        StorageIOError
            Committing the batch failed (a full disk); none of its writes survive.
        ValueError
            The store is read-only (zarr's error).

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("batched.zip", mode="w")
        >>> with store.batch():
        ...     store["a"] = b"1"
        ...     store["b"] = b"2"
        >>> sorted(store)
        ['a', 'b']
        >>> store.close()
        """
        with self._lock:
            fm = self._check_writable_sync()
            tx = commit.begin(self._archive, fm, batch=True, size_hint=size_hint)
        try:
            yield self
        except BaseException as exc:
            with self._lock:
                commit.leave_failed(self._archive, self._fm, tx, exc)
            raise
        with self._lock, self._io("committing a batch of writes"):
            commit.end(self._archive, fm, tx)
            if tx.failure is None and tx.depth == 0:
                self._renew_start()
        failure = tx.failure
        if isinstance(failure, OSError):
            raise write.failed(failure, "committing a batch of writes", self.path) from failure
        if failure is not None:
            raise failure

    def _delete_sync(self, key: str, *, missing_ok: bool = True) -> None:
        if not self._delete_keys([key]) and not missing_ok:
            raise EntryNotFoundError(key)

    def _delete_keys(self, keys: Iterable[str]) -> int:
        """Drop ``keys`` from the archive in one commit; absent keys are ignored.

        The entries' bytes stay in the file (dead space until :meth:`compact`), so views
        of them stay valid; when no entry is left and nothing maps them, a fresh empty
        archive replaces the file (see ``_renew_start``). Returns how many keys were
        deleted.
        """
        self._check_writable()
        keys = list(keys)
        with self._lock, self._io(f"deleting {write.describe_keys(keys)}"):
            fm = self._check_writable_sync()
            deleted = write.delete_keys(self._archive, fm, keys, append_only=self.append_only)
            if deleted:
                self._renew_start()
            return deleted

    def _delete_dir(self, prefix: str) -> None:
        """The keys under ``prefix/`` and the folder entries there (``zip -r`` writes
        them; listings would still show the deleted prefix), in one commit. An
        append-only store keeps the folder entries: they hold no data."""
        with self._lock, self._io(f"deleting the keys under {prefix!r}"):
            fm = self._check_writable_sync()
            with commit.write_step(self._archive, fm) as tx:
                self._delete_keys(write.keys_under(self._archive, prefix))
                if not self.append_only:
                    write.drop_folders(self._archive, tx, prefix)
            self._renew_start()

    # --- Reading ------------------------------------------------------------------------

    def _read(self, e: zf.Entry) -> memoryview:
        """The decoded bytes of an entry: a zero-copy view when it is stored."""
        fm = self._fm
        assert fm is not None
        return read.read_entry(self._archive, fm, e)

    # Compaction and packing (``repack``): ``store.compact()`` compacts an open writable
    # store in place; ``MmapZipStore.compact(path, out=None)`` an archive by path.
    compact = CompactMethod()
    pack = staticmethod(pack_directory)

    def _mapped_archive(self) -> tuple[Archive, FileMapping]:
        """The store's state and its mapping, opened if need be (for ``repack``)."""
        return self._archive, self._ensure_open_sync()

    def _compact_in_place(self, *, progress: bool = False) -> ArchiveSpace:
        """Compact the archive in place; the store keeps serving the result.

        Rewrites the live entries into a fresh archive (temporary file in the same directory,
        fsync, rename), so every dead byte is given back. Raises
        :class:`~dafzarr.errors.ArchiveInUseError` while zero-copy views of the store's
        mapping are alive. Other threads must not use the store during the call.
        """
        with self._lock, self._io("compacting the archive"):
            old = self._check_writable_sync()
            new = compact_in_place(self._archive, old, progress=progress)
            self._fm = new
            self._reset_state()
            recover.load_writable(self._archive, new)
            # A view made since the check keeps the old mapping (and the old file) alive
            # until it goes; the old file is no longer at the path, so nothing can be lost.
            with contextlib.suppress(BufferError):
                old.close()
            return space.space(self._archive, new)

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
          unless its live entries hold more than :attr:`renew_limit` bytes (then it keeps
          its dead bytes until :meth:`compact`; ``7z -tzip`` reads it meanwhile).

        Both go the way compaction does (temporary file, fsync, rename: a kill leaves the
        committed archive or the renewed one). Skipped, leaving the committed (valid) archive
        as it is, while views of the mapping are alive, reservations are open, the file has
        other hard links, or the fresh file cannot be written. Returns whether the archive
        was rewritten.
        """
        a = self._archive
        if self.read_only or (a.entries and a.plain_start):
            return False  # the common case, decided without a look at the file
        try:
            if not worth_renewing(a, self._fm, self.renew_limit):
                return False
            self._compact_in_place()
        except (OSError, DafzarrError):
            return False
        return True

    #: Least space a batch's relocation of the directory leaves for the entries that follow
    #: (it grows with the batch; the commit gives back what stays unused). A larger floor
    #: saves relocations in long batches but makes every short one allocate it and give it
    #: back: 16 MiB cost each 1 MiB append along time 7 ms more.
    _batch_room = 1 << 16

    def close_if_unused(self) -> bool:
        """Close (as :meth:`close`) only if no zero-copy view of the archive is alive.

        Never runs the garbage collector, so it costs nothing when views are legitimately
        alive (arrays returned to the caller).

        Returns
        -------
        bool
            Whether the store is closed.

        Raises
        ------
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("unused.zip", mode="w")
        >>> store["a"] = b"data"
        >>> view = store["a"]
        >>> store.close_if_unused()
        False
        >>> del view
        >>> store.close_if_unused()
        True
        """
        with self._lock:
            self._take_back_parked()
            self._commit_pending()
            fm = self._fm
            if fm is not None and fm.exports and self._archive.tx is None:
                return False
            self.close()
            return True

    def _commit_pending(self) -> None:
        """Commit the writes whose commit is pending (outside any batch)."""
        tx = self._archive.tx
        if tx is not None and tx.depth == 0 and self._fm is not None:
            with self._io("committing pending writes"):
                commit.commit(self._archive, self._fm, tx)

    def close(self) -> None:
        """Unmap and close the archive; the next use opens it again.

        A writer first moves the directory right after the last entry (one write of it),
        giving back the free room its commits kept before the directory. Views that another
        thread is releasing (zarr's I/O thread finishing a read) are waited for, a quarter
        of a second at most.

        Raises
        ------
        BufferError
            Zero-copy views of the archive are alive (see :meth:`close_after_views`).
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("closed.zip", mode="w")
        >>> store["a"] = b"data"
        >>> store.close()
        >>> bytes(store["a"])  # opens the archive again
        b'data'
        >>> store.close()
        """
        self._close(read.VIEW_GRACE)

    def _close(self, grace: float) -> None:
        """:meth:`close`, waiting at most ``grace`` seconds for views to go."""
        with self._lock:
            self._take_back_parked()
            self._settle_for_close()
            fm = self._fm
            if fm is not None:
                read.views_gone(fm, grace)
                fm.close()
                self._fm = None
                self._reset_state()
            super().close()

    def _settle_for_close(self) -> None:
        """What a writer does before it lets the mapping go: commit what is pending, renew
        the archive if due, and give back the free room before the directory."""
        self._commit_pending()
        if self._archive.tx is not None:
            raise BatchOpenError(f"cannot close {self.path} inside a batch")
        if self._fm is not None:
            self._renew_start()  # views that deferred a renewal may be gone now
        if self._fm is not None and not self.read_only:
            # On failure (a full disk) the archive stays as the last commit left it:
            # valid, with its free room.
            with contextlib.suppress(OSError):
                commit.settle(self._archive, self._fm)

    def close_after_views(self) -> bool:
        """Close now, or, while zero-copy views are alive, when the last goes.

        A writer settles as :meth:`close` does now; the mapping, descriptor and writer's
        lock go with the last view. Using the store before that takes the mapping back.

        Returns
        -------
        bool
            True when closed now; False when the last view will close it.

        Raises
        ------
        BatchOpenError
            Called inside a :meth:`batch` block.

        Examples
        --------
        >>> store = dafzarr.MmapZipStore("later.zip", mode="w")
        >>> store["a"] = b"data"
        >>> view = store["a"]
        >>> store.close_after_views()
        False
        >>> bytes(view)
        b'data'
        >>> del view
        """
        with self._lock:
            self._take_back_parked()
            self._settle_for_close()
            fm = self._fm
            if fm is None or not fm.exports:
                self.close()
                return True
            self._parked = weakref.ref(fm)
            self._fm = None
            self._is_open = False
            return False

    def _take_back_parked(self) -> bool:
        """Take back the mapping :meth:`close_after_views` left to views, if it is still
        alive (its state is as it was: the lock was held throughout); whether it was."""
        ref, self._parked = self._parked, None
        if ref is None:
            return False
        fm = ref()
        if fm is None or fm.closed:
            self._reset_state()  # the archive may have changed since: load it afresh
            return False
        self._fm = fm
        self._is_open = True
        return True

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
