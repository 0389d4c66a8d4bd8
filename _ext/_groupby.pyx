# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Reductions of the rows of a CSC matrix by group, column by column over its stored values,
without the GIL: sums, minima and maxima, moments, quantiles and modes.

A query ``M -/ g >- Sum`` adds up, for every group of rows and every column, the stored values
of the group's rows in that column. Over the CSC arrays that is one read of each stored value
and its row index: the value goes to ``out[column, group of the row]``. ``out`` is C-ordered
``columns x groups``, so each column's sums are a few adjacent accumulators (the transpose is
the Fortran-ordered ``groups x columns`` result), and the columns are split between threads
by their number of stored values, each thread writing only its own columns' rows of ``out``.
Nothing is sorted and no per-value array is made: the extra memory is ``out`` alone.

Float sums accumulate in float64; integer sums in unsigned 64-bit arithmetic, which wraps
exactly as the narrower integer result type does once cast to it (one loop, the accumulator
type fused). Minima and maxima keep the input type and count the stored values of each
group's column, so that the caller lets the implicit zeros of a partly stored column take
part. Moments (``Var``, ``Std``) add up each group's stored values and their number, then, in
a second pass over the same column while it is in the cache, the squared deviations from the
group's mean: the sums of the two-pass formula, in the order the values are stored. Quantiles
and modes gather one column's values by group (a counting sort of their positions, in row
order) into per-thread buffers of the longest column and sort each group's values there: the
extra memory is the output plus one column. Every index pointer entry and row index is
checked before it is used as an address.

