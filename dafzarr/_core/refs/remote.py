"""Scanning files on HTTP(S) servers and in object stores.

HDF5 reads a remote file through h5py's ``fileobj`` driver over a
:class:`~dafzarr._core.io.BlockReader`: only the blocks holding what the scan reads (superblock,
object headers, chunk indexes, small coordinate values) are fetched, never the chunks of
data. Across a collection, :class:`PrefetchedReaders` opens the next files in threads and
fetches, before the scan asks, the blocks the previous file's scan needed: files written by
one program keep their metadata in the same places, so most of a file arrives in one round of
concurrent requests while the previous file is being scanned.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ...errors import DafzarrError, H5Error
from ..io.blocks import BlockLayout, BlockReader, collection_paused
from ..io.urls import is_remote, open_source

__all__ = ["PrefetchedReaders", "open_reader", "opened_h5", "remote_path"]

#: Files opened and prefetched ahead of the one being scanned.
WINDOW = 16


def remote_path(path: str, store: Any = None) -> bool:
    """Whether ``path`` is read remotely: a URL other than ``file://``, or a key of
    ``store``."""
    return store is not None or is_remote(path)


def open_reader(
    path: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    store: Any = None,
) -> BlockReader:
    """A block reader of the remote file ``path``."""
    return BlockReader(open_source(path, storage_options=storage_options, store=store))


def _open_h5(reader: BlockReader) -> Any:
    """The HDF5 file identifier of a remote file read through ``reader``."""
    import h5py

    try:
        return h5py.File(reader, "r").id
    except OSError as exc:
        if reader.failure is exc:
            raise
        if reader.failure is not None:  # HDF5 reports a failed read without its cause
            raise reader.failure from exc
        raise H5Error(f"{reader.name}: HDF5 cannot open the file: {exc}") from exc


@contextlib.contextmanager
def opened_h5(reader: BlockReader) -> Iterator[Any]:
    """The HDF5 file identifier of a remote file read through ``reader``, closed on the way
    out; automatic garbage collection is paused meanwhile (h5py reads through ``reader``
    holding its global lock: see :mod:`dafzarr._core.io.blocks`)."""
    with collection_paused():
        fid = _open_h5(reader)
        try:
            yield fid
        finally:
            fid.close()


class PrefetchedReaders:
    """Block readers of remote files, in order, each opened and prefetched ahead in threads.

    Iterate to get each file's reader; the reader's :meth:`~BlockReader.layout` after its
    scan decides what the files after it fetch ahead. At most :data:`WINDOW` files are open
    at once, so memory does not grow with the number of files.
    """

    def __init__(
        self,
        paths: Sequence[str],
        storage_options: Mapping[str, Any] | None = None,
        store: Any = None,
        window: int = WINDOW,
    ) -> None:
        self.paths = list(paths)
        self.storage_options = storage_options
        self.store = store
        self.window = max(1, window)
        self.layout: BlockLayout | None = None
        self.requests = 0
        self.fetched = 0

    def _open(self, i: int, learned: threading.Event) -> BlockReader:
        """Open file ``i`` now; once a scan has taught a layout, prefetch it."""
        reader = BlockReader(
            open_source(self.paths[i], storage_options=self.storage_options, store=self.store)
        )
        if i:
            learned.wait()
            layout = self.layout
            if layout is not None:
                reader.prefetch(layout.blocks(reader.size))
        return reader

    def teach(self, reader: BlockReader) -> None:
        """Let the files not yet opened fetch ahead what ``reader``'s scan read (a reader
        not scanned yet, or whose scan read nothing, teaches nothing)."""
        layout = reader.layout()
        if layout.from_start or layout.from_end:
            self.layout = layout

    def __iter__(self) -> Iterator[BlockReader]:
        return self.readers()

    def readers(self) -> Generator[BlockReader, None, None]:
        """The readers, in order; ``close()`` the generator to stop early (pending
        prefetches are dropped)."""
        n = len(self.paths)
        learned = threading.Event()  # set once a scan taught a layout (or on the way out)
        with ThreadPoolExecutor(self.window, thread_name_prefix="dafzarr-prefetch") as pool:
            pending: dict[int, Future[BlockReader]] = {}
            submitted = 0
            try:
                for i in range(n):
                    # Ahead: the next files open at once, and prefetch once a layout is known.
                    while submitted < min(n, i + self.window + 1):
                        pending[submitted] = pool.submit(self._open, submitted, learned)
                        submitted += 1
                    reader = pending.pop(i).result()
                    try:
                        yield reader
                        self.teach(reader)
                        learned.set()
                    finally:
                        self.requests += reader.requests
                        self.fetched += reader.fetched
                        reader.close()
            finally:
                learned.set()  # releases the tasks waiting for a layout
                for fut in pending.values():
                    fut.cancel()
                for fut in pending.values():
                    if not fut.cancelled():
                        # an abandoned file's failure is not the caller's
                        with contextlib.suppress(DafzarrError, OSError, ValueError):
                            fut.result().close()
