"""Exceptions and warnings of dafzarr.

Every exception derives from :class:`DafzarrError` through one of a few bases that say what
went wrong, and from the builtin exception that code unaware of dafzarr would catch, so
``except KeyError`` or ``except ValueError`` keep working:

* :class:`NotFoundError`: what was asked for does not exist (``KeyError``,
  ``FileNotFoundError``).
* :class:`CorruptDataError`: stored data are damaged, truncated, inconsistent or hostile.
* :class:`UnsupportedError`: valid data or a valid request that dafzarr does not handle.
* :class:`ArgumentError`: what the caller passed is wrong (``ValueError``, ``TypeError``).
* :class:`StateError`: the target's current state refuses the operation (it exists already,
  it is read-only, locked, in use, full).
* :class:`IOFailureError`: the system or a server failed (an ``OSError``).

:class:`SelfCheckError`, a defect in dafzarr itself, sits directly under
:class:`DafzarrError`. Every warning derives from :class:`DafzarrWarning` (a
``UserWarning``). Raw operating-system failures stay plain :class:`OSError` subclasses
(``FileNotFoundError``, ``PermissionError``, ...), with the file name set.
"""

from __future__ import annotations

__all__ = [
    "AddressSpaceError",
    "AlreadyOpenError",
    "AnnDataConversionError",
    "AppendOnlyError",
    "ArchiveFullError",
    "ArchiveInUseError",
    "ArchiveLockedError",
    "ArgumentError",
    "ArrayExistsError",
    "ArrayNotFoundError",
    "AttributeLossWarning",
    "BatchOpenError",
    "ClosedError",
    "CorruptArchiveError",
    "CorruptArrayFileError",
    "CorruptDafError",
    "CorruptDataError",
    "CorruptFooterError",
    "DafArgumentError",
    "DafContractError",
    "DafExistsError",
    "DafFormatError",
    "DafMismatchError",
    "DafMissingEntryError",
    "DafMissingError",
    "DafNotFoundError",
    "DafQueryError",
    "DafQueryParameterError",
    "DafQuerySyntaxError",
    "DafReadOnlyError",
    "DafzarrDeprecationWarning",
    "DafzarrError",
    "DafzarrWarning",
    "EntryExistsError",
    "EntryNotFoundError",
    "FormatLimitError",
    "H5Error",
    "HttpDeadlineError",
    "HttpReadError",
    "IOFailureError",
    "IncompatibleSourcesError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MissingFileError",
    "NotFoundError",
    "OutOfBoundsError",
    "OutputExistsError",
    "PackSourceError",
    "RecoveryWarning",
    "RefusedEntryWarning",
    "RkyvError",
    "ScanTimeoutError",
    "SelfCheckError",
    "StateError",
    "StatisticsWarning",
    "StorageIOError",
    "StorageLockError",
    "TruncatedDataError",
    "UnsafeCastError",
    "UnsafeEntryNameError",
    "UnstableFileSetError",
    "UnsupportedDafError",
    "UnsupportedElementTypeError",
    "UnsupportedEntryError",
    "UnsupportedError",
    "UnsupportedHDF5Error",
    "UnsupportedVariableWarning",
    "VariableLeftOutWarning",
]


class DafzarrError(Exception):
    """Base class of every exception dafzarr raises on purpose."""


class NotFoundError(DafzarrError):
    """What was asked for does not exist: an archive entry, an array, a Daf axis, property or
    entry, a data set. Each subclass is also the builtin ``KeyError`` or
    ``FileNotFoundError`` that code unaware of dafzarr catches."""


class CorruptDataError(DafzarrError):
    """Stored data cannot be read as what they claim to be: a damaged, truncated,
    inconsistent or hostile ZIP archive, ArrayFile, HDF5 file or Daf data set (the message
    names it)."""


class UnsupportedError(DafzarrError):
    """Valid data or a valid request that dafzarr does not handle: a compression method, an
    element type, an HDF5 feature, an AnnData element."""


class ArgumentError(DafzarrError):
    """What the caller passed is wrong: an argument's value or type, a query, a computation's
    contract, data sets or files that do not fit together. Each subclass is also a
    ``ValueError`` or a ``TypeError``."""


class StateError(DafzarrError):
    """The current state of the target refuses the operation: what would be created exists
    already, the target is read-only or append-only, locked by another writer, in use, full,
    or has a batch of writes open."""


