"""Whole-block decoding: a stored block (LZ4 with its size prefix, Zstandard, or none) to the
exact number of bytes its footer states."""

from __future__ import annotations

from typing import Any

from .._zstdframes import check_lz4, decode_exact

__all__ = ["decompress"]


def decompress(codec: str | None, data: Any, usize: int) -> Any:
    """The ``usize`` bytes block ``data`` decodes to; ``ValueError`` if it decodes to others."""
    if codec is None:
        out = data
    elif codec == "lz4":
        import lz4.block

        if len(data) < 4 or int.from_bytes(bytes(data[:4]), "little") != usize:
            raise ValueError(f"the LZ4 size prefix does not announce {usize} bytes")
        check_lz4(memoryview(data)[4:], usize)
        out = lz4.block.decompress(memoryview(data)[4:], uncompressed_size=usize)
    elif codec == "zstd":
        out = memoryview(decode_exact(data, usize))
    else:
        raise ValueError(f"unknown block codec {codec!r}")
    if len(out) != usize:
        raise ValueError(f"the block decodes to {len(out)} bytes, its footer says {usize}")
    return out
