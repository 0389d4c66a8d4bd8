"""Reading one data set's part of a concatenated property: its element type, whether it is
stored sparse and how many values it stores, and its values (zero-copy views of a ZarrDaf's
stored arrays where possible; any other reader through its public getters)."""

from __future__ import annotations

import contextlib
import mmap
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ....errors import CorruptDafError
from ...zipstore.store import handle_of
from .. import layout as lay
from ..backends_zip import ZipBackend
from ..names import join_path
from ..zarrdaf import ZarrDaf
from .concat_dtypes import Dtype

__all__ = [
    "Csc",
    "SliceInfo",
    "check_rows",
    "csc_parts",
    "matrix_info",
    "matrix_value",
    "read_vector",
    "release_pages",
    "vector_info",
]


class SliceInfo(NamedTuple):
    """One data set's stored part of a property."""

    dtype: Dtype
    sparse: bool
    stored: int  # values stored: non-zeros when sparse, all of them when dense


class Csc(NamedTuple):
    """A CSC matrix as its three arrays; ``colptr[0]`` is the base of the indices (0 or 1)."""

    colptr: np.ndarray[Any, Any]
    rowval: np.ndarray[Any, Any]
    nzval: np.ndarray[Any, Any]


def _dtype(values: Any) -> Dtype:
    return lay.element_type(values.dtype, "concatenated value")


def vector_info(src: Any, axis: str, name: str) -> SliceInfo | None:
    """What ``src`` stores of the vector, or ``None`` when it has none (or not the axis)."""
    if not src.has_axis(axis) or not src.has_vector(axis, name):
        return None
    if isinstance(src, ZarrDaf) and name not in ("name", "index"):
        path = join_path("vectors", axis, name)
        if src._node_kind(path) == "array":
            return SliceInfo(src._array_info(path).dtype, False, src.axis_length(axis))
        count = src._array_info(join_path(path, "nzind")).shape[0]
        if src._node_kind(join_path(path, "nzval")) == "array":
            return SliceInfo(src._array_info(join_path(path, "nzval")).dtype, True, count)
        return SliceInfo(np.dtype(np.bool_), True, count)
    values = src.get_np_vector(axis, name)
    if sp.issparse(values):
        return SliceInfo(_dtype(values), True, int(values.nnz))
    return SliceInfo(_dtype(values), False, int(np.size(values)))


def read_vector(src: Any, axis: str, name: str) -> Any:
    """The vector: a dense array, or ``(positions, values)`` (0-based) when stored sparse."""
    if isinstance(src, ZarrDaf) and name not in ("name", "index"):
        path = join_path("vectors", axis, name)
        if src._node_kind(path) != "array":
            return src._sparse_vector(path, src.axis_length(axis))
    values = src.get_np_vector(axis, name)
    if sp.issparse(values):
        coo = sp.coo_array(values).reshape(1, -1)
        return coo.coords[1], coo.data
    return np.asarray(values)


def _stored_layout(src: Any, rows: str, cols: str, name: str) -> bool | None:
    """True: stored as ``rows x cols``; False: only as ``cols x rows``; None: missing."""
    if src.has_matrix(rows, cols, name, relayout=False):
        return True
    if src.has_matrix(cols, rows, name, relayout=False):
        return False
    return None


def matrix_info(src: Any, rows: str, cols: str, name: str) -> SliceInfo | None:
    """What ``src`` stores of the ``rows x cols`` matrix (either layout), or ``None``."""
    if not src.has_axis(rows):
        return None
    layout = _stored_layout(src, rows, cols, name)
    if layout is None:
        return None
    if isinstance(src, ZarrDaf):
        r, c = (rows, cols) if layout else (cols, rows)
        path = join_path("matrices", r, c, name)
        if src._node_kind(path) == "array":
            info = src._array_info(path)
            return SliceInfo(info.dtype, False, int(np.prod(info.shape)))
        count = src._array_info(join_path(path, "rowval")).shape[0]
        if src._node_kind(join_path(path, "nzval")) == "array":
            return SliceInfo(src._array_info(join_path(path, "nzval")).dtype, True, count)
        return SliceInfo(np.dtype(np.bool_), True, count)
    value = matrix_value(src, rows, cols, name)
    if sp.issparse(value):
        return SliceInfo(_dtype(value), True, int(value.nnz))
    return SliceInfo(_dtype(value), False, int(np.size(value)))


