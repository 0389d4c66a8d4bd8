"""One-call decoders of formats whose data state their decoded size: LZ4 blocks, blosc, zstd.

Each takes the compressed bytes and the size to decode to, allocates at most that size, and
raises :class:`ValueError` when the data cannot decode to it. Each ``*_size`` function gives
the size the data states (or, for LZ4, the size its sequences add up to), without decoding.
"""

from __future__ import annotations

from typing import Any

import lz4.block

from . import zstd

__all__ = [
    "LZ4_MAX_RATIO",
    "blosc_size",
    "blosc_whole",
    "lz4_size",
    "lz4_whole",
    "zstd_whole",
]

LZ4_MAX_RATIO = 255
"""An LZ4 block decodes to at most about 255 times its size (each 0xFF length byte adds 255)."""

_BLOSC_HEADER = 16


def lz4_size(block: Any) -> int:
    """The exact size an LZ4 block (no size prefix) decodes to, found by walking its
    sequences (no decoding)."""
    from ..._lz4seg import lz4_decoded_size

    return lz4_decoded_size(memoryview(block).cast("B"))


def lz4_whole(block: Any, size: int) -> Any:
    """An LZ4 block (no size prefix) decoded into at most ``size`` bytes."""
    return lz4.block.decompress(block, uncompressed_size=size)


def blosc_size(data: Any) -> int:
    """The decoded size a blosc chunk's header states."""
    view = memoryview(data).cast("B")
    if len(view) < _BLOSC_HEADER:
        raise ValueError(f"a blosc chunk of {len(view)} bytes is shorter than its header")
    return int.from_bytes(view[4:8], "little")


def blosc_whole(data: Any, size: int) -> Any:
    """A blosc chunk whose header states ``size`` bytes, decoded (numcodecs' ``Blosc``)."""
    from numcodecs.blosc import Blosc

    stated = blosc_size(data)
    if stated != size:
        raise ValueError(f"the blosc header states {stated} bytes, not {size}")
    return b"" if size == 0 else Blosc().decode(data)  # (blosc reports 0 bytes as an error)


def zstd_whole(data: Any, size: int) -> Any:
    """zstd frames that decode to exactly ``size`` bytes (see :func:`._zstd.decode_exact`).
    Zero bytes are not decoded (numcodecs cannot decode an empty frame; a CRC still runs)."""
    if size == 0:
        return b""
    return zstd.decode_exact(data, size)
