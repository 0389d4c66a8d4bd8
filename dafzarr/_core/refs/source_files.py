"""The files of a virtual dataset (access paths and public URLs), and scanning them all.

:func:`scan_many` scans one file at a time or several at once (each in a helper process
with its own deadline), or on a dask cluster (one task per file, Arrow tables sent back).
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...errors import IncompatibleSourcesError, InvalidArgumentError
from ..progress import Progress as _Progress
from .deadline import map_with_deadline
from .model import OnUnsupported, ScanResult, file_url
from .remote import WINDOW, PrefetchedReaders, remote_path
from .scan import DEFAULT_TIMEOUT, check_timeout, scan, scan_path, scan_reader, scan_target

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

    Raises
    ------
    InvalidArgumentError
        ``access`` and ``public`` differ in length, or one of them lists a path twice.
    IncompatibleSourcesError
        With ``check_sizes``: a local ``public`` copy differs in size from its ``access``
        copy (the byte offsets would not match).

    Examples
    --------
    Scan a local mirror, reference the public copies:

    >>> t = dafzarr.refs.mosaic_sources(["mirror/day0.nc", "mirror/day1.nc"],
    ...                                 ["https://data.example.org/sst/day0.nc",
    ...                                  "https://data.example.org/sst/day1.nc"])
    >>> t.column_names, t.column("public")[1].as_py()
    (['access', 'public'], 'https://data.example.org/sst/day1.nc')
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
            if (public is None and "://" not in a) or remote_path(a):
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
def _scan_table(
    access: str,
    public: str,
    on_unsupported: OnUnsupported,
    timeout: float | None,
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
) -> pa.Table:
    """Scan one file into one Arrow table (what is sent back from a dask cluster)."""
    return scan(
        access,
        url=public,
        on_unsupported=on_unsupported,
        timeout=timeout,
        storage_options=storage_options,
        store=store,
    ).to_arrow()


def _scan_stream(
    access: Sequence[str], public: Sequence[str], on_unsupported: OnUnsupported,
    timeout: float | None, storage_options: Mapping[str, Any] | None = None,
    store: Any = None, in_flight: int = WINDOW, processes: int | None = None,
) -> Iterator[ScanResult]:  # fmt: skip
    """Scans of several files in order: in one helper, a few files queued ahead (see
    :func:`~dafzarr._core.refs.deadline.map_with_deadline`), each with its own deadline; remote
    files prefetched ahead in threads (see :class:`~dafzarr._core.refs.remote.PrefetchedReaders`)."""
    if any(remote_path(a, store) for a in access):
        yield from _scan_with_remote(
            access,
            public,
            on_unsupported,
            timeout,
            storage_options,
            store,
            in_flight,
            processes or REMOTE_SCAN_PROCESSES,
        )
        return
    if timeout is None:
        for a, p in zip(access, public, strict=True):
            yield scan(a, url=p, on_unsupported=on_unsupported, timeout=None)
        return
    calls: list[tuple[tuple[Any, ...], dict[str, Any], str]] = [
        ((a, p, None, on_unsupported), {}, a) for a, p in zip(access, public, strict=True)
    ]
    yield from map_with_deadline(scan_path, calls, timeout=timeout)


def _scan_with_remote(
    access: Sequence[str], public: Sequence[str], on_unsupported: OnUnsupported,
    timeout: float | None, storage_options: Mapping[str, Any] | None, store: Any,
    in_flight: int, processes: int,
) -> Iterator[ScanResult]:  # fmt: skip
    """As ``_scan_stream`` for files some of which are remote.

    The first remote file is scanned alone: the blocks it read are the ones the next files
    fetch ahead. The others go to ``processes`` helper processes, queued
    ahead as soon as their blocks have arrived, so that neither the network nor a helper
    waits for the other."""
    remote = [a for a in access if remote_path(a, store)]
    prefetched = PrefetchedReaders(remote, storage_options, store, window=in_flight)
    readers = prefetched.readers()
    items = list(zip(access, public, strict=True))
    try:
        taught = 0  # files up to the first remote one, scanned one after another
        for a, p in items:
            taught += 1
            if not remote_path(a, store):
                yield scan(a, url=p, on_unsupported=on_unsupported, timeout=timeout)
                continue
            reader = next(readers)
            yield scan_reader(reader, url=p, on_unsupported=on_unsupported, timeout=timeout)
            prefetched.teach(reader)
            if timeout is not None:
                break
        if taught == len(items):
            return
        if timeout is None:
            for a, p in items[taught:]:
                if remote_path(a, store):
                    yield scan_reader(
                        next(readers), url=p, on_unsupported=on_unsupported, timeout=None
                    )
                else:
                    yield scan(a, url=p, on_unsupported=on_unsupported, timeout=None)
            return
        targets: collections.deque[Any] = collections.deque()

        def calls() -> Iterator[tuple[tuple[Any, ...], dict[str, Any], str]]:
            for a, p in items[taught:]:
                target = next(readers) if remote_path(a, store) else a
                targets.append(target)
                yield (target, p, None, on_unsupported), {}, a

        for result, stats in map_with_deadline(
            scan_target, calls(), timeout=timeout, helpers=processes
        ):
            target = targets.popleft()
            if stats is not None:
                target.learn(stats)
                prefetched.teach(target)
            yield result
    finally:
        readers.close()  # stops the prefetching of files left unscanned


#: Helper processes that scan the files of a remote collection at once (their blocks are
#: fetched ahead, :data:`~dafzarr._core.refs.remote.WINDOW` files at a time, in threads).
REMOTE_SCAN_PROCESSES = max(1, min(2, os.cpu_count() or 1))


# Files per task of workers=N: enough tasks per worker to balance the load, enough files per
# task that queueing them ahead in one helper pays.
_BATCH_MAX = 16
_TASKS_PER_WORKER = 4


def _is_dask_client(obj: Any) -> bool:
    return hasattr(obj, "map") and hasattr(obj, "gather") and hasattr(obj, "scheduler_info")


def scan_many(
    sources: Any,
    *,
    workers: Any = None,
    progress: bool = True,
    on_unsupported: OnUnsupported = "raise",
    timeout: float | None = DEFAULT_TIMEOUT,
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
    in_flight: int = WINDOW,
) -> list[ScanResult]:
    """Scan every source file, in the order of ``sources``.

    ``workers=None`` or ``1`` scans one file at a time; ``workers=N`` keeps N scans going at
    once; a ``dask.distributed.Client`` runs the scans on its cluster, one task per file, and
    only Arrow tables travel back. Each file's scan runs in a reused scanner process with
    its own deadline of ``timeout`` seconds (see :func:`dafzarr.refs.scan`), so N workers
    are N scanner processes. Sources may be ``http(s)://`` and ``s3://`` URLs, reached with
    ``storage_options`` or through an obstore ``store`` (as for :func:`~dafzarr.refs.scan`).

    A collection of remote files is bound by the network's latency, not by the scans: the
    next ``in_flight`` files (default 16) are opened and their metadata fetched ahead, in
    threads, while earlier ones are scanned: requests in flight at once are bounded by
    ``in_flight`` + 1 (a file being scanned reads what was not fetched ahead one request at a
    time; a file ahead makes its HEAD, then fetches the blocks the first file's scan read in
    one ranged request). The scans themselves go to up to
    :data:`REMOTE_SCAN_PROCESSES` scanner processes (2 where the machine has 2 cores or
    more), files queued ahead in each.

    Parameters
    ----------
    sources
        File paths or URLs, or a :func:`mosaic_sources` table (``access`` scanned, ``public``
        written into the references).
    workers
        ``None`` or 1: one file at a time; N: N files at once (N scanner processes); a
        ``dask.distributed.Client``: scan on its cluster.
    progress
        Show a progress bar on stderr.
    on_unsupported, timeout, storage_options, store
        As for :func:`~dafzarr.refs.scan` (``timeout``: seconds per file).
    in_flight
        Remote files opened and fetched ahead of the one being scanned (default 16).

    Returns
    -------
    list of ScanResult
        One per source, in the order of ``sources``.

    Raises
    ------
    InvalidArgumentError
        A ``workers`` that is neither ``None``, an int >= 1 nor a dask ``Client``; an
        ``in_flight`` that is not an int >= 1; a sources table without the columns
        ``access`` and ``public``; as for :func:`~dafzarr.refs.scan`.
    UnsupportedHDF5Error, H5Error, ScanTimeoutError, HttpReadError
        As for :func:`~dafzarr.refs.scan`, naming the file at fault.

    Examples
    --------
    Two files of two time steps each, ``time`` a dimension scale (as netCDF4 writes it):

    >>> import h5py
    >>> for day in range(2):
    ...     with h5py.File(f"day{day}.nc", "w") as f:
    ...         f["time"] = [day + 0.0, day + 0.5]
    ...         f["time"].make_scale("time")
    ...         sst = f.create_dataset("sst", data=np.full(2, day, "f4"), chunks=(1,))
    ...         sst.dims[0].attach_scale(f["time"])
    >>> scans = dafzarr.refs.scan_many(["day0.nc", "day1.nc"], progress=False)
    >>> [s.path for s in scans], [s.coords["time"].tolist() for s in scans]
    (['day0.nc', 'day1.nc'], [[0.0, 0.5], [1.0, 1.5]])
    """
    check_timeout(timeout)
    if isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 1:
        raise InvalidArgumentError(f"in_flight must be an int >= 1: {in_flight!r}")
    local = workers is not None and not _is_dask_client(workers)
    if local and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidArgumentError(
            f"workers must be None, an int >= 1 or a dask Client: {workers!r}"
        )
    table = sources_table(sources)
    access = table.column("access").to_pylist()
    public = table.column("public").to_pylist()
    with _Progress(len(access), "scanning", progress) as bar:
        results: list[ScanResult | None] = [None] * len(access)
        if _is_dask_client(workers):
            futures = workers.map(
                _scan_table, access, public, on_unsupported=on_unsupported, timeout=timeout,
                storage_options=storage_options, store=store, pure=False,
            )  # fmt: skip
            import distributed

            dask_completed: Any = distributed.as_completed

            index = {f.key: i for i, f in enumerate(futures)}
            for fut in dask_completed(futures):
                results[index[fut.key]] = ScanResult.from_arrow(fut.result())
                bar.step()
        elif workers is None or workers == 1:
            stream = _scan_stream(
                access, public, on_unsupported, timeout, storage_options, store, in_flight
            )
            for i, r in enumerate(stream):
                results[i] = r
                bar.step()
        else:
            # Threads only wait: files are scanned in helper processes (one per thread), in
            # batches of files queued ahead.
            n = len(access)
            batch = max(1, min(_BATCH_MAX, -(-n // (workers * _TASKS_PER_WORKER))))

            def run(start: int) -> list[ScanResult]:
                stop = start + batch
                return list(
                    _scan_stream(
                        access[start:stop],
                        public[start:stop],
                        on_unsupported,
                        timeout,
                        storage_options,
                        store,
                        max(1, in_flight // workers),
                        1,
                    )
                )

            with ThreadPoolExecutor(max_workers=workers) as ex:
                futs = {ex.submit(run, start): start for start in range(0, n, batch)}
                try:
                    for fut in as_completed(futs):
                        done = fut.result()
                        start = futs[fut]
                        results[start : start + len(done)] = done
                        bar.step(len(done))
                except BaseException:
                    for f in futs:
                        f.cancel()
                    raise
    return [r for r in results if r is not None]
