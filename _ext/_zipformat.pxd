"""The ZIP records MmapZipStore writes: signatures, sizes, fields, the padding rule and the
key check, defined once.

The compiled writer and parser (``_zipdir.pyx``) use them as C constants and inline
functions; ``_zipdir`` hands the same values to Python, where ``dafzarr.zipstore._format``
and ``_input`` take them. Declarations only: no module of this name exists at run time.
"""

cdef enum:
    # record signatures (below 2**31: plain enumerators)
    LFH_SIG = 0x04034B50
    CD_SIG = 0x02014B50
    EOCD_SIG = 0x06054B50
    ZIP64_EOCD_SIG = 0x06064B50
    ZIP64_LOCATOR_SIG = 0x07064B50
    # fixed record sizes
    LFH_SIZE = 30
    CD_SIZE = 46
    EOCD_SIZE = 22
    ZIP64_EOCD_SIZE = 56
    ZIP64_LOCATOR_SIZE = 20
    TRAILER_SIZE = 98  # ZIP64 end record, its locator, the end record
    # the ZIP64 extra fields written: id, length, sizes (and the local-header offset)
    LFH_ZIP64_EXTRA = 20
    CD_ZIP64_EXTRA = 28
    # where the CRC-32 lies inside the records
    LFH_CRC_OFFSET = 14
    CD_CRC_OFFSET = 16
    # fields
    VERSION_NEEDED = 45
    VERSION_MADE_BY = 0x031E
    FLAG_ENCRYPTED = 0x2041  # bits 0, 6 and 13
    FLAG_DATA_DESCRIPTOR = 0x0008
    FLAG_UTF8 = 0x0800
    DOS_DATE_1980 = 0x0021
    ZIP64_EXTRA_ID = 0x0001
    PAD_EXTRA_ID = 0xDAF1
    ALIGNMENT = 8
    MAX_COMMENT = 0xFFFF
    MAX_NAME = 0xFFFF
    U16_MAX = 0xFFFF

cdef extern from *:
    """
    #define DZ_ZIP_DEAD_LFH_SIG 0xADDE5A44u
    #define DZ_ZIP_EXTERNAL_ATTR (0100644u << 16)
    #define DZ_ZIP_U32_MAX 0xFFFFFFFFu
    """
    # Stands in for the signature of a local header that no directory lists any more, where
    # that header is the first bytes of the file: tools that look for an archive at the
    # start of the file (7-Zip) would otherwise take it for a listed entry that is missing.
    const unsigned int DEAD_LFH_SIG "DZ_ZIP_DEAD_LFH_SIG"  # b"DZ\xde\xad"
    const unsigned int EXTERNAL_ATTR "DZ_ZIP_EXTERNAL_ATTR"  # a regular file, rw-r--r--
    const unsigned int U32_MAX "DZ_ZIP_U32_MAX"


cdef inline unsigned int alignment_padding(long long lfh_offset, Py_ssize_t name_length
                                           ) noexcept nogil:
    """Bytes of ``0xDAF1`` extra field that put the data of an entry written at
    ``lfh_offset`` on an :data:`ALIGNMENT` boundary: 0, or at least 4 so that the field's
    own header fits (one of 0, 4..7, 9..11)."""
    # unsigned: the remainder of a negative offset is Python's (2**64 is a multiple of 8)
    cdef unsigned int r = <unsigned int>(
        <unsigned long long>(lfh_offset + LFH_SIZE + name_length + LFH_ZIP64_EXTRA) % ALIGNMENT
    )
    cdef unsigned int t
    if r == 0:
        return 0
    t = ALIGNMENT - r
    return t if t >= 4 else t + ALIGNMENT


cdef inline bint plain_key(const unsigned char* s, Py_ssize_t n) noexcept nogil:
    """Whether the UTF-8 bytes of a key name an entry as they are: not empty, at most
    :data:`MAX_NAME` bytes, no NUL or backslash, no leading or trailing ``/``, no empty,
    ``.`` or ``..`` component. (Bytes of non-ASCII characters are all 0x80 and above: the
    rule reads the same on characters and on their UTF-8 bytes.)"""
    cdef Py_ssize_t i, start = 0, part
    cdef unsigned char ch
    if n == 0 or n > MAX_NAME or s[0] == 0x2F or s[n - 1] == 0x2F:
        return False
    for i in range(n + 1):
        ch = s[i] if i < n else 0x2F
        if ch == 0 or ch == 0x5C:
            return False
        if ch == 0x2F:
            part = i - start
            if part == 0:
                return False
            if s[start] == 0x2E and (part == 1 or (part == 2 and s[start + 1] == 0x2E)):
                return False
            start = i + 1
    return True
