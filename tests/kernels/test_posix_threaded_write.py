"""Stores with CRC split over threads: from 128 MiB, ``FileMapping.write_crc32`` copies and
checksums slices of the entry on several threads through the mapping (below, one pwrite(2)
path does it, which ``tests/kernels/test_crc32.py`` covers from 16 KiB to 50 MiB)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dafzarr import MmapZipStore, _posix


@pytest.fixture
def two_threads() -> Iterator[None]:
    previous = _posix.set_threads(2)
    try:
        yield
    finally:
        _posix.set_threads(previous)


@pytest.mark.usefixtures("two_threads")
def test_threaded_store_from_128_mib(tmp_path: Path) -> None:
    n = (128 << 20) + 4_097  # slices of unequal length; a misaligned destination below
    data = np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8)
    expected = zlib.crc32(data)
    p = tmp_path / "big.bin"
    p.write_bytes(b"")
    with _posix.FileMapping(str(p), True, 160 << 20) as fm:
        fm.resize(n + 64)
        for offset in (0, 61):
            assert fm.write_crc32(offset, data, 7) == zlib.crc32(data, 7)
            assert fm.crc32(offset, n) == expected
            view = np.frombuffer(fm.view(offset, n), dtype=np.uint8)
            assert np.array_equal(view, data)
            del view


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize("size", [64 << 20, (128 << 20) + 8])
def test_large_append_reads_back(tmp_path: Path, size: int) -> None:
    """A 64 MiB append takes the pwrite path, a larger one the threads: both read back."""
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    path = tmp_path / "a.zip"
    with MmapZipStore(path, "w") as store:
        store["x"] = data
    with MmapZipStore(path, "r") as store:
        got = np.frombuffer(store["x"], np.uint8)
        assert np.array_equal(got, data)
        del got
        assert store.verify() == []
