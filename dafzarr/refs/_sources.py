"""The files of a virtual dataset (access paths and public URLs), and scanning them all.

:func:`scan_many` scans in this process, in local worker processes (files handed out in
batches), or on a dask cluster (one task per file, Arrow tables sent back). Remote files
(``http(s)://``, ``s3://``) are read through block caches, the next files prefetched in
threads while one is scanned (see :mod:`._remote`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._progress import Progress as _Progress
from ..errors import IncompatibleSourcesError, InvalidArgumentError
from ._model import OnUnsupported, ScanResult, file_url
from ._remote import PrefetchedReaders, is_remote
from ._scan import scan, scan_reader

__all__ = ["mosaic_sources", "scan_many", "sources_table"]


# --- Sources ---------------------------------------------------------------------------------
def _as_url(path: str) -> str:
    return path if "://" in path else file_url(path)


def mosaic_sources(
    access: Sequence[str | os.PathLike[str]],
    public: Sequence[str] | None = None,
    *,
    check_sizes: bool = True,
) -> pa.Table:
    """The sources of a virtual dataset: what is opened and what is referenced.

    Parameters
    ----------
    access
        Local paths that are opened and scanned (a fast mirror of the data, say).
    public
        Durable URLs written into the references, one per ``access`` path (default: the
        ``file://`` URLs of ``access``). Byte offsets are identical in every copy of a file.
    check_sizes
        When a ``public`` URL is a local ``file://`` path, check that it exists with the same
        size as its ``access`` copy.

    Returns
    -------
    pyarrow.Table
        Columns ``access`` and ``public`` (strings), one row per file.
    """
    acc = [os.fspath(a) for a in access]
    pub = [_as_url(a) for a in acc] if public is None else [str(p) for p in public]
    if len(pub) != len(acc):
        raise InvalidArgumentError(f"{len(acc)} access paths but {len(pub)} public URLs")
    for label, items in (("access path", acc), ("public URL", pub)):
        seen: set[str] = set()
        for item in items:
            if item in seen:
                raise InvalidArgumentError(f"{label} {item!r} is listed twice")
            seen.add(item)
    if check_sizes:
        for a, p in zip(acc, pub, strict=True):
            if (public is None and "://" not in a) or is_remote(a):
                continue  # p is file_url(a), or a is not a local file
            if p.startswith("file://") and p != file_url(a):
                local = Path(p.removeprefix("file://"))
                if local.exists() and local.stat().st_size != Path(a).stat().st_size:
                    raise IncompatibleSourcesError(
                        f"{a} and its public copy {p} differ in size: offsets would not match"
                    )
    return pa.table({"access": pa.array(acc, pa.string()), "public": pa.array(pub, pa.string())})


def sources_table(sources: Any) -> pa.Table:
    """``sources`` as a :func:`mosaic_sources` table (paths, or a table with its columns)."""
    if isinstance(sources, pa.Table):
        if not {"access", "public"} <= set(sources.column_names):
            raise InvalidArgumentError("a sources table needs the columns 'access' and 'public'")
        return sources
    if isinstance(sources, str | os.PathLike):
        sources = [sources]
    return mosaic_sources(list(sources))


# --- Scanning many files ------------------------------------------------------------------
def _scan_in_order(
    access: list[str],
    public: list[str],
    on_unsupported: OnUnsupported,
    storage_options: Mapping[str, Any] | None,
    store: Any,
    done: Callable[[int], None] | None = None,
) -> list[ScanResult]:
    """Scan the files one after the other in this process, the remote ones prefetched ahead."""
    remote = [i for i, a in enumerate(access) if store is not None or is_remote(a)]
    readers = PrefetchedReaders([access[i] for i in remote], storage_options, store).readers()
    out = []
    try:
        for i, (a, p) in enumerate(zip(access, public, strict=True)):
            if remote and remote[0] == i:
                remote.pop(0)
                result = scan_reader(next(readers), url=p, on_unsupported=on_unsupported)
            else:
                result = scan(a, url=p, on_unsupported=on_unsupported)
            out.append(result)
            if done is not None:
                done(1)
    finally:
        readers.close()  # stops the prefetching of files left unscanned
    return out


def _scan_table(
    access: str, public: str, on_unsupported: OnUnsupported,
    storage_options: Mapping[str, Any] | None = None, store: Any = None,
) -> pa.Table:
    """Scan one file into one Arrow table (what is sent back from a dask cluster)."""
    return scan(access, url=public, on_unsupported=on_unsupported,
                storage_options=storage_options, store=store).to_arrow()


def _scan_batch(
    access: list[str], public: list[str], on_unsupported: OnUnsupported,
    storage_options: Mapping[str, Any] | None = None, store: Any = None,
) -> list[ScanResult]:
    """Scan several files in a local worker process (results return pickled, in one message)."""
    return _scan_in_order(access, public, on_unsupported, storage_options, store)


# Files per task for local processes: enough tasks per worker to balance the load, few enough
# that a task costs much more than sending it and its results.
_BATCH_MAX = 64
_TASKS_PER_WORKER = 8


def _worker_context() -> BaseContext:
    """Workers forked from a single-threaded server that has imported the scanner once.

    Forking this (possibly multi-threaded) process would be unsafe; spawning imports numpy,
    h5py and pyarrow again in every worker. Where fork servers do not exist, spawn.
    """
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    # pyarrow imports pandas on first use (about a second); import it once, in the server.
    ctx.set_forkserver_preload(["dafzarr.refs._sources", "pandas"])
    return ctx


def _is_dask_client(obj: Any) -> bool:
    return hasattr(obj, "map") and hasattr(obj, "gather") and hasattr(obj, "scheduler_info")


def scan_many(
    sources: Any,
    *,
    workers: Any = None,
    progress: bool = True,
    on_unsupported: OnUnsupported = "raise",
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
) -> list[ScanResult]:
    """Scan every source file, in the order of ``sources``.

    ``workers=None`` or ``1`` scans in this process; ``workers=N`` uses N local processes
    (files handed out in batches, results sent back pickled); a ``dask.distributed.Client``
    runs the scans on its cluster, one task per file, and only Arrow tables travel back.
    Sources may be ``http(s)://`` and ``s3://`` URLs, reached with ``storage_options`` or
    through an obstore ``store`` (as for :func:`~dafzarr.refs.scan`); in one process the next
    files are fetched ahead, concurrently, while one is scanned.
    """
    table = sources_table(sources)
    access = table.column("access").to_pylist()
    public = table.column("public").to_pylist()
    with _Progress(len(access), "scanning", progress) as bar:
        results: list[ScanResult | None] = [None] * len(access)
        if _is_dask_client(workers):
            futures = workers.map(
                _scan_table, access, public, on_unsupported=on_unsupported,
                storage_options=storage_options, store=store, pure=False,
            )
            import distributed

            dask_completed: Any = distributed.as_completed

            index = {f.key: i for i, f in enumerate(futures)}
            for fut in dask_completed(futures):
                results[index[fut.key]] = ScanResult.from_arrow(fut.result())
                bar.step()
        elif workers is None or workers == 1:
            results[:] = _scan_in_order(
                access, public, on_unsupported, storage_options, store, bar.step
            )
        else:
            if not isinstance(workers, int) or workers < 1:
                raise InvalidArgumentError(
                    f"workers must be None, an int >= 1 or a dask Client: {workers!r}"
                )
            n = len(access)
            batch = max(1, min(_BATCH_MAX, -(-n // (workers * _TASKS_PER_WORKER))))
            with ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context()) as ex:
                futs = {
                    ex.submit(
                        _scan_batch, access[i : i + batch], public[i : i + batch],
                        on_unsupported, storage_options, store,
                    ): i
                    for i in range(0, n, batch)
                }
                for fut in as_completed(futs):
                    done = fut.result()
                    start = futs[fut]
                    results[start : start + len(done)] = done
                    bar.step(len(done))
    return [r for r in results if r is not None]
