"""The protocol steps of ArrayFile, each called on its own (no ArrayFile handle).

Block placement (:mod:`dafzarr._core.arrayfile.allocator`), footers to layers and back
(:mod:`._footer`), sidecar naming and numbering (:mod:`._sidecars`), resolution of names and
chunks through layers and pending changes (:mod:`._records`), statistics (:mod:`._stats`)
flush (:mod:`._flush`) and compaction (:mod:`._compact`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dafzarr._core.arrayfile import format as fmt
from dafzarr._core.arrayfile.allocator import BlockAllocator
from dafzarr._core.arrayfile.chunk_reader import ChunkReader
from dafzarr._core.arrayfile.compact import compact
from dafzarr._core.arrayfile.fileconfig import FileConfig
from dafzarr._core.arrayfile.flush import flush
from dafzarr._core.arrayfile.footer import (
    AttrDict,
    build_footer,
    check_stats_entries,
    layer_from_footer,
)
from dafzarr._core.arrayfile.lru import DeltaCache
from dafzarr._core.arrayfile.objects import FileRange, MemoryStorage
from dafzarr._core.arrayfile.records import Layer, Records, new_meta
from dafzarr._core.arrayfile.sidecars import discover, load_layer, sidecar_number, write_layer
from dafzarr._core.arrayfile.stats import updated_stats
from dafzarr._core.arrayfile.types import python_to_attribute
from dafzarr.errors import (
    ArrayExistsError,
    CorruptArrayFileError,
    CorruptFooterError,
    DafzarrError,
)

KEY = "memory.af"


def _empty_layer() -> Layer:
    return layer_from_footer(KEY, 0, "v0", fmt.empty_footer())


# --- Block placement -------------------------------------------------------------------


def test_allocator_closes_a_block_once_it_reaches_the_target() -> None:
    alloc = BlockAllocator(FileConfig(codec=None, block_target_size=10))
    chunks = [bytes([i]) * n for i, n in enumerate([4, 6, 4, 8, 1])]
    places = [alloc.append(c) for c in chunks]
    # 4 + 6 bytes reach the target exactly: block 0 closes; 4 + 8 pass it: block 1 closes
    assert places == [(0, 0, 4), (0, 4, 6), (1, 0, 4), (1, 4, 8), (2, 0, 1)]
    blocks = alloc.finish()
    assert [(len(stored), usize, table) for stored, usize, table in blocks] == [
        (10, 10, None),
        (12, 12, None),
        (1, 1, None),
    ]
    cache = DeltaCache(1 << 20, 1 << 20)
    assert [alloc.chunk(cache, *p) for p in places] == chunks


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_allocator_compresses_sealed_blocks_in_segments(codec: str) -> None:
    alloc = BlockAllocator(FileConfig(codec=codec, block_target_size=1 << 20))
    chunks = [np.arange(i, i + 20_000, dtype="<i8").tobytes() for i in range(4)]
    places = [alloc.append(c) for c in chunks]
    assert [p[0] for p in places] == [0, 0, 0, 0]
    ((stored, usize, table),) = alloc.finish()
    assert usize == sum(map(len, chunks)) and len(stored) < usize
    assert table is not None and len(table) >= 2  # chunks split into independent segments
    cache = DeltaCache(1 << 20, 1 << 20)
    assert [alloc.chunk(cache, *p) for p in places] == chunks


def test_allocator_spills_sealed_blocks_past_its_memory_budget() -> None:
    alloc = BlockAllocator(FileConfig(codec=None, block_target_size=100))
    alloc.spill_bytes = 150
    try:
        places = [alloc.append(bytes([i]) * 100) for i in range(3)]
        stored = [b[0] for b in alloc.finish()]
        assert [isinstance(s, FileRange) for s in stored] == [False, True, True]
        cache = DeltaCache(1 << 20, 1 << 20)
        assert alloc.chunk(cache, *places[2]) == bytes([2]) * 100
    finally:
        alloc.close()


# --- Footers ---------------------------------------------------------------------------


def _meta(name: str = "x", shape: tuple[int, ...] = (6, 4), chunk: tuple[int, ...] = (3, 4)) -> Any:
    return new_meta(KEY, name, "i4", ["r", "c"], shape, chunk, None)


def _table(rows: list[tuple[tuple[int, ...], tuple[int, int, int]]]) -> fmt.ChunkTable:
    coords = np.array([r[0] for r in rows], np.uint32).reshape(len(rows), -1)
    addrs = np.array([r[1] for r in rows], np.uint32).reshape(len(rows), 3)
    return fmt.ChunkTable(coords, addrs)


def test_footer_round_trip_gives_back_the_layer() -> None:
    meta = _meta()
    meta.attrs["units"] = python_to_attribute("K")
    table = _table([((0, 0), (0, 0, 48)), ((1, 0), (0, 48, 48))])
    blocks = [(b"\0" * 96, 96, None)]
    footer, segment_table, segments = build_footer(
        [(meta, False, table)], blocks, None, fmt.empty_footer(), "memory.af"
    )
    assert segment_table == b"" and segments == {}
    data = b"\0" * 96 + fmt.encode_footer(footer)
    n = fmt.split_trailer(data, fmt.FOOTER_MAGIC, len(data))
    decoded = fmt.decode_footer(data[len(data) - 12 - n : -12])
    layer = layer_from_footer("m.1.af", 1, "v1", decoded, data_end=len(data) - 12 - n)
    assert layer.blocks == {0: (0, 96, 96, None)}
    la = layer.arrays["x"]
    assert not la.deleted and la.meta == meta
    np.testing.assert_array_equal(la.table.coords, table.coords)
    np.testing.assert_array_equal(la.table.addrs, table.addrs)
    assert decoded["base_file_hint"] == "memory.af"


def test_attribute_dictionaries_keep_the_previous_layers_indices() -> None:
    attrs = AttrDict(["a", "b"], [python_to_attribute(1), python_to_attribute("s")])
    width, pairs = attrs.pairs({"c": python_to_attribute("s"), "a": python_to_attribute(2)})
    assert width == "U16"
    assert pairs == [{"k": 0, "v": 2}, {"k": 2, "v": 1}]
    assert attrs.keys == ["a", "b", "c"] and len(attrs.values) == 3


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("block_outside", "block 0 lies outside the data region"),
        ("chunk_past_block", "a chunk runs past its block"),
        ("chunk_outside_array", "a chunk lies outside the array"),
        ("missing_block", "a chunk names a missing block"),
    ],
)
def test_footer_checks_name_the_object_and_the_fault(damage: str, message: str) -> None:
    addr = {"chunk_past_block": (0, 90, 48), "missing_block": (7, 0, 48)}.get(damage, (0, 0, 48))
    coord = (2, 0) if damage == "chunk_outside_array" else (0, 0)
    footer, _, _ = build_footer(
        [(_meta(), False, _table([(coord, addr)]))],
        [(b"\0" * 96, 96, None)],
        None,
        fmt.empty_footer(),
        "",
    )
    data_end = 50 if damage == "block_outside" else 96
    with pytest.raises(CorruptArrayFileError, match=f"^m.af: .*{message}"):
        layer_from_footer("m.af", 0, "v", footer, data_end=data_end)


def test_statistics_entries_must_name_each_array_once() -> None:
    entry = {"name": "x", "min": None, "max": None, "null_count": 1, "row_count": 2}
    check_stats_entries([entry])
    with pytest.raises(CorruptFooterError, match="twice"):
        check_stats_entries([entry, dict(entry)])
    with pytest.raises(CorruptFooterError, match="3 nulls among 2"):
        check_stats_entries([dict(entry, null_count=3)])
    assert issubclass(CorruptFooterError, DafzarrError)


# --- Sidecars --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("s.1.af", 1),
        ("s.42.af", 42),
        ("s.4294967295.af", 4294967295),
        ("s.0.af", None),
        ("s.4294967296.af", None),
        ("s.af", None),
        ("s.1a.af", None),
        ("t.1.af", None),
        ("s.\u0661.af", None),
        ("s.1.stats", None),
    ],
)
def test_sidecar_names_follow_the_crates_rule(name: str, number: int | None) -> None:
    assert sidecar_number("s", name) == number


def test_a_new_sidecar_never_replaces_another_writers() -> None:
    backend = MemoryStorage()
    backend.put(KEY, [fmt.encode_footer(fmt.empty_footer())], create_only=True)
    backend.put("memory.1.af", [b"another writer's"], create_only=True)
    layers = [load_layer(backend, KEY, 0)]
    layer = write_layer(
        backend, KEY, KEY, layers, [(_meta(), False, fmt.ChunkTable.empty(2))], [], None, base=False
    )
    assert (layer.key, layer.number) == ("memory.2.af", 2)
    assert bytes(backend.read("memory.1.af", backend._get("memory.1.af").version, 0, 16)) == (
        b"another writer's"
    )
    assert discover(backend, KEY) == [(1, "memory.1.af"), (2, "memory.2.af")]
    reread = load_layer(backend, "memory.2.af", 2)
    assert reread.footer["overlay_index"] == 2 and reread.footer["base_file_hint"] == KEY


# --- Records ---------------------------------------------------------------------------


def test_a_tombstone_stops_the_fall_through_to_older_layers() -> None:
    records = Records(KEY)
    base = _empty_layer()
    meta = _meta()
    footer, _, _ = build_footer(
        [(meta, False, _table([((0, 0), (0, 0, 48))]))],
        [(b"\0" * 48, 48, None)],
        None,
        base.footer,
        "",
    )
    records.layers = [base, layer_from_footer(KEY, 1, "v1", footer)]
    assert records.names() == ["x"]
    assert records.locate(meta, 0)[2] == 0 and records.locate(meta, 1) is None
    with pytest.raises(ArrayExistsError):
        records.define(_meta())
    records.delete("x")
    assert records.names() == [] and records.locate(meta, 0) is None
    records.define(_meta())  # defined again before one flush: the tombstone goes first
    p = records.pending["x"]
    assert p.recreated and p.fresh and p.tomb_meta == meta
    assert records.locate(meta, 0) is None and records.visible_chunks(meta) == {}
    # the same after the flush: the tombstone layer, then the new definition above it
    tomb, _, _ = build_footer([(meta, True, fmt.ChunkTable.empty(2))], [], None, footer, KEY)
    records.layers.append(layer_from_footer(KEY, 2, "v2", tomb))
    records.pending = {}
    assert records.names() == [] and records.locate(meta, 0) is None
    assert list(records.reachable(meta)) == []


def test_a_layer_with_another_layout_hides_the_older_chunks() -> None:
    records = Records(KEY)
    old = _meta()
    footer, _, _ = build_footer(
        [(old, False, _table([((0, 0), (0, 0, 48))]))],
        [(b"\0" * 48, 48, None)],
        None,
        fmt.empty_footer(),
        "",
    )
    new = _meta(chunk=(6, 4))
    footer2, _, _ = build_footer([(new, False, fmt.ChunkTable.empty(2))], [], None, footer, KEY)
    records.layers = [
        layer_from_footer(KEY, 0, "v", footer),
        layer_from_footer(KEY, 1, "v1", footer2),
    ]
    assert records.meta("x").chunk_shape == (6, 4)
    assert records.locate(new, 0) is None
    assert [la.meta for _, la in records.reachable(old)] == []


# --- Statistics and compaction ---------------------------------------------------------


def _memory_set(codec: str | None) -> tuple[MemoryStorage, Records, ChunkReader]:
    """A base and two sidecars holding array x (rows 0-2, then rows 3-5) in memory."""
    backend = MemoryStorage()
    backend.put(KEY, [fmt.encode_footer(fmt.empty_footer())], create_only=True)
    records = Records(KEY)
    records.layers = [load_layer(backend, KEY, 0)]
    config = FileConfig(codec=codec)
    meta = _meta()
    for row in (0, 1):
        alloc = BlockAllocator(config)
        values = np.arange(12, dtype="<i4") + 12 * row
        bid, off, size = alloc.append(values.tobytes())
        table = _table([((row, 0), (bid, off, size))])
        records.layers.append(
            write_layer(
                backend,
                KEY,
                KEY,
                records.layers,
                [(meta, False, table)],
                alloc.finish(),
                codec,
                base=False,
            )
        )
    return backend, records, ChunkReader(backend, DeltaCache(1 << 20, 1 << 20), KEY)


def test_statistics_change_only_for_the_arrays_a_flush_touched() -> None:
    _, records, reader = _memory_set(None)
    entries = [{"name": "y", "min": None, "max": None, "null_count": 4, "row_count": 4}]
    assert updated_stats(entries, {}, records, reader) is None
    flushed = {"x": records.for_write("x")}
    flushed["x"].chunks[1] = ((1, 0), 0, 0, 48, None)  # the chunk the last sidecar holds
    records.pending = {}  # committed: statistics come from the layers' chunks
    new = updated_stats(entries, flushed, records, reader)
    assert new is not None and [e["name"] for e in new] == ["y", "x"]
    x = new[1]
    assert (x["min"], x["max"], x["null_count"], x["row_count"]) == (("Int", 0), ("Int", 23), 0, 24)


@pytest.mark.parametrize("codec", [None, "lz4"])
def test_compaction_leaves_one_base_that_reads_the_same(codec: str | None) -> None:
    backend, records, reader = _memory_set(codec)
    stats = compact(records, reader, backend, FileConfig(codec=codec), None)
    assert [layer.key for layer in records.layers] == [KEY]
    assert discover(backend, KEY) == []
    meta = records.meta("x")
    got = [
        np.frombuffer(bytes(reader.raw_chunk(records.locate(meta, k), None)), "<i4") for k in (0, 1)
    ]
    np.testing.assert_array_equal(np.concatenate(got), np.arange(24))
    assert stats == [
        {"name": "x", "min": ("Int", 0), "max": ("Int", 23), "null_count": 0, "row_count": 24}
    ]
    table = records.layers[0].arrays["x"].table  # chunks in key order, one block
    assert table.coords.tolist() == [[0, 0], [1, 0]]
    assert table.addrs.tolist() == [[0, 0, 48], [0, 48, 48]]
    reread = load_layer(backend, KEY, 0)
    np.testing.assert_array_equal(
        reread.arrays["x"].table.addrs, records.layers[0].arrays["x"].table.addrs
    )


def test_a_flush_writes_the_tombstone_of_a_redefined_array_first() -> None:
    backend, records, reader = _memory_set("lz4")
    records.delete("x")
    records.define(_meta(chunk=(6, 4)))
    alloc = BlockAllocator(FileConfig(codec="lz4"))
    stats = (("Int", 5), ("Int", 5), 24)
    records.pending["x"].chunks[0] = ((0, 0), *alloc.append(np.full(24, 5, "<i4").tobytes()), stats)
    flushed = flush(records, alloc, backend, KEY, "lz4")
    assert list(flushed) == ["x"] and records.pending == {}
    tomb, new = records.layers[-2:]
    assert (tomb.key, new.key) == ("memory.3.af", "memory.4.af")
    assert tomb.arrays["x"].deleted and tomb.arrays["x"].meta.chunk_shape == (3, 4)
    assert not new.arrays["x"].deleted and new.arrays["x"].meta.chunk_shape == (6, 4)
    assert new.stats_cache == {("x", 0): stats}
    loc = records.locate(records.meta("x"), 0)
    assert loc[0] is new
    np.testing.assert_array_equal(
        reader.chunk_values(records.meta("x"), (0, 0), loc, None), np.full((6, 4), 5)
    )
    assert discover(backend, KEY)[-2:] == [(3, "memory.3.af"), (4, "memory.4.af")]
