"""Reading and writing a region of one array: the chunks it covers, read straight into the
result where they are stored whole and uncompressed, or encoded for the allocator; and
``ArrayFile.read_array`` and ``ArrayFile.write_array`` (bound there) over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

import numpy as np

from .allocator import BlockAllocator
from .arrays import Held
from .chunk_reader import ChunkReader
from .direct import whole_array_runs
from .fileconfig import FileConfig
from .geometry import chunks_in, clipped, region
from .records import Layer, Meta, Records
from .threaded import in_thread
from .types import as_array, chunk_stats, encode_chunk

__all__ = ["Encoded", "Reads", "encode_region", "read_array", "read_array_async", "read_region"]

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


class Reads(Held, Protocol):
    """What :func:`read_array` uses of an ArrayFile besides :class:`Held`."""

    @property
    def _reader(self) -> ChunkReader: ...

    @property
    def _alloc(self) -> BlockAllocator | None: ...


def read_array(
    self: Reads, name: str, start: Sequence[int] | None = None, shape: Sequence[int] | None = None
) -> np.ndarray:
    """Read a region (default: the whole array); unwritten elements read as the fill value.

    Parameters
    ----------
    name : str
        The array.
    start : sequence of int, optional
        The region's first element; default the array's first.
    shape : sequence of int, optional
        The region's extent; default the rest of the array from ``start``.

    Returns
    -------
    numpy.ndarray
        The values (an object array for ``str``/``bytes`` arrays).

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    OutOfBoundsError
        The region is not inside the array.
    InvalidArgumentError
        ``start`` or ``shape`` does not have one value per axis.
    CorruptArrayFileError
        A chunk's stored bytes are damaged.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("a", "int32", ["x"], [5], fill_value=-1)
    ...     f.write_array("a", [1], [10, 20])
    ...     f.read_array("a")
    array([-1, 10, 20, -1, -1], dtype=int32)
    """
    with self._lock:
        self._check_open()
        return read_region(self._records, self._reader, self._alloc, name, start, shape)


read_array_async = in_thread(
    read_array,
    """
>>> import asyncio
>>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
...     f.define_array("a", "int8", ["x"], [2])
...     asyncio.run(f.read_array_async("a"))
array([0, 0], dtype=int8)
""",
)


class Writes(Held, Protocol):
    """What :func:`write_array` uses of an ArrayFile besides :class:`Held`."""

    _alloc: BlockAllocator | None

    @property
    def _reader(self) -> ChunkReader: ...

    @property
    def _config(self) -> FileConfig: ...

    def _spill_dir(self) -> str | None: ...


def write_array(self: Writes, name: str, start: Sequence[int], data: Any) -> None:
    """Write ``data`` at ``start``; chunks only partly covered are read, patched, rewritten.

    Nothing is written unless every chunk of ``data`` can be; the change is stored at the
    next :meth:`flush`.

    Parameters
    ----------
    name : str
        The array.
    start : sequence of int
        Where the first element of ``data`` goes.
    data : array-like
        The values, of the array's number of axes.

    Raises
    ------
    ArrayNotFoundError
        No visible array is named ``name``.
    OutOfBoundsError
        ``data`` does not fit in the array at ``start``.
    InvalidArgumentTypeError
        ``data`` cannot be cast to the array's type without loss.
    ClosedError
        The handle is closed.

    Examples
    --------
    >>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
    ...     f.define_array("m", "float32", ["row", "col"], [2, 2])
    ...     f.write_array("m", [1, 0], [[1.5, 2.5]])
    ...     f.read_array("m")
    array([[0. , 0. ],
           [1.5, 2.5]], dtype=float32)
    """
    with self._lock:
        self._check_open()
        records = self._records
        encoded = encode_region(records, self._reader, self._alloc, self._key, name, start, data)
        p = records.for_write(name)
        if self._alloc is None:
            spill = self._spill_dir()
            self._alloc = BlockAllocator(self._config, spill, stage=spill is not None)
        for key, coord, payload, stats in encoded:
            bid, off, size = self._alloc.append(payload)
            p.chunks[key] = (coord, bid, off, size, stats)


write_array_async = in_thread(
    write_array,
    """
>>> import asyncio
>>> with dafzarr.arrayfile.ArrayFile.create_memory() as f:
...     f.define_array("a", "int8", ["x"], [2])
...     asyncio.run(f.write_array_async("a", [0], [4, 5]))
...     f.read_array("a")
array([4, 5], dtype=int8)
""",
)
