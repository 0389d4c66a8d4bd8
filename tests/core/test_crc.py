"""dafzarr._core.crc, the one CRC-32 every reader and writer uses: zlib's value for every length,
continuation, buffer kind and thread count, split over threads from SPLIT_MIN on."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator

import numpy as np
import pytest

from dafzarr import _posix
from dafzarr._core import crc

_RNG = np.random.default_rng(20261125)
_BIG = _RNG.integers(0, 256, crc.SPLIT_MIN * 2 + 12_345, dtype=np.uint8)


@pytest.fixture(params=[1, 2, 3])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    old = _posix.set_threads(request.param)
    try:
        yield request.param
    finally:
        _posix.set_threads(old)


@pytest.mark.parametrize(
    "n",
    [
        0,
        1,
        7,
        4096,
        65_537,
        crc.SPLIT_MIN - 1,
        crc.SPLIT_MIN,
        crc.SPLIT_MIN + 1,
        crc.SPLIT_MIN * 2 + 12_345,
    ],
)
def test_equals_zlib_at_every_length(n: int, threads: int) -> None:
    data = _BIG[:n]
    assert crc.crc32(data) == zlib.crc32(data.data)
    assert crc.crc32(data, 0xDEADBEEF) == zlib.crc32(data.data, 0xDEADBEEF)


def test_continuation_across_the_split_size(threads: int) -> None:
    cut = crc.SPLIT_MIN + 3
    first = crc.crc32(_BIG[:cut], 99)
    assert crc.crc32(_BIG[cut:], first) == zlib.crc32(_BIG.data, 99)


def test_odd_offsets_and_buffer_kinds(threads: int) -> None:
    # A slice starting at an odd address, a 2-D array and a float view of the same bytes.
    odd = _BIG[3 : crc.SPLIT_MIN + 5_003]
    assert crc.crc32(odd) == zlib.crc32(odd.tobytes())
    square = _BIG[: 6_000 * 6_000].reshape(6_000, 6_000)
    assert crc.crc32(square) == zlib.crc32(square.tobytes())
    floats = _BIG[: crc.SPLIT_MIN + 8].view(np.float64)
    assert crc.crc32(floats) == zlib.crc32(floats.tobytes())
    assert crc.crc32(bytearray(b"dafzarr")) == zlib.crc32(b"dafzarr")


def test_strided_buffers_are_refused() -> None:
    with pytest.raises((ValueError, BufferError)):
        crc.crc32(_BIG[: crc.SPLIT_MIN * 2 : 2])
    with pytest.raises((ValueError, BufferError)):
        crc.crc32(_BIG[:4096:2])


def test_mapped_ranges(tmp_path: object, threads: int) -> None:
    path = os.path.join(str(tmp_path), "f.bin")
    with open(path, "wb") as f:
        f.write(_BIG.data)
    fm = _posix.FileMapping(path, False)
    try:
        for off, n in [(0, 0), (1, 4095), (5, crc.SPLIT_MIN + 1), (0, _BIG.size)]:
            assert crc.mapped_crc32(fm, off, n) == zlib.crc32(_BIG[off : off + n].data), (off, n)
        assert fm.exports == 0  # every view released: the mapping can be closed
        with pytest.raises((ValueError, IndexError, OSError)):
            crc.mapped_crc32(fm, _BIG.size - 10, 11)
    finally:
        fm.close()


def test_only_the_crc_module_computes_crc32() -> None:
    """Every CRC-32 goes through ``dafzarr._core.crc`` (or the fused copy of ``FileMapping``)."""
    import re
    from pathlib import Path

    import dafzarr

    root = Path(dafzarr.__file__).parent
    pattern = re.compile(r"zlib\.crc32|isal_zlib|_posix\.crc32|\bfm\.crc32\(|import .*\bcrc32\b")
    offenders = [
        f"{p.relative_to(root)}:{i}: {line.strip()}"
        for p in sorted(root.rglob("*.py"))
        if p.relative_to(root).as_posix() != "_core/crc.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line) and not re.search(r"from \.+(_core\.)?crc import", line)
    ]
    assert not offenders, "\n".join(offenders)
