"""Reading and writing a region of one array: the chunks it covers, read straight into the
result where they are stored whole and uncompressed, or encoded for the allocator (what
``ArrayFile.read_array`` and ``ArrayFile.write_array`` do under the handle's lock).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .allocator import BlockAllocator
from .chunk_reader import ChunkReader
from .direct import whole_array_runs
from .geometry import chunks_in, clipped, region
from .records import Layer, Meta, Records
from .types import as_array, chunk_stats, encode_chunk

__all__ = ["Encoded", "encode_region", "read_region"]

#: One encoded chunk: its key, its coordinates, its stored bytes and its statistics.
Encoded = tuple[int, tuple[int, ...], Any, tuple[Any, Any, int]]


def _direct_buffer(
    meta: Meta, coord: tuple[int, ...], src: tuple[Any, ...], dst: np.ndarray
) -> memoryview | None:
    """``dst`` (where chunk ``coord`` goes in a result) as bytes, if the chunk is wanted
    whole and ``dst`` is contiguous, so that the stored chunk can be read into it as is."""
    if not dst.flags.c_contiguous:
        return None
    cshape = clipped(meta, coord)
    if cshape and any(s.start != 0 or s.stop != c for s, c in zip(src, cshape, strict=True)):
        return None
    return memoryview(cast(Any, dst.reshape(-1).view(np.uint8)))


def read_region(
    records: Records,
    reader: ChunkReader,
    alloc: BlockAllocator | None,
    name: str,
    start: Sequence[int] | None,
    shape: Sequence[int] | None,
) -> np.ndarray:
    """The region of array ``name`` (default: all of it); unwritten elements read as the fill
    value (``alloc`` holds the chunks written since the last flush)."""
    meta = records.meta(name)
    info = meta.require_info()
    if start is None and shape is None:
        st, sh = (0,) * len(meta.shape), meta.shape
    else:
        st, sh = region(meta, start, shape)
    out = np.empty(sh, dtype=info.np_dtype)
    whole = whole_array_runs(records, reader, meta) if sh == meta.shape else None
    if whole is not None:
        layer, whole_runs = whole
        raw = memoryview(cast(Any, out.reshape(-1).view(np.uint8)))
        if len(whole_runs) == 1:  # the array is one piece of the file
            begin = whole_runs[0][0]
            reader.read_runs([(layer, begin, begin + raw.nbytes, [raw])])
        else:
            reader.read_runs(
                [
                    (layer, begin, begin + size, [raw[at : at + size]])
                    for begin, at, size in whole_runs
                ]
            )
        return out
    pieces = list(chunks_in(meta, st, sh))
    # a chunk of an uncompressed local block is read by itself, not with its block
    direct = len(pieces) == 1 or reader.backend.direct_reads
    # chunks of uncompressed blocks go straight from the file into ``out``: one
    # vectored read per run of chunks that are adjacent in the file
    runs: list[tuple[Layer, int, int, list[memoryview]]] = []
    for coord, dst, src in pieces:
        loc = records.locate(meta, meta.key(coord))
        if loc is None:
            out[dst] = meta.element()
            continue
        buf = None if info.vlen else _direct_buffer(meta, coord, src, out[dst])
        span = None if buf is None else reader.direct_span(loc)
        if span is not None and buf is not None and span[2] == buf.nbytes:
            layer, begin, size = span
            last = runs[-1] if runs else None
            if last is not None and last[0] is layer and last[2] == begin:
                last[3].append(buf)
                runs[-1] = (layer, last[1], begin + size, last[3])
            else:
                runs.append((layer, begin, begin + size, [buf]))
            continue
        out[dst] = reader.chunk_values(meta, coord, loc, alloc, direct=direct)[src]
    reader.read_runs(runs)
    return out


def encode_region(
    records: Records,
    reader: ChunkReader,
    alloc: BlockAllocator | None,
    key: str,
    name: str,
    start: Sequence[int],
    data: Any,
) -> list[Encoded]:
    """The chunks of array ``name`` that writing ``data`` at ``start`` changes, encoded; chunks
    only partly covered are read and patched (``key``: the file set, for errors)."""
    meta = records.meta(name)
    info = meta.require_info()
    arr = as_array(info, data, f"{key}: array {name!r}")
    st, sh = region(meta, start, arr.shape, write=True)
    encoded = []  # every chunk is encoded before any is stored: all or nothing
    for coord, dst, src in chunks_in(meta, st, sh):
        cshape = clipped(meta, coord)
        chunk = meta.key(coord)
        piece = arr[dst]
        if piece.shape == cshape:
            values = piece
        else:
            loc = records.locate(meta, chunk)
            if loc is None:
                values = np.full(cshape, meta.element(), dtype=info.np_dtype)
            else:
                values = reader.chunk_values(meta, coord, loc, alloc).copy()
            values[src] = piece
        encoded.append(
            (chunk, coord, encode_chunk(info, values), chunk_stats(info, meta.fill, values))
        )
    return encoded