The groups of columns (``M |/ g >| Sum``, and ``M >| Sum``: all columns one group) read the
same CSC arrays the other way round: each stored value goes to ``out[group of its column,
row]`` (``scatter_*``, on one thread, as columns of one group share a row of ``out``).
Moments take a second pass over all the values; quantiles and modes first count the stored
values of each row, then gather a block of rows at a time (one pass over the row indices per
block, each column read on from where the last block left it when its rows are in order)
and sort each row's values by group: the extra memory is the output, a few arrays of one
entry per row or column and the block.
"""

import numpy as np

from ._core.threads import on_threads

from libc.math cimport NAN, floor
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


ctypedef fused acc_t:
    double
    uint64_t


cdef Py_ssize_t _sums(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, acc_t[:, ::1] out, Py_ssize_t c0, Py_ssize_t c1, int base,
) noexcept nogil:
    # out[j, groups[indices[k] - base]] += data[k] for the values k of columns c0:c1 (groups
    # < 0: in no group; base 1: 1-based pointer and indices), in float64 or in wrapping
    # unsigned 64-bit arithmetic (signed values sign-extended); -1, or the first column whose
    # pointer or a row index is out of range.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef int32_t g
    cdef acc_t* column
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
                if acc_t is double:
                    column[g] += <double>data[k]
                else:
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


cdef Py_ssize_t _moments(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const double[::1] sizes, double[:, ::1] sums,
    double[:, ::1] devs, uint32_t[:, ::1] seen, Py_ssize_t c0, Py_ssize_t c1, int base,
    bint second,
) noexcept nogil:
    # For each column of c0:c1, the float64 sum and the number of the stored values of each
    # group, in the order they are stored; then (``second``) the sum of their squared
    # deviations from the group's mean, ``sums / sizes`` (a second pass over the column,
    # while it is in the cache); -1, or the first column with a pointer or row out of range.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef int32_t g
    cdef double d
    cdef double* total
    cdef double* dev
    cdef uint32_t* count
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        if sums.shape[1] == 0:
            continue
        total = &sums[j, 0]
        count = &seen[j, 0]
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            g = group[r]
            if g >= 0:
                total[g] += <double>data[k]
                count[g] += 1
        if second:
            dev = &devs[j, 0]
            for k in range(start, stop):
                g = group[<int64_t>indices[k] - base]  # checked by the first pass
                if g >= 0:
                    d = <double>data[k] - total[g] / sizes[g]
                    dev[g] += d * d
    return -1


cdef void _sort(value_t* a, int64_t n, int depth) noexcept nogil:
    # Sorts a[0:n] (no NaN) ascending: quicksort on the median of three, insertion sort of
    # short runs, heapsort past ``depth`` levels.
    cdef int64_t i, j, m
    cdef value_t p, x
    while n > 16:
        if depth == 0:
            _heapsort(a, n)
            return
        depth -= 1
        m = n // 2
        if a[m] < a[0]:
            a[m], a[0] = a[0], a[m]
        if a[n - 1] < a[0]:
            a[n - 1], a[0] = a[0], a[n - 1]
        if a[n - 1] < a[m]:
            a[n - 1], a[m] = a[m], a[n - 1]
        p = a[m]
        i = -1
        j = n
        while True:
            i += 1
            while a[i] < p:
                i += 1
            j -= 1
            while a[j] > p:
                j -= 1
            if i >= j:
                break
            a[i], a[j] = a[j], a[i]
        if j + 1 < n - j - 1:  # the shorter side by recursion, the longer by the loop
            _sort(a, j + 1, depth)
            a += j + 1
            n -= j + 1
        else:
            _sort(a + j + 1, n - j - 1, depth)
            n = j + 1
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef void _heapsort(value_t* a, int64_t n) noexcept nogil:
    cdef int64_t start, end, root, child
    start = n // 2
    end = n
    while end > 1:
        if start > 0:
            start -= 1
        else:
            end -= 1
            a[0], a[end] = a[end], a[0]
        root = start
        while 2 * root + 1 < end:
            child = 2 * root + 1
            if child + 1 < end and a[child] < a[child + 1]:
                child += 1
            if a[root] < a[child]:
                a[root], a[child] = a[child], a[root]
                root = child
            else:
                break


cdef int64_t _nans_last(value_t* a, int64_t n) noexcept nogil:
    # Moves the NaNs of a[0:n] to its end; the number of the others.
    cdef int64_t i = 0
    if value_t is float or value_t is double:
        while i < n:
            if a[i] != a[i]:
                n -= 1
                a[i], a[n] = a[n], a[i]
            else:
                i += 1
    return n


cdef int _depth(int64_t n) noexcept nogil:
    cdef int depth = 0
    while n > 0:
        depth += 2
        n >>= 1
    return depth


cdef Py_ssize_t _gathered(
    const index_t[::1] indices, const int32_t* group, uint64_t nr, int64_t start,
    int64_t stop, int base, int64_t* offsets, Py_ssize_t ng, int64_t* where,
) noexcept nogil:
    # The positions start:stop of one column's stored values grouped by the group of their
    # row, in row order within each group (a counting sort): group g's are
    # where[offsets[g - 1]:offsets[g]] (from 0 for g 0); 0, or -1 for a row out of range.
    cdef int64_t k, r
    cdef Py_ssize_t g
    cdef int32_t h
    for g in range(ng + 1):
        offsets[g] = 0
    for k in range(start, stop):
        r = <int64_t>indices[k] - base
        if <uint64_t>r >= nr:
            return -1
        h = group[r]
        if h >= 0:
            offsets[h + 1] += 1
    for g in range(ng):
        offsets[g + 1] += offsets[g]
    for k in range(start, stop):
        h = group[<int64_t>indices[k] - base]
        if h >= 0:
            where[offsets[h]] = k
            offsets[h] += 1
    return 0


cdef double _rank(const double* s, int64_t k, int64_t negatives, int64_t zeros) noexcept nogil:
    # The k-th smallest of the sorted stored values s and ``zeros`` zeros.
    if k < negatives:
        return s[k]
    if k < negatives + zeros:
        return 0.0
    return s[k - zeros]


cdef Py_ssize_t _quantiles(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const int64_t[::1] sizes, double p, double[:, ::1] out,
    double[::1] buffer, int64_t[::1] where, int64_t[::1] offsets, Py_ssize_t c0,
    Py_ssize_t c1, int base,
) noexcept nogil:
    # The ``p`` quantile (linear interpolation between order statistics, implicit zeros
    # placed by rank, NaNs last) of each group's values in each column of c0:c1, one column's
    # values at a time in ``buffer``; NaN for an empty group; -1, or the first column with a
    # pointer or row out of range or more stored values in a group than its rows.
    cdef int64_t i, j, start, stop, lo, hi, c, n, m, negatives, low, high
    cdef uint64_t nd = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef Py_ssize_t g, ng = out.shape[1]
    cdef double h, a, b
    cdef double* s
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > nd or stop - start > where.shape[0]:
            return j
        if ng == 0:
            continue
        if _gathered(indices, group, nr, start, stop, base, &offsets[0], ng, &where[0]) < 0:
            return j
        lo = 0
        for g in range(ng):
            hi = offsets[g]
            c = hi - lo
            n = sizes[g]
            s = &buffer[0]
            if c > n:
                return j
            if n == 0:
                out[j, g] = NAN
                lo = hi
                continue
            if c == 0:
                out[j, g] = 0.0
                continue
            for i in range(c):
                s[i] = <double>data[where[lo + i]]
            lo = hi
            m = _nans_last(s, c)
            _sort(s, m, _depth(m))
            negatives = 0
            while negatives < m and s[negatives] < 0:
                negatives += 1
            h = <double>(n - 1) * p
            low = <int64_t>floor(h)
            high = low + 1 if low + 1 < n - 1 else n - 1
            a = _rank(s, low, negatives, n - c)
            b = _rank(s, high, negatives, n - c)
            out[j, g] = a + (h - <double>low) * (b - a)
    return -1


cdef value_t _mode(const value_t[::1] data, const int64_t* where, int64_t c, int64_t zeros,
                   value_t* t, int64_t* run) noexcept nogil:
    # The most frequent of the c stored values data[where[0:c]] (in row order) followed by
    # ``zeros`` zeros; of values equally frequent, the one whose count reaches the most first
    # (NaNs count as one value, as numpy's unique has them).
    cdef int64_t i, e, m, count, best = 0, ntied = 0, nans, stored_zeros = 0, lo, hi, mid
    cdef bint zero_tied, nan_tied
    cdef value_t v
    for i in range(c):
        t[i] = data[where[i]]
    m = _nans_last(t, c)
    nans = c - m
    _sort(t, m, _depth(m))
    i = 0
    while i < m:  # the highest count of a non-zero value
        e = i + 1
        while e < m and t[e] == t[i]:
            e += 1
        if t[i] == 0:
            stored_zeros = e - i
        elif e - i > best:
            best = e - i
        i = e
    if stored_zeros + zeros > best:
        best = stored_zeros + zeros
    if nans > best:
        best = nans
    zero_tied = stored_zeros + zeros == best
    nan_tied = nans == best
    i = 0
    while i < m:  # the non-zero values of that count, kept sorted at the start of t
        e = i + 1
        while e < m and t[e] == t[i]:
            e += 1
        count = e - i
        v = t[i]
        if count == best and v != 0:
            t[ntied] = v
            run[ntied] = 0
            ntied += 1
        i = e
    if ntied + zero_tied + nan_tied == 1:
        if ntied:
            return t[0]
        if zero_tied:
            return 0
        return _a_nan(data, where, c)
    count = 0
    e = 0
    for i in range(c):  # the first value to reach ``best`` wins
        v = data[where[i]]
        if (value_t is float or value_t is double) and v != v:
            if nan_tied:
                e += 1
                if e == best:
                    return v
        elif v == 0:
            if zero_tied:
                count += 1
                if count == best:
                    return v
        else:
            lo = 0
            hi = ntied
            while lo < hi:
                mid = (lo + hi) // 2
                if t[mid] < v:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < ntied and t[lo] == v:
                run[lo] += 1
                if run[lo] == best:
                    return v
    return 0  # the implicit zeros, last


cdef value_t _a_nan(const value_t[::1] data, const int64_t* where, int64_t c) noexcept nogil:
    cdef int64_t i
    if value_t is float or value_t is double:
        for i in range(c):
            if data[where[i]] != data[where[i]]:
                return data[where[i]]
    return 0


cdef Py_ssize_t _modes(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const int64_t[::1] sizes, value_t[:, ::1] out,
    value_t[::1] buffer, int64_t[::1] run, int64_t[::1] where, int64_t[::1] offsets,
    Py_ssize_t c0, Py_ssize_t c1, int base,
) noexcept nogil:
    # The most frequent value of each group in each column of c0:c1 (as _mode), one column's
    # values at a time; 0 for an empty group; -1, or the first column with a pointer or row
    # out of range or more stored values in a group than its rows.
    cdef int64_t j, start, stop, lo, hi, c
    cdef uint64_t nd = <uint64_t>data.shape[0], nr = <uint64_t>groups.shape[0]
    cdef Py_ssize_t g, ng = out.shape[1]
    cdef const int32_t* group = &groups[0] if nr else NULL
    for j in range(c0, c1):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > nd or stop - start > where.shape[0]:
            return j
        if ng == 0:
            continue
        if _gathered(indices, group, nr, start, stop, base, &offsets[0], ng, &where[0]) < 0:
            return j
        lo = 0
        for g in range(ng):
            hi = offsets[g]
            c = hi - lo
            if c > sizes[g]:
                return j
            if c == 0:
                out[j, g] = 0
            else:
                out[j, g] = _mode(data, &where[lo], c, sizes[g] - c, &buffer[0], &run[0])
            lo = hi
    return -1


def _extreme_part(const value_t[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, const int32_t[::1] groups, value_t[:, ::1] out,
                  uint32_t[:, ::1] seen, Py_ssize_t c0, Py_ssize_t c1, int base, bint high,
                  list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _extremes(data, indices, indptr, groups, out, seen, c0, c1, base, high)
    bad[t] = found


def _sum_part(const value_t[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, const int32_t[::1] groups, acc_t[:, ::1] out,
              Py_ssize_t c0, Py_ssize_t c1, int base, list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _sums(data, indices, indptr, groups, out, c0, c1, base)
    bad[t] = found


def _moment_part(const value_t[::1] data, const index_t[::1] indices,
                 const index_t[::1] indptr, const int32_t[::1] groups,
                 const double[::1] sizes, double[:, ::1] sums, double[:, ::1] devs,
                 uint32_t[:, ::1] seen, Py_ssize_t c0, Py_ssize_t c1, int base, bint second,
                 list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    with nogil:
        found = _moments(data, indices, indptr, groups, sizes, sums, devs, seen, c0, c1, base,
                         second)
    bad[t] = found


def _quantile_part(const value_t[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const int32_t[::1] groups,
                   const int64_t[::1] sizes, double p, double[:, ::1] out, Py_ssize_t c0,
                   Py_ssize_t c1, int base, Py_ssize_t longest, list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    cdef double[::1] buffer = np.empty(longest, dtype=np.float64)
    cdef int64_t[::1] where = np.empty(longest, dtype=np.int64)
    cdef int64_t[::1] offsets = np.empty(out.shape[1] + 1, dtype=np.int64)
    with nogil:
        found = _quantiles(data, indices, indptr, groups, sizes, p, out, buffer, where,
                           offsets, c0, c1, base)
    bad[t] = found


def _mode_part(const value_t[::1] data, const index_t[::1] indices,
               const index_t[::1] indptr, const int32_t[::1] groups,
               const int64_t[::1] sizes, value_t[:, ::1] out, Py_ssize_t c0, Py_ssize_t c1,
               int base, Py_ssize_t longest, list bad, Py_ssize_t t):
    cdef Py_ssize_t found
    cdef value_t[::1] buffer = np.empty(longest, dtype=np.asarray(out).dtype)
    cdef int64_t[::1] run = np.empty(longest, dtype=np.int64)
    cdef int64_t[::1] where = np.empty(longest, dtype=np.int64)
    cdef int64_t[::1] offsets = np.empty(out.shape[1] + 1, dtype=np.int64)
    with nogil:
        found = _modes(data, indices, indptr, groups, sizes, out, buffer, run, where, offsets,
                       c0, c1, base)
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
    elif out.dtype.str == "<u8":
        if data.dtype.str not in _INTEGERS:
            raise ValueError(f"no integer sums of {data.dtype}")
    else:
        raise ValueError(f"out must be float64 or uint64, not {out.dtype}")
    return _on_columns(_sum_part, indptr, out.shape[0], threads, base,
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


def _sizes(sizes, out, dtype):
    if sizes.dtype != dtype or sizes.ndim != 1 or sizes.shape[0] < out.shape[1]:
        raise ValueError(f"sizes must be {np.dtype(dtype)}, one per group ({out.shape[1]})")
    return np.ascontiguousarray(sizes)


def _longest(indptr, Py_ssize_t n):
    """The most stored values of a column (at least 1; at most ``n``): the length of the
    per-column buffers. The kernels still check every column against it."""
    if indptr.shape[0] < 2:
        return 1
    lengths = np.diff(indptr.astype(np.int64))
    return int(max(1, min(int(lengths.max()), n)))


def group_moments(data, indices, indptr, groups, sizes, sums, devs, seen, bint second,
                  int threads=1, int base=0):
    """For each group of rows and each column of CSC arrays (as :func:`group_sums`), the
    float64 sum of the stored values into ``sums[column, group]`` and their number into
    ``seen`` (uint32), both zeroed by the caller; with ``second``, also the sum of the squared
    deviations of the stored values from ``sums / sizes`` (``sizes``: float64, one per group,
    at least 1) into ``devs`` (float64, zeroed), by a second pass over each column. Returns
    -1, or the first column whose pointer or a row index is out of range.
    """
    _check(data, indices, indptr, groups, sums, base)
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
    if data.dtype.str not in _FLOATS + _INTEGERS:
        raise ValueError(f"no moments of {data.dtype}")
    if sums.dtype.str != "<f8" or devs.dtype.str != "<f8" or devs.shape != sums.shape:
        raise ValueError("sums and devs must be float64, of one shape")
    if seen.dtype.str != "<u4" or seen.shape != sums.shape:
        raise ValueError("seen must be uint32, of the shape of sums")
    sizes = _sizes(sizes, sums, np.float64)
    return _on_columns(_moment_part, indptr, sums.shape[0], threads, base,
                       (data, indices, indptr, groups, sizes, sums, devs, seen), (second,))


def group_quantiles(data, indices, indptr, groups, sizes, double p, out, int threads=1,
                    int base=0):
    """The ``p`` quantile of each group of rows in each column of CSC arrays (as
    :func:`group_sums`), its implicit zeros included (``sizes``: int64, the rows of each
    group), into ``out[column, group]`` (float64; NaN for an empty group): the order
    statistics interpolated linearly, NaNs ordered last. One column's values are gathered at
    a time (per thread), never all of them. Returns -1, or the first column whose pointer or a
    row index is out of range or that has more stored values in a group than its rows.
    """
    _check(data, indices, indptr, groups, out, base)
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
    if data.dtype.str not in _FLOATS + _INTEGERS:
        raise ValueError(f"no quantiles of {data.dtype}")
    if out.dtype.str != "<f8":
        raise ValueError(f"out must be float64, not {out.dtype}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], not {p}")
    sizes = _sizes(sizes, out, np.int64)
    return _on_columns(_quantile_part, indptr, out.shape[0], threads, base,
                       (data, indices, indptr, groups, sizes, p, out),
                       (_longest(indptr, data.shape[0]),))


def group_modes(data, indices, indptr, groups, sizes, out, int threads=1, int base=0):
    """The most frequent value of each group of rows in each column of CSC arrays (as
    :func:`group_sums`), its implicit zeros included (``sizes``: int64, the rows of each
    group), into ``out[column, group]`` (of the type of ``data``; 0 for an empty group). Of
    values equally frequent, the one whose count reaches the most first when the group's
    stored values are read in row order, then its implicit zeros; NaNs count as one value.
    Returns -1, or the first column whose pointer or a row index is out of range or that has
    more stored values in a group than its rows.
    """
    _check(data, indices, indptr, groups, out, base)
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
        out = out.view(np.uint8)
    if data.dtype.str not in _FLOATS + _INTEGERS or out.dtype != data.dtype:
        raise ValueError(f"no modes of {data.dtype} into {out.dtype}")
    sizes = _sizes(sizes, out, np.int64)
    return _on_columns(_mode_part, indptr, out.shape[0], threads, base,
                       (data, indices, indptr, groups, sizes, out),
                       (_longest(indptr, data.shape[0]),))


# --- Groups of columns: each stored value scattered into the result ------------------------
#
# A group-by of the columns (``M |/ g >| Sum``) or a reduction of each row (``M >| Sum``) over
# the CSC arrays of ``M`` sends stored value k of column j to out[groups[j], row of k]: one
# pass, the accumulators of the result's size, the values of each result in column order.
# These run on one thread (columns of one group write the same row of ``out``).


cdef Py_ssize_t _scatter_sums(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, acc_t[:, ::1] out, int base,
) noexcept nogil:
    # out[groups[j], indices[k] - base] += data[k]; -1, or the first bad column.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>out.shape[1]
    cdef int32_t g
    cdef acc_t* line
    for j in range(groups.shape[0]):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        g = groups[j]
        if g < 0:
            continue
        line = &out[g, 0] if nr else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            if acc_t is double:
                line[r] += <double>data[k]
            else:
                line[r] += <uint64_t><int64_t>data[k]
    return -1


cdef Py_ssize_t _scatter_extremes(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, value_t[:, ::1] out, uint32_t[:, ::1] seen, int base,
    bint high,
) noexcept nogil:
    # The largest (``high``) or smallest stored value of each row in each group of columns
    # (a NaN wins) and their number; -1, or the first bad column.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>out.shape[1]
    cdef int32_t g
    cdef value_t v, best
    cdef bint take
    cdef value_t* line
    cdef uint32_t* count
    for j in range(groups.shape[0]):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        g = groups[j]
        if g < 0:
            continue
        line = &out[g, 0] if nr else NULL
        count = &seen[g, 0] if nr else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            v = data[k]
            best = line[r]
            if value_t is float or value_t is double:
                take = count[r] == 0 or (best == best and (
                    v != v or (v > best if high else v < best)))
            else:
                take = count[r] == 0 or (v > best if high else v < best)
            if take:
                line[r] = v
            count[r] += 1
    return -1


cdef Py_ssize_t _scatter_moments(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const double[::1] sizes, double[:, ::1] sums,
    double[:, ::1] devs, uint32_t[:, ::1] seen, int base, bint second,
) noexcept nogil:
    # The float64 sum and number of the stored values of each row in each group of columns,
    # then (``second``, a second pass) the sum of their squared deviations from
    # ``sums / sizes``; -1, or the first bad column.
    cdef int64_t j, k, start, stop, r
    cdef uint64_t n = <uint64_t>data.shape[0], nr = <uint64_t>sums.shape[1]
    cdef int32_t g
    cdef double d
    cdef double* total
    cdef double* dev
    cdef uint32_t* count
    for j in range(groups.shape[0]):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > n:
            return j
        g = groups[j]
        if g < 0:
            continue
        total = &sums[g, 0] if nr else NULL
        count = &seen[g, 0] if nr else NULL
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            total[r] += <double>data[k]
            count[r] += 1
    if not second:
        return -1
    for j in range(groups.shape[0]):  # every pointer and index checked by the first pass
        g = groups[j]
        if g < 0 or nr == 0:
            continue
        total = &sums[g, 0]
        dev = &devs[g, 0]
        for k in range(<int64_t>indptr[j] - base, <int64_t>indptr[j + 1] - base):
            r = <int64_t>indices[k] - base
            d = <double>data[k] - total[r] / sizes[g]
            dev[r] += d * d
    return -1


cdef Py_ssize_t _row_offsets(
    const index_t[::1] indices, const index_t[::1] indptr, const int32_t[::1] groups,
    uint64_t nd, uint64_t nr, int base, int64_t[::1] offsets, int64_t[::1] cursor,
) noexcept nogil:
    # offsets[r + 1]: the number of stored values of row r in columns of a group, summed up
    # (offsets[r]: where row r's values start); cursor[j]: where column j starts, or cursor[0]
    # -1 if the rows of a column are not in order; -1, or the first bad column.
    cdef int64_t j, k, start, stop, r, last
    cdef bint ordered = True
    for r in range(<int64_t>nr + 1):
        offsets[r] = 0
    for j in range(groups.shape[0]):
        start = <int64_t>indptr[j] - base
        stop = <int64_t>indptr[j + 1] - base
        if start < 0 or stop < start or <uint64_t>stop > nd:
            return j
        cursor[j] = start
        if groups[j] < 0:
            continue
        last = -1
        for k in range(start, stop):
            r = <int64_t>indices[k] - base
            if <uint64_t>r >= nr:
                return j
            offsets[r + 1] += 1
            if r < last:
                ordered = False
            last = r
    for r in range(<int64_t>nr):
        offsets[r + 1] += offsets[r]
    if not ordered and cursor.shape[0]:
        cursor[0] = -1
    return -1


cdef void _block_gathered(
    const index_t[::1] indices, const index_t[::1] indptr, const int32_t[::1] groups,
    int base, int64_t r0, int64_t r1, const int64_t[::1] offsets, int64_t* fill,
    int64_t* where, int32_t* group_of, int64_t[::1] cursor,
) noexcept nogil:
    # The positions of the stored values of rows r0:r1 (in columns of a group) by row, in
    # column order, and the group of each: row r's at where[offsets[r] - offsets[r0]:...]
    # (pointer and indices checked by _row_offsets). Rows in order in every column: each
    # column read on from its cursor (the blocks come in row order), else read whole.
    cdef int64_t j, k, r, at, stop
    cdef int32_t g
    cdef bint ordered = cursor.shape[0] == 0 or cursor[0] >= 0
    for r in range(r0, r1):
        fill[r - r0] = offsets[r] - offsets[r0]
    for j in range(groups.shape[0]):
        g = groups[j]
        if g < 0:
            continue
        stop = <int64_t>indptr[j + 1] - base
        k = cursor[j] if ordered else <int64_t>indptr[j] - base
        while k < stop:
            r = <int64_t>indices[k] - base
            if r >= r1 and ordered:
                break
            if r0 <= r < r1:
                at = fill[r - r0]
                where[at] = k
                group_of[at] = g
                fill[r - r0] = at + 1
            k += 1
        if ordered:
            cursor[j] = k


cdef void _by_group(const int64_t* where, const int32_t* group_of, int64_t c, int64_t ng,
                    int64_t* counts, int64_t* sorted_where) noexcept nogil:
    # One row's positions sorted by group (stably): group g's end at counts[g].
    cdef int64_t i, g
    for g in range(ng + 1):
        counts[g] = 0
    for i in range(c):
        counts[group_of[i] + 1] += 1
    for g in range(ng):
        counts[g + 1] += counts[g]
    for i in range(c):
        g = group_of[i]
        sorted_where[counts[g]] = where[i]
        counts[g] += 1


cdef int64_t _next_block(const int64_t[::1] offsets, int64_t r0, int64_t nr,
                         int64_t block) noexcept nogil:
    # The end of the rows from r0 whose values fit in ``block`` (at least one row).
    cdef int64_t r1 = r0 + 1
    while r1 < nr and offsets[r1 + 1] - offsets[r0] <= block:
        r1 += 1
    return r1


cdef Py_ssize_t _scatter_quantiles(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const int64_t[::1] sizes, double p, double[:, ::1] out,
    int64_t[::1] offsets, int64_t[::1] cursor, int64_t[::1] where, int32_t[::1] group_of,
    int64_t[::1] fill, int64_t[::1] counts, int64_t[::1] sorted_where, double[::1] buffer,
    int base,
) noexcept nogil:
    # The ``p`` quantile of each row in each group of columns (as _quantiles), the rows taken
    # a block at a time (as many as ``where`` holds; ``offsets`` from _row_offsets); -1, or
    # -2 for a row longer than the buffers or more values of a row in a group than columns.
    cdef int64_t i, r, r0, r1, lo, c, n, m, negatives, low, high, start
    cdef int64_t nr = out.shape[1], ng = out.shape[0], block = where.shape[0]
    cdef int64_t g
    cdef double h, a, b
    cdef double* s = &buffer[0]
    r0 = 0
    while r0 < nr:
        r1 = _next_block(offsets, r0, nr, block)
        if offsets[r1] - offsets[r0] > block:
            return -2
        _block_gathered(indices, indptr, groups, base, r0, r1, offsets, &fill[0], &where[0],
                        &group_of[0], cursor)
        for r in range(r0, r1):
            start = offsets[r] - offsets[r0]
            c = offsets[r + 1] - offsets[r]
            if c > sorted_where.shape[0]:
                return -2
            _by_group(&where[start], &group_of[start], c, ng, &counts[0], &sorted_where[0])
            lo = 0
            for g in range(ng):
                c = counts[g] - lo
                n = sizes[g]
                if c > n:
                    return -2
                if n == 0:
                    out[g, r] = NAN
                elif c == 0:
                    out[g, r] = 0.0
                else:
                    for i in range(c):
                        s[i] = <double>data[sorted_where[lo + i]]
                    m = _nans_last(s, c)
                    _sort(s, m, _depth(m))
                    negatives = 0
                    while negatives < m and s[negatives] < 0:
                        negatives += 1
                    h = <double>(n - 1) * p
                    low = <int64_t>floor(h)
                    high = low + 1 if low + 1 < n - 1 else n - 1
                    a = _rank(s, low, negatives, n - c)
                    b = _rank(s, high, negatives, n - c)
                    out[g, r] = a + (h - <double>low) * (b - a)
                lo = counts[g]
        r0 = r1
    return -1


cdef Py_ssize_t _scatter_modes(
    const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
    const int32_t[::1] groups, const int64_t[::1] sizes, value_t[:, ::1] out,
    int64_t[::1] offsets, int64_t[::1] cursor, int64_t[::1] where, int32_t[::1] group_of,
    int64_t[::1] fill, int64_t[::1] counts, int64_t[::1] sorted_where, value_t[::1] buffer,
    int64_t[::1] run, int base,
) noexcept nogil:
    # The most frequent value of each row in each group of columns (as _mode, the values in
    # column order), a block of rows at a time (as _scatter_quantiles); -1 or -2.
    cdef int64_t r, r0, r1, lo, c, start
    cdef int64_t nr = out.shape[1], ng = out.shape[0], block = where.shape[0]
    cdef int64_t g
    r0 = 0
    while r0 < nr:
        r1 = _next_block(offsets, r0, nr, block)
        if offsets[r1] - offsets[r0] > block:
            return -2
        _block_gathered(indices, indptr, groups, base, r0, r1, offsets, &fill[0], &where[0],
                        &group_of[0], cursor)
        for r in range(r0, r1):
            start = offsets[r] - offsets[r0]
            c = offsets[r + 1] - offsets[r]
            if c > sorted_where.shape[0]:
                return -2
            _by_group(&where[start], &group_of[start], c, ng, &counts[0], &sorted_where[0])
            lo = 0
            for g in range(ng):
                c = counts[g] - lo
                if c > sizes[g]:
                    return -2
                if c == 0:
                    out[g, r] = 0
                else:
                    out[g, r] = _mode(data, &sorted_where[lo], c, sizes[g] - c, &buffer[0],
                                      &run[0])
                lo = counts[g]
        r0 = r1
    return -1


def _scatter_sum_part(const value_t[::1] data, const index_t[::1] indices,
                      const index_t[::1] indptr, const int32_t[::1] groups,
                      acc_t[:, ::1] out, int base):
    cdef Py_ssize_t found
    with nogil:
        found = _scatter_sums(data, indices, indptr, groups, out, base)
    return found


def _scatter_extreme_part(const value_t[::1] data, const index_t[::1] indices,
                          const index_t[::1] indptr, const int32_t[::1] groups,
                          value_t[:, ::1] out, uint32_t[:, ::1] seen, int base, bint high):
    cdef Py_ssize_t found
    with nogil:
        found = _scatter_extremes(data, indices, indptr, groups, out, seen, base, high)
    return found


def _scatter_moment_part(const value_t[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, const int32_t[::1] groups,
                         const double[::1] sizes, double[:, ::1] sums, double[:, ::1] devs,
                         uint32_t[:, ::1] seen, int base, bint second):
    cdef Py_ssize_t found
    with nogil:
        found = _scatter_moments(data, indices, indptr, groups, sizes, sums, devs, seen, base,
                                 second)
    return found


def _row_offset_part(const index_t[::1] indices, const index_t[::1] indptr,
                     const int32_t[::1] groups, Py_ssize_t nd, Py_ssize_t nr, int base,
                     int64_t[::1] offsets, int64_t[::1] cursor):
    cdef Py_ssize_t found
    with nogil:
        found = _row_offsets(indices, indptr, groups, <uint64_t>nd, <uint64_t>nr, base,
                             offsets, cursor)
    return found


def _scatter_quantile_part(const value_t[::1] data, const index_t[::1] indices,
                           const index_t[::1] indptr, const int32_t[::1] groups,
                           const int64_t[::1] sizes, double p, double[:, ::1] out,
                           int64_t[::1] offsets, int64_t[::1] cursor, Py_ssize_t block,
                           Py_ssize_t longest, int base):
    cdef Py_ssize_t found
    cdef int64_t[::1] where = np.empty(block, dtype=np.int64)
    cdef int32_t[::1] group_of = np.empty(block, dtype=np.int32)
    cdef int64_t[::1] fill = np.empty(max(1, out.shape[1]), dtype=np.int64)
    cdef int64_t[::1] counts = np.empty(out.shape[0] + 1, dtype=np.int64)
    cdef int64_t[::1] sorted_where = np.empty(longest, dtype=np.int64)
    cdef double[::1] buffer = np.empty(longest, dtype=np.float64)
    with nogil:
        found = _scatter_quantiles(data, indices, indptr, groups, sizes, p, out, offsets,
                                   cursor, where, group_of, fill, counts, sorted_where,
                                   buffer, base)
    return found


def _scatter_mode_part(const value_t[::1] data, const index_t[::1] indices,
                       const index_t[::1] indptr, const int32_t[::1] groups,
                       const int64_t[::1] sizes, value_t[:, ::1] out, int64_t[::1] offsets,
                       int64_t[::1] cursor, Py_ssize_t block, Py_ssize_t longest, int base):
    cdef Py_ssize_t found
    cdef int64_t[::1] where = np.empty(block, dtype=np.int64)
    cdef int32_t[::1] group_of = np.empty(block, dtype=np.int32)
    cdef int64_t[::1] fill = np.empty(max(1, out.shape[1]), dtype=np.int64)
    cdef int64_t[::1] counts = np.empty(out.shape[0] + 1, dtype=np.int64)
    cdef int64_t[::1] sorted_where = np.empty(longest, dtype=np.int64)
    cdef value_t[::1] buffer = np.empty(longest, dtype=np.asarray(out).dtype)
    cdef int64_t[::1] run = np.empty(longest, dtype=np.int64)
    with nogil:
        found = _scatter_modes(data, indices, indptr, groups, sizes, out, offsets, cursor,
                               where, group_of, fill, counts, sorted_where, buffer, run,
                               base)
    return found


def _check_scatter(data, indices, indptr, groups, out, int base):
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1 or groups.ndim != 1:
        raise ValueError("the kernels take 1-D data, indices, pointer and groups")
    if groups.shape[0] != indptr.shape[0] - 1:
        raise ValueError(f"groups must have one entry per column ({indptr.shape[0] - 1})")
    if out.ndim != 2:
        raise ValueError("out must be 2-D: groups x rows")
    if indices.dtype != indptr.dtype or indices.dtype.str not in ("<i4", "<i8", "<u4", "<u8"):
        raise ValueError(f"indices and index pointer must both be int32, int64, uint32 or "
                         f"uint64, not {indices.dtype} and {indptr.dtype}")
    if base not in (0, 1):
        raise ValueError(f"base must be 0 or 1, not {base}")
    if groups.dtype.str != "<i4" or not groups.flags.c_contiguous:
        raise ValueError(f"groups must be contiguous int32, not {groups.dtype}")
    if groups.shape[0] and int(groups.max()) >= out.shape[0]:
        raise ValueError(f"groups must be below {out.shape[0]}, the rows of out")
    if indices.shape[0] < data.shape[0]:
        raise ValueError(f"{indices.shape[0]} indices for {data.shape[0]} values")
    if data.dtype.str == "|b1":
        data = data.view(np.uint8)
    if data.dtype.str not in _FLOATS + _INTEGERS:
        raise ValueError(f"no reductions of {data.dtype}")
    return data


def scatter_sums(data, indices, indptr, groups, out, int base=0):
    """Add each stored value of the CSC arrays ``data``, ``indices`` and ``indptr`` (as
    :func:`group_sums`) to ``out[groups[column], row]``: the sums of each row over each group
    of columns (``groups``: int32, one per column, -1 for none). ``out`` is a C-ordered
    ``groups x rows`` float64 or uint64 (integer data, wrapping sums) array, zeroed by the
    caller; each sum adds its values in column order. One pass on one thread; the values of a
    column in no group are not read (its pointer is checked).

    Returns -1, or the first column whose pointer or a row index is out of range.
    """
    data = _check_scatter(data, indices, indptr, groups, out, base)
    if out.dtype.str == "<u8" and data.dtype.str not in _INTEGERS:
        raise ValueError(f"no integer sums of {data.dtype}")
    if out.dtype.str not in ("<f8", "<u8"):
        raise ValueError(f"out must be float64 or uint64, not {out.dtype}")
    return _scatter_sum_part(data, indices, indptr, groups, out, base)


def scatter_extremes(data, indices, indptr, groups, out, seen, bint high, int base=0):
    """The largest (``high``) or smallest stored value of each row over each group of columns
    of CSC arrays (as :func:`scatter_sums`) into ``out[group, row]`` (of the type of the
    data; a NaN wins) and their number into ``seen`` (uint32, zeroed by the caller). Returns
    -1, or the first column whose pointer or a row index is out of range.
    """
    data = _check_scatter(data, indices, indptr, groups, out, base)
    if out.dtype.str == "|b1":
        out = out.view(np.uint8)
    if out.dtype != data.dtype:
        raise ValueError(f"no extremes of {data.dtype} into {out.dtype}")
    if seen.dtype.str != "<u4" or seen.shape != out.shape:
        raise ValueError("seen must be uint32, of the shape of out")
    return _scatter_extreme_part(data, indices, indptr, groups, out, seen, base, high)


def scatter_moments(data, indices, indptr, groups, sizes, sums, devs, seen, bint second,
                    int base=0):
    """For each row and group of columns of CSC arrays (as :func:`scatter_sums`), the float64
    sum of the stored values into ``sums[group, row]`` and their number into ``seen``
    (uint32); with ``second``, the sum of their squared deviations from ``sums / sizes``
    (``sizes``: float64, one per group, at least 1) into ``devs``, by a second pass. All
    zeroed by the caller. Returns -1, or the first column with a pointer or row out of range.
    """
    data = _check_scatter(data, indices, indptr, groups, sums, base)
    if sums.dtype.str != "<f8" or devs.dtype.str != "<f8" or devs.shape != sums.shape:
        raise ValueError("sums and devs must be float64, of one shape")
    if seen.dtype.str != "<u4" or seen.shape != sums.shape:
        raise ValueError("seen must be uint32, of the shape of sums")
    if sizes.dtype.str != "<f8" or sizes.ndim != 1 or sizes.shape[0] < sums.shape[0]:
        raise ValueError(f"sizes must be float64, one per group ({sums.shape[0]})")
    return _scatter_moment_part(data, indices, indptr, groups, np.ascontiguousarray(sizes),
                                sums, devs, seen, base, second)


def _ordered_setup(data, indices, indptr, groups, sizes, out, int base, Py_ssize_t block):
    """The checked data, sizes, the row offsets and buffer lengths, or the bad column."""
    data = _check_scatter(data, indices, indptr, groups, out, base)
    if sizes.dtype.str != "<i8" or sizes.ndim != 1 or sizes.shape[0] < out.shape[0]:
        raise ValueError(f"sizes must be int64, one per group ({out.shape[0]})")
    if block < 1:
        raise ValueError(f"block must be positive, not {block}")
    offsets = np.empty(out.shape[1] + 1, dtype=np.int64)
    cursor = np.empty(groups.shape[0], dtype=np.int64)  # where each column is read on from
    found = _row_offset_part(indices, indptr, groups, data.shape[0], out.shape[1], base,
                             offsets, cursor)
    if found >= 0:
        return data, sizes, offsets, cursor, 0, 0, found
    longest = int(max(1, np.diff(offsets).max())) if out.shape[1] else 1
    return (data, np.ascontiguousarray(sizes), offsets, cursor, max(block, longest), longest,
            -1)


def scatter_quantiles(data, indices, indptr, groups, sizes, double p, out, int base=0,
                      Py_ssize_t block=65536):
    """The ``p`` quantile of each row over each group of columns of CSC arrays (as
    :func:`scatter_sums`), implicit zeros included (``sizes``: int64, the columns of each
    group), into ``out[group, row]`` (float64; NaN for an empty group), as
    :func:`group_quantiles`. The rows are gathered a block of about ``block`` stored values
    at a time: each column read on from where the last block stopped if its rows are in
    order (every column's are, as Daf and scipy store them), else one pass over all the
    indices per block. The extra memory is 12 bytes per value of a block, 16 per value of the
    longest row and 8 per row and per column. Returns -1, the first column
    whose pointer or a row index is out of range, or -2 for a row with more stored values in
    a group than the group's columns (a repeated index).
    """
    if out.dtype.str != "<f8":
        raise ValueError(f"out must be float64, not {out.dtype}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], not {p}")
    data, sizes, offsets, cursor, block, longest, found = _ordered_setup(
        data, indices, indptr, groups, sizes, out, base, block)
    if found >= 0:
        return found
    return _scatter_quantile_part(data, indices, indptr, groups, sizes, p, out, offsets,
                                  cursor, block, longest, base)


def scatter_modes(data, indices, indptr, groups, sizes, out, int base=0,
                  Py_ssize_t block=65536):
    """The most frequent value of each row over each group of columns of CSC arrays (as
    :func:`scatter_quantiles`, the values read in column order, then the implicit zeros) into
    ``out[group, row]`` (of the type of the data; 0 for an empty group). Returns -1, the first
    bad column, or -2.
    """
    if out.dtype.str == "|b1":
        out = out.view(np.uint8)
    data, sizes, offsets, cursor, block, longest, found = _ordered_setup(
        data, indices, indptr, groups, sizes, out, base, block)
    if found >= 0:
        return found
    if out.dtype != data.dtype:
        raise ValueError(f"no modes of {data.dtype} into {out.dtype}")
    return _scatter_mode_part(data, indices, indptr, groups, sizes, out, offsets, cursor,
                              block, longest, base)
