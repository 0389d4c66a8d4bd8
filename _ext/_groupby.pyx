# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Sums, minima and maxima of the rows of a CSC matrix by group, in one pass over its stored
values, without the GIL.

A query ``M -/ g >- Sum`` adds up, for every group of rows and every column, the stored values
of the group's rows in that column. Over the CSC arrays that is one read of each stored value
and its row index: the value goes to ``out[column, group of the row]``. ``out`` is C-ordered
``columns x groups``, so each column's sums are a few adjacent accumulators (the transpose is
the Fortran-ordered ``groups x columns`` result), and the columns are split between threads
by their number of stored values, each thread writing only its own columns' rows of ``out``.
Nothing is sorted and no per-value array is made: the extra memory is ``out`` alone.

Float sums accumulate in float64; integer sums in unsigned 64-bit arithmetic, which wraps
exactly as the narrower integer result type does once cast to it. Minima and maxima keep the
input type and count the stored values of each group's column, so that the caller lets the
implicit zeros of a partly stored column take part. Every index pointer entry
and row index is checked before it is used as an address.
"""

import numpy as np

from ._threads import on_threads

from libc.stdint cimport (
    int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
)

ctypedef fused index_t:
    int32_t
    int64_t
    uint32_t
    uint64_t

ctypedef fused value_t:
    float
    double
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef Py_ssize_t _float_sums(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, double[:, ::1] out, Py_ssize_t c0, Py_ssize_t c1, int base,
) noexcept nogil:
    # out[j, groups[indices[k] - base]] += data[k] for the values k of columns c0:c1 (groups
    # < 0: in no group; base 1: 1-based pointer and indices); -1, or the first column whose
    # pointer or a row index is out of range.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef int32_t g
    cdef double* column
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base  # a value past int64 wraps negative: refused
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        column = &out[j, 0] if out.shape[1] else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:  # negative or past the rows
                return j
            g = group[r]
            if g >= 0:
                column[g] += <double>data[k]
    return -1


cdef Py_ssize_t _integer_sums(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, uint64_t[:, ::1] out, Py_ssize_t c0, Py_ssize_t c1, int base,
) noexcept nogil:
    # As _float_sums, in wrapping unsigned 64-bit arithmetic (signed values sign-extended).
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef int32_t g
    cdef uint64_t* column
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base  # a value past int64 wraps negative: refused
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        column = &out[j, 0] if out.shape[1] else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:  # negative or past the rows
                return j
            g = group[r]
            if g >= 0:
                column[g] += <uint64_t><int64_t>data[k]
    return -1


cdef Py_ssize_t _extremes(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, value_t[:, ::1] out, uint32_t[:, ::1] seen, Py_ssize_t c0,
    Py_ssize_t c1, int base, bint high,
) noexcept nogil:
    # The largest (``high``) or smallest stored value of each group in each column of c0:c1
    # into out, as numpy's maximum/minimum (a NaN wins), and how many there are into seen;
    # -1, or the first column whose pointer or a row index is out of range.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef int32_t g
    cdef value_t v, best
    cdef bint take
    cdef value_t* column
    cdef uint32_t* count
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        column = &out[j, 0] if out.shape[1] else NULL
        count = &seen[j, 0] if seen.shape[1] else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            g = group[r]
            if g < 0:
                continue
            v = data[k]
            best = column[g]
            if value_t is float or value_t is double:  # a NaN wins and stays
                take = count[g] == 0 or (best == best and (
                    v != v or (v > best if high else v < best)))
            else:
                take = count[g] == 0 or (v > best if high else v < best)
            if take:
                column[g] = v
            count[g] += 1
    return -1


def _extreme_part(const value_t[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, const int32_t[::1] groups, value_t[:, ::1] out,
                  uint32_t[:, ::1] seen, Py_ssize_t c0, Py_ssize_t c1, int base, bint high,
                  list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _extremes(data, indices, indptr, groups, out, seen, c0, c1, base, high)
    bad[t] = found


def _float_part(const value_t[::1] data, const index_t[::1] indices,
                const index_t[::1] indptr, const int32_t[::1] groups, double[:, ::1] out,
                Py_ssize_t c0, Py_ssize_t c1, int base, list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _float_sums(data, indices, indptr, groups, out, c0, c1, base)
    bad[t] = found


def _integer_part(const value_t[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, const int32_t[::1] groups, uint64_t[:, ::1] out,
                  Py_ssize_t c0, Py_ssize_t c1, int base, list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _integer_sums(data, indices, indptr, groups, out, c0, c1, base)
    bad[t] = found


_FLOATS = ("<f4", "<f8")
_INTEGERS = ("|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8")


def _check(data, indices, indptr, groups, out, int base):
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1 or groups.ndim != 1:
        raise ValueError("the kernels take 1-D data, indices, pointer and groups")
    if out.ndim != 2 or out.shape[0] != indptr.shape[0] - 1:
        raise ValueError(f"out must have one row per column ({indptr.shape[0] - 1})")
    if indices.dtype != indptr.dtype or indices.dtype.str not in ("<i4", "<i8", "<u4", "<u8"):
        raise ValueError(f"indices and index pointer must both be int32, int64, uint32 or "
                         f"uint64, not {indices.dtype} and {indptr.dtype}")
    if base not in (0, 1):
        raise ValueError(f"base must be 0 or 1, not {base}")
    if groups.dtype.str != "<i4" or not groups.flags.c_contiguous:
        raise ValueError(f"groups must be contiguous int32, not {groups.dtype}")
    if groups.shape[0] and int(groups.max()) >= out.shape[1]:
        raise ValueError(f"groups must be below {out.shape[1]}, the columns of out")
    if indices.shape[0] < data.shape[0]:
        raise ValueError(f"{indices.shape[0]} indices for {data.shape[0]} values")


def _on_columns(part, indptr, Py_ssize_t nc, int threads, int base, tuple head, tuple tail):
    """``part(*head, c0, c1, base, *tail, bad, t)`` on up to ``threads`` threads, the columns
    split where the stored values reach each thread's share; -1 or the first bad column."""
    nnz = max(0, int(indptr[nc]) - base) if nc else 0
    threads = max(1, min(threads, nnz // (1 << 20), nc))
    cuts = [0]
    if threads > 1:  # columns split where the stored values reach each thread's share
        shares = np.arange(1, threads, dtype=np.int64) * (nnz // threads) + base
        cuts += [min(int(c), nc) for c in np.searchsorted(indptr, shares)]
    cuts.append(nc)
    for t in range(1, len(cuts)):  # never overlapping, whatever the pointer holds
        cuts[t] = max(cuts[t], cuts[t - 1])
    bad = [-1] * threads
    on_threads(part, [(*head, cuts[t], cuts[t + 1], base, *tail, bad, t)
                      for t in range(threads)])
    found = [b for b in bad if b >= 0]
    return min(found) if found else -1


def group_sums(data, indices, indptr, groups, out, int threads=1, int base=0):
    """Add each stored value of the CSC arrays ``data`` (float32/64, or 1 to 8-byte
    integers; view Bool as uint8), ``indices`` and ``indptr`` (both of one type: int32,
    int64, uint32 or uint64; ``base`` 1: 1-based, as Daf stores them) to
    ``out[column, groups[row]]``. ``groups`` (int32, one per row) gives each row's group, -1
    for none; ``out`` is a C-ordered ``columns x groups`` float64 array (float data or
    integer data summed as floats) or uint64 array (integer data, wrapping sums), zeroed by
    the caller. Runs on up to ``threads`` threads, splitting the columns by stored values.

    Returns -1, or the first column whose pointer or a row index is out of range (``out`` is
    then only partly summed).
    """
    _check(data, indices, indptr, groups, out, base)
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
    if out.dtype.str == "<f8":
        if data.dtype.str not in _FLOATS + _INTEGERS:
            raise ValueError(f"no float sums of {data.dtype}")
        part = _float_part
    elif out.dtype.str == "<u8":
        if data.dtype.str not in _INTEGERS:
            raise ValueError(f"no integer sums of {data.dtype}")
        part = _integer_part
    else:
        raise ValueError(f"out must be float64 or uint64, not {out.dtype}")
    return _on_columns(part, indptr, out.shape[0], threads, base,
                       (data, indices, indptr, groups, out), ())


def group_extremes(data, indices, indptr, groups, out, seen, bint high, int threads=1,
                   int base=0):
    """The largest (``high``) or smallest stored value of each group of rows in each column
    of CSC arrays (as :func:`group_sums`) into ``out[column, group]`` (C-ordered, of the
    type of ``data``; a NaN wins, as numpy's ``maximum``/``minimum``), and the number of
    stored values seen into ``seen`` (uint32, same shape, zeroed by the caller): where it
    is below the group's size, implicit zeros take part too, which the caller applies.
    Returns -1, or the first column whose pointer or a row index is out of range.
    """
    _check(data, indices, indptr, groups, out, base)
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
        out = out.view(np.uint8)
    if data.dtype.str not in _FLOATS + _INTEGERS or out.dtype != data.dtype:
        raise ValueError(f"no extremes of {data.dtype} into {out.dtype}")
    if seen.dtype.str != "<u4" or seen.shape != out.shape:
        raise ValueError("seen must be uint32, of the shape of out")
    return _on_columns(_extreme_part, indptr, out.shape[0], threads, base,
                       (data, indices, indptr, groups, out, seen), (high,))
