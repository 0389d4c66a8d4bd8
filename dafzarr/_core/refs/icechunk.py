"""Publish a reference store into an Icechunk repository: :func:`to_icechunk`.

Data chunks become Icechunk virtual chunk references (location, offset, length), written
through the session store's batch API; values the store holds itself (inlined chunks, and
the composed coordinates of its ``values.bin``) become native chunks; each array gets Zarr
v3 metadata with the same codecs, fill value, dimension names and attributes (the CF
``_FillValue`` attribute, as the scanner writes it, is what Zarr v3 readers mask by).

The references are read twice, batch by batch (see :mod:`._batches`): first to check every
location they name (covered by one of the repository's virtual chunk containers; for local
files, present and long enough), then to write. Nothing is written before the checks pass.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote, urlsplit

import numpy as np

from ...errors import InvalidArgumentError
from ..progress import Progress
from .batches import ArrayRefs, Batch, RefsSource, open_source
from .zarr3 import array_kwargs

__all__ = ["to_icechunk"]

#: Location schemes whose objects report a modification time Icechunk can check.
_TIMED = ("file", "s3", "gs", "gcs", "az", "abfs")


@dataclass
class _IcechunkPlan:
    """What the checking pass found: references per array, and per location the furthest
    byte referenced (and by which array)."""

    virtual: dict[str, int] = field(default_factory=dict)
    native: dict[str, int] = field(default_factory=dict)
    ends: dict[str, tuple[int, str]] = field(default_factory=dict)


def to_icechunk(
    refs_store: Any,
    icechunk_store: Any,
    *,
    group: str | None = None,
    overwrite: bool = False,
    batch_size: int = 100_000,
    progress: bool = False,
) -> int:
    """Write the references of a reference store into an Icechunk session store.

    Parameters
    ----------
    refs_store
        The path of a kerchunk-Parquet reference store written by dafzarr
        (:func:`write_parquet`, :func:`virtualize`), or a :class:`VirtualDataset` (as
        :func:`compose` or ``virtualize(..., out_path=None)`` return) or a
        :class:`ScanResult`.
    icechunk_store
        The ``store`` of a writable Icechunk session (``repo.writable_session(branch)``).
        The caller commits the session.
    group
        The group of the Icechunk store to write into (created with its parents if
        missing; default: the root). The reference store's root attributes go to it.
    overwrite
        Replace arrays of the same name already there (otherwise refused, before anything
        is written).
    batch_size
        References read and written at a time: memory stays that of one batch, whatever
        the number of references.
    progress
        Show a progress bar on stderr.

    Returns
    -------
    int
        The number of virtual chunk references written.

    Raises
    ------
    InvalidArgumentError
        Before anything is written: a referenced location that no virtual chunk container
        of the repository covers (the message names the URL prefix to add, and how); a
        local file that is missing or shorter than a reference into it; an inconsistent
        store; an array already there without ``overwrite``; a codec Zarr v3 readers lack.

    Notes
    -----
    Chunks in the store's ``values.bin`` and inlined chunks are copied into the repository
    as native chunks: the repository does not depend on the reference store afterwards.
    Virtual references to files and object stores carry the publication time (to the next
    second) as their ``last_updated_at`` checksum: Icechunk refuses to read a chunk of a
    file modified since. Readers must authorize the containers
    (``authorize_virtual_chunk_access``). This function holds one batch at a time, but
    Icechunk 1.1's session keeps every reference written until the commit (270-360 bytes
    each), and the commit builds the array's manifest beside them (about 300 bytes more
    each; less in a repository configured with ``ManifestSplittingConfig``): the peak
    memory of a publication grows with its number of references (about 0.8 GiB for
    10^6).
    An error while writing, after the checks (a storage failure), leaves part of the
    references in the session: discard its changes rather than commit them.

    Examples
    --------
    A repository whose virtual chunk container covers the working directory:

    >>> import os
    >>> import h5py
    >>> import icechunk
    >>> import zarr
    >>> with h5py.File("day0.nc", "w") as f:
    ...     _ = f.create_dataset("sst", data=np.arange(32, dtype="f4").reshape(4, 8),
    ...                          chunks=(2, 4))
    >>> _ = dafzarr.refs.write_parquet(dafzarr.refs.scan("day0.nc"), "day0.refs")
    >>> prefix = f"file://{os.getcwd()}/"
    >>> config = icechunk.RepositoryConfig.default()
    >>> config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
    ...     prefix, icechunk.local_filesystem_store(os.getcwd())))
    >>> repo = icechunk.Repository.create(icechunk.local_filesystem_storage("repo"), config,
    ...                                   authorize_virtual_chunk_access={prefix: None})
    >>> session = repo.writable_session("main")
    >>> dafzarr.refs.to_icechunk("day0.refs", session.store)
    4
    >>> _ = session.commit("one day of SST")
    >>> zarr.open_group(repo.readonly_session("main").store, mode="r")["sst"][1, :4]
    array([ 8.,  9., 10., 11.], dtype=float32)
    """
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise InvalidArgumentError(f"batch_size must be an integer >= 1, not {batch_size!r}")
    session = getattr(icechunk_store, "session", None)
    if session is None or not hasattr(icechunk_store, "set_virtual_refs"):
        raise InvalidArgumentError(
            f"icechunk_store must be an Icechunk session's store, not {type(icechunk_store)!r}"
        )
    if icechunk_store.read_only:
        raise InvalidArgumentError(
            "icechunk_store is read-only: publish into repo.writable_session(branch).store"
        )
    prefix = _group_path(group)
    source = open_source(refs_store, batch_size)
    plan = _check_references(source)
    _check_locations(source, plan, icechunk_store.session.config)
    kwargs = {a.name: array_kwargs(a.name, a.zarray, a.zattrs) for a in source.arrays}
    _check_destination(icechunk_store, source, prefix, overwrite)
    with (
        _ValuesFile(source) as values,
        Progress(
            sum(plan.virtual.values()) + sum(plan.native.values()),
            f"publishing {source.where}",
            progress,
            unit="chunks",
        ) as bar,
    ):
        _write_groups(icechunk_store, source, prefix)
        written, checksum = 0, _publication_time()
        for a in source.arrays:
            written += _write_array(
                icechunk_store,
                a,
                _join(prefix, a.name),
                kwargs[a.name],
                overwrite,
                values,
                bar,
                checksum,
            )
    return written


# --- Checking pass ---------------------------------------------------------------------------
def _group_path(group: str | None) -> str:
    """``group`` as a store path (``""``: the root); ``.``, ``..`` and empty parts refused."""
    if group is None:
        return ""
    parts = group.strip("/").split("/") if isinstance(group, str) else None
    if parts is None or (group.strip("/") and any(p in ("", ".", "..") for p in parts)):
        raise InvalidArgumentError(f"group must be a group path such as 'a/b', not {group!r}")
    return group.strip("/")


def _join(prefix: str, name: str) -> str:
    return "/".join(p for p in (prefix, name) if p)


def _check_references(source: RefsSource) -> _IcechunkPlan:
    """Read every reference once: counts, and the furthest byte per location."""
    plan = _IcechunkPlan()
    for a in source.arrays:
        virtual = native = rows = 0
        for b in a.batches():
            rows += len(b)
            present = b.path_index >= 0
            if not present.any():
                native += len(b.raw)
                continue
            idx = b.path_index[present]
            off, size = b.offset[present], b.size[present]
            if idx.max() >= len(b.paths) or (off < 0).any() or (size < 0).any():
                raise InvalidArgumentError(
                    f"{source.where}: array {a.name!r}: a reference with a negative offset or "
                    "size, or an unknown path, among chunks "
                    f"{b.start}..{b.start + len(b) - 1}"
                )
            end = np.zeros(len(b.paths), dtype=np.int64)
            np.maximum.at(end, idx, off + size)
            used = np.flatnonzero(np.bincount(idx, minlength=len(b.paths)))
            for k in used.tolist():
                url = b.paths[k]
                if url == source.values_url:
                    native += int((idx == k).sum())
                else:
                    virtual += int((idx == k).sum())
                if int(end[k]) > plan.ends.get(url, (-1, ""))[0]:
                    plan.ends[url] = (int(end[k]), a.name)
            native += len(b.raw)
        if rows != a.nchunks:
            raise InvalidArgumentError(
                f"{source.where}: array {a.name!r} has {rows} references for a grid of "
                f"{a.nchunks} chunks"
            )
        plan.virtual[a.name], plan.native[a.name] = virtual, native
    return plan


def _check_locations(source: RefsSource, plan: _IcechunkPlan, config: Any) -> None:
    """Every location covered by a virtual chunk container; local files long enough."""
    prefixes = list((config.virtual_chunk_containers or {}).keys())
    urls = [u for u in plan.ends if u != source.values_url]
    lossy = next((u for u in urls if _stored_location(u) is None), None)
    if lossy is not None:
        parts = urlsplit(lossy)
        raise InvalidArgumentError(
            f"{source.where}: Icechunk 1 keeps a virtual chunk's location as scheme://host/path "
            f"and would drop the {_lost_part(parts)} of {lossy}, its chunks then read from "
            "another place: serve the files from a URL without it"
        )
    outside = sorted(
        u for u in urls if not any(str(_stored_location(u)).startswith(p) for p in prefixes)
    )
    if outside:
        raise InvalidArgumentError(_container_refusal(source.where, outside, prefixes))
    for url, (end, name) in plan.ends.items():
        if urlsplit(url).scheme != "file":
            continue  # remote: Icechunk refuses a short read when the chunk is read
        path = unquote(urlsplit(url).path)
        try:
            length = os.stat(path).st_size
        except OSError as exc:
            raise InvalidArgumentError(
                f"{source.where}: array {name!r} references {url}, which cannot be read "
                f"({exc.strerror or exc})"
            ) from None
        if end > length:
            raise InvalidArgumentError(
                f"{source.where}: array {name!r} has a reference ending at byte {end}, past "
                f"the end of {path} ({length} bytes): the file changed since it was scanned, "
                "or the store is corrupt; refusing to publish it"
            )


def _stored_location(url: str) -> str | None:
    """The location Icechunk stores for ``url`` (containers match it by prefix), or ``None``
    when storing would change where it points: Icechunk 1 rebuilds each location from its
    scheme, host and non-empty path segments only, dropping a port, user, query, fragment."""
    if _icechunk_major() >= 2:
        return url
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if port is not None or parts.username or parts.query or parts.fragment:
        return None
    path = "/".join(s for s in parts.path.split("/") if s)
    return f"{parts.scheme}://{parts.hostname or ''}/{path}"


def _lost_part(parts: Any) -> str:
    try:
        if parts.port is not None:
            return f"port {parts.port}"
    except ValueError:
        return "invalid port"
    if parts.username:
        return "user name"
    return "query" if parts.query else "fragment"


def _icechunk_major() -> int:
    import icechunk

    try:
        return int(str(icechunk.__version__).split(".")[0])
    except ValueError:
        return 1


def _container_refusal(where: str, outside: list[str], prefixes: list[str]) -> str:
    """The refusal for locations outside every container, with the container to add."""
    prefix, store = _suggested_container(outside)
    known = ", ".join(repr(p) for p in prefixes) or "none"
    more = f" and {len(outside) - 1} other locations" if len(outside) > 1 else ""
    return (
        f"{where}: no virtual chunk container of the Icechunk repository covers {outside[0]}"
        f"{more} (containers: {known}). Add a container whose URL prefix covers them, e.g. "
        f"config.set_virtual_chunk_container(icechunk.VirtualChunkContainer({prefix!r}, "
        f"{store})) on the repository's config (then repo.save_config()), and read with "
        f"authorize_virtual_chunk_access={{{prefix!r}: None}}; on the command line: "
        f"dafzarr refs publish ... --container {prefix}"
    )


def _suggested_container(urls: list[str]) -> tuple[str, str]:
    """A URL prefix covering ``urls`` (their common directory, or bucket, or host) and the
    Icechunk object store expression of a container for it."""
    parts = [urlsplit(u) for u in urls]
    scheme = parts[0].scheme
    if scheme == "file" and all(p.scheme == "file" for p in parts):
        common = os.path.commonpath([os.path.dirname(unquote(p.path)) for p in parts])
        prefix = Path(common).as_uri().rstrip("/") + "/"
        return prefix, f"icechunk.local_filesystem_store({common!r})"
    base = f"{scheme}://{parts[0].netloc}/"
    store = {
        "s3": "icechunk.s3_store(region=...)",
        "gs": "icechunk.gcs_store()",
        "gcs": "icechunk.gcs_store()",
        "http": "icechunk.http_store()",
        "https": "icechunk.http_store()",
    }.get(scheme, "<an icechunk object store>")
    return base, store


def _check_destination(store: Any, source: RefsSource, prefix: str, overwrite: bool) -> None:
    """Refuse arrays already in the destination (without ``overwrite``), and nodes of the
    other kind (a group where an array goes, or the reverse)."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    async def node_type(path: str) -> str | None:
        buf = await store.get(_join(path, "zarr.json"), default_buffer_prototype())
        return None if buf is None else str(json.loads(buf.to_bytes()).get("node_type"))

    async def all_types(paths: list[str]) -> list[str | None]:
        return list(await asyncio.gather(*(node_type(p) for p in paths)))

    arrays = [_join(prefix, a.name) for a in source.arrays]
    groups = [_join(prefix, g) for g in source.groups]
    for path, kind in zip(arrays, sync(all_types(arrays)), strict=True):
        if kind == "array" and not overwrite:
            raise InvalidArgumentError(
                f"the Icechunk store has an array {path!r} already: pass overwrite=True "
                "(--overwrite) to replace it, or publish into another group"
            )
        if kind == "group":
            raise InvalidArgumentError(f"the Icechunk store has a group where array {path!r} goes")
    for path, kind in zip(groups, sync(all_types(groups)), strict=True):
        if kind == "array":
            raise InvalidArgumentError(f"the Icechunk store has an array where group {path!r} goes")


