"""Flush: the pending changes of a file set written as new sidecars.

Arrays deleted and defined again since the last flush get their tombstones in a sidecar of
their own, written first: readers stop there, so nothing older shows through the re-defined
arrays. Everything else pending goes into the next sidecar, with the sealed blocks.
"""

from __future__ import annotations

from . import format as fmt
from .allocator import BlockAllocator
from .objects import ArrayFileStorage
from .records import PendingArray, Records, pending_table
from .sidecars import write_layer

__all__ = ["flush"]


def flush(
    records: Records,
    alloc: BlockAllocator | None,
    backend: ArrayFileStorage,
    hint: str,
    codec: str | None,
) -> dict[str, PendingArray]:
    """Commit ``records.pending`` (whose chunks ``alloc`` placed) to new sidecars; the
    changes flushed. On a failure, what was not written stays pending."""
    pending = records.pending
    blocks = alloc.finish() if alloc is not None else []
    recreated = [p for p in pending.values() if p.recreated]
    if recreated:
        tomb = [
            (p.tomb_meta, True, fmt.ChunkTable.empty(len(p.tomb_meta.shape))) for p in recreated
        ]
        records.layers.append(
            write_layer(backend, records.key, hint, records.layers, tomb, [], codec, base=False)
        )
        for p in recreated:
            p.recreated = False
    entries = [(p.meta, p.deleted, pending_table(p)) for p in pending.values()]
    layer = write_layer(
        backend, records.key, hint, records.layers, entries, blocks, codec, base=False
    )
    records.layers.append(layer)
    for p in pending.values():
        if not p.deleted:
            for key, (_, _, _, _, stats) in p.chunks.items():
                layer.stats_cache[(p.meta.name, key)] = stats
    records.pending = {}
    return pending