class IOFailureError(DafzarrError, OSError):
    """The operating system or a server failed or refused what an operation needed: a write
    to disk, an address-space reservation, a network read, a set of files that stays still
    while it is read."""


class DafzarrWarning(UserWarning):
    """Base class of every warning dafzarr issues."""


class DafzarrDeprecationWarning(DafzarrWarning, DeprecationWarning):
    """A name or hook the caller used still works but is deprecated; the message names its
    replacement. Also a ``DeprecationWarning``, so Python's default filters treat it as
    one (shown for code run as ``__main__`` and under test runners)."""


class CorruptArchiveError(CorruptDataError, ValueError):
    """A file is not a valid ZIP archive, or one of its records is inconsistent."""


class UnsupportedEntryError(UnsupportedError, ValueError):
    """A ZIP entry uses a compression method or encryption dafzarr cannot decode."""


class AppendOnlyError(StateError, NotImplementedError):
    """An append-only store was asked to overwrite or delete an existing entry."""


class AddressSpaceError(IOFailureError):
    """A writable archive's address-space reservation was refused (``RLIMIT_AS``).

    The message names the archive, the size and the ``max_file_size`` option to lower.
    """


class StorageIOError(IOFailureError):
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


class EntryExistsError(StateError, ValueError):
    """An operation that creates an entry found one under that key already."""


class ArchiveLockedError(StateError, BlockingIOError):
    """Another handle or process holds the archive open for writing."""


class UnsafeEntryNameError(CorruptDataError, ValueError):
    """An archive holds an entry whose name is unsafe (``..``, absolute, backslash, NUL, not
    UTF-8), so dafzarr will not write into it (a read-only open serves the other entries)."""


class RefusedEntryWarning(DafzarrWarning):
    """A read-only open found entries whose names are unsafe; they are not served."""


class ArchiveInUseError(StateError, BufferError):
    """An archive cannot be compacted in place while zero-copy views of its mapping are alive."""


class OutputExistsError(StateError, FileExistsError):
    """An output path exists already and ``force`` was not given."""


class PackSourceError(ArgumentError, ValueError):
    """A directory cannot be packed into an archive as it is.

    The message names the directory and the file at fault: not a Zarr store, a name that is
    not UTF-8, a link that leads outside the directory, a file that is neither a regular file
    nor a directory.
    """


class ArchiveFullError(StateError, ValueError):
    """An append would grow an archive past the ``max_file_size`` its store was opened with."""


class EntryNotFoundError(NotFoundError, KeyError):
    """An archive has no entry under the key asked for (the key is the exception's argument,
    or its message names it)."""


class BatchOpenError(StateError, RuntimeError):
    """An archive was to be closed or compacted while a batch of writes to it is open."""


class RecoveryWarning(DafzarrWarning):
    """A writable open repaired an archive left behind by an interrupted writer."""


class DafFormatError(DafzarrError, ValueError):
    """A path, store, name or value is not a valid Daf data set (or not for this operation).

    The common base of :class:`CorruptDafError` (a damaged data set) and
    :class:`UnsupportedDafError` (a format or version this reader does not handle), so
    ``except DafFormatError`` catches both, and :class:`DafArgumentError` (a path, name or
    value the caller gave that the format refuses). Not raised itself.
    """


class CorruptDafError(DafFormatError, CorruptDataError):
    """A Daf data set is damaged or inconsistent: it is not a Daf group, its metadata do not
    parse, an array's shape or chunk does not fit its axes, stored indices lie out of range
    (the message names the data set and the array)."""


class UnsupportedDafError(DafFormatError, UnsupportedError):
    """A Daf data set uses a format version, an element type, a codec or a layout this reader
    does not handle, or one that cannot be shown as asked (two properties that map to one
    xarray name); the message names the data set and the feature."""


class AnnDataConversionError(UnsupportedError, ValueError):
    """An AnnData element cannot cross the AnnData bridge without loss (the message names it)."""


class DafReadOnlyError(StateError, PermissionError):
    """A writer was called on a Daf data set opened read-only."""


