"""Compressed data decodes to exactly the size its container states, in bounded memory.

A ZIP entry (zstd, deflate, bzip2) or an ArrayFile block (zstd, LZ4) that claims a size its data
cannot produce is refused before that size is allocated; one that decodes short is refused
rather than padded with zeros.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numcodecs.zstd import Zstd

from dafzarr import CorruptArchiveError, DafzarrError, MmapZipStore
from dafzarr._core.arrayfile import format as fmt
from dafzarr._core.codecs import DEFLATE64_MAX_RATIO, DEFLATE_MAX_RATIO, decode, frames
from dafzarr.arrayfile import ArrayFile, CorruptArrayFileError, FileConfig
from dafzarr.errors import DafFormatError
from tests.helpers import zipbuild as zb
from tests.helpers.common import peak_allocation


def _frame(data: bytes) -> bytes:
    return bytes(Zstd(level=3).encode(data))


def decode_exact(data: bytes, size: int) -> memoryview:
    """zstd ``data`` decoded to exactly ``size`` bytes through the one bounded decode."""
    return decode("zstd", data, size, what="data")


# --- The zstd decoder -------------------------------------------------------------------


def test_multi_frame_data_decodes_exactly() -> None:
    a, b = b"a" * 1000, bytes(range(256)) * 40
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"xyz"
    data = _frame(a) + skippable + zb.zstd_rle_frame(7, 300_000) + _frame(b)
    assert len(frames(data)) == 3
    assert bytes(decode_exact(data, 1000 + 300_000 + len(b))) == a + b"\x07" * 300_000 + b


@pytest.mark.parametrize("delta", [-1, 1, 100])
def test_a_size_the_data_does_not_decode_to_is_refused(delta: int) -> None:
    data = _frame(b"a" * 1000) + zb.zstd_rle_frame(7, 5000)
    with pytest.raises(ValueError, match=r"decodes to|does not decode|decode to at most 6000"):
        decode_exact(data, 6000 + delta)


def test_a_size_above_what_the_blocks_hold_is_refused_before_allocating() -> None:
    data = zb.zstd_rle_frame(7, 5000)
    err, peak = peak_allocation(lambda: decode_exact(data, 1 << 30))
    assert isinstance(err, ValueError) and "at most 5000" in str(err)
    assert peak < 1 << 20


def test_a_large_claim_the_data_does_not_decode_to_is_refused_before_allocating() -> None:
    """Frames that state no size, whose blocks could hold the claim but decode 1 byte short:
    the claim is not allocated before decoding in pieces has shown the length."""
    data = zb.zstd_rle_frame(7, 4 << 20)
    err, peak = peak_allocation(lambda: decode_exact(data, (4 << 20) - 1))
    assert isinstance(err, ValueError), err
    assert peak < 1 << 20, f"refusing a {len(data)}-byte frame allocated {peak} bytes"


def test_a_frame_stating_more_than_its_blocks_hold_is_refused() -> None:
    frame = bytearray(_frame(b"a" * 1000))
    assert frame[4] >> 6 == 1  # a 2-byte content size (value - 256)
    struct.pack_into("<H", frame, 5, 60_000)
    with pytest.raises(ValueError, match="does not decode"):
        decode_exact(bytes(frame), 60_256)
    rle = bytearray(zb.zstd_rle_frame(7, 5000))  # give it a 4-byte content size of 6000
    rle[4] = 0x80
    rle[6:6] = struct.pack("<I", 6000)
    with pytest.raises(ValueError, match="states 6000 bytes but its blocks hold at most 5000"):
        decode_exact(bytes(rle), 6000)


# --- ZIP entries --------------------------------------------------------------------------


def test_zip_zstd_entry_claiming_a_huge_size_is_refused_before_allocating(tmp_path: Path) -> None:
    """A zstd entry whose frame states no size and whose directory claims 256 MiB: refused
    without allocating it (its blocks hold at most 1000 bytes)."""
    frame = zb.zstd_rle_frame(ord("z"), 1000)
    p = tmp_path / "claim.zip"
    p.write_bytes(zb.build([zb.Member("big", frame, 93, crc=0, usize=256 << 20)]).data)
    with MmapZipStore(p, max_decompressed_size=1 << 30) as store:
        err, peak = peak_allocation(lambda: store["big"])
    assert isinstance(err, CorruptArchiveError), err
    assert "big" in str(err) and "claim.zip" in str(err)
    assert peak < 16 << 20, f"refusing a 1 kB entry allocated {peak} bytes"


@pytest.mark.parametrize("method", [8, 12])
def test_zip_deflate_and_bzip2_claiming_a_huge_size_do_not_allocate_it(
    tmp_path: Path, method: int
) -> None:
    p = tmp_path / "claim.zip"
    p.write_bytes(
        zb.build([zb.Member.compressed("big", b"q" * 1000, method, usize=256 << 20)]).data
    )
    with MmapZipStore(p, max_decompressed_size=1 << 30) as store:
        err, peak = peak_allocation(lambda: store["big"])
    assert isinstance(err, CorruptArchiveError), err
    assert peak < 16 << 20, f"refusing a small entry allocated {peak} bytes"


_STREAM = bytes(4 << 20)  # 4 MiB of zeros: about 4 kB deflated, a few dozen bytes in bzip2


@pytest.mark.parametrize(
    ("method", "claim", "crc"),
    [
        pytest.param(m, len(_STREAM) + 100_000, zlib.crc32(_STREAM), id=f"claim-longer-{m}")
        for m in (8, 12)  # (zstd's headers state the exact size: refused before decoding)
    ]
    + [
        pytest.param(m, len(_STREAM) - 1, zlib.crc32(_STREAM), id=f"claim-shorter-{m}")
        for m in (8, 12, 93)
    ]
    + [
        pytest.param(m, len(_STREAM), zlib.crc32(_STREAM) ^ 1, id=f"wrong-crc-{m}")
        for m in (8, 12, 93)
    ],
)
def test_zip_entry_whose_stream_disagrees_with_a_large_claim_is_refused_in_bounded_memory(
    tmp_path: Path, method: int, claim: int, crc: int
) -> None:
    """A small entry whose stream decodes to 4 MiB, under a claim of about that size that is
    wrong by its length or its CRC-32: refused without holding the 4 MiB."""
    p = tmp_path / "claim.zip"
    member = zb.Member.compressed("big", _STREAM, method, usize=claim, crc=crc)
    if method == 93:  # a frame that states no size: only decoding tells
        member.data = zb.zstd_rle_frame(0, len(_STREAM))
    p.write_bytes(zb.build([member]).data)
    with MmapZipStore(p) as store:
        err, peak = peak_allocation(lambda: store["big"])
    assert isinstance(err, CorruptArchiveError), err
    assert "claim.zip" in str(err) and "'big'" in str(err)
    assert peak < 1 << 20, f"refusing a {len(member.data)}-byte entry allocated {peak} bytes"


@pytest.mark.parametrize(
    "compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2], ids=["deflate", "bzip2"]
)
def test_zip_highly_compressible_entry_reads_into_one_buffer(
    tmp_path: Path, compression: int
) -> None:
    """64 MiB of zeros written by zipfile (about 1000:1 deflated) decode to the right bytes,
    held once: the proof pass discards its output, the second pass fills one buffer."""
    size = 64 << 20
    p = tmp_path / "zeros.zip"
    with zipfile.ZipFile(p, "w", compression) as z:
        z.writestr("zeros", bytes(size))
    with MmapZipStore(p) as store:
        got: list[memoryview] = []
        err, peak = peak_allocation(lambda: got.append(store["zeros"]))
        assert err is None, err
        (data,) = got
        assert data.nbytes == size and not np.frombuffer(data, np.uint8).any()
    assert peak < size + (2 << 20), f"decoding {size} bytes allocated {peak} bytes"


def test_zip_deflate_stream_without_its_final_block_still_reads(tmp_path: Path) -> None:
    """A DEFLATE stream that a writer flushed but never finished decodes to all its bytes
    (as zipfile reads it), also when its size calls for the checking pass first."""
    plain = bytes(4 << 20)
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = c.compress(plain) + c.flush(zlib.Z_SYNC_FLUSH)
    p = tmp_path / "unfinished.zip"
    p.write_bytes(zb.build([zb.Member("e", data, 8, crc=zlib.crc32(plain), usize=len(plain))]).data)
    with MmapZipStore(p) as store:
        assert bytes(store["e"]) == plain


@pytest.mark.parametrize("method", [8, 9])
def test_zip_deflate_claim_beyond_the_methods_ratio_is_refused_before_decoding(
    tmp_path: Path, method: int
) -> None:
    data = zb.raw_deflate(bytes(1 << 20))  # (a DEFLATE stream is a valid DEFLATE64 stream)
    ratio = DEFLATE_MAX_RATIO if method == 8 else DEFLATE64_MAX_RATIO
    claim = ratio * len(data) + (1 << 16) + 1
    p = tmp_path / "ratio.zip"
    p.write_bytes(zb.build([zb.Member("e", data, method, crc=0, usize=claim)]).data)
    with MmapZipStore(p, max_decompressed_size=1 << 40) as store:
        err, peak = peak_allocation(lambda: store["e"])
    assert isinstance(err, CorruptArchiveError), err
    assert f"ratio.zip: entry 'e' claims {claim} bytes, but {len(data)} bytes of" in str(err)
    assert peak < 256 << 10, f"refusing an impossible claim allocated {peak} bytes"


def test_zip_zstd_entry_decoding_short_is_refused(tmp_path: Path) -> None:
    plain = b"z" * 1000
    p = tmp_path / "short.zip"
    frame = zb.zstd_rle_frame(ord("z"), 1000)  # no content size: only decoding tells
    p.write_bytes(
        zb.build([zb.Member("e", frame, 93, crc=zlib.crc32(plain + b"\0"), usize=1001)]).data
    )
    with MmapZipStore(p) as store, pytest.raises(CorruptArchiveError, match="'e'"):
        store["e"]


# --- ArrayFile blocks ---------------------------------------------------------------------


def _with_block_sizes(path: Path, change: Callable[[dict[str, Any], bytearray], None]) -> None:
    """Rewrite the ArrayFile layer at ``path`` after ``change`` on each block's footer record
    (and on the file's bytes before the footer)."""
    data = path.read_bytes()
    (size,) = struct.unpack_from("<Q", data, len(data) - 12)
    footer = fmt.decode_footer(data[len(data) - 12 - size : len(data) - 12])
    body = bytearray(data[: len(data) - 12 - size])
    for b in footer["blocks"]:
        change(b, body)
    path.write_bytes(bytes(body) + fmt.encode_footer(footer))


def _open_and_read(path: Path) -> tuple[BaseException | None, int]:
    """Open ``path`` and read array "a": what was raised, and the peak allocation meanwhile."""
    with ArrayFile.open(path) as f:
        return peak_allocation(lambda: f.read_array("a"))


def _zstd_file(tmp_path: Path) -> tuple[Path, np.ndarray]:
    values = np.arange(5000, dtype="u2")
    with ArrayFile.create(tmp_path / "z.af", config=FileConfig(codec="zstd")) as f:
        f.define_array("a", "u2", ["x"], [5000], chunk_shape=[1000])
        f.write_array("a", [0], values)
    return tmp_path / "z.1.af", values


def test_arrayfile_zstd_block_decoding_short_is_refused(tmp_path: Path) -> None:
    layer, values = _zstd_file(tmp_path)
    with ArrayFile.open(tmp_path / "z.af") as f:
        assert np.array_equal(f.read_array("a"), values)

    def grow(b: dict[str, Any], body: bytearray) -> None:
        b["uncompressed_size"] += 64

    _with_block_sizes(layer, grow)
    with (
        ArrayFile.open(tmp_path / "z.af") as f,
        pytest.raises(CorruptArrayFileError, match=r"z\.1\.af.*block 0") as info,
    ):
        f.read_array("a")
    assert isinstance(info.value, DafzarrError)
    assert "10000" in str(info.value)


def test_arrayfile_block_claiming_a_huge_size_is_refused_before_allocating(
    tmp_path: Path,
) -> None:
    layer, _ = _zstd_file(tmp_path)

    def huge(b: dict[str, Any], body: bytearray) -> None:
        b["uncompressed_size"] = 1 << 30

    _with_block_sizes(layer, huge)
    err, peak = _open_and_read(tmp_path / "z.af")
    assert isinstance(err, CorruptArrayFileError), err
    assert peak < 16 << 20, f"refusing a 1 GiB claim allocated {peak} bytes"


def test_arrayfile_lz4_block_claiming_more_than_lz4_can_hold_is_refused(tmp_path: Path) -> None:
    values = np.arange(5000, dtype="u2")
    with ArrayFile.create(tmp_path / "l.af", config=FileConfig(codec="lz4")) as f:
        f.define_array("a", "u2", ["x"], [5000], chunk_shape=[1000])
        f.write_array("a", [0], values)
    layer = tmp_path / "l.1.af"
    size = 1 << 30

    def huge(b: dict[str, Any], body: bytearray) -> None:
        b["uncompressed_size"] = size
        struct.pack_into("<I", body, b["file_offset"], size)  # the block's own size prefix

    _with_block_sizes(layer, huge)
    err, peak = _open_and_read(tmp_path / "l.af")
    assert isinstance(err, CorruptArrayFileError), err
    assert peak < 16 << 20, f"refusing a 1 GiB claim allocated {peak} bytes"


def test_arrayfile_lz4_block_claiming_a_size_it_does_not_decode_to_is_refused_before_allocating(
    tmp_path: Path,
) -> None:
    """A claim within LZ4's 255:1 ratio but not what the block's sequences add up to: refused
    by walking them, before the claim is allocated."""
    values = np.arange(5000, dtype="u2")
    with ArrayFile.create(tmp_path / "l.af", config=FileConfig(codec="lz4")) as f:
        f.define_array("a", "u2", ["x"], [5000], chunk_shape=[1000])
        f.write_array("a", [0], values)
    layer = tmp_path / "l.1.af"
    claims = []

    def grow(b: dict[str, Any], body: bytearray) -> None:
        size = 200 * b["compressed_size"]  # within 255:1, far above what the block holds
        claims.append(size)
        b["uncompressed_size"] = size
        struct.pack_into("<I", body, b["file_offset"], size)  # the block's own size prefix

    _with_block_sizes(layer, grow)
    assert claims and min(claims) > 1 << 20
    err, peak = _open_and_read(tmp_path / "l.af")
    assert isinstance(err, CorruptArrayFileError), err
    assert "10000 bytes" in str(err), err
    assert peak < 1 << 20, f"refusing a {claims[0]}-byte claim allocated {peak} bytes"


def test_zip_deflate64_bomb_stops_at_the_stated_size(tmp_path: Path) -> None:
    """64 MiB of zeros deflate64-compressed by 7z, the directory understating it as 1000."""
    pytest.importorskip("inflate64")
    import shutil
    import subprocess

    if shutil.which("7z") is None:
        pytest.skip("7z is not installed")
    (tmp_path / "zeros").write_bytes(bytes(64 << 20))
    p = tmp_path / "bomb.zip"
    subprocess.run(
        ["7z", "a", "-tzip", "-mm=Deflate64", str(p), "zeros"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    (rec,) = zb.central_records(p.read_bytes())
    assert rec.method == 9
    p.write_bytes(zb.patch(p.read_bytes(), rec.usize_pos, 1000))
    with MmapZipStore(p) as store:
        err, peak = peak_allocation(lambda: store["zeros"])
    assert isinstance(err, CorruptArchiveError), err
    assert peak < 16 << 20, f"decoding a 1000-byte entry allocated {peak} bytes"


# --- Daf packed arrays (DataAxesFormats.jl 0.3 single-shard arrays) ------------------------


def _packed(chunks: list[bytes], codec: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Metadata and shard of a 1-D packed u1 array of ``len(chunks)`` inner chunks of 4."""
    meta = {
        "shape": [4 * len(chunks)],
        "fill_value": 0,
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [4],
                    "index_location": "start",
                    "codecs": [{"name": "bytes"}, codec],
                },
            }
        ],
    }
    start = 16 * len(chunks) + 4
    index, body = [], b""
    for c in chunks:
        index += [start + len(body), len(c)]
        body += c
    return meta, struct.pack(f"<{len(index)}Q", *index) + b"\0\0\0\0" + body


@pytest.mark.parametrize("name", ["gzip", "zstd"])
def test_packed_inner_chunk_that_decodes_long_is_refused_in_bounded_memory(name: str) -> None:
    from numcodecs import GZip

    from dafzarr._core.daf.packed import read_packed

    codec = GZip() if name == "gzip" else Zstd()
    good = bytes(codec.encode(bytes([1, 2, 3, 4])))
    meta, shard = _packed([good], {"name": name})
    assert read_packed(meta, shard, np.dtype("u1"), "x").tolist() == [1, 2, 3, 4]
    bomb = bytes(codec.encode(bytes(64 << 20)))  # one inner chunk of 4 bytes, decoding to 64 MiB
    meta, shard = _packed([bomb], {"name": name})
    err, peak = peak_allocation(lambda: read_packed(meta, shard, np.dtype("u1"), "x"))
    assert isinstance(err, DafFormatError) and "x" in str(err), err
    assert peak < 2 << 20, peak
