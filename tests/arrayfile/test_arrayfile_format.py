"""The array-format codec: golden files, rkyv layout rules, v5 and stats generations, hostile input."""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dafzarr._core.arrayfile import format as fmt
from dafzarr._core.arrayfile import rkyv as rk
from dafzarr.arrayfile import ArrayFile, CorruptArrayFileError, FileConfig
from dafzarr.errors import StatisticsWarning

GOLDEN = {
    "signal.af": "973a09d427a29f33c925d512f0d6ed3531fab0b41e013ad4633dfde177395523",
    "signal.1.af": "30063d11fc031e1499b211c4a5b4cda30d4baf8fc2b8055827b6cb0c68d6426c",
    "signal.stats": "7a12dbab6d7f1e947bb635815fa4e649ce2b308324e750c30310af6d2e75506c",
}


@pytest.fixture
def golden(fixture_set: Callable[[str], Path]) -> Path:
    """The crate-layout golden files (skip when the shared fixtures lack them)."""
    return fixture_set("array-format")


def _payload(data: bytes, magic: bytes) -> bytes:
    n = fmt.split_trailer(data, magic, len(data))
    return data[len(data) - 12 - n : len(data) - 12]


# --- Golden files ----------------------------------------------------------------------


def test_golden_checksums(golden: Path) -> None:
    for name, digest in GOLDEN.items():
        assert hashlib.sha256((golden / name).read_bytes()).hexdigest() == digest


def test_golden_decode_values(golden: Path) -> None:
    base = fmt.decode_footer(_payload((golden / "signal.af").read_bytes(), fmt.FOOTER_MAGIC))
    assert base == fmt.empty_footer()
    side = fmt.decode_footer(_payload((golden / "signal.1.af").read_bytes(), fmt.FOOTER_MAGIC))
    assert side["version"] == 4 and side["overlay_index"] == 1
    assert side["base_file_hint"] == "signal.af"
    assert side["blocks"] == [
        {
            "id": 0,
            "file_offset": 0,
            "compressed_size": 16,
            "uncompressed_size": 16,
            "codec": ("None",),
        }
    ]
    (a,) = side["arrays"]
    assert a["name"] == "signal" and a["dtype"] == ("Float32",) and a["deleted"] is False
    assert a["layout"]["shape"] == [4] and a["layout"]["dimension_names"] == ["t"]
    assert a["layout"]["storage"]["chunk_shape"] == [4]
    table = a["layout"]["storage"]["chunks"]
    assert table.coords.tolist() == [[0]] and table.addrs.tolist() == [[0, 0, 16]]
    assert a["fill_value"] is None and a["attributes"] == ("U16", [])
    gen, stats = fmt.decode_stats(_payload((golden / "signal.stats").read_bytes(), fmt.STATS_MAGIC))
    assert gen == 0
    assert stats == [
        {
            "name": "signal",
            "min": ("Float", 1.0),
            "max": ("Float", 4.0),
            "null_count": 0,
            "row_count": 4,
        }
    ]


def test_golden_reencode_byte_identical(golden: Path) -> None:
    for name in ("signal.af", "signal.1.af"):
        data = (golden / name).read_bytes()
        payload = _payload(data, fmt.FOOTER_MAGIC)
        assert fmt.encode_footer(fmt.decode_footer(payload)) == data[-len(payload) - 12 :]
    data = (golden / "signal.stats").read_bytes()
    _, entries = fmt.decode_stats(data[:-12])
    assert fmt.encode_stats(entries) == data


def test_golden_open_as_file_set(golden: Path, tmp_path: Path) -> None:
    for name in GOLDEN:
        shutil.copy(golden / name, tmp_path / name)
    with ArrayFile.open(tmp_path / "signal.af") as f:
        assert f.list_arrays() == ["signal"]
        assert f.num_layers == 2
        np.testing.assert_array_equal(f.read_array("signal"), np.array([1, 2, 3, 4], "f4"))
        s = f.array_stats("signal")
        assert s is not None and (s.min, s.max, s.null_count, s.row_count) == (1.0, 4.0, 0, 4)


def test_writer_reproduces_golden_bytes(golden: Path, tmp_path: Path) -> None:
    f = ArrayFile.create(tmp_path / "signal.af", config=FileConfig(codec=None))
    assert (tmp_path / "signal.af").read_bytes() == (golden / "signal.af").read_bytes()
    f.define_array("signal", "f4", ["t"], [4])
    f.write_array("signal", [0], np.array([1, 2, 3, 4], "f4"))
    f.flush()
    f.close()
    for name in GOLDEN:
        assert (tmp_path / name).read_bytes() == (golden / name).read_bytes(), name


