"""The ZIP records MmapZipStore writes and the bounds-checked parser it reads them with.

Layout written (``mmap-zip-store`` format): every local header and central-directory entry
carries a ZIP64 extra field, names are UTF-8 (flag bit 11), the method is 0 (stored), data
starts at a file offset that is a multiple of 8 (private ``0xDAF1`` padding extra field in
the local header only), and the archive ends with the 98-byte ZIP64 trailer (ZIP64 end of
central directory, its locator, and a legacy end record full of sentinels).

The parser accepts foreign archives too (non-ZIP64, comments, data descriptors, any method)
and never trusts a length or offset read from the file: every one is checked against the
bytes actually present before it is used.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from ... import _zipdir
from ..._zipdir import Entry as Entry  # noqa: PLC0414 (re-exported: the stores' entry type)
from ..._zipdir import check_no_overlap as _check_no_overlap
from ..._zipdir import parse_entries, parse_some
from ...errors import CorruptArchiveError

# --- Constants -------------------------------------------------------------------------
# Defined once, in ``_ext/_zipformat.pxd``, for the compiled writer and parser and for this
# module alike.

LFH_SIG: int = _zipdir.LFH_SIG
# Stands in for the signature of a local header whose entry no archive directory lists any
# more, where that header is the first bytes of the file: tools that look for an archive at
# the start of the file (7-Zip) would otherwise take it for a listed entry that is missing.
DEAD_LFH_SIG: int = _zipdir.DEAD_LFH_SIG  # b"DZ\xde\xad"
CD_SIG: int = _zipdir.CD_SIG
EOCD_SIG: int = _zipdir.EOCD_SIG
ZIP64_EOCD_SIG: int = _zipdir.ZIP64_EOCD_SIG
ZIP64_LOCATOR_SIG: int = _zipdir.ZIP64_LOCATOR_SIG

LFH_SIZE: int = _zipdir.LFH_SIZE
CD_SIZE: int = _zipdir.CD_SIZE
EOCD_SIZE: int = _zipdir.EOCD_SIZE
ZIP64_EOCD_SIZE: int = _zipdir.ZIP64_EOCD_SIZE
ZIP64_LOCATOR_SIZE: int = _zipdir.ZIP64_LOCATOR_SIZE
TRAILER_SIZE: int = _zipdir.TRAILER_SIZE  # ZIP64 EOCD, its locator, the EOCD: 98 bytes
MAX_COMMENT: int = _zipdir.MAX_COMMENT

VERSION_NEEDED: int = _zipdir.VERSION_NEEDED
VERSION_MADE_BY: int = _zipdir.VERSION_MADE_BY
FLAG_UTF8: int = _zipdir.FLAG_UTF8
FLAG_DATA_DESCRIPTOR: int = _zipdir.FLAG_DATA_DESCRIPTOR
FLAG_ENCRYPTED: int = _zipdir.FLAG_ENCRYPTED  # bits 0, 6 and 13
DOS_DATE_1980: int = _zipdir.DOS_DATE_1980
EXTERNAL_ATTR: int = _zipdir.EXTERNAL_ATTR
ZIP64_EXTRA_ID: int = _zipdir.ZIP64_EXTRA_ID
PAD_EXTRA_ID: int = _zipdir.PAD_EXTRA_ID
LFH_ZIP64_EXTRA: int = _zipdir.LFH_ZIP64_EXTRA  # id, length, both sizes
CD_ZIP64_EXTRA: int = _zipdir.CD_ZIP64_EXTRA  # id, length, both sizes, local-header offset
ALIGNMENT: int = _zipdir.ALIGNMENT
MAX_NAME: int = _zipdir.MAX_NAME
U32_MAX: int = _zipdir.U32_MAX
U16_MAX: int = _zipdir.U16_MAX

METHOD_NAMES = {
    0: "STORED",
    8: "DEFLATE",
    9: "DEFLATE64",
    12: "BZIP2",
    14: "LZMA",
    93: "ZSTD",
    95: "XZ",
    99: "AES",
}

_LFH = struct.Struct("<IHHHHHIIIHH")
_CD = struct.Struct("<IHHHHHHIIIHHHHHII")
_ZIP64_EOCD = struct.Struct("<IQHHIIQQQQ")
_LOCATOR = struct.Struct("<IIQI")
_EOCD = struct.Struct("<IHHHHIIH")
_LFH_ZIP64 = struct.Struct("<HHQQ")
_CD_ZIP64 = struct.Struct("<HHQQQ")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_HH = struct.Struct("<HH")


def method_name(method: int) -> str:
    """``'8 (DEFLATE)'`` style label of a ZIP compression method."""
    return f"{method} ({METHOD_NAMES.get(method, 'unknown')})"


# --- Builders --------------------------------------------------------------------------


def alignment_padding(lfh_offset: int, name_length: int) -> int:
    """Bytes of ``0xDAF1`` extra field that put the data of an entry on an 8-byte boundary.

    The padding is 0, or at least 4 so the field's own header fits: one of 0, 4..7, 9..11.
    (The rule of ``_ext/_zipformat.pxd``, which the compiled writer applies too.)
    """
    return int(_zipdir.alignment_padding(lfh_offset, name_length))


def plain_key(raw: bytes) -> bool:
    """Whether ``raw``, the UTF-8 bytes of a key, names an entry as it is: not empty, at most
    :data:`MAX_NAME` bytes, no NUL or backslash, no leading or trailing ``/``, no empty,
    ``.`` or ``..`` component (the check of ``_ext/_zipformat.pxd``, which the compiled
    writer applies too)."""
    return bool(_zipdir.plain_key(raw))


def local_header(
    name: bytes,
    size: int,
    crc: int,
    lfh_offset: int,
    pad: int | None = None,
    *,
    method: int = 0,
    usize: int | None = None,
    flags: int = FLAG_UTF8,
) -> bytes:
    """The local file header of an entry written at ``lfh_offset``.

    ``size`` is the stored size; ``method``, ``usize`` and ``flags`` describe a compressed
    entry copied as it is (default: stored, ``usize == size``).
    """
    if pad is None:
        pad = alignment_padding(lfh_offset, len(name))
    usize = size if usize is None else usize
    head = _LFH.pack(
        LFH_SIG,
        VERSION_NEEDED,
        flags,
        method,
        0,
        DOS_DATE_1980,
        crc,
        U32_MAX,
        U32_MAX,
        len(name),
        LFH_ZIP64_EXTRA + pad,
    )
    extra = _LFH_ZIP64.pack(ZIP64_EXTRA_ID, LFH_ZIP64_EXTRA - 4, usize, size)
    if pad:
        extra += _HH.pack(PAD_EXTRA_ID, pad - 4) + bytes(pad - 4)
    return head + name + extra


def central_entry(
    name: bytes,
    size: int,
    crc: int,
    lfh_offset: int,
    *,
    method: int = 0,
    usize: int | None = None,
    flags: int = FLAG_UTF8,
) -> bytes:
    """The central-directory entry of an entry (stored unless ``method`` says otherwise)."""
    usize = size if usize is None else usize
    head = _CD.pack(
        CD_SIG,
        VERSION_MADE_BY,
        VERSION_NEEDED,
        flags,
        method,
        0,
        DOS_DATE_1980,
        crc,
        U32_MAX,
        U32_MAX,
        len(name),
        CD_ZIP64_EXTRA,
        0,
        0,
        0,
        EXTERNAL_ATTR,
        U32_MAX,
    )
    return head + name + _CD_ZIP64.pack(ZIP64_EXTRA_ID, CD_ZIP64_EXTRA - 4, usize, size, lfh_offset)


def trailer(n_entries: int, cd_size: int, cd_offset: int, comment_len: int = 0) -> bytes:
    """The 98-byte ZIP64 end-of-central-directory region.

    ``comment_len`` is the length of the archive comment that follows it, which the caller
    writes (before these bytes, so a complete end record implies a complete comment).
    """
    return (
        _ZIP64_EOCD.pack(
            ZIP64_EOCD_SIG,
            44,
            VERSION_MADE_BY,
            VERSION_NEEDED,
            0,
            0,
            n_entries,
            n_entries,
            cd_size,
            cd_offset,
        )
        + _LOCATOR.pack(ZIP64_LOCATOR_SIG, 0, cd_offset + cd_size, 1)
        + _EOCD.pack(EOCD_SIG, 0, 0, U16_MAX, U16_MAX, U32_MAX, U32_MAX, comment_len)
    )


EMPTY_ARCHIVE = trailer(0, 0, 0)

# Offsets of the CRC inside the records, for patching a reservation in place.
LFH_CRC_OFFSET: int = _zipdir.LFH_CRC_OFFSET
CD_CRC_OFFSET: int = _zipdir.CD_CRC_OFFSET


# --- Parsing ---------------------------------------------------------------------------

ReadAt = Callable[[int, int], bytes]
"""``read(offset, length) -> bytes``; only ever called with in-bounds ranges."""


@dataclass(slots=True)
class Trailer:
    """Where the central directory is, as an end record (and its ZIP64 forms) say."""

    cd_offset: int
    cd_size: int
    n_entries: int
    start: int  # offset of the first trailer record (ZIP64 EOCD, or EOCD when not ZIP64)
    end: int  # one past the last byte of the end record and its comment
    comment: int = 0  # length of the archive comment, the last bytes before ``end``


def bad(path: object, what: str) -> CorruptArchiveError:
    return CorruptArchiveError(f"{path}: not a valid ZIP archive: {what}")


def read_trailer_at(read: ReadAt, size: int, eocd: int, path: object) -> Trailer:
    """Parse the end record at ``eocd`` (and the ZIP64 records it points to)."""
    if eocd < 0 or eocd + EOCD_SIZE > size:
        raise bad(path, "end of central directory record out of range")
    sig, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, comment = _EOCD.unpack(
        read(eocd, EOCD_SIZE)
    )
    if sig != EOCD_SIG:
        raise bad(path, "no end of central directory record")
    end = eocd + EOCD_SIZE + comment
    if end > size:
        raise bad(path, "archive comment runs past the end of the file")
    start = eocd
    loc = eocd - ZIP64_LOCATOR_SIZE
    has_locator = loc >= 0 and _U32.unpack(read(loc, 4))[0] == ZIP64_LOCATOR_SIG
    if has_locator:
        _, loc_disk, z64_off, total_disks = _LOCATOR.unpack(read(loc, ZIP64_LOCATOR_SIZE))
        if loc_disk != 0 or total_disks > 1:
            raise bad(path, "multi-disk archives are not supported")
        if z64_off < 0 or z64_off + ZIP64_EOCD_SIZE > loc:
            raise bad(path, "ZIP64 end of central directory offset out of range")
        (
            z_sig,
            z_len,
            _made,
            _need,
            z_disk,
            z_cd_disk,
            z_n_disk,
            z_n_total,
            z_cd_size,
            z_cd_offset,
        ) = _ZIP64_EOCD.unpack(read(z64_off, ZIP64_EOCD_SIZE))
        if z_sig != ZIP64_EOCD_SIG:
            raise bad(path, "bad ZIP64 end of central directory signature")
        if z_len < 44 or z64_off + 12 + z_len > loc:
            raise bad(path, "bad ZIP64 end of central directory length")
        if z_disk != 0 or z_cd_disk != 0 or z_n_disk != z_n_total:
            raise bad(path, "multi-disk archives are not supported")
        n_total, cd_size, cd_offset = z_n_total, z_cd_size, z_cd_offset
        start = z64_off
    else:
        if U32_MAX in (cd_size, cd_offset) or n_total == U16_MAX:
            raise bad(path, "ZIP64 sentinels without a ZIP64 end of central directory locator")
        if disk != 0 or cd_disk != 0 or n_disk != n_total:
            raise bad(path, "multi-disk archives are not supported")
    if cd_offset + cd_size > start:
        raise bad(path, "central directory overlaps the end records")
    # Every central-directory record has at least 46 bytes.
    if n_total * CD_SIZE > cd_size:
        raise bad(path, f"{n_total} entries cannot fit in a {cd_size}-byte central directory")
    return Trailer(cd_offset, cd_size, n_total, start, end, comment)


def find_trailer(read: ReadAt, size: int, path: object) -> Trailer:
    """Locate the end records of an archive whose end record ends exactly at EOF."""
    if size >= TRAILER_SIZE:
        # Fast path: the 98-byte ZIP64 trailer with no comment, as this store writes it.
        eocd = size - EOCD_SIZE
        tail = read(eocd, EOCD_SIZE)
        if _U32.unpack_from(tail, 0)[0] == EOCD_SIG and _U16.unpack_from(tail, 20)[0] == 0:
            return read_trailer_at(read, size, eocd, path)
    if size < EOCD_SIZE:
        raise bad(path, f"the file has only {size} bytes")
    lo = max(0, size - EOCD_SIZE - MAX_COMMENT)
    window = read(lo, size - lo)
    pos = len(window) - EOCD_SIZE
    sig = _U32.pack(EOCD_SIG)
    while pos >= 0:
        pos = window.rfind(sig, 0, pos + 4)
        if pos < 0:
            break
        (comment,) = _U16.unpack_from(window, pos + 20)
        if pos + EOCD_SIZE + comment == len(window):
            return read_trailer_at(read, size, lo + pos, path)
        pos -= 1
    raise bad(path, "no end of central directory record at the end of the file")


def _decode_name(raw: bytes, flags: int) -> tuple[str, str | None]:
    """An entry's name as text, and why it is refused (None when it is safe to serve)."""
    try:
        name = _name_text(raw, flags)
    except UnicodeDecodeError:
        # undecodable bytes become lone surrogates: one character per byte, as in the file
        return raw.decode("utf-8", "surrogateescape"), "its name is not valid UTF-8"
    return name, unsafe_name_reason(name)


