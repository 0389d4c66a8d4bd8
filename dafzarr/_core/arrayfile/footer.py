"""Footer dictionaries to in-memory layers and back, with every check a reader relies on.

:func:`layer_from_footer` turns a decoded footer (see :mod:`._format`) into a
:class:`~._records.Layer`, rejecting blocks outside the data region, unknown codecs, chunks
outside their array or block, and attribute indices out of range. :func:`build_footer` makes
the footer of a new layer from array entries and sealed blocks. Neither does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import CorruptArrayFileError, CorruptFooterError
from . import format as fmt
from . import segments as seg
from .allocator import SealedBlock
from .records import Layer, LayerArray, Meta
from .types import U32_MAX, DTypeInfo, dtype_from_tag

__all__ = [
    "AttrDict",
    "FooterEntry",
    "build_footer",
    "check_stats_entries",
    "corrupt",
    "layer_from_footer",
]

# One array of a layer being written: (metadata, deleted, chunk table)
FooterEntry = tuple[Meta, bool, fmt.ChunkTable]
BlockMap = dict[int, tuple[int, int, int, str | None]]


def corrupt(key: str, msg: str) -> CorruptArrayFileError:
    """The error for a damaged object ``key``."""
    return CorruptArrayFileError(f"{key}: {msg}")


# --- Reading ---------------------------------------------------------------------------


def layer_from_footer(
    key: str,
    number: int,
    version: str,
    footer: dict[str, Any],
    data_end: int | None = None,
    segments: dict[int, Any] | None = None,
) -> Layer:
    """The layer a footer describes. ``data_end``: where the footer starts in the object
    (None for a footer just written); ``segments``: segment tables already known."""
    blocks: BlockMap = {}
    for b in footer["blocks"]:
        codec = None if b["codec"][0] == "None" else b["codec"][1]
        if codec not in (None, "lz4", "zstd"):
            raise corrupt(key, f"block {b['id']} uses the unknown codec {codec!r}")
        if data_end is not None and b["file_offset"] + b["compressed_size"] > data_end:
            raise corrupt(key, f"block {b['id']} lies outside the data region")
        if codec is None and b["compressed_size"] != b["uncompressed_size"]:
            raise corrupt(key, f"uncompressed block {b['id']} has two sizes")
        if b["uncompressed_size"] > U32_MAX + (1 << 32):
            raise corrupt(key, f"block {b['id']} claims {b['uncompressed_size']} bytes")
        blocks[b["id"]] = (b["file_offset"], b["compressed_size"], b["uncompressed_size"], codec)
    keys, values = footer["attr_keys"], footer["attr_values"]
    arrays: dict[str, LayerArray] = {}
    stored: list[tuple[Meta, fmt.ChunkTable]] = []
    for a in footer["arrays"]:
        meta = _meta_from_footer(key, a, keys, values)
        table: fmt.ChunkTable = a["layout"]["storage"]["chunks"]
        if len(table):
            stored.append((meta, table))
        else:
            table = fmt.ChunkTable.empty(len(meta.shape))
        arrays[meta.name] = LayerArray(meta, bool(a["deleted"]), table)
    _check_tables(key, stored, blocks)
    layer = Layer(key, number, version, footer, blocks, arrays, segments=segments)
    if segments is None:
        blocks_end = max((b[0] + b[1] for b in blocks.values()), default=0)
        if data_end is None or not any(b[3] in seg.CODECS for b in blocks.values()):
            layer.segments = {}
        else:
            layer.gap = (blocks_end, data_end)
    return layer


def _meta_from_footer(key: str, a: dict[str, Any], keys: list[str], values: list[Any]) -> Meta:
    name = a["name"]
    layout = a["layout"]
    shape = tuple(layout["shape"])
    chunk_shape = tuple(layout["storage"]["chunk_shape"])
    if len(chunk_shape) != len(shape) or 0 in chunk_shape:
        raise corrupt(key, f"array {name!r}: chunk shape {chunk_shape} for {shape}")
    try:
        info: DTypeInfo | None = dtype_from_tag(a["dtype"][0])
    except ValueError:
        info = None
    attrs = {}
    for p in a["attributes"][1]:
        if p["k"] >= len(keys) or p["v"] >= len(values):
            raise corrupt(key, f"array {name!r}: attribute index out of range")
        attrs[keys[p["k"]]] = values[p["v"]]
    return Meta(
        name,
        a["dtype"],
        info,
        shape,
        list(layout["dimension_names"]),
        chunk_shape,
        a["fill_value"],
        attrs,
    )


def _check_tables(key: str, stored: list[tuple[Meta, fmt.ChunkTable]], blocks: BlockMap) -> None:
    """:func:`_check_table` of every array of a layer in a few passes over all their chunks;
    when one fails, the array at fault is found and named."""
    if not stored:
        return
    if _tables_ok(stored, blocks):
        return
    for meta, table in stored:
        _check_table(key, meta, table, blocks)
    raise corrupt(key, "a chunk table does not fit its array or its blocks")


def _tables_ok(stored: list[tuple[Meta, fmt.ChunkTable]], blocks: BlockMap) -> bool:
    by_ndim: dict[int, list[tuple[Meta, fmt.ChunkTable]]] = {}
    for meta, table in stored:
        if table.coords.shape[1] != len(meta.shape):
            return False
        by_ndim.setdefault(len(meta.shape), []).append((meta, table))
    for ndim, group in by_ndim.items():
        if ndim == 0:
            continue
        coords = np.concatenate([t.coords for _, t in group])
        shapes = np.array([m.shape for m, _ in group], np.int64)
        chunk_shapes = np.array([m.chunk_shape for m, _ in group], np.int64)  # none is 0
        grids = np.repeat(-(-shapes // chunk_shapes), [len(t) for _, t in group], axis=0)
        if np.any(coords >= grids):
            return False
    addrs = np.concatenate([t.addrs for _, t in stored]).astype(np.int64)
    ids = np.array(sorted(blocks), np.int64)
    if not len(ids):
        return False
    usize = np.array([blocks[i][2] for i in ids.tolist()], np.int64)
    where = np.minimum(np.searchsorted(ids, addrs[:, 0]), len(ids) - 1)
    return bool(
        np.all(ids[where] == addrs[:, 0]) and np.all(addrs[:, 1] + addrs[:, 2] <= usize[where])
    )


def _check_table(key: str, meta: Meta, table: fmt.ChunkTable, blocks: BlockMap) -> None:
    if table.coords.shape[1] != len(meta.shape):
        raise corrupt(key, f"array {meta.name!r}: chunk coordinates of wrong length")
    if len(meta.shape) and np.any(table.coords >= np.asarray(meta.grid, np.uint64)):
        raise corrupt(key, f"array {meta.name!r}: a chunk lies outside the array")
    bids, inverse = np.unique(table.addrs[:, 0], return_inverse=True)
    usize = np.array([blocks.get(int(b), (0, 0, -1, None))[2] for b in bids], np.int64)
    if np.any(usize < 0):
        raise corrupt(key, f"array {meta.name!r}: a chunk names a missing block")
    ends = table.addrs[:, 1].astype(np.int64) + table.addrs[:, 2]
    if np.any(ends > usize[inverse.reshape(-1)]):
        raise corrupt(key, f"array {meta.name!r}: a chunk runs past its block")


def check_stats_entries(entries: list[dict[str, Any]]) -> None:
    """``CorruptFooterError`` unless every statistics entry names one array once."""
    seen: set[str] = set()
    for e in entries:
        name = e["name"]
        if name in seen:
            raise CorruptFooterError(f"the statistics list array {name!r} twice")
        seen.add(name)
        if e["null_count"] > e["row_count"]:
            raise CorruptFooterError(
                f"array {name!r}: {e['null_count']} nulls among {e['row_count']} elements"
            )


# --- Writing ---------------------------------------------------------------------------


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


class AttrDict:
    """A layer's attribute dictionaries, extending the previous layer's (stable indices)."""

    def __init__(self, keys: Sequence[str], values: Sequence[Any]) -> None:
        self.keys = list(keys)
        self.values = list(values)
        self._k: dict[str, int] = {}
        for i, k in enumerate(self.keys):
            self._k.setdefault(k, i)
        self._v: dict[Any, int] = {}
        for i, v in enumerate(self.values):
            self._v.setdefault(_hashable(v), i)

    def pairs(self, attrs: dict[str, tuple[Any, ...]]) -> tuple[Any, ...]:
        """The footer's ``(width, [{k, v}, ...])`` for ``attrs``, adding new keys/values."""
        out = []
        for k, v in attrs.items():
            ki = self._k.get(k)
            if ki is None:
                ki = self._k[k] = len(self.keys)
                self.keys.append(k)
            hv = _hashable(v)
            vi = self._v.get(hv)
            if vi is None:
                vi = self._v[hv] = len(self.values)
                self.values.append(v)
            out.append({"k": ki, "v": vi})
        out.sort(key=lambda p: p["k"])
        top = max((max(p["k"], p["v"]) for p in out), default=0)
        width = "U16" if top <= 0xFFFF else "U32" if top <= U32_MAX else "U64"
        return (width, out)