class _PlainKeyError(KeyError):
    """A ``KeyError`` whose message prints as written (``KeyError`` quotes it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DafMissingError(NotFoundError, _PlainKeyError):
    """A scalar, axis, vector or matrix that was asked for does not exist."""


class DafQueryError(ArgumentError, ValueError):
    """A Daf query cannot be evaluated on a data set (an operation that does not apply, a value
    of the wrong type, an unknown entry, an empty reduction without a default, ...).

    The message starts with what is wrong, then names the query in its canonical text
    (``in the query: ...``), the operations concerned and the data set
    (``for the daf data: ...``). Missing axes and properties raise :class:`DafMissingError`.
    """


class DafQuerySyntaxError(DafQueryError):
    """A Daf query text does not parse: the message ends with the query (``in: ...``) and a
    caret line (``at: ...``) under the failing token."""


class DafExistsError(StateError, ValueError):
    """A property exists already and ``overwrite`` was not given."""


class DafContractError(ArgumentError, ValueError):
    """A computation's contract is broken: a required input is missing or of the wrong element
    type, an output was not created, a property outside the contract was accessed, an input
    was modified or a required input never read, or two contracts cannot be combined.

    The message names the computation, the property and the data set.
    """


class DafMismatchError(ArgumentError, ValueError):
    """Data sets cannot be combined as asked: axes whose entries do not align, entries missing
    without an ``empty`` value to fill them, values that disagree, properties that cannot be
    concatenated or collected.

    The message names the operation, the data sets, the axes and the property at fault.
    """


class UnsupportedHDF5Error(UnsupportedError, ValueError):
    """An HDF5/NetCDF4 variable cannot be represented as byte-range references.

    The message names the file, the variable and the feature at fault (filter, per-chunk
    filter mask, data type or layout).
    """


class IncompatibleSourcesError(ArgumentError, ValueError):
    """Files cannot be combined into one virtual dataset without changing their meaning.

    The message names the files, the variable and the mismatch (dtype, codecs, chunk shape,
    packing or time attributes, misaligned or overlapping placement).
    """


class InvalidArgumentError(ArgumentError, ValueError):
    """An argument's value is outside what the function accepts.

    The message names the argument and the value given (or, for a record built by hand, the
    record and what is inconsistent in it).
    """


class DafArgumentError(DafFormatError, InvalidArgumentError):
    """A Daf path, name, option or value the caller gave that the format refuses: an empty
    or invalid axis or property name (``/``, NUL, ``.``, a Zarr metadata name), a reserved
    vector (``name``, ``index``), repeated axis entries, an invalid sparse value, an option
    that applies to ZIP archives only, a path of no Daf form. The message names the data set,
    axis and property. Also an :class:`InvalidArgumentError` and a ``ValueError``.
    """


class InvalidArgumentTypeError(ArgumentError, TypeError):
    """An argument's type is not one the function accepts (a name that is not a ``str``, a
    value that is not a scalar, strings where numbers are required, ...).

    The message names the argument and the type given.
    """


class DafNotFoundError(NotFoundError, FileNotFoundError):
    """A Daf data set opened for reading (modes ``r`` and ``r+``) does not exist.

    ``filename`` is the missing directory or ZIP archive.
    """


class SelfCheckError(DafzarrError, RuntimeError):
    """A built-in self-check (``dafzarr demo``) read back data that differ from their source.

    This is a defect in dafzarr or a library it uses, not in the user's data; the message
    names what differs.
    """


class AttributeLossWarning(DafzarrWarning):
    """An HDF5 attribute cannot be carried over exactly into the references: an
    extended-precision (long double) value that the nearest double changes, or a value of a
    type h5py cannot read, left out. The message names the file, the object and the
    attribute."""


class UnsupportedVariableWarning(DafzarrWarning):
    """A variable was skipped (``on_unsupported="skip"``) because it cannot be referenced."""


class VariableLeftOutWarning(DafzarrWarning):
    """A references-only store (``inline_threshold=0``) left out a variable that has no chunk
    to reference (variable-length strings, compact layout, a 0-d value never written).

    The message names the file, the variable and the reason; the store's root attribute
    ``dafzarr_variables_left_out`` records them too.
    """


class H5Error(CorruptDataError, RuntimeError):
    """HDF5 failed while reading a file (damaged, truncated or inconsistent).

    The message names the file (and the variable, when one was being read).
    """


class ScanTimeoutError(H5Error, TimeoutError):
    """The scan of an HDF5/NetCDF4 file did not finish within its deadline and was stopped.

    The message names the file. Raised when the HDF5 library does not return (a damaged or
    hostile file), or when a very large file needs a longer ``timeout``.
    """


class HttpReadError(IOFailureError):
    """A read over HTTP(S) failed or the server's answer cannot be trusted.

    The message names the URL and what was wrong: a status, a ``Content-Range`` that is not
    the range asked for, a body shorter or longer than announced or allowed, or failures that
    persisted through every retry.
    """


class HttpDeadlineError(HttpReadError, TimeoutError):
    """A read over HTTP(S) did not complete, retries included, within its total deadline."""


class UnsafeCastError(ArgumentError, TypeError, ValueError):
    """Data written into a stored array holds values its element type cannot hold.

    Raised instead of any silent cast (an ``int64`` value beyond ``int32``, a float into an
    integer type, a finite float that would overflow to infinity, ...). The message names
    the destination (file and array, or property) and both element types. It is a
    ``TypeError`` (the types do not match) and a ``ValueError`` (the values do not fit).
    """


class StatisticsWarning(DafzarrWarning):
    """An ArrayFile's ``.stats`` sidecar cannot be read: statistics are reported missing.

    The message names the sidecar and the reason; the arrays' data are not affected.
    """


# --- ArrayFile -------------------------------------------------------------------------


class CorruptArrayFileError(CorruptDataError, ValueError):
    """An ``.af`` or ``.stats`` object is truncated or inconsistent (the message names it)."""


class CorruptFooterError(CorruptDataError, ValueError):
    """An ArrayFile trailer, footer or statistics payload does not decode.

    Raised by the footer codec, which sees bytes only; ArrayFile turns it into a
    :class:`CorruptArrayFileError` naming the object at fault.
    """


class RkyvError(CorruptDataError, ValueError):
    """An archived payload is malformed (out-of-range pointer, bad tag, bad UTF-8, ...)."""


class UnsupportedElementTypeError(UnsupportedError, TypeError):
    """An array's element type is one the format names but this reader cannot read or write."""


