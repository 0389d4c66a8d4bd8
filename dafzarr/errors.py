"""Exceptions raised by dafzarr.

Every class derives from :class:`DafzarrError` and from the builtin exception that code
unaware of dafzarr would catch, so ``except KeyError`` or ``except ValueError`` keep working.
Raw operating-system failures stay plain :class:`OSError` subclasses (``FileNotFoundError``,
``PermissionError``, ...), with the file name set.
"""

from __future__ import annotations

__all__ = [
    "AddressSpaceError",
    "AnnDataConversionError",
    "AppendOnlyError",
    "ArchiveFullError",
    "ArchiveInUseError",
    "ArchiveLockedError",
    "ArrayExistsError",
    "ArrayNotFoundError",
    "AttributeLossWarning",
    "BatchOpenError",
    "CorruptArchiveError",
    "CorruptArrayFileError",
    "CorruptFooterError",
    "DafContractError",
    "DafExistsError",
    "DafFormatError",
    "DafMismatchError",
    "DafMissingError",
    "DafNotFoundError",
    "DafQueryError",
    "DafQuerySyntaxError",
    "DafReadOnlyError",
    "DafzarrError",
    "EntryExistsError",
    "EntryNotFoundError",
    "H5Error",
    "HttpDeadlineError",
    "HttpReadError",
    "IncompatibleSourcesError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "OutputExistsError",
    "PackSourceError",
    "RecoveryWarning",
    "RefusedEntryWarning",
    "RkyvError",
    "ScanTimeoutError",
    "SelfCheckError",
    "StatisticsWarning",
    "StorageIOError",
    "StorageLockError",
    "UnsafeCastError",
    "UnsafeEntryNameError",
    "UnstableFileSetError",
    "UnsupportedElementTypeError",
    "UnsupportedEntryError",
    "UnsupportedHDF5Error",
    "UnsupportedVariableWarning",
    "VariableLeftOutWarning",
]


class DafzarrError(Exception):
    """Base class of every exception dafzarr raises on purpose."""


class CorruptArchiveError(DafzarrError, ValueError):
    """A file is not a valid ZIP archive, or one of its records is inconsistent."""


class UnsupportedEntryError(DafzarrError, ValueError):
    """A ZIP entry uses a compression method or encryption dafzarr cannot decode."""


class AppendOnlyError(DafzarrError, NotImplementedError):
    """An append-only store was asked to overwrite or delete an existing entry."""


class AddressSpaceError(DafzarrError, OSError):
    """A writable archive's address-space reservation was refused (``RLIMIT_AS``).

    The message names the archive, the size and the ``max_file_size`` option to lower.
    """


class StorageIOError(DafzarrError, OSError):
    """A system call failed while dafzarr changed a file (a full disk, a quota, an I/O error,
    a file system gone read-only, ...).

    ``errno`` is the call's (``e.errno == errno.ENOSPC`` and ``except OSError`` work as for
    the call's own error; one that a builtin subclass stands for, such as ``EACCES``, is
    raised as a subclass of that class too, e.g. :class:`PermissionError`), ``filename``
    the file changed. The message names the operation, the file and the key or property,
    and what the file holds now: every writer leaves the last committed state (the whole
    operation or none of it). The system call's own error is the ``__cause__``.
    """


class StorageLockError(StorageIOError):
    """A writer's lock cannot be taken because the file system does not support ``flock``
    (``ENOLCK``, ``EOPNOTSUPP``, ``ENOSYS``: NFS without a lock daemon, Lustre mounted
    without ``flock``). The message names the file and the option that opens it without the
    lock (``lock=False``), for a user who guarantees a single writer."""


class EntryExistsError(DafzarrError, ValueError):
    """An operation that creates an entry found one under that key already."""


class ArchiveLockedError(DafzarrError, BlockingIOError):
    """Another handle or process holds the archive open for writing."""


class UnsafeEntryNameError(DafzarrError, ValueError):
    """An archive holds an entry whose name is unsafe (``..``, absolute, backslash, NUL, not
    UTF-8), so dafzarr will not write into it (a read-only open serves the other entries)."""