def test_empty_v5_footer_differs_in_byte_zero(golden: Path) -> None:
    data = bytearray((golden / "signal.af").read_bytes())
    data[0] = 5
    assert fmt.decode_footer(bytes(data[:-12]))["version"] == 5
    assert fmt.encode_footer(fmt.empty_footer(version=5)) == bytes(data)


# --- rkyv layout rules -----------------------------------------------------------------


def test_string_inline_and_out_of_line() -> None:
    ty = rk.Struct([("s", rk.STRING, 0)], 16, 8)
    assert rk.encode_root(ty, {"s": ""}) == b"\xff" * 16
    assert rk.encode_root(ty, {"s": "a" * 16}) == b"a" * 16
    out = rk.encode_root(ty, {"s": "b" * 17})
    # bytes at 0 (17), pad to 24, then {len_enc, offset}
    assert out[:17] == b"b" * 17 and out[24] == 0x91 and struct.unpack("<q", out[32:40])[0] == -24
    out = rk.encode_root(ty, {"s": "c" * 100})
    assert out[104:106] == b"\xa4\x01"
    for s in ("", "x", "é" * 8, "y" * 17, "z" * 300):
        assert rk.decode_root(ty, rk.encode_root(ty, {"s": s})) == {"s": s}


def test_out_of_line_string_with_inline_length_is_rejected() -> None:
    ty = rk.Struct([("s", rk.STRING, 0)], 16, 8)
    bad = bytearray(rk.encode_root(ty, {"s": "q" * 20}))
    pos = len(bad) - 16
    bad[pos : pos + 8] = struct.pack("<Q", (5 & 0x3F) | 0x80)
    with pytest.raises(rk.RkyvError):
        rk.decode_root(ty, bytes(bad))


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_fill = st.one_of(
    st.none(),
    st.tuples(st.just("Bool"), st.booleans()),
    st.tuples(st.just("Int"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("UInt"), st.integers(0, 2**64 - 1)),
    st.tuples(st.just("Float"), st.floats(allow_nan=False)),
    st.tuples(st.just("String"), _names),
    st.tuples(st.just("TimestampNs"), st.integers(-(2**63), 2**63 - 1)),
)
_dtype: Any = st.deferred(
    lambda: st.one_of(
        st.sampled_from(
            ["Int8", "UInt64", "Float32", "String", "Binary", "TimestampNs", "Bool"]
        ).map(lambda t: (t,)),
        st.tuples(st.just("FixedSizeList"), _dtype, st.integers(0, 2**32 - 1)),
        st.tuples(st.just("List"), _dtype),
    )
)
_attr_value = st.one_of(
    st.tuples(st.just("Bool"), st.booleans()),
    st.tuples(st.just("Int16"), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("UInt32"), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("Int64"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("Float64"), st.floats(allow_nan=False)),
    st.tuples(st.just("String"), _names),
)


@st.composite
def _array(draw: Any) -> dict[str, Any]:
    ndim = draw(st.integers(0, 3))
    shape = draw(st.lists(st.integers(1, 2**32 - 1), min_size=ndim, max_size=ndim))
    n = draw(st.integers(0, 5))
    coords = np.array(
        draw(
            st.lists(
                st.lists(st.integers(0, 2**32 - 1), min_size=ndim, max_size=ndim),
                min_size=n,
                max_size=n,
            )
        ),
        np.uint32,
    ).reshape(n, ndim)
    addrs = np.array(
        draw(
            st.lists(
                st.lists(st.integers(0, 2**32 - 1), min_size=3, max_size=3), min_size=n, max_size=n
            )
        ),
        np.uint32,
    ).reshape(n, 3)
    width = draw(st.sampled_from(["U16", "U32", "U64"]))
    hi = {"U16": 2**16 - 1, "U32": 2**32 - 1, "U64": 2**64 - 1}[width]
    pairs = draw(
        st.lists(
            st.fixed_dictionaries({"k": st.integers(0, hi), "v": st.integers(0, hi)}), max_size=3
        )
    )
    return {
        "name": draw(_names),
        "dtype": draw(_dtype),
        "layout": {
            "shape": shape,
            "dimension_names": draw(st.lists(_names, max_size=3)),
            "storage": {"chunk_shape": shape, "chunks": fmt.ChunkTable(coords, addrs)},
        },
        "fill_value": draw(_fill),
        "deleted": draw(st.booleans()),
        "attributes": (width, pairs),
    }


_footer = st.fixed_dictionaries(
    {
        "version": st.just(4),
        "blocks": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.integers(0, 2**32 - 1),
                    "file_offset": st.integers(0, 2**64 - 1),
                    "compressed_size": st.integers(0, 2**64 - 1),
                    "uncompressed_size": st.integers(0, 2**64 - 1),
                    "codec": st.one_of(st.just(("None",)), st.tuples(st.just("Named"), _names)),
                }
            ),
            max_size=3,
        ),
        "arrays": st.lists(_array(), max_size=3),
        "attr_keys": st.lists(_names, max_size=3),
        "attr_values": st.lists(_attr_value, max_size=3),
        "overlay_index": st.integers(0, 2**32 - 1),
        "base_file_hint": _names,
    }
)


