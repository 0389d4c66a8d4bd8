"""The store's own synchronous operations beyond zarr's API: many entries in one commit,
reserved and streamed entries, an entry copied from another archive, an entry mapped as a
numpy array, and the accounting, checking and listing of the archive.

Each is a method of :class:`~dafzarr.zipstore.MmapZipStore` (bound there), written against
the :class:`~dafzarr._core.zipstore.handle.ArchiveHandle` state it works on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ...errors import EntryNotFoundError, InvalidArgumentError, UnsupportedEntryError
from . import commit, read, write
from . import space as accounting
from .handle import ArchiveHandle
from .input import as_bytes_view, encode_key
from .space import ArchiveSpace
from .write import copy_range

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "copy_entry",
    "info",
    "patch_entry_crc",
    "reserve_entry",
    "set_many",
    "set_streamed",
    "space",
    "try_mmap_entry_as",
    "verify",
]

# Below a megabyte, populating a reservation's pages saves less than the call costs.
_POPULATE_MIN = 1 << 20


def set_many(self: ArchiveHandle, items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
    """Write many entries in one commit: ``store[key] = value`` for each pair, in order,
    inside one :meth:`batch` (joining the open one, if any).

    Runs of new small entries are written by one compiled call each, the fastest way to add
    many small entries (see the README's benchmarks).

    Parameters
    ----------
    items : mapping or iterable of (str, bytes-like)
        The entries: a mapping, or ``(key, value)`` pairs.

    Raises
    ------
    InvalidArgumentError
        A key is not a valid entry name, or a value is not bytes-like; no entry of the
        call survives.
    AppendOnlyError
        The store is append-only and a key exists.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("many.zip", mode="w")
    >>> store.set_many({"a": b"1", "b": b"22"})
    >>> store.set_many([("c", b"333")])
    >>> store.keys()
    ['a', 'b', 'c']
    >>> store.close()
    """
    pairs: list[Any] = list(items.items() if isinstance(items, Mapping) else items)
    with self.batch():
        i, n = 0, len(pairs)
        while i < n:
            with self._lock:
                fm = self._fm
                if fm is not None:
                    i = write.stage_small_run(self._archive, fm, pairs, i)
            if i < n:
                key, value = pairs[i]
                self._append(key, value)
                i += 1


def reserve_entry(
    self: ArchiveHandle, key: str, nbytes: int, *, populate: bool = False
) -> npt.NDArray[np.uint8]:
    """Append an entry of ``nbytes`` zero bytes and return a writable view of its data.

    Fill the view in place, then call :meth:`patch_entry_crc`. Until then the entry has
    CRC 0, and the next writable open rolls it back (and every entry after it). The key
    must not exist: a reservation cannot supersede an entry, since rolling back an
    unfinished one would lose the old value too (delete the old entry first).

    Parameters
    ----------
    key : str
        The new entry.
    nbytes : int
        Its size in bytes.
    populate : bool, default False
        Map the view's pages writable in one call first (for a view about to be filled
        whole), instead of a fault and a file-system callback at the first store into each
        page, several times slower on ext4; it allocates the entry's page cache (and
        blocks) at once, so leave it off for a view filled sparsely.

    Returns
    -------
    numpy.ndarray
        A writable ``uint8`` view of the entry's data in the mapping.

    Raises
    ------
    InvalidArgumentError
        ``nbytes`` is negative, the key exists or is not a valid entry name.
    AddressSpaceError
        The archive would grow past ``max_file_size``.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("reserved.zip", mode="w")
    >>> view = store.reserve_entry("x", 8)
    >>> view[:] = np.arange(8, dtype=np.uint8)
    >>> del view
    >>> crc = store.patch_entry_crc("x")
    >>> bytes(store["x"])
    b'\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07'
    >>> store.close()
    """
    raw = encode_key(key, self.path)
    nbytes = int(nbytes)
    if nbytes < 0:
        raise InvalidArgumentError(f"cannot reserve a negative size ({nbytes}) for {key!r}")
    with self._lock, self._io(f"reserving entry {key!r}"):
        fm = self._check_writable_sync()
        offset = write.reserve(
            self._archive,
            fm,
            key,
            raw,
            nbytes,
            append_only=self.append_only,
            batch_room=self._batch_room,
        )
        if populate and nbytes >= _POPULATE_MIN:
            fm.populate(offset, nbytes, writable=True)
        return np.frombuffer(fm.view(offset, nbytes, writable=True), np.uint8)


def set_streamed(self: ArchiveHandle, key: str, nbytes: int, blocks: Iterable[Any]) -> None:
    """Store a new entry of ``nbytes`` bytes from consecutive ``blocks`` (buffers).

    For values computed piece by piece (an iterator may compute the next block while the
    previous one is written) or too large to assemble in memory first: each block is written
    as it comes, large ones with pwrite(2) into the page cache, and the CRC-32 is computed
    from the blocks themselves. The entry appears, complete and with its CRC, when the call
    commits (or with the open batch).

    Parameters
    ----------
    key : str
        The new entry (it must not exist).
    nbytes : int
        Its size: what the blocks add up to.
    blocks : iterable of bytes-like
        Its data, in order.

    Raises
    ------
    InvalidArgumentError
        ``nbytes`` is negative, the blocks do not add up to it, a block is not bytes-like,
        or the key exists or is not a valid entry name; no entry is left.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("streamed.zip", mode="w")
    >>> store.set_streamed("x", 6, (b"ab", b"cd", b"ef"))
    >>> bytes(store["x"])
    b'abcdef'
    >>> store.close()
    """
    raw = encode_key(key, self.path)
    nbytes = int(nbytes)
    if nbytes < 0:
        raise InvalidArgumentError(f"cannot store a negative size ({nbytes}) for {key!r}")
    with self.batch(), self._io(f"writing entry {key!r}"):
        with self._lock:
            fm = self._check_writable_sync()
            start = write.reserve(
                self._archive,
                fm,
                key,
                raw,
                nbytes,
                append_only=self.append_only,
                batch_room=self._batch_room,
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
            commit.patch_crc(self._archive, fm, self._archive.index[key], crc)


def patch_entry_crc(self: ArchiveHandle, key: str) -> int:
    """Store the CRC-32 of an entry's current data (after filling a reservation).

    Parameters
    ----------
    key : str
        The entry (made by :meth:`reserve_entry`).

    Returns
    -------
    int
        The CRC-32 stored.

    Raises
    ------
    EntryNotFoundError
        The archive has no entry ``key``.
    UnsupportedEntryError
        The entry is compressed: its data is not the bytes a view shows.
    ValueError
        The store is read-only (zarr's error).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("patched.zip", mode="w")
    >>> view = store.reserve_entry("x", 3)
    >>> view[:] = [1, 2, 3]
    >>> del view
    >>> store.patch_entry_crc("x")
    1438416925
    >>> store.close()
    """
    with self._lock, self._io(f"storing the CRC-32 of entry {key!r}"):
        fm = self._check_writable_sync()
        e = self._archive.index.get(key)
        if e is None:
            raise EntryNotFoundError(f"no entry {key!r} in {self.path}")
        if e.method != 0 or e.lfh_offset < 0:
            raise UnsupportedEntryError(f"{self.path}: entry {key!r} is not stored")
        return commit.patch_crc(self._archive, fm, e)


def copy_entry(self: ArchiveHandle, key: str, source: ArchiveHandle, source_key: str) -> bool:
    """Store a new entry ``key`` holding the bytes of ``source``'s entry ``source_key``.

    The bytes are copied from file to file by the kernel (``copy_file_range``), with the
    CRC-32 the source records (no pass over the bytes in this process).

    Parameters
    ----------
    key : str
        The new entry (it must not exist).
    source : MmapZipStore
        The store to copy from (open or not).
    source_key : str
        The entry of ``source`` to copy.

    Returns
    -------
    bool
        True when copied; False, and nothing written, when the source entry is absent or
        not a stored (uncompressed) one with a known CRC: the caller then writes the bytes
        itself.

    Raises
    ------
    InvalidArgumentError
        The key exists or is not a valid entry name.
    ValueError
        This store is read-only (zarr's error).

    Examples
    --------
    >>> with dafzarr.MmapZipStore("from.zip", mode="w") as source:
    ...     source["a"] = b"payload"
    >>> source = dafzarr.MmapZipStore("from.zip")
    >>> with dafzarr.MmapZipStore("to.zip", mode="w") as target:
    ...     target.copy_entry("b", source, "a")
    ...     bytes(target["b"])
    True
    b'payload'
    >>> source.close()
    """
    src_fm = source._ensure_open_sync()
    with source._lock:
        e = source._archive.index.get(source_key)
        if (
            e is None
            or e.method != 0
            or e.csize != e.usize
            or source_key in source._archive.unpatched
        ):
            return False
        offset, nbytes, crc = read.data_offset(source._archive, src_fm, e), e.usize, e.crc
    raw = encode_key(key, self.path)
    with self.batch(), self._io(f"writing entry {key!r}"), self._lock:
        fm = self._check_writable_sync()
        # The data at the source's offset within a page: the kernel copies whole pages.
        start = write.reserve(
            self._archive,
            fm,
            key,
            raw,
            nbytes,
            append_only=self.append_only,
            batch_room=self._batch_room,
            page_offset=offset % 4096,
        )
        copy_range(src_fm, offset, fm, start, nbytes)
        commit.patch_crc(self._archive, fm, self._archive.index[key], crc)
    return True


def try_mmap_entry_as(
    self: ArchiveHandle,
    key: str,
    dtype: npt.DTypeLike,
    shape: int | Iterable[int],
    *,
    order: Literal["C", "F"] = "C",
) -> np.ndarray[Any, Any] | None:
    """A read-only numpy array aliasing the entry's bytes in the mapping, or ``None``.

    Parameters
    ----------
    key : str
        The entry.
    dtype : numpy dtype-like
        The array's element type.
    shape : int or sequence of int
        The array's shape.
    order : {"C", "F"}, default "C"
        Its memory layout.

    Returns
    -------
    numpy.ndarray or None
        The array; ``None`` when the entry is absent, compressed or encrypted, when its size
        is not ``prod(shape) * dtype.itemsize``, or when its data is not aligned for
        ``dtype`` (then read ``store[key]``, which copies nothing either but gives bytes).

    Raises
    ------
    CorruptArchiveError
        The archive cannot be opened (at a first use after :meth:`close`).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("mapped.zip", mode="w")
    >>> store["x"] = np.arange(4, dtype="<i4").tobytes()
    >>> store.try_mmap_entry_as("x", "<i4", 4)
    array([0, 1, 2, 3], dtype=int32)
    >>> store.try_mmap_entry_as("x", "<i4", 3) is None
    True
    >>> store.close()
    """
    fm = self._ensure_open_sync()
    return read.mmap_entry_as(self._archive, fm, key, dtype, shape, order)


def space(self: ArchiveHandle) -> ArchiveSpace:
    """How the archive's bytes are used: live entries, dead copies, directory.

    Dead bytes are superseded and deleted entries (and anything else no entry claims);
    :meth:`compact` gives them back.

    Returns
    -------
    ArchiveSpace
        The byte accounting of the archive.

    Raises
    ------
    CorruptArchiveError
        The archive cannot be opened (at a first use after :meth:`close`).

    Examples
    --------
    >>> store = dafzarr.MmapZipStore("space.zip", mode="w")
    >>> store["a"] = b"old"
    >>> store["a"] = b"new"
    >>> used = store.space()
    >>> used.entries, used.dead_bytes > 0
    (1, True)
    >>> store.close()
    """
    with self._lock:
        return accounting.space(self._archive, self._ensure_open_sync())


def verify(self: ArchiveHandle) -> list[str]:
    """CRC-check every entry.

    Returns
    -------
    list of str
        The keys whose data does not match their CRC-32 (empty when all are intact).

    Raises
    ------
    CorruptArchiveError
        The archive cannot be opened (at a first use after :meth:`close`).

    Examples
    --------
    >>> with dafzarr.MmapZipStore("checked.zip", mode="w") as store:
    ...     store["a"] = b"data"
    ...     store.verify()
    []
    """
    return accounting.verify(self._archive, self._ensure_open_sync())


def info(self: ArchiveHandle) -> list[dict[str, Any]]:
    """One dict per entry of the central directory, in archive order (``dafzarr zip ls``).

    Returns
    -------
    list of dict
        Keys: ``name``, ``method``, ``compressed_size``, ``size``, ``crc32``,
        ``header_offset``, ``data_offset`` (None for directories and damaged entries),
        ``error`` (None, or why the entry cannot be read) and ``refused`` (None, or why its
        name is unsafe, so that it is not served): one bad entry does not hide the others.

    Raises
    ------
    CorruptArchiveError
        The archive cannot be opened (at a first use after :meth:`close`).

    Examples
    --------
    >>> with dafzarr.MmapZipStore("listed.zip", mode="w") as store:
    ...     store["a"] = b"xy"
    ...     [(e["name"], e["size"], e["error"]) for e in store.info()]
    [('a', 2, None)]
    """
    return accounting.info(self._archive, self._ensure_open_sync())
