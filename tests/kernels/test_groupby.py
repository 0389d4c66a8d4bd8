"""The compiled group-sum kernel: the rows of a CSC matrix summed by group, column by column,
in one pass over its stored values (on threads), with every pointer and index checked before
it is used as an address."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dafzarr._groupby import (
    group_extremes,
    group_modes,
    group_moments,
    group_quantiles,
    group_sums,
)

DTYPES = [
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
]


def _matrix(
    rng: np.random.Generator, rows: int, cols: int, dtype: str, itype: str
) -> sp.csc_matrix:
    dense = rng.integers(-3, 120, size=(rows, cols))
    dense[rng.random((rows, cols)) < 0.6] = 0
    m = sp.csc_matrix(dense.astype(dtype))
    m.indices = m.indices.astype(itype)
    m.indptr = m.indptr.astype(itype)
    return m


def _reference(m: sp.csc_matrix, groups: np.ndarray, count: int, wrap: bool) -> np.ndarray:
    dense = m.toarray()
    out = np.zeros((count, m.shape[1]), dtype=np.uint64 if wrap else np.float64)
    for g in range(count):
        part = dense[groups == g]
        if wrap:  # modular sums, as the kernel's unsigned 64-bit accumulators
            out[g] = part.astype(np.int64).astype(np.uint64).sum(axis=0, dtype=np.uint64)
        else:
            out[g] = part.astype(np.float64).sum(axis=0)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", ["int32", "int64"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sums_match_numpy(dtype: str, itype: str, threads: int) -> None:
    rng = np.random.default_rng(3)
    m = _matrix(rng, 60, 41, dtype, itype)
    groups = rng.integers(-1, 5, size=60).astype(np.int32)  # -1: in no group
    kinds = ["float"] + (["integer"] if dtype[0] in "iub" else [])
    for kind in kinds:
        out = np.zeros((41, 5), dtype=np.uint64 if kind == "integer" else np.float64)
        data = m.data.view(np.uint8) if dtype == "bool" and kind == "integer" else m.data
        assert group_sums(data, m.indices, m.indptr, groups, out, threads) == -1
        np.testing.assert_array_equal(out.T, _reference(m, groups, 5, kind == "integer"))


@pytest.mark.parametrize("itype", ["uint32", "uint64", "int64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_one_based_stored_indices(itype: str, threads: int) -> None:
    rng = np.random.default_rng(9)
    m = _matrix(rng, 50, 30, "float32", "int64")
    groups = rng.integers(-1, 4, size=50).astype(np.int32)
    out = np.zeros((30, 4))
    assert (
        group_sums(
            m.data,
            (m.indices + 1).astype(itype),
            (m.indptr + 1).astype(itype),
            groups,
            out,
            threads,
            1,
        )
        == -1
    )
    np.testing.assert_array_equal(out.T, _reference(m, groups, 4, False))
    stored = (m.indices + 1).astype(itype)
    stored[-1] = 0  # a stored 0 is no 1-based index
    assert (
        group_sums(
            m.data, stored, (m.indptr + 1).astype(itype), groups, np.zeros((30, 4)), threads, 1
        )
        == 29
    )
    if itype == "uint64":  # past the int64 range
        stored[-1] = np.uint64(2**64 - 1)
        assert (
            group_sums(
                m.data, stored, (m.indptr + 1).astype(itype), groups, np.zeros((30, 4)), threads, 1
            )
            == 29
        )


def test_threads_split_large_matrices_by_stored_values() -> None:
    # Enough stored values (over 2**20 per thread) that two threads each take a share.
    rng = np.random.default_rng(5)
    m = sp.random(3000, 800, density=0.9, format="csc", dtype=np.float32, random_state=rng)
    groups = rng.integers(0, 7, size=3000).astype(np.int32)
    one = np.zeros((800, 7))
    two = np.zeros((800, 7))
    assert group_sums(m.data, m.indices, m.indptr, groups, one, 1) == -1
    assert group_sums(m.data, m.indices, m.indptr, groups, two, 2) == -1
    np.testing.assert_allclose(one, two, rtol=1e-12)
    np.testing.assert_allclose(one.T, _reference(m, groups, 7, False), rtol=1e-9)


def test_integer_sums_wrap_as_the_narrow_type() -> None:
    m = sp.csc_matrix(np.array([[2**31 - 1], [5], [-(2**31)], [-7]], dtype=np.int64))
    out = np.zeros((1, 2), dtype=np.uint64)
    groups = np.array([0, 0, 1, 1], dtype=np.int32)
    assert (
        group_sums(m.data, m.indices.astype(np.int32), m.indptr.astype(np.int32), groups, out, 1)
        == -1
    )
    # 2**31 - 1 + 5 and -2**31 - 7 wrap in Int32 as numpy's Int32 sums do
    assert out.view(np.int64).astype(np.int32).tolist() == [[-(2**31) + 4, 2**31 - 7]]


def test_out_of_range_pointer_or_index_is_reported_not_used() -> None:
    m = sp.csc_matrix(np.arange(12, dtype=np.float64).reshape(4, 3))
    groups = np.zeros(4, dtype=np.int32)
    indices = m.indices.copy()
    indices[-1] = 4  # row 4 of a 4-row matrix, in the last column
    out = np.zeros((3, 1))
    assert group_sums(m.data, indices, m.indptr, groups, out, 1) == 2
    indices[-1] = -1
    assert group_sums(m.data, indices, m.indptr, groups, np.zeros((3, 1)), 1) == 2
    indptr = m.indptr.copy()
    indptr[2] = 10_000  # past the stored values
    assert group_sums(m.data, m.indices, indptr, groups, np.zeros((3, 1)), 1) == 1
    indptr = m.indptr.copy()
    indptr[1] = indptr[2] + 1  # decreasing
    assert group_sums(m.data, m.indices, indptr, groups, np.zeros((3, 1)), 1) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"indices": np.zeros(3, dtype=np.int64)}, "int32, int64, uint32 or uint64"),
        (
            {"indices": np.zeros(3, dtype=np.int16), "indptr": np.zeros(4, dtype=np.int16)},
            "int32, int64",
        ),
        ({"groups": np.zeros(4, dtype=np.int64)}, "groups must be contiguous int32"),
        ({"groups": np.array([0, 1, 0, 0], dtype=np.int32)}, "groups must be below 1"),
        ({"out": np.zeros((2, 1))}, "one row per column"),
        ({"out": np.zeros((3, 1), dtype=np.float32)}, "float64 or uint64"),
        ({"out": np.zeros((3, 1), dtype=np.uint64), "data": np.zeros(3)}, "no integer sums"),
        ({"data": np.zeros(3, dtype=np.complex128)}, "no float sums"),
        ({"data": np.zeros(4)}, "indices for"),
    ],
)
def test_arguments_are_checked(change: dict[str, np.ndarray], message: str) -> None:
    args = {
        "data": np.ones(3),
        "indices": np.array([0, 1, 2], dtype=np.int32),
        "indptr": np.array([0, 1, 2, 3], dtype=np.int32),
        "groups": np.zeros(4, dtype=np.int32),
        "out": np.zeros((3, 1)),
    }
    args.update(change)
    with pytest.raises(ValueError, match=message):
        group_sums(args["data"], args["indices"], args["indptr"], args["groups"], args["out"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("high", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_extremes_and_counts_of_stored_values(dtype: str, high: bool, threads: int) -> None:
    rng = np.random.default_rng(4)
    m = _matrix(rng, 60, 41, dtype, "int32")
    if dtype.startswith("float"):
        m.data[::13] = np.nan  # a NaN wins, as numpy's maximum and minimum
    groups = rng.integers(-1, 5, size=60).astype(np.int32)
    out = np.zeros((41, 5), dtype=m.dtype)
    seen = np.zeros((41, 5), dtype=np.uint32)
    assert group_extremes(m.data, m.indices, m.indptr, groups, out, seen, high, threads) == -1
    ufunc = np.maximum if high else np.minimum
    for j in range(41):
        start, stop = m.indptr[j], m.indptr[j + 1]
        for g in range(5):
            mine = m.data[start:stop][groups[m.indices[start:stop]] == g]
            assert seen[j, g] == mine.size
            if mine.size:
                np.testing.assert_array_equal(out[j, g], ufunc.reduce(mine))


def test_extremes_refuse_a_mismatched_output() -> None:
    m = sp.csc_matrix(np.eye(3))
    groups = np.zeros(3, dtype=np.int32)
    with pytest.raises(ValueError, match="no extremes of float64 into float32"):
        group_extremes(
            m.data,
            m.indices,
            m.indptr,
            groups,
            np.zeros((3, 1), np.float32),
            np.zeros((3, 1), np.uint32),
            True,
        )
    with pytest.raises(ValueError, match="seen must be uint32"):
        group_extremes(
            m.data, m.indices, m.indptr, groups, np.zeros((3, 1)), np.zeros((3, 1), np.int64), True
        )
    indices = m.indices.copy()
    indices[1] = 7
    assert (
        group_extremes(
            m.data, indices, m.indptr, groups, np.zeros((3, 1)), np.zeros((3, 1), np.uint32), False
        )
        == 1
    )


def _columns_of_groups(m: sp.csc_matrix, groups: np.ndarray, count: int) -> list[list[np.ndarray]]:
    """Each group's values of each column, implicit zeros included (dense, in row order)."""
    dense = m.toarray()
    return [[dense[groups == g, j] for g in range(count)] for j in range(m.shape[1])]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_moments_quantiles_and_modes_of_groups(dtype: str, threads: int) -> None:
    rng = np.random.default_rng(6)
    m = _matrix(rng, 70, 23, dtype, "int64")
    m.data[::5] = m.data[0]  # ties
    if dtype.startswith("float"):
        m.data[::11] = np.nan
    groups = rng.integers(-1, 4, size=70).astype(np.int32)
    groups[groups == 3] = -1  # group 3 has no rows
    rows = np.bincount(groups[groups >= 0], minlength=4).astype(np.int64)
    n = np.maximum(rows, 1).astype(np.float64)
    sums, devs = np.zeros((23, 4)), np.zeros((23, 4))
    seen = np.zeros((23, 4), dtype=np.uint32)
    assert (
        group_moments(m.data, m.indices, m.indptr, groups, n, sums, devs, seen, True, threads) == -1
    )
    medians = np.zeros((23, 4))
    assert group_quantiles(m.data, m.indices, m.indptr, groups, rows, 0.5, medians, threads) == -1
    modes = np.zeros((23, 4), dtype=m.dtype)
    assert group_modes(m.data, m.indices, m.indptr, groups, rows, modes, threads) == -1
    for j, column in enumerate(_columns_of_groups(m, groups, 4)):
        for g, values in enumerate(column[:3]):
            stored = values[values != 0].astype(np.float64)
            assert seen[j, g] == np.count_nonzero(m[:, j].toarray()[groups == g])
            np.testing.assert_allclose(sums[j, g], stored.sum())
            mean = sums[j, g] / n[g]
            np.testing.assert_allclose(devs[j, g], ((stored - mean) ** 2).sum(), rtol=1e-9)
            ordered = np.sort(values.astype(np.float64))  # NaNs last, as order statistics
            h = (len(ordered) - 1) * 0.5
            low, high = int(np.floor(h)), min(int(np.floor(h)) + 1, len(ordered) - 1)
            median = ordered[low] + (h - low) * (ordered[high] - ordered[low])
            np.testing.assert_array_equal(medians[j, g], median)
            sparse_order = np.concatenate([values[values != 0], values[values == 0]])
            uniques, inverse, counts = np.unique(
                sparse_order, return_inverse=True, return_counts=True
            )
            tied = np.flatnonzero(counts == counts.max())
            reached = [np.flatnonzero(inverse == t)[counts.max() - 1] for t in tied]
            np.testing.assert_array_equal(modes[j, g], uniques[tied[int(np.argmin(reached))]])
        assert np.isnan(medians[j, 3]) and modes[j, 3] == 0 and seen[j, 3] == 0


