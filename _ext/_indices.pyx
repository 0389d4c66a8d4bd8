# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Kernels over the indices of compressed sparse matrices, without the GIL.

**1-based indices, checked as written.** Daf stores the row indices of a CSC matrix 1-based.
Writing them takes one pass over the 0-based indices; checking that the matrix is canonical
(each column's indices strictly increasing, so sorted and without duplicates) and in range
takes another, the one scipy's ``has_canonical_format`` makes. :func:`shift_checked` does
both in the same pass, a block at a time, so the check costs no second read of the indices.
Only the index pointer decides which memory is read; index values are only compared and
shifted, never used as addresses, so hostile values cannot make it read out of bounds.

**1-based indices read back.** :func:`zero_based` subtracts one from stored indices of any
width into the int32 or int64 indices scipy takes, in one pass, and returns the largest
result for the caller's range check: scipy then neither scans nor copies them again.

**CSR to CSC on threads.** :func:`csr_to_csc` is scipy's conversion (count each column's
values, then place each row's values at its columns' next free slots) with the rows split
between threads: each counts its rows' columns, so each knows where its values go in every
column, and places them with no lock. Every index is checked before it is used as an
address.
"""

import numpy as np

from ._core.threads import on_threads

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused data_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused out_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef Py_ssize_t _shift(
    const index_t[::1] src, out_t[::1] dst, const index_t[::1] indptr,
    Py_ssize_t lo, Py_ssize_t hi, int64_t bound,
) noexcept nogil:
    # Write src[lo:hi] + 1 to dst[:hi - lo]; -1 when every slice part in the range is
    # strictly increasing and in 0 <= i < bound, else the position where a part that is not
    # starts (dst is then only partly written).
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef Py_ssize_t a = 0, b = n, m, s, i, j, start, stop
    cdef bint bad
    while a < b:  # the first slice that ends after lo
        m = (a + b) // 2
        if indptr[m + 1] > lo:
            b = m
        else:
            a = m + 1
    s = a
    i = lo
    while i < hi:
        if s >= n:  # elements past the last slice: not part of the matrix
            return i
        start = indptr[s]
        stop = indptr[s + 1]
        if stop > hi:
            stop = hi
        if i < stop:
            # A checked pointer gives start <= i (start == i but where a block begins inside
            # a slice); any other pointer is refused before src[i - 1] is read.
            if start < 0 or start > i:
                return i
            if i == start:
                bad = src[i] < 0
            else:
                bad = src[i] <= src[i - 1]
            dst[i - lo] = <out_t>(<uint64_t>src[i] + 1)
            for j in range(i + 1, stop):
                bad |= src[j] <= src[j - 1]
                dst[j - lo] = <out_t>(<uint64_t>src[j] + 1)
            if bad or src[stop - 1] >= bound:
                return i
            i = stop
        s += 1
    return -1


def _run(
    const index_t[::1] src, out_t[::1] dst, const index_t[::1] indptr,
    Py_ssize_t lo, Py_ssize_t hi, int64_t bound,
):
    """The kernel for these index and output types (Cython picks it from the arrays')."""
    cdef Py_ssize_t found
    with nogil:  # other threads (the one writing the previous block) run meanwhile
        found = _shift(src, dst, indptr, lo, hi, bound)
    return found


def shift_checked(src, dst, indptr, Py_ssize_t lo, Py_ssize_t hi, bound):
    """Write the 1-based ``src[lo:hi]`` into ``dst`` (1, 2, 4 or 8-byte integers, signed or
    not, holding every shifted index below ``bound``) and check that part of the compressed
    indices ``src`` with index pointer ``indptr`` (same int32 or int64 type; already checked
    to start at 0, never decrease and end within ``src``).

    Returns -1 when each slice's part in ``lo:hi`` is strictly increasing (no duplicate,
    sorted) and within ``0 <= index < bound``; else a position in ``lo:hi`` where a part that
    is not starts, and ``dst`` is then only partly written.
    """
    if src.ndim != 1 or indptr.ndim != 1 or dst.ndim != 1:
        raise ValueError("shift_checked takes 1-D arrays")
    if src.dtype != indptr.dtype or src.dtype.str not in ("<i4", "<i8"):
        raise ValueError(f"indices and index pointer must both be int32 or int64, "
                         f"not {src.dtype} and {indptr.dtype}")
    if indptr.shape[0] < 1:
        raise ValueError("an index pointer holds at least one element")
    if not 0 <= lo <= hi <= src.shape[0]:
        raise ValueError(f"range {lo}:{hi} is outside {src.shape[0]} indices")
    if dst.shape[0] < hi - lo:
        raise ValueError(f"the output holds {dst.shape[0]} indices, not {hi - lo}")
    cdef int64_t top = min(int(bound), 0x7FFF_FFFF_FFFF_FFFF)
    size = dst.dtype.itemsize
    if dst.dtype.kind not in "iu" or size not in (1, 2, 4, 8):
        raise ValueError(f"the output must be of 1, 2, 4 or 8-byte integers, not {dst.dtype}")
    return _run(src, dst.view(f"u{size}"), indptr, lo, hi, top)


# --- 1-based stored indices read back -------------------------------------------------------

ctypedef fused stored_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused zero_t:
    uint32_t
    uint64_t


cdef uint64_t _unshift(
    const stored_t[::1] src, zero_t[::1] dst, Py_ssize_t lo, Py_ssize_t hi
) noexcept nogil:
    # dst[i] = src[i] - 1 for lo <= i < hi; the largest src[i] - 1 as an unsigned 64-bit
    # value (a stored 0 wraps to the largest one).
    cdef uint64_t top = 0, v
    cdef Py_ssize_t i
    for i in range(lo, hi):
        v = <uint64_t>src[i] - 1
        top = v if v > top else top
        dst[i] = <zero_t>v
    return top


def _unshift_part(const stored_t[::1] src, zero_t[::1] dst, Py_ssize_t lo, Py_ssize_t hi,
                  list tops, Py_ssize_t t):
    cdef uint64_t top
    with nogil:
        top = _unshift(src, dst, lo, hi)
    tops[t] = top


def zero_based(src, dst, int threads=1):
    """Write the 1-based indices ``src`` (unsigned 1, 2, 4 or 8-byte integers; view signed
    ones as unsigned) minus one into ``dst`` (unsigned 4 or 8-byte integers of the same
    length; view int32/int64 as uint32/uint64), in one pass, on ``threads`` threads for a
    large array. Returns the largest ``src[i] - 1`` as an unsigned 64-bit number (a stored 0
    counts as 2**64 - 1), which the caller compares with its bound: ``dst`` holds the
    indices exactly when that number fits it. Indices are only copied, never used as
    addresses.
    """
    if src.ndim != 1 or dst.ndim != 1 or src.shape[0] != dst.shape[0]:
        raise ValueError("zero_based takes two 1-D arrays of one length")
    if src.dtype.kind != "u" or dst.dtype.str not in ("<u4", "<u8"):
        raise ValueError(f"no kernel from {src.dtype} to {dst.dtype}")
    n = src.shape[0]
    threads = max(1, min(threads, n // (1 << 20)))
    step = -(-n // threads) if n else 0
    tops = [0] * threads
    on_threads(_unshift_part, [(src, dst, t * step, min(n, (t + 1) * step), tops, t)
                               for t in range(threads)])
    return max(tops)


# --- CSR to CSC -----------------------------------------------------------------------------

cdef Py_ssize_t _count(
    const index_t[::1] indptr, const index_t[::1] indices, Py_ssize_t r0, Py_ssize_t r1,
    int64_t ncols, int64_t[::1] counts,
) noexcept nogil:
    # Add the columns of rows r0:r1 to counts; -1, or the position of an index outside
    # 0 <= index < ncols (then counts is incomplete).
    cdef Py_ssize_t i, k
    cdef int64_t c
    for i in range(r0, r1):
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            if c < 0 or c >= ncols:
                return k
            counts[c] += 1
    return -1


cdef Py_ssize_t _place(
    const index_t[::1] indptr, const index_t[::1] indices, const data_t[::1] data,
    Py_ssize_t r0, Py_ssize_t r1, int64_t[::1] slots, int64_t[::1] ends,
    index_t[::1] out_indices, data_t[::1] out_data,
) noexcept nogil:
    # Place the values of rows r0:r1 at their columns' next slots, each below the column's
    # end for this part; -1, or the position of an index that is not where it was counted
    # (the arrays changed meanwhile), which is then left unplaced.
    cdef Py_ssize_t i, k
    cdef int64_t p, c, ncols = slots.shape[0]
    for i in range(r0, r1):
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            if <uint64_t>c >= <uint64_t>ncols:  # also a negative index
                return k
            p = slots[c]
            if p >= ends[c]:
                return k
            slots[c] = p + 1
            out_indices[p] = <index_t>i
            out_data[p] = data[k]
    return -1


def _count_rows(const index_t[::1] indptr, const index_t[::1] indices, Py_ssize_t r0,
                Py_ssize_t r1, int64_t ncols, int64_t[::1] counts):
    cdef Py_ssize_t bad
    with nogil:
        bad = _count(indptr, indices, r0, r1, ncols, counts)
    return bad


def _place_rows(const index_t[::1] indptr, const index_t[::1] indices, const data_t[::1] data,
                Py_ssize_t r0, Py_ssize_t r1, int64_t[::1] slots, int64_t[::1] ends,
                index_t[::1] out_indices, data_t[::1] out_data):
    cdef Py_ssize_t bad
    with nogil:
        bad = _place(indptr, indices, data, r0, r1, slots, ends, out_indices, out_data)
    return bad


def csr_to_csc(indptr, indices, data, Py_ssize_t ncols, int threads=1):
    """The CSC arrays ``(indptr, indices, data)`` of the CSR matrix with these arrays and
    ``ncols`` columns: each column's row indices in increasing order (duplicates kept, as
    scipy keeps them), the values moved by their size (1, 2, 4 or 8 bytes, any type).

    ``indptr`` and ``indices`` are int32 or int64 (the same); the result has that type and
    must hold the number of rows and of values. ``threads`` > 1 splits the rows between that
    many threads, the calling one included. ``ValueError`` for arrays that do not make a
    CSR matrix (the index pointer not starting at 0, decreasing or ending past the indices,
    or an index outside ``0 <= index < ncols``).
    """
    if indptr.ndim != 1 or indices.ndim != 1 or data.ndim != 1:
        raise ValueError("csr_to_csc takes 1-D arrays")
    if indices.dtype != indptr.dtype or indices.dtype.str not in ("<i4", "<i8"):
        raise ValueError(f"indices and index pointer must both be int32 or int64, "
                         f"not {indices.dtype} and {indptr.dtype}")
    size = data.dtype.itemsize
    if size not in (1, 2, 4, 8) or data.dtype.hasobject:
        raise ValueError(f"no kernel for values of type {data.dtype}")
    if indptr.shape[0] < 1 or ncols < 0:
        raise ValueError("an index pointer holds at least one element; columns are >= 0")
    nrows = indptr.shape[0] - 1
    indptr = np.ascontiguousarray(indptr)
    indices = np.ascontiguousarray(indices)
    data = np.ascontiguousarray(data)
    nnz = int(indptr[nrows])
    if int(indptr[0]) != 0 or (nrows and int(np.diff(indptr).min()) < 0):
        raise ValueError("the index pointer must start at 0 and never decrease")
    if nnz > indices.shape[0] or nnz > data.shape[0]:
        raise ValueError(f"the index pointer ends at {nnz}, past the {indices.shape[0]} "
                         f"indices or the {data.shape[0]} values")
    if max(nnz, nrows, ncols) > np.iinfo(indices.dtype).max:
        raise ValueError(f"{indices.dtype} cannot index {max(nnz, nrows, ncols)} values or rows")
    threads = max(1, min(threads, nrows))
    # Rows cut where the values split evenly.
    cuts = [0, *(int(np.searchsorted(indptr, nnz * t // threads)) for t in range(1, threads)),
            nrows]
    parts = [(cuts[t], max(cuts[t], cuts[t + 1])) for t in range(threads)]
    counts = [np.zeros(ncols, np.int64) for _ in parts]
    bad = [-1] * len(parts)
    raw = data.view(f"u{size}")
    out_indices = np.empty(nnz, indices.dtype)
    out_data = np.empty(nnz, data.dtype)
    out_raw = out_data.view(f"u{size}")

    def count(t):
        bad[t] = _count_rows(indptr, indices, parts[t][0], parts[t][1], ncols, counts[t])

    on_threads(count, [(t,) for t in range(len(parts))])
    for k in bad:
        if k >= 0:
            raise ValueError(f"index {int(indices[k])} at {k} is outside 0..{ncols - 1}")
    total = np.sum(counts, axis=0) if len(counts) > 1 else counts[0]
    colptr = np.zeros(ncols + 1, np.int64)
    np.cumsum(total, out=colptr[1:])
    slots, ends = [], []
    start = colptr[:ncols].copy()
    for c in counts:  # each part's values follow the earlier parts' in every column
        slots.append(start.copy())
        start += c
        ends.append(start.copy())

    def place(t):
        bad[t] = _place_rows(indptr, indices, raw, parts[t][0], parts[t][1], slots[t],
                             ends[t], out_indices, out_raw)

    on_threads(place, [(t,) for t in range(len(parts))])
    if any(k >= 0 for k in bad):
        raise ValueError("the indices changed while they were converted")
    return colptr.astype(indices.dtype), out_indices, out_data
