"""Exceptions raised by dafzarr.

Every class derives from :class:`DafzarrError` and from the builtin exception that code
unaware of dafzarr would catch, so ``except KeyError`` or ``except ValueError`` keep working.
Raw operating-system failures stay plain :class:`OSError` subclasses (``FileNotFoundError``,
``PermissionError``, ...), with the file name set.
"""

from __future__ import annotations

__all__ = [
    "AppendOnlyError",
    "ArchiveLockedError",
    "CorruptArchiveError",
    "DafExistsError",
    "DafFormatError",
    "DafMissingError",
    "DafReadOnlyError",
    "DafzarrError",
    "RecoveryWarning",
    "UnsupportedEntryError",
]


class DafzarrError(Exception):
    """Base class of every exception dafzarr raises on purpose."""


class CorruptArchiveError(DafzarrError, ValueError):
    """A file is not a valid ZIP archive, or one of its records is inconsistent."""


class UnsupportedEntryError(DafzarrError, ValueError):
    """A ZIP entry uses a compression method or encryption dafzarr cannot decode."""


class AppendOnlyError(DafzarrError, NotImplementedError):
    """An append-only store was asked to overwrite or delete an existing entry."""


class ArchiveLockedError(DafzarrError, BlockingIOError):
    """Another handle or process holds the archive open for writing."""


class RecoveryWarning(UserWarning):
    """A writable open repaired an archive left behind by an interrupted writer."""


class DafFormatError(DafzarrError, ValueError):
    """A path, store or name is not a valid Daf data set (or not for this operation)."""


class DafReadOnlyError(DafzarrError, PermissionError):
    """A writer was called on a Daf data set opened read-only."""


class DafMissingError(DafzarrError, KeyError):
    """A scalar, axis, vector or matrix that was asked for does not exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DafExistsError(DafzarrError, ValueError):
    """A property exists already and ``overwrite`` was not given."""
