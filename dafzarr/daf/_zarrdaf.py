"""ZarrDaf: a Daf data set (named axes, scalars, vectors, matrices) stored as a Zarr group.

Reads of dense vectors and matrices stored as one uncompressed chunk are zero-copy, read-only
numpy views of the file (directory), of the archive mapping (ZIP) or of the stored buffer
(memory). Writes publish every property atomically: its chunks first, then the documents that
make it visible (children before parents), then the consolidated metadata (directories).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import shutil
import threading
import warnings
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Self

import numpy as np
import scipy.sparse as sp

from .. import _zipformat as zipformat
from .._casting import checked_view
from .._http import HttpOptions
from ..errors import (
    AppendOnlyError,
    DafExistsError,
    DafFormatError,
    DafMissingError,
    DafReadOnlyError,
    RefusedEntryWarning,
    UnsafeCastError,
)
from . import _layout as lay
from ._backends import (
    Backend,
    DirectoryBackend,
    HttpBackend,
    MemoryBackend,
    ZipBackend,
    acquire_zip_store,
)
from ._packed import read_packed

__all__ = ["ZarrDaf", "memory_daf", "open_daf", "parse_daf_path"]

Mode = Literal["r", "r+", "w+", "w"]
_MODES = ("r", "r+", "w+", "w")
_GROUPS = ("scalars", "axes", "vectors", "matrices")
_RESERVED_VECTORS = ("name", "index")
_METADATA_NAMES = frozenset((".zgroup", ".zattrs", ".zarray", ".zmetadata", "zarr.json"))


class _Undef:
    def __repr__(self) -> str:
        return "<required>"


UNDEF: Any = _Undef()

# --- Names -------------------------------------------------------------------------------------

_NAME_COUNTS: dict[str, int] = {}
_NAME_LOCK = threading.Lock()


def _unique_name(prefix: str) -> str:
    """``prefix`` the first time in this process, then ``prefix#2``, ``prefix#3``, ..."""
    if "!" in prefix:
        return prefix
    with _NAME_LOCK:
        n = _NAME_COUNTS.get(prefix, 0) + 1
        _NAME_COUNTS[prefix] = n
    return prefix if n == 1 else f"{prefix}#{n}"


