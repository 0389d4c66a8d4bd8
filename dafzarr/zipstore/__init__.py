"""MmapZipStore: an append-only Zarr store over one memory-mapped ZIP archive.

The package's modules, from the bottom up:

- ``_format``: the ZIP records the store writes and the bounds-checked parser it reads with.
- ``_store``: :class:`MmapZipStore` itself (the zarr Store and mapping API).
- ``_copy``: compaction, packing of a directory store, and the restart of an emptied archive.
"""

from __future__ import annotations

from ._store import ArchiveSpace, MmapZipStore

__all__ = ["ArchiveSpace", "MmapZipStore"]