_RELATIVE_PART = re.compile(r"(?:^|/)\.\.?(?:/|$)")


def unsafe_name_reason(name: str) -> str | None:
    """Why ``name`` is unsafe to map to a file (``..``, absolute, backslash, NUL), or None."""
    if "\x00" in name:
        return "its name contains NUL"
    if name.startswith("/"):
        return "its name is an absolute path"
    if "\\" in name:
        return "its name contains a backslash"
    if "." in name and _RELATIVE_PART.search(name):
        return "its name has a relative path component (. or ..)"
    return None


def parse_central_directory(cd: bytes | bytearray, trailer: Trailer, path: object) -> list[Entry]:
    """Parse ``cd`` (the central directory's bytes) into entries, checking every field.

    Record boundaries, names and ZIP64 extras are read in one compiled pass
    (:func:`dafzarr._zipdir.parse_entries`); names with a byte an unsafe name needs go
    through :func:`unsafe_name_reason`.
    """
    return parse_entries(cd, trailer.n_entries, trailer.cd_offset, path, unsafe_name_reason)


#: Bytes of a directory read and parsed at a time by
#: :func:`parse_central_directory_in_pieces`.
DIRECTORY_PIECE = 1 << 20


def parse_central_directory_in_pieces(
    read: ReadAt, trailer: Trailer, path: object, piece: int = DIRECTORY_PIECE
) -> list[Entry]:
    """:func:`parse_central_directory` of the directory ``trailer`` points to, read and
    parsed ``piece`` bytes at a time (the same checks and messages), so that its bytes
    are never all in memory at once."""
    size, at, n = trailer.cd_size, trailer.cd_offset, trailer.n_entries
    entries: list[Entry] = []
    carry = b""
    done = 0  # directory bytes parsed into entries
    while True:
        start = done + len(carry)
        chunk = read(at + start, min(piece, size - start))
        buf = carry + chunk
        if start + len(chunk) == size:  # the rest: whole records, as many as announced
            entries.extend(
                parse_entries(
                    buf, n - len(entries), at, path, unsafe_name_reason, done, len(entries)
                )
            )
            return entries
        part, used = parse_some(
            buf, n - len(entries), at, path, unsafe_name_reason, done, len(entries)
        )
        entries.extend(part)
        done += used
        carry = buf[used:]
        if len(entries) == n:
            raise bad(path, f"central directory has {size - done} bytes after its last entry")