def check_name(name: Any, what: str) -> str:
    """A name usable as one path component of the layout, or a clear error."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, got {type(name).__name__}: {name!r}")
    if not name:
        raise DafFormatError(f"empty {what} name")
    if name in (".", ".."):
        raise DafFormatError(f"invalid {what} name: {name!r} (a relative path component)")
    if "/" in name or "\0" in name:
        raise DafFormatError(f"invalid {what} name: {name!r} (contains '/' or NUL)")
    if name in _METADATA_NAMES:
        raise DafFormatError(f"invalid {what} name: {name!r} (a Zarr metadata name)")
    return name


# --- Paths -------------------------------------------------------------------------------------


def parse_daf_path(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """Split a ZarrDaf path into ``(kind, container, group)``.

    ``kind`` is ``"directory"`` (``X.daf.zarr``), ``"zip"`` (``X.daf.zarr.zip``, or
    ``X.dafs.zarr.zip#/group`` with a non-empty group) or ``"http"`` (``http(s)://...``).
    """
    text = os.fspath(path)
    if text.startswith(("http://", "https://")):
        return "http", text.rstrip("/"), ""
    if ".dafs.zarr.zip#/" in text:
        parts = text.split(".dafs.zarr.zip#/")
        if len(parts) == 2:
            group = parts[1].strip("/")
            if not group:
                raise DafFormatError(f"empty group name after '#/' in ZarrDaf path: {text}")
            for part in group.split("/"):
                check_name(part, "group")
            return "zip", os.path.abspath(parts[0] + ".dafs.zarr.zip"), group
    elif ".daf.zarr.zip#" in text:
        raise DafFormatError(
            "can't address a sub-daf in a singular ZarrDaf path; use .dafs.zarr.zip#/<group>: "
            + text
        )
    elif text.rstrip("/").endswith(".dafs.zarr.zip"):
        raise DafFormatError(f"missing '#/<group>' in plural ZarrDaf path: {text}")
    elif text.endswith(".daf.zarr.zip"):
        return "zip", os.path.abspath(text), ""
    elif text.rstrip("/").endswith(".daf.zarr"):
        return "directory", os.path.abspath(text.rstrip("/")), ""
    raise DafFormatError(
        f"can't parse as ZarrDaf path: {text}\nexpected one of: <stem>.daf.zarr, "
        "<stem>.daf.zarr.zip, <stem>.dafs.zarr.zip#/<group>"
    )


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


# --- Values ------------------------------------------------------------------------------------


def _scalar_array(value: Any, where: str) -> tuple[np.ndarray[Any, Any], np.dtype[Any] | str]:
    if isinstance(value, str | np.str_):
        return np.array([str(value)], dtype=object), lay.STRING
    if isinstance(value, bool | np.bool_):
        return np.array([bool(value)], dtype=np.bool_), np.dtype(np.bool_)
    if isinstance(value, np.generic):
        dt = lay.element_type(value.dtype, where)
        assert isinstance(dt, np.dtype)
        return np.array([value], dtype=dt), dt
    if isinstance(value, int):
        dt = np.dtype(np.int64) if -(1 << 63) <= value < (1 << 63) else np.dtype(np.uint64)
        try:
            return np.array([value], dtype=dt), dt
        except OverflowError:
            raise ValueError(f"{where}: integer {value} does not fit 64 bits") from None
    if isinstance(value, float):
        return np.array([value], dtype=np.float64), np.dtype(np.float64)
    raise TypeError(
        f"{where}: unsupported scalar value of type {type(value).__name__}; expected bool, "
        "int, float, str or a numpy scalar"
    )


def _as_strings(values: Any) -> np.ndarray[Any, Any]:
    arr = np.asarray(values)
    out = np.empty(arr.shape, dtype=object)
    flat = arr.reshape(-1)
    oflat = out.reshape(-1)
    for i, v in enumerate(flat):
        if not isinstance(v, str | np.str_):
            raise TypeError(f"expected strings, got {type(v).__name__}: {v!r}")
        oflat[i] = str(v)
    return out


def _dense(value: Any, dt: np.dtype[Any] | str) -> np.ndarray[Any, Any]:
    if isinstance(dt, str):
        return _as_strings(value)
    return np.asarray(value).astype(dt, copy=False)


def _check_sparse(value: Any, where: str) -> None:
    """Refuse (``DafFormatError``) a scipy sparse value whose indices are out of range or
    whose index pointer is not monotonic, before scipy's C code converts it (which would
    write out of bounds) and before its indices are cast to the stored index type."""
    try:
        if value.format in ("csr", "csc", "bsr"):
            value.check_format(full_check=True)
        elif value.format == "coo":
            for axis, (idx, size) in enumerate(zip(value.coords, value.shape, strict=True)):
                if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
                    raise ValueError(f"axis {axis} indices must be in 0..{size - 1}")
    except ValueError as exc:
        raise DafFormatError(f"invalid sparse value: {exc}\nfor the {where}") from None


def _index_dtype(indtype: Any, size: int, where: str) -> np.dtype[Any]:
    if indtype is None:
        return np.dtype(np.int64)
    dt = np.dtype(indtype)
    if dt.kind not in "iu":
        raise UnsafeCastError(f"{where}: the index type must be an integer type, got {dt}")
    if size + 1 > np.iinfo(dt).max:
        raise UnsafeCastError(f"{where}: int64 indices cannot be stored as {dt}: index type "
                              f"{dt} cannot hold indices up to {size + 1}")
    little: np.dtype[Any] = dt.newbyteorder("<")
    return little


def _default_indtype(size: int) -> np.dtype[Any]:
    return np.dtype(np.uint32) if size <= 0xFFFF_FFFF else np.dtype(np.uint64)


# Index conversion runs in blocks small enough that the range check reads the block just
# written from cache, on a few threads (numpy releases the GIL) for large arrays.
_BLOCK = 1 << 18
_PARALLEL_MIN = 1 << 22
_THREADS = max(1, min(4, os.cpu_count() or 1))


def _shift_block(src: np.ndarray[Any, Any], out: np.ndarray[Any, Any], lo: int, hi: int) -> int:
    top = 0
    one = out.dtype.type(1)
    for a in range(lo, hi, _BLOCK):
        b = min(a + _BLOCK, hi)
        np.subtract(src[a:b], one, out=out[a:b])
        top = max(top, int(out[a:b].max()))
    return top


def _zero_based(idx: np.ndarray[Any, Any], bound: int, where: str) -> np.ndarray[Any, Any]:
    """1-based stored indices -> 0-based signed indices, each checked to be in ``0..bound-1``.

    ``idx - 1`` is computed in the unsigned type of the same width (so a stored 0 wraps to the
    largest value) and its maximum checked; the result is viewed as signed with no further
    copy (scipy accepts int32 and int64 indices).
    """
    if idx.dtype.itemsize < 4:
        idx = idx.astype(np.int32)
    unsigned = np.dtype(f"<u{idx.dtype.itemsize}")
    signed = np.dtype(f"<i{idx.dtype.itemsize}")
    src = idx.view(unsigned)
    out: np.ndarray[Any, Any] = np.empty(src.shape, unsigned)
    n = src.size
    if n >= _PARALLEL_MIN and _THREADS > 1:
        step = -(-n // _THREADS)
        with ThreadPoolExecutor(_THREADS) as pool:
            tops = list(pool.map(lambda lo: _shift_block(src, out, lo, min(lo + step, n)),
                                 range(0, n, step)))
        top = max(tops)
    else:
        top = _shift_block(src, out, 0, n) if n else 0
    if n and (top >= bound or top > np.iinfo(signed).max):
        if top > np.iinfo(signed).max:  # a stored 0 (wrapped) or a negative index
            raise DafFormatError(f"{where}: stored index out of range 1..{bound} (found 0 or a "
                             "negative index)")
        raise DafFormatError(f"{where}: stored 1-based index {top + 1} is out of range 1..{bound}")
    return out.view(signed)


# --- The data set -----------------------------------------------------------------------------


class ZarrDaf:
    """A Daf data set stored as a Zarr group (see :func:`open_daf` for the path forms).

    Parameters
    ----------
    path
        ``X.daf.zarr`` (directory), ``X.daf.zarr.zip`` (ZIP), ``X.dafs.zarr.zip#/group``
        (one of several data sets in one ZIP), ``http(s)://...`` (read-only), or ``None``
        for an in-memory data set.
    mode
        ``"r"`` read-only (writers raise), ``"r+"`` read-write (must exist), ``"w+"``
        read-write (created if missing), ``"w"`` created or truncated.
    name
        The data set's name; default: the stored scalar ``name``, else the full path.
    zarr_format
        Layout of a newly created data set: 2 (default) or 3 (DataAxesFormats.jl 0.3.0).
        An existing store keeps its own layout.
    max_file_size
        ZIP only: the largest size the archive may reach while it is open for writing
        (see :class:`~dafzarr.zipstore.MmapZipStore`; default 1 TiB, or less under an
        address-space limit such as ``ulimit -v``).
    append_only
        ZIP only: refuse every delete and overwrite (``AppendOnlyError``), as
        DataAxesFormats.jl's ZIP backend does; by default they work as on directories.
    http
        Deadline, retries and limits of reads over HTTP(S) (:class:`dafzarr.HttpOptions`);
        default: ``HttpOptions()``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        mode: Mode = "r",
        *,
        name: str | None = None,
        zarr_format: int = 2,
        max_file_size: int | None = None,
        append_only: bool = False,
        http: HttpOptions | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"invalid mode: {mode}")
        lay.layout_for(zarr_format)
        self._stale_consolidated = False
        self._mode: Mode = mode
        self._read_only = mode == "r"
        self._cmeta: dict[str, Any] | None = None
        self._cstamp: Any = None
        self._lock = threading.RLock()
        self._backend: Backend
        self._axis_cache: dict[str, np.ndarray[Any, Any]] = {}
        self._finalizer: Any = None
        self._truncate_group = False
        if path is not None and parse_daf_path(path)[0] != "zip":
            for option, value in (("max_file_size", max_file_size), ("append_only", append_only)):
                if value not in (None, False):
                    raise DafFormatError(f"{option} applies to ZIP archives only: {path}")
        if path is None:
            if max_file_size is not None or append_only:
                raise DafFormatError("max_file_size and append_only apply to ZIP archives only")
            self._kind = "memory"
            self._path = "memory"
            self._backend = MemoryBackend()
            self._init_group(zarr_format, "memory")
        else:
            kind, container, group = parse_daf_path(path)
            self._kind = kind
            self._path = container + (f"#/{group}" if group else "")
            if kind == "http":
                if mode != "r":
                    raise DafReadOnlyError(
                        f"can't open an http(s)://... ZarrDaf in mode: {mode}; the HTTP "
                        f"backend is read-only: {container}"
                    )
                self._backend = _open_http(container, http)
            elif kind == "directory":
                self._backend = self._open_directory(container, mode)
            else:
                self._backend = self._open_zip(container, group, mode, max_file_size,
                                               append_only)
            try:
                if self._truncate_group:
                    # Mode "w" on an existing sub-daf: its keys go and a fresh data set
                    # takes their place in one commit (the rest of the archive stays).
                    with self._backend.transaction():
                        self._backend.delete_tree("")
                        self._init_group(zarr_format, self._path)
                else:
                    self._init_group(zarr_format, self._path)
            except BaseException:
                self._backend.close()
                raise
        stored = self.get_scalar("name", default=None) if name is None else None
        base = name if name is not None else (str(stored) if stored is not None else self._path)
        if self._read_only:
            base = f"{base}.read_only" if name is None else base
        self._name = _unique_name(base)

    # --- Opening ---------------------------------------------------------------------------------

    @staticmethod
    def _open_directory(root: str, mode: Mode) -> Backend:
        if mode in ("r", "r+") and not os.path.isdir(root):
            raise FileNotFoundError(2, f"no such directory: {root}", root)
        if mode == "w" and os.path.exists(root):
            shutil.rmtree(root)
        if mode in ("w", "w+"):
            os.makedirs(root, exist_ok=True)
        return DirectoryBackend(root, read_only=mode == "r")

    def _open_zip(self, container: str, group: str, mode: Mode, max_file_size: int | None,
                  append_only: bool) -> Backend:
        if mode in ("r", "r+") and not os.path.isfile(container):
            raise FileNotFoundError(2, f"no such file: {container}", container)
        store_mode = mode
        if group and mode == "w":
            if os.path.isfile(container):
                probe = acquire_zip_store(container, "r+", max_file_size)
                backend = ZipBackend(probe, group, read_only=False, append_only=append_only)
                if backend.children("") or backend.keys_under(""):
                    if append_only:
                        backend.close()
                        raise AppendOnlyError(
                            "can't truncate a sub-daf inside a zip-backed ZarrDaf; the ZIP "
                            f"backend is append-only: {container}#/{group}"
                        )
                    self._truncate_group = True
                self._finalizer = weakref.finalize(self, backend.close)
                return backend
            store_mode = "w+"
        store = acquire_zip_store(container, store_mode, max_file_size)
        backend = ZipBackend(store, group, read_only=mode == "r", append_only=append_only)
        self._finalizer = weakref.finalize(self, backend.close)
        return backend

    def _init_group(self, zarr_format: int, where: str) -> None:
        b = self._backend
        layout: lay.Layout | None = None
        v3_attrs: dict[str, Any] | None = None
        if b.exists(".zgroup"):
            layout = lay.V2
        else:
            doc = b.get("zarr.json")
            if doc is not None:
                meta = _json(doc, f"{where}/zarr.json")
                if meta.get("node_type") != "group":
                    raise DafFormatError(f"not a zarr group: {where}")
                layout = lay.V3
                v3_attrs = dict(meta.get("attributes") or {})
        if layout is None:
            if self._mode in ("r", "r+"):
                raise DafFormatError(f"not a zarr group: {where}")
            self._layout = lay.layout_for(zarr_format)
            self._create_fresh()
            return
        self._layout = layout
        if isinstance(b, ZipBackend) and not self._read_only and not b.append_only:
            # A ZIP made by zipping a directory carries consolidated metadata, which later
            # changes would make stale: the first change drops it (see _drop_stale_metadata).
            self._stale_consolidated = b.exists(".zmetadata") if layout is lay.V2 else (
                "consolidated_metadata" in _json(b.get("zarr.json"), where)
            )
        if layout is lay.V2:
            if b.exists("daf/.zarray"):
                marker = self._read_array("daf")
                lay.check_version(list(marker), where, v3=False)
            elif self._mode in ("r", "r+"):
                raise DafFormatError(f"not a daf data set: {where}")
            else:
                self._adopt()
        else:
            assert v3_attrs is not None
            if "daf" in v3_attrs:
                lay.check_version(v3_attrs["daf"], where, v3=True)
            elif self._mode in ("r", "r+"):
                raise DafFormatError(f"not a daf data set: {where}")
            else:
                if b.append_only:
                    raise AppendOnlyError(
                        "can't delete or overwrite properties in a zip-backed ZarrDaf; the ZIP "
                        f"backend is append-only: can't add the daf attribute to {where}"
                    )
                self._adopt()
        if b.consolidates:
            if not self._read_only:
                with b.consolidation_lock():
                    self._rebuild_consolidated()
            elif (not b.exists(".zmetadata")) if layout is lay.V2 else (
                "consolidated_metadata" not in _json(b.get("zarr.json"), where)
            ):
                with contextlib.suppress(OSError), b.consolidation_lock():
                    self._rebuild_consolidated()  # a read-only file system: read anyway

    def _create_fresh(self) -> None:
        L = self._layout
        items: list[tuple[str, Any]] = []
        if L is lay.V2:
            items += self._array_items("daf", np.frombuffer(lay.marker_bytes(), np.uint8),
                                       np.dtype(np.uint8))
        for g in _GROUPS:
            items += L.group_docs(g).items()
        if L is lay.V2:
            items += L.group_docs("").items()
        else:
            items.append(("zarr.json", lay.root_v3_doc(None)))
        self._write(items)

    def _adopt(self) -> None:
        """Make an existing plain Zarr group a Daf data set (``w+``/``w`` modes)."""
        L = self._layout
        items: list[tuple[str, Any]] = []
        if L is lay.V2:
            items += self._array_items("daf", np.frombuffer(lay.marker_bytes(), np.uint8),
                                       np.dtype(np.uint8))
        for g in _GROUPS:
            if self._node_kind(g) is None:
                items += L.group_docs(g).items()
        if L is lay.V3:
            meta = _json(self._backend.get("zarr.json"), "zarr.json")
            attrs = dict(meta.get("attributes") or {})
            attrs["daf"] = list(lay.VERSION)
            meta["attributes"] = attrs
            meta.pop("consolidated_metadata", None)
            items.append(("zarr.json", json.dumps(meta, separators=(",", ":")).encode()))
        self._write(items)

    # --- Low-level node access -------------------------------------------------------------

    def _node_kind(self, path: str) -> str | None:
        b = self._backend
        if self._layout is lay.V2:
            if b.exists(path + "/.zarray"):
                return "array"
            if b.exists(path + "/.zgroup"):
                return "group"
            return None
        doc = b.get(path + "/zarr.json")
        if doc is None:
            return None
        kind = _json(doc, path).get("node_type")
        return kind if kind in ("array", "group") else None

    def _array_info(self, path: str) -> lay.ArrayInfo:
        doc = self._backend.get(self._layout.array_marker(path))
        if doc is None:
            raise DafMissingError(f"missing array: {path}\nin the daf data: {self._name_or_path}")
        return _parse_array(self._layout.zarr_format, path, bytes(doc))

    @property
    def _name_or_path(self) -> str:
        return getattr(self, "_name", self._path)

    def _read_array(self, path: str, *, populate: bool = False) -> np.ndarray[Any, Any]:
        """The array at ``path`` in Zarr shape and C order; zero-copy when canonical."""
        info = self._array_info(path)
        shape = info.shape
        where = f"{self._path}: {path}"
        if info.canonical:
            if isinstance(info.dtype, str):
                data = self._backend.get(info.chunk_key)
                count = math.prod(shape)
                if data is None:
                    fill = info.fill if isinstance(info.fill, str) else ""
                    out = np.full(shape, fill, dtype=object)
                else:
                    out = lay.decode_strings(data, count, where).reshape(shape)
                out.flags.writeable = False
                return out
            dt = info.dtype
            if math.prod(shape) == 0:
                empty = np.empty(shape, dt)
                empty.flags.writeable = False
                return empty
            arr = self._backend.mmap_as(info.chunk_key, dt, shape, populate=populate)
            if arr is not None:
                return arr
            data = self._backend.get(info.chunk_key)
            if data is not None:
                raise DafFormatError(
                    f"{where}: chunk {info.chunk_key!r} holds {memoryview(data).nbytes} bytes, "
                    f"expected {math.prod(shape) * dt.itemsize}"
                )
            zero = 0 if info.fill is None else info.fill
            out = np.full(shape, zero, dtype=dt)
            out.flags.writeable = False
            return out
        if info.packed:
            shard = self._backend.get(info.chunk_key)
            if shard is None:
                out = np.full(shape, info.fill or ("" if isinstance(info.dtype, str) else 0),
                              dtype=object if isinstance(info.dtype, str) else info.dtype)
                out.flags.writeable = False
                return out
            return read_packed(info.meta, shard, info.dtype, where)
        return self._read_foreign(path, info)

    def _read_foreign(self, path: str, info: lay.ArrayInfo) -> np.ndarray[Any, Any]:
        import zarr

        store, root = self._backend.zarr_store()
        try:
            za = zarr.open_array(
                store=store, path=_join(root, path), mode="r",
                zarr_format=self._layout.zarr_format,  # type: ignore[arg-type]
            )
            out = np.asarray(za[...])
        except Exception as exc:
            raise DafFormatError(f"{self._path}: can't read array {path!r}: {exc}") from exc
        if isinstance(info.dtype, str):
            out = _as_strings(out.astype(object) if out.dtype.kind != "O" else out)
        elif out.dtype != info.dtype:
            out = out.astype(info.dtype)
        if not out.flags.c_contiguous:
            out = np.ascontiguousarray(out)
        out.flags.writeable = False
        return out

    def _array_items(
        self, path: str, data: np.ndarray[Any, Any], dt: np.dtype[Any] | str
    ) -> list[tuple[str, Any]]:
        """Chunk then documents of one flat array (``data`` in Zarr shape)."""
        L = self._layout
        items: list[tuple[str, Any]] = []
        shape = tuple(int(n) for n in data.shape)
        if data.size and not L.elide(dt, data):
            if isinstance(dt, str):
                chunk: Any = lay.encode_strings(data.reshape(-1))
            else:
                chunk = np.ascontiguousarray(data, dtype=dt)
            items.append((L.chunk_key(path, len(shape)), chunk))
        items += L.array_docs(path, dt, shape).items()
        return items

    @contextlib.contextmanager
    def _changing(self, replaces: Sequence[tuple[str, str, bool, str]] = ()) -> Iterator[None]:
        """One change of the data set (a set, an overwrite, a delete): on a ZIP one commit,
        so a crash or an error leaves the old state or the new one, never a mix.

        ``replaces``: ``(path, what, overwrite, exists_text)`` of each property the change
        writes. An existing one is either refused (:meth:`_replaceable`) before the ZIP
        batch opens, so that a refused change rolls back no write another thread has
        waiting in the batch, or deleted inside the batch.
        """
        with self._lock:
            doomed = [r[0] for r in replaces if self._replaceable(*r)]
            with self._backend.transaction():
                for path in doomed:
                    self._delete_node(path)
                yield

    def _drop_stale_metadata(self) -> None:
        """Before the first change of a ZIP that carries consolidated metadata (a zipped
        directory), drop it: a ZIP keeps none (readers list its central directory)."""
        if not self._stale_consolidated:
            return
        self._stale_consolidated = False
        b = self._backend
        assert isinstance(b, ZipBackend)
        if self._layout is lay.V2:
            b.delete_key(".zmetadata")
        else:
            root = _json(b.get("zarr.json"), f"{self._path}/zarr.json")
            root.pop("consolidated_metadata", None)
            b.put([("zarr.json", json.dumps(root, separators=(",", ":")).encode())])

    def _write(self, items: list[tuple[str, Any]]) -> None:
        b = self._backend
        with self._lock:
            with b.transaction():
                self._drop_stale_metadata()
                b.put(items)
            if b.consolidates:
                with b.consolidation_lock():
                    self._note_written([k for k, _ in items])

    def _delete_node(self, path: str) -> None:
        with self._lock:
            with self._backend.transaction():
                self._drop_stale_metadata()
                self._backend.delete_tree(path)
            if self._backend.consolidates:
                with self._backend.consolidation_lock():
                    self._delete_consolidated(path)

    def _delete_consolidated(self, path: str) -> None:
        if not self._consolidated_current():
            self._rebuild_consolidated()
            return
        assert self._cmeta is not None
        head = path + "/"
        for key in [k for k in self._cmeta if k == path or k.startswith(head)]:
            del self._cmeta[key]
        self._flush_consolidated()

    def _consolidated_doc(self) -> str:
        return ".zmetadata" if self._layout is lay.V2 else "zarr.json"

    def _consolidated_current(self) -> bool:
        """Whether the stored consolidated metadata is the one this handle wrote last (no
        other handle or process has changed the data set since); else it is rebuilt."""
        return self._cmeta is not None and self._cstamp == self._backend.stamp(
            self._consolidated_doc()
        )

    # --- Consolidated metadata (directories) -------------------------------------------------

    def _consolidated_key(self, key: str) -> str | None:
        base = key.rsplit("/", 1)[-1]
        if self._layout is lay.V2:
            return key if base in (".zgroup", ".zattrs", ".zarray") and key != ".zmetadata" \
                else None
        if base != "zarr.json" or key == "zarr.json":
            return None
        return key[: -len("/zarr.json")]

    def _note_written(self, keys: list[str]) -> None:
        if not self._consolidated_current():
            self._rebuild_consolidated()
            return
        assert self._cmeta is not None
        changed = False
        for key in keys:
            ckey = self._consolidated_key(key)
            if ckey is not None:
                self._cmeta[ckey] = _json(self._backend.get(key), key)
                changed = True
        if changed:
            self._flush_consolidated()

    def _rebuild_consolidated(self) -> None:
        entries: dict[str, Any] = {}
        for key in self._backend.keys_under(""):
            if any(p.endswith((".deleted", ".tmp")) for p in key.split("/")):
                continue
            ckey = self._consolidated_key(key)
            if ckey is not None:
                data = self._backend.get(key)
                if data is not None:
                    entries[ckey] = _json(data, key)
        self._cmeta = entries
        self._flush_consolidated()

    def _flush_consolidated(self) -> None:
        assert self._cmeta is not None
        if self._layout is lay.V2:
            doc = lay.zmetadata_doc(self._cmeta)
            self._backend.put([(".zmetadata", doc)])
        else:
            root = _json(self._backend.get("zarr.json"), "zarr.json")
            root.pop("consolidated_metadata", None)
            root["consolidated_metadata"] = {
                "kind": "inline",
                "must_understand": False,
                "metadata": lay.sort_consolidated(self._cmeta),
            }
            self._backend.put([("zarr.json", json.dumps(root, separators=(",", ":")).encode())])
        self._cstamp = self._backend.stamp(self._consolidated_doc())

    # --- Checks ----------------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._read_only:
            raise DafReadOnlyError(f"can't modify the read-only daf data: {self._name}")

    def _check_deletable(self, what: str) -> None:
        if self._backend.append_only:
            raise AppendOnlyError(
                "can't delete or overwrite properties in a zip-backed ZarrDaf; the ZIP backend "
                f"is append-only: {what} in the daf data: {self._name}"
            )

    def _require_axis(self, axis: str) -> None:
        if not self.has_axis(axis):
            raise DafMissingError(f"missing axis: {axis}\nin the daf data: {self._name}")

    # --- Identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The data set's name (unique in this process)."""
        return self._name

    @property
    def path(self) -> str:
        """The full path: absolute container path (plus ``#/group``), URL, or ``memory``."""
        return self._path

    @property
    def mode(self) -> str:
        """The mode the data set was opened with."""
        return self._mode

    @property
    def read_only(self) -> bool:
        """Whether writers raise (mode ``r``, HTTP, read-only views)."""
        return self._read_only

    @property
    def zarr_format(self) -> int:
        """The Zarr layout generation of the store: 2 or 3."""
        return self._layout.zarr_format

    def __repr__(self) -> str:
        return f"{'ReadOnly ' if self._read_only else ''}ZarrDaf {self._name}"

    def close(self) -> None:
        """Release the store (ZIP: drop this handle's share of the archive)."""
        if self._finalizer is not None:  # only the opening handle owns a ZIP store share
            self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_only_view(self) -> ZarrDaf:
        """Another handle on the same data whose writers raise (named ``<name>.read_only``)."""
        view = object.__new__(ZarrDaf)
        view.__dict__.update(self.__dict__)
        view._read_only = True
        view._mode = "r"
        view._finalizer = None
        view._axis_cache = {}
        view._name = _unique_name(f"{self._name}.read_only")
        return view

    # --- Scalars -------------------------------------------------------------------------------

    def has_scalar(self, name: str) -> bool:
        """Whether the scalar exists."""
        return self._node_kind(_join("scalars", name)) == "array"

    def scalars_set(self) -> set[str]:
        """The names of all scalars."""
        return {n for n in self._backend.children("scalars") if self.has_scalar(n)}

    def get_scalar(self, name: str, *, default: Any = UNDEF) -> Any:
        """The scalar's value (a numpy scalar, or ``str``); ``default`` if it is missing."""
        if not self.has_scalar(name):
            if default is UNDEF:
                raise DafMissingError(f"missing scalar: {name}\nin the daf data: "
                                      f"{self._name_or_path}")
            return default
        arr = self._read_array(_join("scalars", name))
        if arr.size != 1:
            raise DafFormatError(f"{self._path}: scalar {name!r} holds {arr.size} values")
        return arr.reshape(-1)[0]

    def set_scalar(self, name: str, value: Any, *, overwrite: bool = False) -> ZarrDaf:
        """Store a scalar (bool, int, float, str or numpy scalar)."""
        self._check_writable()
        check_name(name, "scalar")
        data, dt = _scalar_array(value, f"scalar {name!r}")
        path = _join("scalars", name)
        with self._changing([(path, f"scalar {name}", overwrite, f"existing scalar: {name}")]):
            self._write(self._array_items(path, data, dt))
        return self

    def delete_scalar(self, name: str, *, must_exist: bool = True) -> ZarrDaf:
        """Delete a scalar (``must_exist=False``: no error if it is missing)."""
        self._check_writable()
        if not self.has_scalar(name):
            if must_exist:
                raise DafMissingError(f"missing scalar: {name}\nin the daf data: {self._name}")
            return self
        self._check_deletable(f"scalar {name}")
        with self._changing():
            self._delete_node(_join("scalars", name))
        return self

    # --- Axes --------------------------------------------------------------------------------------

    def has_axis(self, axis: str) -> bool:
        """Whether the axis exists."""
        return self._node_kind(_join("axes", axis)) == "array"

    def axes_set(self) -> set[str]:
        """The names of all axes."""
        return {n for n in self._backend.children("axes") if self.has_axis(n)}

    def axis_length(self, axis: str) -> int:
        """The number of entries of an axis."""
        self._require_axis(axis)
        return self._axis_len(axis)

    def _axis_len(self, axis: str) -> int:
        shape = self._array_info(_join("axes", axis)).shape
        return int(shape[0]) if shape else 0

    def axis_np_entries(self, axis: str) -> np.ndarray[Any, Any]:
        """The axis' entry names, in order (a read-only object array of ``str``)."""
        self._require_axis(axis)
        cached = self._axis_cache.get(axis)
        if cached is None:
            cached = self._read_array(_join("axes", axis)).reshape(-1)
            self._axis_cache[axis] = cached
        return cached

    axis_np_vector = axis_np_entries

    def axis_dict(self, axis: str) -> dict[str, int]:
        """Entry name -> 0-based position."""
        return {str(n): i for i, n in enumerate(self.axis_np_entries(axis))}

    def axis_np_indices(
        self, axis: str, names: Sequence[str], *, allow_empty: bool = False,
        allow_missing: bool = False,
    ) -> np.ndarray[Any, Any]:
        """0-based positions of ``names``; ``""`` (``allow_empty``) or unknown names
        (``allow_missing``) map to -1, else raise."""
        d = self.axis_dict(axis)
        out = np.empty(len(names), dtype=np.int64)
        for i, n in enumerate(names):
            if n in d:
                out[i] = d[n]
            elif (n == "" and allow_empty) or (n != "" and allow_missing):
                out[i] = -1
            else:
                raise DafMissingError(
                    f"missing entry: {n!r}\nof the axis: {axis}\nin the daf data: {self._name}"
                )
        return out

    def add_axis(self, axis: str, entries: Any, *, overwrite: bool = False) -> ZarrDaf:
        """Create an axis with unique entry names."""
        self._check_writable()
        check_name(axis, "axis")
        names = _as_strings(entries).reshape(-1)
        if len(set(names.tolist())) != len(names):
            raise DafFormatError(
                f"non-unique entries for new axis: {axis}\nin the daf data: {self._name}"
            )
        with self._lock:
            exists = self.has_axis(axis)
            if exists:
                if not overwrite:
                    raise DafExistsError(f"existing axis: {axis}\nin the daf data: "
                                         f"{self._name}")
                self._check_deletable(f"axis {axis}")
            with self._changing():
                if exists:
                    self.delete_axis(axis)
                self._write_axis(axis, names)
        return self

    def _write_axis(self, axis: str, names: np.ndarray[Any, Any]) -> None:
        """The axis' entries, and the groups of its vectors and matrices that are missing."""
        L = self._layout
        others = sorted(self.axes_set())
        items: list[tuple[str, Any]] = []
        for path in itertools.chain(
            [_join("vectors", axis), _join("matrices", axis)],
            [_join("matrices", axis, o) for o in [*others, axis]],
            [_join("matrices", o, axis) for o in others],
        ):
            if self._node_kind(path) is None:
                items += L.group_docs(path).items()
        items += self._array_items(_join("axes", axis), names, lay.STRING)
        self._write(items)
        self._axis_cache.pop(axis, None)

    def delete_axis(self, axis: str, *, must_exist: bool = True) -> ZarrDaf:
        """Delete an axis and every vector and matrix along it."""
        self._check_writable()
        if not self.has_axis(axis):
            if must_exist:
                raise DafMissingError(f"missing axis: {axis}\nin the daf data: {self._name}")
            return self
        self._check_deletable(f"axis {axis}")
        with self._changing():
            self._delete_node(_join("axes", axis))
            self._axis_cache.pop(axis, None)
            self._delete_node(_join("vectors", axis))
            self._delete_node(_join("matrices", axis))
            for other in self._backend.children("matrices"):
                self._delete_node(_join("matrices", other, axis))
        return self

    # --- Vectors -----------------------------------------------------------------------------------

    def has_vector(self, axis: str, name: str) -> bool:
        """Whether the vector exists (``name`` and ``index`` always do)."""
        self._require_axis(axis)
        if name in _RESERVED_VECTORS:
            return True
        return self._node_kind(_join("vectors", axis, name)) is not None

    def vectors_set(self, axis: str) -> set[str]:
        """The names of the vectors stored on an axis."""
        self._require_axis(axis)
        base = _join("vectors", axis)
        return {n for n in self._backend.children(base) if self._node_kind(_join(base, n))}

    def _vector(self, axis: str, name: str) -> np.ndarray[Any, Any] | None:
        if name == "name":
            return self.axis_np_entries(axis)
        if name == "index":
            return np.arange(self.axis_length(axis))
        path = _join("vectors", axis, name)
        kind = self._node_kind(path)
        if kind is None:
            return None
        n = self._axis_len(axis)
        if kind == "array":
            arr = self._read_array(path)
            if arr.shape != (n,):
                raise DafFormatError(f"{self._path}: vector {path!r} has shape {arr.shape}, "
                                 f"axis {axis!r} has length {n}")
            return arr
        nzind, nzval = self._sparse_vector(path, n)
        out = np.zeros(n, dtype=nzval.dtype) if nzval.dtype != object else np.full(n, "", object)
        out[nzind] = nzval
        out.flags.writeable = False
        return out

    def _sparse_vector(
        self, path: str, n: int
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        nzind = self._read_array(_join(path, "nzind"))
        if self._node_kind(_join(path, "nzval")) == "array":
            nzval = self._read_array(_join(path, "nzval"))
        else:
            nzval = np.ones(nzind.size, dtype=np.bool_)
        if nzind.shape != nzval.shape or nzind.ndim != 1:
            raise DafFormatError(f"{self._path}: sparse vector {path!r}: nzind has shape "
                             f"{nzind.shape} but nzval has shape {nzval.shape}")
        pos = _zero_based(nzind, n, f"{self._path}: {path}/nzind")
        if pos.size > 1 and bool(np.any(pos[1:] <= pos[:-1])):
            # a repeated position would make two stored values claim one entry
            at = int(np.argmax(pos[1:] <= pos[:-1])) + 1
            raise DafFormatError(f"{self._path}: {path}/nzind is not strictly increasing: "
                                 f"stored index {int(pos[at]) + 1} at position {at + 1} "
                                 f"follows {int(pos[at - 1]) + 1}")
        return pos, nzval

    def get_np_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> np.ndarray[Any, Any]:
        """The vector as a numpy array (dense vectors: a zero-copy read-only view).

        Sparse vectors are returned dense. ``name`` gives the entry names and ``index`` the
        0-based positions. A missing vector gives ``default`` (a scalar is broadcast).
        """
        self._require_axis(axis)
        out = self._vector(axis, name)
        if out is not None:
            return out
        if default is UNDEF:
            raise DafMissingError(f"missing vector: {name}\nfor the axis: {axis}\n"
                                  f"in the daf data: {self._name}")
        if default is None:
            return None  # type: ignore[return-value]
        n = self.axis_length(axis)
        if np.ndim(default) == 0:
            return np.full(n, default)
        arr = np.asarray(default)
        if arr.shape != (n,):
            raise ValueError(f"default vector length {arr.shape} is different from axis: "
                             f"{axis} length: {n}\nin the daf data: {self._name}")
        return arr

    def get_pd_vector(self, axis: str, name: str, *, default: Any = UNDEF) -> Any:
        """The vector as a ``pandas.Series`` indexed by the axis' entry names."""
        import pandas as pd

        values: Any = self.get_np_vector(axis, name, default=default)
        if values is None:
            return None
        return pd.Series(values, index=pd.Index(self.axis_np_entries(axis), name=axis),
                         name=name, copy=False)

    def set_vector(
        self, axis: str, name: str, value: Any, *, overwrite: bool = False,
        indtype: Any = None,
    ) -> ZarrDaf:
        """Store a vector: a numpy array, a scalar to broadcast, or a scipy sparse vector.

        Sparse input (any scipy format: a 1-D sparse array of length ``n``, or ``1 x n`` or
        ``n x 1``) is stored sparse with 1-based ``nzind`` of type ``indtype`` (default
        int64); duplicate positions are added up.
        """
        self._check_writable()
        self._require_axis(axis)
        check_name(name, "vector")
        if name in _RESERVED_VECTORS:
            raise DafFormatError(f"setting the reserved vector: {name}\nfor the axis: {axis}\n"
                                 f"in the daf data: {self._name}")
        n = self.axis_length(axis)
        path = _join("vectors", axis, name)
        if hasattr(value, "index") and hasattr(value, "to_numpy"):  # a pandas Series
            index = np.asarray(value.index, dtype=object)
            if len(index) == n and not np.array_equal(index, self.axis_np_entries(axis)):
                raise ValueError(f"the vector's index does not match the entries of axis: "
                                 f"{axis}\nin the daf data: {self._name}")
            value = value.to_numpy()
        items: list[tuple[str, Any]]
        if sp.issparse(value):
            if value.shape not in ((n,), (1, n), (n, 1)):
                raise ValueError(
                    f"sparse value shape: {value.shape}\nis not ({n},), (1, {n}) or ({n}, 1) "
                    f"for the axis: {axis} of length: {n}\nin the daf data: {self._name}")
            _check_sparse(value, f"vector {name!r} of the axis {axis}\nin the daf data: "
                                 f"{self._name}")
            coo = sp.coo_array(value)
            coo.sum_duplicates()  # sorted by position, duplicates added up
            pos = coo.coords[0] if value.shape[0] == n else coo.coords[1]
            order = np.argsort(pos, kind="stable")
            vals = coo.data[order]
            dt = lay.element_type(vals.dtype, f"vector {name!r}")
            items = self._sparse_vector_items(path, pos[order], vals, dt, n, indtype)
        else:
            if np.ndim(value) == 0:
                arr0, dt = _scalar_array(value.item() if isinstance(value, np.ndarray) else
                                         value, f"vector {name!r}")
                data = np.full(n, arr0[0], dtype=object if isinstance(dt, str) else dt)
            else:
                raw = np.asarray(value)
                if raw.ndim != 1 or raw.shape[0] != n:
                    raise ValueError(
                        f"value length: {raw.shape[0] if raw.ndim == 1 else raw.shape}\n"
                        f"is different from axis: {axis} length: {n}\n"
                        f"in the daf data: {self._name}"
                    )
                dt = lay.element_type(raw.dtype, f"vector {name!r}")
                data = _dense(raw, dt)
            items = self._array_items(path, data, dt)
        with self._changing([(path, f"vector {name} of the axis {axis}", overwrite,
                              f"existing vector: {name}\nfor the axis: {axis}")]):
            self._write(items)
        return self

    def _sparse_vector_items(
        self, path: str, pos0: np.ndarray[Any, Any], vals: np.ndarray[Any, Any],
        dt: np.dtype[Any] | str, n: int, indtype: Any,
    ) -> list[tuple[str, Any]]:
        idt = _index_dtype(indtype, n, path)
        items = self._array_items(_join(path, "nzind"), (pos0 + 1).astype(idt), idt)
        if not (isinstance(dt, np.dtype) and dt.kind == "b" and bool(np.all(vals))):
            items += self._array_items(_join(path, "nzval"), _dense(vals, dt), dt)
        items += self._layout.group_docs(path).items()
        return items

    def _replaceable(self, path: str, what: str, overwrite: bool, exists_text: str) -> bool:
        """Before writing ``path``: whether a property is there to delete (``overwrite``);
        without ``overwrite`` (or on an append-only ZIP) an existing one is refused."""
        if self._node_kind(path) is None:
            return False
        if not overwrite:
            raise DafExistsError(f"{exists_text}\nin the daf data: {self._name}")
        self._check_deletable(what)
        return True

    def delete_vector(self, axis: str, name: str, *, must_exist: bool = True) -> ZarrDaf:
        """Delete a vector (``must_exist=False``: no error if it is missing)."""
        self._check_writable()
        self._require_axis(axis)
        path = _join("vectors", axis, name)
        if self._node_kind(path) is None:
            if must_exist:
                raise DafMissingError(f"missing vector: {name}\nfor the axis: {axis}\n"
                                      f"in the daf data: {self._name}")
            return self
        self._check_deletable(f"vector {name} of the axis {axis}")
        with self._changing():
            self._delete_node(path)
        return self

    # --- Matrices ----------------------------------------------------------------------------------

    def _matrix_kind(self, rows: str, cols: str, name: str) -> str | None:
        return self._node_kind(_join("matrices", rows, cols, name))

    def has_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                   relayout: bool = True) -> bool:
        """Whether the matrix exists (with ``relayout``, in either layout)."""
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        if self._matrix_kind(rows_axis, columns_axis, name) is not None:
            return True
        return relayout and self._matrix_kind(columns_axis, rows_axis, name) is not None

    def matrices_set(self, rows_axis: str, columns_axis: str, *,
                     relayout: bool = True) -> set[str]:
        """The names of the matrices of an axis pair (with ``relayout``, either layout)."""
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        pairs = [(rows_axis, columns_axis)]
        if relayout:
            pairs.append((columns_axis, rows_axis))
        out: set[str] = set()
        for r, c in pairs:
            base = _join("matrices", r, c)
            out |= {n for n in self._backend.children(base) if self._node_kind(_join(base, n))}
        return out

    def _stored_matrix(self, rows: str, cols: str, name: str, kind: str, *,
                       sparse_class: str) -> Any:
        """The stored ``rows x cols`` matrix: F-ordered numpy (a view) or scipy CSC."""
        path = _join("matrices", rows, cols, name)
        nr, nc = self.axis_length(rows), self.axis_length(cols)
        if kind == "array":
            arr = self._read_array(path)
            if arr.shape != (nc, nr):
                raise DafFormatError(f"{self._path}: matrix {path!r} has Zarr shape {arr.shape}, "
                                 f"expected {(nc, nr)} (reversed {rows} x {cols})")
            return arr.T
        colptr = self._read_array(_join(path, "colptr"), populate=True)
        rowval = self._read_array(_join(path, "rowval"), populate=True)
        if self._node_kind(_join(path, "nzval")) == "array":
            nzval = self._read_array(_join(path, "nzval"))
        else:
            nzval = np.ones(rowval.size, dtype=np.bool_)
        where = f"{self._path}: {path}"
        if colptr.shape != (nc + 1,) or nzval.shape != rowval.shape:
            raise DafFormatError(f"{where}: colptr has {colptr.size} entries (expected {nc + 1}), "
                             f"rowval {rowval.size}, nzval {nzval.size}")
        if int(colptr[0]) != 1 or int(colptr[-1]) != rowval.size + 1 or np.any(
            np.diff(colptr.astype(np.int64)) < 0
        ):
            raise DafFormatError(f"{where}: colptr is not a valid 1-based CSC column pointer "
                             f"for {rowval.size} stored values")
        indptr = _zero_based(colptr, rowval.size + 1, f"{where}/colptr")
        indices = _zero_based(rowval, nr, f"{where}/rowval")
        if indices.dtype != indptr.dtype:  # scipy wants one index type; colptr is short
            if indptr.dtype.itemsize > indices.dtype.itemsize and rowval.size < (1 << 31) - 1:
                indptr = indptr.astype(indices.dtype)
            else:
                indptr = indptr.astype(np.int64)
                indices = indices.astype(np.int64)
        cls = sp.csc_array if sparse_class == "csc_array" else sp.csc_matrix
        return cls((nzval, indices, indptr), shape=(nr, nc), copy=False)

    def get_np_matrix(
        self, rows_axis: str, columns_axis: str, name: str, *, default: Any = UNDEF,
        relayout: bool = True, sparse_class: Literal["csc_matrix", "csc_array"] = "csc_matrix",
    ) -> Any:
        """The ``rows_axis x columns_axis`` matrix.

        Dense: a column-major (Fortran-ordered) numpy array, a zero-copy read-only view when
        this layout is stored. Sparse: a ``scipy.sparse.csc_matrix`` (or ``csc_array``)
        with 0-based indices. With ``relayout``, a matrix stored only as
        ``columns_axis x rows_axis`` is transposed (a copy).
        """
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        kind = self._matrix_kind(rows_axis, columns_axis, name)
        if kind is not None:
            return self._stored_matrix(rows_axis, columns_axis, name, kind,
                                       sparse_class=sparse_class)
        if relayout:
            kind = self._matrix_kind(columns_axis, rows_axis, name)
            if kind is not None:
                other = self._stored_matrix(columns_axis, rows_axis, name, kind,
                                            sparse_class=sparse_class)
                if sp.issparse(other):
                    return other.T.tocsc()
                return np.asfortranarray(other.T)
        if default is UNDEF:
            raise DafMissingError(
                f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                f"axis: {columns_axis}\nin the daf data: {self._name}"
            )
        if default is None:
            return None
        shape = (self.axis_length(rows_axis), self.axis_length(columns_axis))
        if np.ndim(default) == 0:
            return np.full(shape, default, order="F")
        arr = np.asarray(default)
        if arr.shape != shape:
            raise ValueError(f"default matrix shape {arr.shape} is different from {shape}")
        return np.asfortranarray(arr)

    def get_pd_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                      default: Any = UNDEF, relayout: bool = True) -> Any:
        """The matrix as a ``pandas.DataFrame`` (rows and columns named by the axes' entries);
        sparse matrices become sparse frames."""
        import pandas as pd

        m = self.get_np_matrix(rows_axis, columns_axis, name, default=default, relayout=relayout)
        if m is None:
            return None
        index = pd.Index(self.axis_np_entries(rows_axis), name=rows_axis)
        columns = pd.Index(self.axis_np_entries(columns_axis), name=columns_axis)
        if sp.issparse(m):
            return pd.DataFrame.sparse.from_spmatrix(m, index=index, columns=columns)
        return pd.DataFrame(m, index=index, columns=columns, copy=False)

    def _matrix_items(
        self, rows: str, cols: str, name: str, value: Any, indtype: Any
    ) -> list[tuple[str, Any]]:
        nr, nc = self.axis_length(rows), self.axis_length(cols)
        path = _join("matrices", rows, cols, name)
        where = f"matrix {name!r}"
        if sp.issparse(value):
            if value.shape != (nr, nc):
                raise ValueError(f"value shape: {value.shape}\nis different from the axes: "
                                 f"{rows} x {cols} shape: {(nr, nc)}\n"
                                 f"in the daf data: {self._name}")
            csc = sp.csc_matrix(value)  # shares the arrays of a CSC input
            if not csc.has_canonical_format:  # never reorder the caller's arrays in place
                csc = csc.copy()
                csc.sum_duplicates()
            dt = lay.element_type(csc.data.dtype, where)
            idt = _index_dtype(indtype, max(nr, csc.nnz), where)
            items = self._array_items(_join(path, "colptr"),
                                      np.add(csc.indptr, 1, dtype=idt, casting="unsafe"), idt)
            items += self._array_items(_join(path, "rowval"),
                                       np.add(csc.indices, 1, dtype=idt, casting="unsafe"), idt)
            if not (isinstance(dt, np.dtype) and dt.kind == "b" and bool(np.all(csc.data))):
                items += self._array_items(_join(path, "nzval"), _dense(csc.data, dt), dt)
            items += self._layout.group_docs(path).items()
            return items
        if np.ndim(value) == 0:
            scalar = value[()] if isinstance(value, np.ndarray) else value  # keeps its dtype
            arr0, dt = _scalar_array(scalar, where)
            value = np.full((nr, nc), arr0[0], dtype=object if isinstance(dt, str) else dt)
        arr = np.asarray(value)
        if arr.shape != (nr, nc):
            raise ValueError(f"value shape: {arr.shape}\nis different from the axes: {rows} x "
                             f"{cols} shape: {(nr, nc)}\nin the daf data: {self._name}")
        dt = lay.element_type(arr.dtype, where)
        data = _dense(arr, dt)
        # Column-major bytes: the Zarr array is the transpose, C-ordered.
        return self._array_items(path, np.ascontiguousarray(data.T), dt)

    def set_matrix(
        self, rows_axis: str, columns_axis: str, name: str, value: Any, *,
        overwrite: bool = False, relayout: bool = True, indtype: Any = None,
    ) -> ZarrDaf:
        """Store a matrix: numpy (any order), a scalar to broadcast, or any scipy sparse.

        With ``relayout`` (default) the transposed layout ``columns_axis x rows_axis`` is
        stored too, so both orientations read without a copy (never for a square pair).
        """
        self._check_writable()
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        check_name(name, "matrix")
        pairs = [(rows_axis, columns_axis)]
        if relayout and rows_axis != columns_axis:
            pairs.append((columns_axis, rows_axis))
        if sp.issparse(value):
            _check_sparse(value, f"matrix {name!r} of the axes {rows_axis} x {columns_axis}"
                                 f"\nin the daf data: {self._name}")
        else:
            value = np.asarray(value)
        items = self._matrix_items(rows_axis, columns_axis, name, value, indtype)
        if len(pairs) == 2:
            flipped = value.T if sp.issparse(value) or np.ndim(value) else value
            items += self._matrix_items(columns_axis, rows_axis, name, flipped, indtype)
        with self._changing([
            (_join("matrices", r, c, name), f"matrix {name} of the axes {r} x {c}", overwrite,
             f"existing matrix: {name}\nfor the rows axis: {r}\nand the columns axis: {c}")
            for r, c in pairs
        ]):
            self._write(items)
        return self

    def relayout_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                        overwrite: bool = False) -> ZarrDaf:
        """Store the ``columns_axis x rows_axis`` layout of a stored matrix."""
        self._check_writable()
        if rows_axis == columns_axis:
            raise DafFormatError(f"can't relayout square matrix: {name}\nof the axis: "
                                 f"{rows_axis}\nin the daf data: {self._name}")
        kind = self._matrix_kind(rows_axis, columns_axis, name)
        if kind is None:
            raise DafMissingError(
                f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                f"axis: {columns_axis}\nin the daf data: {self._name}"
            )
        m = self._stored_matrix(rows_axis, columns_axis, name, kind, sparse_class="csc_matrix")
        items = self._matrix_items(columns_axis, rows_axis, name, m.T, None)
        with self._changing([(
            _join("matrices", columns_axis, rows_axis, name),
            f"matrix {name} of the axes {columns_axis} x {rows_axis}", overwrite,
            (f"existing matrix: {name}\nfor the rows axis: {columns_axis}\n"
             f"and the columns axis: {rows_axis}"),
        )]):
            self._write(items)
        return self

    def delete_matrix(self, rows_axis: str, columns_axis: str, name: str, *,
                      must_exist: bool = True, relayout: bool = True) -> ZarrDaf:
        """Delete a matrix (with ``relayout``, both layouts)."""
        self._check_writable()
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        pairs = [(rows_axis, columns_axis)]
        if relayout and rows_axis != columns_axis:
            pairs.append((columns_axis, rows_axis))
        found = [(r, c) for r, c in pairs if self._matrix_kind(r, c, name) is not None]
        if not found:
            if must_exist:
                raise DafMissingError(
                    f"missing matrix: {name}\nfor the rows axis: {rows_axis}\nand the columns "
                    f"axis: {columns_axis}\nin the daf data: {self._name}"
                )
            return self
        self._check_deletable(f"matrix {name} of the axes {rows_axis} x {columns_axis}")
        with self._changing():
            for r, c in found:
                self._delete_node(_join("matrices", r, c, name))
        return self

    # --- Two-phase fills -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _filling(
        self, path: str, what: str, exists_text: str, overwrite: bool,
        parts: list[tuple[str, np.dtype[Any], tuple[int, ...]]],
        check: Any = None,
    ) -> Iterator[list[np.ndarray[Any, Any]]]:
        """Reserve the chunks of ``parts`` (name, dtype, Zarr shape), yield them for filling,
        then publish their documents. ZIP: one batch, rolled back if the fill raises."""
        self._check_writable()
        L = self._layout
        b = self._backend
        sparse = parts[0][0] != ""
        exists = self._replaceable(path, what, overwrite, exists_text)
        with b.transaction():
            # Inside the transaction: on a ZIP, a fill that fails keeps the old property.
            if exists:
                self._delete_node(path)
            keys: list[str] = []
            views: list[np.ndarray[Any, Any]] = []
            try:
                for part, dt, shape in parts:
                    apath = _join(path, part)
                    nbytes = math.prod(shape) * dt.itemsize
                    if nbytes:
                        key = L.chunk_key(apath, len(shape))
                        keys.append(key)
                        buf = b.reserve(key, nbytes)
                        view = buf.view(dt).reshape(shape)
                    else:
                        view = np.zeros(shape, dt)
                    views.append(checked_view(view, f"{self._path}: {apath}"))
                yield views
                if check is not None:
                    check(*views)
            except BaseException:
                for key in keys:
                    b.abandon(key)
                raise
            for key in keys:
                b.seal(key)
            items: list[tuple[str, Any]] = []
            for part, dt, shape in parts:
                items += L.array_docs(_join(path, part), dt, shape).items()
            if sparse:
                items += L.group_docs(path).items()
            self._write(items)

    def _numeric(self, eltype: Any, what: str) -> np.dtype[Any]:
        dt = lay.element_type(eltype, what)
        if isinstance(dt, str):
            raise TypeError(f"{what}: empty_* fills take a numeric or bool element type")
        return dt

    @contextlib.contextmanager
    def empty_dense_vector(
        self, axis: str, name: str, eltype: Any, *, overwrite: bool = False
    ) -> Iterator[np.ndarray[Any, Any]]:
        """Fill a new dense vector in place: ``with d.empty_dense_vector(...) as v: v[:] = ...``.

        The yielded array is the storage itself (ZIP: a reserved entry of the archive), so no
        second copy is made; the vector is published when the block exits without error.
        """
        self._require_axis(axis)
        check_name(name, "vector")
        self._check_not_reserved(axis, name)
        dt = self._numeric(eltype, f"vector {name!r}")
        n = self.axis_length(axis)
        with self._filling(_join("vectors", axis, name), f"vector {name} of the axis {axis}",
                           f"existing vector: {name}\nfor the axis: {axis}", overwrite,
                           [("", dt, (n,))]) as (v,):
            yield v

    def _check_not_reserved(self, axis: str, name: str) -> None:
        if name in _RESERVED_VECTORS:
            raise DafFormatError(f"setting the reserved vector: {name}\nfor the axis: {axis}\n"
                                 f"in the daf data: {self._name}")

    @contextlib.contextmanager
    def empty_sparse_vector(
        self, axis: str, name: str, eltype: Any, nnz: int, indtype: Any = None, *,
        overwrite: bool = False,
    ) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """Fill a new sparse vector in place: yields ``(nzind, nzval)``; ``nzind`` is
        1-based and increasing (checked when the block exits)."""
        self._require_axis(axis)
        check_name(name, "vector")
        self._check_not_reserved(axis, name)
        dt = self._numeric(eltype, f"vector {name!r}")
        n = self.axis_length(axis)
        idt = _default_indtype(n) if indtype is None else _index_dtype(indtype, n, name)
        path = _join("vectors", axis, name)

        def check(nzind: np.ndarray[Any, Any], _nzval: np.ndarray[Any, Any]) -> None:
            if nzind.size and (int(nzind.min()) < 1 or int(nzind.max()) > n
                               or np.any(np.diff(nzind.astype(np.int64)) <= 0)):
                raise ValueError(f"{self._path}: {path}/nzind must be increasing 1-based "
                                 f"indices in 1..{n}")

        with self._filling(path, f"vector {name} of the axis {axis}",
                           f"existing vector: {name}\nfor the axis: {axis}", overwrite,
                           [("nzind", idt, (int(nnz),)), ("nzval", dt, (int(nnz),))],
                           check) as (nzind, nzval):
            yield nzind, nzval

    @contextlib.contextmanager
    def empty_dense_matrix(
        self, rows_axis: str, columns_axis: str, name: str, eltype: Any, *,
        overwrite: bool = False,
    ) -> Iterator[np.ndarray[Any, Any]]:
        """Fill a new dense matrix in place: yields a column-major ``rows x columns`` array."""
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        check_name(name, "matrix")
        dt = self._numeric(eltype, f"matrix {name!r}")
        nr, nc = self.axis_length(rows_axis), self.axis_length(columns_axis)
        with self._filling(
            _join("matrices", rows_axis, columns_axis, name),
            f"matrix {name} of the axes {rows_axis} x {columns_axis}",
            f"existing matrix: {name}\nfor the rows axis: {rows_axis}\n"
            f"and the columns axis: {columns_axis}", overwrite, [("", dt, (nc, nr))],
        ) as (m,):
            yield m.T

    @contextlib.contextmanager
    def empty_sparse_matrix(
        self, rows_axis: str, columns_axis: str, name: str, eltype: Any, nnz: int,
        indtype: Any = None, *, overwrite: bool = False,
    ) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """Fill a new CSC sparse matrix in place: yields 1-based ``(colptr, rowval, nzval)``
        (``colptr`` starts as ``[1, nnz+1, nnz+1, ...]``; checked when the block exits)."""
        self._require_axis(rows_axis)
        self._require_axis(columns_axis)
        check_name(name, "matrix")
        dt = self._numeric(eltype, f"matrix {name!r}")
        nr, nc = self.axis_length(rows_axis), self.axis_length(columns_axis)
        nnz = int(nnz)
        size = max(nr, nnz + 1)
        idt = _default_indtype(size) if indtype is None else _index_dtype(indtype, size, name)
        path = _join("matrices", rows_axis, columns_axis, name)

        def check(colptr: np.ndarray[Any, Any], rowval: np.ndarray[Any, Any],
                  _nzval: np.ndarray[Any, Any]) -> None:
            c64 = colptr.astype(np.int64)
            if c64[0] != 1 or c64[-1] != nnz + 1 or np.any(np.diff(c64) < 0):
                raise ValueError(f"{self._path}: {path}/colptr must be a 1-based CSC column "
                                 f"pointer from 1 to {nnz + 1}")
            if rowval.size and (int(rowval.min()) < 1 or int(rowval.max()) > nr):
                raise ValueError(f"{self._path}: {path}/rowval must hold 1-based rows in "
                                 f"1..{nr}")

        with self._filling(
            path, f"matrix {name} of the axes {rows_axis} x {columns_axis}",
            f"existing matrix: {name}\nfor the rows axis: {rows_axis}\n"
            f"and the columns axis: {columns_axis}", overwrite,
            [("colptr", idt, (nc + 1,)), ("rowval", idt, (nnz,)), ("nzval", dt, (nnz,))],
            check,
        ) as (colptr, rowval, nzval):
            colptr[0] = 1
            colptr[1:] = nnz + 1
            yield colptr, rowval, nzval

    # --- Description -----------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Everything :meth:`description` shows, as plain data (``dafzarr daf describe --json``).

        Keys: ``name``, ``type``, ``path``, ``mode``, ``format`` (the Zarr format), ``scalars``
        (name -> value), ``axes`` (name -> length), ``vectors`` (``"axis/name"`` -> property)
        and ``matrices`` (``"rows,columns/name"`` -> property), where a property is a dict
        with ``dtype``, ``layout`` (``"dense"`` or ``"sparse"``) and, when sparse,
        ``nonzeros``.
        """
        axes = sorted(self.axes_set())
        return {
            "name": self._name, "type": "ZarrDaf", "path": self._path, "mode": self._mode,
            "format": self._layout.zarr_format,
            "scalars": {s: _plain(self.get_scalar(s)) for s in sorted(self.scalars_set())},
            "axes": {a: self.axis_length(a) for a in axes},
            "vectors": {
                f"{a}/{v}": self._property(_join("vectors", a, v))
                for a in axes
                for v in sorted(self.vectors_set(a))
            },
            "matrices": {
                f"{r},{c}/{m}": self._property(_join("matrices", r, c, m))
                for r in axes
                for c in axes
                for m in sorted(self.matrices_set(r, c, relayout=False))
            },
        }

    def description(self) -> str:
        """A human-readable summary: name, type, path, mode, and every property."""
        info = self.summary()
        lines = [f"name: {info['name']}", "type: ZarrDaf", f"path: {info['path']}",
                 f"mode: {info['mode']}", f"format: zarr v{info['format']}"]
        for title, items, show in (
            ("scalars", info["scalars"], repr),
            ("axes", info["axes"], lambda n: f"{n} entries"),
            ("vectors", info["vectors"], describe_property),
            ("matrices", info["matrices"], describe_property),
        ):
            if items:
                lines.append(f"{title}:")
                lines += [f"  {k}: {show(v)}" for k, v in items.items()]
        return "\n".join(lines) + "\n"

    def _property(self, path: str) -> dict[str, Any]:
        """dtype, layout and (sparse) number of nonzeros of the property at ``path``."""
        if self._node_kind(path) == "array":
            return {"dtype": str(self._array_info(path).dtype), "layout": "dense"}
        part = "nzval" if self._node_kind(_join(path, "nzval")) else "nzind"
        if self._node_kind(_join(path, "rowval")):
            part = "nzval" if self._node_kind(_join(path, "nzval")) else "rowval"
        info = self._array_info(_join(path, part))
        dt = "bool" if part in ("nzind", "rowval") else str(info.dtype)
        return {"dtype": dt, "layout": "sparse", "nonzeros": int(info.shape[0])}


def describe_property(prop: dict[str, Any]) -> str:
    """``"float32 dense"`` or ``"bool sparse (12 nonzeros)"``, from :meth:`ZarrDaf.summary`."""
    if prop["layout"] == "dense":
        return f"{prop['dtype']} dense"
    return f"{prop['dtype']} sparse ({prop['nonzeros']} nonzeros)"


def _plain(value: Any) -> Any:
    """A scalar as a plain Python value (numpy scalars unwrapped)."""
    return value.item() if isinstance(value, np.generic) else value


@functools.lru_cache(maxsize=4096)
def _parse_array(zarr_format: int, path: str, doc: bytes) -> lay.ArrayInfo:
    """Parsed array documents, by content (documents are small; parsing is not)."""
    return lay.layout_for(zarr_format).parse_array(path, doc)


def _json(doc: Any, where: str) -> dict[str, Any]:
    if doc is None:
        raise DafFormatError(f"missing Zarr metadata: {where}")
    try:
        out = json.loads(bytes(memoryview(doc).cast("B")))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DafFormatError(f"invalid Zarr metadata JSON in {where}: {exc}") from None
    if not isinstance(out, dict):
        raise DafFormatError(f"invalid Zarr metadata in {where}: not a JSON object")
    return out


#: The largest metadata document (``zarr.json``, ``.zmetadata``) read over HTTP.
_MAX_REMOTE_METADATA = 256 << 20


def _remote_refusal(key: str, v2_document: bool) -> str | None:
    """Why a key of a remote consolidated listing is unsafe to serve (as for local stores)."""
    reason = zipformat.unsafe_name_reason(key)
    if reason is not None:
        return reason.replace("its name", "it")
    nodes = key.split("/")[:-1] if v2_document else key.split("/")
    for part in nodes:
        try:
            check_name(part, "node")
        except DafFormatError as exc:
            return str(exc)
    return None


def _remote_entries(
    url: str, entries: dict[str, Any], v2_documents: bool
) -> Iterator[tuple[str, Any]]:
    """The entries whose keys are safe; the others are named in a RefusedEntryWarning."""
    refused = []
    for key, blob in entries.items():
        reason = _remote_refusal(key, v2_documents)
        if reason is None:
            yield key, blob
        else:
            refused.append(f"{key!r} ({reason})")
    if refused:
        warnings.warn(
            f"{url}: entries of the consolidated metadata whose names are unsafe are not "
            f"served: {'; '.join(refused[:5])}"
            + (f"; and {len(refused) - 5} more" if len(refused) > 5 else ""),
            RefusedEntryWarning,
            stacklevel=4,
        )


def _open_http(url: str, options: HttpOptions | None) -> HttpBackend:
    b = HttpBackend(url, options=options)
    root = b.fetch("zarr.json", limit=_MAX_REMOTE_METADATA)
    if root is not None:
        meta = _json(root, f"{url}/zarr.json")
        if meta.get("node_type") != "group":
            raise DafFormatError(f"not a zarr group: {url}")
        cm = meta.pop("consolidated_metadata", None)
        if not isinstance(cm, dict) or cm.get("kind") != "inline" or not isinstance(
            cm.get("metadata"), dict
        ):
            raise DafFormatError(
                f"remote zarr group lacks an inline `consolidated_metadata` field: {url}\n"
                "expose the directory after any `ZarrDaf(...)` open on a writable filesystem "
                "so the field is built"
            )
        b.meta["zarr.json"] = json.dumps(meta).encode()
        for key, blob in _remote_entries(f"{url}/zarr.json", cm["metadata"], False):
            b.meta[f"{key}/zarr.json"] = json.dumps(blob).encode()
        return b
    zmeta = b.fetch(".zmetadata", limit=_MAX_REMOTE_METADATA)
    if zmeta is None:
        raise FileNotFoundError(
            2, f"failed to fetch remote zarr group: {url}/zarr.json (nor {url}/.zmetadata)", url
        )
    doc = _json(zmeta, f"{url}/.zmetadata")
    entries = doc.get("metadata")
    if not isinstance(entries, dict):
        raise DafFormatError(f"failed to open remote zarr group: {url}\nthe remote directory "
                             "must contain a consolidated .zmetadata file")
    for key, blob in _remote_entries(f"{url}/.zmetadata", entries, True):
        b.meta[key] = json.dumps(blob).encode()
    return b


def open_daf(
    path: str | os.PathLike[str], mode: Mode = "r", *, name: str | None = None,
    zarr_format: int = 2, max_file_size: int | None = None, append_only: bool = False,
    http: HttpOptions | None = None,
) -> ZarrDaf:
    """Open (or create) a Daf data set stored as Zarr.

    Path forms: ``X.daf.zarr`` (directory), ``X.daf.zarr.zip`` (one ZIP archive),
    ``X.dafs.zarr.zip#/group`` (one of several data sets in one ZIP), ``http(s)://...``
    (read-only). Modes: ``"r"`` read-only (writers raise), ``"r+"`` read-write, ``"w+"``
    created if missing, ``"w"`` created or truncated. ``zarr_format`` (2 or 3) is the
    layout of a new data set; existing ones keep theirs. ZIP only: ``max_file_size`` (the
    largest size the archive may reach while open for writing) and ``append_only`` (refuse
    deletes and overwrites); see :class:`ZarrDaf`. ``http`` sets the deadline, retries and
    limits of reads over HTTP(S) (:class:`dafzarr.HttpOptions`).
    """
    return ZarrDaf(path, mode, name=name, zarr_format=zarr_format,
                   max_file_size=max_file_size, append_only=append_only, http=http)


def memory_daf(name: str = "memory", *, zarr_format: int = 2) -> ZarrDaf:
    """A new, empty in-memory Daf data set."""
    return ZarrDaf(None, "w+", name=name, zarr_format=zarr_format)
