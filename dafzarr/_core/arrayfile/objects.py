"""Where the objects of an ArrayFile live: local files, process memory, or any obstore store.

Every backend offers the same few blocking calls: read the tail of an object together with its
size and a version token (one request), read a byte range of a given version, put an object
atomically (optionally create-only, so two writers never replace each other's sidecar), delete,
and list the objects next to a key (one level only, never a recursive listing of a bucket).

The version token identifies one immutable generation of an object (inode/mtime/size for local
files, the ETag for object stores); caches key their entries by it, so bytes read before an
object was replaced are never served for the new object.

Every read goes through :mod:`dafzarr._core.io` (one byte-source per object: a local file, bytes
in memory, an obstore object with checked lengths, retries and a deadline); this module adds
the write side.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import posixpath
import threading
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import RefusedEntryWarning, TruncatedDataError
from ..atomic import (
    copy_mode,
    link_descriptor,
    link_temporary,
    locked_temporary,
    remove_stale_temporaries,
    retry_interrupted,
    unmark_live,
)
from ..io import (
    BytesLike,
    FileSource,
    MemorySource,
    ObjectSource,
    file_version,
    object_version,
    same_object,
)
from ..zipstore.ziprecords import unsafe_name_reason

__all__ = [
    "ArrayFileStorage",
    "FileRange",
    "LocalStorage",
    "MemoryStorage",
    "ObstoreStorage",
    "Tail",
]


class FileRange:
    """Bytes of an open temporary file, passed to :meth:`ArrayFileStorage.put` without reading them
    into memory first (a local put copies them in the kernel)."""

    __slots__ = ("fd", "length", "offset")

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self.fd = fd
        self.offset = offset
        self.length = length

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        data = os.pread(self.fd, self.length, self.offset)
        if len(data) != self.length:
            raise TruncatedDataError(f"short read of a temporary block file ({len(data)} bytes)")
        return data


def _joined(parts: Iterable[Any]) -> bytes:
    return b"".join(p.read() if isinstance(p, FileRange) else p for p in parts)


def _copy_range(src: FileRange, dst_fd: int) -> None:
    """Append ``src`` to ``dst_fd`` (at its file position), in the kernel where possible."""
    offset, left = src.offset, src.length
    while left:
        try:
            n = os.copy_file_range(src.fd, dst_fd, left, offset)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            n = 0
        if n == 0:  # not supported here: an ordinary copy
            data = os.pread(src.fd, min(left, 8 << 20), offset)
            if not data:
                raise TruncatedDataError("short read of a temporary block file")
            n = os.write(dst_fd, data)
        offset += n
        left -= n


class Tail:
    """The last bytes of an object, with its total size and version token."""

    __slots__ = ("data", "size", "version")

    def __init__(self, data: BytesLike, size: int, version: str) -> None:
        self.data = data
        self.size = size
        self.version = version


class ArrayFileStorage:
    """Abstract object access; keys are '/'-separated names (absolute paths for files)."""

    ident: str
    #: Whether :meth:`read_into` reads straight into the caller's buffers (worth using for
    #: chunk-sized reads); otherwise readers fetch whole blocks and cache them.
    direct_reads = False

    def tail(self, key: str, n: int) -> Tail:
        raise NotImplementedError

    def read(self, key: str, version: str, start: int, end: int) -> BytesLike:
        raise NotImplementedError

    def read_ranges(
        self, key: str, version: str, ranges: Sequence[tuple[int, int]]
    ) -> list[BytesLike]:
        """The bytes of each ``(start, end)`` of one version of ``key`` (concurrently where
        the store allows it)."""
        return [self.read(key, version, a, b) for a, b in ranges]

    def read_into(self, key: str, version: str, start: int, buffers: Sequence[memoryview]) -> None:
        """Fill ``buffers`` in order with the bytes of one version of ``key`` from ``start``
        (``EOFError`` if the object ends first)."""
        end = start + sum(b.nbytes for b in buffers)
        data = memoryview(self.read(key, version, start, end)).cast("B")
        if data.nbytes != end - start:
            raise TruncatedDataError(f"{key}: short read of [{start}, {end})")
        pos = 0
        for b in buffers:
            b[:] = data[pos : pos + b.nbytes]
            pos += b.nbytes

    def put(self, key: str, parts: Iterable[Any], *, create_only: bool) -> str:
        """Store ``parts`` concatenated as ``key`` atomically; return the new version token.

        With ``create_only``, raise :class:`FileExistsError` if ``key`` exists.
        """
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        raise NotImplementedError

    def siblings(self, key: str) -> list[str]:
        """The keys in the same directory/prefix level as ``key`` (not recursive)."""
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def unchanged(self, key: str, version: str) -> bool:
        """Whether ``key`` is still the object :meth:`tail` saw as ``version``."""
        raise NotImplementedError

    def release(self, key: str) -> None:
        """Forget any handle kept open for ``key``."""

    def sweep(self) -> None:
        """Remove what writers killed in the middle of a put left next to the file set."""

    def close(self) -> None:
        """Release every handle."""


# --- Local files -----------------------------------------------------------------------


class _LocalFile(FileSource):
    """A :class:`~dafzarr._core.io.FileSource` that also reads straight into buffers."""

    def read_into(self, start: int, buffers: Sequence[memoryview]) -> None:
        """Fill ``buffers`` in order from ``start`` with ``preadv`` (no intermediate copy)."""
        bufs = list(buffers)
        i, pos = 0, start
        while i < len(bufs):
            n = os.preadv(self._fd, bufs[i : i + _IOV_MAX], pos)
            if n == 0:
                raise TruncatedDataError(f"{self.where}: short read at {pos}")
            pos += n
            while i < len(bufs) and n >= bufs[i].nbytes:
                n -= bufs[i].nbytes
                i += 1
            if n:
                bufs[i] = bufs[i][n:]


_IOV_MAX = 1024  # POSIX requires at least 16; Linux allows 1024 buffers per call


class LocalStorage(ArrayFileStorage):
    """Files on a POSIX file system; writes go to a temporary file then are renamed or linked.

    An open :class:`~dafzarr._core.io.FileSource` is kept per object version, so a reader keeps
    seeing the generation it opened even after the name is replaced. ``base``: the base
    object of the file set; the temporaries of every put are named after it and flocked while
    they are written (see :mod:`dafzarr._core.atomic`), and :meth:`sweep` removes those a killed
    writer left once they are stale. No put needs ``flock`` otherwise (a new sidecar gets its
    name with a create-only link): on a file system without it the temporaries are written
    unlocked and the sweep removes none.
    """

    direct_reads = True

    def __init__(self, base: str | None = None) -> None:
        self.ident = "file"
        self._base = base
        self._sources: dict[str, _LocalFile] = {}
        self._lock = threading.Lock()

    def _source(self, key: str, version: str | None) -> _LocalFile:
        with self._lock:
            cur = self._sources.get(key)
            if cur is not None and (version is None or cur.version == version):
                return cur
        src = _LocalFile(key)
        if version is not None and src.version != version:
            src.close()
            raise FileNotFoundError(errno.ESTALE, f"{key} was replaced since it was opened", key)
        with self._lock:
            old = self._sources.pop(key, None)
            self._sources[key] = src
        if old is not None:
            old.close()
        return src

    def tail(self, key: str, n: int) -> Tail:
        self.release(key)
        data, head = self._source(key, None).read_tail(n)
        return Tail(data, head.size, head.version)

    def read(self, key: str, version: str, start: int, end: int) -> BytesLike:
        return self._source(key, version).read(start, end)

    def read_into(self, key: str, version: str, start: int, buffers: Sequence[memoryview]) -> None:
        self._source(key, version).read_into(start, buffers)

    def put(self, key: str, parts: Iterable[Any], *, create_only: bool) -> str:
        parts = list(parts)
        directory = os.path.dirname(key) or "."
        staged = _staged_prefix(parts, directory)
        if staged is not None and self._put_staged(key, staged, parts, create_only=create_only):
            return self._keep(key, os.dup(staged[0]))
        with locked_temporary(*self._temporary_of(key), sweep=False) as (fd, tmp):
            self._copy_base_mode(fd)
            with open(fd, "wb", closefd=False) as f:
                for part in parts:
                    if isinstance(part, FileRange):
                        f.flush()
                        _copy_range(part, fd)
                    else:
                        f.write(part)
            os.fsync(fd)
            if create_only:
                os.link(tmp, key)  # EEXIST: never replaces another writer's object
                os.unlink(tmp)
            else:
                os.replace(tmp, key)
            _fsync_dir(directory)
            unmark_live(fd)  # the lock marks a live temporary, gone now
            kept = os.dup(fd)
        return self._keep(key, kept)

    def _put_staged(
        self, key: str, staged: tuple[int, int], parts: list[Any], *, create_only: bool
    ) -> bool:
        """Append the parts after the staged ranges to the staged file, make it durable and
        link it in as ``key``; False when the file cannot be linked (the caller copies)."""
        fd, end = staged
        _append_after(fd, end, parts, key)
        self._copy_base_mode(fd)
        os.fsync(fd)
        try:
            if create_only:
                link_descriptor(fd, key)
            else:
                tmp = link_temporary(fd, *self._temporary_of(key))
        except FileExistsError:
            raise  # another writer's object
        except OSError:
            return False  # no /proc, or linking refused: copy the bytes instead
        if not create_only:
            try:
                os.replace(tmp, key)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                unmark_live(fd)
        _fsync_dir(os.path.dirname(key) or ".")
        return True

    def _temporary_of(self, key: str) -> tuple[str, str]:
        """(destination, suffix) naming the temporaries written for ``key``: every one is a
        temporary of the base (``.NAME.af.<pid>-<random>.dafzarr-tmp`` and the part of
        ``key`` after the stem, ``.stats`` or ``.N.af``), so one sweep finds them all."""
        base = self._base
        if base is None or not key.startswith(base[:-3]):
            return key, ""
        return base, key[len(base) - 3 :]

    def _copy_base_mode(self, fd: int) -> None:
        """Every object of the file set gets the base's permission bits (a new one: the
        umask's, from 0666)."""
        if self._base is not None:
            copy_mode(fd, self._base)

    def sweep(self) -> None:
        if self._base is not None:
            remove_stale_temporaries(self._base)

    def _keep(self, key: str, fd: int) -> str:
        """Serve the reads of ``key`` from ``fd``, the file just published under that name
        (a new sidecar, which another process's compaction may delete at any time); its
        version. A source already open for ``key`` (an older generation a reader may still
        use) is kept instead."""
        src = _LocalFile(key, fd)
        with self._lock:
            kept = self._sources.setdefault(key, src) is src
        if not kept:
            src.close()
        return src.version

    def delete(self, key: str) -> None:
        self.release(key)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(key)
        _fsync_dir(os.path.dirname(key) or ".")

    def siblings(self, key: str) -> list[str]:
        directory = os.path.dirname(key) or "."
        return [os.path.join(directory, name) for name in retry_interrupted(os.listdir, directory)]

    def exists(self, key: str) -> bool:
        return os.path.exists(key)

    def unchanged(self, key: str, version: str) -> bool:
        return file_version(os.stat(key)) == version

    def release(self, key: str) -> None:
        with self._lock:
            cur = self._sources.pop(key, None)
        if cur is not None:
            cur.close()

    def close(self) -> None:
        with self._lock:
            sources, self._sources = self._sources, {}
        for src in sources.values():
            src.close()


