"""Whole arrays read straight from a local file into the result, without a pass per chunk.

When every chunk of an array lies in the uncompressed blocks of one committed layer, in key
order, each chunk spanning the array's trailing axes (so a chunk is a contiguous piece of a
C-ordered result), a whole-array read is one vectored read per run of chunks that are also
adjacent in the file: usually one read per array, as many bytes as a plain file of it holds.
"""

from __future__ import annotations

from .chunk_reader import ChunkReader
from .records import Layer, LayerArray, Meta, Records

__all__ = ["Run", "whole_array_runs"]

# (offset in the object, offset in the result's bytes, length)
Run = tuple[int, int, int]


def whole_array_runs(
    records: Records, reader: ChunkReader, meta: Meta
) -> tuple[Layer, list[Run]] | None:
    """The layer and the reads that fill a whole-array result of ``meta``'s array, or None
    when the general, chunk-by-chunk path is needed (pending changes, chunks in several
    layers or missing, compressed or cached blocks, chunks that split a row,
    variable-length types)."""
    info = meta.info
    if info is None or info.vlen or not reader.backend.direct_reads:
        return None
    if meta.name in records.pending:
        return None
    layer_array = next(records.reachable(meta), None)
    if layer_array is None:
        return None
    layer, la = layer_array
    plan = la.whole_plan
    if plan is None:  # worked out once per array and layer: neither ever changes
        plan = la.whole_plan = _plan(layer, la, meta)
    if not plan:
        return None
    runs, block_ids = plan
    for bid in block_ids:
        if reader.block_cached(layer, bid):  # the general path reads it from memory
            return None
    return layer, runs


def _plan(layer: Layer, la: LayerArray, meta: Meta) -> tuple[list[Run], list[int]] | tuple[()]:
    """(runs, ids of the blocks they read) of a whole-array read of ``la``'s chunks in
    ``layer`` (an array of ``meta``'s layout), or ``()`` when they do not make one."""
    info = meta.info
    if info is None or meta.chunk_shape[1:] != meta.shape[1:]:
        return ()
    table = la.table
    n = -(-meta.shape[0] // meta.chunk_shape[0]) if meta.shape else 1  # chunks on axis 0
    if n == 0 or len(table) != n:
        return ()
    if meta.shape and table.coords[:, 0].tolist() != list(range(n)):
        return ()
    row_bytes = info.np_dtype.itemsize
    for s in meta.shape[1:]:
        row_bytes *= s
    size = row_bytes * (meta.chunk_shape[0] if meta.shape else 1)
    last_size = row_bytes * (meta.shape[0] - (n - 1) * meta.chunk_shape[0]) if meta.shape else size
    bids, offs, sizes = table.addrs.T.tolist()
    first = bids[0]
    block = layer.blocks.get(first)
    if (
        block is not None
        and block[3] is None
        and bids.count(first) == n
        and sizes[-1] == last_size
        and sizes[:-1] == [size] * (n - 1)
        and offs == list(range(offs[0], offs[0] + n * size, size))
    ):
        # the usual case, checked with list operations: one piece of one block
        return [(block[0] + offs[0], 0, size * (n - 1) + last_size)], [first]
    blocks: dict[int, int] = {}
    runs: list[Run] = []
    at = 0
    end = -1
    for i, (bid, off, got) in enumerate(zip(bids, offs, sizes, strict=True)):
        if got != (size if i + 1 < n else last_size):
            return ()  # the general path names the chunk whose size is wrong
        base = blocks.get(bid)
        if base is None:
            block = layer.blocks.get(bid)
            if block is None or block[3] is not None:
                return ()
            base = blocks[bid] = block[0]
        begin = base + off
        if begin == end:
            first, first_at, length = runs[-1]
            runs[-1] = (first, first_at, length + got)
        else:
            runs.append((begin, at, got))
        at += got
        end = begin + got
    return runs, list(blocks)
