# cython: boundscheck=False, wraparound=False, cdivision=True
"""The ZIP central directory parsed in one pass over its bytes, and the index built from it.

MmapZipStore opens archives of millions of entries: the fixed 46-byte records, the names and
the ZIP64 extras are read here with C loops, each entry becomes one compact :class:`Entry`
(no cyclic garbage collection: an entry holds only numbers and strings), and the index
of served keys is built in one loop. Every length and offset is checked against the bytes
present before it is used, with the same messages as the checks they replace.
"""

cimport cython
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from dafzarr.errors import CorruptArchiveError

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)

cdef enum:
    CD_SIZE = 46
    LFH_SIZE = 30
    U16_MAX = 0xFFFF
    FLAG_UTF8 = 0x0800
    ZIP64_EXTRA_ID = 0x0001

cdef uint32_t CD_SIG = 0x02014B50
cdef uint64_t U32_MAX = 0xFFFFFFFF


@cython.no_gc
cdef class Entry:
    """One central-directory entry, with sizes and offsets resolved from ZIP64 extras."""

    cdef public str name
    cdef public int method
    cdef public int flags
    cdef public unsigned int crc
    cdef public long long csize
    cdef public object usize
    cdef public long long lfh_offset
    cdef public unsigned int cd_len  # at most 46 + 3 * 65535 bytes
    cdef public long long cd_pos  # offset of this entry's record inside the directory bytes
    cdef public long long data_offset  # resolved lazily from the local header (-1: not yet)
    cdef public long long end_limit  # the data must end before this offset (the next header)
    cdef public object refused  # why the name is not served (unsafe or not UTF-8), if so

    def __init__(
        self, str name, int method, int flags, unsigned int crc, long long csize, object usize,
        long long lfh_offset, long long cd_pos, unsigned int cd_len, long long data_offset=-1,
        long long end_limit=-1, object refused=None,
    ):
        self.name = name
        self.method = method
        self.flags = flags
        self.crc = crc
        self.csize = csize
        self.usize = usize
        self.lfh_offset = lfh_offset
        self.cd_pos = cd_pos
        self.cd_len = cd_len
        self.data_offset = data_offset
        self.end_limit = end_limit
        self.refused = refused

    @property
    def is_dir(self):
        """Whether the entry is a folder (its name ends with ``/``)."""
        return self.name.endswith("/")

    def _fields(self):
        return (self.name, self.method, self.flags, self.crc, self.csize, self.usize,
                self.lfh_offset, self.cd_pos, self.cd_len, self.data_offset, self.end_limit,
                self.refused)

    def __eq__(self, other):
        if type(other) is not Entry:
            return NotImplemented
        return self._fields() == (<Entry>other)._fields()

    def __repr__(self):
        names = ("name", "method", "flags", "crc", "csize", "usize", "lfh_offset", "cd_pos",
                 "cd_len", "data_offset", "end_limit", "refused")
        return "Entry(" + ", ".join(
            f"{k}={v!r}" for k, v in zip(names, self._fields())
        ) + ")"


cdef inline unsigned int _u16(const uint8_t* p) noexcept nogil:
    return p[0] | (<unsigned int>p[1] << 8)


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint64_t _u64(const uint8_t* p) noexcept nogil:
    return _u32(p) | (<uint64_t>_u32(p + 4) << 32)


cdef object _bad(object path, str what):
    return CorruptArchiveError(f"{path}: not a valid ZIP archive: {what}")


