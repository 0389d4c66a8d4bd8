"""Fast paths of ArrayFile: reads straight from a local file into the result, footers whose
chunk tables are decoded and checked in one pass per layer, and the quick chunk statistics.

Each test compares a fast path with what the general path (or the definition) gives, on
layouts that take the fast path and on layouts that must not.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from dafzarr import ArrayFile, DeltaCache, FileConfig
from dafzarr._core.arrayfile import format as fmt
from dafzarr._core.arrayfile import rkyv as r
from dafzarr._core.arrayfile.types import _total_order, chunk_stats, dtype_info
from dafzarr.errors import CorruptArrayFileError, CorruptFooterError

RAW = FileConfig(codec=None, block_target_size=4096)


def _layouts() -> dict[str, tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(7)
    return {
        "1d": (rng.standard_normal(1000), [128]),
        "rows": (rng.integers(0, 1 << 30, (37, 11)).astype("i4"), [5, 11]),  # whole rows
        "tiles": (rng.standard_normal((37, 11)), [5, 4]),  # chunks split rows
        "3d": (rng.integers(0, 255, (6, 5, 4)).astype("u1"), [4, 5, 4]),
        "time": ((np.arange(50) * 7).astype("M8[ns]"), [16]),
        "one": (np.arange(6.0).reshape(2, 3), [2, 3]),
        "scalar": (np.array(3.5), []),
    }


@pytest.mark.parametrize("name", list(_layouts()))
def test_uncompressed_reads_match_the_data_and_bypass_the_cache(tmp_path: Path, name: str) -> None:
    x, chunks = _layouts()[name]
    cache = DeltaCache()
    cfg = FileConfig(codec=None, block_target_size=4096, cache=cache)
    with ArrayFile.create(tmp_path / "f.af", config=cfg) as f:
        f.define_array(
            "x", x.dtype, [f"d{i}" for i in range(x.ndim)], x.shape, chunk_shape=chunks or None
        )
        f.write_array("x", [0] * x.ndim, x)
    with ArrayFile.open(tmp_path / "f.af", config=cfg) as f:
        np.testing.assert_array_equal(f.read_array("x"), x)
        if x.ndim:
            start = [s // 3 for s in x.shape]
            shape = [s - a - 1 if s - a > 1 else 1 for s, a in zip(x.shape, start, strict=True)]
            region = tuple(slice(a, a + n) for a, n in zip(start, shape, strict=True))
            np.testing.assert_array_equal(f.read_array("x", start, shape), x[region])
        # the chunks went from the file into the results, not through the block cache
        assert len(cache.blocks) == 0


def test_whole_reads_on_one_handle_follow_writes_flushes_and_compaction(tmp_path: Path) -> None:
    """How a whole array is read from the file is worked out once per array and layer; each
    read still sees pending chunks, a newer layer, a compacted base and cached blocks."""
    x = np.arange(1000.0)
    cache = DeltaCache()
    cfg = FileConfig(codec=None, block_target_size=4096, cache=cache)
    with ArrayFile.create(tmp_path / "f.af", config=cfg) as f:
        f.define_array("x", x.dtype, ["t"], x.shape, chunk_shape=[128])
        f.write_array("x", [0], x)
    with ArrayFile.open(tmp_path / "f.af", config=cfg) as f:
        np.testing.assert_array_equal(f.read_array("x"), x)
        x += 1
        f.write_array("x", [0], x)  # every chunk pending, then in a new layer
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.flush()
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.write_array("x", [130], -np.ones(5))  # pending: part of one chunk
        x[130:135] = -1
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.flush()  # a sidecar with that chunk above the others
        np.testing.assert_array_equal(f.read_array("x"), x)
        x += 1
        f.write_array("x", [0], x)
        f.flush()
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.compact()
        np.testing.assert_array_equal(f.read_array("x"), x)
        f.array_stats("x")
        np.testing.assert_array_equal(f.read_array("x"), x)
    with ArrayFile.open(tmp_path / "f.af", config=cfg) as f:
        np.testing.assert_array_equal(f.read_array("x"), x)


def test_reads_mix_layers_pending_chunks_and_unwritten_chunks(tmp_path: Path) -> None:
    x = np.arange(100.0)
    with ArrayFile.create(tmp_path / "f.af", config=RAW) as f:
        f.define_array("x", "f8", ["t"], [130], chunk_shape=[10], fill_value=-1.0)
        f.write_array("x", [0], x)
    with ArrayFile.open(tmp_path / "f.af", config=RAW) as f:
        f.write_array("x", [20], np.full(10, 5.0))
        f.flush()  # a second layer holds chunk 2
        f.write_array("x", [40], np.full(10, 6.0))  # pending
        want = np.concatenate([x, np.full(30, -1.0)])
        want[20:30] = 5.0
        want[40:50] = 6.0
        np.testing.assert_array_equal(f.read_array("x"), want)
        np.testing.assert_array_equal(f.read_array("x", [15], [100]), want[15:115])
    with ArrayFile.open(tmp_path / "f.af", config=RAW) as f:
        np.testing.assert_array_equal(f.read_array("x"), want)


def test_a_file_truncated_under_an_open_handle_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "f.af"
    with ArrayFile.create(path, config=RAW) as f:
        f.define_array("x", "f8", ["t"], [2000], chunk_shape=[100])
        f.write_array("x", [0], np.arange(2000.0))
    with ArrayFile.open(path, config=RAW) as f:
        os.truncate(tmp_path / "f.1.af", 1000)
        with pytest.raises(CorruptArrayFileError, match=r"f\.1\.af: .*truncated"):
            f.read_array("x")
        with pytest.raises(CorruptArrayFileError, match=r"f\.1\.af: .*truncated"):
            f.read_array("x", [1500], [10])


def test_many_arrays_of_mixed_ranks_reopen_intact(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {}
    with ArrayFile.create(tmp_path / "f.af", config=FileConfig(codec=None)) as f:
        for i in range(60):
            shape = [[7], [3, 4], [2, 3, 2], []][i % 4]
            x = rng.integers(0, 1000, shape).astype("i8")
            chunk = [max(1, s // 2) for s in shape] or None
            f.define_array(
                f"a{i}", "i8", [f"d{k}" for k in range(len(shape))], shape, chunk_shape=chunk
            )
            if i % 5:
                f.write_array(f"a{i}", [0] * len(shape), x)
            else:
                x = np.zeros(shape, "i8")  # never written: no chunk table
            arrays[f"a{i}"] = x
    with ArrayFile.open(tmp_path / "f.af", config=FileConfig(codec=None)) as f:
        for name, x in arrays.items():
            np.testing.assert_array_equal(f.read_array(name), x)


def _two_table_footer() -> tuple[bytes, int]:
    """A footer with two chunk tables, and where the second table's entries start."""
    tables = []
    arrays = []
    for i in range(2):
        coords = np.array([[0], [1]], np.uint32)
        addrs = np.array([[0, 0, 8], [0, 8, 8]], np.uint32)
        tables.append(fmt.ChunkTable(coords, addrs))
        arrays.append(
            {
                "name": f"a{i}",
                "dtype": ("Float64",),
                "layout": {
                    "shape": [2],
                    "dimension_names": ["t"],
                    "storage": {"chunk_shape": [1], "chunks": tables[-1]},
                },
                "fill_value": None,
                "deleted": False,
                "attributes": ("U16", []),
            }
        )
    footer = fmt.empty_footer()
    footer["blocks"] = [
        {
            "id": 0,
            "file_offset": 0,
            "compressed_size": 16,
            "uncompressed_size": 16,
            "codec": ("None",),
        }
    ]
    footer["arrays"] = arrays
    payload = fmt.encode_footer(footer)[:-12]
    dec = r.Decoder(payload)
    r.decode_root_with(fmt.FOOTERS[4], dec)
    return payload, dec.later[-1][0]


