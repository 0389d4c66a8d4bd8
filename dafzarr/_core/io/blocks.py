"""A byte source as a read-only file, through a cache of large blocks fetched by ranges.

Libraries that want a file object (h5py's ``fileobj`` driver, say) read remote objects
through :class:`BlockReader`: every read is served from fixed-size blocks, missing blocks
are fetched in as few ranged requests as they allow (neighbours merged, up to
:data:`~._object.CONCURRENCY` requests at once), and every fetch is pinned to the version
seen at open, so an object replaced mid-read raises instead of mixing two generations.

A scan of a collection visits the same places in each file (the superblock, the object
headers, the chunk indexes). :meth:`BlockReader.layout` records where a reader went, and
:meth:`BlockReader.prefetch` fetches those places of the next file in one go, from another
thread, before anything asks for them.

h5py holds its global lock for the whole of each HDF5 call, reads through a
:class:`BlockReader` included, and h5py's objects take that lock when they are freed. A
read waits for a worker thread (:mod:`._workers`); if a garbage collection started in that
worker frees an h5py object, each thread holds what the other needs, and the read fails at
its deadline. So whoever reads a :class:`BlockReader` through h5py holds
:func:`collection_paused` meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import io
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgumentError, TruncatedDataError
from .source import ByteSource

__all__ = ["BLOCK_SIZE", "BlockLayout", "BlockReader", "ReadStats", "collection_paused"]

#: Bytes per block, the unit of caching and of learned layouts: small, so that a prefetch
#: of what a scan read brings little else.
BLOCK_SIZE = 16 << 10
#: Bytes a read that misses fetches from where it starts (the blocks not cached): large,
#: so that a file read for the first time takes few requests.
READAHEAD = 256 << 10
#: Most bytes one reader keeps (least recently used blocks go first).
MAX_CACHED = 64 << 20
#: Blocks of a learned layout: what :meth:`BlockReader.prefetch` fetches at most.
MAX_LAYOUT_BLOCKS = 1024
#: Uncached blocks between two wanted ones that a prefetch fetches too, saving a request.
_GAP = 4


_pause_lock = threading.Lock()
_pausing = 0  # threads inside collection_paused()
_was_enabled = False


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic garbage collection paused in the whole process while inside (see the module
    doc); calls may nest and overlap across threads. The last to leave enables it again if it
    was enabled when the first came in. ``gc.collect()`` still collects."""
    global _pausing, _was_enabled
    with _pause_lock:
        if _pausing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausing += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pausing -= 1
            if _pausing == 0 and _was_enabled:
                gc.enable()


