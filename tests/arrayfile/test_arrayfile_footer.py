"""The compiled reader of footer and statistics records (``dafzarr._affooter``) against the
Python schema it stands in for: the same values for every footer, the same refusal (same
error, same message) for every damaged one, and aliasing refused before it costs memory."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dafzarr._core.arrayfile import format as fmt
from dafzarr.arrayfile import ArrayFile, CorruptArrayFileError
from tests.helpers.common import alias_strings, peak_allocation


def _norm(x: Any) -> Any:
    """A footer with its chunk tables as lists, comparable with ``==``."""
    if isinstance(x, fmt.ChunkTable):
        return ("table", x.coords.shape, x.coords.tolist(), x.addrs.shape, x.addrs.tolist())
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_norm(v) for v in x)
    return x


def _table(coords: list[list[int]], ndim: int) -> fmt.ChunkTable:
    n = len(coords)
    c = np.array(coords, np.uint32).reshape(n, ndim)
    a = np.arange(3 * n, dtype=np.uint32).reshape(n, 3)
    return fmt.ChunkTable(c, a)


def _array(
    name: str,
    dtype: tuple[Any, ...],
    shape: list[int],
    dims: list[str],
    table: fmt.ChunkTable,
    fill: Any,
    attrs: tuple[str, list[dict[str, int]]],
    *,
    deleted: bool = False,
) -> dict[str, Any]:
    return {
        "name": name,
        "dtype": dtype,
        "layout": {
            "shape": shape,
            "dimension_names": dims,
            "storage": {"chunk_shape": shape, "chunks": table},
        },
        "fill_value": fill,
        "deleted": deleted,
        "attributes": attrs,
    }


def _rich_footer(version: int = 4) -> dict[str, Any]:
    """Every kind of value an array record holds: short and long strings, each fill variant,
    each attribute width, a boxed element type, tables of 0 to 3 axes, an empty table."""
    footer = fmt.empty_footer(version=version)
    footer["blocks"] = [
        {
            "id": 0,
            "file_offset": 0,
            "compressed_size": 64,
            "uncompressed_size": 64,
            "codec": ("None",),
        }
    ]
    footer["attr_keys"] = ["units", "a long attribute key of many bytes"]
    footer["attr_values"] = [("String", "m/s"), ("Int64", -3)]
    footer["arrays"] = [
        _array(
            "v",
            ("Int32",),
            [10, 6],
            ["x", "y"],
            _table([[0, 0], [1, 1]], 2),
            ("Int", -7),
            ("U16", [{"k": 0, "v": 1}, {"k": 1, "v": 0}]),
        ),
        _array(
            "an array name longer than sixteen bytes",
            ("Float64",),
            [5],
            ["a dimension name longer than sixteen bytes"],
            _table([[0]], 1),
            ("Float", 2.5),
            ("U32", [{"k": 1, "v": 1}]),
        ),
        _array(
            "s",
            ("String",),
            [3, 2, 2],
            ["i", "j", "k"],
            _table([[0, 0, 0], [2, 1, 1], [1, 0, 1]], 3),
            ("String", "a fill string longer than sixteen bytes"),
            ("U64", [{"k": 2**40, "v": 2**63}]),
        ),
        _array(
            "b", ("Bool",), [4], ["é" * 8], _table([], 1), ("Bool", True), ("U16", []), deleted=True
        ),
        _array("u", ("UInt64",), [], [], _table([[]], 0), ("UInt", 2**64 - 1), ("U16", [])),
        _array(
            "t",
            ("TimestampNs",),
            [7],
            ["time"],
            _table([[0]], 1),
            ("TimestampNs", -(2**63)),
            ("U32", []),
        ),
        _array(
            "l",
            ("List", ("FixedSizeList", ("Int8",), 3)),
            [2],
            ["n"],
            _table([[1]], 1),
            None,
            ("U16", []),
        ),
    ]
    return footer


def _outcome(decode: Any, payload: bytes) -> Any:
    try:
        return ("value", _norm(decode(payload)))
    except fmt.CorruptFooterError as exc:
        return ("refused", str(exc))


def _same(payload: bytes) -> Any:
    compiled = _outcome(lambda p: fmt.decode_footer(p, compiled=True), payload)
    python = _outcome(lambda p: fmt.decode_footer(p, compiled=False), payload)
    assert compiled == python
    return compiled


def test_compiled_records_decode_to_the_schema_values() -> None:
    for version in (4, 5):
        footer = _rich_footer(version)
        payload = fmt.encode_footer(footer)[:-12]
        kind, value = _same(payload)
        assert kind == "value"
        back = fmt.decode_footer(payload)
        assert fmt.encode_footer(back)[:-12] == payload
        want = _norm(footer)
        for a in want["arrays"]:  # an empty chunk table decodes without an axis count
            if not a["layout"]["storage"]["chunks"][2]:
                a["layout"]["storage"]["chunks"] = value["arrays"][3]["layout"]["storage"]["chunks"]
        assert value == want


def test_golden_files_decode_the_same_both_ways(golden_dir: Path) -> None:
    for name in ("signal.af", "signal.1.af"):
        data = (golden_dir / name).read_bytes()
        n = fmt.split_trailer(data, fmt.FOOTER_MAGIC, len(data))
        assert _same(data[len(data) - 12 - n : -12])[0] == "value"
    data = (golden_dir / "signal.stats").read_bytes()
    payload = data[:-12]
    assert fmt.decode_stats(payload) == fmt.decode_stats(payload, compiled=False)


@pytest.fixture
def golden_dir(fixture_set: Any) -> Path:
    path: Path = fixture_set("array-format")
    return path


def test_damaged_footers_are_refused_alike() -> None:
    """Random damage to the record region (bytes, aligned words, pointers nudged): both
    decoders agree on every outcome, and many outcomes are refusals of different kinds."""
    payload = fmt.encode_footer(_rich_footer())[:-12]
    n = len(payload)
    root = n - 96
    (rel, count) = struct.unpack_from("<qQ", payload, root + 24)
    records = root + 24 + rel
    assert count == 7
    rng = np.random.default_rng(2026)
    refusals: set[str] = set()
    values = 0
    for trial in range(3000):
        data = bytearray(payload)
        kind = trial % 3
        if kind == 0:  # one byte of a record, anywhere
            pos = int(rng.integers(records, root))
            data[pos] = int(rng.integers(0, 256))
        elif kind == 1:  # one aligned word of the whole payload
            pos = 8 * int(rng.integers(0, n // 8))
            data[pos : pos + 8] = struct.pack("<q", int(rng.integers(-(2**63), 2**63 - 1)))
        else:  # a relative pointer or length in a record, nudged a little
            pos = records + 8 * int(rng.integers(0, 21 * count))
            (v,) = struct.unpack_from("<q", data, pos)
            v += int(rng.integers(-40, 41))
            data[pos : pos + 8] = struct.pack("<q", max(-(2**63), min(v, 2**63 - 1)))
        result = _same(bytes(data))
        if result[0] == "refused":
            refusals.add(result[1].split(" (")[1].split(" at ")[0][:20])
        else:
            values += 1
    assert values > 100
    assert len(refusals) >= 8, refusals


def test_stats_records_decode_and_refuse_alike() -> None:
    entries = [
        {
            "name": "x" * 20,
            "min": ("Bytes", b"abc" * 10),
            "max": ("TimestampNs", -5),
            "null_count": 3,
            "row_count": 9,
        },
        {"name": "y", "min": None, "max": ("Float", -0.0), "null_count": 0, "row_count": 0},
        {
            "name": "z",
            "min": ("Int", -(2**63)),
            "max": ("UInt", 2**64 - 1),
            "null_count": 1,
            "row_count": 2,
        },
    ]
    rng = np.random.default_rng(7)
    for gen in (0, 1):
        payload = fmt.encode_stats(entries, generation=gen)[:-12]
        assert (
            fmt.decode_stats(payload) == fmt.decode_stats(payload, compiled=False) == (gen, entries)
        )
        for _ in range(1000):
            data = bytearray(payload)
            pos = int(rng.integers(0, len(data)))
            data[pos] = int(rng.integers(0, 256))
            got = []
            for compiled in (True, False):
                try:
                    got.append(fmt.decode_stats(bytes(data), compiled=compiled))
                except fmt.CorruptFooterError as exc:
                    got.append(str(exc))
            assert got[0] == got[1]


def _aliased_dimension_names(copies: int, length: int) -> bytes:
    """A footer of one array whose ``copies`` dimension names all point at one
    ``length``-byte string: about ``length + 16 * copies`` bytes, ``copies * length``
    decoded naively."""
    footer = fmt.empty_footer()
    dims = ["d" * length] + [f"{i:017d}" for i in range(copies)]
    footer["arrays"] = [
        _array("a", ("Float64",), [1] * len(dims), dims, _table([], len(dims)), None, ("U16", []))
    ]
    data = bytearray(fmt.encode_footer(footer))
    root = len(data) - 12 - 96
    (rel, _) = struct.unpack_from("<qQ", data, root + 24)
    return alias_strings(data, root + 24 + rel + 56, copies + 1)


def test_aliased_dimension_names_are_refused_before_they_are_decoded(tmp_path: Path) -> None:
    data = _aliased_dimension_names(300, 100_000)
    assert len(data) < 130_000
    for compiled in (True, False):
        with pytest.raises(fmt.CorruptFooterError, match="alias"):
            fmt.decode_footer(memoryview(data)[:-12], compiled=compiled)
    p = tmp_path / "dims.af"
    p.write_bytes(data)
    err, peak = peak_allocation(lambda: ArrayFile.open(p))
    assert isinstance(err, CorruptArrayFileError), err
    assert "dims.af" in str(err)
    assert peak < 4 * len(data) + (1 << 20), f"refusing a {len(data)}-byte file took {peak}"