def check_no_overlap(entries: list[Entry], path: object) -> None:
    """Refuse archives whose entries share bytes (the overlapping-entry zip bomb).

    Each entry occupies at least its fixed header, its name and its data; the local extra
    field's length is only known from the local header, so each entry also records where
    the next local header starts (``end_limit``), which its data may not pass.
    """
    _check_no_overlap(entries, path)


def resolve_data_offset(read: ReadAt, entry: Entry, limit: int, path: object) -> int:
    """Where an entry's data starts, from its own local header, checked against ``limit``."""
    lfh = entry.lfh_offset
    if lfh + LFH_SIZE > limit:
        raise bad(path, f"entry {entry.name!r}: local header outside the archive")
    head = read(lfh, LFH_SIZE)
    sig, _need, _flags, method, _t, _d, _crc, _cs, _us, n_len, e_len = _LFH.unpack(head)
    if sig != LFH_SIG and sig != DEAD_LFH_SIG:  # a reader of an older directory may ask
        raise bad(path, f"entry {entry.name!r}: bad local header signature at offset {lfh}")
    if method != entry.method:
        raise bad(path, f"entry {entry.name!r}: local and central headers disagree on method")
    data = lfh + LFH_SIZE + n_len + e_len
    if data > limit or entry.csize > limit - data:
        raise bad(path, f"entry {entry.name!r}: data runs past the central directory")
    # The record must be this entry's: a directory whose name or offset was damaged can point
    # at another entry's header, whose data (and CRC) would then be served under this name.
    local, _ = _decode_name(bytes(read(lfh + LFH_SIZE, n_len)), entry.flags)
    if local != entry.name:
        raise bad(
            path,
            f"entry {entry.name!r}: the local header at offset {lfh} names {local!r}; "
            "the central directory does not describe this entry's data",
        )
    return int(data)


