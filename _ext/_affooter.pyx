# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""ArrayFile footer entries decoded in compiled code: the per-array part of opening a file.

An ``.af`` footer holds one 168-byte ``ArrayMeta`` record per array and a ``.stats`` object
one 96-byte ``ArrayStats`` record per array (rkyv 0.8's archived layout, little-endian,
64-bit relative pointers; see ``dafzarr/arrayfile/_rkyv.py`` and ``_format.py``). The
schema-driven decoder in Python reads them with a few dozen calls per record; here each
vector of records is read in one C loop that builds the same values (dictionaries, lists,
tuples) with the same checks, in the same order, charging out-of-line claims to the same
:class:`~dafzarr.arrayfile._rkyv.Decoder` budget.

Every range and alignment is checked in C before a byte is read; a failed check calls the
decoder's own ``check`` or ``charge`` (or raises :class:`~dafzarr.errors.RkyvError` with the
Python decoder's message), so a hostile footer is refused with the same error either way.
The rare nested element types (a list type boxed inside a ``DType``) and chunk tables of at
least the vectorised-read threshold are handed back to the Python types.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memchr

from _bytes cimport in_range, le_f64, le_i64, le_u16, le_u32, le_u64

from dafzarr.errors import RkyvError

cdef enum:
    _ARRAY_SIZE = 168
    _STATS_SIZE = 96
    _MAX_NDIM = 64

# The layout's tables, defined here once: ``dafzarr.arrayfile._format`` builds its schema
# from them.
#: Bytes of one archived ``ArrayMeta`` record and of one ``ArrayStats`` record.
ARRAY_SIZE = _ARRAY_SIZE
STATS_SIZE = _STATS_SIZE
#: Most coordinates per chunk of a chunk table.
MAX_NDIM = _MAX_NDIM
#: The unit variants of ``DType`` by tag (13 and 14 are the boxed list types).
UNIT_DTYPES = {
    0: "Bool", 1: "Int8", 2: "Int16", 3: "Int32", 4: "Int64", 5: "UInt8", 6: "UInt16",
    7: "UInt32", 8: "UInt64", 9: "Float32", 10: "Float64", 11: "String", 12: "Binary",
    15: "TimestampNs",
}
#: The variants of ``ArrayAttributes`` by tag: the width of the index pairs.
ATTR_WIDTHS = ("U16", "U32", "U64")
#: The variants of ``FillValue`` by tag.
FILL_KINDS = ("Bool", "Int", "UInt", "Float", "String", "TimestampNs")
#: The variants of ``StatValue`` by tag.
STAT_KINDS = ("Int", "UInt", "Float", "Bytes", "TimestampNs")

# the values read: one shared tuple per unit variant (tuples are immutable)
cdef dict _UNIT_VALUES = {tag: (name,) for tag, name in UNIT_DTYPES.items()}
cdef tuple _FILL = FILL_KINDS
cdef tuple _STAT = STAT_KINDS


