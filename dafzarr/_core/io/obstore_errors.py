"""obstore's failures as dafzarr's errors, naming the object and the range asked for.

obstore reports a refused answer in the text of a ``GenericError`` (a wrong
``Content-Range``, a missing ``Content-Length``, a status after its retries); these are
turned into :class:`~dafzarr.errors.HttpReadError` with the same facts in dafzarr's words, so
that no obstore exception reaches the user.
"""

from __future__ import annotations

import errno
import re

from obstore.exceptions import BaseError, NotSupportedError, PreconditionError

from ...errors import HttpReadError
from .source import replaced

__all__ = ["STORE_ERRORS", "RangeIgnored", "asked_range", "store_error", "tries"]

#: What obstore raises: its own errors, and builtin ones (``FileNotFoundError``,
#: ``PermissionError``, ``ValueError``, ``TimeoutError`` ...).
STORE_ERRORS = (BaseError, OSError, ValueError, RuntimeError)

_UNEXPECTED_RANGE = re.compile(r"Requested (\d+)\.\.(\d+), got (\d+)\.\.(\d+)")
_STATUS = re.compile(r"status code: (\d{3})([^:\n]*)")
_RETRIES = re.compile(r"after (\d+) retries")


class RangeIgnored(Exception):
    """The server answered a ranged GET with the whole object (``200``)."""


def tries(n: int) -> str:
    """``1 attempt``, ``n attempts``."""
    return "1 attempt" if n == 1 else f"{n} attempts"


def asked_range(start: int, stop: int) -> str:
    """How messages name the request for ``[start, stop)``."""
    return f"Range bytes={start}-{stop - 1}"


def store_error(exc: Exception, where: str, asked: str) -> Exception:
    """The exception to raise for obstore's ``exc`` when reading ``asked`` of ``where``:
    :class:`FileNotFoundError` (missing; ``ESTALE``: replaced), :class:`RangeIgnored`, or
    :class:`~dafzarr.errors.HttpReadError`."""
    text = str(exc)
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "no such object", where)
    if isinstance(exc, NotSupportedError) and "Range request not supported" in text:
        return RangeIgnored()
    if isinstance(exc, PreconditionError):
        return replaced(where)
    m = _UNEXPECTED_RANGE.search(text)
    if m is not None:
        a, b, c, d = (int(x) for x in m.groups())
        return HttpReadError(
            f"{where}: the answer to {asked_range(a, b)} is for bytes {c}-{d - 1} "
            f"(Content-Range), not the range asked for"
        )
    if "Content-Range header not present" in text:
        return HttpReadError(f"{where}: a 206 answer to {asked} without Content-Range")
    if "Content-Length Header missing" in text:
        return HttpReadError(
            f"{where}: the answer to {asked} has no Content-Length, so its length cannot be checked"
        )
    status = _STATUS.search(text)
    if status is not None:
        retries = _RETRIES.search(text)
        count = f" ({tries(int(retries[1]) + 1)})" if retries else ""
        reason = "" if retries else status[2].rstrip()
        which = f", answering {asked}" if asked.startswith("Range") else ""
        return HttpReadError(f"can't read {where}: HTTP {status[1]}{reason}{count}{which}")
    first_line = text.split("\n", 1)[0].strip() or type(exc).__name__
    return HttpReadError(f"can't read {where} ({asked}): {first_line}")
