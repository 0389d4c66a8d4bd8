"""CRC-32 (the ZIP polynomial): the one place dafzarr computes it.

ISA-L (the ``isal`` package) computes the CRC-32 of buffers below :data:`SPLIT_MIN` bytes,
where the project's own kernel does no better (``python -m benchmarks.bench_zipstore
--only e``: 0.93-1.02x ISA-L from 256 KiB to 8 MiB).

The project's own kernels remain where they still win, and only there:

- buffers of :data:`SPLIT_MIN` bytes and more, split into slices on every core and the
  slices' CRCs combined (``crc(A‖B)`` from ``crc(A)``, ``crc(B)`` and ``len(B)``):
  1.85x ISA-L at 256 MiB on two cores, where ISA-L itself split over Python threads reached
  1.08x;
- storing an entry into the archive's mapping while computing its CRC
  (:meth:`dafzarr._posix.FileMapping.write_crc32`), which reads the source once instead of
  once to copy and once to checksum: 1.05x a copy then ISA-L at 64 KiB, 1.2x at 8 MiB, 3.7x
  at 256 MiB (copied and checksummed on both cores).

The README quotes the figures of the latest run.
"""

from __future__ import annotations

from typing import Any

from isal.isal_zlib import crc32 as _isal_crc32

from .. import _posix
from ..errors import InvalidArgumentError

__all__ = ["SPLIT_MIN", "crc32", "mapped_crc32"]

#: Buffers from this size on are checksummed by the own kernel, in slices on every core.
SPLIT_MIN = 32 << 20


def crc32(data: Any, crc: int = 0) -> int:
    """The CRC-32 of a bytes-like object, continuing from ``crc`` (as :func:`zlib.crc32`)."""
    view = memoryview(data)
    if view.nbytes < SPLIT_MIN:
        return _isal_crc32(view, crc)
    if not view.c_contiguous:
        raise InvalidArgumentError("crc32 needs a contiguous buffer")
    return _posix.crc32(view, crc)


def mapped_crc32(fm: _posix.FileMapping, offset: int, length: int, crc: int = 0) -> int:
    """The CRC-32 of ``length`` bytes at ``offset`` of a mapping (bounds checked there)."""
    if length >= SPLIT_MIN:
        return fm.crc32(offset, length, crc)
    if length == 0:
        return crc
    view = fm.view(offset, length)
    try:
        return _isal_crc32(view, crc)
    finally:
        view.release()
