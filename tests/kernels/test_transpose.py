"""The compiled transposition kernel that stores row-major matrices column-major."""

from __future__ import annotations

import numpy as np
import pytest

from dafzarr._transpose import transpose_columns

DTYPES = ["bool", "uint8", "int16", "float32", "int32", "float64", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (4, 4), (31, 33), (64, 65), (130, 7)])
def test_every_column_range_is_transposed_exactly(dtype: str, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    src = (rng.random(shape) * 200).astype(dtype)
    nr, nc = shape
    for lo, hi in [(0, nc), (nc // 3, nc), (0, nc // 2), (nc // 2, nc // 2)]:
        dst = np.full((hi - lo, nr), 7, dtype=dtype)
        transpose_columns(src, dst, lo, hi)
        assert np.array_equal(dst, src[:, lo:hi].T), (lo, hi)


def test_a_large_matrix_on_threads_matches_numpy() -> None:
    src = np.random.default_rng(0).random((1031, 2053), dtype=np.float32)
    dst = np.empty((2053, 1031), np.float32)
    from concurrent.futures import ThreadPoolExecutor

    bounds = [(lo, min(lo + 700, 2053)) for lo in range(0, 2053, 700)]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda b: transpose_columns(src, dst[b[0] : b[1]], *b), bounds))
    assert np.array_equal(dst, src.T)


@pytest.mark.parametrize(
    ("dst_shape", "lo", "hi", "dtype", "match"),
    [
        ((3, 5), 0, 4, "float32", "cannot hold"),
        ((4, 4), 0, 4, "float32", "cannot hold"),
        ((4, 5), 2, 6, "float32", "outside"),
        ((0, 5), 3, 2, "float32", "outside"),
        ((4, 5), 0, 4, "float64", "item sizes differ"),
    ],
)
def test_a_destination_that_does_not_fit_is_refused(
    dst_shape: tuple[int, int], lo: int, hi: int, dtype: str, match: str
) -> None:
    src = np.zeros((5, 4), np.float32)
    with pytest.raises(ValueError, match=match):
        transpose_columns(src, np.zeros(dst_shape, dtype), lo, hi)


def test_sixteen_byte_elements_have_no_kernel() -> None:
    src = np.zeros((2, 2), np.complex128)
    with pytest.raises(ValueError, match="16-byte"):
        transpose_columns(src, np.zeros((2, 2), np.complex128), 0, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 517), (515, 300), (33, 1031), (1, 600), (600, 1), (7, 9)])
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_split_the_columns_exactly(
    dtype: str, shape: tuple[int, int], threads: int
) -> None:
    # Wider than a panel (256 columns), with edges that are not multiples of 4 or 32.
    rng = np.random.default_rng(sum(shape) + threads)
    src = (rng.random(shape) * 200).astype(dtype)
    nr, nc = shape
    for lo, hi in [(0, nc), (nc // 3, nc), (min(5, nc), max(min(5, nc), nc - 3))]:
        dst = np.full((hi - lo, nr), 7, dtype=dtype)
        transpose_columns(src, dst, lo, hi, threads)
        assert np.array_equal(dst, src[:, lo:hi].T), (lo, hi)


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_refuse_a_destination_that_does_not_fit(threads: int) -> None:
    src = np.zeros((5, 600), np.float32)
    with pytest.raises(ValueError, match="cannot hold"):
        transpose_columns(src, np.zeros((600, 4), np.float32), 0, 600, threads)
    with pytest.raises(ValueError, match="at least 1"):
        transpose_columns(src, np.zeros((600, 5), np.float32), 0, 600, 0)
