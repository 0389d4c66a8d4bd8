"""Zstandard data decoded to exactly the size its container states, in bounded memory.

A ZIP entry or an ArrayFile block states the size its zstd data decodes to; hostile data may
claim any size, or decode to fewer bytes than claimed. :func:`decode_exact` walks the frame and
block headers first (a few bytes per 128 KiB of output, no decoding), which bounds what the data
can produce: a raw or RLE block produces exactly its stated size, a compressed block at most
``min(window, 128 KiB)``, a frame at most its stated content size. A claim above that bound is
refused before anything is allocated, so the memory spent is at most what the data proves it
decodes to. Then every frame is decoded into its own slice of the output, and a frame that
decodes short or long is refused: the output is never padded.

:func:`stream` decodes the same data piece by piece into one small reused buffer, through
libzstd's streaming decoder (the copy numcodecs carries, or the system's), so that a caller
can check the length and a checksum of a large claim before allocating it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "LZ4_MAX_RATIO",
    "Frame",
    "can_stream",
    "decode_exact",
    "frames",
    "max_output",
    "stream",
]

_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE = 0xFFFFFFF0, 0x184D2A50
_BLOCK_MAX = 128 << 10

LZ4_MAX_RATIO = 255
"""An LZ4 block decodes to at most about 255 times its size (each 0xFF length byte adds 255)."""

PROOF_RATIO = 4
"""A claimed size above this many times the compressed size (plus :data:`PROOF_SLACK`) is
allocated only once the data has shown, decoding in pieces, that it produces that size."""

PROOF_SLACK = 256 << 10
"""Small blocks decode at once whatever their ratio (a chunk of zeros, a short document)."""


def needs_proof(size: int, compressed: int) -> bool:
    """Whether a claim of ``size`` decoded bytes from ``compressed`` bytes is too large to
    allocate on the claim alone (see :data:`PROOF_RATIO`)."""
    return size > PROOF_RATIO * compressed + PROOF_SLACK


def check_lz4(block: Any, size: int) -> None:
    """Refuse (:class:`ValueError`) an LZ4 block (no size prefix) that cannot decode to
    ``size`` bytes: past LZ4's ratio, or, for a large claim, by walking its sequences (the
    exact decoded size, found without decoding)."""
    if size > LZ4_MAX_RATIO * len(block):
        raise ValueError(f"{len(block)} bytes of LZ4 data cannot decode to {size} bytes")
    if needs_proof(size, len(block)):
        from ._lz4seg import lz4_decoded_size

        n = lz4_decoded_size(memoryview(block).cast("B"))
        if n != size:
            raise ValueError(f"{len(block)} bytes of LZ4 data decode to {n} bytes, not {size}")


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


def decode_exact(raw: Any, size: int, *, proven: bool = False) -> bytearray:
    """Decode zstd data (one or more frames) that must decode to exactly ``size`` bytes.

    A large claim (see :func:`needs_proof`) is first checked by decoding in pieces that are
    discarded, unless ``proven`` (the caller has checked it so) or libzstd's streaming API is
    missing; only then is ``size`` allocated. Raises :class:`ValueError` naming the mismatch
    (the caller names the file and the entry).
    """
    from numcodecs import zstd

    found = frames(raw)
    bound = sum(f.max_output if f.content_size is None else f.content_size for f in found)
    if size > bound:
        raise ValueError(f"the zstd data decodes to at most {bound} bytes, not {size}")
    if not proven and needs_proof(size, len(raw)) and can_stream():
        n = sum(len(piece) for piece in stream(raw, size, 64 << 10))
        if n != size:
            got = f"more than {size}" if n > size else str(n)
            raise ValueError(f"the zstd data decodes to {got} bytes, not {size}")
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


# --- Streaming decoder (libzstd through ctypes) ---------------------------------------------


class _InBuffer(ctypes.Structure):
    _fields_ = [("src", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


class _OutBuffer(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


@functools.cache
def _libzstd() -> Any:
    """libzstd's streaming API: from numcodecs' zstd module, which carries a copy of the
    library, else the system's ``libzstd``; None when neither exports it."""
    from numcodecs import zstd

    for name in (zstd.__file__, ctypes.util.find_library("zstd")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.ZSTD_createDCtx.restype = ctypes.c_void_p
            lib.ZSTD_createDCtx.argtypes = []
        except (OSError, AttributeError):
            continue
        lib.ZSTD_freeDCtx.argtypes = [ctypes.c_void_p]
        lib.ZSTD_freeDCtx.restype = ctypes.c_size_t
        lib.ZSTD_decompressStream.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(_OutBuffer),
            ctypes.POINTER(_InBuffer),
        ]
        lib.ZSTD_decompressStream.restype = ctypes.c_size_t
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_getErrorName.argtypes = [ctypes.c_size_t]
        lib.ZSTD_getErrorName.restype = ctypes.c_char_p
        return lib
    return None


def can_stream() -> bool:
    """Whether :func:`stream` is available (libzstd's streaming API was found)."""
    return _libzstd() is not None


def stream(raw: Any, limit: int, piece: int) -> Iterator[memoryview]:
    """The output of zstd data ``raw`` in pieces of at most ``piece`` bytes, stopping once
    past ``limit`` bytes; each piece is valid only until the next is asked for.

    The data ending inside a frame ends the output early (the caller compares lengths); a
    decoding error raises :class:`ValueError`. libzstd holds the frame's window meanwhile
    (at most what the frame header states, and libzstd refuses windows above 128 MiB).
    """
    lib = _libzstd()
    if lib is None:
        raise RuntimeError("libzstd's streaming API is not available")
    src = np.frombuffer(raw, np.uint8)  # a pointer to the caller's bytes, no copy
    buf = ctypes.create_string_buffer(piece)
    view = memoryview(buf).cast("B")
    inb = _InBuffer(src.ctypes.data, src.size, 0)
    outb = _OutBuffer(ctypes.addressof(buf), piece, 0)
    dctx = lib.ZSTD_createDCtx()
    if not dctx:
        raise MemoryError("libzstd could not allocate a decoder")
    try:
        produced = 0
        while produced <= limit:
            outb.pos = 0
            ret = lib.ZSTD_decompressStream(dctx, ctypes.byref(outb), ctypes.byref(inb))
            if lib.ZSTD_isError(ret):
                error = lib.ZSTD_getErrorName(ret).decode(errors="replace")
                raise ValueError(f"the zstd data does not decode ({error})")
            produced += outb.pos
            if outb.pos:
                yield view[: outb.pos]
            if inb.pos == inb.size and (ret == 0 or outb.pos < outb.size):
                return  # every frame done, or the data ends inside one
    finally:
        lib.ZSTD_freeDCtx(dctx)