# --- Writing pass ----------------------------------------------------------------------------
class _ValuesFile:
    """The store's ``values.bin``, open while publishing (its chunks become native ones)."""

    def __init__(self, source: RefsSource) -> None:
        self.url = source.values_url
        self.path = source.values_path
        self.fd = -1

    def __enter__(self) -> Self:
        if self.path is not None:
            self.fd = os.open(self.path, os.O_RDONLY)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def read(self, offset: int, size: int) -> bytes:
        if self.fd < 0:
            raise InvalidArgumentError(f"the reference store's {self.url} is missing")
        data = os.pread(self.fd, size, offset)
        if len(data) != size:
            raise InvalidArgumentError(f"{self.path}: {size} bytes at {offset} are past its end")
        return data


def _write_groups(store: Any, source: RefsSource, prefix: str) -> None:
    """The destination group and its parents, then the store's groups with their attributes."""
    import zarr

    parts = prefix.split("/") if prefix else []
    for depth in range(len(parts)):
        zarr.open_group(store, path="/".join(parts[:depth]), mode="a", zarr_format=3)
    for g in sorted(source.groups, key=lambda p: (p.count("/") + bool(p), p)):
        node = zarr.open_group(store, path=_join(prefix, g), mode="a", zarr_format=3)
        if source.groups[g]:
            node.attrs.update(source.groups[g])