class ArrayNotFoundError(NotFoundError, _PlainKeyError):
    """No visible array has this name."""


class ArrayExistsError(StateError, ValueError):
    """``define_array`` was given a name that is already visible."""


class UnstableFileSetError(IOFailureError):
    """An ArrayFile, or a property of a directory Daf data set, could not be read as one
    state: its objects kept changing while it was opened or read.

    An ArrayFile open reads the base, lists the sidecars and reads them, and reads everything
    again when a listed sidecar was gone or the base was replaced meanwhile (what another
    process's compaction does). After a bounded number of attempts this is raised; the
    message names the object at fault (a file system that lists an object it cannot read, or
    a compaction that never pauses).

    A directory data set's property is read from one directory (one descriptor of it); a
    read that finds a chunk missing because another process deleted or replaced the
    property meanwhile is made again, and after a bounded number of attempts this is
    raised, naming the data set and the property.
    """


# --- Daf queries -------------------------------------------------------------------------


class DafMissingEntryError(DafQueryError):
    """A query names an entry (or holds a value used as an entry) that its axis lacks."""


class DafQueryParameterError(ArgumentError, ValueError):
    """A parameter of a query operation is unknown, repeated, missing or invalid.

    ``param`` is the parameter's name (``None`` when the error is not about one parameter),
    for a query parser to point at it.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


# --- Classes for failures that builtin exceptions used to report --------------------------


class MissingFileError(NotFoundError, FileNotFoundError):
    """A file or directory that must exist does not: an archive opened for reading, a
    directory to pack, an archive to compact (``filename`` is the path); or an entry whose
    size a Zarr store was asked (``filename`` is the key, as Zarr's stores do)."""


class AlreadyOpenError(StateError, ValueError):
    """A store that is open already was asked to open again (as Zarr's stores refuse)."""


class ClosedError(StateError, ValueError):
    """An object was used after it was closed (as a closed Python file refuses it)."""


class FormatLimitError(UnsupportedError, OverflowError):
    """A value or a size does not fit the fields of a file format: an ArrayFile's u32 sizes,
    counts and chunk bytes, its 64-bit fill values and attributes, its sidecar numbers (the
    message names the array or object and the limit)."""


class OutOfBoundsError(ArgumentError, IndexError):
    """A region asked of an array lies outside its shape (the message names the array, the
    region and the shape)."""


class TruncatedDataError(CorruptDataError, EOFError):
    """A file or object ends before the bytes that were to be read from it (it was cut
    short, or shrank while it was read; the message names it and the range)."""
