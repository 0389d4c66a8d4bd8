# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Decoding of vlen-utf8 chunks (numcodecs ``VLenUTF8``) into an object array of ``str``, each
distinct value made once.

A string vector of a data set mostly repeats a few values (cell types, batches): decoding
each item into its own ``str`` object costs an allocation and a UTF-8 decode per item, and
hashing them later (to look them up in an axis) one hash per object. Here each item's bytes
are looked up in a hash table of the values already decoded (FNV-1a over the bytes, open
addressing, compared with ``memcmp``); a value seen before is the same ``str`` object again.
Every length is checked against the chunk's end before its bytes are read; invalid UTF-8
raises ``UnicodeDecodeError`` as the strict decoder does.
"""

import numpy as np

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp

from _bytes cimport le_u32


cdef inline uint64_t _hash(const uint8_t* p, uint32_t n) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL
    cdef uint32_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h


# The table of distinct values stays small (2 MiB): more distinct values than this are left
# to the plain decoder.
_MOST_DISTINCT = 1 << 16


def decode_vlen_utf8(const uint8_t[::1] raw, Py_ssize_t count):
    """The ``count`` strings of the vlen-utf8 chunk ``raw`` (a 4-byte little-endian count,
    then per item a 4-byte length and its UTF-8 bytes) as a 1-D object array, equal values
    sharing one ``str``; ``None`` as soon as most values prove distinct (past the first
    4096) or they pass 65,536 distinct values, for a plain decoder to do. Raises
    ``ValueError`` when the chunk's count differs from ``count`` or an item runs past its
    end, ``UnicodeDecodeError`` for invalid UTF-8."""
    cdef Py_ssize_t size = raw.shape[0]
    if size < 4 or le_u32(&raw[0]) != <uint64_t>count:
        raise ValueError(f"vlen-utf8 chunk does not hold {count} strings")
    if count == 0:
        return np.empty(0, dtype=object)
    cdef Py_ssize_t most = min(count, _MOST_DISTINCT), slots = 16
    while slots < 2 * most:
        slots *= 2
    cdef int64_t[::1] table = np.full(slots, -1, dtype=np.int64)  # -> index into the values
    cdef int64_t[::1] starts = np.empty(most, dtype=np.int64)  # of each distinct value
    cdef uint32_t[::1] lengths = np.empty(most, dtype=np.uint32)
    codes_array = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] codes = codes_array  # the distinct value of each item
    values = []
    cdef Py_ssize_t pos = 4, i, slot, mask = slots - 1, found, distinct = 0
    cdef uint32_t n
    cdef uint64_t h
    cdef const uint8_t* base = &raw[0]
    for i in range(count):
        if pos + 4 > size:
            raise ValueError(f"vlen-utf8 chunk ends inside item {i}")
        n = le_u32(base + pos)
        pos += 4
        if <uint64_t>n > <uint64_t>(size - pos):
            raise ValueError(f"vlen-utf8 item {i} runs past the chunk's end")
        h = _hash(base + pos, n)
        slot = <Py_ssize_t>(h & <uint64_t>mask)
        found = -1
        while table[slot] >= 0:
            found = table[slot]
            if lengths[found] == n and memcmp(base + starts[found], base + pos, n) == 0:
                break
            found = -1
            slot = (slot + 1) & mask
        if found < 0:
            if (distinct >= 4096 and 2 * distinct > i) or distinct == most:
                return None
            found = distinct
            distinct += 1
            values.append(PyUnicode_DecodeUTF8(<const char*>(base + pos), n, "strict"))
            starts[found] = pos
            lengths[found] = n
            table[slot] = found
        codes[i] = found
        pos += n
    uniques = np.empty(distinct, dtype=object)
    uniques[:] = values
    return uniques[codes_array]


def first_repeated_vlen_utf8(const uint8_t[::1] raw, Py_ssize_t count):
    """The position of the first of the ``count`` strings of the vlen-utf8 chunk ``raw``
    that repeats an earlier one, or -1 when all differ, without making a ``str`` of each:
    their bytes are compared (strict UTF-8 maps equal strings to equal bytes, and back).
    Raises as :func:`decode_vlen_utf8` does: ``ValueError`` when the chunk's count differs
    from ``count`` or an item runs past its end, ``UnicodeDecodeError`` for invalid UTF-8
    (an item that is not all ASCII is decoded, and dropped, to check it)."""
    cdef Py_ssize_t size = raw.shape[0]
    if size < 4 or le_u32(&raw[0]) != <uint64_t>count:
        raise ValueError(f"vlen-utf8 chunk does not hold {count} strings")
    if count == 0:
        return -1
    cdef Py_ssize_t slots = 16
    while slots < 2 * count:
        slots *= 2
    cdef int64_t[::1] table = np.full(slots, -1, dtype=np.int64)  # -> start of a length
    cdef Py_ssize_t pos = 4, i, slot, mask = slots - 1, found, j
    cdef uint32_t n
    cdef uint8_t high
    cdef const uint8_t* base = &raw[0]
    for i in range(count):
        if pos + 4 > size:
            raise ValueError(f"vlen-utf8 chunk ends inside item {i}")
        n = le_u32(base + pos)
        if <uint64_t>n > <uint64_t>(size - pos - 4):
            raise ValueError(f"vlen-utf8 item {i} runs past the chunk's end")
        high = 0
        for j in range(n):
            high |= base[pos + 4 + j]
        if high & 0x80:
            PyUnicode_DecodeUTF8(<const char*>(base + pos + 4), n, "strict")
        slot = <Py_ssize_t>(_hash(base + pos + 4, n) & <uint64_t>mask)
        while table[slot] >= 0:
            found = table[slot]
            if le_u32(base + found) == n and memcmp(base + found + 4, base + pos + 4, n) == 0:
                return i
            slot = (slot + 1) & mask
        table[slot] = pos
        pos += 4 + n
    return -1
