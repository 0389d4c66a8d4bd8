"""Per-array statistics (the crate's rules): computed from chunk statistics, merged after a
flush, and turned into :class:`~dafzarr.arrayfile.ArrayStats` for users (what
``ArrayFile.array_stats`` returns).

A chunk's statistics are taken when it is written; a committed chunk's are computed from its
values on first use and kept on its layer.
"""

from __future__ import annotations

from typing import Any

from .chunk_reader import ChunkReader
from .records import ArrayStats, Layer, Meta, PendingArray, Records
from .types import chunk_stats, stat_key, stat_to_python

__all__ = ["compute_stats", "updated_stats", "user_stats"]


def _loc_stats(reader: ChunkReader, meta: Meta, key: int, loc: Any) -> tuple[Any, Any, int]:
    if loc[0] == "p":
        return loc[1][4]  # type: ignore[no-any-return]
    layer: Layer = loc[0]
    sk = (meta.name, key)
    st = layer.stats_cache.get(sk)
    if st is None:
        coord = tuple(int(c) for c in loc[1].table.coords[loc[2]])
        values = reader.chunk_values(meta, coord, loc, None)
        st = layer.stats_cache[sk] = chunk_stats(meta.require_info(), meta.fill, values)
    return st


def compute_stats(reader: ChunkReader, meta: Meta, chunks: dict[int, Any]) -> dict[str, Any]:
    """The statistics entry of ``meta``'s array, stored as ``chunks`` (key -> location)."""
    info = meta.require_info()
    lo = hi = None
    count = 0
    for key, loc in chunks.items():
        cmin, cmax, n = _loc_stats(reader, meta, key, loc)
        count += n
        if cmin is not None and (lo is None or stat_key(info, cmin) < stat_key(info, lo)):
            lo = cmin
        if cmax is not None and (hi is None or stat_key(info, cmax) > stat_key(info, hi)):
            hi = cmax
    rows = 1
    for s in meta.shape:
        rows *= s
    return {"name": meta.name, "min": lo, "max": hi, "null_count": rows - count, "row_count": rows}


def updated_stats(
    entries: list[dict[str, Any]],
    flushed: dict[str, PendingArray],
    records: Records,
    reader: ChunkReader,
) -> list[dict[str, Any]] | None:
    """The statistics after ``flushed`` was committed to ``records``, or None if unchanged."""
    table = {e["name"]: e for e in entries}
    changed = False
    for name, p in flushed.items():
        if p.chunks and not p.deleted and p.meta.info is not None:
            table[name] = compute_stats(reader, p.meta, records.visible_chunks(p.meta))
            changed = True
        elif p.deleted or p.fresh:  # gone, or defined anew without data yet
            changed |= table.pop(name, None) is not None
    return list(table.values()) if changed else None


def user_stats(
    meta: Meta, entries: list[dict[str, Any]] | dict[str, dict[str, Any]]
) -> ArrayStats | None:
    """The user's view of ``meta``'s statistics entry, or None if there is none.
    ``entries``: the statistics entries, or those entries by array name."""
    if isinstance(entries, dict):
        found = entries.get(meta.name)
    else:
        found = next((e for e in entries if e["name"] == meta.name), None)
    if found is None:
        return None
    return ArrayStats(
        stat_to_python(meta.info, found["min"]),
        stat_to_python(meta.info, found["max"]),
        int(found["null_count"]),
        int(found["row_count"]),
    )
