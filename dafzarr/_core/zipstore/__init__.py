"""MmapZipStore: a Zarr store over one memory-mapped ZIP archive.

Reads are zero-copy views of one mapping whose base address never moves while the file
grows; appends, rewrites and deletes keep the file a valid ZIP archive at every instant (the commit protocol of
``commit``), so a process killed at any point leaves an archive that the next writable open
recovers to a prefix of what was committed.

The modules, from the bottom up (each imports only modules listed before it):

- ``ziprecords``: the ZIP records the store writes, and the bounds-checked parser it reads.
- ``methods``: compressed entries decoded through the codec registry, bounded by their data.
- ``state``: the explicit state every step takes: the directory in memory
  (:class:`~dafzarr._core.zipstore.state.Archive`) and the open transaction.
- ``input``: keys checked and encoded as ZIP names; values seen as bytes.
- ``lead``: bytes before the archive (a self-extracting stub), which nothing writes over.
- ``read``: entries served as zero-copy views, or decoded.
- ``space``: byte accounting, CRC checks and the listing of the directory.
- ``commit``: the commit protocol: begin, make room, write entries, place the directory,
  commit or abort; CRC patches of reservations.
- ``recover``: loading for writing: trailer, scan, salvage, rollback of a torn tail.
- ``open``: mapping the file, the writer's lock, read-only loads that wait out a commit.
- ``write``: staging, reserving and deleting entries inside a transaction.
- ``repack``: compaction, the restart of an emptied archive.
- ``pack``: packing of a directory store.
- ``handle``: :class:`~dafzarr._core.zipstore.handle.ArchiveHandle`: the options, the lock,
  the mapping and the synchronous operations that open, read, write, commit, compact and
  close an archive.
- ``store``: :class:`MmapZipStore`: zarr's Store API and the mapping protocol over the
  handle it holds.
"""

from __future__ import annotations

from .space import ArchiveSpace
from .store import MmapZipStore

__all__ = ["ArchiveSpace", "MmapZipStore"]
