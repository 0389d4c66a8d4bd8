"""The one bounded decode: compressed bytes to exactly the size their container claims.

A container (a ZIP directory record, an ArrayFile footer, a Daf array's chunk shape) states
the size its compressed data decodes to; hostile or damaged data may state anything, and a
damaged stream may emit a great deal before it is found wrong. :func:`decode` therefore
allocates by proof, not by claim:

1. A claim the method cannot produce from the compressed bytes is refused before decoding:
   past the method's ratio (DEFLATE 1032, DEFLATE64 29,128, LZ4 255 bytes per compressed
   byte), or past what zstd's frame and block headers allow.
2. A claim of at most :data:`~._limits.PROOF_RATIO` (4) times the compressed size plus
   :data:`~._limits.PROOF_SLACK` (256 KiB) is decoded once, into one buffer of the claimed
   size, then checked: the memory spent on a refused claim stays within four times the
   compressed bytes, and small data (a chunk of zeros, a JSON document) decode once.
3. A larger claim is first proven: by the size the data itself proves (LZ4's sequences), or
   by decoding in pieces of at most :data:`~._limits.PIECE` bytes of output, which are
   checked (total length, and the CRC-32 when the caller gives one) and discarded. Only then
   is the data decoded again, into one buffer of exactly the claimed size. Highly
   compressible data thus cost two decodes; in exchange, refusing a claim allocates at most
   four times the compressed size plus about 1 MiB (8 MiB for DEFLATE64, whose decoder has
   no output limit).

When the caller does not know the size (a chunk of strings), the data's own statement
(zstd's frame headers, blosc's header) is taken if it is at most ``at_most`` bytes, or else
the output is gathered piece by piece up to ``at_most`` bytes.

Every refusal is the caller's exception class (a :class:`~dafzarr.errors.DafzarrError`)
whose message starts with the caller's ``what`` (the file and the entry, block or chunk).
"""

from __future__ import annotations

import zlib
from typing import Any

import lz4.block
import zstandard

from ...errors import (
    CorruptArchiveError,
    DafzarrError,
    InvalidArgumentTypeError,
    UnsupportedEntryError,
)
from ..crc import crc32
from .limits import needs_proof
from .registry import METHODS, Method, lookup
from .streams import DecodedPieces

__all__ = ["decode"]

_DECODE_ERRORS = (
    zlib.error,
    OSError,
    ValueError,
    EOFError,
    RuntimeError,
    lz4.block.LZ4BlockError,
    zstandard.ZstdError,
)


def decode(
    method: str,
    data: Any,
    expected_size: int | None,
    *,
    what: str,
    crc: int | None = None,
    at_most: int | None = None,
    error: type[DafzarrError] = CorruptArchiveError,
    record: str = "its directory record",
    label: str | None = None,
) -> memoryview:
    """The bytes ``data`` (compressed with the registered ``method``) decode to: exactly
    ``expected_size`` bytes, and a CRC-32 of ``crc`` when given. Read-only.

    ``expected_size`` None: the size is not known; the data may decode to at most
    ``at_most`` bytes. ``what`` names the data in messages (``"a.zip: entry 'k'"``);
    ``record`` names what claims the size (``"its footer"``), ``label`` the method
    (default: its title, ``"ZSTD"``). Raises ``error`` for data that
    does not decode to the claim, or a method that is not registered;
    :class:`~dafzarr.errors.UnsupportedEntryError` when the method needs a missing package.
    """
    m = lookup(method)
    if m is None:
        raise error(
            f"{what}: unknown compression method {method!r}; the registered methods are "
            f"{', '.join(sorted(METHODS))}"
        )
    name = m.title if label is None else label
    try:
        if expected_size is None:
            if at_most is None:
                raise InvalidArgumentTypeError(
                    "decode() needs at_most when the expected size is unknown"
                )
            out = _decode_unknown(m, name, data, at_most, crc, what, error)
        else:
            out = _decode_claim(m, name, data, expected_size, crc, what, error, record)
    except (DafzarrError, TypeError):
        raise
    except _DECODE_ERRORS as exc:
        raise error(f"{what} ({name}) does not decode: {exc}") from None
    return memoryview(out).toreadonly()


