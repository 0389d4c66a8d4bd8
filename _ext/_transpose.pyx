# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Cache-blocked transposition of a 2-D array, without the GIL.

numpy copies a transposed view element by element along its strides, which on a large matrix
reads a new cache line for every element (about 0.25 GB/s here). This kernel copies square
blocks small enough that both the source rows and the destination rows of a block stay in the
first-level cache, so each cache line is read once: several GB/s on one core. It moves
elements by their size only (1, 2, 4 or 8 bytes), whatever their type.
"""

from ._core.threads import on_threads

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t


cdef extern from "_transpose_kernel.h" nogil:
    void dafzarr_transpose32(const uint32_t* src, Py_ssize_t ss, Py_ssize_t nrows,
                             uint32_t* dst, Py_ssize_t ds, Py_ssize_t lo, Py_ssize_t hi)

ctypedef fused elem:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

# Side of the square blocks (elements): 32 x 32 x 8 bytes = 8 KiB at most per block.
DEF _BLOCK = 32
# Columns per panel (see _transpose_kernel.h): the destination rows one pass writes.
DEF _PANEL = 256


cdef void _columns_to_rows(
    const elem* src, Py_ssize_t src_stride, Py_ssize_t nrows,
    elem* dst, Py_ssize_t dst_stride, Py_ssize_t lo, Py_ssize_t hi,
) noexcept nogil:
    """``dst[j - lo, i] = src[i, j]`` for every source row ``i`` and column ``lo <= j < hi``,
    panel of columns by panel, block by block down the rows within a panel."""
    cdef Py_ssize_t pb, pe, ib, ie, jb, je, i, j
    cdef elem* d
    cdef const elem* s
    pb = lo
    while pb < hi:
        pe = min(pb + _PANEL, hi)
        ib = 0
        while ib < nrows:
            ie = min(ib + _BLOCK, nrows)
            jb = pb
            while jb < pe:
                je = min(jb + _BLOCK, pe)
                for j in range(jb, je):
                    d = dst + (j - lo) * dst_stride
                    s = src + j
                    for i in range(ib, ie):
                        d[i] = s[i * src_stride]
                jb = je
            ib = ie
        pb = pe


cdef _run(const elem[:, ::1] src, elem[:, ::1] dst, Py_ssize_t lo, Py_ssize_t hi):
    if dst.shape[0] != hi - lo or dst.shape[1] != src.shape[0]:
        raise ValueError(
            f"destination of shape {(dst.shape[0], dst.shape[1])} cannot hold columns "
            f"{lo}:{hi} of a {src.shape[0]} x {src.shape[1]} array transposed"
        )
    if src.shape[0] == 0 or hi == lo:
        return
    with nogil:
        if elem is uint32_t:  # float32, (u)int32: the vectorized kernel
            dafzarr_transpose32(&src[0, 0], src.shape[1], src.shape[0], &dst[0, 0],
                                dst.shape[1], lo, hi)
        else:
            _columns_to_rows(&src[0, 0], src.shape[1], src.shape[0], &dst[0, 0],
                             dst.shape[1], lo, hi)


def transpose_columns(src, dst, Py_ssize_t lo, Py_ssize_t hi, int threads=1):
    """Write columns ``lo:hi`` of the C-contiguous 2-D array ``src`` as the rows of ``dst``.

    ``dst`` is C-contiguous, of shape ``(hi - lo, src.shape[0])`` and of the same item size
    (1, 2, 4 or 8 bytes). Runs without the GIL, so threads may fill disjoint row ranges;
    ``threads`` > 1 splits the columns itself (in whole panels) over that many threads, the
    calling one included, and returns when all are done.
    """
    if not 0 <= lo <= hi <= src.shape[1]:
        raise ValueError(f"columns {lo}:{hi} are outside an array of {src.shape[1]} columns")
    size = src.dtype.itemsize
    if dst.dtype.itemsize != size:
        raise ValueError(f"item sizes differ: {size} and {dst.dtype.itemsize} bytes")
    if size not in (1, 2, 4, 8):
        raise ValueError(f"no transposition kernel for {size}-byte elements")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    if tuple(dst.shape) != (hi - lo, src.shape[0]):
        _one_range(src, dst, lo, hi)  # raises the shape error
    bounds = _split(lo, hi, threads)
    if len(bounds) < 2:
        _one_range(src, dst, lo, hi)
        return
    on_threads(lambda a, b: _one_range(src, dst[a - lo : b - lo], a, b), bounds)


def _split(Py_ssize_t lo, Py_ssize_t hi, int threads):
    """``lo:hi`` in at most ``threads`` consecutive ranges of whole panels."""
    cdef Py_ssize_t panels = (hi - lo + _PANEL - 1) // _PANEL
    cdef Py_ssize_t n = min(<Py_ssize_t>threads, panels)
    if n < 2:
        return [(lo, hi)]
    cuts = [lo + (panels * k // n) * _PANEL for k in range(n)] + [hi]
    return [(cuts[k], cuts[k + 1]) for k in range(n)]


def _one_range(src, dst, Py_ssize_t lo, Py_ssize_t hi):
    size = src.dtype.itemsize
    if size == 4:
        _run[uint32_t](src.view("u4"), dst.view("u4"), lo, hi)
    elif size == 8:
        _run[uint64_t](src.view("u8"), dst.view("u8"), lo, hi)
    elif size == 2:
        _run[uint16_t](src.view("u2"), dst.view("u2"), lo, hi)
    else:
        _run[uint8_t](src.view("u1"), dst.view("u1"), lo, hi)