def _norm(footer: dict[str, Any]) -> Any:
    def conv(x: Any) -> Any:
        if isinstance(x, fmt.ChunkTable):
            return (x.coords.tolist(), x.addrs.tolist())
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x

    return conv(footer)


@settings(max_examples=150)
@given(_footer)
def test_footer_roundtrip(footer: dict[str, Any]) -> None:
    data = fmt.encode_footer(footer)
    payload = data[:-12]
    assert len(payload) % 8 == 0
    back = fmt.decode_footer(payload)
    got, want = _norm(back), _norm(footer)
    for a in want["arrays"]:  # an empty chunk table decodes without an axis count
        if not a["layout"]["storage"]["chunks"][0]:
            a["layout"]["storage"]["chunks"] = ([], [])
    for a in got["arrays"]:
        if not a["layout"]["storage"]["chunks"][0]:
            a["layout"]["storage"]["chunks"] = ([], [])
    assert got == want
    assert fmt.encode_footer(back) == data


def test_v5_attribute_variants_roundtrip() -> None:
    footer = fmt.empty_footer(version=5)
    footer["attr_keys"] = ["b", "l", "s"]
    footer["attr_values"] = [
        ("Binary", b"\x00\x01"),
        ("Float64List", [1.5, -2.0]),
        ("StringList", ["a", "b" * 30]),
        ("BinaryList", [b"x", b""]),
    ]
    back = fmt.decode_footer(fmt.encode_footer(footer)[:-12])
    assert back["attr_values"] == footer["attr_values"]
    with pytest.raises(KeyError):  # v4 has no such variants
        fmt.encode_footer({**footer, "version": 4})


def test_stats_generations() -> None:
    entry = {
        "name": "x" * 20,
        "min": ("Bytes", b"abc"),
        "max": ("TimestampNs", -5),
        "null_count": 3,
        "row_count": 9,
    }
    for gen in (0, 1):
        for entries in ([], [entry], [entry, {**entry, "name": "y", "min": None}]):
            data = fmt.encode_stats(entries, generation=gen)
            assert fmt.decode_stats(data[:-12]) == (gen, entries)


def test_million_chunk_table_decodes() -> None:
    n = 1_000_000
    coords = np.stack(np.unravel_index(np.arange(n), (1000, 1000)), axis=1).astype(np.uint32)
    addrs = np.zeros((n, 3), np.uint32)
    addrs[:, 1] = np.arange(n) * 8
    addrs[:, 2] = 8
    footer = fmt.empty_footer()
    footer["arrays"] = [
        {
            "name": "big",
            "dtype": ("Float64",),
            "layout": {
                "shape": [1000, 1000],
                "dimension_names": ["y", "x"],
                "storage": {"chunk_shape": [1, 1], "chunks": fmt.ChunkTable(coords, addrs)},
            },
            "fill_value": None,
            "deleted": False,
            "attributes": ("U16", []),
        }
    ]
    data = fmt.encode_footer(footer)
    back = fmt.decode_footer(data[:-12])["arrays"][0]["layout"]["storage"]["chunks"]
    np.testing.assert_array_equal(back.coords, coords)
    np.testing.assert_array_equal(back.addrs, addrs)


# --- Hostile input ---------------------------------------------------------------------


