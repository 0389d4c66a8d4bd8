"""Compressed blocks made of independently decodable segments, and the table that finds them.

A block of the format is one LZ4 *block* (4-byte size prefix, as ``lz4_flex`` writes): any
reader must decompress it from its first byte. A random read of one 256 KiB chunk would then
decompress up to 8 MiB. dafzarr's writer instead compresses runs of whole chunks of at least
:data:`SEGMENT_MIN` bytes (*segments*) independently and splices them into one valid LZ4 block:
the trailing literals of a segment are merged into the first sequence of the next, so no match
crosses a segment boundary. Every LZ4 decoder reads the block as before.

Zstd blocks get the same treatment more simply: a block is a sequence of zstd frames, one per
segment, which every zstd decoder (``zstd::bulk::decompress`` included) reads as one stream.

Where each segment starts in the compressed stream is recorded in a *segment table* written
between the last block and the footer. The footer addresses blocks by offset, so other readers
(the Rust crate included) skip it; dafzarr uses it to decode only the segment that holds a
chunk. A table that is missing, damaged or does not match the blocks is ignored: reads fall back
to whole-block decompression.

Table layout (little-endian)::

    "DZLZSEG1"
    u32 number of blocks, u32 0
    per block:  u32 block id, u32 entries, u64 compressed size, u64 uncompressed size
    per entry:  u32 out, u32 in, u32 rest, u32 nibble, u32 before      (blocks in order)
    u32 CRC-32 of all the above, u32 table length (this trailer included), "DZSG"

An entry describes the state of the LZ4 stream where a segment starts: at uncompressed
offset ``out`` the byte at compressed offset ``in`` (counted from the block's first stored
byte, size prefix included) is a literal of a run that has ``rest`` literals left from there
and ``before`` literals before it, whose token has match nibble ``nibble``. For zstd, ``in``
is where the segment's frame starts and the other fields are 0.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import CorruptArrayFileError
from .. import codecs
from ..crc import crc32

SEGMENT_MIN = 64 << 10
"""Segments hold whole chunks and at least this many bytes (LZ4's match window)."""

MAGIC = b"DZLZSEG1"
TRAILER_MAGIC = b"DZSG"
_BLOCK = struct.Struct("<IIQQ")
_TRAILER = struct.Struct("<II4s")
_FIELDS = 5


def _token(literals: int, nibble: int) -> bytes:
    """A token byte and the literal count's extra bytes."""
    if literals < 15:
        return bytes([literals << 4 | nibble])
    rest = literals - 15
    return bytes([0xF0 | nibble]) + b"\xff" * (rest // 255) + bytes([rest % 255])


def compress(raw: Any, bounds: list[int]) -> tuple[bytes, npt.NDArray[np.uint32] | None]:
    """LZ4-compress ``raw`` as segments ``[bounds[i], bounds[i + 1])`` spliced into one block.

    ``bounds`` starts at 0 and ends at ``len(raw)``. Returns the stored block (size prefix
    included) and its segment table (``None`` for a single segment: a plain block).
    """
    import lz4.block

    from ..._lz4seg import lz4_runs

    view = memoryview(raw).cast("B")
    total = len(view)
    if sum(hi > lo for lo, hi in itertools.pairwise(bounds)) <= 1:
        return lz4.block.compress(view, store_size=True), None
    out: list[Any] = [total.to_bytes(4, "little")]
    pos = 4
    carry: list[Any] = []  # literals of the open run, not yet given a token
    carry_len = 0
    pending: list[tuple[int, int]] = []  # (segment start, literals of the run before it)
    entries: list[tuple[int, int, int, int, int]] = []

    def close_run(nibble: int) -> None:
        nonlocal pos, carry, carry_len, pending
        token = _token(carry_len, nibble)
        out.append(token)
        start = pos + len(token)
        entries.extend((b, start + k, carry_len - k, nibble, k) for b, k in pending)
        out.extend(carry)
        pos = start + carry_len
        carry, carry_len, pending = [], 0, []

    for lo, hi in itertools.pairwise(bounds):
        if hi == lo:
            continue
        comp = memoryview(lz4.block.compress(view[lo:hi], store_size=False))
        nib, fs, fl, last_tok, ls, ll = lz4_runs(comp)
        pending.append((lo, carry_len))
        carry.append(comp[fs : fs + fl])
        carry_len += fl
        if last_tok == 0:
            continue  # literals only: the run goes on into the next segment
        close_run(nib)
        body = comp[fs + fl : last_tok]  # the first match and every later sequence
        out.append(body)
        pos += len(body)
        carry, carry_len = [comp[ls : ls + ll]], ll
    close_run(0)
    return b"".join(out), np.array(entries, dtype=np.uint32).reshape(-1, _FIELDS)


def compress_zstd(
    raw: Any, bounds: list[int], level: int
) -> tuple[bytes, npt.NDArray[np.uint32] | None]:
    """Zstd-compress ``raw`` as one frame per segment ``[bounds[i], bounds[i + 1])``."""
    from numcodecs import Zstd

    codec = Zstd(level=level)
    view = memoryview(raw).cast("B")
    spans = [(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo]
    if len(spans) <= 1:
        return bytes(codec.encode(view)), None
    frames = [bytes(codec.encode(view[lo:hi])) for lo, hi in spans]
    starts = np.cumsum([0] + [len(f) for f in frames[:-1]])
    entries = np.zeros((len(spans), _FIELDS), np.uint32)
    entries[:, 0] = [lo for lo, _ in spans]
    entries[:, 1] = starts
    return b"".join(frames), entries


def encode_table(tables: dict[int, tuple[npt.NDArray[np.uint32], int, int]]) -> bytes:
    """The segment table of a layer: ``{block id: (entries, compressed, uncompressed)}``."""
    if not tables:
        return b""
    head = [MAGIC, struct.pack("<II", len(tables), 0)]
    body = []
    for bid in sorted(tables):
        entries, csize, usize = tables[bid]
        head.append(_BLOCK.pack(bid, len(entries), csize, usize))
        body.append(np.ascontiguousarray(entries, dtype="<u4").tobytes())
    data = b"".join(head + body)
    return data + _TRAILER.pack(crc32(data), len(data) + _TRAILER.size, TRAILER_MAGIC)


def decode_table(
    data: Any, blocks: dict[int, tuple[int, int, int, str | None]]
) -> dict[int, npt.NDArray[np.int64]]:
    """Parse a segment table; ``{}`` when ``data`` is not one or does not fit ``blocks``.

    Every entry is checked against its block's sizes, so a table that passes can only make
    a read fail, never read outside a block.
    """
    data = bytes(data)
    n = len(data)
    if n < len(MAGIC) + 8 + _TRAILER.size or not data.startswith(MAGIC):
        return {}
    crc, length, magic = _TRAILER.unpack_from(data, n - _TRAILER.size)
    if magic != TRAILER_MAGIC or length != n or crc32(data[: n - _TRAILER.size]) != crc:
        return {}
    nblocks = struct.unpack_from("<I", data, len(MAGIC))[0]
    pos = len(MAGIC) + 8
    if pos + nblocks * _BLOCK.size > n - _TRAILER.size:
        return {}
    heads = [_BLOCK.unpack_from(data, pos + i * _BLOCK.size) for i in range(nblocks)]
    pos += nblocks * _BLOCK.size
    out: dict[int, npt.NDArray[np.int64]] = {}
    for bid, count, csize, usize in heads:
        size = count * _FIELDS * 4
        if pos + size > n - _TRAILER.size:
            return {}
        e = np.frombuffer(data, "<u4", count * _FIELDS, pos).reshape(count, _FIELDS)
        e = e.astype(np.int64)
        pos += size
        meta = blocks.get(bid)
        if meta is None or meta[3] not in CODECS or (meta[1], meta[2]) != (csize, usize):
            continue
        if count and _valid(e, csize, usize, meta[3]):
            out[bid] = e
    return out


CODECS = ("lz4", "zstd")
"""Block codecs whose blocks can be made of segments."""


def _valid(e: npt.NDArray[np.int64], csize: int, usize: int, codec: str = "lz4") -> bool:
    out, inp, rest, nib, before = e.T
    ordered = bool(
        out[0] == 0
        and np.all(np.diff(out) > 0)
        and out[-1] < usize
        and np.all(np.diff(inp) > 0)
        and inp[-1] < csize
    )
    if codec == "zstd":
        return ordered and inp[0] == 0 and not (rest.any() or nib.any() or before.any())
    return bool(
        ordered and np.all(inp - before >= 5) and np.all(inp + rest <= csize) and np.all(nib <= 15)
    )


def segment_span(e: npt.NDArray[np.int64], off: int, usize: int, csize: int) -> tuple[int, ...]:
    """``(index, out start, out end, in start, in end)`` of the segment holding ``off``."""
    i = int(np.searchsorted(e[:, 0], off, side="right")) - 1
    out_lo = int(e[i, 0])
    last = i + 1 == len(e)
    out_hi = usize if last else int(e[i + 1, 0])
    in_lo = int(e[i, 1])
    in_hi = csize if last else int(e[i + 1, 1])
    return i, out_lo, out_hi, in_lo, in_hi


def decode_block(codec: str | None, data: Any, usize: int, *, what: str) -> Any:
    """The ``usize`` bytes a stored block (LZ4 with its size prefix, zstd, or none) decodes
    to, read-only; :class:`CorruptArrayFileError` naming ``what`` if it decodes to others."""
    if codec is None:
        if len(data) != usize:
            raise CorruptArrayFileError(f"{what} holds {len(data)} bytes, its footer says {usize}")
        return data
    if codec == "lz4":
        if len(data) < 4 or int.from_bytes(bytes(data[:4]), "little") != usize:
            raise CorruptArrayFileError(
                f"{what} does not decode (the LZ4 size prefix does not announce {usize} bytes)"
            )
        data = memoryview(data)[4:]
    return codecs.decode(
        codec, data, usize, what=what, error=CorruptArrayFileError, record="its footer"
    )


def decode_segment(
    e: npt.NDArray[np.int64],
    i: int,
    stored: Any,
    usize: int,
    csize: int,
    codec: str = "lz4",
    *,
    what: str = "a segment",
) -> Any:
    """Decode segment ``i`` from ``stored``, the block's bytes ``[in start, in end)``."""
    out_lo = int(e[i, 0])
    last = i + 1 == len(e)
    n = (usize if last else int(e[i + 1, 0])) - out_lo
    rest, nib = int(e[i, 2]), int(e[i, 3])
    src = memoryview(stored).cast("B")
    if codec == "zstd":
        return _decode_segment_bytes("zstd", src, n, what)
    if rest >= n:  # the whole segment is literals of one run
        if len(src) < n:
            raise ValueError("the segment's literals are truncated")
        return src[:n]
    if last:
        block = b"".join((_token(rest, nib), src))
    else:
        nxt_before, nxt_rest = int(e[i + 1, 4]), int(e[i + 1, 2])
        run_token = len(_token(nxt_before + nxt_rest, 0))
        body_end = len(src) - nxt_before - run_token  # where the next run's token starts
        if body_end < rest + 2:
            raise ValueError("the segment table does not fit the block")
        block = b"".join(
            (_token(rest, nib), src[:body_end], _token(nxt_before, 0), src[len(src) - nxt_before :])
        )
    return _decode_segment_bytes("lz4", block, n, what)


def _decode_segment_bytes(codec: str, data: Any, n: int, what: str) -> Any:
    return codecs.decode(
        codec, data, n, what=what, error=CorruptArrayFileError, record="its segment table"
    )
