"""ArrayFile: many n-dimensional arrays in one object (the ``array-format`` container).

File-compatible with the Rust crate ``array-format`` (footer v4 written, v4 and v5 read), with
delta sidecars, compaction, statistics and local, in-memory and object-store backends.

Where this implementation deliberately departs from the crate:

* A chunk is found through a per-layer hash index, not a linear scan.
* A tombstone stops the fall-through to older layers, and an array deleted and re-defined before
  one flush is written as two sidecars (the tombstone, then the new definition), so no
  pre-delete data ever shows through, before or after :meth:`compact`.
* Attributes are resolved in the layer that holds the array's metadata, and each new layer's
  attribute dictionaries extend the previous layer's with stable indices (cumulative), which
  the crate's own lookups also read right.
* The next sidecar is ``max(N) + 1``, created with a create-only put (another writer's sidecar
  is never replaced).
* :meth:`compact` writes the new base first (atomic replace), then deletes sidecars oldest
  first: every intermediate state reads the same data. An open racing another process's
  compaction reads again until it sees one state, before or after it (never a mix).
* Caches are keyed by object version, so nothing read before a ``compact`` is served after it.
* An LZ4 block is still one LZ4 block for every reader, but is made of independently
  compressed segments of whole chunks, found through a table between the blocks and the
  footer (which other readers skip): a chunk read decodes its segment, not its 8 MiB block.
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