def _array_entry(
    meta: Meta, deleted: bool, table: fmt.ChunkTable, attrs: AttrDict
) -> dict[str, Any]:
    return {
        "name": meta.name,
        "dtype": meta.dtype_raw,
        "layout": {
            "shape": list(meta.shape),
            "dimension_names": list(meta.dim_names),
            "storage": {"chunk_shape": list(meta.chunk_shape), "chunks": table},
        },
        "fill_value": meta.fill,
        "deleted": deleted,
        "attributes": attrs.pairs(meta.attrs),
    }


def build_footer(
    entries: list[FooterEntry],
    blocks: list[SealedBlock],
    codec: str | None,
    previous: dict[str, Any],
    hint: str,
) -> tuple[dict[str, Any], bytes, dict[int, Any]]:
    """The footer of a new layer laid out as ``blocks`` in order, the segment table that goes
    between the blocks and the footer, and the segment tables by block id.

    ``previous`` is the newest layer's footer (its version and attribute dictionaries carry
    on); ``hint`` is the base's name for a sidecar, "" for a base. ``overlay_index`` is 0:
    the writer sets a sidecar's number.
    """
    attrs = AttrDict(previous["attr_keys"], previous["attr_values"])
    block_meta = []
    offset = 0
    tables = {}
    for i, (stored, usize, table) in enumerate(blocks):
        named = ("None",) if codec is None else ("Named", codec)
        block_meta.append(
            {
                "id": i,
                "file_offset": offset,
                "compressed_size": len(stored),
                "uncompressed_size": usize,
                "codec": named,
            }
        )
        offset += len(stored)
        if table is not None:
            tables[i] = (table, len(stored), usize)
    # LZ4 segment tables go between the blocks and the footer, where other readers,
    # which address blocks by offset, never look
    segment_table = seg.encode_table(tables)
    segments = {i: t[0].astype(np.int64) for i, t in tables.items()}
    arrays = [_array_entry(m, d, t, attrs) for m, d, t in entries]
    footer = {
        "version": int(previous["version"]),
        "blocks": block_meta,
        "arrays": arrays,
        "attr_keys": attrs.keys,
        "attr_values": attrs.values,
        "overlay_index": 0,
        "base_file_hint": hint,
    }
    return footer, segment_table, segments
