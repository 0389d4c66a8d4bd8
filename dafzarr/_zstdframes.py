"""Zstandard data decoded to exactly the size its container states, in bounded memory.

A ZIP entry or an ArrayFile block states the size its zstd data decodes to; hostile data may
claim any size, or decode to fewer bytes than claimed. :func:`decode_exact` walks the frame and
block headers first (a few bytes per 128 KiB of output, no decoding), which bounds what the data
can produce: a raw or RLE block produces exactly its stated size, a compressed block at most
``min(window, 128 KiB)``, a frame at most its stated content size. A claim above that bound is
refused before anything is allocated, so the memory spent is at most what the data proves it
decodes to. Then every frame is decoded into its own slice of the output, and a frame that
decodes short or long is refused: the output is never padded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LZ4_MAX_RATIO", "Frame", "decode_exact", "frames"]

_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE = 0xFFFFFFF0, 0x184D2A50
_BLOCK_MAX = 128 << 10

LZ4_MAX_RATIO = 255
"""An LZ4 block decodes to at most about 255 times its size (each 0xFF length byte adds 255)."""


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


def decode_exact(raw: Any, size: int) -> bytearray:
    """Decode zstd data (one or more frames) that must decode to exactly ``size`` bytes.

    Raises :class:`ValueError` naming the mismatch (the caller names the file and the entry).
    """
    from numcodecs import zstd

    found = frames(raw)
    bound = sum(f.max_output if f.content_size is None else f.content_size for f in found)
    if size > bound:
        raise ValueError(f"the zstd data decodes to at most {bound} bytes, not {size}")
    try:
        return _decode_frames(memoryview(raw).cast("B"), found, size, zstd.decompress)
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
        else:  # a frame of unknown size inside the data: streamed, it allocates what it holds
            part = decompress(src)
            n = len(part)
            if pos + n > size:
                raise ValueError(f"the zstd data decodes to more than {size} bytes")
            out[pos : pos + n] = part
        pos += n
    if pos != size:
        raise ValueError(f"the zstd data decodes to {pos} bytes, not {size}")
    return out
