"""The backend of a ZarrDaf path: a directory, a ZIP archive (or one group of it), or HTTP(S).

:func:`open_backend` checks the path against the mode (a missing data set opened ``r`` or
``r+``, ZIP-only options on another kind), creates or truncates what the mode asks for, and
returns the backend. Over HTTP the consolidated metadata is read in one GET and every key it
lists is checked as a local store's names are.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ...errors import (
    AppendOnlyError,
    CorruptArchiveError,
    CorruptDafError,
    DafArgumentError,
    DafFormatError,
    DafNotFoundError,
    DafReadOnlyError,
    RefusedEntryWarning,
    UnsupportedDafError,
)
from ..aliases import OpenMode
from ..atomic import (
    atomic_directory,
    fsync_directory,
    new_temporary,
    publish_new_file,
    removed_on_failure,
)
from ..io import HttpOptions
from ..zipstore import MmapZipStore
from ..zipstore import ziprecords as zipformat
from .backends import DafBackend, DirectoryBackend, MemoryBackend
from .backends_http import HttpBackend
from .backends_zip import ZipBackend, acquire_zip_store, adopt_zip_store
from .names import check_name, parse_daf_path
from .values import metadata_doc


class Opened(NamedTuple):
    """What :func:`open_backend` found: the backend and how to name and initialise it."""

    backend: DafBackend
    #: ``"memory"``, ``"directory"``, ``"zip"`` or ``"http"``.
    kind: str
    #: The full path: absolute container path (plus ``#/group``), URL, or ``memory``.
    path: str
    #: Mode ``"w"`` on an existing ZIP data set (a group, or the whole archive): its keys go
    #: in the first commit, which also makes the new, empty data set.
    truncate_group: bool = False
    #: Mode ``"w"`` on a directory, or where there is no archive yet: the new data set is
    #: built aside (:func:`create_aside`, :func:`create_zip_aside`).
    aside: bool = False


def open_backend(
    path: str | os.PathLike[str] | None,
    mode: OpenMode,
    max_file_size: int | None,
    append_only: bool,
    http: HttpOptions | None,
    lock: bool = True,
    durable: bool = False,
) -> Opened:
    """The backend of ``path`` (``None``: memory) opened for ``mode``; ``durable``: every
    write is made durable (fsync) before it returns."""
    if path is not None and parse_daf_path(path)[0] != "zip":
        for option, value in (("max_file_size", max_file_size), ("append_only", append_only)):
            if value not in (None, False):
                raise DafArgumentError(f"{option} applies to ZIP archives only: {path}")
    if path is None:
        if max_file_size is not None or append_only:
            raise DafArgumentError("max_file_size and append_only apply to ZIP archives only")
        return Opened(MemoryBackend(), "memory", "memory")
    kind, container, group = parse_daf_path(path)
    full = container + (f"#/{group}" if group else "")
    if kind == "http":
        if mode != "r":
            raise DafReadOnlyError(
                f"can't open an http(s)://... ZarrDaf in mode: {mode}; the HTTP "
                f"backend is read-only: {container}"
            )
        return Opened(_open_http(container, http), kind, full)
    # Modes "w" and "w+" make a new data set aside, so that a crash leaves none or all of it.
    new = mode in ("w", "w+") and not os.path.lexists(container)
    if kind == "directory":
        if new or (mode == "w" and _replaceable(container)):
            return Opened(
                DirectoryBackend(container, read_only=False, durable=durable),
                kind,
                full,
                aside=True,
            )
        return Opened(_open_directory(container, mode, durable), kind, full)
    if new:
        return Opened(
            _zip_aside(container, group, max_file_size, append_only, lock, durable),
            kind,
            full,
            aside=True,
        )
    backend, truncate = _open_zip(container, group, mode, max_file_size, append_only, lock, durable)
    return Opened(backend, kind, full, truncate)


def _replaceable(root: str) -> bool:
    """Whether mode ``"w"`` builds the data set at ``root`` aside: nothing is there, or a
    directory (not a link to one, nor a file, which the truncation refuses as it did)."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return True
    return stat.S_ISDIR(st.st_mode)


def create_aside(root: str, durable: bool, init: Callable[[DafBackend], None]) -> DirectoryBackend:
    """Mode ``"w"`` on a directory: ``init`` makes the new, empty data set in a temporary
    directory beside ``root``, which then takes the place of ``root`` with one rename (an
    existing directory is swapped out and removed only then). A process killed at any
    instant leaves the old directory (or none) or the complete new data set, never one
    without its group; with ``durable``, a power loss too. The backend of ``root``."""
    os.makedirs(os.path.dirname(root), exist_ok=True)
    with atomic_directory(root, force=True, sync=durable) as tmp:
        init(DirectoryBackend(tmp, read_only=False))
    return DirectoryBackend(root, read_only=False, durable=durable)


def _zip_aside(
    container: str,
    group: str,
    max_file_size: int | None,
    append_only: bool,
    lock: bool,
    durable: bool,
) -> ZipBackend:
    """The backend of a new archive under a temporary name beside ``container`` (see
    :func:`create_zip_aside`); the store is its own, not the process-wide one."""
    tmp = new_temporary(container)
    try:
        with removed_on_failure(tmp):
            store = MmapZipStore(tmp, "w", max_file_size=max_file_size, lock=lock, durable=durable)
    except BaseException as exc:
        _name_the_archive(exc, tmp, container)
        raise
    return ZipBackend(store, group, read_only=False, append_only=append_only)