def matrix_value(src: Any, rows: str, cols: str, name: str) -> Any:
    """The ``rows x cols`` matrix: column-major numpy, or scipy CSC."""
    return src.get_np_matrix(rows, cols, name, relayout=True)


def _csc_arrays(
    src: ZarrDaf, path: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``colptr``, ``rowval`` and ``nzval`` (all true when absent) of the sparse matrix at
    ``path``, within :meth:`~dafzarr._core.daf.storage.DafStorage.one_state`."""
    src._storage.require_group(path)
    colptr = src._read_array(join_path(path, "colptr"))
    rowval = src._read_array(join_path(path, "rowval"))
    if src._node_kind(join_path(path, "nzval")) == "array":
        nzval = src._read_array(join_path(path, "nzval"))
    else:
        nzval = np.ones(rowval.size, dtype=np.bool_)
    return colptr, rowval, nzval


def csc_parts(src: Any, rows: str, cols: str, name: str) -> Csc | None:
    """The stored CSC arrays of a sparse ``rows x cols`` matrix of a ZarrDaf, as stored
    (1-based, zero-copy), their shapes and column pointer checked (the rows are left to
    :func:`check_rows`, block by block); ``None`` when it is not stored sparse in this
    layout."""
    if not isinstance(src, ZarrDaf):
        return None
    path = join_path("matrices", rows, cols, name)
    kind = src._node_kind(path)
    if kind is None or kind == "array":
        return None
    nc = src.axis_length(cols)
    colptr, rowval, nzval = src._storage.one_state(path, lambda: _csc_arrays(src, path))
    where = f"{src.path}: {path}"
    if colptr.shape != (nc + 1,) or rowval.shape != nzval.shape or rowval.ndim != 1:
        raise CorruptDafError(
            f"{where}: colptr has {colptr.size} entries (expected {nc + 1}), "
            f"rowval {rowval.size}, nzval {nzval.size}"
        )
    c64 = colptr.astype(np.int64)
    if c64[0] != 1 or c64[-1] != rowval.size + 1 or bool(np.any(np.diff(c64) < 0)):
        raise CorruptDafError(
            f"{where}: colptr is not a valid 1-based CSC column pointer for "
            f"{rowval.size} stored values"
        )
    return Csc(colptr, rowval, nzval)  # the rows are checked as they are read


def check_rows(
    src: Any, rows: str, cols: str, name: str, rowval: np.ndarray[Any, Any], nrows: int
) -> None:
    """Refuse (:class:`~dafzarr.errors.DafFormatError`) stored 1-based rows out of range."""
    if rowval.size and (int(rowval.min()) < 1 or int(rowval.max()) > nrows):
        raise CorruptDafError(
            f"{src.path}: {join_path('matrices', rows, cols, name)}/rowval holds "
            f"rows out of 1..{nrows}"
        )


def release_pages(src: Any, arr: np.ndarray[Any, Any]) -> None:
    """Unmap from this process the pages of a zero-copy view of ``src``'s file that were just
    read (``MADV_DONTNEED``; they stay in the page cache and are mapped again if read again),
    so that a pass over many large stored arrays keeps only the part being read resident.
    Nothing happens for any other array."""
    if not isinstance(src, ZarrDaf) or arr.nbytes == 0:
        return
    addr = int(arr.__array_interface__["data"][0])
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        backend = src._backend
        if isinstance(backend, ZipBackend):
            fm = handle_of(backend.store).mapped_archive()[1]
            offset = addr - int(fm.address)
            if offset >= 0 and offset + arr.nbytes <= int(fm.size):
                fm.madvise(offset, arr.nbytes, "dontneed")
            return
        base: Any = arr.base
        while base is not None and not isinstance(base, mmap.mmap):
            base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
        if isinstance(base, mmap.mmap):
            start = int(np.frombuffer(base, np.uint8).__array_interface__["data"][0])
            lo = (addr - start) // mmap.PAGESIZE * mmap.PAGESIZE
            hi = min(len(base), addr - start + arr.nbytes)
            if 0 <= lo < hi:
                base.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