def _decode_claim(
    m: Method,
    name: str,
    data: Any,
    size: int,
    crc: int | None,
    what: str,
    error: type[DafzarrError],
    record: str,
) -> Any:
    n = memoryview(data).nbytes
    _refuse_impossible(m, name, data, n, size, what, error)
    _require(m, name, what)
    checked = False
    if needs_proof(size, n):
        if m.size_provable and m.stated is not None:
            stated = m.stated(data)
            if stated != size:
                _refuse_length(stated if stated is not None else 0, size, what, error, record)
        elif m.pieces is not None:
            _check(m.pieces(data, size), size, crc, what, error, record)
            checked = crc is not None
            if m.after_proof is not None:
                whole = m.after_proof(data, size)
                if whole is not None:
                    return whole
    if m.whole is not None:
        out = m.whole(data, size)
        if len(out) != size:
            _refuse_length(len(out), size, what, error, record)
    else:
        assert m.pieces is not None
        out = _fill(m.pieces(data, size), size, what, error, record)
    if crc is not None and not checked and crc32(out) != crc:
        raise error(f"{what} fails its CRC-32 check")
    return out


def _decode_unknown(
    m: Method,
    name: str,
    data: Any,
    at_most: int,
    crc: int | None,
    what: str,
    error: type[DafzarrError],
) -> Any:
    stated = m.stated(data) if m.stated is not None else None
    if stated is not None:
        if stated > at_most:
            raise error(f"{what} states {stated} bytes ({name}), more than {at_most}")
        return _decode_claim(m, name, data, stated, crc, what, error, "its header")
    if m.pieces is None:
        raise error(f"{what} ({name}) does not state its decoded size")
    _require(m, name, what)
    out = bytearray()
    for piece in m.pieces(data, at_most):
        out += piece
        if len(out) > at_most:
            raise error(f"{what} decodes to more than {at_most} bytes")
    if crc is not None and crc32(out) != crc:
        raise error(f"{what} fails its CRC-32 check")
    return out


def _refuse_impossible(
    m: Method, name: str, data: Any, n: int, size: int, what: str, error: type[DafzarrError]
) -> None:
    if m.max_ratio is not None:
        most = m.max_ratio * n + m.ratio_slack
        if size > most:
            raise error(
                f"{what} claims {size} bytes, but {n} bytes of {name} data decode to at most {most}"
            )
    if m.bound is not None:
        most = m.bound(data)
        if size > most:
            raise error(
                f"{what} claims {size} bytes, but {n} bytes of {name} data decode to at "
                f"most {most} (their frame and block headers say so)"
            )


def _require(m: Method, name: str, what: str) -> None:
    if not m.available():
        kind = "ZIP compression method" if m.zip_id is not None else "compression method"
        raise UnsupportedEntryError(
            f"{what} uses {kind} {name}; install the {m.requires} package to read it"
        )


def _check(
    pieces: DecodedPieces,
    size: int,
    crc: int | None,
    what: str,
    error: type[DafzarrError],
    record: str,
) -> None:
    """Decode, keeping only the running length and CRC-32, and compare them with the claim."""
    n, value = 0, 0
    for piece in pieces:
        n += len(piece)
        if n > size:
            break
        if crc is not None:
            value = crc32(piece, value)
    if n != size:
        _refuse_length(n, size, what, error, record)
    if crc is not None and value != crc:
        raise error(f"{what} fails its CRC-32 check")


def _fill(
    pieces: DecodedPieces, size: int, what: str, error: type[DafzarrError], record: str
) -> bytearray:
    """Decode into one buffer of ``size`` bytes; any other length is refused."""
    out = bytearray(size)
    view = memoryview(out)
    n = 0
    for piece in pieces:
        end = n + len(piece)
        if end > size:
            _refuse_length(end, size, what, error, record)
        view[n:end] = piece
        n = end
    if n != size:
        _refuse_length(n, size, what, error, record)
    return out


def _refuse_length(n: int, size: int, what: str, error: type[DafzarrError], record: str) -> None:
    got = f"more than {size}" if n > size else str(n)
    raise error(f"{what} decodes to {got} bytes, but {record} says {size}")
