"""Little-endian loads and stores at any alignment, and range checks, for every extension.

Every on-disk layout dafzarr reads in compiled code (ZIP records, rkyv footers, vlen-utf8
chunks, LZ4 sequences) is little-endian and unaligned: the bytes are assembled one at a time,
which compilers turn into one load or store on little-endian machines and which stays right
on big-endian ones. Declarations only: ``cimport`` it (``from _bytes cimport le_u32``); no
module of that name exists at run time.
"""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef inline uint16_t le_u16(const uint8_t* p) noexcept nogil:
    return <uint16_t>(p[0] | (<uint16_t>p[1] << 8))


cdef inline uint32_t le_u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint64_t le_u64(const uint8_t* p) noexcept nogil:
    return le_u32(p) | (<uint64_t>le_u32(p + 4) << 32)


cdef inline int64_t le_i64(const uint8_t* p) noexcept nogil:
    return <int64_t>le_u64(p)


cdef inline double le_f64(const uint8_t* p) noexcept nogil:
    cdef uint64_t bits = le_u64(p)
    cdef double d
    memcpy(&d, &bits, 8)
    return d


cdef inline void put_u16(uint8_t* p, unsigned int v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF


cdef inline void put_u32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = (v >> 24) & 0xFF


cdef inline void put_u64(uint8_t* p, uint64_t v) noexcept nogil:
    put_u32(p, <uint32_t>v)
    put_u32(p + 4, <uint32_t>(v >> 32))


cdef inline bint in_range(int64_t pos, int64_t size, int64_t n) noexcept nogil:
    """Whether ``[pos, pos + size)`` lies inside ``[0, n)`` (``n >= 0``), computed without
    overflow for any ``pos`` and ``size``."""
    return pos >= 0 and size >= 0 and size <= n and pos <= n - size
