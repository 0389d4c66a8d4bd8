"""Compressed ZIP entries decoded in memory bounded by what their data proves.

A ZIP entry's directory record states its decoded size and CRC-32; a hostile or damaged
archive may state anything, and a damaged stream may emit a great deal before it is found
wrong. :func:`decode_entry` therefore allocates by proof, not by claim:

1. A claim the method cannot produce from the entry's compressed bytes is refused before
   decoding: DEFLATE emits at most 1032 bytes per compressed byte (a 258-byte match in two
   bits), DEFLATE64 at most 29,128 (a 65,538-byte match in eighteen bits), and zstd at most
   what its frame and block headers allow (:mod:`._zstdframes`). BZIP2 has no useful bound
   (runs of one byte compress about a million to one).
2. A claim of at most :data:`~._zstdframes.PROOF_RATIO` (4) times the compressed size plus
   :data:`~._zstdframes.PROOF_SLACK` (256 KiB) is decoded once, into one buffer of the
   claimed size, then checked: the memory spent on a refused entry stays within four times
   its compressed bytes, and small entries (a chunk of zeros, a JSON document) decode once.
3. A larger claim is first decoded in pieces of at most :data:`PIECE` bytes of output, which
   are checked (total length and CRC-32) and discarded; only when both match is the entry
   decoded again, into one buffer of exactly the claimed size. Highly compressible foreign
   entries thus cost two decodes; in exchange, refusing any entry allocates at most four
   times its compressed size plus about 1 MiB (8 MiB for DEFLATE64, see
   :data:`_DEFLATE64_INPUT_PIECE`).

Every refusal is a :class:`~dafzarr.errors.CorruptArchiveError` naming the archive and the
entry (an unsupported method or a size above ``max_decompressed_size`` is an
:class:`~dafzarr.errors.UnsupportedEntryError`).
"""

from __future__ import annotations

import bz2
import contextlib
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from . import _zstdframes
from ._posix import crc32
from ._zstdframes import needs_proof
from .errors import CorruptArchiveError, UnsupportedEntryError
from .zipstore import _format as zf

__all__ = [
    "DEFLATE64_MAX_RATIO",
    "DEFLATE_MAX_RATIO",
    "PIECE",
    "decode_entry",
]

DEFLATE_MAX_RATIO = 1032
"""Bytes a DEFLATE stream emits per compressed byte, at most (258 bytes per two bits)."""

DEFLATE64_MAX_RATIO = 29_128
"""Bytes a DEFLATE64 stream emits per compressed byte, at most (65,538 bytes per 18 bits)."""

_MAX_RATIO_SLACK = 1 << 16
"""Added to the ratio bounds: one match and the odd bits of a short stream."""

PIECE = 64 << 10
"""Output per decoder call: the transient memory of a decode, beside its result."""

_INPUT_PIECE = 64 << 10
"""Compressed bytes handed to a decoder at a time, so that it never holds a copy of the rest."""

_DEFLATE64_INPUT_PIECE = 256
"""DEFLATE64 input per call (inflate64 has no output limit): at most about 7 MiB out. Smaller
pieces cost time on every entry (32 bytes: 25 times slower than 4 KiB on 3 MB of input)."""

_DECODE_ERRORS = (zlib.error, OSError, ValueError, EOFError, RuntimeError)

Pieces = Iterator[Any]  # bytes-like pieces of decoded output, in order


def decode_entry(path: str, e: zf.Entry, raw: bytes, max_size: int) -> memoryview:
    """The decoded bytes of compressed entry ``e`` (``raw``: its compressed bytes), checked
    against the size and CRC-32 its directory record states. Read-only."""
    where = f"{path}: entry {e.name!r}"
    if e.usize > max_size:
        raise UnsupportedEntryError(
            f"{where} claims to decompress to {e.usize} bytes, more than "
            f"max_decompressed_size = {max_size}"
        )
    method = e.method
    try:
        if method == 93:
            out = _zstd(raw, e.usize, e.crc, where)
        else:
            out = _decode_checked(raw, _streamer(path, e), e.usize, e.crc, where)
    except (CorruptArchiveError, UnsupportedEntryError):
        raise
    except _DECODE_ERRORS as exc:
        raise CorruptArchiveError(
            f"{where} ({zf.method_name(method)}) does not decode: {exc}"
        ) from None
    return memoryview(out).toreadonly()


def _decode_checked(
    raw: bytes, pieces: Callable[[bytes, int], Pieces], usize: int, crc: int, where: str
) -> bytes | bytearray:
    if not needs_proof(usize, len(raw)):
        out = _fill(pieces(raw, usize), usize, where)
        if crc32(out) != crc:
            raise CorruptArchiveError(f"{where} fails its CRC-32 check")
        return out
    _check(pieces(raw, usize), usize, crc, where)
    if pieces is _inflate:
        with contextlib.suppress(zlib.error):  # (a stream without its end: decoded in pieces)
            # One call into one buffer of exactly the proven size (no zeroing, no pieces).
            whole = zlib.decompress(raw, -15, usize)
            if len(whole) == usize:
                return whole
    return _fill(pieces(raw, usize), usize, where)


