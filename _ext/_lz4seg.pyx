# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""Sequence-level inspection of LZ4 *block* data (no frame, no size prefix).

An LZ4 block is a run of sequences: a token byte (literal count in the high nibble, match
length - 4 in the low nibble, 15 meaning "more length bytes follow"), the literal count's
extra bytes, the literals, then a 2-byte match offset and the match length's extra bytes.
The last sequence has literals only. ArrayFile splices independently compressed segments
into one block; that needs the first and the last sequence of each piece, which only a
forward walk over the tokens can find. Everything read is bounds-checked: malformed input
raises ``ValueError``, never reads past the buffer.
"""

from libc.stdint cimport uint8_t

from _bytes cimport le_u16


cdef inline Py_ssize_t _read_length(
    const uint8_t* src, Py_ssize_t n, Py_ssize_t* pos, Py_ssize_t base
) except -1 nogil:
    """``base`` plus the 255-continued extra length bytes at ``pos[0]``."""
    cdef Py_ssize_t p = pos[0]
    cdef Py_ssize_t total = base
    cdef uint8_t b
    while True:
        if p >= n:
            with gil:
                raise ValueError("LZ4 data ends inside a length field")
        b = src[p]
        p += 1
        total += b
        if total > n * 255 + 15:  # no valid block of n bytes encodes more
            with gil:
                raise ValueError("LZ4 length field overflows")
        if b != 255:
            break
    pos[0] = p
    return total


def lz4_runs(const uint8_t[::1] data):
    """Locate the first and the last literal run of one LZ4 block.

    Returns ``(first_nibble, first_lits, first_len, last_token, last_lits, last_len)``:
    the match nibble of the first token, the offset and length of the first sequence's
    literals, the offset of the last (literal-only) sequence's token, and the offset and
    length of its literals. For a block of one sequence, first and last are the same.
    """
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t pos = 0, tok, lit_start, lit_len, seq = 0
    cdef Py_ssize_t first_nib = 0, first_start = 0, first_len = 0
    cdef uint8_t t
    if n == 0:
        raise ValueError("empty LZ4 block")
    with nogil:
        while True:
            tok = pos
            t = src[pos]
            pos += 1
            lit_len = t >> 4
            if lit_len == 15:
                lit_len = _read_length(src, n, &pos, 15)
            lit_start = pos
            if lit_len > n - pos:
                with gil:
                    raise ValueError("LZ4 literals run past the end of the block")
            pos += lit_len
            if seq == 0:
                first_nib = t & 15
                first_start = lit_start
                first_len = lit_len
            seq += 1
            if pos == n:
                break  # the last sequence: literals only
            if n - pos < 2:
                with gil:
                    raise ValueError("LZ4 data ends inside a match offset")
            if src[pos] == 0 and src[pos + 1] == 0:
                with gil:
                    raise ValueError("LZ4 match offset 0")
            pos += 2
            if (t & 15) == 15:
                _read_length(src, n, &pos, 15)
            if pos >= n:
                with gil:
                    raise ValueError("LZ4 block does not end with literals")
    return first_nib, first_start, first_len, tok, lit_start, lit_len


def lz4_decoded_size(const uint8_t[::1] data):
    """The number of bytes one LZ4 block decodes to, found by walking its sequences.

    Nothing is decoded: the literal and match lengths are summed, and every match offset is
    checked to point into the output produced before it. A block that passes decodes to
    exactly this size, so a caller can allocate it on that proof rather than on a claim.
    """
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t pos = 0, lit_len, offset, total = 0
    cdef uint8_t t
    if n == 0:
        raise ValueError("empty LZ4 block")
    with nogil:
        while True:
            t = src[pos]
            pos += 1
            lit_len = t >> 4
            if lit_len == 15:
                lit_len = _read_length(src, n, &pos, 15)
            if lit_len > n - pos:
                with gil:
                    raise ValueError("LZ4 literals run past the end of the block")
            pos += lit_len
            total += lit_len
            if pos == n:
                break  # the last sequence: literals only
            if n - pos < 2:
                with gil:
                    raise ValueError("LZ4 data ends inside a match offset")
            offset = le_u16(src + pos)
            if offset == 0 or offset > total:
                with gil:
                    raise ValueError("LZ4 match offset points before the start of the output")
            pos += 2
            if (t & 15) == 15:
                total += _read_length(src, n, &pos, 15) + 4
            else:
                total += (t & 15) + 4
            if pos >= n:
                with gil:
                    raise ValueError("LZ4 block does not end with literals")
    return total
