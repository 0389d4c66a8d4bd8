"""Reading entries: zero-copy views of stored data, decoded bytes of compressed entries.

Every function takes the :class:`~dafzarr._core.zipstore.state.Archive` and the mapping it reads
through; none writes to the file (resolving an entry's data offset only fills in the entry).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..._posix import FileMapping
from ...errors import CorruptArchiveError, UnsupportedEntryError
from . import ziprecords as zf
from .methods import decode_entry
from .state import Archive

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "VIEW_GRACE",
    "data_offset",
    "decoded",
    "mmap_entry_as",
    "raw_records",
    "read_entry",
    "unchanged",
    "views_gone",
]

#: How long :func:`views_gone` waits, at most, for views another thread is releasing.
VIEW_GRACE = 0.25


def views_gone(fm: FileMapping, grace: float = 0.0) -> bool:
    """Whether no zero-copy view of the mapping is alive, after giving them a chance to go.

    A full garbage collection frees the views that only unreachable cycles hold. With
    ``grace`` > 0, short sleeps (which hand the GIL over), each followed by another
    collection, then let another thread finish dropping views it is done with: zarr decodes
    on its own I/O thread, whose last step can still reference a read's buffers (and the
    cycles holding them) after the reading thread has its result, for as long as the
    interpreter lets the reading thread run (several milliseconds on a loaded machine).
    Costs nothing when no view is alive.
    """
    if not fm.exports:
        return True
    gc.collect()
    deadline = time.monotonic() + grace
    while fm.exports and time.monotonic() < deadline:
        time.sleep(0.002)
        if fm.exports:
            gc.collect()
    return not fm.exports


def data_offset(a: Archive, fm: FileMapping, e: zf.Entry) -> int:
    """Where the entry's data starts (read from its local header the first time)."""
    if e.data_offset < 0:
        limit = a.limit if e.end_limit < 0 else min(a.limit, e.end_limit)
        e.data_offset = zf.resolve_data_offset(fm.read, e, limit, a.path)
    return e.data_offset


def decoded(a: Archive, e: zf.Entry, raw: bytes) -> memoryview:
    """The decoded bytes of a compressed entry whose stored bytes are ``raw``."""
    return decode_entry(a.path, e, raw, a.max_decompressed_size)


def read_entry(a: Archive, fm: FileMapping, e: zf.Entry) -> memoryview:
    """The decoded bytes of an entry: a zero-copy view when it is stored."""
    if e.flags & zf.FLAG_ENCRYPTED:
        raise UnsupportedEntryError(
            f"{a.path}: entry {e.name!r} is encrypted; encrypted ZIP entries are not supported"
        )
    off = data_offset(a, fm, e)
    if e.method == 0:
        if e.csize != e.usize:
            raise CorruptArchiveError(
                f"{a.path}: stored entry {e.name!r} has compressed size {e.csize} "
                f"but uncompressed size {e.usize}"
            )
        return fm.view(off, e.csize)
    return memoryview(decoded(a, e, fm.read(off, e.csize)))


def unchanged(a: Archive, fm: FileMapping, e: zf.Entry, data: memoryview) -> bool:
    """Whether ``data`` equals the entry's bytes (a rewrite that changes nothing)."""
    if e.usize != data.nbytes:
        return False
    try:
        with read_entry(a, fm, e) as existing:
            return bool(existing == data)
    except (CorruptArchiveError, UnsupportedEntryError):
        return False  # an unreadable old copy is simply superseded


def mmap_entry_as(
    a: Archive,
    fm: FileMapping,
    key: str,
    dtype: npt.DTypeLike,
    shape: int | Iterable[int],
    order: Literal["C", "F"],
) -> np.ndarray[Any, Any] | None:
    """See :meth:`~dafzarr.zipstore.MmapZipStore.try_mmap_entry_as`."""
    dt = np.dtype(dtype)
    shp = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    e = a.index.get(key)
    if e is None or e.method != 0 or e.flags & zf.FLAG_ENCRYPTED or e.csize != e.usize:
        return None
    nbytes = math.prod(shp) * dt.itemsize
    if e.csize != nbytes:
        return None
    if nbytes == 0:
        empty = np.empty(shp, dt, order=order)
        empty.flags.writeable = False  # read-only, like every other view it returns
        return empty
    off = data_offset(a, fm, e)
    if (fm.address + off) % dt.alignment:
        return None
    return np.frombuffer(fm.view(off, nbytes), dt).reshape(shp, order=order)


def raw_records(a: Archive, fm: FileMapping) -> Iterator[tuple[zf.Entry, memoryview]]:
    """Each live entry (directories included) with its stored bytes, in file order.

    The bytes are the entry's data as it sits in the archive (still compressed for a
    compressed foreign entry), a zero-copy view of the mapping: release it before
    closing the store. For compaction, which copies entries without decoding them.
    """
    live = [e for e in a.entries if e.is_dir or a.index.get(e.name) is e]
    for e in sorted(live, key=lambda e: e.lfh_offset):
        off = data_offset(a, fm, e)
        yield e, fm.view(off, e.csize)
