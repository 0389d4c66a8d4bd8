"""Address space for mappings: a size limit that fits the process, clear errors.

A writable :class:`~dafzarr.zipstore.MmapZipStore` reserves (without committing memory)
twice its ``max_file_size`` of address space, so that the archive can grow without its
mapping ever moving. Where the process has an address-space limit (``ulimit -v``,
``RLIMIT_AS``, common on HPC login and batch nodes) the default must fit under it, and a
reservation that still fails must say which option to lower, not just ``ENOMEM``.

Reads map files too (a ZIP archive opened read-only, each array file of a ZarrDaf directory).
A map the kernel refuses raises :class:`~dafzarr.AddressSpaceError` naming the file, its size
and the cause: the address-space limit, or the system's limit on the number of mappings of
one process (``vm.max_map_count``), which a process holding many open data sets can reach.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import resource
from collections.abc import Callable, Iterator

from ..errors import AddressSpaceError

__all__ = [
    "address_space_limit",
    "fitting_max_file_size",
    "mapping_error",
    "named_map_refusal",
    "probe_reservation",
    "reservation_error",
]

_MIB = 1 << 20
# Of the address space still free under the limit, a default reservation (twice the file
# size limit) takes at most a quarter, and the compacted copy's reservation (the same size,
# beside it while the archive is compacted) another quarter: the rest stays for the arrays
# and threads of the process.
_FRACTION = 8


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

    Under ``RLIMIT_AS`` the result is an eighth of the address space still free (whole
    MiB, at least 1 MiB), so the reservation takes at most a quarter of it, and a
    compaction's second one another quarter.
    """
    limit = address_space_limit()
    if limit is None:
        return default
    free = max(limit - _address_space_used(), 0)
    return max(min(default, (free // _FRACTION) & ~(_MIB - 1)), _MIB)


# Mappings a process may still make, near vm.max_map_count, before it counts as the cause
# (a failed map may itself have needed a few: a guard, a split of a neighbour).
_MAPS_SLACK = 16


def _mapping_counts() -> tuple[int, int] | None:
    """The process' memory mappings and the system's limit on them, where Linux tells."""
    try:
        with open("/proc/sys/vm/max_map_count", "rb") as f:
            limit = int(f.read())
        with open("/proc/self/maps", "rb") as f:
            count = sum(1 for _ in f)
    except (OSError, ValueError):
        return None
    return count, limit


def _mapping_limit_cause() -> str | None:
    """The text for a process at ``vm.max_map_count``, or None if it is not there."""
    counts = _mapping_counts()
    if counts is None or counts[0] + _MAPS_SLACK < counts[1]:
        return None
    return (
        f"the process holds {counts[0]} memory mappings, at the system's limit "
        f"vm.max_map_count = {counts[1]}; close the data sets and archives no longer "
        "needed, or raise the limit (sysctl vm.max_map_count)"
    )


def _address_limit_cause() -> str | None:
    """The text for a process under an address-space limit, or None if it has none."""
    limit = address_space_limit()
    if limit is None:
        return None
    return (
        f"the process' address-space limit (RLIMIT_AS, ulimit -v) is {limit} bytes, "
        f"{_address_space_used()} of them in use"
    )


def reservation_error(
    path: str, max_file_size: int, reserve: int, doing: str = "open {path} for writing"
) -> AddressSpaceError:
    """The error for a reservation of ``reserve`` bytes (for ``max_file_size``) that failed;
    ``doing`` says what needed it (``{path}`` stands for the path)."""
    doing = doing.format(path=path)
    maps = _mapping_limit_cause()
    if maps is not None:  # a smaller reservation would not help
        return AddressSpaceError(errno.ENOMEM, f"can't {doing}: {maps}")
    why = _address_limit_cause() or "more than the system grants"
    return AddressSpaceError(
        errno.ENOMEM,
        f"can't {doing}: it needs {reserve} bytes of address space for "
        f"max_file_size = {max_file_size} bytes, {why}; pass a smaller max_file_size= "
        "(the largest size the archive may reach while it is open)",
    )


def mapping_error(path: str, nbytes: int) -> AddressSpaceError:
    """The error for a read-only map of ``nbytes`` of ``path`` that the kernel refused."""
    why = _mapping_limit_cause() or _address_limit_cause() or "the system refused the address space"
    return AddressSpaceError(errno.ENOMEM, f"can't map {path} ({nbytes} bytes) to read it: {why}")


@contextlib.contextmanager
def named_map_refusal(path: str, nbytes: Callable[[], int]) -> Iterator[None]:
    """A read-only map of ``path`` made in the block that the kernel refuses (``ENOMEM``)
    raises :func:`mapping_error`, with the size ``nbytes()`` gives."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        raise mapping_error(path, nbytes()) from None


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