def _streamer(path: str, e: zf.Entry) -> Callable[[bytes, int], Pieces]:
    """The piecewise decoder of the entry's method, once its claim is found possible."""
    where = f"{path}: entry {e.name!r}"
    if e.method == 8:
        _refuse_impossible(e, DEFLATE_MAX_RATIO, where)
        return _inflate
    if e.method == 12:
        return _bunzip2
    if e.method == 9:
        _refuse_impossible(e, DEFLATE64_MAX_RATIO, where)
        return _deflate64_streamer(where)
    raise UnsupportedEntryError(
        f"{path}: unsupported ZIP compression method: {zf.method_name(e.method)} in ZIP entry "
        f"{e.name!r}; supported methods are 0 (STORED), 8 (DEFLATE), 9 (DEFLATE64, with the "
        "inflate64 package), 12 (BZIP2), 93 (ZSTD)"
    )


def _refuse_impossible(e: zf.Entry, ratio: int, where: str) -> None:
    most = ratio * e.csize + _MAX_RATIO_SLACK
    if e.usize > most:
        raise CorruptArchiveError(
            f"{where} claims {e.usize} bytes, but {e.csize} bytes of "
            f"{zf.method_name(e.method)} data decode to at most {most}"
        )


def _check(pieces: Pieces, usize: int, crc: int, where: str) -> None:
    """Decode, keeping only the running length and CRC-32, and compare them with the claim."""
    n, value = 0, 0
    for piece in pieces:
        n += len(piece)
        if n > usize:
            break
        value = crc32(piece, value)
    if n != usize:
        _refuse_length(n, usize, where)
    if value != crc:
        raise CorruptArchiveError(f"{where} fails its CRC-32 check")


def _fill(pieces: Pieces, usize: int, where: str) -> bytearray:
    """Decode into one buffer of ``usize`` bytes; any other length is refused."""
    out = bytearray(usize)
    view = memoryview(out)
    n = 0
    for piece in pieces:
        end = n + len(piece)
        if end > usize:
            _refuse_length(end, usize, where)
        view[n:end] = piece
        n = end
    if n != usize:
        _refuse_length(n, usize, where)
    return out


def _refuse_length(n: int, usize: int, where: str) -> None:
    got = f"more than {usize}" if n > usize else str(n)
    raise CorruptArchiveError(
        f"{where} decodes to {got} bytes, but its directory record says {usize}"
    )


def _inflate(raw: bytes, limit: int) -> Pieces:
    """A raw DEFLATE stream's output, in pieces, stopping once past ``limit`` bytes."""
    d = zlib.decompressobj(-15)
    view = memoryview(raw)
    pos, produced = 0, 0
    while not d.eof and produced <= limit:
        if d.unconsumed_tail:
            data: Any = d.unconsumed_tail
        else:
            data = view[pos : pos + _INPUT_PIECE]
            pos += len(data)
        out = d.decompress(data, min(PIECE, limit + 1 - produced))
        if not out and not data:
            return  # the stream ends early: the caller sees the short length
        produced += len(out)
        if out:
            yield out


def _bunzip2(raw: bytes, limit: int) -> Pieces:
    """A BZIP2 stream's output, in pieces, stopping once past ``limit`` bytes."""
    d = bz2.BZ2Decompressor()
    view = memoryview(raw)
    pos, produced = 0, 0
    while not d.eof and produced <= limit:
        data: Any = b""
        if d.needs_input:
            if pos >= len(view):
                return  # the stream ends early: the caller sees the short length
            data = view[pos : pos + _INPUT_PIECE]
            pos += len(data)
        out = d.decompress(data, min(PIECE, limit + 1 - produced))
        produced += len(out)
        if out:
            yield out


def _deflate64_streamer(where: str) -> Callable[[bytes, int], Pieces]:
    try:
        import inflate64
    except ImportError:
        raise UnsupportedEntryError(
            f"{where} uses ZIP compression method 9 (DEFLATE64); install the inflate64 "
            "package to read it"
        ) from None

    def pieces(raw: bytes, limit: int) -> Pieces:
        # inflate64 has no output limit: fed 256 bytes at a time, a call emits at most about
        # 7 MiB (DEFLATE64_MAX_RATIO), and decoding stops once the output passes ``limit``.
        inflater = inflate64.Inflater()
        view = memoryview(raw)
        produced = 0
        for i in range(0, len(view), _DEFLATE64_INPUT_PIECE):
            out = inflater.inflate(bytes(view[i : i + _DEFLATE64_INPUT_PIECE]))
            produced += len(out)
            if out:
                yield out
            if produced > limit or inflater.eof:
                return

    return pieces


def _zstd(raw: bytes, usize: int, crc: int, where: str) -> Any:
    """A zstd entry: its frame and block headers bound the claim before anything is decoded."""
    bound = _zstdframes.max_output(raw)
    if usize > bound:
        raise CorruptArchiveError(
            f"{where} claims {usize} bytes, but {len(raw)} bytes of {zf.method_name(93)} "
            f"data decode to at most {bound} (their frame and block headers say so)"
        )
    if usize == 0:
        out: Any = b""  # (numcodecs cannot decode an empty frame; the CRC check still runs)
    elif not needs_proof(usize, len(raw)) or not _zstdframes.can_stream():
        out = _zstdframes.decode_exact(raw, usize, proven=True)
    else:
        _check(_zstdframes.stream(raw, usize, PIECE), usize, crc, where)
        # the length and CRC were checked on the same output
        return _zstdframes.decode_exact(raw, usize, proven=True)
    if crc32(out) != crc:
        raise CorruptArchiveError(f"{where} fails its CRC-32 check")
    return out
