"""ArrayFile: many n-dimensional arrays in one object (the ``array-format`` container).

File-compatible with the Rust crate ``array-format`` (footer v4 written, v4 and v5 read), with
delta sidecars, compaction, statistics and local, in-memory and object-store backends.
"""

from __future__ import annotations

from ...errors import (
    ArrayExistsError,
    ArrayNotFoundError,
    CorruptArrayFileError,
    UnsupportedElementTypeError,
)
from .file import ArrayFile
from .fileconfig import FileConfig
from .lru import DeltaCache
from .records import ArrayInfo, ArrayStats

__all__ = [
    "ArrayExistsError",
    "ArrayFile",
    "ArrayInfo",
    "ArrayNotFoundError",
    "ArrayStats",
    "CorruptArrayFileError",
    "DeltaCache",
    "FileConfig",
    "UnsupportedElementTypeError",
]
