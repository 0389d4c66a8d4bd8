"""ZarrDaf in a ZIP archive: one process-wide MmapZipStore per file, shared by every handle.

A writable :class:`~dafzarr.zipstore.MmapZipStore` holds an exclusive lock on its file, and
truncating a file that another handle maps can kill the process with SIGBUS. So every ZarrDaf
handle on the same ZIP path in one process shares one store, through a registry keyed by the
absolute path and counted by references. The first open decides writability; a writable open
while read-only handles are alive is refused, and so is a truncating open while any handle is
alive. When the last handle goes, the store closes; if zero-copy views of it are still alive,
it lingers in the registry and the next open reuses it, but its mapping, descriptor and (for
a writer) lock go as soon as the last view does
(:meth:`~dafzarr.zipstore.MmapZipStore.close_after_views`).

A read-only store serves the archive as it was committed when the store opened. Another
process may commit since (a new data set in a ``.dafs.zarr.zip``, say), so a read-only open
reuses a store only while the file is the one it opened, unchanged (same inode, size and
modification time); otherwise the open gets a fresh store of the archive as it is now, and
handles on the old store keep their snapshot until they close.

The handles sharing a store also share one :class:`~.changelock.ChangeLock`
(:func:`_change_lock_of`): a change through any of them (every data set of the archive) holds
it, and a read through any of them reads one state of the property, never the documents of
one write with the chunk of the next (a store's changes are visible to the whole process
before they commit).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr.abc.store import Store

from ...errors import AppendOnlyError, DafzarrError, InvalidArgumentError
from ..zipstore.store import MmapZipStore, handle_of
from .backends import DafBackend, children_of
from .changelock import ChangeLock

__all__ = [
    "EntryCopy",
    "ZipBackend",
    "acquire_zip_store",
    "adopt_zip_store",
    "release_zip_store",
]

# The store splits a new entry of 128 MiB or more over the cores, each thread faulting in
# its slice of the mapping; ZarrDaf writes such an array with pwrite(2) instead, on one
# thread (see ZipBackend.put_streamed), as it writes its computed chunks.
_PWRITE_ARRAY_MIN = 128 << 20
_PWRITE_PIECE = 64 << 20


def _pieces(data: np.ndarray[Any, Any]) -> Iterator[np.ndarray[Any, Any]]:
    """A large contiguous array's bytes in pieces the store writes with pwrite(2) on this
    thread (it spreads a single buffer of 128 MiB or more over the cores instead)."""
    flat = data.reshape(-1).view(np.uint8)
    for i in range(0, flat.size, _PWRITE_PIECE):
        yield flat[i : i + _PWRITE_PIECE]


def _size_hint(prefix: str, items: list[tuple[str, Any]]) -> int:
    """About how many bytes ``items`` take as new entries, local headers included (see
    :meth:`~dafzarr.zipstore.MmapZipStore.batch`)."""
    total = 0
    for key, data in items:
        value = data.array if isinstance(data, EntryCopy) else data
        if isinstance(data, EntryCopy):
            total += 4096  # its data starts at the source's offset within a page
        total += (
            _ENTRY_HEAD
            + 2 * len(prefix)
            + 2 * len(key)
            + (
                value.nbytes
                if isinstance(value, np.ndarray | memoryview)
                else len(value)
                if isinstance(value, bytes | bytearray)
                else 0
            )
        )
    return total


# A local header's bytes besides the name: fixed part, ZIP64 extra, alignment padding.
_ENTRY_HEAD = 64


@dataclass(frozen=True)
class EntryCopy:
    """A chunk whose bytes are the entry ``key`` of the archive ``store`` (``array``: the
    same bytes, mapped): a ZIP data set writes it by copying the entry from file to file."""

    store: MmapZipStore
    key: str
    array: np.ndarray[Any, Any]


@dataclass
class _Shared:
    store: MmapZipStore
    writable: bool
    #: The file as it was just before the store opened it (see :func:`_file_stamp`).
    stamp: tuple[int, ...] | None = None
    refs: int = 0


_REGISTRY: dict[str, _Shared] = {}
# Read-only stores an open replaced because the file changed, with handles still on them.
_RETIRED: dict[int, _Shared] = {}
# Re-entrant: a garbage collection run while releasing a store can run the finalizer of an
# unreferenced ZarrDaf, which releases its own store under this lock.
_REGISTRY_LOCK = threading.RLock()


def _try_close(shared: _Shared) -> bool:
    """Close the store unless zero-copy views of it are alive (a full garbage collection
    first frees views that only unreachable cycles hold); whether it closed. ZarrDaf reads
    on the calling thread, so no view is waited for: those alive are the caller's. A store
    left open that way lets its mapping (with the writer's lock) go with the last view."""
    try:
        handle_of(shared.store).close(grace=0.0)
    except BufferError:
        shared.store.close_after_views()
        return False
    return True


def _close_if_unused(shared: _Shared) -> bool:
    """Close the store once its last handle goes, unless zero-copy views of it are alive.

    Views returned to the caller are usually alive (a matrix read just before ``close``), so
    a read-only store runs no full garbage collection here: its cost grows with every object
    of the process. Only the youngest generation is collected, which frees the views of
    recent unreachable cycles; a store that views still hold lingers in the registry (see
    module doc). A writable store holds the archive's writer lock, which other processes
    wait for: it gets the full collection before it is left open.
    """
    if shared.store.close_if_unused():
        return True
    gc.collect(0)
    if shared.store.close_if_unused():
        return True
    if shared.writable:
        return _try_close(shared)
    shared.store.close_after_views()
    return False


def _file_stamp(path: str) -> tuple[int, ...] | None:
    """What changes when another process commits to, replaces or rewrites the file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _retire_if_changed(path: str, shared: _Shared) -> bool:
    """Take a read-only store off the registry if the file changed since it opened.

    Its handles keep it (and their snapshot) until they close; with none, it closes once
    its zero-copy views die. Returns whether it was taken off.
    """
    if shared.writable or (shared.stamp is not None and shared.stamp == _file_stamp(path)):
        return False
    del _REGISTRY[path]
    if shared.refs > 0:
        _RETIRED[id(shared.store)] = shared
    else:
        _try_close(shared)
    return True


def acquire_zip_store(
    path: str,
    mode: str,
    max_file_size: int | None = None,
    lock: bool = True,
    durable: bool = False,
    exclusive: bool = False,
) -> MmapZipStore:
    """The process-wide store of the ZIP at ``path``, opened for ``mode`` (see module doc).

    ``max_file_size``: see :class:`~dafzarr.zipstore.MmapZipStore` (default: one that fits
    the process' address-space limit). A writable store in use keeps its own. ``lock``:
    see :class:`~dafzarr.zipstore.MmapZipStore` (a store open in this process keeps its
    own). ``durable``: a writable store that is not durable is reopened durable (refused
    while other handles use it). ``exclusive``: the open is to empty the archive (mode
    ``"w"`` on the data set at its root), refused as mode ``"w"`` is while any other handle
    of this process uses the archive, but the store opens ``"r+"``: the caller empties it
    in its first commit.
    """
    path = os.path.abspath(path)
    writable = mode != "r"
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(path)
        if shared is not None and not writable and _retire_if_changed(path, shared):
            shared = None
        if (
            shared is not None
            and shared.writable
            and shared.refs > 0
            and writable
            and max_file_size is not None
            and max_file_size != shared.store.max_file_size
        ):
            raise DafzarrError(
                f"can't open {path} with max_file_size = {max_file_size}: it is open for "
                f"writing in this process with max_file_size = {shared.store.max_file_size} "
                f"by {shared.refs} other ZarrDaf handle(s); close them first"
            )
        resize = (
            writable
            and max_file_size is not None
            and shared is not None
            and max_file_size != shared.store.max_file_size
        )
        if durable and writable and shared is not None and not shared.store.durable:
            if shared.refs > 0:
                raise DafzarrError(
                    f"can't open {path} with durable=True: it is open in this process "
                    f"without it by {shared.refs} other ZarrDaf handle(s); close them first"
                )
            resize = True
        truncating = mode == "w" or exclusive
        if shared is not None and (truncating or (writable and not shared.writable) or resize):
            if shared.refs > 0:
                what = "truncate" if truncating else "open for writing"
                raise DafzarrError(
                    f"can't {what} {path}: it is open (read-only) in this process by "
                    f"{shared.refs} other ZarrDaf handle(s); close them first"
                    if not shared.writable
                    else f"can't {what} {path}: it is open in this process by {shared.refs} "
                    "other ZarrDaf handle(s); close them first"
                )
            if not _try_close(shared):
                raise DafzarrError(
                    f"can't reopen {path} in mode {mode!r}: zero-copy arrays read from it are "
                    "still alive in this process; delete them first"
                )
            del _REGISTRY[path]
            shared = None
        if shared is None:
            stamp = _file_stamp(path)  # before opening: a later commit makes it stale
            store = MmapZipStore(  # opens the archive (a writable one, holding its lock)
                path,
                mode if writable else "r",  # type: ignore[arg-type]
                max_file_size=max_file_size,
                lock=lock,
                durable=durable and writable,
            )
            shared = _Shared(store, writable, stamp)
            _REGISTRY[path] = shared
        shared.refs += 1
        return shared.store


def adopt_zip_store(store: MmapZipStore, path: str, publish: Callable[[], None]) -> None:
    """Make the writable ``store``, open under a temporary name, the process-wide store of
    ``path`` once ``publish`` gave its file that name (it keeps its lock throughout).
    Refused, before ``publish``, as mode ``"w"`` is while other handles of this process
    use ``path``."""
    path = os.path.abspath(path)
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(path)
        if shared is not None:
            if shared.refs > 0:
                raise DafzarrError(
                    f"can't truncate {path}: it is open in this process by {shared.refs} "
                    "other ZarrDaf handle(s); close them first"
                )
            if not _try_close(shared):
                raise DafzarrError(
                    f"can't reopen {path} in mode 'w': zero-copy arrays read from it are "
                    "still alive in this process; delete them first"
                )
            del _REGISTRY[path]
        publish()
        handle_of(store).follow_rename(path)
        _REGISTRY[path] = _Shared(store, True, None, refs=1)


# The change lock of each store (by id: a store is not hashable), dropped with the store.
_CHANGE_LOCKS: dict[int, tuple[weakref.ref[MmapZipStore], ChangeLock]] = {}


def _change_lock_of(store: MmapZipStore) -> ChangeLock:
    """The :class:`~.changelock.ChangeLock` of every data set over ``store`` in this process."""
    key = id(store)
    with _REGISTRY_LOCK:
        entry = _CHANGE_LOCKS.get(key)
        if entry is not None and entry[0]() is store:
            return entry[1]

        def forget(ref: weakref.ref[MmapZipStore]) -> None:
            if _CHANGE_LOCKS.get(key, (None,))[0] is ref:
                del _CHANGE_LOCKS[key]

        lock = ChangeLock(store.path)
        _CHANGE_LOCKS[key] = (weakref.ref(store, forget), lock)
        return lock


def release_zip_store(store: MmapZipStore) -> None:
    """Drop one reference; close the store when none is left (see module doc)."""
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(store.path)
        if shared is None or shared.store is not store:
            retired = _RETIRED.get(id(store))
            if retired is not None and retired.store is store:
                retired.refs -= 1
                if retired.refs <= 0:
                    del _RETIRED[id(store)]
                    _try_close(retired)  # with views alive, it closes when they die
            return
        shared.refs -= 1
        if shared.refs <= 0:
            shared.refs = 0
            if _close_if_unused(shared):
                del _REGISTRY[store.path]


class ZipBackend(DafBackend):
    """A daf in a ZIP archive, at the archive root or under ``group/`` (``.dafs.zarr.zip``).

    Deletes and overwrites go through the store's rewrites: a deleted node's keys leave the
    central directory at the next commit, and an overwrite deletes and writes in one batch
    (one commit), so a crash leaves the old value or the new one. With ``append_only`` the
    data set refuses both, as DataAxesFormats.jl's ZIP backend does.
    """

    kind = "zip"
    rolls_back = True

    def __init__(
        self, store: MmapZipStore, group: str, *, read_only: bool, append_only: bool = False
    ) -> None:
        self.store = store
        self.group = group
        self.prefix = f"{group}/" if group else ""
        self.read_only = read_only
        self.append_only = append_only
        self._closed = False
        self._change_lock = _change_lock_of(store)

    def change_lock(self) -> ChangeLock:
        return self._change_lock

    def get(self, key: str) -> Any:
        try:
            return self.store[self.prefix + key]
        except KeyError:
            return None

    def exists(self, key: str) -> bool:
        return (self.prefix + key) in self.store

    def entry_copy(self, key: str, array: np.ndarray[Any, Any]) -> EntryCopy:
        """The chunk ``key`` of this data set (mapped as ``array``), to be copied as it is."""
        return EntryCopy(self.store, self.prefix + key, array)

    def put(self, items: Iterable[tuple[str, Any]]) -> None:
        pairs = list(items)
        with self.store.batch(size_hint=_size_hint(self.prefix, pairs)):
            for key, data in pairs:
                if isinstance(data, EntryCopy):
                    full = self.prefix + key
                    if full not in self.store and self.store.copy_entry(full, data.store, data.key):
                        continue
                    data = data.array  # a compressed or unchecked entry: written as bytes
                if (
                    isinstance(data, np.ndarray)
                    and data.nbytes >= _PWRITE_ARRAY_MIN
                    and (self.prefix + key) not in self.store
                ):
                    self.put_streamed(key, data.nbytes, _pieces(data))
                else:
                    self.store[self.prefix + key] = data

    def children(self, prefix: str) -> list[str]:
        full = self.prefix + prefix if prefix else self.group
        return children_of(self.store.keys(), full)

    def delete_tree(self, prefix: str) -> None:
        if self.append_only:
            raise AppendOnlyError(f"cannot delete {prefix!r} in {self.describe()}: append-only")
        full = self.prefix + prefix if prefix else self.group
        if not full:  # never the whole archive: a data set at the root has no parent node
            raise InvalidArgumentError(f"refusing to delete every key of {self.store.path}")
        self.store.delete_dir_sync(full)

    def truncate(self) -> None:
        """Drop every key of the data set, in the caller's transaction: those under its
        group, or every key of the archive for a data set at its root (mode ``"w"``)."""
        if self.append_only:
            raise AppendOnlyError(f"cannot truncate {self.describe()}: append-only")
        if self.group:
            self.delete_tree("")
        else:
            self.store.delete_dir_sync("")

    def delete_key(self, key: str) -> None:
        """Drop one key (a no-op when absent)."""
        if self.append_only:
            raise AppendOnlyError(f"cannot delete {key!r} in {self.describe()}: append-only")
        self.store.delete_sync(self.prefix + key)

    def keys_under(self, prefix: str) -> list[str]:
        head = self.prefix + (prefix + "/" if prefix else "")
        n = len(self.prefix)
        return [k[n:] for k in self.store if k.startswith(head)]

    def mmap_as(
        self, key: str, dtype: np.dtype[Any], shape: tuple[int, ...], *, populate: bool = False
    ) -> np.ndarray[Any, Any] | None:
        arr = self.store.try_mmap_entry_as(self.prefix + key, dtype, shape)
        if arr is None:
            return super().mmap_as(key, dtype, shape)
        return arr

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self.store.batch():
            yield

    def reserve(self, key: str, nbytes: int) -> np.ndarray[Any, Any]:
        # Filled whole: its pages are mapped writable in one call, not one fault each.
        return self.store.reserve_entry(self.prefix + key, nbytes, populate=True)

    def seal(self, key: str) -> None:
        if (self.prefix + key) in self.store:
            self.store.patch_entry_crc(self.prefix + key)

    def put_streamed(self, key: str, nbytes: int, blocks: Iterable[Any]) -> None:
        """A new entry of ``nbytes`` bytes written from consecutive ``blocks`` (buffers),
        as a plain file write writes them (see :meth:`MmapZipStore.set_streamed`), in the
        open batch: it becomes visible, and durable, only when the batch commits."""
        self.store.set_streamed(self.prefix + key, nbytes, blocks)

    def zarr_store(self) -> tuple[Store, str]:
        return self.store, self.group

    def describe(self) -> str:
        return self.store.path + (f"#/{self.group}" if self.group else "")

    def version(self) -> Any:
        # The store is shared by every handle of the process on this file; a read-only
        # store is a snapshot, and other processes wait for the writer's lock.
        return self.store.generation

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            release_zip_store(self.store)


# --- HTTP ---------------------------------------------------------------------------------------
