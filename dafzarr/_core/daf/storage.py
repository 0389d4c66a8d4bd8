"""The storage under a ZarrDaf: its group, its nodes, its writes and its consolidated metadata.

:class:`DafStorage`, the part of :class:`~dafzarr.daf.ZarrDaf` the other parts are handed,
owns the state every write shares (the backend, the layout, the lock, the change counter and
the consolidated metadata) and does the node-level work: make a new or adopted group a Daf
data set, tell arrays from groups, read an array (zero-copy when its single chunk is stored
uncompressed), write and delete nodes as one change (one ZIP commit), and keep a directory's
consolidated metadata (``.zmetadata``, or ``consolidated_metadata`` in the v3 root
``zarr.json``) in step.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ...errors import (
    AppendOnlyError,
    CorruptDafError,
    DafExistsError,
    DafMissingError,
    DafReadOnlyError,
    UnstableFileSetError,
)
from ..aliases import OpenMode
from ..ioerror import Operation, storage_io
from . import layout as lay
from .backends import ASIDE, DafBackend
from .backends_zip import ZipBackend
from .changelock import ChangeLock
from .names import join_path
from .packed import read_packed
from .values import StreamedChunk, Transposed, as_strings, metadata_doc

MODES = ("r", "r+", "w+", "w")
#: How many times a read of a property that another process deletes or replaces meanwhile
#: is made again (:meth:`DafStorage.one_state`).
_ATTEMPTS = 20
_T = TypeVar("_T")
_GROUPS = ("scalars", "axes", "vectors", "matrices")


class _Undef:
    def __repr__(self) -> str:
        return "<required>"


#: The ``default`` of getters: a missing property raises instead.
UNDEF: Any = _Undef()


class DafStorage:
    """The node storage of a ZarrDaf over its :class:`DafBackend` and :class:`~.layout.ZarrLayout`:
    the state every write shares (lock, change counter, consolidated metadata) and the
    node-level work the other parts call."""

    def __init__(self, backend: DafBackend, path: str, mode: OpenMode) -> None:
        self._backend = backend
        self._path = path
        #: The data set's name in error messages (its path until the name is known).
        self.name = path
        self._mode: OpenMode = mode
        self._read_only = mode == "r"
        self._layout: lay.ZarrLayout = lay.V2
        #: Held by every change; its generation lets reads find one state (:meth:`one_state`).
        #: A ZIP archive's is shared by every handle of the process on it.
        self._lock = backend.change_lock() or ChangeLock(path)
        self._stale_consolidated = False
        self._cmeta: dict[str, Any] | None = None
        self._ctext = lay.ZmetadataText()  # the .zmetadata document, encoded incrementally
        self._cstamp: Any = None
        #: The change counter (:meth:`changed`), shared with read-only copies; query caches
        #: key on it.
        self._changes = [0]

    def read_only_copy(self, name: str) -> DafStorage:
        """Another storage over the same backend and state whose writers raise."""
        other = copy.copy(self)
        other._read_only = True
        other._mode = "r"
        other.name = name
        return other

    @property
    def backend(self) -> DafBackend:
        """The backend the nodes are stored in."""
        return self._backend

    @backend.setter
    def backend(self, backend: DafBackend) -> None:
        self._backend = backend
        shared = backend.change_lock()
        if shared is not None:
            self._lock = shared

    @property
    def layout(self) -> lay.ZarrLayout:
        """The Zarr layout (v2 or v3) of the data set."""
        return self._layout

    @property
    def path(self) -> str:
        """The full path of the data set."""
        return self._path

    @property
    def mode(self) -> OpenMode:
        """``ZarrDaf.mode``: the mode given when the storage was opened."""
        return self._mode

    @property
    def read_only(self) -> bool:
        """``ZarrDaf.read_only``: mode ``r``, HTTP, or a read-only copy."""
        return self._read_only

    @property
    def lock(self) -> ChangeLock:
        """The lock every change of the data set holds (``with lock:``; re-entrant)."""
        return self._lock

    # --- Making the group a Daf data set -----------------------------------------------------

    def init_group(self, zarr_format: int, where: str) -> None:
        b = self._backend
        layout: lay.ZarrLayout | None = None
        v3_attrs: dict[str, Any] | None = None
        if b.exists(".zgroup"):
            layout = lay.V2
        else:
            doc = b.get("zarr.json")
            if doc is not None:
                meta = metadata_doc(doc, f"{where}/zarr.json")
                if meta.get("node_type") != "group":
                    raise CorruptDafError(f"not a zarr group: {where}")
                layout = lay.V3
                v3_attrs = dict(meta.get("attributes") or {})
        if layout is None:
            if self._mode in ("r", "r+"):
                raise CorruptDafError(f"not a zarr group: {where}")
            self._layout = lay.layout_for(zarr_format)
            self._create_fresh()
            return
        self._layout = layout
        if isinstance(b, ZipBackend) and not self._read_only and not b.append_only:
            # A ZIP made by zipping a directory carries consolidated metadata, which later
            # changes would make stale: the first change drops it (see _drop_stale_metadata).
            self._stale_consolidated = (
                b.exists(".zmetadata")
                if layout is lay.V2
                else ("consolidated_metadata" in metadata_doc(b.get("zarr.json"), where))
            )
        if layout is lay.V2:
            if b.exists("daf/.zarray"):
                marker = self.read_array("daf")
                lay.check_version(list(marker), where, v3=False)
            elif self._mode in ("r", "r+"):
                raise CorruptDafError(f"not a daf data set: {where}")
            else:
                self._adopt()
        else:
            assert v3_attrs is not None
            if "daf" in v3_attrs:
                lay.check_version(v3_attrs["daf"], where, v3=True)
            elif self._mode in ("r", "r+"):
                raise CorruptDafError(f"not a daf data set: {where}")
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
                    b.sweep_asides()
                    self._rebuild_consolidated()
            elif (
                (not b.exists(".zmetadata"))
                if layout is lay.V2
                else ("consolidated_metadata" not in metadata_doc(b.get("zarr.json"), where))
            ):
                with contextlib.suppress(OSError), b.consolidation_lock():
                    self._rebuild_consolidated()  # a read-only file system: read anyway

    def _marker_and_groups(self, *, fresh: bool) -> list[tuple[str, Any]]:
        """The v2 ``daf`` marker array and the documents of the top groups (of a ``fresh``
        data set all of them, else those missing)."""
        L = self._layout
        items: list[tuple[str, Any]] = []
        if L is lay.V2:
            items += self.array_items(
                "daf", np.frombuffer(lay.marker_bytes(), np.uint8), np.dtype(np.uint8)
            )
        for g in _GROUPS:
            if fresh or self.node_kind(g) is None:
                items += L.group_docs(g).items()
        return items

    def _create_fresh(self) -> None:
        L = self._layout
        items = self._marker_and_groups(fresh=True)
        if L is lay.V2:
            items += L.group_docs("").items()
        else:
            items.append(("zarr.json", lay.root_v3_doc(None)))
        self.write(items)

    def _adopt(self) -> None:
        """Make an existing plain Zarr group a Daf data set (``w+``/``w`` modes)."""
        items = self._marker_and_groups(fresh=False)
        if self._layout is lay.V3:
            meta = metadata_doc(self._backend.get("zarr.json"), "zarr.json")
            attrs = dict(meta.get("attributes") or {})
            attrs["daf"] = list(lay.VERSION)
            meta["attributes"] = attrs
            meta.pop("consolidated_metadata", None)
            items.append(("zarr.json", json.dumps(meta, separators=(",", ":")).encode()))
        self.write(items)

    # --- Low-level node access -------------------------------------------------------------

    def node_kind(self, path: str) -> str | None:
        """``"array"``, ``"group"`` or None: the node at ``path`` between changes of other
        threads (an overwrite is never seen as a missing node; see :meth:`one_state`)."""
        if self._backend.pins:
            return self._node_kind(path)
        return self._lock.call(self._node_kind, path)

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
        kind = metadata_doc(doc, path).get("node_type")
        return kind if kind in ("array", "group") else None

    def array_info(self, path: str) -> lay.ZarrArrayInfo:
        marker = self._layout.array_marker(path)
        doc = self._backend.get(marker)
        if doc is None:
            self.check_unchanged(path, marker)
            raise DafMissingError(f"missing array: {path}\nin the daf data: {self.name}")
        return _parse_array(self._layout.zarr_format, path, bytes(doc))

    def one_state(self, path: str, read: Callable[[], _T]) -> _T:
        """``read()`` of what is below the node at ``path`` from one state of the node.

        In a directory, the node is pinned (:meth:`DafBackend.pinned`): the files of one
        directory, even if another process renames it aside (a delete or an overwrite)
        during the read. A read that finds a key missing because of such a change
        (:meth:`check_unchanged`) is made again from the start, at most :data:`_ATTEMPTS`
        times. Other backends (ZIP, memory) change in place: the read is made between
        changes of the data set by other threads (:meth:`ChangeLock.read`; for a ZIP, of
        any handle of this process on the archive)."""
        if not self._backend.pins:
            return self._lock.read(read)
        attempt = 0
        while True:
            attempt += 1
            with self._backend.pinned(path) as own:
                try:
                    return read()
                except UnstableFileSetError:
                    if not own or attempt >= _ATTEMPTS:
                        raise

    def check_unchanged(self, path: str, key: str) -> None:
        """The key ``key`` of the node ``path`` is missing: raise when the pinned node was
        deleted or replaced meanwhile (the key may be missing because the writer was removing
        the node; a missing chunk is otherwise the fill value, as Zarr omits such chunks)."""
        if self._backend.pin_moved(key):
            raise UnstableFileSetError(
                f"{path!r} was deleted or replaced while it was read, {_ATTEMPTS} times in a "
                f"row ({key!r} went missing)\nin the daf data: {self.name}"
            )

    def read_array(self, path: str, *, populate: bool = False) -> np.ndarray[Any, Any]:
        """The array at ``path`` in Zarr shape and C order; zero-copy when canonical. Its
        metadata and chunk come from one state of it (:meth:`one_state`)."""
        return self.one_state(path, lambda: self._read_array(path, populate))

    def _read_array(self, path: str, populate: bool) -> np.ndarray[Any, Any]:
        info = self.array_info(path)
        shape = info.shape
        where = f"{self._path}: {path}"
        if info.canonical:
            if isinstance(info.dtype, str):
                data = self._backend.get(info.chunk_key)
                count = math.prod(shape)
                if data is None:
                    self.check_unchanged(path, info.chunk_key)
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
                raise CorruptDafError(
                    f"{where}: chunk {info.chunk_key!r} holds {memoryview(data).nbytes} bytes, "
                    f"expected {math.prod(shape) * dt.itemsize}"
                )
            self.check_unchanged(path, info.chunk_key)
            zero = 0 if info.fill is None else info.fill
            out = np.full(shape, zero, dtype=dt)
            out.flags.writeable = False
            return out
        if info.packed:
            shard = self._backend.get(info.chunk_key)
            if shard is None:
                self.check_unchanged(path, info.chunk_key)
                out = np.full(
                    shape,
                    info.fill or ("" if isinstance(info.dtype, str) else 0),
                    dtype=object if isinstance(info.dtype, str) else info.dtype,
                )
                out.flags.writeable = False
                return out
            return read_packed(info.meta, shard, info.dtype, where)
        return self._read_foreign(path, info)

    def require_group(self, path: str) -> None:
        """Within :meth:`one_state` of a sparse property: it is still a group (its group
        document, written after its parts, says they are whole)."""
        marker = self._layout.group_marker(path)
        if self.node_kind(path) != "group":
            self.check_unchanged(path, marker)
            raise DafMissingError(f"missing sparse property: {path}\nin the daf data: {self.name}")

    def _read_foreign(self, path: str, info: lay.ZarrArrayInfo) -> np.ndarray[Any, Any]:
        import zarr

        store, root = self._backend.zarr_store()
        try:
            za = zarr.open_array(
                store=store,
                path=join_path(root, path),
                mode="r",
                zarr_format=self._layout.zarr_format,  # type: ignore[arg-type]
            )
            out = np.asarray(za[...])
        except Exception as exc:
            raise CorruptDafError(f"{self._path}: can't read array {path!r}: {exc}") from exc
        if isinstance(info.dtype, str):
            out = as_strings(out.astype(object) if out.dtype.kind != "O" else out)
        elif out.dtype != info.dtype:
            out = out.astype(info.dtype)
        if not out.flags.c_contiguous:
            out = np.ascontiguousarray(out)
        out.flags.writeable = False
        return out

    def array_items(
        self, path: str, data: np.ndarray[Any, Any] | StreamedChunk, dt: np.dtype[Any] | str
    ) -> list[tuple[str, Any]]:
        """Chunk then documents of one flat array (``data`` in Zarr shape; a
        :class:`StreamedChunk` is computed where it is stored)."""
        L = self._layout
        items: list[tuple[str, Any]] = []
        shape = tuple(int(n) for n in data.shape)
        if isinstance(data, StreamedChunk):  # written where stored
            # 1-based indices are never all zero; a transpose is when its source is.
            zero = isinstance(data, Transposed) and L.elide(dt, data.src)
            if data.size and not zero:
                items.append((L.chunk_key(path, len(shape)), data))
        elif data.size and not L.elide(dt, data):
            if isinstance(dt, str):
                chunk: Any = lay.encode_strings(data.reshape(-1))
            else:
                chunk = np.ascontiguousarray(data, dtype=dt)
            items.append((L.chunk_key(path, len(shape)), chunk))
        items += L.array_docs(path, dt, shape).items()
        return items

    @contextlib.contextmanager
    def changing(
        self, what: str, replaces: Sequence[tuple[str, str, bool, str]] = ()
    ) -> Iterator[None]:
        """One change of the data set (a set, an overwrite, a delete): on a ZIP one commit,
        so a crash or an error leaves the old state or the new one, never a mix.

        ``what`` names the change and its property (``setting the vector age of the axis
        cell``): a failed system call is raised as a
        :class:`~dafzarr.errors.StorageIOError` that says it, with the data set's path.

        ``replaces``: ``(path, what, overwrite, exists_text)`` of each property the change
        writes. An existing one is either refused (:meth:`_replaceable`) before the ZIP
        batch opens, so that a refused change rolls back no write another thread has
        waiting in the batch, or deleted inside the batch.
        """
        with self._lock, self.io(what):
            doomed = self.doomed(replaces)
            with self.undoable(bool(doomed)):
                for path in doomed:
                    self.delete_node(path)
                yield

    @contextlib.contextmanager
    def undoable(self, deletes: bool) -> Iterator[None]:
        """The backend's transaction. A directory's transaction that raises puts back the
        nodes it deleted: the consolidated metadata is then made again from the files."""
        try:
            with self._backend.transaction():
                yield
        except BaseException:
            if deletes and self._backend.consolidates:
                self.changed()
                with contextlib.suppress(OSError), self._backend.consolidation_lock():
                    self._rebuild_consolidated()
            raise

    def io(self, what: str) -> contextlib.AbstractContextManager[Operation]:
        """:func:`~dafzarr._core.ioerror.storage_io` of the change ``what`` to this data set."""
        b = self._backend
        kept = "the data set keeps its last committed state" if b.rolls_back else ""
        return storage_io(what, b.describe(), kept)

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
            root = metadata_doc(b.get("zarr.json"), f"{self._path}/zarr.json")
            root.pop("consolidated_metadata", None)
            b.put([("zarr.json", json.dumps(root, separators=(",", ":")).encode())])

    def data_version(self) -> Any:
        """What changes whenever the data set changes: this handle's change counter, and its
        backend's version (another handle of the same ZIP or directory may write)."""
        return self._changes[0], self._backend.version()

    def changed(self) -> None:
        """Every change of the data passes here: :meth:`write` (every set, fill and axis) and
        :meth:`delete_node` (every delete and overwrite) call it under the lock, whose
        generation tells readers of a ZIP or memory data set that a change is under way
        (:meth:`one_state`)."""
        self._changes[0] += 1

    def write(self, items: list[tuple[str, Any]]) -> None:
        b = self._backend
        with self._lock:
            self.changed()
            with b.transaction():
                self._drop_stale_metadata()
                b.put(self._place_one_based(items))
            if b.consolidates:
                with b.consolidation_lock():
                    self._note_written([k for k, _ in items])

    def _place_one_based(self, items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """Write :class:`StreamedChunk` chunks (1-based indices, transposes) block by block
        into new ZIP entries (no temporary array; a failure rolls back with the batch); a
        directory streams them to its files; other backends get the arrays."""
        b = self._backend
        out: list[tuple[str, Any]] = []
        for key, data in items:
            if not isinstance(data, StreamedChunk) or b.kind == "directory":
                out.append((key, data))  # a directory streams the blocks to the file
            elif isinstance(b, ZipBackend):
                b.put_streamed(key, data.nbytes, data.blocks())
            else:
                out.append((key, np.asarray(data)))
        return out

    def delete_node(self, path: str) -> None:
        with self._lock:
            self.changed()
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
        self._flush_consolidated([])

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
            return (
                key if base in (".zgroup", ".zattrs", ".zarray") and key != ".zmetadata" else None
            )
        if base != "zarr.json" or key == "zarr.json":
            return None
        return key[: -len("/zarr.json")]

    def _note_written(self, keys: list[str]) -> None:
        if not self._consolidated_current():
            self._rebuild_consolidated()
            return
        assert self._cmeta is not None
        changed = []
        for key in keys:
            ckey = self._consolidated_key(key)
            if ckey is not None:
                self._cmeta[ckey] = metadata_doc(self._backend.get(key), key)
                changed.append(ckey)
        if changed:
            self._flush_consolidated(changed)

    def _rebuild_consolidated(self) -> None:
        entries: dict[str, Any] = {}
        for key in self._backend.keys_under(""):
            if any(p.endswith(ASIDE) for p in key.split("/")):
                continue
            ckey = self._consolidated_key(key)
            if ckey is not None:
                data = self._backend.get(key)
                if data is not None:
                    entries[ckey] = metadata_doc(data, key)
        self._cmeta = entries
        self._flush_consolidated()

    def _flush_consolidated(self, changed: list[str] | None = None) -> None:
        """Rewrite the consolidated metadata; ``changed``: the only entries set since the
        last rewrite (None: any may have been)."""
        assert self._cmeta is not None
        if self._layout is lay.V2:
            doc = self._ctext.document(self._cmeta, changed)
            self._backend.put([(".zmetadata", doc)])
        else:
            root = metadata_doc(self._backend.get("zarr.json"), "zarr.json")
            root.pop("consolidated_metadata", None)
            root["consolidated_metadata"] = {
                "kind": "inline",
                "must_understand": False,
                "metadata": lay.sort_consolidated(self._cmeta),
            }
            self._backend.put([("zarr.json", json.dumps(root, separators=(",", ":")).encode())])
        self._cstamp = self._backend.stamp(self._consolidated_doc())

    # --- Checks ----------------------------------------------------------------------------------

    def check_writable(self) -> None:
        if self._read_only:
            raise DafReadOnlyError(f"can't modify the read-only daf data: {self.name}")

    def check_deletable(self, what: str) -> None:
        if self._backend.append_only:
            raise AppendOnlyError(
                "can't delete or overwrite properties in a zip-backed ZarrDaf; the ZIP backend "
                f"is append-only: {what} in the daf data: {self.name}"
            )

    def nothing_to_delete(self, exists: bool, must_exist: bool, missing: str, what: str) -> bool:
        """Before a delete: True when the property is missing and ``must_exist`` is not set,
        ``DafMissingError`` (``missing``) when it is; an existing one is checked deletable."""
        if not exists:
            if must_exist:
                raise DafMissingError(f"{missing}\nin the daf data: {self.name}")
            return True
        self.check_deletable(what)
        return False

    def doomed(self, replaces: Sequence[tuple[str, str, bool, str]]) -> list[str]:
        """The paths of ``replaces`` (see :meth:`changing`) that hold a property to delete;
        an existing one that may not be replaced is refused (:meth:`_replaceable`)."""
        return [r[0] for r in replaces if self._replaceable(*r)]

    def _replaceable(self, path: str, what: str, overwrite: bool, exists_text: str) -> bool:
        """Before writing ``path``: whether a property is there to delete (``overwrite``);
        without ``overwrite`` (or on an append-only ZIP) an existing one is refused."""
        if self.node_kind(path) is None:
            return False
        if not overwrite:
            raise DafExistsError(f"{exists_text}\nin the daf data: {self.name}")
        self.check_deletable(what)
        return True


@functools.lru_cache(maxsize=4096)
def _parse_array(zarr_format: int, path: str, doc: bytes) -> lay.ZarrArrayInfo:
    """Parsed array documents, by content (documents are small; parsing is not)."""
    return lay.layout_for(zarr_format).parse_array(path, doc)
