"""CRC-32 (the ZIP polynomial): the one place dafzarr computes it.

ISA-L (the ``isal`` package) computes every CRC-32 of a buffer, on as many threads as
:func:`dafzarr._posix.get_threads` allows once a buffer is large enough to split: it releases
the GIL, each thread checksums a slice and the slices' CRCs are combined
(``crc(A‖B)`` from ``crc(A)``, ``crc(B)`` and ``len(B)``, :func:`dafzarr._posix.crc32_combine`).

The project's own kernel remains in one place only, where it still wins: storing an entry into
the archive's mapping while computing its CRC (:meth:`dafzarr._posix.FileMapping.write_crc32`),
which reads the source once (on every core from 32 MiB on) instead of once to copy and once to
checksum. ``python -m benchmarks.bench_zipstore --only e`` measures both choices against ISA-L
and the README quotes the figures.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from isal.isal_zlib import crc32 as _isal_crc32

from . import _posix

__all__ = ["SPLIT_MIN", "crc32", "mapped_crc32"]

#: Buffers from this size on are checksummed in slices on several threads.
SPLIT_MIN = 32 << 20
#: Slices start on multiples of this (whole huge pages for the copy kernel).
_SLICE_ALIGN = 2 << 20

_pool: ThreadPoolExecutor | None = None
_pool_threads = 0
_pool_lock = threading.Lock()


def _executor(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_threads
    with _pool_lock:
        if _pool is None or _pool_threads != threads:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="dafzarr-crc32")
            _pool_threads = threads
        return _pool


def _slices(n: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` ranges covering ``[0, n)``, cut on :data:`_SLICE_ALIGN` boundaries."""
    step = -(-n // threads)
    step = -(-step // _SLICE_ALIGN) * _SLICE_ALIGN
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def crc32(data: Any, crc: int = 0) -> int:
    """The CRC-32 of a bytes-like object, continuing from ``crc`` (as :func:`zlib.crc32`)."""
    view = memoryview(data)
    if view.nbytes < SPLIT_MIN:
        return _isal_crc32(view, crc)
    return _split_crc32(view, crc)


def _split_crc32(view: memoryview, crc: int) -> int:
    if not view.c_contiguous:
        raise ValueError("crc32 needs a contiguous buffer")
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    n = view.nbytes
    threads = min(_posix.get_threads(), n // (SPLIT_MIN // 2))
    if threads < 2:
        return _isal_crc32(view, crc)
    parts = _slices(n, threads)
    crcs = _executor(threads).map(lambda r: _isal_crc32(view[r[0] : r[1]]), parts)
    value = crc
    for (start, stop), part in zip(parts, crcs, strict=True):
        value = _posix.crc32_combine(value, part, stop - start)
    return value


def mapped_crc32(fm: _posix.FileMapping, offset: int, length: int, crc: int = 0) -> int:
    """The CRC-32 of ``length`` bytes at ``offset`` of a mapping (bounds checked there)."""
    if length == 0:
        return crc
    view = fm.view(offset, length)
    try:
        return crc32(view, crc)
    finally:
        view.release()
