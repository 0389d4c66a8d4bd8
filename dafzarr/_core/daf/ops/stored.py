"""Copying a matrix between two :class:`~dafzarr.daf.ZarrDaf` data sets as it is stored.

When a matrix is copied unchanged (one layout, or both) (same entries in the same order, no
conversion), the stored arrays (dense values; or CSC ``colptr``, ``rowval``, ``nzval`` with
their 1-based indices and index type) are written from the source's zero-copy views into
the destination, in one change: no index is converted to 0-based and back, no layout is
transposed. The indices are checked as a reader checks them (column pointers from 1 to the
stored count, never decreasing; rows within the axis), so a damaged source is refused, not
propagated.

An axis goes the same way: its entries' stored vlen-utf8 chunk is checked (valid UTF-8,
the axis' count, no entry twice) and written as it is, with no ``str`` made of each entry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._vlen import first_repeated_vlen_utf8
from ....errors import CorruptDafError
from ...aliases import Array
from .. import layout as lay
from ..axes import EncodedNames
from ..backends_zip import ZipBackend
from ..names import check_name, join_path
from ..zarrdaf import ZarrDaf

__all__ = ["copy_stored_axis", "copy_stored_layouts"]


def _check_csc(
    colptr: Array, rowval: Array, n_rows: int, n_columns: int, where: str, *, rows: bool = True
) -> None:
    if colptr.shape != (n_columns + 1,) or rowval.ndim != 1:
        raise CorruptDafError(
            f"{where}: colptr has {colptr.size} entries (expected {n_columns + 1})"
        )
    if (
        int(colptr[0]) != 1
        or int(colptr[-1]) != rowval.size + 1
        or bool(np.any(colptr[1:] < colptr[:-1]))
    ):
        raise CorruptDafError(
            f"{where}: colptr is not a valid 1-based CSC column pointer for "
            f"{rowval.size} stored values"
        )
    if rows and rowval.size and (int(rowval.min()) < 1 or int(rowval.max()) > n_rows):
        raise CorruptDafError(f"{where}: rowval holds rows outside 1..{n_rows}")


def _chunk_items(
    source: ZarrDaf, destination: ZarrDaf, path: str, target: str, values: Array
) -> list[tuple[str, Any]]:
    """The destination's keys and chunk of the source's array at ``path`` (mapped as
    ``values``): between two ZIP data sets, a large chunk is copied as the entry it is (file
    to file in the kernel, the source's CRC-32 kept), not through this process' memory."""
    info = source._array_info(path)
    items = destination._array_items(target, values, info.dtype)
    src = source._backend
    if not (isinstance(src, ZipBackend) and _entry_copied(source, destination, path, values)):
        return items
    chunk = destination._layout.chunk_key(target, values.ndim)
    return [
        (key, src.entry_copy(info.chunk_key, data) if key == chunk else data) for key, data in items
    ]


def _entry_copied(source: ZarrDaf, destination: ZarrDaf, path: str, values: Array) -> bool:
    """Whether the source's array at ``path`` goes to the destination as its entry."""
    return (
        isinstance(source._backend, ZipBackend)
        and isinstance(destination._backend, ZipBackend)
        and values.nbytes >= _COPY_MIN
        and source._array_info(path).canonical
    )


# Chunks smaller than this are written with the other small writes of the change.
_COPY_MIN = 1 << 20


def _sparse_parts(source: ZarrDaf, path: str) -> dict[str, Array]:
    """The stored arrays of the sparse matrix at ``path``, within
    :meth:`~dafzarr._core.daf.storage.DafStorage.one_state` (from one state of it)."""
    source._storage.require_group(path)
    return {
        part: source._read_array(join_path(path, part))
        for part in ("colptr", "rowval", "nzval")
        if source._node_kind(join_path(path, part)) == "array"
    }


def _layout_items(
    source: ZarrDaf,
    destination: ZarrDaf,
    rows: str,
    columns: str,
    name: str,
    target: str,
    kind: str,
) -> list[tuple[str, Any]]:
    """The destination's keys and chunks of one stored layout of the source (``target``:
    the destination's path of the layout)."""
    path = join_path("matrices", rows, columns, name)
    n_rows, n_columns = source.axis_length(rows), source.axis_length(columns)
    where = f"{source._path}: {path}"
    if kind == "array":
        values = source._read_array(path)
        if values.shape != (n_columns, n_rows):
            raise CorruptDafError(
                f"{where}: Zarr shape {values.shape}, expected {(n_columns, n_rows)}"
            )
        return _chunk_items(source, destination, path, target, values)
    parts = source._storage.one_state(path, lambda: _sparse_parts(source, path))
    if "colptr" not in parts or "rowval" not in parts:
        raise CorruptDafError(f"{where}: a sparse matrix without colptr and rowval")
    # Row indices copied as the entry they are stay as the source has them: every reader
    # checks them as it reads them (from either archive), and their pass would cost as much
    # as the copy itself.
    _check_csc(
        parts["colptr"],
        parts["rowval"],
        n_rows,
        n_columns,
        where,
        rows=not _entry_copied(source, destination, join_path(path, "rowval"), parts["rowval"]),
    )
    if "nzval" in parts and parts["nzval"].shape != parts["rowval"].shape:
        raise CorruptDafError(
            f"{where}: nzval has {parts['nzval'].size} values, rowval {parts['rowval'].size}"
        )
    items: list[tuple[str, Any]] = []
    for part, values in parts.items():
        items += _chunk_items(
            source, destination, join_path(path, part), join_path(target, part), values
        )
    items += destination._layout.group_docs(target).items()
    return items


def copy_stored_layouts(
    source: Any,
    destination: Any,
    axes: tuple[str, str, str],
    targets: tuple[str, str, str],
    overwrite: bool,
    *,
    both: bool,
) -> bool:
    """Copy the stored ``rows x columns`` layout of the matrix ``axes`` (rows, columns,
    name) of ``source`` (with ``both``, the other layout too; never for a square matrix) as
    ``targets`` of ``destination``, between ZarrDafs whose axes have the same entries in the
    same order; ``False`` (nothing done) when either data set is not a ZarrDaf or the source
    lacks a layout."""
    rows, columns, name = axes
    rows_target, columns_target, target = targets
    if not (isinstance(source, ZarrDaf) and isinstance(destination, ZarrDaf)):
        return False
    pairs = [((rows, columns), (rows_target, columns_target))]
    if both and rows != columns:
        pairs.append(((columns, rows), (columns_target, rows_target)))
    kinds = [source._matrix_kind(r, c, name) for (r, c), _ in pairs]
    if None in kinds:
        return False
    destination._check_writable()
    items: list[tuple[str, Any]] = []
    for ((r, c), (tr, tc)), kind in zip(pairs, kinds, strict=True):
        items += _layout_items(
            source, destination, r, c, name, join_path("matrices", tr, tc, target), str(kind)
        )
    with destination._changing(
        f"setting the matrix {target} of the axes {rows_target} x {columns_target}",
        destination._matrix_replaces(
            rows_target, columns_target, target, overwrite, relayout=len(pairs) == 2
        ),
    ):
        destination._write(items)
    return True


def copy_stored_axis(source: Any, destination: Any, axis: str) -> bool:
    """Create the axis ``axis`` of ``source`` in ``destination`` (which lacks it) from the
    chunk that stores its entries, checked as :meth:`~dafzarr.daf.ZarrDaf.add_axis` checks
    entries; ``False`` (nothing done) when either data set is not a ZarrDaf or the source
    does not store the entries as one uncompressed vlen-utf8 chunk."""
    if not (isinstance(source, ZarrDaf) and isinstance(destination, ZarrDaf)):
        return False
    check_name(axis, "axis")
    path = join_path("axes", axis)
    source._require_axis(axis)
    info = source._array_info(path)
    if not (info.canonical and info.dtype == lay.STRING and len(info.shape) == 1):
        return False
    data = source._backend.get(info.chunk_key)
    if data is None:
        return False
    chunk, count = bytes(memoryview(data).cast("B")), int(info.shape[0])
    try:
        repeated = first_repeated_vlen_utf8(np.frombuffer(chunk, np.uint8), count)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptDafError(f"{source._path}: {path}: corrupt vlen-utf8 chunk: {exc}") from None
    destination._check_writable()
    if repeated >= 0:
        raise destination._repeated_entries(axis)
    destination._add_checked_axis(axis, EncodedNames(chunk, count))
    return True
