# cython: language_level=3, embedsignature=True, boundscheck=False, wraparound=False, cdivision=True
"""The ZIP central directory parsed in one pass over its bytes, and the index built from it;
small stored entries written in one call.

MmapZipStore opens archives of millions of entries: the fixed 46-byte records, the names and
the ZIP64 extras are read here with C loops, each entry becomes one compact :class:`Entry`
(no cyclic garbage collection: an entry holds only numbers and strings), and the index
of served keys is built in one loop. Every length and offset is checked against the bytes
present before it is used, with the same messages as the checks they replace.

Inside a batch, a new small entry is written by :func:`stage_small` (or a run of them by
:func:`stage_small_run`): local header, data and CRC-32 into the mapping, its
central-directory record, its :class:`Entry` and its index slot, in one compiled call.

The record layouts, the padding rule and the key check are those of ``_zipformat.pxd``,
handed to Python below (``dafzarr.zipstore._format`` takes its constants from here); the
CRC-32 kernel is the one of :mod:`dafzarr._posix`.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

cimport _zipformat as zf
from _bytes cimport le_u16, le_u32, le_u64, put_u16, put_u32, put_u64
from dafzarr._posix cimport crc32_copy

from dafzarr.errors import ClosedError, CorruptArchiveError

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)

# --- The layout, for Python -----------------------------------------------------------------

LFH_SIG = zf.LFH_SIG
DEAD_LFH_SIG = zf.DEAD_LFH_SIG
CD_SIG = zf.CD_SIG
EOCD_SIG = zf.EOCD_SIG
ZIP64_EOCD_SIG = zf.ZIP64_EOCD_SIG
ZIP64_LOCATOR_SIG = zf.ZIP64_LOCATOR_SIG
LFH_SIZE = zf.LFH_SIZE
CD_SIZE = zf.CD_SIZE
EOCD_SIZE = zf.EOCD_SIZE
ZIP64_EOCD_SIZE = zf.ZIP64_EOCD_SIZE
ZIP64_LOCATOR_SIZE = zf.ZIP64_LOCATOR_SIZE
TRAILER_SIZE = zf.TRAILER_SIZE
LFH_ZIP64_EXTRA = zf.LFH_ZIP64_EXTRA
CD_ZIP64_EXTRA = zf.CD_ZIP64_EXTRA
LFH_CRC_OFFSET = zf.LFH_CRC_OFFSET
CD_CRC_OFFSET = zf.CD_CRC_OFFSET
VERSION_NEEDED = zf.VERSION_NEEDED
VERSION_MADE_BY = zf.VERSION_MADE_BY
FLAG_ENCRYPTED = zf.FLAG_ENCRYPTED
FLAG_DATA_DESCRIPTOR = zf.FLAG_DATA_DESCRIPTOR
FLAG_UTF8 = zf.FLAG_UTF8
DOS_DATE_1980 = zf.DOS_DATE_1980
EXTERNAL_ATTR = zf.EXTERNAL_ATTR
ZIP64_EXTRA_ID = zf.ZIP64_EXTRA_ID
PAD_EXTRA_ID = zf.PAD_EXTRA_ID
ALIGNMENT = zf.ALIGNMENT
MAX_COMMENT = zf.MAX_COMMENT
MAX_NAME = zf.MAX_NAME
U16_MAX = zf.U16_MAX
U32_MAX = zf.U32_MAX


def alignment_padding(long long lfh_offset, Py_ssize_t name_length):
    """Bytes of ``0xDAF1`` extra field that put the data of an entry written at
    ``lfh_offset`` with a name of ``name_length`` bytes on an 8-byte boundary: 0, or at
    least 4 so that the field's own header fits (one of 0, 4..7, 9..11)."""
    return zf.alignment_padding(lfh_offset, name_length)