def test_damaged_chunk_tables_are_refused_in_any_table() -> None:
    payload, second = _two_table_footer()
    back = fmt.decode_footer(payload)
    assert [a["layout"]["storage"]["chunks"].coords.tolist() for a in back["arrays"]] == [
        [[0], [1]],
        [[0], [1]],
    ]
    lengths = bytearray(payload)
    lengths[second + 32 + 8] = 2  # the second entry claims 2 coordinates
    with pytest.raises(CorruptFooterError, match="coordinates of different lengths"):
        fmt.decode_footer(bytes(lengths))
    outside = bytearray(payload)
    outside[second + 32 : second + 40] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(CorruptFooterError, match="outside the payload"):
        fmt.decode_footer(bytes(outside))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_float_statistics_follow_the_total_order(dtype: str) -> None:
    rng = np.random.default_rng(11)
    info = dtype_info(dtype)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], dtype)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        values = np.concatenate(
            [rng.choice(specials, n), rng.standard_normal(int(rng.integers(0, 4))).astype(dtype)]
        )
        rng.shuffle(values)
        keys = _total_order(values)
        lo, hi, count = chunk_stats(info, None, values)
        want_lo, want_hi = values[int(np.argmin(keys))], values[int(np.argmax(keys))]
        assert count == len(values)
        for got, want in ((lo[1], want_lo), (hi[1], want_hi)):
            assert np.float64(got).tobytes() == np.float64(want).tobytes(), (values, lo, hi)