def _write_array(
    store: Any, a: ArrayRefs, path: str, kwargs: dict[str, Any], overwrite: bool,
    values: _ValuesFile, bar: Progress, checksum: datetime.datetime,
) -> int:  # fmt: skip
    """The array's metadata, then its chunks batch by batch; the virtual references written.

    The next batch is read and its references built in a helper thread while Icechunk
    (which releases the GIL) takes the current one: two batches in memory at most.
    """
    import zarr

    with warnings.catch_warnings():
        # numcodecs codecs and fixed-length strings are not in the Zarr v3 core spec
        warnings.simplefilter("ignore")
        zarr.create_array(store, name=path, overwrite=overwrite, zarr_format=3, **kwargs)
    shape = tuple(a.zarray["shape"])
    grid = tuple(-(-s // c) for s, c in zip(shape, a.zarray["chunks"], strict=True))
    prepared = _prepared(a, grid, values, checksum)
    written = 0
    with ThreadPoolExecutor(1, thread_name_prefix="dafzarr-publish") as pool:
        pending = pool.submit(next, prepared, None)
        while (item := pending.result()) is not None:
            pending = pool.submit(next, prepared, None)
            start, native, specs = item
            if native:
                _set_native(store, path, grid, start, native)
            if specs:
                failed = store.set_virtual_refs(path, specs, validate_containers=True)
                if failed:
                    raise InvalidArgumentError(  # the checking pass makes this unreachable
                        f"array {path!r}: Icechunk refused the references of chunks {failed[:5]}"
                    )
                written += len(specs)
            bar.step(len(specs) + len(native))
    return written


def _prepared(
    a: ArrayRefs, grid: tuple[int, ...], values: _ValuesFile, checksum: datetime.datetime
) -> Iterator[tuple[int, dict[int, bytes], list[Any]]]:
    """Each batch of ``a`` as (first chunk, native chunks by row, virtual chunk specs)."""
    import icechunk

    for b in a.batches():
        native = _native_chunks(b, values)
        virtual = b.path_index >= 0
        for row in native:
            virtual[row] = False
        rows = np.flatnonzero(virtual)
        specs: list[Any] = []
        if rows.size:
            coords: Iterable[list[int]] = (
                np.stack(np.unravel_index(rows + b.start, grid), axis=1).tolist()
                if grid
                else repeat([], rows.size)
            )
            idx = b.path_index[rows].tolist()
            stamps = [checksum if urlsplit(u).scheme in _TIMED else None for u in b.paths]
            specs = list(
                map(
                    icechunk.VirtualChunkSpec,
                    coords,
                    [b.paths[i] for i in idx],
                    b.offset[rows].tolist(),
                    b.size[rows].tolist(),
                    repeat(None),
                    [stamps[i] for i in idx],
                )
            )
        yield b.start, native, specs


def _native_chunks(b: Batch, values: _ValuesFile) -> dict[int, bytes]:
    """Rows of the batch written as native chunks: inlined bytes, and ``values.bin`` chunks."""
    native = dict(b.raw)
    if values.url is not None and values.url in b.paths:
        k = b.paths.index(values.url)
        for row in np.flatnonzero(b.path_index == k).tolist():
            native[row] = values.read(int(b.offset[row]), int(b.size[row]))
    return native


def _set_native(
    store: Any, path: str, grid: tuple[int, ...], start: int, chunks: dict[int, bytes]
) -> None:
    """Write chunk bytes (already encoded by the array's codecs) under their v3 keys."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    proto = default_buffer_prototype()

    def key(row: int) -> str:
        if not grid:
            return f"{path}/c"
        return f"{path}/c/" + "/".join(str(int(i)) for i in np.unravel_index(start + row, grid))

    async def put() -> None:
        await asyncio.gather(
            *(store.set(key(r), proto.buffer.from_bytes(data)) for r, data in chunks.items())
        )

    sync(put())


def _publication_time() -> datetime.datetime:
    """Now, up to the next whole second plus one (Icechunk keeps whole seconds): a file
    written just before still reads, one modified after publication does not."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return now + datetime.timedelta(seconds=2)