def plain_key(const uint8_t[::1] raw not None):
    """Whether ``raw`` (a key's UTF-8 bytes) names an entry as it is: not empty, at most
    65535 bytes, no NUL or backslash, no leading or trailing ``/``, no empty, ``.`` or
    ``..`` component."""
    cdef Py_ssize_t n = raw.shape[0]
    return zf.plain_key(&raw[0] if n else NULL, n)


# --- The central directory -------------------------------------------------------------------


@cython.no_gc
cdef class Entry:
    """One central-directory entry, with sizes and offsets resolved from ZIP64 extras."""

    # Fields sized to what the format holds, so that an entry takes 96 bytes (a million-entry
    # archive holds a million of them): method and flags are 16-bit fields of the records.
    cdef public str name
    cdef public unsigned short method
    cdef public unsigned short flags
    cdef public unsigned int crc
    cdef public long long csize
    cdef public unsigned long long usize
    cdef public long long lfh_offset
    cdef public unsigned int cd_len  # at most 46 + 3 * 65535 bytes
    cdef public long long cd_pos  # offset of this entry's record inside the directory bytes
    cdef public long long data_offset  # resolved lazily from the local header (-1: not yet)
    cdef public long long end_limit  # the data must end before this offset (the next header)
    cdef public object refused  # why the name is not served (unsafe or not UTF-8), if so

    def __init__(
        self, str name, unsigned short method, unsigned short flags, unsigned int crc,
        long long csize, unsigned long long usize,
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
    cdef Py_ssize_t cap = min(n_entries, end // zf.CD_SIZE + 1)
    cdef list entries = [None] * cap
    cdef object name, refused
    for index in range(n_entries):
        if pos + zf.CD_SIZE > end:
            if partial:
                del entries[index:]
                break
            raise _bad(path, f"central directory ends inside entry {first + index}")
        p = base + pos
        if le_u32(p) != zf.CD_SIG:
            raise _bad(path, f"bad central directory signature at entry {first + index}")
        flags = le_u16(p + 8)
        method = le_u16(p + 10)
        crc = le_u32(p + 16)
        csize = le_u32(p + 20)
        usize = le_u32(p + 24)
        n_len = le_u16(p + 28)
        e_len = le_u16(p + 30)
        c_len = le_u16(p + 32)
        disk = le_u16(p + 34)
        lfh = le_u32(p + 42)
        rec_len = zf.CD_SIZE + n_len + e_len + c_len
        if pos + rec_len > end:
            if partial:
                del entries[index:]
                break
            raise _bad(
                path, f"central directory entry {first + index} runs past the directory"
            )
        refused = None
        if flags & zf.FLAG_UTF8:
            try:
                name = PyUnicode_DecodeUTF8(<const char*>(p + zf.CD_SIZE), n_len, NULL)
            except UnicodeDecodeError:
                # undecodable bytes become lone surrogates: one character per byte
                name = PyUnicode_DecodeUTF8(
                    <const char*>(p + zf.CD_SIZE), n_len, "surrogateescape"
                )
                refused = "its name is not valid UTF-8"
        else:
            name = (<const char*>(p + zf.CD_SIZE))[:n_len].decode("cp437")
        if refused is None and _may_be_unsafe(p + zf.CD_SIZE, n_len):
            refused = unsafe_name_reason(name)
        if (usize == zf.U32_MAX or csize == zf.U32_MAX or lfh == zf.U32_MAX
                or disk == zf.U16_MAX):
            q = pos + zf.CD_SIZE + n_len
            qend = q + e_len
            found = False
            while q + 4 <= qend:
                tag = le_u16(base + q)
                size = le_u16(base + q + 2)
                body = q + 4
                if body + size > qend:
                    break
                if tag == zf.ZIP64_EXTRA_ID:
                    need = 8 * ((usize == zf.U32_MAX) + (csize == zf.U32_MAX)
                                + (lfh == zf.U32_MAX))
                    if size < need:
                        raise _bad(path, f"entry {name!r}: ZIP64 extra field too short")
                    q = body
                    if usize == zf.U32_MAX:
                        usize = le_u64(base + q)
                        q += 8
                    if csize == zf.U32_MAX:
                        csize = le_u64(base + q)
                        q += 8
                    if lfh == zf.U32_MAX:
                        lfh = le_u64(base + q)
                    found = True
                    break
                q = body + size
            if not found:
                raise _bad(
                    path, f"entry {name!r}: ZIP64 sizes announced but no ZIP64 extra field"
                )
        # lfh + LFH_SIZE + n_len > limit, without overflow (limit >= 0)
        if (lfh > <uint64_t>limit or <uint64_t>limit - lfh < zf.LFH_SIZE + n_len
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
    return len(e.name.encode("utf-8" if e.flags & zf.FLAG_UTF8 else "cp437", "replace"))


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
        if b.lfh_offset < a.lfh_offset + zf.LFH_SIZE + _stored_name_len(a) + a.csize:
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


# --- Small stored entries written in one call ---------------------------------------------

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL

#: Largest value :func:`stage_small` writes; larger ones take the general path (which
#: writes them with pwrite(2), faster than stores into fresh pages of the mapping).
SMALL_VALUE_MAX = 1 << 14


cdef long long _append_one(
    object key, object value, uint8_t* base, long long mapped, list entries, dict index,
    bytearray cd, long long write, long long room_end, long long tail_limit,
) except -2:
    """Write one small stored entry at ``write``; its end, or -1 to leave it to the general
    path (the key or value needs its checks, the key exists, or there is no room)."""
    cdef Py_ssize_t n, size, cd_len, cd_old
    cdef const char* name
    cdef Py_buffer buf
    cdef unsigned int pad, header_len
    cdef long long end
    cdef uint32_t crc
    cdef uint8_t* p
    cdef Entry e
    if type(key) is not str or not PyUnicode_IS_ASCII(key):
        return -1
    name = PyUnicode_AsUTF8AndSize(key, &n)  # the ASCII characters themselves: no copy
    if not zf.plain_key(<const unsigned char*>name, n) or key in index:
        return -1
    if type(value) is not bytes and type(value) is not bytearray and type(value) is not memoryview:
        return -1
    try:
        PyObject_GetBuffer(value, &buf, PyBUF_SIMPLE)
    except (BufferError, ValueError):  # not contiguous, or released: the general path says
        return -1
    try:
        size = buf.len
        if size > SMALL_VALUE_MAX:
            return -1
        pad = zf.alignment_padding(write, n)
        header_len = zf.LFH_SIZE + <unsigned int>n + zf.LFH_ZIP64_EXTRA + pad
        end = write + header_len + size
        cd_len = zf.CD_SIZE + n + zf.CD_ZIP64_EXTRA
        cd_old = len(cd)
        # The entry must stay below the live directory, and the archive with its new
        # directory inside max_file_size (the general path says why not).
        if write < 0 or end > room_end or end > mapped or end + cd_old + cd_len > tail_limit:
            return -1
        crc = crc32_copy(0, base + write + header_len, <const unsigned char*>buf.buf,
                         <size_t>size)
    finally:
        PyBuffer_Release(&buf)
    p = base + write
    put_u32(p, zf.LFH_SIG)
    put_u16(p + 4, zf.VERSION_NEEDED)
    put_u16(p + 6, zf.FLAG_UTF8)
    put_u16(p + 8, 0)  # stored
    put_u16(p + 10, 0)  # time
    put_u16(p + 12, zf.DOS_DATE_1980)
    put_u32(p + 14, crc)
    put_u32(p + 18, <uint32_t>zf.U32_MAX)
    put_u32(p + 22, <uint32_t>zf.U32_MAX)
    put_u16(p + 26, <unsigned int>n)
    put_u16(p + 28, zf.LFH_ZIP64_EXTRA + pad)
    memcpy(p + zf.LFH_SIZE, name, <size_t>n)
    p += zf.LFH_SIZE + n
    put_u16(p, zf.ZIP64_EXTRA_ID)
    put_u16(p + 2, zf.LFH_ZIP64_EXTRA - 4)
    put_u64(p + 4, <uint64_t>size)
    put_u64(p + 12, <uint64_t>size)
    if pad:
        put_u16(p + 20, zf.PAD_EXTRA_ID)
        put_u16(p + 22, pad - 4)
        memset(p + 24, 0, pad - 4)
    PyByteArray_Resize(cd, cd_old + cd_len)
    p = <uint8_t*>PyByteArray_AS_STRING(cd) + cd_old
    put_u32(p, zf.CD_SIG)
    put_u16(p + 4, zf.VERSION_MADE_BY)
    put_u16(p + 6, zf.VERSION_NEEDED)
    put_u16(p + 8, zf.FLAG_UTF8)
    put_u16(p + 10, 0)  # stored
    put_u16(p + 12, 0)  # time
    put_u16(p + 14, zf.DOS_DATE_1980)
    put_u32(p + 16, crc)
    put_u32(p + 20, <uint32_t>zf.U32_MAX)
    put_u32(p + 24, <uint32_t>zf.U32_MAX)
    put_u16(p + 28, <unsigned int>n)
    put_u16(p + 30, zf.CD_ZIP64_EXTRA)
    put_u16(p + 32, 0)  # comment
    put_u16(p + 34, 0)  # disk
    put_u16(p + 36, 0)  # internal attributes
    put_u32(p + 38, zf.EXTERNAL_ATTR)
    put_u32(p + 42, <uint32_t>zf.U32_MAX)
    memcpy(p + zf.CD_SIZE, name, <size_t>n)
    p += zf.CD_SIZE + n
    put_u16(p, zf.ZIP64_EXTRA_ID)
    put_u16(p + 2, zf.CD_ZIP64_EXTRA - 4)
    put_u64(p + 4, <uint64_t>size)
    put_u64(p + 12, <uint64_t>size)
    put_u64(p + 20, <uint64_t>write)
    e = Entry.__new__(Entry)
    e.name = key
    e.method = 0
    e.flags = zf.FLAG_UTF8
    e.crc = crc
    e.csize = size
    e.usize = size
    e.lfh_offset = write
    e.cd_pos = cd_old
    e.cd_len = <unsigned int>cd_len
    e.data_offset = write + header_len
    e.end_limit = -1
    e.refused = None
    entries.append(e)
    index[key] = e
    return end


cdef uint8_t* _mapped_base(object fm, long long* mapped) except NULL:
    """The writable mapping's base address and size (checked open and writable)."""
    if fm.closed or not fm.writable:
        raise ClosedError(f"the mapping of {fm.path} is closed or read-only")
    mapped[0] = fm.size
    return <uint8_t*><size_t>fm.address


def stage_small(object a, object fm, object key, object value):
    """Write a new small stored entry ``key`` into the open batch of the archive state ``a``
    (a ``zipstore._state.Archive``) through the writable mapping ``fm``: local header and
    data at the transaction's write offset, its central-directory record appended to
    ``a.cd``, a new :class:`Entry` to ``a.entries`` and ``a.index``.

    Returns False, having changed nothing, when the general path must write it: no batch
    open, a key that is not plain ASCII or that exists, a value that is not ``bytes``,
    ``bytearray`` or a contiguous ``memoryview`` of at most :data:`SMALL_VALUE_MAX` bytes,
    an entry that would reach the live directory (it must move first), or an archive
    that would pass ``max_file_size``.
    """
    cdef long long mapped, w, end
    cdef uint8_t* base
    tx = a.tx
    if tx is None or not tx.depth or fm is None:
        return False
    base = _mapped_base(fm, &mapped)
    w = tx.write
    end = _append_one(key, value, base, mapped, a.entries, a.index, a.cd, w, tx.live_cd,
                      a.max_file_size - zf.TRAILER_SIZE - len(a.comment))
    if end < 0:
        return False
    if a.first_listed < 0:
        a.first_listed = w
    tx.write = end
    return True


def stage_small_run(object a, object fm, list items not None, Py_ssize_t start):
    """:func:`stage_small` of the ``(key, value)`` pairs ``items[start:]`` in order, up to
    the first that the general path must write; returns its index (``len(items)`` when all
    were written)."""
    cdef long long mapped, w, end, w0, room_end, tail_limit
    cdef uint8_t* base
    cdef Py_ssize_t i = start, n = len(items)
    cdef object pair
    cdef list entries
    cdef dict index
    cdef bytearray cd
    tx = a.tx
    if tx is None or not tx.depth or fm is None:
        return start
    base = _mapped_base(fm, &mapped)
    w0 = w = tx.write
    room_end = tx.live_cd
    tail_limit = a.max_file_size - zf.TRAILER_SIZE - len(a.comment)
    entries, index, cd = a.entries, a.index, a.cd
    while i < n:
        pair = items[i]
        if type(pair) is not tuple or len(<tuple>pair) != 2:
            break
        end = _append_one((<tuple>pair)[0], (<tuple>pair)[1], base, mapped, entries, index,
                          cd, w, room_end, tail_limit)
        if end < 0:
            break
        w = end
        i += 1
    if i > start:
        if a.first_listed < 0:
            a.first_listed = w0
        tx.write = w
    return i


# --- The directory after rewrites and deletes -----------------------------------------------

def live_entries(list entries not None, dict index not None, object dropped not None):
    """What the next directory lists, in order: each key's live copy (the entry ``index``
    holds for its name), each folder entry once (its last copy), except the folders named in
    ``dropped``."""
    cdef dict folders = None
    cdef list keep = []
    cdef Py_ssize_t i, j, n = len(entries), k
    cdef Entry e, f
    cdef str name
    cdef PyObject* live
    for i in range(n):
        e = <Entry?>entries[i]
        name = e.name
        k = len(name)
        if k and name[k - 1] == "/":
            if folders is None:  # the first folder entry: find every folder's last copy
                folders = {}
                for j in range(n):
                    f = <Entry?>entries[j]
                    if f.name.endswith("/") and f.name not in dropped:
                        folders[f.name] = f
            live = PyDict_GetItem(folders, name)
        else:
            live = PyDict_GetItem(index, name)
        if live == <PyObject*>e:
            keep.append(e)
    return keep


def gather_records(list keep not None, bytearray cd not None):
    """The directory of the entries ``keep``: their records, copied from ``cd`` (where each
    entry's ``cd_pos`` and ``cd_len`` say) in order, into one new ``bytearray``."""
    cdef Py_ssize_t total = 0, pos = 0, size = len(cd)
    cdef Entry e
    cdef char* src
    cdef char* dst
    for item in keep:
        e = <Entry?>item
        if e.cd_pos < 0 or e.cd_pos + e.cd_len > size:
            raise CorruptArchiveError(
                f"entry {e.name!r}: record outside the directory in memory"
            )
        total += e.cd_len
    out = bytearray(total)
    src = PyByteArray_AS_STRING(cd)
    dst = PyByteArray_AS_STRING(out)
    for item in keep:
        e = <Entry>item
        memcpy(dst + pos, src + e.cd_pos, e.cd_len)
        pos += e.cd_len
    return out


def renumber(list keep not None):
    """Set each entry's ``cd_pos`` to its record's place in the directory of ``keep`` (their
    records in order); return the lowest local-header offset (-1: no entry)."""
    cdef long long pos = 0, first = -1
    cdef Entry e
    for item in keep:
        e = <Entry?>item
        e.cd_pos = pos
        pos += e.cd_len
        if first < 0 or e.lfh_offset < first:
            first = e.lfh_offset
    return first