@cython.auto_pickle(False)
cdef class _Payload:
    """The decoder's bytes, read through a buffer, and its budget, kept in C while a
    vector is read (written back before Python code runs and when done)."""

    cdef object dec
    cdef Py_buffer view
    cdef bint held
    cdef const uint8_t* p
    cdef int64_t n
    cdef int64_t left

    def __cinit__(self, object dec):
        self.dec = dec
        self.held = False
        PyObject_GetBuffer(dec.buf, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.p = <const uint8_t*>self.view.buf
        self.n = self.view.len
        if self.n != dec.n:
            raise RkyvError("the decoder's size does not match its bytes")
        self.left = dec.left

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)

    cdef inline void sync(self):
        """Hand the budget back to the Python decoder."""
        self.dec.left = self.left

    cdef inline void resume(self):
        """Take the budget back after Python code ran."""
        self.left = self.dec.left

    cdef int fail(self, object pos, object size, int64_t align, str what) except -1:
        """The decoder's own message for a range or alignment that does not fit."""
        self.sync()
        self.dec.check(pos, size, align, what)
        raise RkyvError(f"{what}: range [{pos}, {pos + size}) is not a valid {align}-aligned "
                        f"range of the {self.n}-byte payload")

    cdef inline int check(self, int64_t pos, int64_t size, int64_t align, str what) except -1:
        if in_range(pos, size, self.n) and not pos % align:
            return 0
        return self.fail(pos, size, align, what)

    cdef int64_t target(self, int64_t pos, int64_t off, int64_t size, int64_t align,
                        str what) except -1:
        """``pos + off`` (a relative pointer at ``pos``), checked to start ``size`` bytes
        inside the payload, aligned (computed without overflow for any ``off``)."""
        if off >= -pos and off <= self.n - pos:
            self.check(pos + off, size, align, what)
            return pos + off
        return self.fail(<object>pos + <object>off, size, align, what)

    cdef int charge(self, int64_t size, str kind, int64_t pos) except -1:
        """Count ``size`` out-of-line bytes against the payload's size; refuse aliasing."""
        if size <= self.left:
            self.left -= size
            return 0
        self.sync()
        self.dec.charge(size, f"{kind} at {pos}")
        raise RkyvError(f"{kind} at {pos}: the payload's pointers alias one another")

    cdef int64_t vec(self, int64_t pos, int64_t esize, int64_t ealign, int64_t* count
                     ) except -1:
        """Where the elements of the vector whose head is at ``pos`` start; their number
        goes to ``count`` (``Vec.locate``: count, range, alignment, then the charge)."""
        self.check(pos, 16, 8, "vector")
        cdef int64_t off = le_i64(self.p + pos)
        cdef uint64_t n = le_u64(self.p + pos + 8)
        if n > <uint64_t>self.n:
            raise RkyvError(f"vector at {pos} claims {n} elements in a {self.n}-byte payload")
        cdef int64_t start = self.target(pos, off, <int64_t>n * esize, ealign,
                                         "vector elements")
        self.charge(<int64_t>n * esize, "vector", pos)
        count[0] = <int64_t>n
        return start

    cdef str string(self, int64_t pos):
        """``ArchivedString``: inline up to 16 bytes (0xFF-filled), else out of line."""
        self.check(pos, 16, 8, "string")
        cdef const uint8_t* s = self.p + pos
        cdef uint64_t v
        cdef int64_t length, start
        cdef const void* end
        if (s[0] & 0xC0) == 0x80:
            v = le_u64(s)
            length = <int64_t>((v & 0x3F) | ((v & ~(<uint64_t>0xFF)) >> 2))
            if length <= 16:
                raise RkyvError(f"out-of-line string at {pos} has the inline length {length}")
            start = self.target(pos, le_i64(s + 8), length, 1, "string bytes")
            self.charge(length, "string", pos)
            return PyUnicode_DecodeUTF8(<char*>(self.p + start), length, NULL)
        end = memchr(s, 0xFF, 16)
        length = 16 if end == NULL else <const uint8_t*>end - s
        return PyUnicode_DecodeUTF8(<char*>s, length, NULL)

    cdef bint boolean(self, int64_t pos) except -1:
        cdef uint8_t v = self.p[pos]
        if v > 1:
            raise RkyvError(f"bool at {pos} has the value {v}")
        return v

    cdef list u32s(self, int64_t pos):
        """``Vec<u32>`` as a list of ints."""
        cdef int64_t n, i
        cdef int64_t start = self.vec(pos, 4, 4, &n)
        cdef list out = [None] * n
        for i in range(n):
            out[i] = le_u32(self.p + start + 4 * i)
        return out

    cdef list strings(self, int64_t pos):
        """``Vec<String>`` as a list of str."""
        cdef int64_t n, i
        cdef int64_t start = self.vec(pos, 16, 8, &n)
        cdef list out = [None] * n
        for i in range(n):
            out[i] = self.string(start + 16 * i)
        return out

    cdef object dtype(self, int64_t pos, object dtype_type):
        """``DType`` (24 bytes): a unit variant here, a boxed one by the Python type."""
        self.check(pos, 24, 8, "enum")
        cdef int tag = self.p[pos]
        if tag == 13 or tag == 14:
            self.sync()
            value = dtype_type.read(self.dec, pos)
            self.resume()
            return value
        value = _UNIT_VALUES.get(tag)
        if value is None:
            raise RkyvError(f"enum at {pos} has the unknown tag {tag}")
        return value

    cdef int64_t some(self, int64_t pos) except -2:
        """Where the 24-byte enum of an ``Option`` of one (32 bytes, the value at +8) lies,
        checked, or -1 for ``None``."""
        self.check(pos, 32, 8, "option")
        cdef int tag = self.p[pos]
        if tag == 0:
            return -1
        if tag != 1:
            raise RkyvError(f"option at {pos} has the tag {tag}")
        self.check(pos + 8, 24, 8, "enum")
        return pos + 8

    cdef object fill(self, int64_t pos):
        """``Option<FillValue>`` (32 bytes, the value at +8)."""
        pos = self.some(pos)
        if pos < 0:
            return None
        cdef int tag = self.p[pos]
        if tag == 0:
            return (_FILL[0], self.boolean(pos + 1))
        if tag == 1:
            return (_FILL[1], le_i64(self.p + pos + 8))
        if tag == 2:
            return (_FILL[2], le_u64(self.p + pos + 8))
        if tag == 3:
            return (_FILL[3], le_f64(self.p + pos + 8))
        if tag == 4:
            return (_FILL[4], self.string(pos + 8))
        if tag == 5:
            return (_FILL[5], le_i64(self.p + pos + 8))
        raise RkyvError(f"enum at {pos} has the unknown tag {tag}")

    cdef tuple attributes(self, int64_t pos):
        """``ArrayAttributes`` (24 bytes): index pairs of width 16, 32 or 64 bits."""
        self.check(pos, 24, 8, "enum")
        cdef int tag = self.p[pos]
        if tag > 2:
            raise RkyvError(f"enum at {pos} has the unknown tag {tag}")
        cdef int64_t width = 2 << tag  # bytes per index
        cdef int64_t n, i, at
        cdef int64_t start = self.vec(pos + 8, 2 * width, width, &n)
        cdef list pairs = [None] * n
        cdef const uint8_t* q
        for i in range(n):
            at = start + 2 * width * i
            self.check(at, 2 * width, width, "struct")
            q = self.p + at
            if tag == 0:
                pairs[i] = {"k": le_u16(q), "v": le_u16(q + 2)}
            elif tag == 1:
                pairs[i] = {"k": le_u32(q), "v": le_u32(q + 4)}
            else:
                pairs[i] = {"k": le_u64(q), "v": le_u64(q + 8)}
        return (ATTR_WIDTHS[tag], pairs)

    cdef object chunk_table(self, int64_t pos, object table_type):
        """``Vec<ChunkEntry>``: its place and size, the rows filled later in one pass by the
        Python side (or read at once there when the table is long)."""
        cdef int64_t n
        cdef int64_t start = self.vec(pos, 32, 8, &n)
        if n == 0:
            return table_type.empty_table()
        if n >= table_type.big:
            self.sync()
            table = table_type._read_now(self.dec, pos, start, n)
            self.resume()
            return table
        cdef uint64_t ndim = le_u64(self.p + start + 8)
        if ndim > _MAX_NDIM:
            raise RkyvError(f"chunk table at {pos}: {ndim} coordinates per chunk")
        self.charge(4 * <int64_t>ndim * n, "chunk table", pos)
        table = table_type.deferred_table(n, ndim)
        self.dec.later.append((start, n, ndim, table))
        return table

    cdef object stat(self, int64_t pos):
        """``Option<StatValue>`` (32 bytes, the value at +8)."""
        pos = self.some(pos)
        if pos < 0:
            return None
        cdef int tag = self.p[pos]
        cdef int64_t n, start
        if tag == 0:
            return (_STAT[0], le_i64(self.p + pos + 8))
        if tag == 1:
            return (_STAT[1], le_u64(self.p + pos + 8))
        if tag == 2:
            return (_STAT[2], le_f64(self.p + pos + 8))
        if tag == 3:
            start = self.vec(pos + 8, 1, 1, &n)
            return (_STAT[3], (<const char*>(self.p + start))[:n])
        if tag == 4:
            return (_STAT[4], le_i64(self.p + pos + 8))
        raise RkyvError(f"enum at {pos} has the unknown tag {tag}")