class RefusedEntryWarning(UserWarning):
    """A read-only open found entries whose names are unsafe; they are not served."""


class ArchiveInUseError(DafzarrError, BufferError):
    """An archive cannot be compacted in place while zero-copy views of its mapping are alive."""


class OutputExistsError(DafzarrError, FileExistsError):
    """An output path exists already and ``force`` was not given."""


class PackSourceError(DafzarrError, ValueError):
    """A directory cannot be packed into an archive as it is.

    The message names the directory and the file at fault: not a Zarr store, a name that is
    not UTF-8, a link that leads outside the directory, a file that is neither a regular file
    nor a directory.
    """


class ArchiveFullError(DafzarrError, ValueError):
    """An append would grow an archive past the ``max_file_size`` its store was opened with."""


class EntryNotFoundError(DafzarrError, KeyError):
    """An archive has no entry under the key asked for (the key is the exception's argument,
    or its message names it)."""


class BatchOpenError(DafzarrError, RuntimeError):
    """An archive was to be closed or compacted while a batch of writes to it is open."""


class RecoveryWarning(UserWarning):
    """A writable open repaired an archive left behind by an interrupted writer."""


class DafFormatError(DafzarrError, ValueError):
    """A path, store or name is not a valid Daf data set (or not for this operation)."""


class AnnDataConversionError(DafzarrError, ValueError):
    """An AnnData element cannot cross the AnnData bridge without loss (the message names it)."""


class DafReadOnlyError(DafzarrError, PermissionError):
    """A writer was called on a Daf data set opened read-only."""


