"""The compiled sparse-index kernels: 1-based indices written and checked in one pass, and
the CSR to CSC conversion on threads."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse._sparsetools import csr_has_canonical_format

from dafzarr._indices import csr_to_csc, shift_checked, zero_based


def _random_canonical(
    rng: np.random.Generator, slices: int, bound: int, itype: str
) -> tuple[np.ndarray, np.ndarray]:
    counts = rng.integers(0, min(bound, 9) + 1, size=slices)
    indptr = np.zeros(slices + 1, itype)
    np.cumsum(counts, out=indptr[1:])
    parts = [np.sort(rng.choice(bound, size=int(c), replace=False)) for c in counts]
    indices = np.concatenate(parts).astype(itype) if parts else np.empty(0, itype)
    return indices, indptr


def _canonical_and_in_range(indices: np.ndarray, indptr: np.ndarray, bound: int) -> bool:
    """What the kernel answers for the whole array, from scipy's scan and numpy."""
    n = len(indptr) - 1
    return (
        bool(csr_has_canonical_format(n, indptr, indices))
        and (indices.size == 0 or (int(indices.min()) >= 0 and int(indices.max()) < bound))
        and int(indptr[-1]) == indices.size
    )


@pytest.mark.parametrize("itype", ["int32", "int64"])
@pytest.mark.parametrize("otype", ["uint8", "int16", "uint32", "int64"])
def test_canonical_indices_are_shifted_exactly_in_any_range(itype: str, otype: str) -> None:
    rng = np.random.default_rng(7)
    indices, indptr = _random_canonical(rng, 50, 100, itype)
    n = indices.size
    for lo, hi in [(0, n), (0, 0), (3, 4), (n // 3, 2 * n // 3), (n - 1, n), (5, n)]:
        dst = np.full(hi - lo + 2, 99, otype)
        assert shift_checked(indices, dst, indptr, lo, hi, 100) == -1, (lo, hi)
        assert np.array_equal(dst[: hi - lo], indices[lo:hi] + 1)
        assert (dst[hi - lo :] == 99).all()  # nothing written past the range


@pytest.mark.parametrize("itype", ["int32", "int64"])
def test_every_fault_is_found_in_the_range_that_holds_it(itype: str) -> None:
    rng = np.random.default_rng(3)
    base, indptr = _random_canonical(rng, 40, 30, itype)
    n = base.size
    for pos in range(n):
        for fault in ("low", "high", "negative", "duplicate", "unsorted"):
            indices = base.copy()
            if fault == "low":
                indices[pos] = -1
            elif fault == "high":
                indices[pos] = 30
            elif fault == "negative":
                indices[pos] = np.iinfo(itype).min
            elif pos + 1 < n:  # the next index, which may start the next slice
                indices[pos + 1] = indices[pos] if fault == "duplicate" else indices[pos] - 1
            expected_ok = _canonical_and_in_range(indices, indptr, 30)
            whole = shift_checked(indices, np.empty(n, "u4"), indptr, 0, n, 30)
            assert (whole == -1) == expected_ok, (pos, fault)
            # Cut into two ranges anywhere: the fault is in one of them.
            for cut in (pos, pos + 1):
                cut = min(cut, n)
                a = shift_checked(indices, np.empty(n, "u4"), indptr, 0, cut, 30)
                b = shift_checked(indices, np.empty(n, "u4"), indptr, cut, n, 30)
                assert (a == -1 and b == -1) == expected_ok, (pos, fault, cut)
                assert a == -1 or 0 <= a < cut
                assert b == -1 or cut <= b < n


def test_indices_past_the_last_slice_are_a_fault() -> None:
    indices = np.array([0, 1, 2, 3], np.int32)
    indptr = np.array([0, 2, 3], np.int32)  # the last index belongs to no slice
    assert shift_checked(indices, np.empty(4, "u4"), indptr, 0, 3, 9) == -1
    assert shift_checked(indices, np.empty(4, "u4"), indptr, 0, 4, 9) == 3


def test_a_hostile_index_pointer_reads_nothing_out_of_bounds() -> None:
    """Only ``indptr`` directs the walk; even unchecked values stay inside the arrays."""
    rng = np.random.default_rng(11)
    indices = rng.integers(-5, 50, size=64).astype(np.int64)
    for indptr in ([0, 10**12, 5], [0, -3, 64], [0, 64, 2, 64], [7], [0, 2**62, -(2**62)]):
        ptr = np.array(indptr, np.int64)
        for lo, hi in ((0, 64), (10, 20), (64, 64)):
            r = shift_checked(indices, np.empty(64, "u8"), ptr, lo, hi, 40)
            assert r == -1 or lo <= r < hi


@pytest.mark.parametrize(
    "indptr", [[0, -3, 64], [5, 64], [0, 40, 30, 64], [0, 10, -1, 64], [0, 64, 2, 64]]
)
def test_a_hostile_index_pointer_reads_nothing_before_or_after_the_indices(
    indptr: list[int],
) -> None:
    """The indices sit between guard values; were any guard read, the answer would depend
    on it: the answers with low and with high guards must be the same."""
    ptr = np.array(indptr, np.int64)
    answers = set()
    for guard in (-(2**62), 2**62):
        buf = np.full(80, guard, np.int64)
        buf[8:72] = np.arange(64)  # canonical for any pointer that splits them
        indices = buf[8:72]
        for lo, hi in ((0, 64), (1, 64), (30, 50), (63, 64)):
            answers.add(
                (guard, lo, hi, shift_checked(indices, np.empty(64, "u8"), ptr, lo, hi, 100))
            )
    low = {(lo, hi, r) for g, lo, hi, r in answers if g < 0}
    high = {(lo, hi, r) for g, lo, hi, r in answers if g > 0}
    assert low == high


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.zeros(4, "i4"), np.zeros(4, "u4"), np.zeros(2, "i8"), 0, 4, 9), "both be int32"),
        ((np.zeros(4, "f4"), np.zeros(4, "u4"), np.zeros(2, "f4"), 0, 4, 9), "both be int32"),
        ((np.zeros(4, ">i4"), np.zeros(4, "u4"), np.zeros(2, ">i4"), 0, 4, 9), "both be int32"),
        ((np.zeros(4, "i4"), np.zeros(4, "u4"), np.zeros(0, "i4"), 0, 4, 9), "at least one"),
        ((np.zeros(4, "i4"), np.zeros(4, "u4"), np.zeros(2, "i4"), 2, 5, 9), "outside 4"),
        ((np.zeros(4, "i4"), np.zeros(4, "u4"), np.zeros(2, "i4"), 3, 2, 9), "outside 4"),
        ((np.zeros(4, "i4"), np.zeros(2, "u4"), np.zeros(2, "i4"), 0, 4, 9), "holds 2"),
        ((np.zeros(4, "i4"), np.zeros(4, "f2"), np.zeros(2, "i4"), 0, 4, 9), "integers, not"),
        ((np.zeros(4, "i4"), np.zeros(4, "f8"), np.zeros(2, "i4"), 0, 4, 9), "integers, not"),
        ((np.zeros(4, "i4"), np.zeros((2, 2), "u4"), np.zeros(2, "i4"), 0, 4, 9), "1-D"),
    ],
)
def test_bad_arguments_are_refused(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        shift_checked(*args)


# --- CSR to CSC on threads -------------------------------------------------------------------


def _random_csr(
    rng: np.random.Generator, shape: tuple[int, int], nnz: int, dtype: str, canonical: bool
) -> sp.csr_matrix:
    rows = rng.integers(0, shape[0], size=nnz)
    cols = rng.integers(0, shape[1], size=nnz)
    data = (rng.random(nnz) * 100).astype(dtype)
    x = sp.csr_matrix(sp.coo_matrix((data, (rows, cols)), shape=shape))
    if not canonical:  # rows' indices reversed, and a duplicate where a row has two values
        x = sp.csr_matrix((x.data, x.indices, x.indptr), shape=shape, copy=True)
        for i in range(shape[0]):
            a, b = x.indptr[i], x.indptr[i + 1]
            x.indices[a:b] = x.indices[a:b][::-1].copy()
            if b - a >= 2:
                x.indices[a + 1] = x.indices[a]
    return x


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("itype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "float32", "float64", "uint64"])
@pytest.mark.parametrize("canonical", [True, False])
def test_csr_to_csc_matches_scipy(threads: int, itype: str, dtype: str, canonical: bool) -> None:
    rng = np.random.default_rng(threads * 7 + len(dtype))
    for shape, nnz in (((40, 30), 300), ((5, 200), 50), ((1, 1), 1), ((3, 4), 0), ((0, 5), 0)):
        x = _random_csr(rng, shape, nnz, dtype, canonical)
        want = x.tocsc()  # scipy keeps duplicates and sorts each column's rows
        indptr, indices, data = csr_to_csc(
            x.indptr.astype(itype), x.indices.astype(itype), x.data, shape[1], threads
        )
        assert indptr.dtype == indices.dtype == np.dtype(itype)
        assert data.dtype == x.data.dtype
        assert np.array_equal(indptr, want.indptr)
        assert np.array_equal(indices, want.indices)
        assert np.array_equal(data, want.data)


def test_csr_to_csc_moves_values_of_any_byte_order_as_they_are() -> None:
    x = _random_csr(np.random.default_rng(1), (20, 10), 60, "float64", True)
    want = x.tocsc()
    _, _, data = csr_to_csc(x.indptr, x.indices, x.data.astype(">f8"), 10, 2)
    assert data.dtype == np.dtype(">f8") and np.array_equal(data, want.data)


@pytest.mark.parametrize(
    ("indptr", "indices", "ncols", "match"),
    [
        ([0, 2, 3], [0, 5, 1], 5, "index 5 at 1 is outside 0..4"),
        ([0, 2, 3], [0, -1, 1], 5, "index -1 at 1 is outside"),
        ([1, 2, 3], [0, 1, 1], 5, "start at 0"),
        ([0, 2, 1], [0, 1, 1], 5, "never decrease"),
        ([0, 2, 4], [0, 1, 1], 5, "past the 3 indices"),
    ],
)
def test_csr_to_csc_refuses_arrays_that_are_no_csr_matrix(
    indptr: list[int], indices: list[int], ncols: int, match: str
) -> None:
    for threads in (1, 2):
        with pytest.raises(ValueError, match=match):
            csr_to_csc(
                np.array(indptr, np.int32),
                np.array(indices, np.int32),
                np.ones(len(indices), np.float32),
                ncols,
                threads,
            )


def test_csr_to_csc_refuses_what_it_has_no_kernel_for() -> None:
    ptr, idx = np.array([0, 1], np.int32), np.array([0], np.int32)
    with pytest.raises(ValueError, match="no kernel for values of type complex128"):
        csr_to_csc(ptr, idx, np.ones(1, complex), 1)
    with pytest.raises(ValueError, match="no kernel for values of type object"):
        csr_to_csc(ptr, idx, np.array(["a"], object), 1)
    with pytest.raises(ValueError, match="both be int32 or int64"):
        csr_to_csc(ptr.astype(np.int64), idx, np.ones(1), 1)
    with pytest.raises(ValueError, match="cannot index"):
        csr_to_csc(ptr, idx, np.ones(1), 1 << 31)


# --- 1-based indices read back -----------------------------------------------------------------


@pytest.mark.parametrize("stored", ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"])
@pytest.mark.parametrize("out", ["u4", "u8"])
@pytest.mark.parametrize("threads", [1, 3])
def test_zero_based_shifts_any_stored_type_in_one_pass(stored: str, out: str, threads: int) -> None:
    rng = np.random.default_rng(5)
    n = 3 << 20 if threads > 1 else 1000  # large enough to be split between threads
    top = min(np.iinfo(stored).max, 2**31 - 1)
    one_based = rng.integers(1, top, size=n, endpoint=True).astype(stored)
    one_based[n // 2] = top  # the largest, in a later thread's part
    dst = np.empty(n, out)
    got = zero_based(one_based.view(f"u{one_based.itemsize}"), dst, threads)
    assert got == top - 1
    assert np.array_equal(dst, one_based.astype(np.int64) - 1)


@pytest.mark.parametrize("stored", ["i4", "i8", "u4"])
def test_zero_based_reports_a_stored_zero_or_negative_past_every_bound(stored: str) -> None:
    for bad in (0, -1, np.iinfo(stored).min):
        if bad < 0 and stored.startswith("u"):
            continue
        one_based = np.array([3, 1, bad, 2], stored)
        got = zero_based(one_based.view(f"u{one_based.itemsize}"), np.empty(4, "u8"))
        assert got >= np.iinfo(np.int32).max, (stored, bad)


def test_zero_based_refuses_what_it_has_no_kernel_for() -> None:
    with pytest.raises(ValueError, match="no kernel"):
        zero_based(np.zeros(3, "i4"), np.empty(3, "u4"))
    with pytest.raises(ValueError, match="no kernel"):
        zero_based(np.zeros(3, "u4"), np.empty(3, "u2"))
    with pytest.raises(ValueError, match="one length"):
        zero_based(np.zeros(3, "u4"), np.empty(4, "u4"))