def test_ordered_kernels_report_bad_indices_and_overfull_groups() -> None:
    m = sp.csc_matrix(np.arange(1, 13, dtype=np.float64).reshape(4, 3))
    groups = np.zeros(4, dtype=np.int32)
    rows = np.array([4], dtype=np.int64)
    indices = m.indices.copy()
    indices[-1] = 4  # past the rows, in the last column
    for bad in (indices, m.indices):  # bad index; then more values than the group's rows
        sizes = rows if bad is indices else np.array([2], dtype=np.int64)
        assert group_quantiles(m.data, bad, m.indptr, groups, sizes, 0.5, np.zeros((3, 1))) == (
            2 if bad is indices else 0
        )
        assert group_modes(m.data, bad, m.indptr, groups, sizes, np.zeros((3, 1))) == (
            2 if bad is indices else 0
        )
    assert (
        group_moments(
            m.data,
            indices,
            m.indptr,
            groups,
            np.ones(1),
            np.zeros((3, 1)),
            np.zeros((3, 1)),
            np.zeros((3, 1), np.uint32),
            True,
        )
        == 2
    )
    indptr = m.indptr.copy()
    indptr[2] = 10_000  # past the stored values
    assert group_quantiles(m.data, m.indices, indptr, groups, rows, 0.5, np.zeros((3, 1))) == 1
    assert group_modes(m.data, m.indices, indptr, groups, rows, np.zeros((3, 1))) == 1
    with pytest.raises(ValueError, match="sizes must be int64"):
        group_modes(m.data, m.indices, m.indptr, groups, np.ones(1), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="p must be in"):
        group_quantiles(m.data, m.indices, m.indptr, groups, rows, 1.5, np.zeros((3, 1)))