class _PlainKeyError(KeyError):
    """A ``KeyError`` whose message prints as written (``KeyError`` quotes it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DafMissingError(DafzarrError, _PlainKeyError):
    """A scalar, axis, vector or matrix that was asked for does not exist."""


class DafQueryError(DafzarrError, ValueError):
    """A Daf query cannot be evaluated on a data set (an operation that does not apply, a value
    of the wrong type, an unknown entry, an empty reduction without a default, ...).

    The message starts with what is wrong, then names the query in its canonical text
    (``in the query: ...``), the operations concerned and the data set
    (``for the daf data: ...``). Missing axes and properties raise :class:`DafMissingError`.
    """


class DafQuerySyntaxError(DafQueryError):
    """A Daf query text does not parse: the message ends with the query (``in: ...``) and a
    caret line (``at: ...``) under the failing token."""


class DafExistsError(DafzarrError, ValueError):
    """A property exists already and ``overwrite`` was not given."""


class DafContractError(DafzarrError, ValueError):
    """A computation's contract is broken: a required input is missing or of the wrong element
    type, an output was not created, a property outside the contract was accessed, an input
    was modified or a required input never read, or two contracts cannot be combined.

    The message names the computation, the property and the data set.
    """


class DafMismatchError(DafzarrError, ValueError):
    """Data sets cannot be combined as asked: axes whose entries do not align, entries missing
    without an ``empty`` value to fill them, values that disagree, properties that cannot be
    concatenated or collected.

    The message names the operation, the data sets, the axes and the property at fault.
    """


class UnsupportedHDF5Error(DafzarrError, ValueError):
    """An HDF5/NetCDF4 variable cannot be represented as byte-range references.

    The message names the file, the variable and the feature at fault (filter, per-chunk
    filter mask, data type or layout).
    """


class IncompatibleSourcesError(DafzarrError, ValueError):
    """Files cannot be combined into one virtual dataset without changing their meaning.

    The message names the files, the variable and the mismatch (dtype, codecs, chunk shape,
    packing or time attributes, misaligned or overlapping placement).
    """


class InvalidArgumentError(DafzarrError, ValueError):
    """An argument's value is outside what the function accepts.

    The message names the argument and the value given (or, for a record built by hand, the
    record and what is inconsistent in it).
    """


class InvalidArgumentTypeError(DafzarrError, TypeError):
    """An argument's type is not one the function accepts (a name that is not a ``str``, a
    value that is not a scalar, strings where numbers are required, ...).

    The message names the argument and the type given.
    """


class DafNotFoundError(DafzarrError, FileNotFoundError):
    """A Daf data set opened for reading (modes ``r`` and ``r+``) does not exist.

    ``filename`` is the missing directory or ZIP archive.
    """


class SelfCheckError(DafzarrError, RuntimeError):
    """A built-in self-check (``dafzarr demo``) read back data that differ from their source.

    This is a defect in dafzarr or a library it uses, not in the user's data; the message
    names what differs.
    """


class AttributeLossWarning(UserWarning):
    """An HDF5 attribute cannot be carried over exactly into the references: an
    extended-precision (long double) value that the nearest double changes, or a value of a
    type h5py cannot read, left out. The message names the file, the object and the
    attribute."""


class UnsupportedVariableWarning(UserWarning):
    """A variable was skipped (``on_unsupported="skip"``) because it cannot be referenced."""


class VariableLeftOutWarning(UserWarning):
    """A references-only store (``inline_threshold=0``) left out a variable that has no chunk
    to reference (variable-length strings, compact layout, a 0-d value never written).

    The message names the file, the variable and the reason; the store's root attribute
    ``dafzarr_variables_left_out`` records them too.
    """


class H5Error(DafzarrError, RuntimeError):
    """HDF5 failed while reading a file (damaged, truncated or inconsistent).

    The message names the file (and the variable, when one was being read).
    """


class ScanTimeoutError(H5Error, TimeoutError):
    """The scan of an HDF5/NetCDF4 file did not finish within its deadline and was stopped.

    The message names the file. Raised when the HDF5 library does not return (a damaged or
    hostile file), or when a very large file needs a longer ``timeout``.
    """


class HttpReadError(DafzarrError, OSError):
    """A read over HTTP(S) failed or the server's answer cannot be trusted.

    The message names the URL and what was wrong: a status, a ``Content-Range`` that is not
    the range asked for, a body shorter or longer than announced or allowed, or failures that
    persisted through every retry.
    """


class HttpDeadlineError(HttpReadError, TimeoutError):
    """A read over HTTP(S) did not complete, retries included, within its total deadline."""


class UnsafeCastError(DafzarrError, TypeError, ValueError):
    """Data written into a stored array holds values its element type cannot hold.

    Raised instead of any silent cast (an ``int64`` value beyond ``int32``, a float into an
    integer type, a finite float that would overflow to infinity, ...). The message names
    the destination (file and array, or property) and both element types. It is a
    ``TypeError`` (the types do not match) and a ``ValueError`` (the values do not fit).
    """


class StatisticsWarning(UserWarning):
    """An ArrayFile's ``.stats`` sidecar cannot be read: statistics are reported missing.

    The message names the sidecar and the reason; the arrays' data are not affected.
    """


# --- ArrayFile -------------------------------------------------------------------------


class CorruptArrayFileError(DafzarrError, ValueError):
    """An ``.af`` or ``.stats`` object is truncated or inconsistent (the message names it)."""


class CorruptFooterError(DafzarrError, ValueError):
    """An ArrayFile trailer, footer or statistics payload does not decode.

    Raised by the footer codec, which sees bytes only; ArrayFile turns it into a
    :class:`CorruptArrayFileError` naming the object at fault.
    """


class RkyvError(DafzarrError, ValueError):
    """An archived payload is malformed (out-of-range pointer, bad tag, bad UTF-8, ...)."""


class UnsupportedElementTypeError(DafzarrError, TypeError):
    """An array's element type is one the format names but this reader cannot read or write."""


class ArrayNotFoundError(DafzarrError, _PlainKeyError):
    """No visible array has this name."""


class ArrayExistsError(DafzarrError, ValueError):
    """``define_array`` was given a name that is already visible."""


class UnstableFileSetError(DafzarrError, OSError):
    """An ArrayFile could not be read as one state: its objects kept changing while it was opened.

    An open reads the base, lists the sidecars and reads them, and reads everything again when
    a listed sidecar was gone or the base was replaced meanwhile (what another process's
    compaction does). After a bounded number of attempts this is raised; the message names
    the object at fault (a file system that lists an object it cannot read, or a compaction
    that never pauses).
    """
