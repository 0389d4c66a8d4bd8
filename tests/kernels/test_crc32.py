"""The CRC-32 kernels: equal to zlib's at every length and alignment; constants derived."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafzarr import _posix
from tests.helpers import ROOT

HEADER = ROOT / "_ext" / "_crc32_kernel.h"


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


# --- Large ranges: streaming stores and slices over threads ------------------------------
@pytest.fixture
def threads() -> Iterator[Callable[[int], None]]:
    """Set the copy thread count for one test; restore it afterwards."""
    previous = _posix.get_threads()
    yield lambda n: _posix.set_threads(n) and None
    _posix.set_threads(previous)


@given(st.binary(max_size=300), st.binary(max_size=300), st.integers(0, 0xFFFFFFFF))
def test_combine_matches_zlib(a: bytes, b: bytes, seed: int) -> None:
    assert _posix.crc32_combine(zlib.crc32(a, seed), zlib.crc32(b), len(b)) == zlib.crc32(
        a + b, seed
    )


def _reflect32(v: int) -> int:
    return int(f"{v:032b}"[::-1], 2)


def _polymulmod(a: int, b: int) -> int:
    """a(x) * b(x) modulo the CRC-32 polynomial, on plain (unreflected) integers."""
    product = 0
    while b:
        if b & 1:
            product ^= a
        b >>= 1
        a <<= 1
        if a & (1 << 32):
            a ^= 0x104C11DB7
    return product


def _combine_reference(crc_a: int, crc_b: int, len_b: int) -> int:
    shift, base, n = 1, 1 << 8, len_b  # x^(8 len_b) by square-and-multiply
    while n:
        if n & 1:
            shift = _polymulmod(shift, base)
        base = _polymulmod(base, base)
        n >>= 1
    return _reflect32(_polymulmod(_reflect32(crc_a), shift)) ^ crc_b


def test_combine_over_long_distances() -> None:
    # Lengths far beyond any buffer (x^(8n) comes from squaring, never from a loop over n),
    # against an independent polynomial implementation; the reference itself is checked
    # against zlib on a length that can be materialised.
    a = zlib.crc32(b"dafzarr")
    assert _combine_reference(a, zlib.crc32(bytes(4099)), 4099) == zlib.crc32(
        b"dafzarr" + bytes(4099)
    )
    for n in (1 << 20, (1 << 32) + 5, (1 << 40) + 12_345, (1 << 63) + 1):
        assert _posix.crc32_combine(a, 0x12345678, n) == _combine_reference(a, 0x12345678, n)


def test_thread_count_bounds(threads: Callable[[int], None]) -> None:
    for bad in (0, -1, 17):
        with pytest.raises(ValueError, match="thread count"):
            _posix.set_threads(bad)
    threads(3)
    assert _posix.get_threads() == 3


@pytest.mark.parametrize("nthreads", [1, 2, 3, 4])
def test_large_ranges_over_threads(
    tmp_path: Path, threads: Callable[[int], None], nthreads: int
) -> None:
    # 16 MiB slices: 50 MiB + odd bytes makes 3 slices of unequal length, and a misaligned
    # destination exercises the head before the streaming stores.
    threads(nthreads)
    n = (50 << 20) + 4_097
    data = np.random.default_rng(nthreads).integers(0, 256, n, dtype=np.uint8)
    expected = zlib.crc32(data)
    assert _posix.crc32(data) == expected
    assert _posix.crc32(data, 0xDEADBEEF) == zlib.crc32(data, 0xDEADBEEF)
    p = tmp_path / "big.bin"
    p.write_bytes(b"")
    with _posix.FileMapping(str(p), True, 64 << 20) as fm:
        fm.resize(n + 64)
        for offset in (0, 8, 61):
            assert fm.write_crc32(offset, data, 7) == zlib.crc32(data, 7)
            assert fm.crc32(offset, n) == expected
            view = np.frombuffer(fm.view(offset, n), dtype=np.uint8)
            assert np.array_equal(view, data)
            del view


@pytest.mark.parametrize("misalign", [0, 1, 8, 31, 63])
def test_streaming_copy_head_and_tail(tmp_path: Path, misalign: int) -> None:
    # From 1 MiB on, the copy uses cache-bypassing stores after aligning the destination.
    n = (1 << 20) + 333
    data = np.random.default_rng(misalign).integers(0, 256, n + 5, dtype=np.uint8)[5:]
    p = tmp_path / "s.bin"
    p.write_bytes(b"\xff" * (n + 200))
    with _posix.FileMapping(str(p), True, 4 << 20) as fm:
        assert fm.write_crc32(misalign, data) == zlib.crc32(data)
        assert fm.read(0, misalign) == b"\xff" * misalign  # nothing written before
        assert fm.read(misalign, n) == data.tobytes()
        assert fm.read(misalign + n, 200 - misalign) == b"\xff" * (200 - misalign)  # nor after


def test_thread_count_from_environment() -> None:
    code = "from dafzarr import _posix; print(_posix.get_threads())"
    for value, expected in (("3", "3"), ("99", "16"), ("0", "1")):
        env = {**os.environ, "DAFZARR_NUM_THREADS": value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected
    env = {**os.environ, "DAFZARR_NUM_THREADS": "many"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "DAFZARR_NUM_THREADS" in out.stderr


@pytest.mark.parametrize("n", [(1 << 14) - 1, 1 << 14, 700_001])
def test_large_writes_through_the_kernel(tmp_path: Path, n: int) -> None:
    # From 16 KiB on, write() and write_crc32() go through pwrite(2): the bytes must be
    # visible through the mapping and in the file at once, and nothing around them change.
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    p = tmp_path / "w.bin"
    p.write_bytes(b"\xee" * (2 * n + 100))
    with _posix.FileMapping(str(p), True, 4 << 20) as fm:
        fm.write(3, data)
        assert fm.write_crc32(n + 50, data, 11) == zlib.crc32(data, 11)
        assert fm.read(3, n) == data.tobytes() == fm.read(n + 50, n)
        raw = p.read_bytes()
        assert raw[3 : 3 + n] == data.tobytes() == raw[n + 50 : 2 * n + 50]
        assert raw[:3] == b"\xee" * 3 and raw[3 + n : n + 50] == b"\xee" * 47
        assert raw[2 * n + 50 :] == b"\xee" * 50
        with pytest.raises(IndexError, match="outside"):
            fm.write(n + 101, data)  # one byte past the mapped size: refused before any byte moves
        assert p.read_bytes() == raw
