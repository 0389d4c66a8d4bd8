"""Reading stored chunks: from a pending block, one segment of a compressed block, a whole
block, or (for a lone chunk of an uncompressed block) the chunk's own byte range.

Decoded blocks and segments, and raw compressed blocks, are kept in the file's
:class:`~._cache.DeltaCache` under keys that name the layer's generation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CorruptArrayFileError
from . import segments as seg
from .allocator import BlockAllocator
from .footer import corrupt
from .geometry import clipped
from .lru import DeltaCache
from .objects import ArrayFileStorage
from .records import Layer, Meta
from .types import decode_chunk

__all__ = ["ChunkReader"]

_MAX_SEGMENT_TABLE = 256 << 20  # a larger gap before the footer is not a segment table


class ChunkReader:
    """Reads chunk bytes and values of the layers of one file set (``key``: its base)."""

    def __init__(self, backend: ArrayFileStorage, cache: DeltaCache, key: str) -> None:
        self.backend = backend
        self.cache = cache
        self.key = key

    def _cache_key(self, layer: Layer, bid: int) -> tuple[Any, ...]:
        return (self.backend.ident, layer.key, layer.version, layer.token, bid)

    def segment_tables(self, layer: Layer) -> dict[int, Any]:
        """The layer's LZ4 segment tables, read on first use (one range read)."""
        if layer.segments is None:
            lo, hi = layer.gap
            if hi - lo < 32 or hi - lo > _MAX_SEGMENT_TABLE:
                layer.segments = {}
            else:
                data = self.backend.read(layer.key, layer.version, lo, hi)
                layer.segments = seg.decode_table(data, layer.blocks)
        return layer.segments

    def _segment(self, layer: Layer, bid: int, off: int, size: int) -> Any:
        """Chunk bytes from the segment that holds them, or None to decode the whole block."""
        table = self.segment_tables(layer).get(bid)
        if table is None:
            return None
        boff, csize, usize, codec = layer.blocks[bid]
        assert codec is not None  # tables are only kept for compressed blocks
        i, out_lo, out_hi, in_lo, in_hi = seg.segment_span(table, off, usize, csize)
        if off + size > out_hi:
            return None  # not written by a segmenting writer: chunks straddle segments
        ck = (*self._cache_key(layer, bid), i)
        data = self.cache.blocks.get(ck)
        if data is None:
            raw = self.cache.io.get(ck[:-1])
            stored: Any
            if raw is not None:
                stored = memoryview(raw)[in_lo:in_hi]
            else:
                stored = self.backend.read(layer.key, layer.version, boff + in_lo, boff + in_hi)
                if len(stored) != in_hi - in_lo:
                    raise corrupt(layer.key, f"block {bid} is truncated")
            try:
                data = seg.decode_segment(
                    table,
                    i,
                    stored,
                    usize,
                    csize,
                    codec,
                    what=f"{layer.key}: block {bid}, segment {i}",
                )
            except CorruptArrayFileError:
                raise
            except Exception as exc:
                raise corrupt(
                    layer.key, f"block {bid}, segment {i} does not decode ({exc})"
                ) from exc
            self.cache.blocks.put(ck, data)
        return memoryview(data)[off - out_lo : off - out_lo + size]

    def _block(self, layer: Layer, bid: int) -> Any:
        """Block ``bid`` of ``layer``, decoded."""
        ck = self._cache_key(layer, bid)
        block = self.cache.blocks.get(ck)
        if block is not None:
            return block
        try:
            off, csize, usize, codec = layer.blocks[bid]
        except KeyError:
            raise corrupt(layer.key, f"block {bid} is not in the footer") from None
        raw = self.cache.io.get(ck) if codec is not None else None
        if raw is None:
            try:
                raw = self.backend.read(layer.key, layer.version, off, off + csize)
            except EOFError:
                raw = b""
            if len(raw) != csize:
                raise corrupt(layer.key, f"block {bid} is truncated")
            if codec is not None:
                self.cache.io.put(ck, raw)
        block = seg.decode_block(codec, raw, usize, what=f"{layer.key}: block {bid}")
        self.cache.blocks.put(ck, block)
        return block

    def block_cached(self, layer: Layer, bid: int) -> bool:
        """Whether block ``bid`` of ``layer`` is in the decoded-block cache."""
        return self.cache.blocks.get(self._cache_key(layer, bid)) is not None

    def direct_span(self, loc: Any) -> tuple[Layer, int, int] | None:
        """``(layer, offset in the object, size)`` of a committed chunk that can be read
        straight into the caller's memory: its block is uncompressed and not cached, and the
        backend reads into buffers. None otherwise."""
        if loc[0] == "p" or not self.backend.direct_reads:
            return None
        layer, la, row = loc
        bid, off, size = la.table.addrs[row].tolist()
        block = layer.blocks.get(bid)
        if block is None or block[3] is not None or off + size > block[2]:
            return None
        if self.block_cached(layer, bid):
            return None
        return layer, block[0] + off, size

    def read_runs(self, runs: list[tuple[Layer, int, int, list[memoryview]]]) -> None:
        """Fill each run's buffers from ``[start, end)`` of its layer (one vectored read per
        run of chunks adjacent in the object)."""
        for layer, start, _, buffers in runs:
            try:
                self.backend.read_into(layer.key, layer.version, start, buffers)
            except EOFError:
                raise corrupt(layer.key, f"a block is truncated (read at {start})") from None

    def raw_chunk(self, loc: Any, alloc: BlockAllocator | None, *, direct: bool = False) -> Any:
        """The stored bytes of a chunk (``alloc`` holds the pending blocks). ``direct``: a
        lone chunk of an uncompressed block that is not cached is read by itself (a range
        read of the chunk, not of the block)."""
        if loc[0] == "p":
            _, bid, off, size, _ = loc[1]
            assert alloc is not None
            return alloc.chunk(self.cache, bid, off, size)
        layer, la, row = loc
        bid, off, size = (int(x) for x in la.table.addrs[row])
        if direct:
            meta = layer.blocks.get(bid)
            if (
                meta is not None
                and meta[3] is None
                and self.cache.blocks.get(self._cache_key(layer, bid)) is None
            ):
                start = meta[0] + off
                try:
                    data = self.backend.read(layer.key, layer.version, start, start + size)
                except EOFError:
                    data = b""
                if len(data) != size:
                    raise corrupt(layer.key, f"block {bid} is truncated")
                return data
        meta = layer.blocks.get(bid)
        if (
            meta is not None
            and meta[3] in seg.CODECS
            and self.cache.blocks.get(self._cache_key(layer, bid)) is None
        ):
            chunk = self._segment(layer, bid, off, size)
            if chunk is not None:
                return chunk
        return memoryview(self._block(layer, bid))[off : off + size]

    def chunk_values(
        self,
        meta: Meta,
        coord: tuple[int, ...],
        loc: Any,
        alloc: BlockAllocator | None,
        *,
        direct: bool = False,
    ) -> np.ndarray:
        """The decoded values of chunk ``coord`` (clipped at the array's edge)."""
        raw = self.raw_chunk(loc, alloc, direct=direct)
        cshape = clipped(meta, coord)
        try:
            return decode_chunk(meta.require_info(), raw, cshape)
        except ValueError as exc:
            where = self.key if loc[0] == "p" else loc[0].key
            raise corrupt(where, f"array {meta.name!r}, chunk {coord}: {exc}") from exc