def _sample_file(tmp_path: Path) -> Path:
    with ArrayFile.create(tmp_path / "h.af", config=FileConfig(codec="lz4")) as f:
        f.define_array("v", "i4", ["x", "y"], [10, 6], chunk_shape=[3, 4], fill_value=7)
        f.write_array("v", [0, 0], np.arange(60, dtype="i4").reshape(10, 6))
        f.define_array("s", str, ["n"], [5], chunk_shape=[2])
        f.write_array("s", [0], np.array(["a", "bb", "", "dddd", "e" * 40], dtype=object))
        f.set_attribute("v", "units", "m/s")
    return tmp_path / "h.1.af"


def test_truncated_sidecar_raises_naming_the_file(tmp_path: Path) -> None:
    side = _sample_file(tmp_path)
    data = side.read_bytes()
    for cut in (0, 5, 11, 12, 40, len(data) // 2, len(data) - 13, len(data) - 1):
        side.write_bytes(data[:cut])
        with pytest.raises(CorruptArrayFileError, match=r"h\.1\.af"):
            ArrayFile.open(tmp_path / "h.af")


def test_corrupt_footer_bytes_never_crash(tmp_path: Path) -> None:
    side = _sample_file(tmp_path)
    data = side.read_bytes()
    n = struct.unpack("<Q", data[-12:-4])[0]
    start = len(data) - 12 - n
    rng = np.random.default_rng(12345)
    outcomes = set()
    messages: list[str] = []
    for _ in range(300):
        bad = bytearray(data)
        for pos in rng.integers(start, len(data) - 12, size=int(rng.integers(1, 4))):
            bad[pos] = int(rng.integers(0, 256))
        side.write_bytes(bytes(bad))
        try:
            with ArrayFile.open(tmp_path / "h.af") as f:
                for name in f.list_arrays():
                    f.read_array(name)
            outcomes.add("ok")
        except CorruptArrayFileError as exc:
            messages.append(str(exc))
            outcomes.add("corrupt")
    print(outcomes)
    assert outcomes == {"ok", "corrupt"}
    assert all("h.1.af" in m for m in messages)


def test_corrupt_block_raises(tmp_path: Path) -> None:
    side = _sample_file(tmp_path)
    data = bytearray(side.read_bytes())
    data[10] ^= 0xFF  # inside the LZ4 block
    data[4] ^= 0xFF
    side.write_bytes(bytes(data))
    with (
        ArrayFile.open(tmp_path / "h.af") as f,
        pytest.raises(CorruptArrayFileError, match="block 0"),
    ):
        f.read_array("v")


def test_self_referencing_box_is_rejected() -> None:
    ty = rk.Box(lambda: ty)  # a box pointing at itself
    payload = struct.pack("<q", 0)
    with pytest.raises(rk.RkyvError, match=r"nested|alias"):
        rk.decode_root(ty, payload)


def test_unknown_version_and_32bit_layout(tmp_path: Path) -> None:
    data = bytearray(fmt.encode_footer(fmt.empty_footer()))
    data[0] = 6
    (tmp_path / "v.af").write_bytes(bytes(data))
    with pytest.raises(CorruptArrayFileError, match="version 6"):
        ArrayFile.open(tmp_path / "v.af")
    # an old (32-bit pointer) footer has a 48-byte root: decoding as 64-bit goes out of range
    old = (
        struct.pack("<I", 4) + b"\0" * 4 + struct.pack("<iI", -8, 0) * 4 + b"\0" * 8 + b"\xff" * 16
    )
    (tmp_path / "o.af").write_bytes(bytes(old) + b"\0" * 48 + struct.pack("<Q", 96) + b"ARRF")
    with pytest.raises(CorruptArrayFileError, match=r"o\.af"):
        ArrayFile.open(tmp_path / "o.af")


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_blocks_use_the_crate_wire_format(tmp_path: Path, codec: str) -> None:
    with ArrayFile.create(tmp_path / "z.af", config=FileConfig(codec=codec)) as f:
        f.define_array("a", "u2", ["x"], [5000], chunk_shape=[1000])
        f.write_array("a", [0], np.arange(5000, dtype="u2"))
    data = (tmp_path / "z.1.af").read_bytes()
    (block,) = _footer_of(data)["blocks"]
    assert block["codec"] == ("Named", codec) and block["uncompressed_size"] == 10000
    raw = data[block["file_offset"] : block["file_offset"] + block["compressed_size"]]
    if codec == "lz4":
        import lz4.block

        # lz4_flex::compress_prepend_size: a 4-byte LE length, then one LZ4 block
        assert struct.unpack("<I", raw[:4])[0] == 10000
        plain = lz4.block.decompress(raw[4:], uncompressed_size=10000)
    else:
        from numcodecs import Zstd

        assert raw[:4] == b"\x28\xb5\x2f\xfd"  # one standard zstd frame
        plain = bytes(Zstd().decode(raw))
    assert plain == np.arange(5000, dtype="<u2").tobytes()


def _footer_of(data: bytes) -> dict[str, Any]:
    return fmt.decode_footer(_payload(data, fmt.FOOTER_MAGIC))


def test_open_v5_file_set_and_keep_writing_v5(tmp_path: Path) -> None:
    # a 0.11/0.12 file set: v5 footers with a v5-only attribute value, stats generation 1
    footer = fmt.empty_footer(version=5)
    (tmp_path / "n.af").write_bytes(fmt.encode_footer(footer))
    side = fmt.empty_footer(version=5, overlay_index=1, hint="n.af")
    side["blocks"] = [
        {
            "id": 0,
            "file_offset": 0,
            "compressed_size": 4,
            "uncompressed_size": 4,
            "codec": ("None",),
        }
    ]
    side["attr_keys"] = ["blob", "tags"]
    side["attr_values"] = [("Binary", b"\x00\x01"), ("StringList", ["a", "b"])]
    side["arrays"] = [
        {
            "name": "x",
            "dtype": ("UInt8",),
            "layout": {
                "shape": [4],
                "dimension_names": ["i"],
                "storage": {
                    "chunk_shape": [4],
                    "chunks": fmt.ChunkTable(
                        np.array([[0]], np.uint32), np.array([[0, 0, 4]], np.uint32)
                    ),
                },
            },
            "fill_value": None,
            "deleted": False,
            "attributes": ("U16", [{"k": 0, "v": 0}, {"k": 1, "v": 1}]),
        }
    ]
    (tmp_path / "n.1.af").write_bytes(b"\x01\x02\x03\x04" + fmt.encode_footer(side))
    (tmp_path / "n.stats").write_bytes(
        fmt.encode_stats(
            [
                {
                    "name": "x",
                    "min": ("UInt", 1),
                    "max": ("UInt", 4),
                    "null_count": 0,
                    "row_count": 4,
                }
            ],
            generation=1,
        )
    )
    with ArrayFile.open(tmp_path / "n.af") as f:
        assert f.read_array("x").tolist() == [1, 2, 3, 4]
        assert f.attributes("x") == {"blob": b"\x00\x01", "tags": ["a", "b"]}
        s = f.array_stats("x")
        assert s is not None and (s.min, s.max) == (1, 4)
        f.write_array("x", [0], np.array([9], "u1"))
    assert _footer_of((tmp_path / "n.2.af").read_bytes())["version"] == 5
    gen, stats = fmt.decode_stats((tmp_path / "n.stats").read_bytes()[:-12])
    assert gen == 1 and stats[0]["max"] == ("UInt", 9)
    with ArrayFile.open(tmp_path / "n.af") as f:
        assert f.read_array("x").tolist() == [9, 2, 3, 4]
        assert f.attributes("x")["blob"] == b"\x00\x01"


# --- A damaged statistics sidecar ------------------------------------------------------


def _stats_with_version(version: int) -> bytes:
    data = bytearray(
        fmt.encode_stats(
            [{"name": "v", "min": ("Int", 1), "max": ("Int", 2), "null_count": 0, "row_count": 60}],
            generation=1,
        )
    )
    n = struct.unpack("<Q", data[-12:-4])[0]
    struct.pack_into("<I", data, len(data) - 12 - n + n - 24, version)  # the root's version
    return bytes(data)


def _stats_damages(good: bytes) -> dict[str, tuple[bytes, str]]:
    n = struct.unpack("<Q", good[-12:-4])[0]
    return {
        "empty": (b"", "too short for the 12-byte trailer"),
        "trailer only": (good[-12:], "announces a [0-9]+-byte footer in a 12-byte object"),
        "truncated to 11 bytes": (good[:11], "too short for the 12-byte trailer"),
        "truncated in the middle": (good[: len(good) // 2], "trailer magic"),
        "last byte cut": (good[:-1], "trailer magic"),
        "garbage": (bytes(range(256)) * 3, "trailer magic"),
        "a trailer announcing more bytes than the file": (
            good[:-12] + struct.pack("<Q", len(good) * 4) + b"ARST",
            "announces",
        ),
        "an odd payload size": (good[:-12] + struct.pack("<Q", n - 3) + b"ARST", "multiple of 8"),
        "garbage with a valid trailer": (
            bytes(range(8, 8 + n)) + struct.pack("<Q", n) + b"ARST",
            "stats",
        ),
        "a footer magic": (good[:-4] + b"ARRF", "trailer magic"),
        "an unknown stats version": (_stats_with_version(7), "stats version 7"),
        "an array listed twice": (
            fmt.encode_stats(
                [{"name": "v", "min": None, "max": None, "null_count": 0, "row_count": 60}] * 2
            ),
            "twice",
        ),
    }


def test_damaged_stats_sidecar_opens_with_a_warning(tmp_path: Path) -> None:
    _sample_file(tmp_path)
    stats = tmp_path / "h.stats"
    good = stats.read_bytes()
    with ArrayFile.open(tmp_path / "h.af") as f:
        want_v, want_s = f.read_array("v"), f.read_array("s")
        assert f.array_stats("v") is not None
    for what, (bad, reason) in _stats_damages(good).items():
        stats.write_bytes(bad)
        with pytest.warns(StatisticsWarning) as caught:
            f = ArrayFile.open(tmp_path / "h.af")
        with f:
            (w,) = caught.list
            message = str(w.message)
            assert str(stats) in message, what
            assert "unreadable" in message and re.search(reason, message), (what, message)
            assert f.array_stats("v") is None and f.array_stats("s") is None, what
            assert np.array_equal(f.read_array("v"), want_v), what
            assert np.array_equal(f.read_array("s"), want_s), what
            assert stats.read_bytes() == bad, what  # opening never rewrites the sidecar
    # the next flush writes a readable sidecar again; compact recomputes every array
    with _open_quietly(tmp_path / "h.af") as f:
        f.write_array("v", [0, 0], np.full((1, 1), -5, "i4"))
        f.flush()
        assert f.array_stats("v") is not None and f.array_stats("s") is None
    with ArrayFile.open(tmp_path / "h.af") as f:
        v = f.array_stats("v")
        assert v is not None and v.min == -5
        f.compact()
        assert f.array_stats("s") is not None


def test_damaged_stats_generation_1_opens_with_a_warning(tmp_path: Path) -> None:
    _sample_file(tmp_path)
    (tmp_path / "h.stats").write_bytes(_stats_with_version(1))  # the untampered control
    with ArrayFile.open(tmp_path / "h.af") as f:
        assert f.array_stats("v") is not None
    (tmp_path / "h.stats").write_bytes(_stats_with_version(2))
    with (
        pytest.warns(StatisticsWarning, match=r"h\.stats.*stats version 2"),
        ArrayFile.open(tmp_path / "h.af") as f,
    ):
        assert f.array_stats("v") is None


def test_stats_sidecar_that_cannot_be_read_opens_with_a_warning(tmp_path: Path) -> None:
    _sample_file(tmp_path)
    (tmp_path / "h.stats").unlink()
    (tmp_path / "h.stats").mkdir()  # the operating system refuses to read it
    with pytest.warns(StatisticsWarning, match=r"h\.stats"), ArrayFile.open(tmp_path / "h.af") as f:
        assert f.array_stats("v") is None
        assert f.read_array("v").shape == (10, 6)


def _open_quietly(path: Path) -> ArrayFile:
    with pytest.warns(StatisticsWarning):
        return ArrayFile.open(path)


def test_trailer_announcing_more_bytes_than_the_file_is_corrupt(tmp_path: Path) -> None:
    # without the bounds check the reader asks for bytes before the start of the file and
    # the operating system answers with a bare OSError
    side = _sample_file(tmp_path)
    data = side.read_bytes()
    for size in (len(data) - 4, len(data) + 8, 1 << 40, 1 << 62):
        size = -(-size // 8) * 8  # a multiple of 8, as a real footer size is
        side.write_bytes(data[:-12] + struct.pack("<Q", size) + b"ARRF")
        with pytest.raises(CorruptArrayFileError, match=rf"h\.1\.af: .*announces a {size}-byte"):
            ArrayFile.open(tmp_path / "h.af")
    side.write_bytes(data)
    base = tmp_path / "h.af"
    base.write_bytes(base.read_bytes()[:-12] + struct.pack("<Q", 1 << 20) + b"ARRF")
    with pytest.raises(CorruptArrayFileError, match=r"h\.af: .*announces"):
        ArrayFile.open(base)