@dataclass(slots=True)
class _LocalHeader:
    flags: int
    method: int
    crc: int
    csize: int  # from the ZIP64 extra when the 32-bit fields hold 0xFFFFFFFF
    usize: int
    raw_name: bytes
    data_offset: int
    sizes_missing: bool  # 0xFFFFFFFF sizes without a ZIP64 extra to resolve them
    dead: bool = False  # its signature says no directory lists it any more


def _read_local_header(
    read: ReadAt, pos: int, limit: int, *, dead_ok: bool = False
) -> _LocalHeader | None:
    """The local header at ``pos`` if its fixed part, name and extra lie below ``limit``.

    With ``dead_ok``, also a header marked as no longer listed (:data:`DEAD_LFH_SIG`).
    """
    if pos + LFH_SIZE > limit:
        return None
    sig, _need, flags, method, _t, _d, crc, csize, usize, n_len, e_len = _LFH.unpack(
        read(pos, LFH_SIZE)
    )
    name_start = pos + LFH_SIZE
    data = name_start + n_len + e_len
    dead = sig == DEAD_LFH_SIG and dead_ok
    if (sig != LFH_SIG and not dead) or data > limit:
        return None
    missing = False
    if U32_MAX in (csize, usize):
        sizes = _local_zip64_sizes(read(name_start + n_len, e_len))
        if sizes is None:
            missing = True
        else:
            usize, csize = sizes
    return _LocalHeader(
        flags, method, crc, csize, usize, read(name_start, n_len), data, missing, dead
    )


