"""Hand-built ZIP archives (``struct`` only) for layouts no archiver writes.

``build`` lays members out the plain way (local header, data, next local header, ...,
central directory, end records) and lets a test override any field that a hostile or
unusual archive would set differently: sizes and offsets in the central directory, flags,
methods, disk numbers, entry counts, the ZIP64 locator. ``central_records`` and
``end_records`` parse an archive's directory to find where its fields sit, so a test can
patch the bytes of an archive written by another tool.
"""

from __future__ import annotations

import bz2
import struct
import zlib
from dataclasses import dataclass, field

LFH = struct.Struct("<IHHHHHIIIHH")
CDH = struct.Struct("<IHHHHHHIIIHHHHHII")
EOCD = struct.Struct("<IHHHHIIH")
ZIP64_EOCD = struct.Struct("<IQHHIIQQQQ")
LOCATOR = struct.Struct("<IIQI")

LFH_SIG = 0x04034B50
CD_SIG = 0x02014B50
EOCD_SIG = 0x06054B50
ZIP64_EOCD_SIG = 0x06064B50
LOCATOR_SIG = 0x07064B50
U32 = 0xFFFFFFFF
U16 = 0xFFFF


def raw_deflate(data: bytes, level: int = 6) -> bytes:
    """A raw deflate stream (ZIP method 8) of ``data``."""
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame (ZIP method 93) of ``data``, made by numcodecs."""
    from numcodecs.zstd import Zstd

    return bytes(Zstd(level=3).encode(data))


def zstd_rle_frame(byte: int, count: int) -> bytes:
    """A zstd frame of ``count`` copies of ``byte`` with no content size in its header.

    Made of RLE blocks of at most 128 KiB (4 bytes each): a tiny frame that decodes to as
    many bytes as asked, and whose header does not say how many.
    """
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out += bytes([0x00, (17 - 10) << 3])  # no content size, not single-segment; window 128 KiB
    block = 1 << 17
    left = count
    while True:
        n = min(left, block)
        left -= n
        last = 1 if left == 0 else 0
        out += (last | (1 << 1) | (n << 3)).to_bytes(3, "little") + bytes([byte])
        if last:
            return bytes(out)


@dataclass
class Member:
    """One entry. ``data`` is what sits in the archive (already compressed)."""

    name: bytes | str
    data: bytes = b""
    method: int = 0
    crc: int | None = None  # default: CRC-32 of ``data`` (right for stored entries)
    usize: int | None = None  # default: len(data)
    flags: int = 0
    version: int = 20
    lfh_extra: bytes = b""
    cd_extra: bytes = b""
    # Central-directory fields that, when set, replace what the layout implies.
    cd_csize: int | None = None
    cd_usize: int | None = None
    cd_lfh_offset: int | None = None
    cd_method: int | None = None
    cd_name: bytes | None = None
    disk_start: int = 0
    write_local: bool = True  # False: a central record only (points at another header)
    descriptor: bool = False  # sizes and CRC 0 in the local header, data descriptor after

    @classmethod
    def compressed(cls, name: bytes | str, plain: bytes, method: int = 8, **kw: object) -> Member:
        """A member holding ``plain`` compressed with ``method`` (0, 8, 12 or 93)."""
        if method == 0:
            data = plain
        elif method == 8:
            data = raw_deflate(plain)
        elif method == 12:
            data = bz2.compress(plain)
        elif method == 93:
            data = zstd_frame(plain)
        else:
            raise ValueError(f"cannot compress with method {method}")
        kw.setdefault("crc", zlib.crc32(plain))
        kw.setdefault("usize", len(plain))
        return cls(name, data, method, **kw)  # type: ignore[arg-type]

    @property
    def raw_name(self) -> bytes:
        return self.name.encode("utf-8") if isinstance(self.name, str) else self.name


@dataclass
class Built:
    """A built archive and where its parts are."""

    data: bytes
    lfh_offsets: list[int] = field(default_factory=list)
    data_offsets: list[int] = field(default_factory=list)
    cd_offset: int = 0
    cd_size: int = 0
    eocd_offset: int = 0


def build(
    members: list[Member],
    *,
    prefix: bytes = b"",
    comment: bytes = b"",
    zip64: bool = False,
    n_entries: int | None = None,
    n_disk: int | None = None,
    cd_size: int | None = None,
    cd_offset: int | None = None,
    disk: int = 0,
    cd_disk: int = 0,
    locator_offset: int | None = None,
    locator_disk: int = 0,
    total_disks: int = 1,
    z64_disk: int = 0,
    z64_cd_disk: int = 0,
    z64_record_size: int = 44,
) -> Built:
    """Lay ``members`` out after ``prefix``; the keyword arguments override end-record fields.

    With ``zip64`` the end is a ZIP64 end record, its locator and a legacy end record of
    sentinels; the counts, sizes and offsets then live in the ZIP64 record.
    """
    out = bytearray(prefix)
    built = Built(b"")
    for m in members:
        if not m.write_local:
            built.lfh_offsets.append(-1)
            built.data_offsets.append(-1)
            continue
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        usize = len(m.data) if m.usize is None else m.usize
        flags = m.flags | (0x08 if m.descriptor else 0)
        lfh_sizes = (0, 0, 0) if m.descriptor else (crc, len(m.data), usize)
        built.lfh_offsets.append(len(out))
        out += LFH.pack(
            LFH_SIG,
            m.version,
            flags,
            m.method,
            0,
            0x21,
            *lfh_sizes,
            len(m.raw_name),
            len(m.lfh_extra),
        )
        out += m.raw_name + m.lfh_extra
        built.data_offsets.append(len(out))
        out += m.data
        if m.descriptor:
            out += struct.pack("<IIII", 0x08074B50, crc, len(m.data), usize)
    cd_start = len(out)
    for i, m in enumerate(members):
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        usize = len(m.data) if m.usize is None else m.usize
        name = m.raw_name if m.cd_name is None else m.cd_name
        flags = m.flags | (0x08 if m.descriptor else 0)
        out += CDH.pack(
            CD_SIG,
            0x0314,
            m.version,
            flags,
            m.method if m.cd_method is None else m.cd_method,
            0,
            0x21,
            crc,
            len(m.data) if m.cd_csize is None else m.cd_csize,
            usize if m.cd_usize is None else m.cd_usize,
            len(name),
            len(m.cd_extra),
            0,
            m.disk_start,
            0,
            0o100644 << 16,
            built.lfh_offsets[i] if m.cd_lfh_offset is None else m.cd_lfh_offset,
        )
        out += name + m.cd_extra
    size = len(out) - cd_start if cd_size is None else cd_size
    offset = cd_start if cd_offset is None else cd_offset
    count = len(members) if n_entries is None else n_entries
    per_disk = count if n_disk is None else n_disk
    built.cd_offset, built.cd_size = cd_start, len(out) - cd_start
    if zip64:
        z64 = len(out)
        out += ZIP64_EOCD.pack(
            ZIP64_EOCD_SIG,
            z64_record_size,
            0x031E,
            45,
            z64_disk,
            z64_cd_disk,
            per_disk,
            count,
            size,
            offset,
        )
        out += LOCATOR.pack(
            LOCATOR_SIG,
            locator_disk,
            z64 if locator_offset is None else locator_offset,
            total_disks,
        )
        built.eocd_offset = len(out)
        out += EOCD.pack(EOCD_SIG, disk, cd_disk, U16, U16, U32, U32, len(comment))
    else:
        built.eocd_offset = len(out)
        out += EOCD.pack(EOCD_SIG, disk, cd_disk, per_disk, count, size, offset, len(comment))
    out += comment
    built.data = bytes(out)
    return built


# --- Reading the records of an existing archive -----------------------------------------


@dataclass
class EndRecords:
    """Where the end records of an archive are, and what they say."""

    eocd: int  # offset of the legacy end record
    zip64_eocd: int | None  # offset of the ZIP64 end record, if any
    locator: int | None
    cd_offset: int
    cd_size: int
    n_entries: int


def end_records(data: bytes) -> EndRecords:
    """Parse the end records of ``data`` (the last end-record signature wins)."""
    eocd = data.rfind(struct.pack("<I", EOCD_SIG))
    if eocd < 0:
        raise ValueError("no end record")
    _, _, _, _, n, size, offset, _ = EOCD.unpack_from(data, eocd)
    loc = eocd - LOCATOR.size
    if loc >= 0 and struct.unpack_from("<I", data, loc)[0] == LOCATOR_SIG:
        z64 = LOCATOR.unpack_from(data, loc)[2]
        rec = ZIP64_EOCD.unpack_from(data, z64)
        return EndRecords(eocd, z64, loc, rec[9], rec[8], rec[7])
    return EndRecords(eocd, None, None, offset, size, n)


@dataclass
class CentralRecord:
    """One central-directory record: its fields, and where the size/offset fields sit.

    ``*_pos`` are absolute file offsets of the field that really holds the value (inside
    the ZIP64 extra field when the 32-bit field holds the 0xFFFFFFFF sentinel), each with
    its width in bytes.
    """

    offset: int
    length: int
    name: bytes
    method: int
    flags: int
    crc: int
    csize: int
    usize: int
    lfh_offset: int
    usize_pos: tuple[int, int]
    csize_pos: tuple[int, int]
    lfh_pos: tuple[int, int]


def central_records(data: bytes) -> list[CentralRecord]:
    """Parse every central-directory record of ``data``."""
    end = end_records(data)
    pos = end.cd_offset
    out = []
    for _ in range(end.n_entries):
        (
            sig,
            _m,
            _v,
            flags,
            method,
            _t,
            _d,
            crc,
            csize,
            usize,
            n_len,
            e_len,
            c_len,
            _disk,
            _ia,
            _ea,
            lfh,
        ) = CDH.unpack_from(data, pos)
        assert sig == CD_SIG
        name = data[pos + 46 : pos + 46 + n_len]
        usize_pos, csize_pos, lfh_pos = (pos + 24, 4), (pos + 20, 4), (pos + 42, 4)
        x = pos + 46 + n_len
        while x + 4 <= pos + 46 + n_len + e_len:
            tag, size = struct.unpack_from("<HH", data, x)
            if tag == 1:
                q = x + 4
                if usize == U32:
                    usize, usize_pos = struct.unpack_from("<Q", data, q)[0], (q, 8)
                    q += 8
                if csize == U32:
                    csize, csize_pos = struct.unpack_from("<Q", data, q)[0], (q, 8)
                    q += 8
                if lfh == U32:
                    lfh, lfh_pos = struct.unpack_from("<Q", data, q)[0], (q, 8)
                break
            x += 4 + size
        length = 46 + n_len + e_len + c_len
        out.append(
            CentralRecord(
                pos,
                length,
                name,
                method,
                flags,
                crc,
                csize,
                usize,
                lfh,
                usize_pos,
                csize_pos,
                lfh_pos,
            )
        )
        pos += length
    return out


def patch(data: bytes, where: tuple[int, int], value: int) -> bytes:
    """``data`` with the little-endian field at ``where = (offset, width)`` set to ``value``."""
    offset, width = where
    out = bytearray(data)
    out[offset : offset + width] = value.to_bytes(width, "little")
    return bytes(out)
