"""The one place that turns a failed system call of a writer into a
:class:`~dafzarr.errors.StorageIOError` naming the operation, the file and the key.

Writers wrap each mutating operation in :func:`storage_io`; the error keeps the call's
``errno`` (and the builtin :class:`OSError` subclass that stands for it), so callers that
catch :class:`OSError` or test ``e.errno`` see what they saw before, with a message that
says what failed and what the file holds now.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import DafzarrError, StorageIOError, StorageLockError

__all__ = [
    "LOCK_UNSUPPORTED",
    "Operation",
    "lock_unsupported_error",
    "storage_error",
    "storage_io",
]

#: What ``flock`` returns where the file system has no locks.
LOCK_UNSUPPORTED = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})

_KEPT = "the file keeps its last committed state"

_classes: dict[type[OSError], type[StorageIOError]] = {OSError: StorageIOError}


def _error_class(kind: type[OSError]) -> type[StorageIOError]:
    """:class:`StorageIOError`, also derived from ``kind`` when that is a builtin subclass
    of :class:`OSError` (``PermissionError`` for ``EACCES``, ...)."""
    if kind.__module__ != "builtins":
        kind = OSError
    cls = _classes.get(kind)
    if cls is None:
        cls = type(
            f"StorageIOError_{kind.__name__}",
            (StorageIOError, kind),
            {
                "__doc__": StorageIOError.__doc__,
                "__module__": StorageIOError.__module__,
            },
        )
        _classes[kind] = cls
    return cls


def _describe(exc: OSError) -> str:
    """``exc``'s reason with its errno's name (``No space left on device [ENOSPC]``)."""
    if isinstance(exc, StorageIOError):
        return exc.strerror or str(exc)
    code = exc.errno
    if code is None:
        return str(exc)
    return f"{os.strerror(code)} [{errno.errorcode.get(code, code)}]"


def storage_error(exc: OSError, operation: str, path: str, outcome: str = _KEPT) -> StorageIOError:
    """A :class:`StorageIOError` for ``exc``, raised while ``operation`` (which names the
    key or property) changed ``path``; ``outcome`` says what the file holds now."""
    message = f"{operation} in {path} failed: {_describe(exc)}"
    if outcome and not isinstance(exc, StorageIOError):
        message += f"; {outcome}"
    cls = StorageLockError if isinstance(exc, StorageLockError) else _error_class(type(exc))
    return cls(exc.errno, message, path)


@dataclass(slots=True)
class Operation:
    """What a :func:`storage_io` block is doing now; a block that goes through several
    steps (array after array) sets :attr:`name` as it goes."""

    name: str


@contextlib.contextmanager
def storage_io(operation: str, path: str, outcome: str = _KEPT) -> Iterator[Operation]:
    """Raise a failed system call inside the block as a :func:`storage_error` of the
    :class:`Operation` it yields (``operation`` until the block renames it).

    Errors dafzarr raises on purpose (every other :class:`~dafzarr.errors.DafzarrError`)
    pass unchanged. An ``OSError`` without ``errno`` (a library that dropped it, such as
    Arrow's "error closing file") gives one without ``errno`` too.
    """
    op = Operation(operation)
    try:
        yield op
    except OSError as exc:
        ours = isinstance(exc, StorageIOError) or not isinstance(exc, DafzarrError)
        if not ours:
            raise
        raise storage_error(exc, op.name, path, outcome) from exc


def lock_unsupported_error(exc: OSError, path: str, how: str) -> StorageLockError:
    """The error of a writer's ``flock`` that the file system refused: it names the file,
    the errno and ``how`` to open without the lock, and its risk."""
    return StorageLockError(
        exc.errno,
        f"cannot lock {path} for writing: the file system does not support flock "
        f"({_describe(exc)}; NFS without a lock daemon, Lustre mounted without flock). "
        f"If no other process writes it meanwhile, open it without the lock ({how}); "
        "two unlocked writers at once lose each other's commits",
        path,
    )
