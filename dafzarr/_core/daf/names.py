"""Names and paths of a Daf data set: property names, ``X.daf.zarr``-style paths, data set names.

A property name is one path component of the Zarr layout; :func:`parse_daf_path` tells the
directory, ZIP, multi-data-set ZIP and HTTP forms apart; :func:`_unique_name` gives each open
data set a name unique in the process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DafArgumentError, DafMissingError, InvalidArgumentTypeError

METADATA_NAMES = frozenset((".zgroup", ".zattrs", ".zarray", ".zmetadata", "zarr.json"))
#: The vectors every axis has without storing them.
RESERVED_VECTORS = ("name", "index")

# --- Names -------------------------------------------------------------------------------------

_NAME_COUNTS: dict[str, int] = {}
_NAME_LOCK = threading.Lock()


def unique_name(prefix: str) -> str:
    """``prefix`` the first time in this process, then ``prefix#2``, ``prefix#3``, ..."""
    if "!" in prefix:
        return prefix
    with _NAME_LOCK:
        n = _NAME_COUNTS.get(prefix, 0) + 1
        _NAME_COUNTS[prefix] = n
    return prefix if n == 1 else f"{prefix}#{n}"


def _name_problem(name: Any, what: str) -> str | None:
    """Why ``name`` cannot be one path component of the layout (``None``: it can); a name
    that is not a ``str`` is an :class:`InvalidArgumentTypeError`."""
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(
            f"{what} name must be a str, got {type(name).__name__}: {name!r}"
        )
    if not name:
        return f"empty {what} name"
    if name in (".", ".."):
        return f"invalid {what} name: {name!r} (a relative path component)"
    if "/" in name or "\0" in name:
        return f"invalid {what} name: {name!r} (contains '/' or NUL)"
    if name in METADATA_NAMES:
        return f"invalid {what} name: {name!r} (a Zarr metadata name)"
    return None


def check_name(name: Any, what: str) -> str:
    """A name usable as one path component of the layout, or a clear error."""
    problem = _name_problem(name, what)
    if problem is not None:
        raise DafArgumentError(problem)
    return str(name)


def can_be_stored(*names: Any) -> bool:
    """Whether each of ``names``, given to look a property up, can name a stored node: a name
    the layout refuses (empty, ``/``, ...) names nothing, so the property does not exist; a
    name that is not a ``str`` is an :class:`InvalidArgumentTypeError`."""
    return all(_name_problem(name, "Daf") is None for name in names)


def entry_positions(
    positions: dict[str, int],
    names: Sequence[str],
    axis: str,
    daf_name: str,
    allow_empty: bool,
    allow_missing: bool,
) -> np.ndarray[Any, Any]:
    """0-based positions of ``names`` in an axis (``positions``: entry -> position); ``""``
    (``allow_empty``) or unknown names (``allow_missing``) map to -1, else raise."""
    out = np.empty(len(names), dtype=np.int64)
    for i, n in enumerate(names):
        if n in positions:
            out[i] = positions[n]
        elif (n == "" and allow_empty) or (n != "" and allow_missing):
            out[i] = -1
        else:
            raise DafMissingError(
                f"missing entry: {n!r}\nof the axis: {axis}\nin the daf data: {daf_name}"
            )
    return out


# --- Paths -------------------------------------------------------------------------------------


def parse_daf_path(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """Split a ZarrDaf path into ``(kind, container, group)``.

    ``kind`` is ``"directory"`` (``X.daf.zarr``), ``"zip"`` (``X.daf.zarr.zip``, or
    ``X.dafs.zarr.zip#/group`` with a non-empty group) or ``"http"`` (``http(s)://...``).

    Parameters
    ----------
    path
        A data set's path or URL.

    Returns
    -------
    tuple of str
        ``kind``, the container's absolute path (a URL as it is, without a trailing
        ``/``) and the group (``""``: the whole container).

    Raises
    ------
    DafFormatError
        A path that ends in none of ``.daf.zarr``, ``.daf.zarr.zip`` and
        ``.dafs.zarr.zip#/<group>``; a multi-data-set ZIP without a group, or a
        single-data-set ZIP with one; an invalid group name.

    Examples
    --------
    >>> dafzarr.daf.parse_daf_path("pbmc.daf.zarr")
    ('directory', '.../pbmc.daf.zarr', '')
    >>> dafzarr.daf.parse_daf_path("atlas.dafs.zarr.zip#/day1")
    ('zip', '.../atlas.dafs.zarr.zip', 'day1')
    >>> dafzarr.daf.parse_daf_path("https://example.org/pbmc.daf.zarr/")
    ('http', 'https://example.org/pbmc.daf.zarr', '')
    """
    text = os.fspath(path)
    if text.startswith(("http://", "https://")):
        return "http", text.rstrip("/"), ""
    if ".dafs.zarr.zip#/" in text:
        parts = text.split(".dafs.zarr.zip#/")
        if len(parts) == 2:
            group = parts[1].strip("/")
            if not group:
                raise DafArgumentError(f"empty group name after '#/' in ZarrDaf path: {text}")
            for part in group.split("/"):
                check_name(part, "group")
            return "zip", os.path.abspath(parts[0] + ".dafs.zarr.zip"), group
    elif ".daf.zarr.zip#" in text:
        raise DafArgumentError(
            "can't address a sub-daf in a singular ZarrDaf path; use .dafs.zarr.zip#/<group>: "
            + text
        )
    elif text.rstrip("/").endswith(".dafs.zarr.zip"):
        raise DafArgumentError(f"missing '#/<group>' in plural ZarrDaf path: {text}")
    elif text.endswith(".daf.zarr.zip"):
        return "zip", os.path.abspath(text), ""
    elif text.rstrip("/").endswith(".daf.zarr"):
        return "directory", os.path.abspath(text.rstrip("/")), ""
    raise DafArgumentError(
        f"can't parse as ZarrDaf path: {text}\nexpected one of: <stem>.daf.zarr, "
        "<stem>.daf.zarr.zip, <stem>.dafs.zarr.zip#/<group>"
    )


def join_path(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def check_not_reserved(axis: str, name: str, daf_name: str) -> None:
    """Refuse to set the vectors ``name`` and ``index``, which every axis has already."""
    if name in RESERVED_VECTORS:
        raise DafArgumentError(
            f"setting the reserved vector: {name}\nfor the axis: {axis}\n"
            f"in the daf data: {daf_name}"
        )
