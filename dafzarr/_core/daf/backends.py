"""Where ZarrDaf keeps its keys: a directory, a ZIP archive (MmapZipStore), memory, HTTP.

Each backend is a small synchronous key-value interface over Zarr keys (``axes/cell/.zarray``,
``axes/cell/0``): read a key (zero-copy where the medium allows), map a chunk as a numpy array,
write keys children-first, reserve a chunk to be filled in place, list a node's children and
delete a subtree. The ZarrDaf logic above it is the same for every medium.

(:mod:`._backends_zip` and :mod:`._backends_http` hold the ZIP and HTTP backends.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import itertools
import math
import mmap
import os
import stat
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import numpy as np
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype

from ...errors import DafReadOnlyError
from ..addrspace import named_map_refusal
from ..atomic import fsync_directory, removed_on_failure, retry_interrupted, walk
from ..io import byte_range_bounds
from .asides import TMP_SUFFIX, Asides, sweep_asides
from .changelock import ChangeLock
from .names import METADATA_NAMES
from .values import StreamedChunk

__all__ = ["ASIDE", "DafBackend", "DirectoryBackend", "MemoryBackend"]

#: Suffixes of the names a directory's writers put aside (a node being deleted, a file being
#: written): never a node of the data set, even when a failed removal leaves them.
ASIDE = (".deleted", ".tmp", TMP_SUFFIX)

# Linux maps every page of a populated mapping at once (a sparse read touches them all).
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# Files up to this size are read, not mapped: each mapping costs a syscall, a page fault
# and one of the process's ``vm.max_map_count`` mappings (65,530 by default), which a data
# set of many small vectors or metadata files would otherwise use up; copying 64 KiB costs
# less than mapping it.
_READ_AT_MOST = 64 << 10
# Files are written in pieces of this size, as the ZIP store writes its entries. One write
# of hundreds of MB lets the kernel back the file's page cache with 2 MiB folios; on a VM
# whose host takes free memory back, each such folio's first touch then costs several times
# what smaller ones do (a 240 MB write measured 0.57 s instead of 0.06 s).
_WRITE_PIECE = 1 << 20


def _write_in_pieces(f: Any, data: Any) -> None:
    """Write a bytes-like object or array to ``f`` in pieces of :data:`_WRITE_PIECE`."""
    mv = memoryview(data)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    for start in range(0, mv.nbytes, _WRITE_PIECE):
        f.write(mv[start : start + _WRITE_PIECE])


def _gone_from_pin(exc: OSError, dir_fd: int | None) -> bool:
    """Whether ``exc``, raised opening a file relative to a pinned directory, says that the
    directory was removed meanwhile (``ESTALE`` on a network file system): the file is then
    missing, and :meth:`DafBackend.pin_moved` tells why."""
    return dir_fd is not None and exc.errno == errno.ESTALE


def readonly(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    arr.flags.writeable = False
    return arr


class DafBackend:
    """The key-value interface ZarrDaf runs on."""

    kind = ""
    read_only = False
    append_only = False
    consolidates = False  # keeps consolidated metadata (directories only)
    #: A transaction that raises leaves nothing it wrote or deleted (ZIP: one batch).
    rolls_back = False
    #: :meth:`pinned` reads a node from one state even while a writer changes it (a
    #: directory); other backends read a node from one state through the data set's
    #: :class:`~.changelock.ChangeLock`.
    pins = False

    def change_lock(self) -> ChangeLock | None:
        """The :class:`~.changelock.ChangeLock` every data set over this medium shares (a
        ZIP archive's, shared by every handle of the process on it), or None: each data set
        has its own."""
        return None

    def consolidation_lock(self) -> contextlib.AbstractContextManager[None]:
        """Held while the consolidated metadata is checked and rewritten."""
        return contextlib.nullcontext()

    def get(self, key: str) -> Any:
        """The bytes of a key (a buffer, zero-copy where possible), or ``None``."""
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def put(self, items: Iterable[tuple[str, Any]]) -> None:
        """Write keys in the given order (children before the documents that publish them)."""
        raise NotImplementedError

    def children(self, prefix: str) -> list[str]:
        """The names directly below node ``prefix`` ("" for the root)."""
        raise NotImplementedError

    def delete_tree(self, prefix: str) -> None:
        raise NotImplementedError

    def keys_under(self, prefix: str) -> list[str]:
        """Every key below ``prefix`` (relative to the root), for copies and consolidation."""
        raise NotImplementedError

    def mmap_as(
        self, key: str, dtype: np.dtype[Any], shape: tuple[int, ...], *, populate: bool = False
    ) -> np.ndarray[Any, Any] | None:
        """A read-only array over the key's bytes (zero-copy where possible), or ``None``.

        ``populate``: the caller will read every byte (map the pages at once)."""
        data = self.get(key)
        if data is None:
            return None
        return self._as_array(data, dtype, shape)

    @staticmethod
    def _as_array(
        data: Any, dtype: np.dtype[Any], shape: tuple[int, ...]
    ) -> np.ndarray[Any, Any] | None:
        mv = memoryview(data).cast("B")
        if mv.nbytes != math.prod(shape) * dtype.itemsize:
            return None
        return readonly(np.frombuffer(mv, dtype).reshape(shape))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A group of writes that commits (ZIP: rolls back) as a whole."""
        yield

    @contextlib.contextmanager
    def pinned(self, prefix: str) -> Iterator[bool]:
        """Within: this thread reads the keys below node ``prefix`` from one state of it;
        yields whether this call pinned it (False: an enclosing pin holds it already, or this
        backend does not pin: only a directory does)."""
        yield False

    def pin_moved(self, key: str) -> bool:
        """Whether the node pinned around ``key`` is no longer the one at its path (it was
        deleted or replaced since it was pinned): a key missing from it may be missing
        because of that change, not in the state read."""
        return False

    def reserve(self, key: str, nbytes: int) -> np.ndarray[Any, Any]:
        """A writable zeroed byte array that becomes the key's data (fill, then ``seal``).

        Outside a ZIP the reservation is kept aside: the key keeps its old data, if any,
        until ``seal`` (a ZIP refuses to reserve an existing key)."""
        raise NotImplementedError

    def seal(self, key: str) -> None:
        """Make a filled reservation the key's data (ZIP: store its CRC-32)."""

    def abandon(self, key: str) -> None:
        """Drop a reservation whose fill failed."""

    def stamp(self, key: str) -> Any:
        """Something that changes whenever the key is rewritten (directories: its stat)."""
        return None

    def version(self) -> Any:
        """Something that changes whenever any handle or process changes the data set
        (compared by the query cache; None where only this handle can change it)."""
        return None

    def zarr_store(self) -> tuple[Store, str]:
        """A zarr-python store and the root path in it, for layouts dafzarr does not map."""
        return _BackendStore(self), ""

    def sweep_asides(self) -> None:
        """Remove what failed deletes left aside (directories; nothing elsewhere)."""

    def describe(self) -> str:
        return self.kind

    def close(self) -> None:
        pass


# --- Directory --------------------------------------------------------------------------------


class DirectoryBackend(DafBackend):
    """A ``.daf.zarr`` directory; keys are relative file paths.

    ``durable``: each file written is fsynced before it is renamed into place, and the
    directories whose entries changed are fsynced before the write returns, so that the
    writes survive a power loss in the order they were made.
    """

    kind = "directory"
    consolidates = True
    pins = True

    def __init__(self, root: str, *, read_only: bool, durable: bool = False) -> None:
        self.root = root
        self.read_only = read_only
        self.durable = durable
        # Reservations being filled: key -> (staging file, its mapping).
        self._fills: dict[str, tuple[str, np.ndarray[Any, Any]]] = {}
        self._staged = itertools.count()
        self._asides = Asides()
        # Metadata documents by key, with the (inode, size, mtime) they were read at: a
        # lookup then costs one stat, and a file replaced by any writer is read again.
        self._docs: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        # This thread's pinned nodes: (prefix, descriptor of its directory, -1 if absent).
        self._pins = threading.local()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *key.split("/"))

    @contextlib.contextmanager
    def consolidation_lock(self) -> Iterator[None]:
        """An advisory lock on the directory itself, across processes.

        Each writer checks whether the consolidated metadata is still the one it wrote and
        then rewrites it; without the lock, two processes can both pass the check and the
        later rewrite drops the other's new arrays. Locking the directory's own descriptor
        adds no file to the data set. Where the file system refuses locks (some network
        file systems), writes proceed unlocked, as before.
        """
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                    raise
            yield
        finally:
            # Unlocked before the close: a close that fails must not leave the lock held
            # (the change's rollback takes it again to rebuild the consolidated metadata).
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @contextlib.contextmanager
    def pinned(self, prefix: str) -> Iterator[bool]:
        """Reads below ``prefix`` go through one descriptor of its directory, opened now:
        its files are those of the directory linked at ``prefix`` now, even once a writer
        has renamed it aside (a delete, an overwrite) and made another in its place."""
        pins: list[tuple[str, int]] = self._pins.__dict__.setdefault("list", [])
        if any(prefix == p or prefix.startswith(p + "/") for p, _fd in pins):
            yield False
            return
        try:
            fd = os.open(self._path(prefix), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            fd = -1  # absent: reads below it find nothing
        pins.append((prefix, fd))
        try:
            yield True
        finally:
            pins.remove((prefix, fd))
            if fd >= 0:
                os.close(fd)

    def _pin_of(self, key: str) -> tuple[str, int] | None:
        for prefix, fd in self._pins.__dict__.get("list", ()):
            if key.startswith(prefix + "/") or key == prefix:
                return prefix, fd
        return None

    def _where(self, key: str) -> tuple[str, int | None]:
        """The path to open ``key`` at and the directory descriptor it is relative to (None:
        the path is the full one; -1: the pinned node was absent)."""
        pin = self._pin_of(key)
        if pin is None:
            return self._path(key), None
        prefix, fd = pin
        return os.path.join(*key[len(prefix) + 1 :].split("/")), fd

    def pin_moved(self, key: str) -> bool:
        pin = self._pin_of(key)
        if pin is None:
            return False
        prefix, fd = pin
        try:
            now = os.stat(self._path(prefix))
        except (FileNotFoundError, NotADirectoryError):
            return fd >= 0
        if fd < 0:
            return True
        try:
            then = os.fstat(fd)
        except OSError:  # ESTALE: a network file system's directory removed meanwhile
            return True
        return then.st_nlink == 0 or (then.st_ino, then.st_dev) != (now.st_ino, now.st_dev)

    def get(self, key: str) -> Any:
        path, dir_fd = self._where(key)
        if dir_fd == -1:
            return None
        is_doc = key.rsplit("/", 1)[-1] in METADATA_NAMES
        try:
            if is_doc:
                st = os.stat(path, dir_fd=dir_fd)
                stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
                cached = self._docs.get(key)
                if cached is not None and cached[0] == stamp:
                    return cached[1]
            with open(path, "rb", opener=functools.partial(os.open, dir_fd=dir_fd)) as f:
                data = f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            if _gone_from_pin(exc, dir_fd):
                return None
            raise
        if is_doc and len(data) == stamp[1]:
            self._docs[key] = (stamp, data)
        return data

    def exists(self, key: str) -> bool:
        path, dir_fd = self._where(key)
        if dir_fd == -1:
            return False
        try:
            return stat.S_ISREG(os.stat(path, dir_fd=dir_fd).st_mode)
        except (OSError, ValueError):  # as os.path.isfile
            return False

    def stamp(self, key: str) -> Any:
        try:
            st = os.stat(self._path(key))
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def version(self) -> Any:
        # Every write and delete rewrites the consolidated metadata (by a rename).
        return self.stamp(".zmetadata"), self.stamp("zarr.json")

    def _makedirs(self, directory: str) -> list[str]:
        """Create ``directory`` and its missing parents; the directories whose entries
        changed, deepest first (to fsync when durable)."""
        missing: list[str] = []
        d = os.path.abspath(directory)
        while not os.path.isdir(d) and os.path.dirname(d) != d:
            missing.append(d)
            d = os.path.dirname(d)
        os.makedirs(directory, exist_ok=True)
        return [os.path.dirname(m) for m in missing]

    def _settle(self, path: str, changed: list[str]) -> None:
        """When durable: fsync the directory of ``path`` and those in ``changed``."""
        if self.durable:
            for d in [os.path.dirname(path), *changed]:
                fsync_directory(d)

    def put(self, items: Iterable[tuple[str, Any]]) -> None:
        for key, data in items:
            path = self._path(key)
            self._asides.writing(path)
            changed = self._makedirs(os.path.dirname(path))
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            try:
                with open(tmp, "wb") as f:
                    if isinstance(data, StreamedChunk):  # computed as written
                        for block in data.blocks():
                            _write_in_pieces(f, block)
                    else:
                        _write_in_pieces(f, data)
                    if self.durable:
                        f.flush()
                        os.fsync(f.fileno())
                os.replace(tmp, path)  # atomic: readers see the old or the new bytes
                self._settle(path, changed)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def children(self, prefix: str) -> list[str]:
        try:
            with retry_interrupted(os.scandir, self._path(prefix) if prefix else self.root) as it:
                return sorted(e.name for e in it if e.is_dir() and not e.name.endswith(ASIDE))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete_tree(self, prefix: str) -> None:
        """Rename the node aside at once; inside a transaction it is removed when the
        transaction passes and put back when it fails, else removed now (see
        :class:`~._asides.Asides`)."""
        path = self._path(prefix)
        if os.path.isdir(path):
            self._asides.delete(path, lambda: self._settle(path, []))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Deletes (and so overwrites) that stand or fall together."""
        with self._asides.transaction(lambda path: self._settle(path, [])):
            yield

    def sweep_asides(self) -> None:
        """Remove the deleted nodes that a failed removal or a killed process left aside."""
        sweep_asides(self.root)

    def keys_under(self, prefix: str) -> list[str]:
        base = self._path(prefix) if prefix else self.root
        out: list[str] = []
        for dirpath, _dirs, files in walk(base):
            rel = os.path.relpath(dirpath, self.root)
            out.extend(
                name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}" for name in files
            )
        return out

    def mmap_as(
        self, key: str, dtype: np.dtype[Any], shape: tuple[int, ...], *, populate: bool = False
    ) -> np.ndarray[Any, Any] | None:
        nbytes = math.prod(shape) * dtype.itemsize
        path, dir_fd = self._where(key)
        if dir_fd == -1:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if _gone_from_pin(exc, dir_fd):
                return None
            raise
        try:
            if os.fstat(fd).st_size != nbytes:
                return None
            if nbytes == 0:
                return readonly(np.empty(shape, dtype))
            if nbytes <= _READ_AT_MOST:  # None if cut short since fstat: the caller reports it
                return self._as_array(os.pread(fd, nbytes, 0), dtype, shape)
            flags = mmap.MAP_SHARED | (_MAP_POPULATE if populate else 0)
            with named_map_refusal(self._path(key), lambda: nbytes):
                m = mmap.mmap(fd, nbytes, flags=flags, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        return readonly(np.frombuffer(m, dtype).reshape(shape))

    def reserve(self, key: str, nbytes: int) -> np.ndarray[Any, Any]:
        """A new file at the root (a ``.tmp`` name, which consolidation skips), mapped;
        ``seal`` renames it into place, so the node being replaced stays readable and whole
        until then (deleting it removes no reservation)."""
        staged = os.path.join(
            self.root,
            f".fill.{os.getpid()}.{threading.get_ident()}.{next(self._staged)}.tmp",
        )
        with removed_on_failure(staged):
            with open(staged, "wb") as f:
                os.ftruncate(f.fileno(), nbytes)  # (retried on EINTR; f.truncate is not)
            arr = (
                np.zeros(0, np.uint8)
                if nbytes == 0
                else np.memmap(staged, np.uint8, mode="r+", shape=(nbytes,))
            )
        self._fills[key] = (staged, arr)
        return arr

    def seal(self, key: str) -> None:
        staged, arr = self._fills.pop(key)
        with removed_on_failure(staged):
            if isinstance(arr, np.memmap):
                arr.flush()
            path = self._path(key)
            self._asides.writing(path)
            changed = self._makedirs(os.path.dirname(path))
            if self.durable:
                fd = os.open(staged, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            os.replace(staged, path)  # a file mapped elsewhere is never truncated
            self._settle(path, changed)

    def abandon(self, key: str) -> None:
        fill = self._fills.pop(key, None)
        if fill is not None:
            with contextlib.suppress(OSError):
                os.unlink(fill[0])

    def zarr_store(self) -> tuple[Store, str]:
        from zarr.storage import LocalStore

        return LocalStore(self.root, read_only=True), ""

    def describe(self) -> str:
        return self.root


# --- Memory -----------------------------------------------------------------------------------


class MemoryBackend(DafBackend):
    """An in-memory dict of keys; reads alias the stored buffers."""

    kind = "memory"

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self._fills: dict[str, np.ndarray[Any, Any]] = {}  # reservations being filled

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def exists(self, key: str) -> bool:
        return key in self.data

    def put(self, items: Iterable[tuple[str, Any]]) -> None:
        for key, data in items:
            if isinstance(data, bytes):
                self.data[key] = data
            else:
                # Own a copy: the caller's array may change after set_*.
                self.data[key] = np.array(memoryview(data).cast("B"), np.uint8)
                self.data[key].flags.writeable = False

    def children(self, prefix: str) -> list[str]:
        # A snapshot of the keys: another thread may write meanwhile.
        return children_of(list(self.data), prefix)

    def delete_tree(self, prefix: str) -> None:
        head = prefix + "/"
        for key in [k for k in self.data if k.startswith(head)]:
            del self.data[key]

    def keys_under(self, prefix: str) -> list[str]:
        head = prefix + "/" if prefix else ""
        return [k for k in list(self.data) if k.startswith(head)]

    def reserve(self, key: str, nbytes: int) -> np.ndarray[Any, Any]:
        arr = np.zeros(nbytes, np.uint8)
        self._fills[key] = arr
        return arr

    def seal(self, key: str) -> None:
        arr = self._fills.pop(key)
        arr.flags.writeable = False
        self.data[key] = arr

    def abandon(self, key: str) -> None:
        self._fills.pop(key, None)

    def describe(self) -> str:
        return "<memory>"


def children_of(keys: Iterable[str], prefix: str) -> list[str]:
    head = prefix + "/" if prefix else ""
    n = len(head)
    out = set()
    for key in keys:
        if key.startswith(head):
            name, sep, _rest = key[n:].partition("/")
            if sep:
                out.add(name)
    return sorted(out)


# --- ZIP ----------------------------------------------------------------------------------------


# --- A read-only zarr Store over a backend --------------------------------------------------------


class _BackendStore(Store):
    """Lets zarr-python decode arrays dafzarr does not map itself (chunked, compressed)."""

    def __init__(self, backend: DafBackend) -> None:
        super().__init__(read_only=True)
        self.backend = backend

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BackendStore) and other.backend is self.backend

    __hash__ = None  # type: ignore[assignment]

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        data = self.backend.get(key)
        if data is None:
            return None
        mv = memoryview(data).cast("B")
        start, stop = byte_range_bounds(len(mv), byte_range)
        return prototype.buffer.from_bytes(mv[start:stop])

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return [await self.get(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        return self.backend.exists(key)

    @property
    def supports_writes(self) -> bool:
        return False

    @property
    def supports_deletes(self) -> bool:
        return False

    @property
    def supports_listing(self) -> bool:
        return True

    async def set(self, key: str, value: Buffer) -> None:
        raise DafReadOnlyError("read-only store")

    async def delete(self, key: str) -> None:
        raise DafReadOnlyError("read-only store")

    async def list(self) -> AsyncIterator[str]:
        for key in self.backend.keys_under(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.backend.keys_under(""):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        head = prefix + "/" if prefix else ""
        seen = set()
        for key in self.backend.keys_under(prefix):
            name = key[len(head) :].split("/", 1)[0]
            if name not in seen:
                seen.add(name)
                yield name