def _staged_prefix(parts: list[Any], directory: str) -> tuple[int, int] | None:
    """``(fd, length)`` when ``parts`` starts with ranges that lay out ``[0, length)`` of one
    unnamed temporary file (``O_TMPFILE``) on the file system of ``directory``, and the other
    parts are bytes: that file can then become the object itself, with the rest appended."""
    first = parts[0] if parts else None
    if not isinstance(first, FileRange):
        return None
    fd, end, tail = first.fd, 0, False
    for part in parts:
        if not isinstance(part, FileRange):
            tail = True
        elif tail or part.fd != fd or part.offset != end:
            return None
        else:
            end += part.length
    try:
        st = os.fstat(fd)
        same_fs = st.st_dev == os.stat(directory).st_dev
    except OSError:
        return None
    return (fd, end) if st.st_nlink == 0 and same_fs else None


def _append_after(fd: int, end: int, parts: list[Any], key: str) -> None:
    """Write the byte parts of ``parts`` (not its ranges) to ``fd`` from ``end`` on, cutting
    off what an earlier attempt may have appended there."""
    os.ftruncate(fd, end)
    pos = end
    for part in parts:
        if isinstance(part, FileRange):
            continue
        view = memoryview(part).cast("B")
        done = 0
        while done < len(view):
            n = os.pwrite(fd, view[done:], pos + done)
            if n <= 0:
                raise OSError(errno.ENOSPC, f"{key}: short write ({done} bytes)", key)
            done += n
        pos += done


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- Process memory --------------------------------------------------------------------

