"""The compiled vlen-utf8 decoder: the strings numcodecs decodes, each distinct value one
``str`` object, every length checked against the chunk's end."""

from __future__ import annotations

import numpy as np
import pytest
from numcodecs import VLenUTF8

from dafzarr._vlen import decode_vlen_utf8, first_repeated_vlen_utf8


def _chunk(values: list[str]) -> np.ndarray:
    return np.frombuffer(bytes(VLenUTF8().encode(np.asarray(values, dtype=object))), np.uint8)


@pytest.mark.parametrize(
    "values",
    [
        ["T1", "T2", "T1", "", "T1", ""],
        ["é", "日本", "é", "𝄞", "", "日本"] * 50,
        [f"type{i % 7}" for i in range(10_000)],
        ["x"],
    ],
)
def test_the_strings_numcodecs_decodes_each_distinct_once(values: list[str]) -> None:
    got = decode_vlen_utf8(_chunk(values), len(values))
    assert got is not None and got.dtype == object
    assert got.tolist() == values
    firsts: dict[str, object] = {}
    for s in got:
        assert firsts.setdefault(s, s) is s  # one object per distinct value


def test_mostly_distinct_values_are_left_to_the_plain_decoder() -> None:
    names = [f"cell{i}" for i in range(20_000)]
    assert decode_vlen_utf8(_chunk(names), len(names)) is None
    few = [f"cell{i}" for i in range(3_000)]  # below the threshold: decoded here
    assert decode_vlen_utf8(_chunk(few), len(few)).tolist() == few
    pairs = [f"v{i // 2}" for i in range(140_000)]  # each twice: 70,000 distinct values
    assert decode_vlen_utf8(_chunk(pairs), len(pairs)) is None
    some = [f"v{i // 2}" for i in range(100_000)]  # 50,000 distinct values
    assert decode_vlen_utf8(_chunk(some), len(some)).tolist() == some


def test_a_chunk_of_no_strings() -> None:
    assert decode_vlen_utf8(np.zeros(4, np.uint8), 0).tolist() == []


@pytest.mark.parametrize("cut", [5, 9, 11])
def test_truncated_chunks_are_refused_not_read_past(cut: int) -> None:
    raw = _chunk(["abc", "defg"])  # 4 + (4 + 3) + (4 + 4) bytes
    with pytest.raises(ValueError, match="vlen-utf8"):
        decode_vlen_utf8(np.ascontiguousarray(raw[:cut]), 2)


def test_wrong_counts_and_huge_lengths_are_refused() -> None:
    raw = _chunk(["abc", "defg"])
    with pytest.raises(ValueError, match="does not hold 3 strings"):
        decode_vlen_utf8(raw, 3)
    hostile = raw.copy()
    hostile[4:8] = np.frombuffer(np.uint32(0xFFFFFFFF).tobytes(), np.uint8)
    with pytest.raises(ValueError, match="runs past the chunk's end"):
        decode_vlen_utf8(hostile, 2)


def test_invalid_utf8_raises_as_the_strict_decoder() -> None:
    raw = _chunk(["ab", "cd"]).copy()
    raw[8] = 0xFF
    with pytest.raises(UnicodeDecodeError):
        decode_vlen_utf8(raw, 2)


@pytest.mark.parametrize(
    ("values", "first"),
    [
        ([f"c{i}" for i in range(5000)], -1),
        ([f"c{i}" for i in range(5000)] + ["c17"], 5000),
        (["é", "e", "", "日本", "é"], 4),
        (["", "x", ""], 2),
        ([], -1),
    ],
)
def test_the_first_repeated_string_is_found_on_the_bytes(values: list[str], first: int) -> None:
    assert first_repeated_vlen_utf8(_chunk(values), len(values)) == first


def test_checking_for_repeats_refuses_what_decoding_refuses() -> None:
    chunk = _chunk(["ab", "cd"]).copy()
    with pytest.raises(ValueError, match="does not hold 3"):
        first_repeated_vlen_utf8(chunk, 3)
    with pytest.raises(ValueError, match="past the chunk's end"):
        first_repeated_vlen_utf8(chunk[:-1].copy(), 2)
    chunk[-1] = 0xFF
    with pytest.raises(UnicodeDecodeError):
        first_repeated_vlen_utf8(chunk, 2)
