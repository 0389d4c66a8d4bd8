"""ArrayFile: many n-dimensional arrays in one object (the ``array-format`` container).

File-compatible with the Rust crate ``array-format`` (footer v4 written, v4 and v5 read), with
delta sidecars, compaction, statistics and local, in-memory and object-store backends. The
implementation lives in ``dafzarr._core.arrayfile``.
"""

from __future__ import annotations

from .._core.arrayfile.file import ArrayFile
from .._core.arrayfile.fileconfig import FileConfig
from .._core.arrayfile.lru import DeltaCache
from .._core.arrayfile.records import ArrayInfo, ArrayStats
from ..errors import (
    ArrayExistsError,
    ArrayNotFoundError,
    CorruptArrayFileError,
    UnsupportedElementTypeError,
)

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
