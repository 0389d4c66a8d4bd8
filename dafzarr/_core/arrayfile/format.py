"""The array-format footer (v4 and v5) and statistics file, in rkyv 0.8's archived layout.

An ``.af`` object is ``[blocks][rkyv footer][footer_size: u64 LE]["ARRF"]``; a ``.stats``
object is ``[rkyv StatsFile][size: u64 LE]["ARST"]``. This module turns those bytes into Python
values and back. Footers are dictionaries mirroring the archived structs; enum values are
tuples ``(variant, *fields)``; each array's chunk table is a :class:`ChunkTable` of numpy
arrays, decoded and encoded without a Python loop over chunks. The per-array records (one
per array in a footer and in a statistics object) are read by the compiled
:mod:`dafzarr._affooter` to the same values with the same checks; the Python schema below
writes them, and reads them when asked to (``compiled=False``, the reference in tests).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ... import _affooter
from ...errors import CorruptFooterError
from . import rkyv as r

__all__ = [
    "FOOTER_MAGIC",
    "STATS_MAGIC",
    "ChunkTable",
    "CorruptFooterError",
    "decode_footer",
    "decode_stats",
    "empty_footer",
    "encode_footer",
    "encode_stats",
    "split_trailer",
]

FOOTER_MAGIC = b"ARRF"
STATS_MAGIC = b"ARST"
TRAILER = 12


# --- Chunk tables ----------------------------------------------------------------------


@dataclass
class ChunkTable:
    """The chunks of one array in one layer: ``coords`` (n, ndim) and ``addrs`` (n, 3)
    = (block id, offset in the decompressed block, size), both uint32, in stored order."""

    coords: npt.NDArray[np.uint32]
    addrs: npt.NDArray[np.uint32]

    def __len__(self) -> int:
        return int(self.addrs.shape[0])

    @classmethod
    def empty(cls, ndim: int) -> ChunkTable:
        return cls(np.zeros((0, ndim), np.uint32), np.zeros((0, 3), np.uint32))


_BIG_TABLE = 4096  # tables this long are read at once, shorter ones together (_fill_tables)
# placeholders of a table whose rows _fill_tables has not yet filled (never handed out)
_NO_COORDS = np.zeros((0, 1), np.uint32)
_NO_ADDRS = np.zeros((0, 3), np.uint32)

_ENTRY = np.dtype(
    [
        ("coff", "<i8"),
        ("clen", "<u8"),
        ("blk", "<u4"),
        ("off", "<u4"),
        ("size", "<u4"),
        ("pad", "<u4"),
    ]
)
assert _ENTRY.itemsize == 32


class _ChunkTableType(r.ArchivedVec):
    """``Vec<ChunkEntry>``, ``ChunkEntry = {coord: Vec<u32>, address: (u32, u32, u32)}``."""

    def __init__(self) -> None:
        super().__init__(r.Struct([], 32, 8))

    def read(self, dec: r.Decoder, pos: int) -> ChunkTable:
        """The table's place and size; its rows are filled by :func:`_fill_tables` once the
        whole footer is read (one vectorised pass over every table of the footer)."""
        start, n = self.locate(dec, pos)
        if n == 0:
            return ChunkTable.empty(0)
        if n >= _BIG_TABLE:  # numpy's per-call cost is small next to the table: read it now
            return self._read_now(dec, pos, start, n)
        (ndim,) = struct.unpack_from("<Q", dec.buf, start + 8)
        if ndim > _affooter.MAX_NDIM:
            raise r.RkyvError(f"chunk table at {pos}: {ndim} coordinates per chunk")
        dec.charge(4 * ndim * n, f"chunk table at {pos}")
        table = self.deferred_table(n, ndim)
        dec.later.append((start, n, ndim, table))
        return table

    # what the compiled decoder (:mod:`dafzarr._affooter`) asks of this type
    big = _BIG_TABLE

    @staticmethod
    def empty_table() -> ChunkTable:
        """The table of an array without stored chunks."""
        return ChunkTable.empty(0)

    @staticmethod
    def deferred_table(n: int, ndim: int) -> ChunkTable:
        """A table of ``n`` rows that :func:`_fill_tables` fills (its addresses always; its
        coordinates when it has any)."""
        coords = _NO_COORDS if ndim else np.zeros((n, 0), np.uint32)
        return ChunkTable(coords, _NO_ADDRS)

    def _read_now(self, dec: r.Decoder, pos: int, start: int, n: int) -> ChunkTable:
        entries = np.frombuffer(dec.buf, _ENTRY, count=n, offset=start)
        lens = entries["clen"]
        ndim = int(lens[0])
        if ndim > _affooter.MAX_NDIM or not np.all(lens == ndim):
            raise r.RkyvError(f"chunk table at {pos}: coordinates of different lengths")
        cpos = entries["coff"] + (start + 32 * np.arange(n, dtype=np.int64))
        if ndim == 0:
            return ChunkTable(np.zeros((n, 0), np.uint32), _addrs(entries))
        if cpos.min() < 0 or int(cpos.max()) + 4 * ndim > dec.n or np.any(cpos % 4):
            raise r.RkyvError(f"chunk table at {pos}: a coordinate lies outside the payload")
        dec.charge(4 * ndim * n, f"chunk table at {pos}")
        words = np.frombuffer(dec.buf, "<u4", count=dec.n // 4)
        coords = words[(cpos // 4)[:, None] + np.arange(ndim)]
        return ChunkTable(coords.astype(np.uint32, copy=False), _addrs(entries))

    def deps(self, enc: r.Encoder, value: Any) -> Any:
        table: ChunkTable = value
        n = len(table)
        ndim = table.coords.shape[1] if table.coords.ndim == 2 else 0
        enc.pad(4)
        cstart = enc.pos
        enc.out += np.ascontiguousarray(table.coords, dtype="<u4").tobytes()
        enc.pad(8)
        start = enc.pos
        entries = np.zeros(n, _ENTRY)
        idx = np.arange(n, dtype=np.int64)
        entries["coff"] = (cstart + idx * 4 * ndim) - (start + 32 * idx)
        entries["clen"] = ndim
        entries["blk"] = table.addrs[:, 0]
        entries["off"] = table.addrs[:, 1]
        entries["size"] = table.addrs[:, 2]
        enc.out += entries.tobytes()
        return (start, n)


def _addrs(entries: np.ndarray) -> npt.NDArray[np.uint32]:
    out = np.empty((entries.shape[0], 3), np.uint32)
    out[:, 0] = entries["blk"]
    out[:, 1] = entries["off"]
    out[:, 2] = entries["size"]
    return out


def _fill_tables(dec: r.Decoder) -> None:
    """Fill the rows of every chunk table the decoder met (see ``_ChunkTableType.read``)."""
    tables = dec.later
    if not tables:
        return
    starts = np.array([t[0] for t in tables], np.int64)
    counts = np.array([t[1] for t in tables], np.int64)
    ndims = np.array([t[2] for t in tables], np.int64)
    total = int(counts.sum())
    ends = np.cumsum(counts)
    rank = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
    pos = np.repeat(starts, counts) + 32 * rank  # every entry, 8-aligned (checked by locate)
    w64 = np.frombuffer(dec.buf, "<i8", count=dec.n // 8)
    w32 = np.frombuffer(dec.buf, "<u4", count=dec.n // 4)
    nd = np.repeat(ndims, counts)
    if np.any(w64[pos // 8 + 1] != nd):
        bad = int(np.searchsorted(ends, int(np.argmax(w64[pos // 8 + 1] != nd)), "right"))
        raise r.RkyvError(f"chunk table at {tables[bad][0]}: coordinates of different lengths")
    words = pos // 4
    addrs = np.stack([w32[words + 4], w32[words + 5], w32[words + 6]], axis=1)
    cpos = w64[pos // 8] + pos
    bad_pos = (nd > 0) & ((cpos < 0) | (cpos + 4 * nd > dec.n) | (cpos % 4 != 0))
    if np.any(bad_pos):
        bad = int(np.searchsorted(ends, int(np.argmax(bad_pos)), "right"))
        raise r.RkyvError(f"chunk table at {tables[bad][0]}: a coordinate lies outside the payload")
    lo = 0
    for (_, _, _, table), hi in zip(tables, ends.tolist(), strict=True):
        table.addrs = addrs[lo:hi]  # views of one array: a slice each, no copy
        lo = hi
    for d in np.unique(ndims).tolist():
        if d == 0:
            continue
        rows = nd == d
        which = np.flatnonzero(ndims == d)
        coords = w32[(cpos[rows] // 4)[:, None] + np.arange(d)]
        lo = 0
        for i, k in zip(which.tolist(), counts[which].tolist(), strict=True):
            tables[i][3].coords = coords[lo : lo + k]
            lo += k


# --- Schema ----------------------------------------------------------------------------

_V32 = r.ArchivedVec(r.U32)
_CODEC = r.Enum({0: ("None", []), 1: ("Named", [(r.STRING, 8)])}, 24, 8)
_BLOCK = r.Struct(
    [
        ("id", r.U32, 0),
        ("file_offset", r.U64, 8),
        ("compressed_size", r.U64, 16),
        ("uncompressed_size", r.U64, 24),
        ("codec", _CODEC, 32),
    ],
    56,
    8,
)


def _dtype() -> r.Type:
    return _DTYPE


# The variants' tags and names, the record sizes and the chunk table's limit are defined once,
# in the compiled decoder (:mod:`dafzarr._affooter`), and taken from it here.
_dt_variants: dict[int, tuple[str, Sequence[tuple[r.Type, int]]]] = {
    tag: (name, []) for tag, name in _affooter.UNIT_DTYPES.items()
}
_dt_variants[13] = ("FixedSizeList", [(r.Box(_dtype), 8), (r.U32, 16)])
_dt_variants[14] = ("List", [(r.Box(_dtype), 8)])
_DTYPE = r.Enum(_dt_variants, 24, 8)

_FILL = r.Enum(
    {
        tag: (name, [(field, 1 if field is r.BOOL else 8)])
        for tag, (name, field) in enumerate(
            zip(_affooter.FILL_KINDS, (r.BOOL, r.I64, r.U64, r.F64, r.STRING, r.I64), strict=True)
        )
    },
    24,
    8,
)
_ATTRS = r.Enum(
    {
        tag: (
            name,
            [(r.ArchivedVec(r.Struct([("k", prim, 0), ("v", prim, size)], 2 * size, size)), 8)],
        )
        for tag, (name, prim, size) in enumerate(
            zip(_affooter.ATTR_WIDTHS, (r.U16, r.U32, r.U64), (2, 4, 8), strict=True)
        )
    },
    24,
    8,
)
_CHUNKS = _ChunkTableType()
_STORAGE = r.Struct([("chunk_shape", _V32, 0), ("chunks", _CHUNKS, 16)], 32, 8)
_LAYOUT = r.Struct(
    [
        ("shape", _V32, 0),
        ("dimension_names", r.ArchivedVec(r.STRING), 16),
        ("storage", _STORAGE, 32),
    ],
    64,
    8,
)
_ARRAY = r.Struct(
    [
        ("name", r.STRING, 0),
        ("dtype", _DTYPE, 16),
        ("layout", _LAYOUT, 40),
        ("fill_value", r.Option(_FILL), 104),
        ("deleted", r.BOOL, 136),
        ("attributes", _ATTRS, 144),
    ],
    _affooter.ARRAY_SIZE,
    8,
)

_AV4: dict[int, tuple[str, Sequence[tuple[r.Type, int]]]] = {
    0: ("Bool", [(r.BOOL, 1)]),
    1: ("Int8", [(r.I8, 1)]),
    2: ("Int16", [(r.I16, 2)]),
    3: ("Int32", [(r.I32, 4)]),
    4: ("Int64", [(r.I64, 8)]),
    5: ("UInt8", [(r.U8, 1)]),
    6: ("UInt16", [(r.U16, 2)]),
    7: ("UInt32", [(r.U32, 4)]),
    8: ("UInt64", [(r.U64, 8)]),
    9: ("Float32", [(r.F32, 4)]),
    10: ("Float64", [(r.F64, 8)]),
    11: ("String", [(r.STRING, 8)]),
}
_AV5 = dict(_AV4)
_AV5[12] = ("Binary", [(r.Bytes(), 8)])
for _tag, (_name, _elem) in enumerate(
    [
        ("BoolList", r.BOOL),
        ("Int8List", r.I8),
        ("Int16List", r.I16),
        ("Int32List", r.I32),
        ("Int64List", r.I64),
        ("UInt8List", r.U8),
        ("UInt16List", r.U16),
        ("UInt32List", r.U32),
        ("UInt64List", r.U64),
        ("Float32List", r.F32),
        ("Float64List", r.F64),
        ("StringList", r.STRING),
        ("BinaryList", r.Bytes()),
    ],
    start=13,
):
    _AV5[_tag] = (_name, [(r.ArchivedVec(_elem), 8)])


class _CompiledVec(r.ArchivedVec):
    """A vector of records that :mod:`dafzarr._affooter` reads in one compiled loop, to the
    values and with the checks of the Python schema ``elem``, which still writes them."""

    def __init__(self, elem: r.Type, read_records: Callable[[r.Decoder, int, int], Any]) -> None:
        super().__init__(elem)
        self._read_records = read_records

    def read(self, dec: r.Decoder, pos: int) -> Any:
        start, n = self.locate(dec, pos)
        return self._read_records(dec, start, n)


def _read_arrays(dec: r.Decoder, start: int, n: int) -> list[dict[str, Any]]:
    return _affooter.read_arrays(dec, start, n, _DTYPE, _CHUNKS)


def _footer_type(version: int, *, compiled: bool = True) -> r.Struct:
    """The footer root of ``version``; ``compiled=False``: every record decoded by the
    Python schema (the reference the compiled decoder is tested against)."""
    av = r.Enum(_AV4 if version == 4 else _AV5, 24, 8)
    arrays = _CompiledVec(_ARRAY, _read_arrays) if compiled else r.ArchivedVec(_ARRAY)
    return r.Struct(
        [
            ("version", r.U32, 0),
            ("blocks", r.ArchivedVec(_BLOCK), 8),
            ("arrays", arrays, 24),
            ("attr_keys", r.ArchivedVec(r.STRING), 40),
            ("attr_values", r.ArchivedVec(av), 56),
            ("overlay_index", r.U32, 72),
            ("base_file_hint", r.STRING, 80),
        ],
        96,
        8,
    )


FOOTERS = {4: _footer_type(4), 5: _footer_type(5)}
PY_FOOTERS = {4: _footer_type(4, compiled=False), 5: _footer_type(5, compiled=False)}

_STAT = r.Enum(
    {
        tag: (name, [(field, 8)])
        for tag, (name, field) in enumerate(
            zip(_affooter.STAT_KINDS, (r.I64, r.U64, r.F64, r.Bytes(), r.I64), strict=True)
        )
    },
    24,
    8,
)
_ARRAY_STATS = r.Struct(
    [
        ("name", r.STRING, 0),
        ("min", r.Option(_STAT), 16),
        ("max", r.Option(_STAT), 48),
        ("null_count", r.U64, 80),
        ("row_count", r.U64, 88),
    ],
    _affooter.STATS_SIZE,
    8,
)
_STATS_VEC = _CompiledVec(_ARRAY_STATS, _affooter.read_stats)
_STATS_V0 = r.Struct([("arrays", _STATS_VEC, 0)], 16, 8)
_STATS_V1 = r.Struct([("version", r.U32, 0), ("arrays", _STATS_VEC, 8)], 24, 8)
_PY_STATS = {
    0: r.Struct([("arrays", r.ArchivedVec(_ARRAY_STATS), 0)], 16, 8),
    1: r.Struct([("version", r.U32, 0), ("arrays", r.ArchivedVec(_ARRAY_STATS), 8)], 24, 8),
}


# --- Trailer and top level -------------------------------------------------------------


def split_trailer(tail: bytes | bytearray | memoryview, magic: bytes, total_size: int) -> int:
    """The payload size announced by the 12-byte trailer at the end of ``tail``.

    ``tail`` holds the last bytes of an object of ``total_size`` bytes.
    """
    if total_size < TRAILER or len(tail) < TRAILER:
        raise CorruptFooterError(f"{total_size} bytes is too short for the 12-byte trailer")
    t = bytes(tail[-TRAILER:])
    if t[8:] != magic:
        raise CorruptFooterError(f"the trailer magic is {t[8:]!r}, expected {magic!r}")
    (size,) = struct.unpack("<Q", t[:8])
    if size > total_size - TRAILER:
        raise CorruptFooterError(
            f"the trailer announces a {size}-byte footer in a {total_size}-byte object"
        )
    if size % 8:
        raise CorruptFooterError(f"the footer size {size} is not a multiple of 8")
    return int(size)


def decode_footer(payload: bytes | memoryview, *, compiled: bool = True) -> dict[str, Any]:
    """Decode a footer payload (v4 or v5). ``compiled=False``: with the Python schema only
    (the same values and checks, slower; the reference of the compiled decoder)."""
    if len(payload) < 96:
        raise CorruptFooterError(f"a {len(payload)}-byte footer is smaller than its root")
    (version,) = struct.unpack_from("<I", payload, len(payload) - 96)
    if version not in FOOTERS:
        raise CorruptFooterError(
            f"footer version {version} is not supported (this reader knows 4 and 5)"
        )
    try:
        dec = r.Decoder(payload)
        root = (FOOTERS if compiled else PY_FOOTERS)[version]
        footer: dict[str, Any] = r.decode_root_with(root, dec)
        _fill_tables(dec)
    except (r.RkyvError, UnicodeDecodeError, struct.error) as exc:
        raise CorruptFooterError(
            f"footer v{version} does not decode ({exc}); files written by array-format 0.7 "
            "or older use 32-bit pointers and are not supported"
        ) from exc
    return footer


def encode_footer(footer: dict[str, Any]) -> bytes:
    """The footer payload followed by the trailer."""
    payload = r.encode_root(FOOTERS[footer["version"]], footer)
    return payload + struct.pack("<Q", len(payload)) + FOOTER_MAGIC


def empty_footer(*, version: int = 4, overlay_index: int = 0, hint: str = "") -> dict[str, Any]:
    return {
        "version": version,
        "blocks": [],
        "arrays": [],
        "attr_keys": [],
        "attr_values": [],
        "overlay_index": overlay_index,
        "base_file_hint": hint,
    }


def decode_stats(
    payload: bytes | memoryview, *, compiled: bool = True
) -> tuple[int, list[dict[str, Any]]]:
    """Decode a stats payload; return (generation 0 or 1, entries). ``compiled=False``: with
    the Python schema only (see :func:`decode_footer`).

    Generation 0 (crate 0.10/0.11) has the root ``{arrays}``; generation 1 (0.12) has
    ``{version, arrays}``. Both keep ``arrays`` in the last 16 bytes, so the generation is
    told apart by where the element array ends: right before the root in both cases.
    """
    n = len(payload)
    if n == 16:
        gen = 0
    elif n == 24 and struct.unpack_from("<I", payload, 0)[0] == 1:
        gen = 1
    elif n >= 24:
        dec = r.Decoder(payload)
        try:
            start, count = _STATS_V0.fields[0][1].locate(dec, n - 16)  # type: ignore[attr-defined]
        except r.RkyvError as exc:
            raise CorruptFooterError(f"the stats table does not decode ({exc})") from exc
        end = start + 96 * count
        if end == n - 16:
            gen = 0
        elif end == n - 24:
            gen = 1
        else:
            raise CorruptFooterError("the stats table does not end at its root")
    else:
        raise CorruptFooterError(f"a {n}-byte stats payload is too short")
    try:
        schema = (_STATS_V1 if gen else _STATS_V0) if compiled else _PY_STATS[gen]
        root = r.decode_root(schema, payload)
    except (r.RkyvError, UnicodeDecodeError, struct.error) as exc:
        raise CorruptFooterError(f"the stats table does not decode ({exc})") from exc
    if gen == 1 and root["version"] != 1:
        raise CorruptFooterError(
            f"stats version {root['version']} is not supported (this reader knows 1)"
        )
    return gen, root["arrays"]


def encode_stats(entries: list[dict[str, Any]], *, generation: int = 0) -> bytes:
    """The stats payload (generation 0 unless told otherwise) followed by the trailer."""
    if generation == 0:
        payload = r.encode_root(_STATS_V0, {"arrays": entries})
    else:
        payload = r.encode_root(_STATS_V1, {"version": 1, "arrays": entries})
    return payload + struct.pack("<Q", len(payload)) + STATS_MAGIC