_counter = itertools.count(1)


class MemoryStorage(ArrayFileStorage):
    """Objects held in a dict (``ArrayFile.create_memory``); nothing survives the process."""

    def __init__(self) -> None:
        self.ident = f"memory-{next(_counter)}"
        self._objects: dict[str, MemorySource] = {}
        self._lock = threading.Lock()

    def _get(self, key: str) -> MemorySource:
        try:
            return self._objects[key]
        except KeyError:
            raise FileNotFoundError(errno.ENOENT, "no such object", key) from None

    def tail(self, key: str, n: int) -> Tail:
        data, head = self._get(key).read_tail(n)
        return Tail(data, head.size, head.version)

    def read(self, key: str, version: str, start: int, end: int) -> BytesLike:
        return self._get(key).read(start, end, version=version)

    def put(self, key: str, parts: Iterable[Any], *, create_only: bool) -> str:
        data = _joined(parts)
        with self._lock:
            if create_only and key in self._objects:
                raise FileExistsError(errno.EEXIST, "object exists", key)
            version = str(next(_counter))
            self._objects[key] = MemorySource(data, version=version, where=key)
        return version

    def delete(self, key: str) -> None:
        with self._lock:
            self._objects.pop(key, None)

    def siblings(self, key: str) -> list[str]:
        parent = posixpath.dirname(key)
        return [k for k in list(self._objects) if posixpath.dirname(k) == parent]

    def exists(self, key: str) -> bool:
        return key in self._objects

    def unchanged(self, key: str, version: str) -> bool:
        return self._get(key).version == version


