# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Thin GIL-releasing wrappers over the POSIX file and mmap syscalls, and CRC-32.

Private: the public API is :mod:`dafzarr.zipstore`. Keep logic here minimal: every offset
is checked against the mapped size before memory is touched; policy lives in Python.
"""
# --- C imports -------------------------------------------------------------------------
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_FillInfo, PyObject_GetBuffer
from cpython.buffer cimport PyBuffer_Release, PyBUF_SIMPLE
from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport EINTR, EINVAL, ENOSYS, EOPNOTSUPP, errno
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy, memset
from posix.fcntl cimport O_CLOEXEC, O_RDONLY, O_RDWR, posix_fallocate
from posix.fcntl cimport open as c_open
from posix.mman cimport (
    MAP_ANONYMOUS, MAP_FAILED, MAP_FIXED, MAP_PRIVATE, MAP_SHARED, MADV_DONTNEED,
    MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MS_SYNC, PROT_NONE, PROT_READ,
    PROT_WRITE, madvise, mmap, msync, munmap,
)
from posix.stat cimport fstat, struct_stat
from posix.types cimport off_t
from posix.unistd cimport close as c_close
from posix.unistd cimport fsync as c_fsync
from posix.unistd cimport ftruncate, pwrite, sysconf, _SC_PAGESIZE

cdef extern from "<sys/file.h>" nogil:
    int flock(int fd, int operation)
    enum:
        LOCK_SH
        LOCK_EX
        LOCK_NB
        LOCK_UN

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MAP_NORESERVE
    #define MAP_NORESERVE 0
    #endif
    #ifndef MADV_POPULATE_READ
    #define MADV_POPULATE_READ 22
    #endif
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    """
    int MAP_NORESERVE
    int MADV_POPULATE_READ
    int MADV_POPULATE_WRITE

cdef extern from "_crc32_kernel.h" nogil:
    uint32_t dz_crc32(uint32_t crc, const unsigned char* src, size_t n)
    uint32_t dz_crc32_copy(uint32_t crc, unsigned char* dst, const unsigned char* src, size_t n)
    const char* dz_crc_kernel_name()
    void dz_crc_init()

cdef extern from "_crc32_parallel.h" nogil:
    uint32_t dz_crc32_copy_mt(uint32_t crc, unsigned char* dst, const unsigned char* src,
                              size_t n, int populate)
    uint32_t dz_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
    void dz_set_threads(int n)
    int dz_get_threads()
    int DZ_MAX_THREADS
    size_t DZ_MIN_SLICE
    int dz_pwrite_all(int fd, off_t offset, const unsigned char* src, size_t n)
    int dz_crc32_pwrite(int fd, off_t offset, const unsigned char* src, size_t n, uint32_t* crc)

# --- Python imports --------------------------------------------------------------------
import os

from dafzarr.errors import ClosedError, InvalidArgumentError, OutOfBoundsError

# --- Module state ----------------------------------------------------------------------
dz_crc_init()  # build tables and pick the kernel once, under the GIL
cdef size_t PAGE = <size_t>sysconf(_SC_PAGESIZE)
# Below this many bytes a copy or CRC is cheaper than releasing and retaking the GIL.
cdef size_t NOGIL_THRESHOLD = 1 << 16
# From this many bytes a store into fresh pages populates them first, in one call.
cdef Py_ssize_t POPULATE_THRESHOLD = 1 << 20
# From this many bytes a write goes through pwrite(2), not stores into the mapping: for pages
# not yet in the page tables (the growing end of an archive) the kernel's write path avoids a
# fault and a page_mkwrite per page, 4-5x faster on ext4.
cdef Py_ssize_t PWRITE_THRESHOLD = 1 << 14
cdef size_t HUGE = 1 << 21  # the huge-page size the writable base is aligned to
# From this many bytes a write with CRC is split over threads that store through the mapping;
# below, one pwrite(2) path is faster: each thread's stores fault in and page_mkwrite every
# page of the mapping, and unmapping them costs again (a 64 MiB append on 2 cores took
# 39 ms split and 20 ms through pwrite, the time of f.write to a new file).
cdef Py_ssize_t THREADED_WRITE_MIN = 128 << 20

PAGE_SIZE = PAGE
CRC32_KERNEL = dz_crc_kernel_name().decode()
ADVICE = {
    "normal": MADV_NORMAL, "random": MADV_RANDOM, "sequential": MADV_SEQUENTIAL,
    "willneed": MADV_WILLNEED, "dontneed": MADV_DONTNEED,
}