def _name_the_archive(exc: BaseException, tmp: str, container: str) -> None:
    """Make the error of the archive being made under the name ``tmp`` name ``container``,
    the archive the user asked for (the temporary is gone when it is raised)."""
    exc.args = tuple(a.replace(tmp, container) if isinstance(a, str) else a for a in exc.args)
    if isinstance(exc, OSError):
        if isinstance(exc.strerror, str):
            exc.strerror = exc.strerror.replace(tmp, container)
        if exc.filename == tmp:
            exc.filename = container


def create_zip_aside(
    container: str, aside: ZipBackend, durable: bool, init: Callable[[DafBackend], None]
) -> ZipBackend:
    """Mode ``"w"`` where there is no archive: ``init`` makes the new, empty data set in
    the archive ``aside`` (:func:`_zip_aside`), which then gets the name ``container``.
    A process killed at any instant leaves no archive or one with the new data set's
    group, never one without it; with ``durable``, a power loss too. The store keeps its
    lock throughout and becomes the process-wide store of ``container``. The backend of
    the data set there."""
    store = aside.store
    tmp = store.path
    try:
        init(aside)
        adopt_zip_store(store, container, lambda: publish_new_file(tmp, container, durable))
    except BaseException as exc:
        if store.path == tmp:  # not published
            with contextlib.suppress(Exception):
                store.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _name_the_archive(exc, tmp, container)
        raise
    return aside


def _open_directory(root: str, mode: OpenMode, durable: bool = False) -> DafBackend:
    if mode in ("r", "r+") and not os.path.isdir(root):
        raise DafNotFoundError(2, f"no such directory: {root}", root)
    if mode == "w" and os.path.exists(root):
        shutil.rmtree(root)
    if mode in ("w", "w+"):
        os.makedirs(root, exist_ok=True)
        if durable:
            fsync_directory(os.path.dirname(os.path.abspath(root)))
    return DirectoryBackend(root, read_only=mode == "r", durable=durable)


def _open_zip(
    container: str,
    group: str,
    mode: OpenMode,
    max_file_size: int | None,
    append_only: bool,
    lock: bool,
    durable: bool = False,
) -> tuple[ZipBackend, bool]:
    """The ZIP backend, and whether the data set is to be truncated (mode ``"w"`` on a group
    that has keys already, or on an archive that has entries)."""
    if mode in ("r", "r+") and not os.path.isfile(container):
        raise DafNotFoundError(2, f"no such file: {container}", container)
    store_mode = mode
    if mode == "w" and not group and not append_only and os.path.isfile(container):
        # The old data set stays until the commit that deletes its keys and makes the new
        # group: a crash leaves one or the other. A file that is no archive is emptied.
        try:
            store = acquire_zip_store(container, "r+", max_file_size, lock, durable, exclusive=True)
        except CorruptArchiveError:
            pass
        else:
            return ZipBackend(store, "", read_only=False), bool(store.keys())
    if mode == "w" and (group or append_only):
        # A group is emptied by its first commit, never the whole archive; an append-only
        # data set is never emptied.
        if os.path.isfile(container):
            probe = acquire_zip_store(container, "r+", max_file_size, lock, durable)
            backend = ZipBackend(probe, group, read_only=False, append_only=append_only)
            truncate = False
            if backend.children("") or backend.keys_under(""):
                if append_only:
                    backend.close()
                    where = f"{container}#/{group}" if group else container
                    raise AppendOnlyError(
                        f"can't truncate the data set in {where}: mode 'w' empties it, and "
                        "it is opened append-only; open it with mode 'w+' or 'r+', or "
                        "delete it first"
                    )
                truncate = True
            return backend, truncate
        store_mode = "w+"
    store = acquire_zip_store(container, store_mode, max_file_size, lock, durable)
    return ZipBackend(store, group, read_only=mode == "r", append_only=append_only), False


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
            stacklevel=5,
        )


def _open_http(url: str, options: HttpOptions | None) -> HttpBackend:
    b = HttpBackend(url, options=options)
    root = b.fetch("zarr.json", limit=_MAX_REMOTE_METADATA)
    if root is not None:
        meta = metadata_doc(root, f"{url}/zarr.json")
        if meta.get("node_type") != "group":
            raise CorruptDafError(f"not a zarr group: {url}")
        cm = meta.pop("consolidated_metadata", None)
        if (
            not isinstance(cm, dict)
            or cm.get("kind") != "inline"
            or not isinstance(cm.get("metadata"), dict)
        ):
            raise UnsupportedDafError(
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
        raise DafNotFoundError(
            2, f"failed to fetch remote zarr group: {url}/zarr.json (nor {url}/.zmetadata)", url
        )
    doc = metadata_doc(zmeta, f"{url}/.zmetadata")
    entries = doc.get("metadata")
    if not isinstance(entries, dict):
        raise UnsupportedDafError(
            f"failed to open remote zarr group: {url}\nthe remote directory "
            "must contain a consolidated .zmetadata file"
        )
    for key, blob in _remote_entries(f"{url}/.zmetadata", entries, True):
        b.meta[key] = json.dumps(blob).encode()
    return b