# --- obstore ---------------------------------------------------------------------------


class ObstoreStorage(ArrayFileStorage):
    """Any obstore store (local, memory, S3, GCS, Azure, HTTP for reading).

    Opening costs one suffix-range GET per object; range reads go through
    :class:`~dafzarr._core.io.ObjectSource` (lengths checked, bodies cut short retried, a deadline)
    and are pinned to the ETag seen at open time (``if_match``), so a replaced object raises
    instead of returning mixed bytes. Sidecars are created with ``mode="create"`` (a
    conditional, create-only PUT).
    """

    def __init__(self, store: Any) -> None:
        import obstore

        self._obs = obstore
        self.store = store
        self.ident = f"obstore-{id(store):x}"

    def _where(self, key: str) -> str:
        return f"{self.store!r} {key}"

    def _source(self, key: str) -> ObjectSource:
        return ObjectSource(self.store, key, where=self._where(key))

    def tail(self, key: str, n: int) -> Tail:
        data, head = self._source(key).read_tail(n)
        return Tail(data, head.size, head.version)

    def read(self, key: str, version: str, start: int, end: int) -> BytesLike:
        return self._source(key).read(start, end, version=version)

    def read_ranges(
        self, key: str, version: str, ranges: Sequence[tuple[int, int]]
    ) -> list[BytesLike]:
        return self._source(key).read_ranges(ranges, version=version)

    def put(self, key: str, parts: Iterable[Any], *, create_only: bool) -> str:
        from obstore.exceptions import AlreadyExistsError

        data = _joined(parts)
        try:
            res = self._obs.put(
                self.store, key, data, mode="create" if create_only else "overwrite"
            )
        except AlreadyExistsError as exc:
            raise FileExistsError(errno.EEXIST, "object exists", key) from exc
        etag = res.get("e_tag")
        if etag is None:  # some stores do not return one: ask
            meta = self._obs.head(self.store, key)
            return object_version(meta)
        return f"{etag}|{res.get('version')}|{len(data)}"

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._obs.delete(self.store, key)

    def siblings(self, key: str) -> list[str]:
        """The listed keys next to ``key``; a listed key that is not directly next to it, or
        whose name is unsafe (``..``, absolute, ...), is not used, and is named in a
        :class:`~dafzarr.errors.RefusedEntryWarning`."""
        parent = posixpath.dirname(key)
        listing = self._obs.list_with_delimiter(self.store, parent or None)
        kept, refused = [], []
        for listed in (str(o["path"]) for o in listing["objects"]):
            reason = unsafe_name_reason(listed)
            if reason is None and posixpath.dirname(listed) != parent:
                reason = f"it is not in {parent or 'the top level'}, the level listed"
            if reason is None:
                kept.append(listed)
            else:
                refused.append(f"{listed!r} ({reason.replace('its name', 'it')})")
        if refused:
            warnings.warn(
                f"{self._where(key)}: listed objects whose names are unsafe are not used: "
                + "; ".join(refused),
                RefusedEntryWarning,
                stacklevel=3,
            )
        return kept

    def unchanged(self, key: str, version: str) -> bool:
        """One HEAD request; a server that sends no ETag is compared by size and
        modification time (a range answer may lack the time: then by size)."""
        return same_object(self._source(key).head().version, version)

    def exists(self, key: str) -> bool:
        try:
            self._obs.head(self.store, key)
        except FileNotFoundError:
            return False
        return True
