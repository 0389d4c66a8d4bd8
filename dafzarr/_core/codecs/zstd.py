"""Zstandard data: the bound its headers prove, exact-size decoding, bounded streaming.

A ZIP entry or an ArrayFile block states the size its zstd data decodes to; hostile data may
claim any size, or decode to fewer bytes than claimed. :func:`decode_exact` walks the frame and
block headers first (a few bytes per 128 KiB of output, no decoding), which bounds what the data
can produce: a raw or RLE block produces exactly its stated size, a compressed block at most
``min(window, 128 KiB)``, a frame at most its stated content size. A claim above that bound is
refused before anything is allocated, so the memory spent is at most what the data proves it
decodes to. Then every frame is decoded into its own slice of the output, and a frame that
decodes short or long is refused: the output is never padded.

:func:`stream` decodes the same data piece by piece (``zstandard``'s stream reader, which
reads across frames and returns at most the bytes asked for), so that a caller can check the
length and a checksum of a large claim before allocating it. numcodecs' ``Zstd`` has no
bounded streaming API (it decodes a frame of unknown size whole), but its one-call decode
into a caller's buffer is what :func:`decode_exact` uses once a size is proven.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import zstandard
from numcodecs import zstd as _numcodecs_zstd

from .limits import PIECE

__all__ = [
    "Frame",
    "decode_exact",
    "frames",
    "max_output",
    "stated_size",
    "stream",
]

_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE = 0xFFFFFFF0, 0x184D2A50
_BLOCK_MAX = 128 << 10


@dataclass(frozen=True)
class Frame:
    """A zstd frame at ``[start, end)``: its stated content size (None when absent) and the
    most its blocks can decode to."""

    start: int
    end: int
    content_size: int | None
    max_output: int


def _frame_at(raw: memoryview, pos: int) -> Frame:
    n = len(raw)
    if pos + 6 > n:
        raise ValueError(f"truncated zstd frame header at byte {pos}")
    fhd = raw[pos + 4]
    if fhd & 0x08:
        raise ValueError(f"zstd frame at byte {pos} sets a reserved header bit")
    fcs_flag, single = fhd >> 6, (fhd >> 5) & 1
    q = pos + 5
    window = 0
    if not single:
        wd = raw[q]
        base = 1 << (10 + (wd >> 3))
        window = base + (base >> 3) * (wd & 7)
        q += 1
    q += (0, 1, 2, 4)[fhd & 3]
    size_len = (1 if single else 0, 2, 4, 8)[fcs_flag]
    content: int | None = None
    if size_len:
        if q + size_len > n:
            raise ValueError(f"truncated zstd frame header at byte {pos}")
        content = int.from_bytes(raw[q : q + size_len], "little") + (256 if size_len == 2 else 0)
        q += size_len
    if single:
        window = content or 0
    block_max = min(window, _BLOCK_MAX)
    most = 0
    while True:
        if q + 3 > n:
            raise ValueError(f"zstd frame at byte {pos} ends inside a block header")
        head = int.from_bytes(raw[q : q + 3], "little")
        last, kind, size = head & 1, (head >> 1) & 3, head >> 3
        q += 3
        if kind == 3:
            raise ValueError(f"zstd block at byte {q - 3} has the reserved type 3")
        if size > _BLOCK_MAX:
            raise ValueError(f"zstd block at byte {q - 3} states {size} bytes, over 128 KiB")
        stored = 1 if kind == 1 else size
        if q + stored > n:
            raise ValueError(f"zstd block at byte {q - 3} runs past the end of the data")
        most += block_max if kind == 2 else size
        q += stored
        if last:
            break
    if fhd & 0x04:
        q += 4
        if q > n:
            raise ValueError(f"zstd frame at byte {pos} ends inside its checksum")
    if content is not None and content > most:
        raise ValueError(
            f"zstd frame at byte {pos} states {content} bytes but its blocks hold at most {most}"
        )
    return Frame(pos, q, content, most)


def frames(raw: Any) -> list[Frame]:
    """The data frames of ``raw`` (skippable frames are stepped over), headers checked."""
    view = memoryview(raw).cast("B")
    out: list[Frame] = []
    pos, n = 0, len(view)
    while pos < n:
        if pos + 8 > n:
            raise ValueError(f"truncated zstd frame at byte {pos}")
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & _SKIPPABLE_MASK == _SKIPPABLE:
            pos += 8 + int.from_bytes(view[pos + 4 : pos + 8], "little")
            if pos > n:
                raise ValueError("a skippable zstd frame runs past the end of the data")
            continue
        if magic != _MAGIC:
            raise ValueError(f"no zstd frame at byte {pos}")
        frame = _frame_at(view, pos)
        out.append(frame)
        pos = frame.end
    if not out:
        raise ValueError("no zstd frame in the data")
    return out


def max_output(raw: Any) -> int:
    """The most that zstd data ``raw`` can decode to, from its frame and block headers."""
    return sum(f.max_output if f.content_size is None else f.content_size for f in frames(raw))


def stated_size(raw: Any) -> int | None:
    """The size zstd data ``raw`` decodes to when every frame states its own, else None."""
    sizes = [f.content_size for f in frames(raw)]
    return None if None in sizes else sum(n for n in sizes if n is not None)


def decode_exact(raw: Any, size: int) -> bytearray:
    """Decode zstd data (one or more frames) that must decode to exactly ``size`` bytes.

    A size above what the frame and block headers allow is refused before anything is
    allocated; the caller has proven a large size by decoding in pieces first
    (:func:`stream`). Raises :class:`ValueError` naming the mismatch (the caller names the
    file and the entry).
    """
    found = frames(raw)
    bound = sum(f.max_output if f.content_size is None else f.content_size for f in found)
    if size > bound:
        raise ValueError(f"the zstd data decodes to at most {bound} bytes, not {size}")
    try:
        return _decode_frames(memoryview(raw).cast("B"), found, size, _numcodecs_zstd.decompress)
    except RuntimeError as exc:  # numcodecs' report of a zstd error
        raise ValueError(f"the zstd data does not decode ({exc})") from None


def _decode_frames(view: memoryview, found: list[Frame], size: int, decompress: Any) -> bytearray:
    out = bytearray(size)
    pos = 0
    for i, f in enumerate(found):
        src = bytes(view[f.start : f.end])
        if f.content_size is not None or i + 1 == len(found):
            n = size - pos if f.content_size is None else f.content_size
            if pos + n > size:
                raise ValueError(f"the zstd data decodes to more than {size} bytes")
            if n:
                decompress(src, memoryview(out)[pos : pos + n])
            elif f.content_size is None and f.max_output:
                raise ValueError(f"the zstd data decodes to more than {size} bytes")
        else:  # a frame of unknown size inside the data: streamed into what is left
            n = 0
            for piece in stream(src, size - pos):
                if pos + n + len(piece) > size:
                    raise ValueError(f"the zstd data decodes to more than {size} bytes")
                out[pos + n : pos + n + len(piece)] = piece
                n += len(piece)
        pos += n
    if pos != size:
        raise ValueError(f"the zstd data decodes to {pos} bytes, not {size}")
    return out


# --- Streaming decoder ------------------------------------------------------------------


def stream(raw: Any, limit: int, piece: int = PIECE) -> Iterator[bytes]:
    """The output of zstd data ``raw`` in pieces of at most ``piece`` bytes, stopping once
    past ``limit`` bytes.

    The data ending inside a frame ends the output early (the caller compares lengths); a
    decoding error raises :class:`ValueError`. libzstd holds the frame's window meanwhile
    (at most what the frame header states; libzstd refuses windows above 128 MiB).
    """
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    produced = 0
    try:
        while produced <= limit:
            out = reader.read(piece)
            if not out:
                return  # every frame done, or the data ends inside one
            produced += len(out)
            yield out
    except zstandard.ZstdError as exc:
        raise ValueError(f"the zstd data does not decode ({exc})") from None
