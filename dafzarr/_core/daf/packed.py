"""Reading the single-shard "packed" arrays of DataAxesFormats.jl 0.3.0.

A packed array has one outer chunk holding a ``sharding_indexed`` shard whose inner chunks
need not divide the array shape (zarr-python refuses such arrays). The shard starts with
its index, ``N x (offset u64, nbytes u64)`` plus a CRC-32C, in C order over the inner grid;
a missing inner chunk has both fields all ones. Each inner chunk is the full inner shape
(fill-padded at the edges) encoded by ``bytes``/``vlen-utf8`` and one compressor.
"""

from __future__ import annotations

import itertools
import math
import struct
from typing import Any

import numpy as np

from ...errors import CorruptDafError, UnsupportedDafError
from .. import codecs as _codecs
from ..codecs import DEFLATE_MAX_RATIO
from .layout import decode_strings, is_packed

__all__ = ["is_packed", "read_packed"]

_MISSING = 0xFFFF_FFFF_FFFF_FFFF


#: Most bytes one compressed byte may decode to when the decoded size is not known in advance
#: (strings): deflate's limit, which blosc's and zstd's stated sizes are held to as well.
_MAX_RATIO, _RATIO_SLACK = DEFLATE_MAX_RATIO, 1 << 16

#: The inner compressors of packed arrays (Zarr v3 codec names, all registered in ``_codecs``).
_CODECS = ("zstd", "gzip", "blosc")


def _decompress(codec: dict[str, Any] | None, data: bytes, where: str, size: int | None) -> Any:
    """Decode one inner chunk to ``size`` bytes (``None``: strings, bounded by a ratio).

    Nothing larger than the chunk's known size, or than ``_MAX_RATIO`` times its compressed
    size, is allocated (:func:`dafzarr._core.codecs.decode`): a chunk whose stream says otherwise
    is a :class:`CorruptDafError`.
    """
    if codec is None:
        return data
    name = codec.get("name")
    if name not in _CODECS:
        raise UnsupportedDafError(f"{where}: unsupported inner codec {name!r} in a packed array")
    return _codecs.decode(
        name,
        data,
        size,
        what=f"{where}: an inner chunk",
        error=CorruptDafError,
        at_most=_MAX_RATIO * len(data) + _RATIO_SLACK,
        record="its chunk shape",
    )


def read_packed(
    meta: dict[str, Any], shard: Any, dtype: np.dtype[Any] | str, where: str
) -> np.ndarray[Any, Any]:
    """Decode a packed array (Zarr shape, C order) from its shard bytes."""
    config = meta["codecs"][0].get("configuration") or {}
    shape = tuple(int(n) for n in meta["shape"])
    inner = tuple(int(n) for n in config["chunk_shape"])
    if len(inner) != len(shape) or any(n <= 0 for n in inner):
        raise CorruptDafError(f"{where}: invalid inner chunk shape {inner} for shape {shape}")
    codecs = config.get("codecs") or []
    names = [c.get("name") for c in codecs]
    if not names or names[0] not in ("bytes", "vlen-utf8") or len(names) > 2:
        raise UnsupportedDafError(f"{where}: unsupported inner codecs {names} in a packed array")
    compressor = codecs[1] if len(codecs) == 2 else None
    if config.get("index_location", "end") != "start":
        raise UnsupportedDafError(f"{where}: only index_location 'start' is supported")
    grid = tuple(math.ceil(n / c) for n, c in zip(shape, inner, strict=True))
    count = math.prod(grid)
    raw = memoryview(shard).cast("B")
    if len(raw) < 16 * count + 4:
        raise CorruptDafError(f"{where}: shard of {len(raw)} bytes is too short for {count} chunks")
    index = struct.unpack_from(f"<{2 * count}Q", raw, 0)
    is_str = isinstance(dtype, str)
    fill = meta.get("fill_value")
    out = np.full(shape, "" if is_str else (fill or 0), dtype=object if is_str else dtype)
    inner_count = math.prod(inner)
    for i, pos in enumerate(itertools.product(*(range(g) for g in grid))):
        offset, nbytes = index[2 * i], index[2 * i + 1]
        if offset == _MISSING and nbytes == _MISSING:
            continue
        if offset + nbytes > len(raw):
            raise CorruptDafError(f"{where}: inner chunk {pos} lies outside the shard")
        size = None if is_str else inner_count * np.dtype(dtype).itemsize
        data = _decompress(compressor, bytes(raw[offset : offset + nbytes]), where, size)
        if is_str:
            block = decode_strings(data, inner_count, where).reshape(inner)
        else:
            assert isinstance(dtype, np.dtype)
            if len(data) != inner_count * dtype.itemsize:
                raise CorruptDafError(f"{where}: inner chunk {pos} decodes to {len(data)} bytes")
            block = np.frombuffer(data, dtype).reshape(inner)
        region = tuple(
            slice(p * c, min((p + 1) * c, n)) for p, c, n in zip(pos, inner, shape, strict=True)
        )
        out[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]
    out.flags.writeable = False
    return out