def read_arrays(dec, int64_t start, int64_t n, dtype_type, table_type):
    """The ``n`` archived ``ArrayMeta`` records from ``start`` (a vector already located
    and charged by ``dec``) as the dictionaries the Python schema decodes them to."""
    cdef _Payload pl = _Payload(dec)
    pl.check(start, n * _ARRAY_SIZE, 8, "vector elements")
    cdef list out = [None] * n
    cdef int64_t i, pos
    try:
        for i in range(n):
            pos = start + _ARRAY_SIZE * i
            name = pl.string(pos)
            dtype = pl.dtype(pos + 16, dtype_type)
            shape = pl.u32s(pos + 40)
            dims = pl.strings(pos + 56)
            chunk_shape = pl.u32s(pos + 72)
            chunks = pl.chunk_table(pos + 88, table_type)
            layout = {"shape": shape, "dimension_names": dims,
                      "storage": {"chunk_shape": chunk_shape, "chunks": chunks}}
            fill = pl.fill(pos + 104)
            deleted = pl.boolean(pos + 136)
            attributes = pl.attributes(pos + 144)
            out[i] = {"name": name, "dtype": dtype, "layout": layout, "fill_value": fill,
                      "deleted": deleted, "attributes": attributes}
    finally:
        pl.sync()
    return out


def read_stats(dec, int64_t start, int64_t n):
    """The ``n`` archived ``ArrayStats`` records from ``start`` (a vector already located
    and charged by ``dec``) as the dictionaries the Python schema decodes them to."""
    cdef _Payload pl = _Payload(dec)
    pl.check(start, n * _STATS_SIZE, 8, "vector elements")
    cdef list out = [None] * n
    cdef int64_t i, pos
    try:
        for i in range(n):
            pos = start + _STATS_SIZE * i
            name = pl.string(pos)
            lo = pl.stat(pos + 16)
            hi = pl.stat(pos + 48)
            out[i] = {"name": name, "min": lo, "max": hi,
                      "null_count": le_u64(pl.p + pos + 80), "row_count": le_u64(pl.p + pos + 88)}
    finally:
        pl.sync()
    return out