# --- Errors ----------------------------------------------------------------------------
cdef int _raise_errno(int err, object path) except -1:
    raise OSError(err, os.strerror(err), path)


cdef inline size_t _round_up(size_t n) noexcept nogil:
    return (n + PAGE - 1) & ~(PAGE - 1)


# --- CRC-32 ----------------------------------------------------------------------------
def crc32(data, unsigned int crc=0):
    """Return the CRC-32 of a bytes-like object, continuing from ``crc`` (as zlib.crc32)."""
    cdef Py_buffer buf
    cdef uint32_t c_crc = crc
    PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
    try:
        if <size_t>buf.len >= NOGIL_THRESHOLD:
            with nogil:
                c_crc = dz_crc32_copy_mt(c_crc, NULL, <const unsigned char*>buf.buf,
                                         <size_t>buf.len, 0)
        else:
            c_crc = dz_crc32(c_crc, <const unsigned char*>buf.buf, <size_t>buf.len)
    finally:
        PyBuffer_Release(&buf)
    return c_crc


cdef uint32_t crc32_copy(uint32_t crc, unsigned char* dst, const unsigned char* src,
                         size_t n) noexcept nogil:
    """The CRC-32 of ``n`` bytes at ``src``, continuing from ``crc``, storing them at ``dst``
    on the way (``dst`` NULL: only the CRC): the kernel other extensions ``cimport``."""
    return dz_crc32_copy(crc, dst, src, n)


def crc32_combine(unsigned int crc_a, unsigned int crc_b, unsigned long long len_b):
    """The CRC-32 of ``A + B`` from ``crc32(A)``, ``crc32(B)`` and ``len(B)``."""
    return dz_crc32_combine(crc_a, crc_b, len_b)


def set_threads(int n):
    """Use up to ``n`` threads (1 to 16) for one large copy or CRC; returns the previous value.

    A range is split only into slices of at least 16 MiB, so small entries never pay for a
    thread. The default is the number of CPUs this process may run on, at most 8, or the
    ``DAFZARR_NUM_THREADS`` environment variable.
    """
    cdef int previous = dz_get_threads()
    if n < 1 or n > DZ_MAX_THREADS:
        raise InvalidArgumentError(
            f"thread count must be between 1 and {DZ_MAX_THREADS}, not {n}"
        )
    dz_set_threads(n)
    return previous


def get_threads():
    """The number of threads one large copy or CRC may use (see :func:`set_threads`)."""
    return dz_get_threads()


def _default_threads():
    env = os.environ.get("DAFZARR_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise InvalidArgumentError(
                f"DAFZARR_NUM_THREADS must be an integer, not {env!r}"
            ) from None
        return max(1, min(n, DZ_MAX_THREADS))
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1), 8))


dz_set_threads(_default_threads())


