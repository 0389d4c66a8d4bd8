"""The CRC-32 kernels: equal to zlib's at every length and alignment; constants derived."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafzarr import _posix

HEADER = Path(__file__).resolve().parents[1] / "_ext" / "_crc32_kernel.h"


def _xpow_mod(n: int) -> int:
    """x**n modulo the CRC-32 polynomial, over GF(2)."""
    v = 1
    for _ in range(n):
        v <<= 1
        if v & (1 << 32):
            v ^= 0x104C11DB7
    return v


def _fold_constant(n: int) -> int:
    reflected = int(f"{_xpow_mod(n):032b}"[::-1], 2)
    return reflected << 1


def test_folding_constants_derive_from_the_polynomial() -> None:
    if not HEADER.exists():
        pytest.skip("C sources not available")
    text = HEADER.read_text()
    # Every (distance + 32, distance - 32) pair the kernels use, by fold distance in bits.
    expected = {
        1024: (_fold_constant(1056), _fold_constant(992)),
        128: (_fold_constant(160), _fold_constant(96)),
        2048: (_fold_constant(2080), _fold_constant(2016)),
        512: (_fold_constant(544), _fold_constant(480)),
        384: (_fold_constant(416), _fold_constant(352)),
        256: (_fold_constant(288), _fold_constant(224)),
    }
    found = {int(h, 16) for h in re.findall(r"0x([0-9a-fA-F]{8,9})LL", text)}
    for distance, (lo, hi) in expected.items():
        assert lo in found and hi in found, f"fold-by-{distance} constants missing or wrong"


def test_kernel_name() -> None:
    assert _posix.CRC32_KERNEL in {
        "x86-64 vpclmulqdq avx-512 fold-by-16",
        "x86-64 pclmulqdq fold-by-8",
        "aarch64 crc32 instructions",
        "portable slice-by-8",
    }


@pytest.mark.parametrize(
    "n", [0, 1, 7, 15, 16, 17, 127, 128, 255, 256, 257, 511, 512, 513, 1023, 4096, 65536, 100_003]
)
@pytest.mark.parametrize("shift", [0, 1, 5])
def test_matches_zlib(n: int, shift: int) -> None:
    data = np.random.default_rng(n).integers(0, 256, n + shift, dtype=np.uint8).tobytes()[shift:]
    assert _posix.crc32(data) == zlib.crc32(data)
    assert _posix.crc32(data, 0xDEADBEEF) == zlib.crc32(data, 0xDEADBEEF)


@given(st.binary(max_size=5000), st.integers(0, 0xFFFFFFFF), st.integers(0, 5000))
def test_continuation(data: bytes, seed: int, cut: int) -> None:
    cut = min(cut, len(data))
    assert _posix.crc32(data[cut:], _posix.crc32(data[:cut], seed)) == zlib.crc32(data, seed)


def test_fused_copy(tmp_path: Path) -> None:
    p = tmp_path / "m.bin"
    p.write_bytes(bytes(1 << 20))
    data = np.random.default_rng(3).integers(0, 256, 700_001, dtype=np.uint8)
    with _posix.FileMapping(str(p), True, 1 << 21) as fm:
        for offset in (0, 3, 4096):
            assert fm.write_crc32(offset, data) == zlib.crc32(data.tobytes())
            assert fm.read(offset, data.size) == data.tobytes()
            assert fm.crc32(offset, data.size) == zlib.crc32(data.tobytes())
