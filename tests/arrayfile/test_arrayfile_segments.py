"""Compressed blocks of independently decodable segments and the segment table beside them.

Every block dafzarr writes must stay one valid LZ4 block (or zstd stream) for any other reader
(checked with the reference decoders; LZ4's enforces the format's end-of-block rules), and the
segment table
must only ever speed reads up: a missing, damaged or mismatched table falls back to decoding
the whole block.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import zlib
from pathlib import Path
from typing import Any

import lz4.block
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import Zstd

from dafzarr import ArrayFile, DeltaCache, FileConfig
from dafzarr._core.arrayfile import format as fmt
from dafzarr._core.arrayfile import segments as seg
from dafzarr._lz4seg import lz4_runs

# pieces of data LZ4 treats differently: incompressible, runs, text, float walks, tiny
_PIECE = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda n: bytes(n), st.integers(0, 100_000)),
    st.builds(
        lambda n, s: (s * (n // max(len(s), 1) + 1))[:n],
        st.integers(0, 70_000),
        st.binary(min_size=1, max_size=40),
    ),
    st.builds(
        lambda n, seed: (
            np.cumsum(np.random.default_rng(seed).standard_normal(n)).round(3).tobytes()
        ),
        st.integers(0, 20_000),
        st.integers(0, 2**32 - 1),
    ),
    st.builds(os.urandom, st.integers(0, 80_000)),
)


def _bounds(pieces: list[bytes]) -> list[int]:
    bounds = [0]
    for p in pieces:
        bounds.append(bounds[-1] + len(p))
    return bounds


def _check_spliced(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    bounds = _bounds(pieces)
    stored, table = seg.compress(raw, bounds)
    # one valid LZ4 block with the crate's size prefix, for every decoder
    assert int.from_bytes(stored[:4], "little") == len(raw)
    assert lz4.block.decompress(stored[4:], uncompressed_size=len(raw)) == raw
    _check_table(pieces, bounds, raw, stored, table, "lz4")
    if not raw:
        return  # no empty block is ever written
    zstored, ztable = seg.compress_zstd(raw, bounds, 3)
    whole = bytearray(len(raw))
    Zstd().decode(zstored, out=whole)
    assert whole == raw
    _check_table(pieces, bounds, raw, zstored, ztable, "zstd")


def _check_table(
    pieces: list[bytes], bounds: list[int], raw: bytes, stored: bytes, table: Any, codec: str
) -> None:
    if table is None:
        assert sum(map(bool, pieces)) <= 1
        return
    e = table.astype(np.int64)
    csize = len(stored)
    assert seg._valid(e, csize, len(raw), codec)
    starts = [lo for lo, hi in itertools.pairwise(bounds) if hi > lo]
    assert e[:, 0].tolist() == starts
    for i, lo in enumerate(starts):
        _, out_lo, out_hi, in_lo, in_hi = seg.segment_span(e, lo, len(raw), csize)
        assert out_lo == lo
        got = seg.decode_segment(e, i, stored[in_lo:in_hi], len(raw), csize, codec)
        assert bytes(got) == raw[out_lo:out_hi]


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, min_size=1, max_size=8))
def test_spliced_block_is_valid_lz4_and_segments_decode_alone(pieces: list[bytes]) -> None:
    _check_spliced(pieces)


@pytest.mark.parametrize(
    "pieces",
    [
        [b"a", b"b"],  # literal-only segments merge into one run
        [bytes(100_000), os.urandom(5), bytes(100_000)],
        [os.urandom(70_000), os.urandom(70_000), b"x" * 70_000],
        [b"hello world " * 9000, b"", b"hello world " * 9000],
        [os.urandom(13), b"y" * 100_000],  # a segment under LZ4's 13-byte minimum match input
    ],
)
def test_spliced_block_edge_cases(pieces: list[bytes]) -> None:
    _check_spliced(pieces)


def test_lz4_runs_rejects_malformed_blocks() -> None:
    good = lz4.block.compress(b"hello world " * 100, store_size=False)
    assert lz4_runs(good)[3] > 0
    for bad in (b"", b"\xf0", b"\xf0\xff\xff", b"\x10", b"\x14a\x00\x00\x00", good[:-3] + b"\x0f"):
        with pytest.raises(ValueError, match="LZ4"):
            lz4_runs(bad)


def _walk(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.standard_normal(shape), axis=-1).round(3)


def _write(
    path: Path, arrays: dict[str, tuple[np.ndarray, tuple[int, ...]]], codec: str, **config: Any
) -> None:
    with ArrayFile.create(path, config=FileConfig(codec=codec, **config)) as f:
        for name, (x, chunks) in arrays.items():
            f.define_array(
                name, x.dtype, [f"d{i}" for i in range(x.ndim)], x.shape, chunk_shape=chunks
            )
            f.write_array(name, [0] * x.ndim, x)


def _data_object(path: Path) -> Path:
    """The object of a file set that holds the blocks (the first sidecar, after one flush)."""
    return max(
        (p for p in path.parent.iterdir() if p.name.endswith(".af")), key=lambda p: p.stat().st_size
    )


def _crate_view(obj: Path) -> dict[int, bytes]:
    """Every block of one object decoded the way the crate does: whole, by footer offset."""
    data = obj.read_bytes()
    n = fmt.split_trailer(data[-64 << 10 :], fmt.FOOTER_MAGIC, len(data))
    footer = fmt.decode_footer(data[len(data) - 12 - n : len(data) - 12])
    out = {}
    for b in footer["blocks"]:
        stored = data[b["file_offset"] : b["file_offset"] + b["compressed_size"]]
        usize = b["uncompressed_size"]
        if b["codec"] == ("Named", "zstd"):  # zstd::bulk::decompress reads every frame
            whole = bytearray(usize)
            Zstd().decode(stored, out=whole)
            out[b["id"]] = bytes(whole)
            continue
        assert b["codec"] == ("Named", "lz4")
        assert int.from_bytes(stored[:4], "little") == usize
        out[b["id"]] = lz4.block.decompress(stored[4:], uncompressed_size=usize)
    return out


ARRAYS = {
    "big": (_walk((256, 1024)), (64, 256)),  # 128 KiB chunks: one segment each
    "small": (_walk((64, 1000), 1), (8, 100)),  # 6.4 KiB chunks: ten per segment
    "edge": (_walk((33, 77), 2), (10, 20)),  # clipped edge chunks
}


@pytest.fixture(params=["lz4", "zstd"])
def seg_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "seg.af"
    _write(path, ARRAYS, request.param, block_target_size=1 << 20)
    return path, request.param


def test_chunk_reads_use_segments_and_match(seg_file: tuple[Path, str]) -> None:
    path, codec = seg_file
    with ArrayFile.open(path, config=FileConfig(codec=codec)) as f:
        layer = f._records.layers[-1]
        tables = f._reader.segment_tables(layer)
        assert len(tables) == len(layer.blocks) > 1
        rng = np.random.default_rng(3)
        for name, (x, chunks) in ARRAYS.items():
            grid = [-(-s // c) for s, c in zip(x.shape, chunks, strict=True)]
            for _ in range(20):
                coord = [int(rng.integers(0, g)) for g in grid]
                start = [c * k for c, k in zip(coord, chunks, strict=True)]
                size = [min(k, s - a) for k, s, a in zip(chunks, x.shape, start, strict=True)]
                got = f.read_array(name, start, size)
                np.testing.assert_array_equal(
                    got, x[tuple(slice(a, a + k) for a, k in zip(start, size, strict=True))]
                )
        # no whole block was decoded: only segments are in the cache
        assert all(len(k) == 6 for k in f._cache.blocks._data)
        for name, (x, _) in ARRAYS.items():
            np.testing.assert_array_equal(f.read_array(name), x)


def test_other_readers_see_plain_blocks(seg_file: tuple[Path, str]) -> None:
    """Blocks decode whole, by footer offset, to exactly the chunks the footer addresses."""
    path, codec = seg_file
    with ArrayFile.open(path, config=FileConfig(codec=codec)) as f:
        layer = f._records.layers[-1]
        blocks = _crate_view(Path(layer.key))
        for name, (x, chunks) in ARRAYS.items():
            la = layer.arrays[name]
            for coord, (bid, off, size) in zip(la.table.coords, la.table.addrs, strict=True):
                start = [int(c) * k for c, k in zip(coord, chunks, strict=True)]
                want = x[tuple(slice(a, a + k) for a, k in zip(start, chunks, strict=True))]
                assert blocks[int(bid)][off : off + size] == np.ascontiguousarray(want).tobytes()


def _without_table(obj: Path) -> None:
    """Cut the segment table out of an object, as a writer without one would have made it."""
    data = obj.read_bytes()
    n = fmt.split_trailer(data[-64 << 10 :], fmt.FOOTER_MAGIC, len(data))
    footer = fmt.decode_footer(data[len(data) - 12 - n : len(data) - 12])
    end = max(b["file_offset"] + b["compressed_size"] for b in footer["blocks"])
    gap = data[end : len(data) - 12 - n]
    assert gap.startswith(seg.MAGIC) and gap.endswith(seg.TRAILER_MAGIC)
    obj.write_bytes(data[:end] + data[len(data) - 12 - n :])


@pytest.mark.parametrize("damage", ["removed", "flipped", "mismatched"])
def test_unusable_table_falls_back_to_whole_blocks(seg_file: tuple[Path, str], damage: str) -> None:
    path, codec = seg_file
    obj = _data_object(path)
    if damage == "removed":
        _without_table(obj)
    else:
        data = bytearray(obj.read_bytes())
        pos = data.rfind(seg.MAGIC)
        if damage == "flipped":
            data[pos + 40] ^= 0x40  # inside the first block's entry: the CRC no longer holds
        else:
            # a table with a valid CRC whose first block size does not match the footer
            end = data.rfind(seg.TRAILER_MAGIC) + 4
            table = bytes(data[pos:end])
            nblocks = int.from_bytes(table[8:12], "little")
            heads = bytearray(table[16 : 16 + 24 * nblocks])
            heads[8] ^= 1
            body = table[8:16] + bytes(heads) + table[16 + 24 * nblocks : len(table) - 12]
            new = seg.MAGIC + body
            new += (
                zlib.crc32(new).to_bytes(4, "little")
                + len(table).to_bytes(4, "little")
                + seg.TRAILER_MAGIC
            )
            data[pos:end] = new
        obj.write_bytes(bytes(data))
    with ArrayFile.open(path, config=FileConfig(codec=codec)) as f:
        layer = f._records.layers[-1]
        tables = f._reader.segment_tables(layer)
        assert (0 not in tables) if damage == "mismatched" else tables == {}
        for name, (x, _) in ARRAYS.items():
            np.testing.assert_array_equal(f.read_array(name), x)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_segments_survive_sidecars_and_compact(tmp_path: Path, codec: str) -> None:
    path = tmp_path / "c.af"
    x = _walk((128, 2048), 5)
    cache = DeltaCache()
    with ArrayFile.create(path, config=FileConfig(codec=codec, cache=cache)) as f:
        f.define_array("x", x.dtype, ["a", "b"], x.shape, chunk_shape=(32, 512))
        f.write_array("x", [0, 0], x)
        f.flush()
        x[40:50, 100:900] = -1.0
        f.write_array("x", [40, 100], x[40:50, 100:900])
        f.flush()
        assert f.num_layers == 3
        assert all(f._reader.segment_tables(layer) for layer in f._records.layers[1:])
        f.compact()
        assert f.num_layers == 1 and f._reader.segment_tables(f._records.layers[0])
    with ArrayFile.open(path, config=FileConfig(codec=codec)) as f:
        np.testing.assert_array_equal(f.read_array("x", [32, 512], [32, 512]), x[32:64, 512:1024])
        np.testing.assert_array_equal(f.read_array("x"), x)
    assert len(_crate_view(path)) >= 1


def test_table_outside_the_suffix_read_costs_one_range_read(tmp_path: Path) -> None:
    """A footer larger than the suffix read pushes the table out of it: read on first use."""
    path = tmp_path / "many.af"
    x = _walk((64, 4096), 7)
    with ArrayFile.create(path, config=FileConfig(codec="lz4")) as f:
        for k in range(400):  # 400 array entries: a footer of more than 64 KiB
            f.define_array(f"a{k}", "f8", ["n"], (16,))
            f.write_array(f"a{k}", [0], np.arange(16.0) + k)
        f.define_array("x", x.dtype, ["a", "b"], x.shape, chunk_shape=(16, 1024))
        f.write_array("x", [0, 0], x)
    with ArrayFile.open(path, config=FileConfig(codec="lz4")) as f:
        layer = f._records.layers[-1]
        assert layer.segments is None  # not in the suffix read
        np.testing.assert_array_equal(
            f.read_array("x", [16, 1024], [16, 1024]), x[16:32, 1024:2048]
        )
        assert layer.segments
        np.testing.assert_array_equal(f.read_array("a399"), np.arange(16.0) + 399)


@pytest.mark.skipif(shutil.which("zstd") is None, reason="the zstd command-line tool is missing")
def test_zstd_tool_reads_segmented_blocks(tmp_path: Path) -> None:
    """The reference zstd decoder reads a block of several frames as the block's bytes."""
    path = tmp_path / "z.af"
    _write(path, ARRAYS, "zstd", block_target_size=1 << 20)
    obj = _data_object(path)
    blocks = _crate_view(obj)
    data = obj.read_bytes()
    n = fmt.split_trailer(data[-64 << 10 :], fmt.FOOTER_MAGIC, len(data))
    footer = fmt.decode_footer(data[len(data) - 12 - n : len(data) - 12])
    multi = 0
    for b in footer["blocks"]:
        stored = data[b["file_offset"] : b["file_offset"] + b["compressed_size"]]
        multi += stored.count(b"\x28\xb5\x2f\xfd") > 1  # zstd frame magic
        out = subprocess.run(
            ["zstd", "-d", "-c", "-q"], input=stored, capture_output=True, check=True
        ).stdout
        assert out == blocks[b["id"]]
    assert multi  # at least one block really is several frames
