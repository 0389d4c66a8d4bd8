"""Compaction: every visible chunk copied into a new base, then the sidecars deleted.

The new base replaces the old one atomically; sidecars are then deleted oldest first, so
every intermediate state reads the same data. Sidecars that remain (a failed delete, or
another writer's) stay above the new base.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import format as fmt
from .allocator import BlockAllocator
from .chunk_reader import ChunkReader
from .fileconfig import FileConfig
from .footer import FooterEntry
from .objects import ArrayFileStorage
from .records import Records
from .sidecars import load_layers, write_layer
from .stats import compute_stats

__all__ = ["compact", "repack"]


def repack(
    records: Records, reader: ChunkReader, alloc: BlockAllocator
) -> tuple[list[FooterEntry], list[dict[str, Any]]]:
    """The entries of a base holding every visible array, chunks in key order placed by
    ``alloc``, and their statistics. Pending changes must have been flushed."""
    entries = []
    stats = []
    for name in records.names():
        meta = records.meta(name)
        chunks = records.visible_chunks(meta)
        order = sorted(chunks)
        coords = np.zeros((len(order), len(meta.shape)), np.uint32)
        addrs = np.zeros((len(order), 3), np.uint32)
        for i, key in enumerate(order):
            loc = chunks[key]
            raw = reader.raw_chunk(loc, None)
            addrs[i] = alloc.append(raw)
            coords[i] = loc[1].table.coords[loc[2]]
        entries.append((meta, False, fmt.ChunkTable(coords, addrs)))
        if meta.info is not None:
            stats.append(compute_stats(reader, meta, chunks))
    return entries, stats


def compact(
    records: Records,
    reader: ChunkReader,
    backend: ArrayFileStorage,
    config: FileConfig,
    spill_dir: str | None,
) -> list[dict[str, Any]]:
    """Write the new base, then delete the sidecars oldest first; ``records.layers`` follow
    (also when a delete fails). The statistics of the new base, for the caller to write."""
    alloc = BlockAllocator(config, spill_dir, stage=spill_dir is not None)
    try:
        entries, stats = repack(records, reader, alloc)
        base = write_layer(
            backend,
            records.key,
            "",
            records.layers,
            entries,
            alloc.finish(),
            config.codec,
            base=True,
        )
    finally:
        alloc.close()
    old = records.layers[1:]
    records.layers = [base]
    try:
        for layer in old:  # oldest first: what remains always reads the same
            backend.delete(layer.key)
    finally:
        # sidecars left by a failed delete, or written meanwhile by other writers,
        # stay above the new base; the next sidecar number must exceed theirs
        records.layers = load_layers(backend, records.key, base)
    return stats