# --- The mapping -----------------------------------------------------------------------
cdef class FileMapping:
    """A file mapped at a fixed base address that never moves while the file grows.

    ``FileMapping(path, writable, reserve, lock=True)`` opens ``path`` (which must exist).
    Writable mappings take an exclusive, non-blocking ``flock`` for their lifetime (none
    with ``lock=False``, for file systems without locks: the caller guarantees a single
    writer), reserve
    ``reserve`` bytes of address space with ``PROT_NONE`` and overlay the file on the start
    of it with ``MAP_SHARED | MAP_FIXED``; :meth:`resize` grows or shrinks the file and the
    overlay together. Read-only mappings map the current size once and take no lock.

    Views handed out by :meth:`view` are counted: :meth:`close` raises ``BufferError``
    while any is alive, instead of unmapping memory under a numpy array.
    """

    cdef int _fd
    cdef char* _base
    cdef char* _region  # start of the whole reservation (munmap target)
    cdef size_t _region_len
    cdef size_t _reserved
    cdef size_t _size
    cdef size_t _mapped_end
    cdef Py_ssize_t _exports
    cdef public object path  # settable: a mapping follows its file through a rename
    cdef readonly bint writable
    # A store that closes while views are alive keeps only a weak reference: the mapping,
    # its descriptor and its lock then go with the last view.
    cdef object __weakref__

    def __cinit__(self):
        self._fd = -1
        self._base = NULL
        self._region = NULL
        self._region_len = 0
        self._reserved = 0
        self._size = 0
        self._mapped_end = 0
        self._exports = 0

    def __init__(self, path, bint writable, Py_ssize_t reserve=0, bint lock=True):
        cdef bytes b = os.fsencode(path)
        cdef const char* c_path = b
        cdef int flags = (O_RDWR if writable else O_RDONLY) | O_CLOEXEC
        cdef int fd = -1, err = 0, rc
        cdef struct_stat st
        cdef void* p
        cdef size_t c_reserve
        self.path = path
        self.writable = writable
        while True:
            with nogil:
                fd = c_open(c_path, flags)
                err = errno if fd == -1 else 0
            if err != EINTR:
                break
            PyErr_CheckSignals()
        if fd == -1:
            _raise_errno(err, path)
        self._fd = fd
        if writable and lock:
            while True:
                with nogil:
                    rc = flock(fd, LOCK_EX | LOCK_NB)
                    err = errno if rc == -1 else 0
                if rc == 0 or err != EINTR:
                    break
                PyErr_CheckSignals()
            if rc == -1:
                _raise_errno(err, path)
        with nogil:
            rc = fstat(fd, &st)
            err = errno if rc == -1 else 0
        if rc == -1:
            _raise_errno(err, path)
        self._size = <size_t>st.st_size
        if writable:
            if reserve < <Py_ssize_t>st.st_size:
                raise ValueError(
                    f"{path}: the file is {st.st_size} bytes, more than the {reserve} bytes "
                    "of address space reserved for it (raise max_file_size)"
                )
            # Reserve one extra huge-page span and start the file at a 2 MiB boundary: the
            # kernel maps page-cache folios larger than 4 KiB only where virtual and file
            # offsets agree modulo their size, and stores into fresh pages of an unaligned
            # base ran an order of magnitude slower in measurements.
            c_reserve = (<size_t>reserve + HUGE - 1) & ~(HUGE - 1)
            if c_reserve == 0:
                c_reserve = HUGE
            with nogil:
                p = mmap(NULL, c_reserve + HUGE, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                err = errno if p == MAP_FAILED else 0
            if p == MAP_FAILED:
                _raise_errno(err, path)
            self._region = <char*>p
            self._region_len = c_reserve + HUGE
            self._base = <char*>((<size_t>p + HUGE - 1) & ~(HUGE - 1))
            self._reserved = c_reserve
            self._overlay(0, self._size)
        elif self._size > 0:
            with nogil:
                p = mmap(NULL, self._size, PROT_READ, MAP_SHARED, fd, 0)
                err = errno if p == MAP_FAILED else 0
            if p == MAP_FAILED:
                _raise_errno(err, self.path)
            self._base = <char*>p
            self._region = <char*>p
            self._region_len = self._size
            self._reserved = _round_up(self._size)
            self._mapped_end = self._reserved

    cdef int _check_open(self) except -1:
        if self._fd == -1:
            raise ClosedError(f"the mapping of {self.path} is closed")
        return 0

    cdef int _check_range(self, Py_ssize_t offset, Py_ssize_t length) except -1:
        self._check_open()
        if offset < 0 or length < 0 or <size_t>offset > self._size or \
                <size_t>length > self._size - <size_t>offset:
            raise OutOfBoundsError(
                f"byte range [{offset}, {offset + length}) is outside the "
                f"{self._size}-byte file {self.path}"
            )
        return 0

    cdef int _page_span(self, Py_ssize_t offset, Py_ssize_t length, size_t* start,
                        size_t* n) except -1:
        """Check a byte range; widen it to whole pages. Returns 0 when it is empty."""
        cdef size_t stop
        self._check_range(offset, length)
        start[0] = <size_t>offset & ~(PAGE - 1)
        stop = _round_up(<size_t>(offset + length))
        n[0] = stop - start[0] if stop > start[0] else 0
        return n[0] != 0

    cdef int _overlay(self, size_t old_size, size_t new_size) except -1:
        """Make the mapped pages cover exactly [0, new_size) of the file."""
        cdef size_t new_end = _round_up(new_size)
        cdef size_t old_end = self._mapped_end
        cdef void* p
        cdef int err = 0
        if new_end > old_end:
            with nogil:
                p = mmap(self._base + old_end, new_end - old_end, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_FIXED, self._fd, <off_t>old_end)
                err = errno if p == MAP_FAILED else 0
            if p == MAP_FAILED:
                _raise_errno(err, self.path)
        elif new_end < old_end:
            # Pages past the new end of file would raise SIGBUS if touched: cover them
            # again with the inaccessible reservation.
            with nogil:
                p = mmap(self._base + new_end, old_end - new_end, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0)
                err = errno if p == MAP_FAILED else 0
            if p == MAP_FAILED:
                _raise_errno(err, self.path)
        self._mapped_end = new_end
        return 0

    @property
    def size(self):
        """The file size covered by the mapping."""
        return self._size

    @property
    def reserved(self):
        """Bytes of address space reserved (the largest size the file may reach)."""
        return self._reserved

    @property
    def fd(self):
        """The file descriptor (-1 once closed)."""
        return self._fd

    @property
    def closed(self):
        return self._fd == -1

    @property
    def exports(self):
        """Number of live buffer exports (views) of the mapping."""
        return self._exports

    @property
    def address(self):
        """The base address of the mapping (constant for the mapping's lifetime)."""
        return <size_t>self._base

    def resize(self, Py_ssize_t new_size):
        """Set the file size with ftruncate(2) and make the overlay match it."""
        cdef int rc, err = 0
        self._check_open()
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        if new_size < 0 or <size_t>new_size > self._reserved:
            raise ValueError(
                f"{self.path}: cannot grow to {new_size} bytes; only {self._reserved} bytes of "
                "address space are reserved"
            )
        if <size_t>new_size < self._size:
            self._overlay(self._size, <size_t>new_size)
        elif <size_t>new_size > self._size:
            # Allocate the blocks now: a store into a hole of a full disk would raise SIGBUS,
            # while posix_fallocate reports ENOSPC. Filesystems without it fall back below.
            while True:
                with nogil:
                    err = posix_fallocate(self._fd, <off_t>self._size,
                                          <off_t>(<size_t>new_size - self._size))
                if err != EINTR:
                    break
                PyErr_CheckSignals()
            if err == 0:
                self._overlay(self._size, <size_t>new_size)
                self._size = <size_t>new_size
                return
            if err != EOPNOTSUPP and err != ENOSYS and err != EINVAL:
                _raise_errno(err, self.path)
        while True:
            with nogil:
                rc = ftruncate(self._fd, <off_t>new_size)
                err = errno if rc == -1 else 0
            if rc == 0 or err != EINTR:
                break
            PyErr_CheckSignals()
        if rc == -1:
            _raise_errno(err, self.path)
        if <size_t>new_size > self._size:
            self._overlay(self._size, <size_t>new_size)
        self._size = <size_t>new_size

    def write(self, Py_ssize_t offset, data):
        """Store a bytes-like object at ``offset`` (inside the current size)."""
        cdef Py_buffer buf
        cdef int err = 0
        self._check_open()
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
        try:
            self._check_range(offset, buf.len)
            if buf.len >= PWRITE_THRESHOLD:
                with nogil:
                    err = dz_pwrite_all(self._fd, <off_t>offset,
                                        <const unsigned char*>buf.buf, <size_t>buf.len)
                if err:
                    _raise_errno(err, self.path)
            else:
                memcpy(self._base + offset, buf.buf, <size_t>buf.len)
        finally:
            PyBuffer_Release(&buf)

    def write_crc32(self, Py_ssize_t offset, data, unsigned int crc=0):
        """Store ``data`` at ``offset`` and return its CRC-32, reading the source once."""
        cdef Py_buffer buf
        cdef uint32_t c_crc = crc
        cdef int err = 0
        self._check_open()
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
        try:
            self._check_range(offset, buf.len)
            if dz_get_threads() > 1 and buf.len >= THREADED_WRITE_MIN and \
                    <size_t>buf.len >= 2 * DZ_MIN_SLICE:
                # Large enough to split: every thread faults in, copies and checksums a slice
                # of the mapping (pwrite would serialise them on the inode's lock).
                with nogil:
                    c_crc = dz_crc32_copy_mt(c_crc, <unsigned char*>self._base + offset,
                                             <const unsigned char*>buf.buf, <size_t>buf.len,
                                             buf.len >= POPULATE_THRESHOLD)
            elif buf.len >= PWRITE_THRESHOLD:
                with nogil:
                    err = dz_crc32_pwrite(self._fd, <off_t>offset,
                                          <const unsigned char*>buf.buf, <size_t>buf.len, &c_crc)
                if err:
                    _raise_errno(err, self.path)
            else:
                c_crc = dz_crc32_copy(c_crc, <unsigned char*>self._base + offset,
                                      <const unsigned char*>buf.buf, <size_t>buf.len)
        finally:
            PyBuffer_Release(&buf)
        return c_crc

    def pwrite(self, Py_ssize_t offset, data):
        """Write ``data`` at ``offset`` with pwrite(2), growing the file and the mapping.

        Unlike stores into the mapping, a pwrite past the end never exposes zeros: used to
        lay down an empty archive in one step.
        """
        cdef Py_buffer buf
        cdef Py_ssize_t rc
        cdef int err = 0
        cdef size_t end
        self._check_open()
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
        try:
            if offset < 0 or <size_t>(offset + buf.len) > self._reserved:
                raise ValueError(f"{self.path}: pwrite outside the reserved range")
            while True:
                with nogil:
                    rc = pwrite(self._fd, buf.buf, <size_t>buf.len, <off_t>offset)
                    err = errno if rc == -1 else 0
                if rc != -1 or err != EINTR:
                    break
                PyErr_CheckSignals()
            if rc == -1:
                _raise_errno(err, self.path)
            if rc != buf.len:
                raise OSError(f"{self.path}: short write ({rc} of {buf.len} bytes)")
            end = <size_t>(offset + buf.len)
            if end > self._size:
                self._overlay(self._size, end)
                self._size = end
        finally:
            PyBuffer_Release(&buf)

    def zero(self, Py_ssize_t offset, Py_ssize_t length):
        """Store zeros over ``[offset, offset + length)``."""
        self._check_range(offset, length)
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        with nogil:
            memset(self._base + offset, 0, <size_t>length)

    def move(self, Py_ssize_t dst, Py_ssize_t src, Py_ssize_t length):
        """Copy ``length`` bytes inside the mapping; the ranges must not overlap."""
        self._check_range(dst, length)
        self._check_range(src, length)
        if not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        if dst < src + length and src < dst + length:
            raise ValueError("overlapping ranges")
        with nogil:
            memcpy(self._base + dst, self._base + src, <size_t>length)

    def read(self, Py_ssize_t offset, Py_ssize_t length):
        """Return a copy of ``[offset, offset + length)`` as bytes."""
        self._check_range(offset, length)
        return (<char*>self._base)[offset:offset + length]

    def crc32(self, Py_ssize_t offset, Py_ssize_t length, unsigned int crc=0):
        """CRC-32 of ``[offset, offset + length)``, continuing from ``crc``."""
        cdef uint32_t c_crc = crc
        self._check_range(offset, length)
        if <size_t>length >= NOGIL_THRESHOLD:
            with nogil:
                c_crc = dz_crc32_copy_mt(c_crc, NULL, <const unsigned char*>self._base + offset,
                                         <size_t>length, 0)
        else:
            c_crc = dz_crc32(c_crc, <const unsigned char*>self._base + offset, <size_t>length)
        return c_crc

    def is_zero(self, Py_ssize_t offset, Py_ssize_t length):
        """True when every byte of ``[offset, offset + length)`` is zero."""
        cdef const unsigned char* p
        cdef size_t i, n
        cdef bint zero = True
        self._check_range(offset, length)
        p = <const unsigned char*>self._base + offset
        n = <size_t>length
        with nogil:
            for i in range(n):
                if p[i] != 0:
                    zero = False
                    break
        return zero

    def rfind(self, bytes needle, Py_ssize_t start, Py_ssize_t end):
        """Highest offset in ``[start, end)`` where ``needle`` starts and fits, or -1.

        Runs of zero bytes (such as the tail an interrupted append leaves) are skipped
        eight bytes at a time.
        """
        cdef const unsigned char* base
        cdef const unsigned char* nd = needle
        cdef Py_ssize_t n = len(needle), pos, found = -1
        self._check_range(start, end - start if end >= start else 0)
        if n == 0 or end - start < n:
            return -1
        base = <const unsigned char*>self._base
        with nogil:
            pos = end - n
            while pos >= start:
                if base[pos] == nd[0] and memcmp_(base + pos, nd, n) == 0:
                    found = pos
                    break
                pos -= 1
        return found

    def view(self, Py_ssize_t offset, Py_ssize_t length, bint writable=False):
        """A memoryview of ``[offset, offset + length)`` aliasing the mapping (no copy)."""
        self._check_range(offset, length)
        if writable and not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        return memoryview(_Region(self, offset, length, not writable))

    def madvise(self, Py_ssize_t offset, Py_ssize_t length, str advice):
        """Give the kernel a paging hint (``normal``, ``random``, ``sequential``,
        ``willneed``, ``dontneed``) for a byte range."""
        cdef int c_advice = ADVICE[advice]
        cdef size_t start, n
        cdef int rc, err = 0
        if not self._page_span(offset, length, &start, &n):
            return
        with nogil:
            rc = madvise(self._base + start, n, c_advice)
            err = errno if rc == -1 else 0
        if rc == -1:
            _raise_errno(err, self.path)

    def populate(self, Py_ssize_t offset, Py_ssize_t length, bint writable=False):
        """Map the whole pages inside ``[offset, offset + length)`` in one call
        (``MADV_POPULATE_READ``, or ``MADV_POPULATE_WRITE`` to fill them next; Linux 5.14),
        instead of a fault at the first touch of each. No byte changes, and none outside the
        range is touched (partial pages at its ends are left out). A hint: returns whether
        the kernel did it (False for less than a whole page, or a kernel without it)."""
        cdef size_t start, stop
        cdef int rc
        self._check_range(offset, length)
        if writable and not self.writable:
            raise ValueError(f"{self.path} is mapped read-only")
        start = _round_up(<size_t>offset)
        stop = <size_t>(offset + length) & ~(PAGE - 1)
        if stop <= start:
            return False
        with nogil:
            rc = madvise(self._base + start, stop - start,
                         MADV_POPULATE_WRITE if writable else MADV_POPULATE_READ)
        return rc == 0

    def msync(self, Py_ssize_t offset, Py_ssize_t length):
        """Write dirty pages of a byte range back to the file and wait (MS_SYNC)."""
        cdef size_t start, n
        cdef int rc, err = 0
        if not self._page_span(offset, length, &start, &n):
            return
        with nogil:
            rc = msync(self._base + start, n, MS_SYNC)
            err = errno if rc == -1 else 0
        if rc == -1:
            _raise_errno(err, self.path)

    def fsync(self):
        """fsync(2) the file (data and size)."""
        cdef int rc, err = 0
        self._check_open()
        while True:
            with nogil:
                rc = c_fsync(self._fd)
                err = errno if rc == -1 else 0
            if rc == 0 or err != EINTR:
                break
            PyErr_CheckSignals()
        if rc == -1:
            _raise_errno(err, self.path)

    def close(self):
        """Unmap and close. Idempotent; ``BufferError`` while views are alive."""
        if self._exports > 0:
            raise BufferError(
                f"cannot close {self.path}: {self._exports} zero-copy view(s) of it are still "
                "alive (delete the arrays or memoryviews that use it first)"
            )
        self._release()

    cdef void _release(self) noexcept nogil:
        if self._region != NULL:
            munmap(self._region, self._region_len)
            self._region = NULL
            self._base = NULL
        if self._fd != -1:
            c_close(self._fd)  # also releases the flock
            self._fd = -1
        self._size = 0
        self._mapped_end = 0

    def __dealloc__(self):
        self._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._fd == -1 else f"{self._size} bytes"
        return f"<FileMapping {self.path!r} {'rw' if self.writable else 'r'} {state}>"


cdef inline int memcmp_(const unsigned char* a, const unsigned char* b,
                        Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if a[i] != b[i]:
            return 1
    return 0


cdef class _Region:
    """One counted buffer export of a byte range of a FileMapping."""

    cdef FileMapping owner
    cdef Py_ssize_t offset
    cdef Py_ssize_t length
    cdef bint readonly

    def __cinit__(self, FileMapping owner, Py_ssize_t offset, Py_ssize_t length, bint readonly):
        self.owner = owner
        self.offset = offset
        self.length = length
        self.readonly = readonly

    def __getbuffer__(self, Py_buffer* view, int flags):
        if self.owner._base == NULL and self.length > 0:
            raise ValueError(f"the mapping of {self.owner.path} is closed")
        if self.readonly and (flags & PyBUF_WRITABLE):
            raise BufferError("this view of the archive is read-only")
        PyBuffer_FillInfo(view, self, self.owner._base + self.offset, self.length,
                          self.readonly, flags)
        self.owner._exports += 1

    def __releasebuffer__(self, Py_buffer* view):
        self.owner._exports -= 1
