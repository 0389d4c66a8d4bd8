"""Copying a Daf data set between backends and layouts (``dafzarr daf convert``)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ...errors import DafArgumentError, InvalidArgumentError
from ..atomic import TMP_SUFFIX, atomic_directory, atomic_file, check_destination
from ..ioerror import storage_io
from ..progress import Progress
from .backends_zip import acquire_zip_store, release_zip_store
from .names import parse_daf_path
from .zarrdaf import ZarrDaf

__all__ = ["convert_daf", "copy_daf"]


def _copy_node(src: ZarrDaf, dst: ZarrDaf, path: str) -> None:
    """Copy one stored property (an array, or a sparse group of arrays) as it is stored."""
    items: list[tuple[str, Any]] = []
    if src._node_kind(path) == "array":
        info = src._array_info(path)
        items += dst._array_items(path, src._read_array(path), info.dtype)
    else:
        for part in ("nzind", "colptr", "rowval", "nzval"):
            child = f"{path}/{part}"
            if src._node_kind(child) == "array":
                info = src._array_info(child)
                items += dst._array_items(child, src._read_array(child), info.dtype)
        items += dst._layout.group_docs(path).items()
    dst._write(items)


def copy_daf(source: ZarrDaf, destination: ZarrDaf, *, progress: bool | TextIO = False) -> None:
    """Copy every scalar, axis, vector and matrix of ``source`` into ``destination``.

    Properties keep their element types, index types and sparsity, and both stored layouts
    of a matrix are copied as they are (no relayout is computed). ``progress=True`` reports
    on stderr (or pass a stream).

    Parameters
    ----------
    source
        The data set to copy.
    destination
        The writable data set to copy into (it must not hold those properties already).
    progress
        Report progress on stderr (``True``) or on this stream.

    Raises
    ------
    DafExistsError
        ``destination`` holds a scalar or an axis of the same name already.
    DafReadOnlyError
        ``destination`` was opened read-only.

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> copy = dafzarr.open_daf("copy.daf.zarr.zip", "w")
    >>> dafzarr.daf.copy_daf(base, copy)
    >>> copy.get_np_vector("cell", "age").tolist()
    [1.0, 2.0, 3.0]
    """
    stream = sys.stderr if progress is True else (progress or None)
    axes = sorted(source.axes_set())
    vectors = [(a, v) for a in axes for v in sorted(source.vectors_set(a))]
    matrices = [
        (r, c, m)
        for r in axes
        for c in axes
        for m in sorted(source.matrices_set(r, c, relayout=False))
    ]
    scalars = sorted(source.scalars_set())
    total = len(scalars) + len(axes) + len(vectors) + len(matrices)
    with Progress(total, "copying", stream is not None, stream, unit="properties") as bar:
        for name in scalars:
            destination.set_scalar(name, source.get_scalar(name))
            bar.step(what=f"scalar {name}")
        for axis in axes:
            destination.add_axis(axis, source.axis_np_entries(axis))
            bar.step(what=f"axis {axis}")
        for axis, name in vectors:
            _copy_node(source, destination, f"vectors/{axis}/{name}")
            bar.step(what=f"vector {axis}/{name}")
        for rows, cols, name in matrices:
            _copy_node(source, destination, f"matrices/{rows}/{cols}/{name}")
            bar.step(what=f"matrix {rows},{cols}/{name}")


def _suffix(container: str) -> str:
    """The ending a path needs to be read as the same kind of Daf container."""
    for ending in (".dafs.zarr.zip", ".daf.zarr.zip", ".daf.zarr"):
        if container.endswith(ending):
            return ending
    raise DafArgumentError(f"not a Daf container path: {container}")  # parse_daf_path checked it


@contextlib.contextmanager
def new_destination(destination: str, zarr_format: int, force: bool) -> Iterator[ZarrDaf]:
    """A new data set that becomes ``destination`` only once the block succeeds.

    A whole container (directory or ZIP) is written under a temporary name next to it and
    renamed into place. A group of a multi-data-set ZIP that exists is appended to it in one
    batch: the other data sets are never touched, and on failure nothing of the group stays.
    """
    kind, container, group = parse_daf_path(destination)
    if kind == "http":
        raise InvalidArgumentError(
            f"can't convert into a read-only http(s) destination: {destination}"
        )
    if group and os.path.isfile(container):
        # the one the data set will share; durable, as a whole new destination is (fsynced):
        # a power loss leaves the archive with or without the group, never unreadable
        store = acquire_zip_store(container, "r+", durable=True)
        try:
            with store.batch():  # the group's own skeleton included
                dst = ZarrDaf(destination, "w", zarr_format=zarr_format)
                try:
                    yield dst
                finally:
                    dst.close()
        finally:
            release_zip_store(store)
        return
    directory = kind == "directory"
    check_destination(container, force, directory=directory)
    if directory:
        new = atomic_directory(container, force=force)
    else:
        new = atomic_file(container, force=force, suffix=_suffix(container), create=False)
    with new as tmp:
        dst = ZarrDaf(tmp + (f"#/{group}" if group else ""), "w+", zarr_format=zarr_format)
        try:
            yield dst
        finally:
            dst.close()


def convert_daf(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    zarr_format: int | None = None,
    force: bool = False,
    progress: bool | TextIO = False,
) -> int:
    """Copy the data set at ``source`` into a new one at ``destination``; return its format.

    ``zarr_format`` (2 or 3) is the destination's layout (default: the source's). The
    destination is written under a temporary name in its directory and renamed into place
    once complete (see :mod:`dafzarr._core.atomic`): on any failure, or if the process is killed,
    an existing destination is left as it was and no partial one appears. An existing
    destination is replaced only with ``force`` (otherwise
    :class:`~dafzarr.errors.OutputExistsError`). A ``X.dafs.zarr.zip#/group`` destination in
    an existing archive adds the group in one all-or-nothing, durable batch (an existing group
    raises :class:`~dafzarr.errors.AppendOnlyError`; a handle of this process that has the
    archive open without ``durable=True`` must be closed first). Every destination survives a
    power loss whole or not at all.

    Parameters
    ----------
    source
        The path of the data set to copy.
    destination
        The path of the new data set (a directory, a ZIP, or a group of a multi-data-set
        ZIP).
    zarr_format
        The destination's Zarr format, 2 or 3 (default: the source's).
    force
        Replace an existing destination.
    progress
        Report progress on stderr (``True``) or on this stream.

    Returns
    -------
    int
        The destination's Zarr format.

    Raises
    ------
    DafNotFoundError
        No data set at ``source``.
    DafFormatError
        A path that is not a Daf data set path (``X.daf.zarr``, ``X.daf.zarr.zip``,
        ``X.dafs.zarr.zip#/group``).
    OutputExistsError
        ``destination`` exists and ``force`` was not given.
    AppendOnlyError
        A group of a multi-data-set ZIP that exists already.
    InvalidArgumentError
        An ``http(s)://`` destination (read-only).
    StorageIOError
        The file system failed while writing (a full disk, a quota); the destination
        stays as it was.

    Examples
    --------
    >>> base = dafzarr.open_daf("base.daf.zarr", "w")
    >>> _ = base.add_axis("cell", ["c0", "c1", "c2"])
    >>> _ = base.set_vector("cell", "age", [1.0, 2.0, 3.0])
    >>> dafzarr.daf.convert_daf("base.daf.zarr", "base.daf.zarr.zip", zarr_format=3)
    3
    >>> dafzarr.open_daf("base.daf.zarr.zip").get_np_vector("cell", "age").tolist()
    [1.0, 2.0, 3.0]
    """
    target = os.fspath(destination)
    what = f"converting the data set {os.fspath(source)}"
    try:
        with storage_io(what, target, "the destination is left as it was"):
            src = ZarrDaf(source, "r")
            try:
                fmt = zarr_format or src.zarr_format
                with new_destination(target, fmt, force) as dst:
                    copy_daf(src, dst, progress=progress)
            finally:
                src.close()
    except OSError as exc:  # (a DafzarrError: storage_io turned the others into one)
        if TMP_SUFFIX not in str(exc):
            raise
        # Raised about the temporary, which the user never named (an address-space
        # reservation refused, a lock taken): the same error, naming the destination.
        reason = exc.strerror or str(exc)
        raise type(exc)(exc.errno, f"{what} into {target} failed: {reason}", target) from exc
    return fmt
