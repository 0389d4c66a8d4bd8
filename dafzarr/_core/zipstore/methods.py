"""Compressed ZIP entries decoded in memory bounded by what their data proves.

A ZIP entry's directory record states its compression method, decoded size and CRC-32;
:func:`decode_entry` finds the method by its ZIP id in the codec registry
(:mod:`dafzarr._core.codecs`) and decodes through :func:`dafzarr._core.codecs.decode`, which refuses a claim the data cannot produce and proves a large
claim before allocating it. Every refusal is a :class:`~dafzarr.errors.CorruptArchiveError`
naming the archive and the entry (an unsupported method or a size above
``max_decompressed_size`` is an :class:`~dafzarr.errors.UnsupportedEntryError`).
"""

from __future__ import annotations

from ...errors import CorruptArchiveError, UnsupportedEntryError
from ..codecs import decode, zip_method, zip_methods
from . import ziprecords as zf

__all__ = ["decode_entry"]


def decode_entry(path: str, e: zf.Entry, raw: bytes, max_size: int) -> memoryview:
    """The decoded bytes of compressed entry ``e`` (``raw``: its compressed bytes), checked
    against the size and CRC-32 its directory record states. Read-only."""
    where = f"{path}: entry {e.name!r}"
    if e.usize > max_size:
        raise UnsupportedEntryError(
            f"{where} claims to decompress to {e.usize} bytes, more than "
            f"max_decompressed_size = {max_size}"
        )
    method = zip_method(e.method)
    if method is None:
        supported = ", ".join(
            m.zip_label[:-1] + (f", with the {m.requires} package)" if m.requires else ")")
            for m in zip_methods()
        )
        raise UnsupportedEntryError(
            f"{path}: unsupported ZIP compression method: {zf.method_name(e.method)} in ZIP "
            f"entry {e.name!r}; supported methods are {supported}"
        )
    return decode(
        method.name,
        raw,
        e.usize,
        what=where,
        crc=e.crc,
        error=CorruptArchiveError,
        record="its directory record",
        label=method.zip_label,
    )
