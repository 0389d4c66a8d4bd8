"""One way to read bytes: ranges of one object, from a local file, memory or any obstore store.

:func:`open_source` turns a path or an ``http(s)://`` / ``s3://`` URL into a source;
:class:`BlockReader` serves a source as a file object through a block cache.

Every source keeps the contract of :class:`ByteSource` (exact lengths, a version token, a
missing object as :class:`FileNotFoundError`); :class:`ObjectSource` adds the checks, retries
and deadline that reads over the network need (:class:`HttpOptions`).
"""

from __future__ import annotations

from .blocks import BlockReader
from .local import FileSource, file_version
from .memory import MemorySource
from .object import ObjectSource, http_store, object_version, same_object
from .options import HttpOptions
from .ranges import byte_range_bounds
from .source import BytesLike, ByteSource, Head
from .urls import is_remote, open_source

__all__ = [
    "BlockReader",
    "ByteSource",
    "BytesLike",
    "FileSource",
    "Head",
    "HttpOptions",
    "MemorySource",
    "ObjectSource",
    "byte_range_bounds",
    "file_version",
    "http_store",
    "is_remote",
    "object_version",
    "open_source",
    "same_object",
]