cdef inline bint _may_be_unsafe(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Whether the raw name has a byte an unsafe name needs (NUL, a leading ``/``, ``\\``,
    ``.``); the bytes below 0x80 decode to the same characters in UTF-8 and CP437."""
    cdef Py_ssize_t i
    cdef uint8_t c
    if n > 0 and s[0] == 0x2F:
        return True
    for i in range(n):
        c = s[i]
        if c == 0 or c == 0x5C or c == 0x2E:
            return True
    return False


def parse_entries(const uint8_t[::1] cd not None, Py_ssize_t n_entries, long long limit,
                  object path, object unsafe_name_reason, long long base=0,
                  Py_ssize_t first=0):
    """The entries of the directory whose bytes are ``cd``, every field checked.

    ``limit`` is the directory's offset (local headers and data lie below it);
    ``unsafe_name_reason(name)`` says why a decoded name is refused. For the last piece of a
    directory read in parts (see :func:`parse_some`): ``base`` is where ``cd`` starts in the
    directory, ``first`` the number of entries before it.
    """
    cdef Py_ssize_t used = 0
    entries = _parse(cd, n_entries, limit, path, unsafe_name_reason, base, first, False, &used)
    if used != cd.shape[0]:
        raise _bad(path, f"central directory has {cd.shape[0] - used} bytes after its last entry")
    return entries


def parse_some(const uint8_t[::1] cd not None, Py_ssize_t most, long long limit,
               object path, object unsafe_name_reason, long long base, Py_ssize_t first):
    """``(entries, used)``: the whole records at the start of ``cd`` (at most ``most``), a
    piece of a directory read in parts, and the bytes they take.

    ``base`` is where ``cd`` starts in the directory (the entries' ``cd_pos`` count from the
    directory's start), ``first`` the number of entries before it (for messages). A record
    cut by the end of ``cd`` is left for the next piece.
    """
    cdef Py_ssize_t used = 0
    entries = _parse(cd, most, limit, path, unsafe_name_reason, base, first, True, &used)
    return entries, used


cdef list _parse(const uint8_t[::1] cd, Py_ssize_t n_entries, long long limit, object path,
                 object unsafe_name_reason, long long base_pos, Py_ssize_t first, bint partial,
                 Py_ssize_t* used):
    cdef Py_ssize_t end = cd.shape[0]
    cdef Py_ssize_t pos = 0, index, rec_len, q, qend, body
    cdef const uint8_t* base = &cd[0] if end > 0 else NULL
    cdef const uint8_t* p
    cdef unsigned int flags, method, n_len, e_len, c_len, disk, tag, size, need
    cdef uint32_t crc
    cdef uint64_t csize, usize, lfh
    cdef bint found
    cdef Entry e
    # No more records than the bytes can hold (a trailer's count is not trusted for memory).
    cdef Py_ssize_t cap = min(n_entries, end // CD_SIZE + 1)
    cdef list entries = [None] * cap
    cdef object name, refused
    for index in range(n_entries):
        if pos + CD_SIZE > end:
            if partial:
                del entries[index:]
                break
            raise _bad(path, f"central directory ends inside entry {first + index}")
        p = base + pos
        if _u32(p) != CD_SIG:
            raise _bad(path, f"bad central directory signature at entry {first + index}")
        flags = _u16(p + 8)
        method = _u16(p + 10)
        crc = _u32(p + 16)
        csize = _u32(p + 20)
        usize = _u32(p + 24)
        n_len = _u16(p + 28)
        e_len = _u16(p + 30)
        c_len = _u16(p + 32)
        disk = _u16(p + 34)
        lfh = _u32(p + 42)
        rec_len = CD_SIZE + n_len + e_len + c_len
        if pos + rec_len > end:
            if partial:
                del entries[index:]
                break
            raise _bad(
                path, f"central directory entry {first + index} runs past the directory"
            )
        refused = None
        if flags & FLAG_UTF8:
            try:
                name = PyUnicode_DecodeUTF8(<const char*>(p + CD_SIZE), n_len, NULL)
            except UnicodeDecodeError:
                # undecodable bytes become lone surrogates: one character per byte
                name = PyUnicode_DecodeUTF8(
                    <const char*>(p + CD_SIZE), n_len, "surrogateescape"
                )
                refused = "its name is not valid UTF-8"
        else:
            name = (<const char*>(p + CD_SIZE))[:n_len].decode("cp437")
        if refused is None and _may_be_unsafe(p + CD_SIZE, n_len):
            refused = unsafe_name_reason(name)
        if usize == U32_MAX or csize == U32_MAX or lfh == U32_MAX or disk == U16_MAX:
            q = pos + CD_SIZE + n_len
            qend = q + e_len
            found = False
            while q + 4 <= qend:
                tag = _u16(base + q)
                size = _u16(base + q + 2)
                body = q + 4
                if body + size > qend:
                    break
                if tag == ZIP64_EXTRA_ID:
                    need = 8 * ((usize == U32_MAX) + (csize == U32_MAX) + (lfh == U32_MAX))
                    if size < need:
                        raise _bad(path, f"entry {name!r}: ZIP64 extra field too short")
                    q = body
                    if usize == U32_MAX:
                        usize = _u64(base + q)
                        q += 8
                    if csize == U32_MAX:
                        csize = _u64(base + q)
                        q += 8
                    if lfh == U32_MAX:
                        lfh = _u64(base + q)
                    found = True
                    break
                q = body + size
            if not found:
                raise _bad(
                    path, f"entry {name!r}: ZIP64 sizes announced but no ZIP64 extra field"
                )
        # lfh + LFH_SIZE + n_len > limit, without overflow (limit >= 0)
        if (lfh > <uint64_t>limit or <uint64_t>limit - lfh < LFH_SIZE + n_len
                or csize > <uint64_t>limit):
            raise _bad(path, f"entry {name!r}: local header or data outside the archive")
        e = Entry.__new__(Entry)
        e.name = name
        e.method = method
        e.flags = flags
        e.crc = crc
        e.csize = <long long>csize
        e.usize = usize
        e.lfh_offset = <long long>lfh
        e.cd_pos = base_pos + pos
        e.cd_len = rec_len
        e.data_offset = -1
        e.end_limit = -1
        e.refused = refused
        entries[index] = e
        pos += rec_len
    used[0] = pos
    return entries


cdef Py_ssize_t _stored_name_len(Entry e) except -1:
    if PyUnicode_IS_ASCII(e.name):
        return len(e.name)
    return len(e.name.encode("utf-8" if e.flags & FLAG_UTF8 else "cp437", "replace"))


def check_no_overlap(list entries not None, object path):
    """Refuse entries that share bytes; record in each where the next local header starts.

    Each entry occupies at least its fixed local header, its name and its data; the local
    extra field's length is only known from the local header, so each entry also records
    where the next local header starts (``end_limit``), which its data may not pass.
    """
    cdef Py_ssize_t i, n = len(entries)
    cdef Entry a, b
    cdef list order = entries
    for i in range(n - 1):
        if (<Entry>entries[i]).lfh_offset >= (<Entry>entries[i + 1]).lfh_offset:
            order = sorted(entries, key=_lfh_offset)
            break
    for i in range(n - 1):
        a = order[i]
        b = order[i + 1]
        if b.lfh_offset == a.lfh_offset:
            raise _bad(path, f"entries {a.name!r} and {b.name!r} share one local header")
        if b.lfh_offset < a.lfh_offset + LFH_SIZE + _stored_name_len(a) + a.csize:
            raise _bad(path, f"entries {a.name!r} and {b.name!r} overlap")
        a.end_limit = b.lfh_offset


def _lfh_offset(Entry e):
    return e.lfh_offset


def index_entries(list entries not None):
    """``(index, refused, shadowed, first_listed)`` of entries in directory order.

    ``index``: name -> entry of the served non-folder entries, the last of duplicate names
    winning; ``refused``: the entries whose names are not served; ``shadowed``: whether a
    served name repeats; ``first_listed``: the lowest local-header offset (-1: no entry).
    """
    cdef dict index = {}
    cdef list refused = []
    cdef Py_ssize_t served = 0
    cdef long long first = -1
    cdef Entry e
    cdef str name
    for item in entries:
        e = <Entry?>item
        if first < 0 or e.lfh_offset < first:
            first = e.lfh_offset
        if e.refused is not None:
            refused.append(e)
            continue
        name = e.name
        if len(name) and name[len(name) - 1] == "/":
            continue
        index[name] = e
        served += 1
    return index, refused, len(index) != served, first
