"""MmapZipStore: a Zarr store over one memory-mapped ZIP archive.

Reads are zero-copy views of one mapping whose base address never moves while the file
grows; appends, rewrites and deletes keep the file a valid ZIP archive at every instant, so a
process killed at any point leaves an archive that the next writable open recovers to a prefix
of what was committed. The implementation lives in ``dafzarr._core.zipstore``.
"""

from __future__ import annotations

from .._core.zipstore.space import ArchiveSpace
from .._core.zipstore.store import MmapZipStore

__all__ = ["ArchiveSpace", "MmapZipStore"]