@dataclass(frozen=True)
class BlockLayout:
    """Where in a file a reader went: block numbers from the start, and from the end (a
    file's tail moves with its size; its head does not)."""

    block_size: int
    from_start: tuple[int, ...]
    from_end: tuple[int, ...]

    def blocks(self, size: int) -> list[int]:
        """The blocks these places are in a file of ``size`` bytes."""
        n = -(-size // self.block_size)
        wanted = {b for b in self.from_start if b < n}
        wanted.update(n - 1 - b for b in self.from_end if b < n)
        return sorted(wanted)


@dataclass(frozen=True)
class ReadStats:
    """What a reader read (blocks asked for) and fetched (requests, bytes)."""

    touched: frozenset[int]
    requests: int
    fetched: int


class BlockReader(io.RawIOBase):
    """``source`` as a seekable, read-only raw file (see module doc).

    :attr:`requests` and :attr:`fetched` count the ranged reads made and the bytes they
    brought. Thread-safe: :meth:`prefetch` may run in another thread than the reads.
    """

    def __init__(
        self,
        source: ByteSource,
        *,
        block_size: int = BLOCK_SIZE,
        max_cached: int = MAX_CACHED,
        readahead: int = READAHEAD,
    ) -> None:
        super().__init__()
        if block_size <= 0 or max_cached < block_size:
            raise InvalidArgumentError(
                f"block_size ({block_size}) must be positive and at most max_cached ({max_cached})"
            )
        self.source = source
        self.name = source.where
        head = source.head()
        self.size = head.size
        self.version = head.version
        self.block_size = block_size
        self._max_blocks = max(1, max_cached // block_size)
        self._ahead = max(1, min(readahead, max_cached // 4) // block_size)
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._touched: set[int] = set()
        self._lock = threading.RLock()
        self._pos = 0
        self.requests = 0
        self.fetched = 0
        #: The first read that failed: a library reading through this file (HDF5) may
        #: report only that "a read failed"; this is why.
        self.failure: BaseException | None = None

    # --- pickling: a reader goes to another process with the blocks it holds -------------

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            blocks = dict(self._blocks)
            touched = set(self._touched)
        return {
            "source": self.source, "size": self.size, "version": self.version,
            "block_size": self.block_size, "max_blocks": self._max_blocks,
            "ahead": self._ahead, "blocks": blocks, "touched": touched,
        }  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__init__()
        self.source = state["source"]
        self.name = self.source.where
        self.size = state["size"]
        self.version = state["version"]
        self.block_size = state["block_size"]
        self._max_blocks = state["max_blocks"]
        self._ahead = state["ahead"]
        self._blocks = OrderedDict(state["blocks"])
        self._touched = set(state["touched"])
        self._lock = threading.RLock()
        self._pos = 0
        self.requests = 0
        self.fetched = 0
        self.failure = None

    def stats(self) -> ReadStats:
        """What this reader read and fetched so far."""
        with self._lock:
            return ReadStats(frozenset(self._touched), self.requests, self.fetched)

    def learn(self, stats: ReadStats) -> None:
        """Count what a copy of this reader (in another process, say) read and fetched
        since it was copied."""
        with self._lock:
            self._touched.update(stats.touched)
            self.requests += stats.requests
            self.fetched += stats.fetched

    # --- io.RawIOBase ---------------------------------------------------------------------

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise InvalidArgumentError(f"invalid whence ({whence})")
        if pos < 0:
            raise InvalidArgumentError(f"{self.name}: negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, buffer: Any) -> int:
        """Fill ``buffer`` from the current position (fewer bytes only at the end)."""
        try:
            return self._readinto(memoryview(buffer).cast("B"))
        except BaseException as exc:
            if self.failure is None:
                self.failure = exc
            raise

    def _readinto(self, out: memoryview) -> int:
        start = min(self._pos, self.size)
        stop = min(start + len(out), self.size)
        if stop <= start:
            return 0
        bs = self.block_size
        first, last = start // bs, (stop - 1) // bs
        if last - first >= self._max_blocks // 2:  # more than the cache should hold
            direct = memoryview(self.source.read(start, stop, version=self.version))
            if len(direct) != stop - start:
                raise TruncatedDataError(f"{self.name}: {len(direct)} bytes for [{start}, {stop})")
            out[: stop - start] = direct
            with self._lock:
                self.requests += 1
                self.fetched += stop - start
            self._pos = stop
            return stop - start
        blocks = self._get(range(first, last + 1))
        done = 0
        for b, data in zip(range(first, last + 1), blocks, strict=True):
            lo = max(start, b * bs) - b * bs
            hi = min(stop, (b + 1) * bs) - b * bs
            out[done : done + hi - lo] = data[lo:hi]
            done += hi - lo
        self._pos = stop
        return done

    # --- blocks ---------------------------------------------------------------------------

    def prefetch(self, blocks: Iterable[int]) -> None:
        """Fetch these blocks now (the ones not cached), in as few requests as they allow."""
        n = -(-self.size // self.block_size)
        wanted = sorted({b for b in blocks if 0 <= b < n})[: self._max_blocks // 2]
        with self._lock:
            missing = [b for b in wanted if b not in self._blocks]
            filled: list[int] = []
            for b in missing:  # close small gaps: one request instead of two
                if filled and b - filled[-1] <= _GAP + 1:
                    filled.extend(g for g in range(filled[-1] + 1, b) if g not in self._blocks)
                filled.append(b)
        self._fetch(filled)

    def layout(self) -> BlockLayout:
        """The places read so far (at most :data:`MAX_LAYOUT_BLOCKS` blocks), for
        :meth:`prefetch` on files laid out alike."""
        n = -(-self.size // self.block_size)
        with self._lock:
            touched = sorted(self._touched)[:MAX_LAYOUT_BLOCKS]
        head = tuple(b for b in touched if b < n // 2)
        tail = tuple(n - 1 - b for b in touched if b >= n // 2)
        return BlockLayout(self.block_size, head, tail)

    def _get(self, wanted: range) -> list[bytes]:
        with self._lock:
            self._touched.update(wanted)
            missing = [b for b in wanted if b not in self._blocks]
            if missing:  # and read ahead, up to the next cached block
                n = -(-self.size // self.block_size)
                for b in range(missing[-1] + 1, min(n, missing[0] + self._ahead)):
                    if b in self._blocks:
                        break
                    missing.append(b)
        if missing:
            self._fetch(missing)
        with self._lock:
            out = []
            for b in wanted:
                data = self._blocks.get(b)
                if data is None:  # evicted by a concurrent fetch: read it again
                    self._keep(self._read([b]))
                    data = self._blocks[b]
                self._blocks.move_to_end(b)
                out.append(data)
            return out

    def _fetch(self, blocks: list[int]) -> None:
        if blocks:
            fetched = self._read(blocks)
            with self._lock:
                self._keep(fetched)

    def _read(self, blocks: list[int]) -> dict[int, bytes]:
        """Read ``blocks`` (sorted) in merged ranges; the bytes of each block."""
        bs = self.block_size
        runs: list[list[int]] = []
        for b in blocks:
            if runs and b == runs[-1][-1] + 1:
                runs[-1].append(b)
            else:
                runs.append([b])
        ranges = [(run[0] * bs, min((run[-1] + 1) * bs, self.size)) for run in runs]
        bodies = self.source.read_ranges(ranges, version=self.version)
        out: dict[int, bytes] = {}
        for run, (lo, hi), data in zip(runs, ranges, bodies, strict=True):
            view = memoryview(data)
            if len(view) != hi - lo:  # every source promises exact lengths: never trust it
                raise TruncatedDataError(f"{self.name}: {len(view)} bytes for [{lo}, {hi})")
            for b in run:
                out[b] = bytes(view[b * bs - lo : min((b + 1) * bs, self.size) - lo])
        with self._lock:
            self.requests += len(ranges)
            self.fetched += sum(hi - lo for lo, hi in ranges)
        return out

    def _keep(self, fetched: dict[int, bytes]) -> None:
        for b, data in fetched.items():
            self._blocks[b] = data
            self._blocks.move_to_end(b)
        while len(self._blocks) > self._max_blocks:
            self._blocks.popitem(last=False)

    def close(self) -> None:
        """Drop the cached blocks (the source stays open: its owner closes it)."""
        with self._lock:
            self._blocks.clear()
        super().close()
