"""Whole arrays read straight from a local file into the result, without a pass per chunk.

When every chunk of an array lies in the uncompressed blocks of one committed layer, in key
order, each chunk spanning the array's trailing axes (so a chunk is a contiguous piece of a
C-ordered result), a whole-array read is one vectored read per run of chunks that are also
adjacent in the file: usually one read per array, as many bytes as a plain file of it holds.
"""

from __future__ import annotations

from ._reader import ChunkReader
from ._records import Layer, Meta, Records

__all__ = ["Run", "whole_array_runs"]

# (layer, offset in the object, offset in the result's bytes, length)
Run = tuple[Layer, int, int, int]


def whole_array_runs(records: Records, reader: ChunkReader, meta: Meta) -> list[Run] | None:
    """The reads that fill a whole-array result of ``meta``'s array, or None when the
    general, chunk-by-chunk path is needed (pending changes, chunks in several layers or
    missing, compressed or cached blocks, chunks that split a row, variable-length types)."""
    info = meta.info
    if info is None or info.vlen or not reader.backend.direct_reads:
        return None
    if meta.name in records.pending or meta.chunk_shape[1:] != meta.shape[1:]:
        return None
    layer_array = next(records.reachable(meta), None)
    if layer_array is None:
        return None
    layer, la = layer_array
    table = la.table
    n = meta.grid[0] if meta.shape else 1
    if len(table) != n:
        return None
    if meta.shape and table.coords[:, 0].tolist() != list(range(n)):
        return None
    row_bytes = info.np_dtype.itemsize
    for s in meta.shape[1:]:
        row_bytes *= s
    size = row_bytes * (meta.chunk_shape[0] if meta.shape else 1)
    last_size = row_bytes * (meta.shape[0] - (n - 1) * meta.chunk_shape[0]) if meta.shape else size
    blocks: dict[int, int] = {}
    runs: list[Run] = []
    at = 0
    end = -1
    for i, (bid, off, got) in enumerate(table.addrs.tolist()):
        if got != (size if i + 1 < n else last_size):
            return None  # the general path names the chunk whose size is wrong
        base = blocks.get(bid)
        if base is None:
            block = layer.blocks.get(bid)
            if block is None or block[3] is not None or reader.block_cached(layer, bid):
                return None
            base = blocks[bid] = block[0]
        begin = base + off
        if begin == end:
            lay, first, first_at, length = runs[-1]
            runs[-1] = (lay, first, first_at, length + got)
        else:
            runs.append((layer, begin, at, got))
        at += got
        end = begin + got
    return runs
