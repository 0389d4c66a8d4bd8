"""What other extensions ``cimport`` from ``dafzarr._posix``: the one build of the CRC-32
kernel (``_crc32_kernel.h``, its tables and its choice of instructions made once, when
``dafzarr._posix`` is imported).

It lies under ``_ext/dafzarr/`` so that ``from dafzarr._posix cimport crc32_copy`` finds it
through the include path ``_ext``; Cython then fetches the function from the imported
module at run time.
"""

from libc.stdint cimport uint32_t


cdef uint32_t crc32_copy(uint32_t crc, unsigned char* dst, const unsigned char* src,
                         size_t n) noexcept nogil
