"""The compiled kernels of groups of columns: each stored value of CSC arrays scattered into
the result of its row and its column's group, in one pass (two for deviations; the order
statistics and modes a block of rows at a time), with every pointer and index checked before
it is used as an address. Each result equals, bit for bit, the kernel of groups of rows run on
the transposed arrays: both add a result's values in the same order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from dafzarr._groupby import (
    group_extremes,
    group_modes,
    group_moments,
    group_quantiles,
    group_sums,
    scatter_extremes,
    scatter_modes,
    scatter_moments,
    scatter_quantiles,
    scatter_sums,
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
    dense = rng.integers(-3, 9, size=(rows, cols))
    dense[rng.random((rows, cols)) < 0.5] = 0
    m = sp.csc_matrix(dense.astype(dtype))
    if dtype.startswith("float"):
        m.data[::13] = np.nan
    m.indices = m.indices.astype(itype)
    m.indptr = m.indptr.astype(itype)
    return m


def _plain(m: sp.csc_matrix) -> sp.csc_matrix:
    return sp.csc_matrix(
        (m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)), shape=m.shape
    )


def _transposed(m: sp.csc_matrix) -> Any:
    t = sp.csc_matrix(_plain(m).T)
    t.sort_indices()
    return t.data, t.indices.astype(np.int64), t.indptr.astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("itype", "base"), [("int32", 0), ("int64", 0), ("uint32", 1), ("uint64", 1)]
)
def test_scatter_kernels_equal_the_row_kernels_on_the_transpose(
    dtype: str, itype: str, base: int
) -> None:
    rng = np.random.default_rng(4)
    m = _matrix(rng, 37, 61, dtype, itype)
    indices, indptr = m.indices + base, m.indptr + base
    groups = rng.integers(-1, 5, size=61).astype(np.int32)
    groups[groups == 4] = -1  # group 4 has no columns
    sizes = np.bincount(groups[groups >= 0], minlength=5).astype(np.int64)
    n = np.maximum(sizes, 1).astype(np.float64)
    data = m.data.view(np.uint8) if dtype == "bool" else m.data
    t_data, t_indices, t_indptr = _transposed(m)

    sums = np.zeros((5, 37))
    assert scatter_sums(m.data, indices, indptr, groups, sums, base) == -1
    want = np.zeros((37, 5))
    assert group_sums(t_data, t_indices, t_indptr, groups, want) == -1
    np.testing.assert_array_equal(sums, want.T)
    if dtype != "bool" and not dtype.startswith("float"):
        wrapped = np.zeros((5, 37), dtype=np.uint64)
        assert scatter_sums(data, indices, indptr, groups, wrapped, base) == -1
        dense = _plain(m).toarray().astype(np.int64).astype(np.uint64)
        for g in range(5):
            np.testing.assert_array_equal(wrapped[g], dense[:, groups == g].sum(axis=1))

    for high in (False, True):
        out, seen = np.zeros((5, 37), dtype=m.dtype), np.zeros((5, 37), dtype=np.uint32)
        assert scatter_extremes(m.data, indices, indptr, groups, out, seen, high, base) == -1
        w_out, w_seen = np.zeros((37, 5), dtype=m.dtype), np.zeros((37, 5), dtype=np.uint32)
        assert group_extremes(t_data, t_indices, t_indptr, groups, w_out, w_seen, high) == -1
        np.testing.assert_array_equal(out, w_out.T)
        np.testing.assert_array_equal(seen, w_seen.T)

    sums, devs = np.zeros((5, 37)), np.zeros((5, 37))
    seen = np.zeros((5, 37), dtype=np.uint32)
    assert scatter_moments(m.data, indices, indptr, groups, n, sums, devs, seen, True, base) == -1
    w_sums, w_devs = np.zeros((37, 5)), np.zeros((37, 5))
    w_seen = np.zeros((37, 5), dtype=np.uint32)
    assert group_moments(t_data, t_indices, t_indptr, groups, n, w_sums, w_devs, w_seen, True) == -1
    for got, want in ((sums, w_sums), (devs, w_devs), (seen, w_seen)):
        np.testing.assert_array_equal(got, want.T)

    for block in (1, 7, 65536):  # rows gathered a few (or one) at a time, or all at once
        for p in (0.0, 0.3, 0.5, 1.0):
            out = np.zeros((5, 37))
            assert (
                scatter_quantiles(m.data, indices, indptr, groups, sizes, p, out, base, block) == -1
            )
            want = np.zeros((37, 5))
            assert group_quantiles(t_data, t_indices, t_indptr, groups, sizes, p, want) == -1
            np.testing.assert_array_equal(out, want.T)
        modes = np.zeros((5, 37), dtype=m.dtype)
        assert scatter_modes(m.data, indices, indptr, groups, sizes, modes, base, block) == -1
        want = np.zeros((37, 5), dtype=m.dtype)
        assert group_modes(t_data, t_indices, t_indptr, groups, sizes, want) == -1
        np.testing.assert_array_equal(modes, want.T)
    assert np.isnan(out[4]).all() and (modes[4] == 0).all()


def _all(
    data: Any, indices: Any, indptr: Any, groups: Any, rows: int, count: int, base: int = 0
) -> list[int]:
    """What each kernel returns for the arrays (sizes: every column in a group)."""
    sizes = np.full(count, len(groups), dtype=np.int64)
    shape = (count, rows)
    return [
        scatter_sums(data, indices, indptr, groups, np.zeros(shape), base),
        scatter_extremes(
            data,
            indices,
            indptr,
            groups,
            np.zeros(shape, data.dtype),
            np.zeros(shape, np.uint32),
            True,
            base,
        ),
        scatter_moments(
            data,
            indices,
            indptr,
            groups,
            np.ones(count),
            np.zeros(shape),
            np.zeros(shape),
            np.zeros(shape, np.uint32),
            True,
            base,
        ),
        scatter_quantiles(data, indices, indptr, groups, sizes, 0.5, np.zeros(shape), base),
        scatter_modes(data, indices, indptr, groups, sizes, np.zeros(shape, data.dtype), base),
    ]


def test_scatter_kernels_report_bad_pointers_and_indices() -> None:
    m = sp.csc_matrix(np.arange(1, 13, dtype=np.float64).reshape(4, 3))
    groups = np.zeros(3, dtype=np.int32)
    assert _all(m.data, m.indices, m.indptr, groups, 4, 1) == [-1] * 5
    for bad in (4, -1, 1_000_000):  # past the rows, negative, far past
        indices = m.indices.copy()
        indices[-1] = bad  # in the last column
        assert _all(m.data, indices, m.indptr, groups, 4, 1) == [2] * 5
    indptr = m.indptr.copy()
    indptr[2] = 10_000  # past the stored values
    assert _all(m.data, m.indices, indptr, groups, 4, 1) == [1] * 5
    indptr = m.indptr.copy()
    indptr[1] = indptr[2] + 1  # decreasing
    assert _all(m.data, m.indices, indptr, groups, 4, 1) == [1] * 5
    indptr = m.indptr.copy()
    indptr[0] = -1  # before the stored values
    assert _all(m.data, m.indices, indptr, groups, 4, 1) == [0] * 5
    stored = (m.indices + 1).astype(np.uint64)  # 1-based, as Daf stores them
    pointer = (m.indptr + 1).astype(np.uint64)
    assert _all(m.data, stored, pointer, groups, 4, 1, 1) == [-1] * 5
    for bad in (0, 2**64 - 1):  # a stored 0 is no 1-based index; past the int64 range
        stored[-1] = np.uint64(bad)
        assert _all(m.data, stored, pointer, groups, 4, 1, 1) == [2] * 5
    skipped = np.array([0, -1, 0], dtype=np.int32)  # a column in no group: its pointer is
    indices = m.indices.copy()  # checked, its values are not read
    indices[5] = 7  # in column 1
    assert _all(m.data, indices, m.indptr, skipped, 4, 1) == [-1] * 5
    indptr = m.indptr.copy()
    indptr[2] = 10_000
    assert _all(m.data, m.indices, indptr, skipped, 4, 1) == [1] * 5


def test_a_repeated_row_index_overfills_a_group() -> None:
    # Row 0 twice in one column: three values of row 0 in a group of two columns.
    data = np.array([1.0, 2.0, 3.0])
    indices = np.array([0, 0, 0], dtype=np.int32)
    indptr = np.array([0, 2, 3], dtype=np.int32)
    groups = np.zeros(2, dtype=np.int32)
    sizes = np.array([2], dtype=np.int64)
    assert scatter_quantiles(data, indices, indptr, groups, sizes, 0.5, np.zeros((1, 1))) == -2
    assert scatter_modes(data, indices, indptr, groups, sizes, np.zeros((1, 1))) == -2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"indices": np.zeros(3, dtype=np.int64)}, "int32, int64, uint32 or uint64"),
        ({"groups": np.zeros(4, dtype=np.int32)}, "one entry per column"),
        ({"groups": np.zeros(3, dtype=np.int64)}, "groups must be contiguous int32"),
        ({"groups": np.array([0, 1, 0], dtype=np.int32)}, "groups must be below 1"),
        ({"out": np.zeros(4)}, "must be 2-D"),
        ({"out": np.zeros((1, 4), dtype=np.float32)}, "float64 or uint64"),
        ({"out": np.zeros((1, 4), dtype=np.uint64)}, "no integer sums"),
        ({"data": np.zeros(3, dtype=np.complex128)}, "no reductions of complex128"),
        ({"data": np.zeros(4)}, "indices for"),
        ({"base": 2}, "base must be 0 or 1"),
    ],
)
def test_scatter_arguments_are_checked(change: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "data": np.ones(3),
        "indices": np.array([0, 1, 2], dtype=np.int32),
        "indptr": np.array([0, 1, 2, 3], dtype=np.int32),
        "groups": np.zeros(3, dtype=np.int32),
        "out": np.zeros((1, 4)),
        "base": 0,
    }
    args.update(change)
    with pytest.raises(ValueError, match=message):
        scatter_sums(
            args["data"], args["indices"], args["indptr"], args["groups"], args["out"], args["base"]
        )


def test_ordered_scatter_arguments_are_checked() -> None:
    data, indices = np.ones(3), np.array([0, 1, 2], dtype=np.int32)
    indptr, groups = np.array([0, 1, 2, 3], dtype=np.int32), np.zeros(3, dtype=np.int32)
    sizes = np.array([3], dtype=np.int64)
    with pytest.raises(ValueError, match="sizes must be int64"):
        scatter_modes(data, indices, indptr, groups, np.ones(1), np.zeros((1, 4)))
    with pytest.raises(ValueError, match="p must be in"):
        scatter_quantiles(data, indices, indptr, groups, sizes, 1.5, np.zeros((1, 4)))
    with pytest.raises(ValueError, match="block must be positive"):
        scatter_quantiles(data, indices, indptr, groups, sizes, 0.5, np.zeros((1, 4)), 0, 0)
    with pytest.raises(ValueError, match="no modes of float64 into float32"):
        scatter_modes(data, indices, indptr, groups, sizes, np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="sizes must be float64"):
        scatter_moments(
            data,
            indices,
            indptr,
            groups,
            sizes,
            np.zeros((1, 4)),
            np.zeros((1, 4)),
            np.zeros((1, 4), np.uint32),
            True,
        )
    with pytest.raises(ValueError, match="seen must be uint32"):
        scatter_extremes(data, indices, indptr, groups, np.zeros((1, 4)), np.zeros((1, 4)), True)


@pytest.mark.parametrize("block", [1, 5, 65536])
def test_rows_out_of_order_within_a_column_give_the_same_order_statistics(block: int) -> None:
    # Blocks read each column on from where the last one stopped when its rows are in
    # order; a column with its rows shuffled makes them read every column whole instead.
    rng = np.random.default_rng(8)
    m = _matrix(rng, 40, 25, "float32", "int32")
    groups = rng.integers(-1, 3, size=25).astype(np.int32)
    sizes = np.bincount(groups[groups >= 0], minlength=3).astype(np.int64)
    shuffled_indices, shuffled_data = m.indices.copy(), m.data.copy()
    for j in range(25):
        start, stop = m.indptr[j], m.indptr[j + 1]
        order = start + rng.permutation(stop - start)
        shuffled_indices[start:stop] = m.indices[order]
        shuffled_data[start:stop] = m.data[order]
    assert not all(
        np.all(np.diff(shuffled_indices[m.indptr[j] : m.indptr[j + 1]]) >= 0) for j in range(25)
    )
    for data, indices in ((m.data, m.indices), (shuffled_data, shuffled_indices)):
        quantiles, modes = np.zeros((3, 40)), np.zeros((3, 40), dtype=np.float32)
        assert (
            scatter_quantiles(data, indices, m.indptr, groups, sizes, 0.7, quantiles, 0, block)
            == -1
        )
        assert scatter_modes(data, indices, m.indptr, groups, sizes, modes, 0, block) == -1
        if data is m.data:
            first = (quantiles, modes)
        else:
            np.testing.assert_array_equal(quantiles, first[0])
            np.testing.assert_array_equal(modes, first[1])
