"""Values in and out of the store: scalars, strings, dense and sparse values, 1-based indices.

Conversions of what a user passes (a Python or numpy scalar, strings, an array, a scipy
sparse value) into what the layout stores, their checks, and the checked conversion of stored
1-based indices into the 0-based indices numpy and scipy take.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..._indices import csr_to_csc, shift_checked, zero_based
from ..._transpose import transpose_columns
from ...errors import (
    CorruptDafError,
    DafArgumentError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsafeCastError,
)
from . import layout as lay


def scalar_array(value: Any, where: str) -> tuple[np.ndarray[Any, Any], np.dtype[Any] | str]:
    if isinstance(value, str | np.str_):
        return np.array([str(value)], dtype=object), lay.STRING
    if isinstance(value, bool | np.bool_):
        return np.array([bool(value)], dtype=np.bool_), np.dtype(np.bool_)
    if isinstance(value, np.generic):
        dt = lay.element_type(value.dtype, where)
        if isinstance(dt, str):  # numpy bytes: Daf strings are text
            raise InvalidArgumentTypeError(
                f"{where}: unsupported scalar value of type {type(value).__name__}; Daf "
                "stores no bytes: decode it to str"
            )
        return np.array([value], dtype=dt), dt
    if isinstance(value, int):
        dt = np.dtype(np.int64) if -(1 << 63) <= value < (1 << 63) else np.dtype(np.uint64)
        try:
            return np.array([value], dtype=dt), dt
        except OverflowError:
            raise InvalidArgumentError(f"{where}: integer {value} does not fit 64 bits") from None
    if isinstance(value, float):
        return np.array([value], dtype=np.float64), np.dtype(np.float64)
    raise InvalidArgumentTypeError(
        f"{where}: unsupported scalar value of type {type(value).__name__}; expected bool, "
        "int, float, str or a numpy scalar"
    )


def as_strings(values: Any, where: str = "") -> np.ndarray[Any, Any]:
    """``values`` as an object array of ``str``; ``InvalidArgumentTypeError`` (naming
    ``where``, when given) for a non-string.

    A list, tuple or object array of plain ``str`` (axis names, pandas' indexes and columns:
    the common cases) and a numpy unicode array take a fast path with no per-element Python
    loop."""
    if isinstance(values, list | tuple):
        if set(map(type, values)) <= {str}:
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out
        values = np.asarray(values, dtype=object)  # numpy would turn numbers into strings
    arr = np.asarray(values)
    if arr.dtype.kind == "U":
        return arr.astype(object)
    if arr.dtype == object and set(map(type, arr.reshape(-1).tolist())) <= {str}:
        return arr.copy()  # an object array of plain str (pandas' names and columns)
    out = np.empty(arr.shape, dtype=object)
    flat = arr.reshape(-1)
    oflat = out.reshape(-1)
    prefix = f"{where}: " if where else ""
    for i, v in enumerate(flat):
        if not isinstance(v, str | np.str_):
            raise InvalidArgumentTypeError(
                f"{prefix}expected strings, got {type(v).__name__}: {v!r}"
            )
        oflat[i] = str(v)
    return out


def dense(value: Any, dt: np.dtype[Any] | str, where: str) -> np.ndarray[Any, Any]:
    """``value`` as an array of the Daf element type ``dt`` (strings: checked, naming
    ``where``)."""
    if isinstance(dt, str):
        return as_strings(value, where)
    return np.asarray(value).astype(dt, copy=False)


def check_sparse(value: Any, where: str, *, defer_indices: bool = False) -> bool:
    """Refuse (``DafFormatError``) a scipy sparse value whose indices are out of range or
    whose index pointer is not monotonic, before scipy's C code converts it (which would
    write out of bounds) and before its indices are cast to the stored index type.

    ``defer_indices``: a value :func:`_deferred` accepts has only its index pointer checked
    here, and True is returned: its indices are to be checked as they are written
    (:class:`OneBased` with ``check``), in the same pass. Else False.
    """
    defer = defer_indices and value.format == "csc" and value.indices.size > 0 and _deferred(value)
    try:
        if value.format in ("csr", "csc") and _check_compressed_fast(value, defer):
            return defer
        if value.format in ("csr", "csc", "bsr"):
            value.check_format(full_check=True)
        elif value.format == "coo":
            for axis, (idx, size) in enumerate(zip(value.coords, value.shape, strict=True)):
                if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
                    raise InvalidArgumentError(f"axis {axis} indices must be in 0..{size - 1}")
    except ValueError as exc:
        raise DafArgumentError(f"invalid sparse value: {exc}\nfor the {where}") from None
    return False


def _deferred(value: Any) -> bool:
    """Whether the indices of a CSC value (written as it is) can be checked as they are
    written: int32/int64 indices with no canonical-format answer cached on the value (a
    cached answer is used instead)."""
    return (
        value.indices.dtype in (np.int32, np.int64)
        and value.indptr.dtype == value.indices.dtype
        and getattr(value, "_has_canonical_format", None) is None
        and bool(getattr(value, "_has_sorted_indices", True))
    )


def _check_compressed_fast(value: Any, skip_indices: bool = False) -> bool:
    """The checks of scipy's ``check_format(full_check=True)`` on a 2-D CSR/CSC value with
    int32 or int64 index arrays, in one pass over the indices instead of three; False (nothing
    checked) for other index types. ``ValueError`` (scipy's or ``InvalidArgumentError``)
    with scipy's messages. ``skip_indices``: the index pointer only (the write checks the
    indices).

    The index pointer is checked first (O(major axis)), so that scipy's canonical-format scan
    reads in bounds; a canonical value (each slice's indices strictly increasing, which that
    scan finds and caches on the value) is in range when each slice's first and last index
    is. Otherwise the indices' minimum and maximum are checked, as scipy does.
    """
    itype = value.indices.dtype
    if len(value.shape) != 2 or itype not in (np.int32, np.int64) or value.indptr.dtype != itype:
        return False
    value.check_format(full_check=False)  # shapes, lengths, indptr[0] and indptr[-1]
    indptr, indices = value.indptr, value.indices
    bound = value.shape[1] if value.format == "csr" else value.shape[0]
    if indptr.size > 1 and np.diff(indptr).min() < 0:
        raise InvalidArgumentError("indptr must be a non-decreasing sequence")
    if indices.size == 0 or skip_indices:
        return True
    if _has_canonical_format(value):
        starts, stops = indptr[:-1], indptr[1:]
        full = stops > starts
        lo, hi = indices[starts[full]].min(), indices[stops[full] - 1].max()
    else:
        lo, hi = indices.min(), indices.max()
    if hi >= bound:
        raise InvalidArgumentError(f"indices must be < {bound}")
    if lo < 0:
        raise InvalidArgumentError("indices must be >= 0")
    return True


def _has_canonical_format(value: Any) -> bool:
    """``value.has_canonical_format`` of a CSR/CSC value whose index pointer was checked:
    scipy's own answer when it has one cached, else scipy's scan run over parts of the
    slices on a few threads (it releases the GIL), the answer then cached on the value as
    scipy would."""
    cached = getattr(value, "_has_canonical_format", None)
    if (
        cached is not None
        or not getattr(value, "_has_sorted_indices", True)
        or value.nnz < _PARALLEL_MIN
        or _THREADS < 2
    ):
        return bool(value.has_canonical_format)
    try:
        from scipy.sparse._sparsetools import csr_has_canonical_format
    except ImportError:  # a scipy that moved its private kernels: its own serial scan
        return bool(value.has_canonical_format)
    indptr, indices = value.indptr, value.indices
    major = indptr.size - 1
    # Cut between slices where the stored values split evenly.
    cuts = np.searchsorted(indptr, [value.nnz * k // _THREADS for k in range(_THREADS)])
    bounds = sorted({0, major, *(min(int(c), major) for c in cuts)})
    parts = list(itertools.pairwise(bounds))
    with ThreadPoolExecutor(len(parts)) as pool:
        found = list(
            pool.map(
                lambda ab: bool(
                    csr_has_canonical_format(ab[1] - ab[0], indptr[ab[0] : ab[1] + 1], indices)
                ),
                parts,
            )
        )
    value.has_canonical_format = all(found)
    return bool(value.has_canonical_format)


def csc_of(value: Any) -> Any:
    """A checked CSR/CSC value (:func:`_check_sparse`) as a CSC matrix: a CSC value itself,
    a large CSR one converted on a few threads (scipy's conversion runs on one), any other
    through scipy. Each column's indices come out sorted, duplicates kept, as scipy's."""
    import scipy.sparse as sp

    if value.format == "csc":
        return value
    if (
        value.format != "csr"
        or value.nnz < _PARALLEL_MIN
        or _THREADS < 2
        or value.shape[1] * _CONVERT_VALUES_PER_COLUMN > value.nnz
    ):
        return sp.csc_matrix(value)
    try:
        indptr, indices, data = csr_to_csc(
            value.indptr, value.indices, value.data, value.shape[1], _THREADS
        )
    except ValueError:  # index or value types it has no kernel for, or too many to index
        return sp.csc_matrix(value)
    out = sp.csc_matrix((data, indices, indptr), shape=value.shape, copy=False)
    out.has_sorted_indices = True
    if getattr(value, "_has_canonical_format", False):  # no duplicates in, none out
        out.has_canonical_format = True
    return out


class StreamedChunk:
    """A chunk computed where it is stored rather than built whole in memory first.

    A ZIP or a directory writes the consecutive :meth:`blocks` to the entry or the file; any
    other backend takes the array (``np.asarray``, through :meth:`fill`). ``dtype``,
    ``shape``, ``size`` and ``nbytes`` describe the chunk.
    """

    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    size: int
    nbytes: int

    def fill(self, out: np.ndarray[Any, Any]) -> None:
        """Write the chunk's bytes into ``out`` (``nbytes`` bytes, any dtype)."""
        raise NotImplementedError

    def blocks(self) -> Iterator[Any]:
        """The chunk's bytes in consecutive blocks, each possibly in the same buffer."""
        raise NotImplementedError

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = np.empty(self.shape, self.dtype)
        self.fill(out)
        return out if dtype is None else out.astype(dtype, copy=False)


class NotCanonicalError(Exception):
    """Indices that :class:`OneBased` checks as it writes them are not canonical (a slice's
    indices not strictly increasing) or not in range. Raised before any block holding them
    is handed out; the caller drops what it wrote, checks the value in full and writes it
    again (or refuses it)."""


class OneBased(StreamedChunk):
    """0-based indices to store 1-based as ``dtype``, computed where they are stored.

    A ZIP or a directory writes them to the entry or the file block by block
    (:meth:`blocks`), in one pass with no temporary copy of the whole array; other backends
    take the array (``np.asarray``). The caller has checked that ``dtype`` holds every
    shifted index (no wrap-around) and, unless it passes ``check``, that the indices are
    non-negative.

    ``check``: ``(indptr, bound)`` of compressed indices (int32 or int64, the index pointer
    checked) not yet checked: the same pass checks that each slice's indices are strictly
    increasing and in ``0 <= index < bound``, else raises :class:`NotCanonicalError`.
    """

    def __init__(
        self,
        src: np.ndarray[Any, Any],
        dtype: np.dtype[Any],
        check: tuple[np.ndarray[Any, Any], int] | None = None,
    ) -> None:
        self.indices = self.src = src.reshape(-1)
        if self.src.dtype.kind in "iu" and self.src.dtype.itemsize == dtype.itemsize:
            # Non-negative indices read the same in the stored type: add with no cast.
            self.src = (
                self.src.view(dtype.newbyteorder("=")) if self.src.dtype.isnative else self.src
            )
        self.check = check
        self.dtype = dtype
        self.size = int(self.src.size)
        self.shape = (self.size,)
        self.nbytes = self.size * dtype.itemsize

    def _shift(self, out: np.ndarray[Any, Any], a: int, b: int) -> None:
        """Indices ``a:b``, 1-based, into ``out`` (of ``dtype``, ``b - a`` long)."""
        if self.check is None:
            np.add(self.src[a:b], 1, out=out, casting="unsafe")
            return
        indptr, bound = self.check
        if shift_checked(self.indices, out, indptr, a, b, bound) >= 0:
            raise NotCanonicalError(f"indices {a}:{b} are not canonical or not in 0..{bound - 1}")

    def fill(self, out: np.ndarray[Any, Any]) -> None:
        """Write the 1-based indices into ``out`` (``nbytes`` bytes, any dtype)."""
        self._shift(out.reshape(-1).view(self.dtype), 0, self.size)

    def blocks(self) -> Iterator[Any]:
        """The 1-based indices in consecutive blocks, in two small buffers (write each one
        out before taking the next): a stream with no copy of the whole array."""
        step = min(self.size, _BLOCK * 4)
        bufs = [np.empty(step, self.dtype) for _ in range(2 if self.size > step else 1)]

        def block(buf: np.ndarray[Any, Any], a: int, b: int) -> np.ndarray[Any, Any]:
            out = buf[: b - a]
            self._shift(out, a, b)
            return out

        bounds = [(a, min(a + step, self.size)) for a in range(0, self.size, max(step, 1))]
        return _prefetched(block, bounds, bufs)


class Transposed(StreamedChunk):
    """The C-ordered transpose of a 2-D array, computed where it is stored.

    A column-major matrix stored from a row-major array is its transpose. numpy's own copy
    of a transposed view strides through memory a column at a time (about 30x slower than a
    plain copy on a large matrix); this one runs a compiled kernel over square blocks that
    stay in cache (4 x 4 register transposes). A ZIP entry or a directory's file is written
    block of rows by block of rows (:meth:`blocks`: two small buffers, the next block
    transposed on a second thread while the current one is written): no temporary copy of
    the whole matrix. :meth:`fill` splits the rows over the cores.
    """

    def __init__(self, src: np.ndarray[Any, Any]) -> None:
        if src.ndim != 2:
            raise InvalidArgumentError(f"Transposed takes a 2-D array, got {src.ndim}-D")
        self.src = src
        self.dtype = src.dtype
        self.shape = (int(src.shape[1]), int(src.shape[0]))
        self.size = int(src.size)
        self.nbytes = self.size * src.dtype.itemsize

    @property
    def _compiled(self) -> bool:
        """Whether the compiled kernel takes the source (else numpy copies tiles)."""
        src = self.src
        return (
            bool(src.flags.c_contiguous)
            and src.dtype.itemsize in (1, 2, 4, 8)
            and not src.dtype.hasobject
        )

    def _rows(self, dst: np.ndarray[Any, Any], lo: int, hi: int, threads: int = 1) -> None:
        """Rows ``lo:hi`` of the transpose (columns ``lo:hi`` of the source) into ``dst``."""
        src, n = self.src, self.src.shape[0]
        if self._compiled:
            transpose_columns(src, dst[: hi - lo], lo, hi, threads)
            return
        for a in range(lo, hi, _TILE):
            b = min(a + _TILE, hi)
            for i in range(0, n, _TILE):
                np.copyto(dst[a - lo : b - lo, i : i + _TILE], src[i : i + _TILE, a:b].T)

    def fill(self, out: np.ndarray[Any, Any]) -> None:
        dst = out.reshape(-1).view(self.dtype).reshape(self.shape)
        rows = self.shape[0]
        threads = _THREADS if self.nbytes >= _PARALLEL_MIN and rows > 1 else 1
        if self._compiled or threads == 1:
            self._rows(dst, 0, rows, threads)  # the kernel splits the rows itself
            return
        step = -(-rows // threads)
        with ThreadPoolExecutor(threads) as pool:
            list(
                pool.map(
                    lambda lo: self._rows(dst[lo : lo + step], lo, min(lo + step, rows)),
                    range(0, rows, step),
                )
            )

    def blocks(self) -> Iterator[Any]:
        """Blocks of whole rows of the transpose, each computed on a second thread while
        the caller writes the previous one out: two small buffers (about ``_STREAM_BYTES``
        each, a multiple of 16 rows when that large, so that the source's cache lines are
        read whole), no copy of the whole matrix."""
        rows, cols = self.shape
        row_bytes = max(1, cols * self.dtype.itemsize)
        height = max(1, min(rows, _STREAM_BYTES // row_bytes))
        if height >= 32:
            height -= height % 16
        bufs = [np.empty((height, cols), self.dtype) for _ in range(2 if rows > height else 1)]

        def block(buf: np.ndarray[Any, Any], lo: int, hi: int) -> np.ndarray[Any, Any]:
            self._rows(buf, lo, hi)
            return buf[: hi - lo].reshape(-1)

        return _prefetched(
            block, [(lo, min(lo + height, rows)) for lo in range(0, rows, height)], bufs
        )


def _prefetched(
    block: Any, bounds: list[tuple[int, int]], bufs: list[np.ndarray[Any, Any]]
) -> Iterator[Any]:
    """``block(buf, lo, hi)`` of each of ``bounds`` in turn, into alternating ``bufs``: with
    two buffers the next block is computed on a worker thread while the caller writes the
    one it holds (numpy and file writes release the GIL), so that on two cores the
    computation hides behind the write. The caller writes each block before taking the
    next."""
    if len(bufs) < 2 or len(bounds) < 2:
        for k, (lo, hi) in enumerate(bounds):
            yield block(bufs[k % len(bufs)], lo, hi)
        return
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(block, bufs[0], *bounds[0])
        for k in range(len(bounds)):
            out = pending.result()
            if k + 1 < len(bounds):  # bufs[(k + 1) % 2] was written out by the caller
                pending = pool.submit(block, bufs[(k + 1) % 2], *bounds[k + 1])
            yield out


def column_major(data: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | Transposed:
    """The Zarr chunk of a column-major matrix: ``data.T`` in C order, a view when ``data``
    is Fortran-ordered, else computed where it is stored (:class:`Transposed`) when large."""
    flipped = data.T
    if flipped.flags.c_contiguous:
        return flipped
    if data.nbytes < _TRANSPOSE_MIN or data.dtype.kind == "O":
        return np.ascontiguousarray(flipped)
    return Transposed(data)


def index_dtype(indtype: Any, size: int, where: str) -> np.dtype[Any]:
    """The stored type of 1-based indices up to ``size + 1``: ``indtype``, checked to hold
    them, or by default the smallest of uint32 and uint64 that does (DataAxesFormats.jl's
    rule, so a scipy matrix's int32 indices take 4 bytes each, not 8)."""
    if indtype is None:
        return default_indtype(size)
    dt = np.dtype(indtype)
    if dt.kind not in "iu":
        raise UnsafeCastError(f"{where}: the index type must be an integer type, got {dt}")
    if size + 1 > np.iinfo(dt).max:
        raise UnsafeCastError(
            f"{where}: int64 indices cannot be stored as {dt}: index type "
            f"{dt} cannot hold indices up to {size + 1}"
        )
    little: np.dtype[Any] = dt.newbyteorder("<")
    return little


def default_indtype(size: int) -> np.dtype[Any]:
    """uint32 when the 1-based indices up to ``size + 1`` fit it, else uint64."""
    return np.dtype("<u4") if size + 1 <= 0xFFFF_FFFF else np.dtype("<u8")


# Index conversion runs in blocks small enough that the range check reads the block just
# written from cache, on a few threads (numpy releases the GIL) for large arrays.
_BLOCK = 1 << 18
_PARALLEL_MIN = 1 << 22
_THREADS = max(1, min(4, os.cpu_count() or 1))
# The threaded CSR to CSC conversion keeps three counters per column and thread: a matrix
# with fewer values per column than this (very wide) is converted by scipy, in less memory.
_CONVERT_VALUES_PER_COLUMN = 8
# Transposes copy square tiles of this side (a 256 x 256 float32 tile is 256 KiB); a
# directory's file is written in blocks of rows of at most about this many bytes.
_TILE = 256
_STREAM_BYTES = 8 << 20
_TRANSPOSE_MIN = 1 << 22


def zero_based_indices(
    idx: np.ndarray[Any, Any], bound: int, where: str, width: int = 8
) -> np.ndarray[Any, Any]:
    """1-based stored indices of any integer type -> 0-based int32 (``width`` 4) or int64
    (``width`` 8) indices, each checked to be in ``0..bound-1``.

    One pass of the compiled kernel (on threads for large arrays): ``idx - 1`` in unsigned
    arithmetic of the stored width (a stored 0 or a negative index wraps past every bound),
    written straight into the type scipy keeps without scanning or copying it again, and its
    maximum checked afterwards.
    """
    src = idx.reshape(-1).view(f"<u{idx.dtype.itemsize}")
    out: np.ndarray[Any, Any] = np.empty(src.shape, f"<u{width}")
    threads = _THREADS if src.size >= _PARALLEL_MIN else 1
    top = zero_based(np.ascontiguousarray(src), out, threads) if src.size else 0
    signed = np.dtype(f"<i{width}")
    if src.size and (top >= bound or top > np.iinfo(signed).max):
        negative = idx.dtype.kind == "i" and top + 1 > np.iinfo(idx.dtype).max
        if top == 2**64 - 1 or negative:
            raise CorruptDafError(
                f"{where}: stored index out of range 1..{bound} (found 0 or a negative index)"
            )
        raise CorruptDafError(f"{where}: stored 1-based index {top + 1} is out of range 1..{bound}")
    return out.view(signed)


def index_width(*sizes: int) -> int:
    """The width of the indices scipy keeps for a matrix of these sizes (shape and stored
    values): int32 while every size fits it, as scipy itself chooses."""
    return 4 if max(sizes, default=0) < np.iinfo(np.int32).max else 8


def numeric(eltype: Any, what: str) -> np.dtype[Any]:
    """The element type of an ``empty_*`` fill: numeric or bool, never strings."""
    dt = lay.element_type(eltype, what)
    if isinstance(dt, str):
        raise InvalidArgumentTypeError(f"{what}: empty_* fills take a numeric or bool element type")
    return dt


def plain(value: Any) -> Any:
    """A scalar as a plain Python value (numpy scalars unwrapped)."""
    return value.item() if isinstance(value, np.generic) else value


def metadata_doc(doc: Any, where: str) -> dict[str, Any]:
    """A stored Zarr metadata document as a dict, or ``DafFormatError`` naming ``where``."""
    if doc is None:
        raise CorruptDafError(f"missing Zarr metadata: {where}")
    try:
        out = json.loads(bytes(memoryview(doc).cast("B")))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptDafError(f"invalid Zarr metadata JSON in {where}: {exc}") from None
    if not isinstance(out, dict):
        raise CorruptDafError(f"invalid Zarr metadata in {where}: not a JSON object")
    return out


def zero_matrix(shape: tuple[int, int], default: Any, csc_class: Any = None) -> Any:
    """The missing matrix of a scalar ``default`` equal to 0 (a number or ``False``): an
    all-zero sparse CSC matrix of the default's type (``csc_class``, else
    ``scipy.sparse.csc_matrix``), as DataAxesFormats.jl's ``spzeros``; ``None`` for any other
    default (the caller fills a dense matrix)."""
    value = np.asarray(default)
    if value.ndim != 0 or value.dtype.kind not in "biuf" or value != 0:
        return None
    import scipy.sparse as sp

    return (csc_class or sp.csc_matrix)(shape, dtype=value.dtype)
