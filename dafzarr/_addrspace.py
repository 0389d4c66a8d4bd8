"""Address space for writable ZIP archives: a size limit that fits the process, a clear error.

A writable :class:`~dafzarr.zipstore.MmapZipStore` reserves (without committing memory)
twice its ``max_file_size`` of address space, so that the archive can grow without its
mapping ever moving. Where the process has an address-space limit (``ulimit -v``,
``RLIMIT_AS``, common on HPC login and batch nodes) the default must fit under it, and a
reservation that still fails must say which option to lower, not just ``ENOMEM``.
"""

from __future__ import annotations

import errno
import mmap
import os
import resource

from .errors import AddressSpaceError

__all__ = ["address_space_limit", "fitting_max_file_size", "probe_reservation",
           "reservation_error"]

_MIB = 1 << 20
# Of the address space still free under the limit, a default reservation (twice the file
# size limit) takes at most half: the rest stays for the arrays and threads of the process.
_FRACTION = 4


def address_space_limit() -> int | None:
    """The process' soft ``RLIMIT_AS`` in bytes, or ``None`` when it is unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _address_space_used() -> int:
    """The process' mapped address space in bytes (``VmSize``), 0 where unknown."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def fitting_max_file_size(default: int) -> int:
    """``default``, or less where an address-space limit would refuse its reservation.

    Under ``RLIMIT_AS`` the result is a quarter of the address space still free (whole
    MiB, at least 1 MiB), so the reservation takes at most half of it.
    """
    limit = address_space_limit()
    if limit is None:
        return default
    free = max(limit - _address_space_used(), 0)
    return max(min(default, (free // _FRACTION) & ~(_MIB - 1)), _MIB)


def reservation_error(path: str, max_file_size: int, reserve: int) -> AddressSpaceError:
    """The error for a reservation of ``reserve`` bytes (for ``max_file_size``) that failed."""
    limit = address_space_limit()
    if limit is None:
        why = "more than the system grants"
    else:
        why = (f"the process' address-space limit (RLIMIT_AS, ulimit -v) is {limit} bytes, "
               f"{_address_space_used()} of them in use")
    return AddressSpaceError(
        errno.ENOMEM,
        f"can't open {path} for writing: it needs {reserve} bytes of address space for "
        f"max_file_size = {max_file_size} bytes, {why}; pass a smaller max_file_size= "
        "(the largest size the archive may reach while it is open)",
    )


def probe_reservation(path: str, max_file_size: int, reserve: int) -> None:
    """Raise :class:`AddressSpaceError` now if ``reserve`` bytes can't be reserved.

    Called before a writable open creates anything, so a refused open leaves no file.
    """
    try:
        probe = mmap.mmap(-1, reserve + 4 * _MIB, flags=mmap.MAP_PRIVATE, prot=0)
    except (OSError, OverflowError) as exc:
        if isinstance(exc, OverflowError) or exc.errno in (errno.ENOMEM, errno.EINVAL):
            raise reservation_error(path, max_file_size, reserve) from None
        raise
    probe.close()