def test_uncompressed_writes_go_to_the_file_not_to_memory(tmp_path: Path) -> None:
    x = np.arange(4 << 20, dtype="f4")  # 16 MiB
    tracemalloc.start()
    try:
        with ArrayFile.create(tmp_path / "f.af", config=FileConfig(codec=None)) as f:
            f.define_array("x", "f4", ["t"], x.shape, chunk_shape=[1 << 14])
            tracemalloc.reset_peak()
            f.write_array("x", [0], x)
            f.flush()
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # blocks are not held in memory until the flush
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.1.af", "f.af", "f.stats"]
    with ArrayFile.open(tmp_path / "f.af") as f:
        np.testing.assert_array_equal(f.read_array("x"), x)


@pytest.mark.parametrize("codec", [None, "lz4"])
def test_a_sidecar_number_taken_meanwhile_is_skipped(tmp_path: Path, codec: str | None) -> None:
    cfg = FileConfig(codec=codec, block_target_size=4096)
    with ArrayFile.create(tmp_path / "f.af", config=cfg):
        pass
    a = ArrayFile.open(tmp_path / "f.af", config=cfg)
    b = ArrayFile.open(tmp_path / "f.af", config=cfg)
    for f, name in ((a, "a"), (b, "b")):
        f.define_array(name, "i8", ["t"], [3000], chunk_shape=[100])
        f.write_array(name, [0], np.arange(3000) + len(name) * (name == "b"))
    a.flush()
    b.flush()  # its first choice, f.1.af, is a's: it writes f.2.af
    a.close()
    b.close()
    assert sorted(p.name for p in tmp_path.glob("f.*.af")) == ["f.1.af", "f.2.af"]
    with ArrayFile.open(tmp_path / "f.af", config=cfg) as f:
        np.testing.assert_array_equal(f.read_array("a"), np.arange(3000))
        np.testing.assert_array_equal(f.read_array("b"), np.arange(3000) + 1)
        f.compact()
    with ArrayFile.open(tmp_path / "f.af", config=cfg) as f:
        np.testing.assert_array_equal(f.read_array("b"), np.arange(3000) + 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.af", "f.stats"]


def test_without_unnamed_temporary_files_the_blocks_are_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dafzarr._core.arrayfile import allocator

    monkeypatch.setattr(allocator, "_TMPFILE", 0)
    x = np.arange(50_000.0)
    with ArrayFile.create(tmp_path / "f.af", config=RAW) as f:
        f.define_array("x", "f8", ["t"], x.shape, chunk_shape=[1000])
        f.write_array("x", [0], x)
        np.testing.assert_array_equal(f.read_array("x", [500], [2000]), x[500:2500])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.1.af", "f.af", "f.stats"]
    with ArrayFile.open(tmp_path / "f.af", config=RAW) as f:
        np.testing.assert_array_equal(f.read_array("x"), x)