def _name_text(raw: bytes, flags: int) -> str:
    """An entry name as text (UnicodeDecodeError if the UTF-8 flag lies)."""
    return raw.decode("utf-8") if flags & FLAG_UTF8 else raw.decode("cp437")


def local_header_matches(read: ReadAt, entry: Entry, limit: int) -> bool:
    """Whether the local header of an entry agrees with its central-directory record."""
    h = _read_local_header(read, entry.lfh_offset, limit)
    if h is None or h.method != entry.method:
        return False
    try:
        if _name_text(h.raw_name, entry.flags) != entry.name:
            return False
    except UnicodeDecodeError:
        return False
    sizes_known = not entry.flags & FLAG_DATA_DESCRIPTOR and not h.sizes_missing
    if sizes_known and (h.csize, h.usize) != (entry.csize, entry.usize):
        return False
    return bool(h.data_offset + entry.csize <= limit)


def _local_zip64_sizes(extra: bytes) -> tuple[int, int] | None:
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = _HH.unpack_from(extra, pos)
        if tag == ZIP64_EXTRA_ID and size >= 16 and pos + 4 + size <= len(extra):
            usize, csize = struct.unpack_from("<QQ", extra, pos + 4)
            return usize, csize
        pos += 4 + size
    return None


def local_crc(read: ReadAt, entry: Entry) -> int:
    """The CRC-32 stored in an entry's local header."""
    return int(_U32.unpack(read(entry.lfh_offset + LFH_CRC_OFFSET, 4))[0])


@dataclass(slots=True)
class LocalRecord:
    """What a local header says about the entry that follows it."""

    raw_name: bytes
    name: str
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    data_offset: int
    dead: bool = False  # marked as listed by no directory (a deleted or superseded copy)
    refused: str | None = None  # why the name cannot be served, if it cannot


def read_local_record(read: ReadAt, pos: int, size: int, path: object) -> LocalRecord | None:
    """The local header at ``pos`` if it is complete and self-describing, else None.

    Self-describing: no data descriptor, no encryption, sizes in the header (or its ZIP64
    extra), name and data inside the first ``size`` bytes.
    """
    h = _read_local_header(read, pos, size, dead_ok=True)
    if h is None or h.sizes_missing or h.flags & (FLAG_DATA_DESCRIPTOR | FLAG_ENCRYPTED):
        return None
    name, refused = _decode_name(h.raw_name, h.flags)
    if h.csize > size - h.data_offset:
        return None
    return LocalRecord(
        h.raw_name,
        name,
        h.flags,
        h.method,
        h.crc,
        h.csize,
        h.usize,
        h.data_offset,
        h.dead,
        refused,
    )
