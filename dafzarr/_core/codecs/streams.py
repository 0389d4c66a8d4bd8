"""Piecewise decoders: a stream's output in pieces of at most :data:`~._limits.PIECE` bytes.

Each generator takes the compressed bytes and a ``limit`` and stops once its output passes
``limit`` bytes, so that a caller can check a claimed length (and a CRC-32) while holding one
piece at a time. The data ending early ends the output early: the caller compares lengths.
"""

from __future__ import annotations

import bz2
import zlib
from collections.abc import Iterator
from typing import Any

from .limits import INPUT_PIECE, PIECE

__all__ = [
    "DEFLATE64_INPUT_PIECE",
    "DecodedPieces",
    "bunzip2",
    "deflate64_pieces",
    "gunzip",
    "inflate",
    "inflate_whole",
]

DecodedPieces = Iterator[Any]  # bytes-like pieces of decoded output, in order

DEFLATE64_INPUT_PIECE = 256
"""DEFLATE64 input per call (inflate64 has no output limit): at most about 7 MiB out. Smaller
pieces cost time on every entry (32 bytes: 25 times slower than 4 KiB on 3 MB of input)."""


def _zlib_pieces(raw: Any, limit: int, wbits: int, *, must_end: bool) -> DecodedPieces:
    d = zlib.decompressobj(wbits)
    view = memoryview(raw).cast("B")
    pos, produced = 0, 0
    while not d.eof and produced <= limit:
        if d.unconsumed_tail:
            data: Any = d.unconsumed_tail
        else:
            data = view[pos : pos + INPUT_PIECE]
            pos += len(data)
        out = d.decompress(data, min(PIECE, limit + 1 - produced))
        if not out and not data:
            if must_end:
                raise ValueError("the stream ends before its end marker")
            return  # the stream ends early: the caller sees the short length
        produced += len(out)
        if out:
            yield out


def inflate(raw: Any, limit: int) -> DecodedPieces:
    """A raw DEFLATE stream's output. A stream without its final block (a writer flushed it
    but never finished) yields what it holds, as ``zipfile`` reads it."""
    return _zlib_pieces(raw, limit, -15, must_end=False)


def inflate_whole(raw: Any, size: int) -> Any:
    """A raw DEFLATE stream proven to decode to ``size`` bytes, in one call into one buffer
    of that size (no zeroing, no pieces); None when the stream has no end (decode it in
    pieces instead). Only once proven: zlib grows its buffer past ``size`` if it must."""
    try:
        whole = zlib.decompress(raw, -15, size)
    except zlib.error:
        return None
    return whole if len(whole) == size else None


def gunzip(raw: Any, limit: int) -> DecodedPieces:
    """A gzip stream's output (its first member); a stream cut before its trailer is refused
    (:class:`ValueError`), and zlib checks the trailer's CRC-32."""
    return _zlib_pieces(raw, limit, 31, must_end=True)


def bunzip2(raw: Any, limit: int) -> DecodedPieces:
    """A BZIP2 stream's output."""
    d = bz2.BZ2Decompressor()
    view = memoryview(raw).cast("B")
    pos, produced = 0, 0
    while not d.eof and produced <= limit:
        data: Any = b""
        if d.needs_input:
            if pos >= len(view):
                return  # the stream ends early: the caller sees the short length
            data = view[pos : pos + INPUT_PIECE]
            pos += len(data)
        out = d.decompress(data, min(PIECE, limit + 1 - produced))
        produced += len(out)
        if out:
            yield out


def deflate64_pieces(raw: Any, limit: int) -> DecodedPieces:
    """A DEFLATE64 stream's output (the ``inflate64`` package). inflate64 has no output limit:
    fed :data:`DEFLATE64_INPUT_PIECE` bytes at a time, a call emits at most about 7 MiB
    (DEFLATE64's ratio), and decoding stops once the output passes ``limit``."""
    import inflate64

    inflater = inflate64.Inflater()
    view = memoryview(raw).cast("B")
    produced = 0
    for i in range(0, len(view), DEFLATE64_INPUT_PIECE):
        out = inflater.inflate(bytes(view[i : i + DEFLATE64_INPUT_PIECE]))
        produced += len(out)
        if out:
            yield out
        if produced > limit or inflater.eof:
            return
