"""Benchmarks of MmapZipStore against zarr's ZipStore and LocalStore, Python's zipfile,
memcpy and the CRC-32 implementations at hand.

Run from the project root::

    python -m benchmarks.bench_zipstore [--quick] [--only a,b,c,d,e] [--open-sizes 10000,100000]
        [--growth-sizes 1000,10000,100000,1000000]

Suites (each runs the peers alternately on the same data in the same process):

a. zarr v2 group of 100 x 8 MiB float64 arrays (one chunk each, no compressor, random
   data): write, warm read (also against zarr's ``MemoryStore``, and from an archive whose
   arrays were rewritten and others deleted before), and read into a reused pre-faulted
   output array; beside them, the limit a mapping sets: each chunk copied from a fresh
   mapping of the same archive against the same copies from memory.
b. ``try_mmap_entry_as`` + ``.sum()`` vs the sum of an in-memory array and ``np.copyto``
   (memcpy); cost of ``try_mmap_entry_as`` for a 1 KiB and a 1 GiB entry.
c. 100-byte appends: batched (``store[k] = v`` in a ``batch()``, and ``set_many``), singly
   (each append a commit), vs ``zipfile`` in mode "a"; c2: single commits into archives of
   10^3, 10^4 and 10^5 entries vs the limits (a pwrite and a memcpy of one directory, and
   the directory written alternately past the end and back down, as a commit that never
   stores into the live directory must); and the
   cost per append and peak memory vs archive size (10^3 to 10^6 entries, child processes).
d. one 64 MiB and one 512 MiB array appended with ``store[key] = arr`` (with all copy
   threads, and with one) vs memcpy of the same size and ``f.write`` to a new file.
e. CRC-32: the package's (ISA-L, threaded from 32 MiB) vs the project's own kernel, ``zlib``
   and ``isal`` alone; and copy-with-CRC into a mapping: the fused kernel vs copy then ISA-L.
f. ``MmapZipStore.pack`` of a 1 GiB, 10,000-file zarr directory store vs ``zip -0 -r``.
g. ``MmapZipStore.compact`` of a 512 MiB archive with as many dead bytes as live ones, vs
   a plain copy (and fsync) of the compacted archive.
h. reading DEFLATE entries written by ``zipfile`` (sparse ones, which MmapZipStore decodes
   twice, and noisy ones) vs ``zipfile.ZipFile.read``.
i. opening an archive of 10^6 tiny entries (quick: 10^5) and listing its keys, read-only
   and writable, vs ``zipfile.ZipFile(path).namelist()``; and the peak resident memory of
   each in a child process.

Speed is never asserted: the script prints absolute figures, ratios and whether the
project's targets are met. Data is random and regenerated on every run.
"""

from __future__ import annotations

import importlib.metadata
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from typing import Any, ClassVar

import numpy as np
import zarr
from isal import isal_zlib
from zarr.core.buffer import cpu
from zarr.storage import LocalStore, MemoryStore, ZipStore

import dafzarr
from dafzarr import MmapZipStore, _posix
from dafzarr._core import crc as _crc

from . import common as c

# --- Shared data -----------------------------------------------------------------------

_ARRAYS: dict[tuple[int, int], list[np.ndarray]] = {}


def zarr_dataset() -> list[np.ndarray]:
    """The suite-(a) arrays: 100 x 8 MiB float64 (quick: 20 x 1 MiB), random, per process."""
    count, n = (20, 131_072) if c.quick() else (100, 1_048_576)
    if (count, n) not in _ARRAYS:
        rng = np.random.default_rng()
        _ARRAYS.clear()
        _ARRAYS[(count, n)] = [rng.random(n) for _ in range(count)]
    return _ARRAYS[(count, n)]


def _names(count: int) -> list[str]:
    return [f"a{i:03d}" for i in range(count)]


def write_group(store: Any, arrays: list[np.ndarray]) -> None:
    g = zarr.open_group(store=store, mode="w", zarr_format=2)
    for name, x in zip(_names(len(arrays)), arrays, strict=True):
        a = g.create_array(name, shape=x.shape, chunks=x.shape, dtype=x.dtype, compressors=None)
        a[...] = x


def write_superseded_group(path: str, arrays: list[np.ndarray]) -> None:
    """:func:`write_group` into an archive whose arrays were first written with other
    values (so each chunk read is a newer copy, the older one dead), next to arrays that
    were then deleted: the state of an archive that was rewritten in place."""
    store = MmapZipStore(path, "w")
    write_group(store, [x + 1.0 for x in arrays])
    g = zarr.open_group(store=store, mode="a", zarr_format=2)
    for i, x in enumerate(arrays[: max(1, len(arrays) // 4)]):
        g.create_array(f"gone{i}", shape=x.shape, chunks=x.shape, dtype=x.dtype,
                       compressors=None)[...] = x
    for name, x in zip(_names(len(arrays)), arrays, strict=True):
        g[name][...] = x
    for i in range(max(1, len(arrays) // 4)):
        del g[f"gone{i}"]
    if store.space().dead_bytes < sum(x.nbytes for x in arrays):
        raise AssertionError("the rewritten archive holds no superseded copies")
    store.close()


def read_group(store: Any, names: list[str], out: np.ndarray | None = None) -> None:
    g: Any = zarr.open_group(store=store, mode="r", use_consolidated=False)
    if out is None:
        for name in names:
            g[name][...]
    else:
        buf = cpu.NDBuffer.from_numpy_array(out)
        for name in names:
            g[name].get_basic_selection(Ellipsis, out=buf)


_ratio_target = c.ratio_target


def chunk_spans(path: str, names: list[str]) -> list[tuple[int, int]]:
    """(offset, size) of each array's single stored chunk (``name/0``) in the archive at
    ``path``, as the store reports them."""
    with MmapZipStore(path, "r") as store:
        found = {i["name"]: (i["data_offset"], i["size"]) for i in store.info()}
    return [found[f"{name}/0"] for name in names]


_FROM_MEMORY = "limit: copy each chunk from memory"
# The row copying the same chunks from a fresh mapping of the archive each store row reads.
_FROM_MAPPING = {
    "MmapZipStore": "limit: copy each chunk from a fresh mapping",
    "MmapZipStore (arrays rewritten, others deleted)": "limit: same, of the rewritten archive",
}


def _warm_read_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    """≥ 0.95x MemoryStore, with the limit set by mapping the page cache beside it:
    MemoryStore's time plus what copying the same chunks from a fresh mapping of the same
    file (mapped, faulted in and unmapped) costs over copying them from memory."""
    text, met = _ratio_target("MemoryStore", 0.95)(s, peers)
    mapped, memory = peers.get(_FROM_MAPPING[s.peer]), peers.get(_FROM_MEMORY)
    if "MemoryStore" in peers and mapped is not None and memory is not None:
        cost = max(0.0, mapped.median - memory.median)
        limit = peers["MemoryStore"].median + cost
        text += (f"; the mapping's page tables cost {cost * 1e3:.1f} ms a round, "
                 f"MemoryStore + that = {peers['MemoryStore'].median / limit:.2f}x, "
                 f"this row is {limit / s.median:.2f}x that limit")
    return text, met


def _size_a(s: Any) -> str:
    return f"{s.count} x {c.human_bytes(s.nbytes / s.count)}"


class _TempDirSuite(c.TempDirSuite):
    # asv: one call per sample (each call writes hundreds of MB or is internally looped).
    timeout = 600


# --- (a) zarr write / read -------------------------------------------------------------


class ZarrWrite(_TempDirSuite):
    """Write a zarr v2 group through zarr-python into each store."""

    label = "a"
    baseline = ("ZipStore",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 4, True: 3}
    _outputs: ClassVar[dict[str, str]] = {
        "time_write_mmapzip": "mmapzip.zip",
        "time_write_zipstore": "zipstore.zip",
        "time_write_localstore": "localstore",
    }

    def setup(self) -> None:
        self._mktemp()
        self.arrays = zarr_dataset()
        self.count = len(self.arrays)
        self.nbytes = sum(x.nbytes for x in self.arrays)

    def prepare(self, name: str) -> None:
        c.remove(self.p(self._outputs[name]))

    @c.bench("zarr write", "MmapZipStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_write_mmapzip(self) -> None:
        p = self.p("mmapzip.zip")
        c.remove(p)  # no-op under the runner (prepare did it); needed under asv
        store = MmapZipStore(p, "w")
        write_group(store, self.arrays)
        store.close()

    @c.bench("zarr write", "ZipStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_write_zipstore(self) -> None:
        p = self.p("zipstore.zip")
        c.remove(p)
        store = ZipStore(p, mode="w")
        write_group(store, self.arrays)
        store.close()

    @c.bench("zarr write", "LocalStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_write_localstore(self) -> None:
        p = self.p("localstore")
        c.remove(p)
        store = LocalStore(p)
        write_group(store, self.arrays)
        store.close()

    # Peak memory of the writers (asv only; the table reports times).
    def peakmem_write_mmapzip(self) -> None:
        self.time_write_mmapzip()

    def peakmem_write_zipstore(self) -> None:
        self.time_write_zipstore()

    def peakmem_write_localstore(self) -> None:
        self.time_write_localstore()


class ZarrRead(_TempDirSuite):
    """Warm reads (page cache) through zarr-python: open store + group, ``a[...]`` each array."""

    label = "a"
    baseline = ("ZipStore", "MemoryStore")

    def setup(self) -> None:
        self._mktemp()
        self.arrays = zarr_dataset()
        self.count = len(self.arrays)
        self.nbytes = sum(x.nbytes for x in self.arrays)
        self.names = _names(self.count)
        self.p_mmap = self.p("mmapzip.zip")
        self.p_zip = self.p("zipstore.zip")
        self.p_local = self.p("localstore")
        s = MmapZipStore(self.p_mmap, "w")
        write_group(s, self.arrays)
        s.close()
        z = ZipStore(self.p_zip, mode="w")
        write_group(z, self.arrays)
        z.close()
        write_group(LocalStore(self.p_local), self.arrays)
        self.p_rewritten = self.p("rewritten.zip")
        write_superseded_group(self.p_rewritten, self.arrays)
        memory = MemoryStore()
        write_group(memory, self.arrays)
        self.memory = memory.with_read_only(True)
        # Every store must give back the data, or the timings mean nothing.
        for i in (0, self.count - 1):
            for store in (MmapZipStore(self.p_mmap, "r"), MmapZipStore(self.p_zip, "r"),
                          MmapZipStore(self.p_rewritten, "r"), self.memory,
                          ZipStore(self.p_zip, mode="r"), LocalStore(self.p_local, read_only=True)):
                g: Any = zarr.open_group(store=store, mode="r", use_consolidated=False)
                got = g[self.names[i]][...]
                if not np.array_equal(got, self.arrays[i]):
                    raise AssertionError(f"{store!r} returned wrong data for {self.names[i]}")
                del g, got
                if store is not self.memory:
                    store.close()
        # One output array, reused by every "prealloc" read and faulted in once here.
        self.out = np.ones_like(self.arrays[0])
        self.spans = chunk_spans(self.p_mmap, self.names)
        self.spans_rewritten = chunk_spans(self.p_rewritten, self.names)
        for path, spans in ((self.p_mmap, self.spans), (self.p_rewritten, self.spans_rewritten)):
            with open(path, "rb") as f:
                for i in (0, self.count - 1):
                    f.seek(spans[i][0])
                    if f.read(spans[i][1]) != self.arrays[i].tobytes():
                        raise AssertionError(f"chunk_spans: wrong bytes for {self.names[i]}")

    # The limit a mapping sets, on the same archive file (so the same page cache): copy each
    # chunk from a mapping made for the round into a new array, as zarr does, against the
    # same copies from memory. The difference is building and tearing down page tables.
    @c.bench("zarr read warm", _FROM_MAPPING["MmapZipStore"], c.MB, lambda s: s.nbytes,
             size=_size_a)
    def time_copy_from_mapping(self) -> None:
        self._copy_from_mapping(self.p_mmap, self.spans)

    @c.bench("zarr read warm", _FROM_MAPPING["MmapZipStore (arrays rewritten, others deleted)"],
             c.MB, lambda s: s.nbytes, size=_size_a)
    def time_copy_from_mapping_rewritten(self) -> None:
        self._copy_from_mapping(self.p_rewritten, self.spans_rewritten)

    def _copy_from_mapping(self, path: str, spans: list[tuple[int, int]]) -> None:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            for (offset, size), x in zip(spans, self.arrays, strict=True):
                view = np.frombuffer(m, dtype=x.dtype, count=size // x.itemsize, offset=offset)
                np.copyto(np.empty_like(view), view)
                del view

    @c.bench("zarr read warm", _FROM_MEMORY, c.MB, lambda s: s.nbytes, size=_size_a)
    def time_copy_from_memory(self) -> None:
        for x in self.arrays:
            np.copyto(np.empty_like(x), x)

    # Plain reads: zarr allocates each output array.
    @c.bench("zarr read warm", "MmapZipStore", c.MB, lambda s: s.nbytes, size=_size_a,
             target=_warm_read_target)
    def time_read_mmapzip(self) -> None:
        store = MmapZipStore(self.p_mmap, "r")
        read_group(store, self.names)
        store.close()

    @c.bench("zarr read warm", "MmapZipStore (arrays rewritten, others deleted)", c.MB,
             lambda s: s.nbytes, size=_size_a, target=_warm_read_target)
    def time_read_mmapzip_rewritten(self) -> None:
        store = MmapZipStore(self.p_rewritten, "r")
        read_group(store, self.names)
        store.close()

    @c.bench("zarr read warm", "MemoryStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_memorystore(self) -> None:
        read_group(self.memory, self.names)

    @c.bench("zarr read warm", "MmapZipStore (ZipStore's file)", c.MB, lambda s: s.nbytes,
             size=_size_a)
    def time_read_mmapzip_foreign(self) -> None:
        store = MmapZipStore(self.p_zip, "r")
        read_group(store, self.names)
        store.close()

    @c.bench("zarr read warm", "ZipStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_zipstore(self) -> None:
        store = ZipStore(self.p_zip, mode="r")
        read_group(store, self.names)
        store.close()

    @c.bench("zarr read warm", "LocalStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_localstore(self) -> None:
        store = LocalStore(self.p_local, read_only=True)
        read_group(store, self.names)
        store.close()

    # "prealloc": get_basic_selection(..., out=NDBuffer) into one reused, pre-faulted array.
    @c.bench("zarr read warm prealloc", "MmapZipStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_prealloc_mmapzip(self) -> None:
        store = MmapZipStore(self.p_mmap, "r")
        read_group(store, self.names, self.out)
        store.close()

    @c.bench("zarr read warm prealloc", "ZipStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_prealloc_zipstore(self) -> None:
        store = ZipStore(self.p_zip, mode="r")
        read_group(store, self.names, self.out)
        store.close()

    @c.bench("zarr read warm prealloc", "LocalStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_prealloc_localstore(self) -> None:
        store = LocalStore(self.p_local, read_only=True)
        read_group(store, self.names, self.out)
        store.close()


# --- (b) raw zero-copy reads -----------------------------------------------------------

_MAP_CALLS = 5000


def _o1_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    small = peers.get("1 KiB entry")
    if small is None:
        return "O(1): 1 KiB entry not measured", False
    # Best of the samples: for a few microseconds per call, noise only ever adds time.
    r = s.best_rate / small.best_rate
    text = (f"O(1): best {s.best_rate:.2f} µs ({s.peer}) vs {small.best_rate:.2f} µs "
            f"(1 KiB), x{r:.2f}; ≤ 2 counts as O(1)")
    return text, r <= 2.0


def _mapped(store: MmapZipStore, key: str, n: int) -> np.ndarray:
    x = store.try_mmap_entry_as(key, np.float64, n)
    if x is None:
        raise AssertionError(f"try_mmap_entry_as({key!r}) returned None")
    return x


class RawMmapRead(_TempDirSuite):
    """Zero-copy ``try_mmap_entry_as`` + ``.sum()`` vs in-memory sum and memcpy."""

    label = "b"
    baseline = ("numpy sum (in memory)", "np.copyto (memcpy)", "1 KiB entry")

    def setup(self) -> None:
        self._mktemp()
        self.nbytes = 64 * c.MiB if c.quick() else c.GiB
        self.n = self.nbytes // 8
        self.arr = np.random.default_rng().random(self.n)
        self.path = self.p("raw.zip")
        w = MmapZipStore(self.path, "w")
        w["big"] = self.arr
        w["small"] = np.random.default_rng().random(128)  # 1 KiB
        w.close()
        self.store = MmapZipStore(self.path, "r")
        if self.store.try_mmap_entry_as("small", np.float64, 128) is None:
            raise AssertionError("try_mmap_entry_as('small') returned None")
        # The mapped view must hold the data (and the sum must be of the same numbers).
        if _mapped(self.store, "big", self.n).sum() != self.arr.sum():
            raise AssertionError("mapped entry differs from the array written")
        self.dst = np.ones_like(self.arr)  # pre-faulted memcpy destination
        self.calls = _MAP_CALLS

    def teardown(self, *params: Any) -> None:
        self.store.close()
        super().teardown()

    @c.bench("sum float64 ({nbytes_h})", "try_mmap_entry_as + .sum() (open store)", c.MB,
             lambda s: s.nbytes, size=lambda s: c.human_bytes(s.nbytes))
    def time_sum_mmap(self) -> None:
        _mapped(self.store, "big", self.n).sum()

    @c.bench("sum float64 ({nbytes_h})", "open + try_mmap_entry_as + .sum() + close", c.MB,
             lambda s: s.nbytes, size=lambda s: c.human_bytes(s.nbytes))
    def time_sum_mmap_fresh_open(self) -> None:
        store = MmapZipStore(self.path, "r")
        x = _mapped(store, "big", self.n)
        x.sum()
        del x
        store.close()

    @c.bench("sum float64 ({nbytes_h})", "numpy sum (in memory)", c.MB, lambda s: s.nbytes,
             size=lambda s: c.human_bytes(s.nbytes))
    def time_sum_inmemory(self) -> None:
        self.arr.sum()

    @c.bench("sum float64 ({nbytes_h})", "np.copyto (memcpy)", c.MB, lambda s: s.nbytes,
             size=lambda s: c.human_bytes(s.nbytes))
    def time_memcpy(self) -> None:
        np.copyto(self.dst, self.arr)

    @property
    def nbytes_h(self) -> str:
        return c.human_bytes(self.nbytes)

    @c.bench("try_mmap_entry_as cost", "1 KiB entry", c.PER_CALL, lambda s: s.calls,
             size=lambda s: f"{s.calls} calls")
    def time_map_small(self) -> None:
        f, n = self.store.try_mmap_entry_as, 128
        for _ in range(self.calls):
            f("small", np.float64, n)

    @c.bench("try_mmap_entry_as cost", "{nbytes_h} entry", c.PER_CALL, lambda s: s.calls,
             size=lambda s: f"{s.calls} calls", target=_o1_target)
    def time_map_large(self) -> None:
        f, n = self.store.try_mmap_entry_as, self.n
        for _ in range(self.calls):
            f("big", np.float64, n)


# --- (c) small appends -----------------------------------------------------------------

_ENTRY = 100


def _batched_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    z = peers.get("zipfile 'a'")
    r = s.speedup_over(z) if z is not None else 0.0
    ok = s.median_rate >= 300_000 and r >= 4.0
    return f"≥ 300,000 entries/s and ≥ 4x zipfile 'a' (is {s.median_rate:,.0f}, {r:.2f}x)", ok


class SmallAppends(_TempDirSuite):
    """100-byte entries appended to a new archive: batched, singly, commit per entry.

    Python's zipfile in mode "a" writes entries over the old central directory and rewrites
    the directory only on close(): not crash-safe, so "zipfile 'a'" is a lower bound for a
    crash-safe append. "reopen+close each" commits per entry like a single MmapZipStore
    append (each rewrites the whole directory, so both are O(N) per append: N is stated).
    """

    label = "c"
    baseline = ("zipfile 'a'", "zipfile 'a' reopen+close each")
    # Long samples with little memory churn: warmed up in setup, three counted rounds.
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 3}
    bench_warmup: ClassVar[dict[bool, int]] = {False: 0, True: 0}

    def setup(self) -> None:
        self._mktemp()
        q = c.quick()
        self.n_batch = 10_000 if q else 100_000
        self.n_single = 1_000 if q else 5_000
        self.n_commit = 200 if q else 500
        self.keys = [f"small/{i:06d}" for i in range(self.n_batch)]
        self.values = [os.urandom(_ENTRY) for _ in range(self.n_batch)]
        self.items = list(zip(self.keys, self.values, strict=True))
        # Instead of a full warm-up round (about 25 s): every method once on a few entries.
        sizes = (self.n_batch, self.n_single, self.n_commit)
        self.n_batch, self.n_single, self.n_commit = 2_000, 500, 50
        for name in c.timed_methods(type(self)):
            getattr(self, name)()
        self.n_batch, self.n_single, self.n_commit = sizes

    def prepare(self, name: str) -> None:
        c.remove(self.p(name + ".zip"))

    def _fresh(self, name: str) -> str:
        p = self.p(name + ".zip")
        c.remove(p)
        return p

    @c.bench("100-byte appends, one batch", "MmapZipStore batch()", c.ENTRIES,
             lambda s: s.n_batch, size=lambda s: f"N = {s.n_batch:,}", target=_batched_target)
    def time_batched_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_batched_mmapzip"), "w")
        with store.batch():
            for k, v in self.items[: self.n_batch]:
                store[k] = v
        store.close()

    @c.bench("100-byte appends, one batch", "MmapZipStore set_many()", c.ENTRIES,
             lambda s: s.n_batch, size=lambda s: f"N = {s.n_batch:,}", target=_batched_target)
    def time_set_many_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_set_many_mmapzip"), "w")
        store.set_many(self.items[: self.n_batch])
        store.close()

    @c.bench("100-byte appends, one batch", "zipfile 'a'", c.ENTRIES, lambda s: s.n_batch,
             size=lambda s: f"N = {s.n_batch:,}")
    def time_batched_zipfile(self) -> None:
        with zipfile.ZipFile(self._fresh("time_batched_zipfile"), "a", zipfile.ZIP_STORED) as z:
            for k, v in self.items[: self.n_batch]:
                z.writestr(k, v)

    @c.bench("100-byte appends, singly", "MmapZipStore (commit each)", c.ENTRIES,
             lambda s: s.n_single, size=lambda s: f"N = {s.n_single:,}")
    def time_single_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_single_mmapzip"), "w")
        for k, v in self.items[: self.n_single]:
            store[k] = v
        store.close()

    @c.bench("100-byte appends, singly", "zipfile 'a'", c.ENTRIES, lambda s: s.n_single,
             size=lambda s: f"N = {s.n_single:,}")
    def time_single_zipfile(self) -> None:
        with zipfile.ZipFile(self._fresh("time_single_zipfile"), "a", zipfile.ZIP_STORED) as z:
            for k, v in self.items[: self.n_single]:
                z.writestr(k, v)

    @c.bench("100-byte appends, commit each", "MmapZipStore (commit each)", c.ENTRIES,
             lambda s: s.n_commit, size=lambda s: f"N = {s.n_commit:,}")
    def time_commit_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_commit_mmapzip"), "w")
        for k, v in self.items[: self.n_commit]:
            store[k] = v
        store.close()

    @c.bench("100-byte appends, commit each", "zipfile 'a' reopen+close each", c.ENTRIES,
             lambda s: s.n_commit, size=lambda s: f"N = {s.n_commit:,}")
    def time_commit_zipfile(self) -> None:
        p = self._fresh("time_commit_zipfile")
        for k, v in self.items[: self.n_commit]:
            with zipfile.ZipFile(p, "a", zipfile.ZIP_STORED) as z:
                z.writestr(k, v)


def _small_archive(path: str, count: int) -> None:
    """An archive of ``count`` 100-byte entries (one batch)."""
    with MmapZipStore(path, "w") as store:
        store.set_many((f"small/{i:07d}", os.urandom(_ENTRY)) for i in range(count))


def _limit_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    lim = peers.get("limit: pwrite one directory")
    if lim is None:
        return "≥ 1,000 commits/s: limit not measured", False
    text = (f"≥ 1,000 commits/s (is {s.median_rate:,.0f}; the pwrite of one directory "
            f"alone allows {lim.median_rate:,.0f}/s")
    slots = peers.get("limit: directory past the end, then down")
    if slots is not None:
        text += (f", written past the end and back down {slots.median_rate:,.0f}/s: "
                 f"{s.median_rate / slots.median_rate:.2f}x that")
    return text + ")", s.median_rate >= 1_000


class CommitScaling(_TempDirSuite):
    """Single-commit 100-byte appends into an archive of N entries: commits/s vs N.

    Each commit writes the whole central directory (86 bytes per entry here) once, so its
    cost grows with N. Beside it, the limit: one ``pwrite(2)`` of a directory's worth of
    bytes into a file already in the page cache, and one memcpy of it, per commit.
    """

    label = "c2"
    baseline = ("limit: pwrite one directory",)
    params: ClassVar[list[int]] = [1_000, 10_000, 100_000]
    param_names: ClassVar[list[str]] = ["entries"]
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self, entries: int) -> None:
        self._mktemp()
        if c.quick():
            entries //= 10
        self.entries = entries
        # At least 60: the first commit after the store opens also copies the directory
        # past the end of the file (the later ones write it once each).
        self.commits = max(60, min(200, 2_000_000 // entries))
        self.template = self.p("template.zip")
        _small_archive(self.template, entries)
        self.path = self.p("archive.zip")
        self.store: MmapZipStore | None = None
        with MmapZipStore(self.template, "r") as store:
            self.cd_bytes = store.space().directory_bytes
        self.cd = os.urandom(self.cd_bytes)
        self.dst = bytearray(self.cd_bytes)
        self.fpath = self.p("cd.bin")
        with open(self.fpath, "wb") as f:
            f.write(self.cd)
        self.fd = os.open(self.fpath, os.O_WRONLY)
        self.fpath2 = self.p("cd-two-slots.bin")
        with open(self.fpath2, "wb") as f:
            f.write(self.cd)
        self.fd2 = os.open(self.fpath2, os.O_WRONLY)
        self.round = 0

    def prepare(self, name: str) -> None:
        if name == "time_commit_mmapzip":
            if self.store is not None:
                self.store.close()
            shutil.copyfile(self.template, self.path)
            self.store = MmapZipStore(self.path, "r+")
            self.round += 1

    def teardown(self, *params: Any) -> None:
        if self.store is not None:
            self.store.close()
        os.close(self.fd)
        os.close(self.fd2)
        super().teardown(*params)

    def _size(self) -> str:
        return f"N = {self.entries:,}, directory {c.human_bytes(self.cd_bytes)}"

    @property
    def entries_h(self) -> str:
        return f"{self.entries:,}"

    @c.bench("commit each, into {entries_h} entries", "MmapZipStore store[k] = v", c.ENTRIES,
             lambda s: s.commits, size=lambda s: s._size(), target=_limit_target)
    def time_commit_mmapzip(self) -> None:
        if self.store is None:  # asv calls no prepare()
            self.prepare("time_commit_mmapzip")
        store, r = self.store, self.round
        assert store is not None
        for i in range(self.commits):
            store[f"new/{r}/{i:05d}"] = b"x" * _ENTRY

    @c.bench("commit each, into {entries_h} entries", "limit: pwrite one directory", c.ENTRIES,
             lambda s: s.commits, size=lambda s: s._size())
    def time_pwrite_directory(self) -> None:
        fd, cd = self.fd, self.cd
        for _ in range(self.commits):
            os.pwrite(fd, cd, 0)

    @c.bench("commit each, into {entries_h} entries", "limit: directory past the end, then down",
             c.ENTRIES, lambda s: s.commits, size=lambda s: s._size())
    def time_two_slot_directory(self) -> None:
        """The directory writes a commit may do without ever storing into the live copy:
        every other one past the end of the file, into fresh page-cache pages, then the next
        one back down into pages already cached, whose ``ftruncate`` frees the copy above."""
        fd, cd, size = self.fd2, self.cd, self.cd_bytes
        for i in range(self.commits):
            if i % 2 == 0:
                os.pwrite(fd, cd, size + 512)
            else:
                os.pwrite(fd, cd, 0)
                os.ftruncate(fd, size)

    @c.bench("commit each, into {entries_h} entries", "limit: memcpy one directory", c.ENTRIES,
             lambda s: s.commits, size=lambda s: s._size())
    def time_memcpy_directory(self) -> None:
        dst, cd = self.dst, self.cd
        for _ in range(self.commits):
            dst[:] = cd


_GROWTH_CHILD = r"""
import os, sys, time
from dafzarr import MmapZipStore

path, n, commits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def hwm():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))

items = [(f"small/{i:07d}", os.urandom(100)) for i in range(n)]
before = hwm()
store = MmapZipStore(path, "w")
t0 = time.perf_counter()
with store.batch():
    for k, v in items:
        store[k] = v
t1 = time.perf_counter()
for i in range(commits):
    store[f"new/{i:05d}"] = b"x" * 100
t2 = time.perf_counter()
cd = store.space().directory_bytes
store.close()
print((t1 - t0) / n, (t2 - t1) / commits, cd, before, hwm())
"""


def append_growth_report(sizes: list[int]) -> str:
    """Per-append cost and memory vs archive size, one child process per size (median of
    three children): batched ``store[k] = v`` into a new archive of N entries, then
    single-commit appends into it; the peak RSS of the child above its imports and data."""
    head = ("entries N", "batched, per append", "single commit, per append",
            "per directory MB", "directory", "peak RSS above inputs", "RSS per entry")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-growth-") as tmp:
        path = os.path.join(tmp, "growth.zip")
        for n in sizes:
            commits = max(5, min(100, 2_000_000 // n))
            runs = []
            for _ in range(3):
                res = subprocess.run([sys.executable, "-c", _GROWTH_CHILD, path, str(n),
                                      str(commits)], capture_output=True, text=True, check=False)
                c.remove(path)
                if res.returncode != 0:  # said in the table, not lost with the whole report
                    last = (res.stderr.strip().splitlines() or ["no message"])[-1]
                    rows.append(f"| {n:,} | child failed (rc {res.returncode}): {last} |")
                    continue
                runs.append([float(x) for x in res.stdout.split()])
            if not runs:
                continue
            runs.sort(key=lambda r: r[1])
            batched, single, cd, before, peak = runs[len(runs) // 2]
            rss = peak - before
            rows.append(
                f"| {n:,} | {batched * 1e6:.2f} µs | {single * 1e3:.3f} ms | "
                f"{single * 1e3 / (cd / 1e6):.2f} ms | {c.human_bytes(cd)} | "
                f"{c.human_bytes(rss)} | {rss / n:.0f} B |"
            )
    return "\n".join(rows)


# --- (d) large append ------------------------------------------------------------------


def _memcpy_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    m = peers.get("np.copyto (memcpy, pre-faulted)")
    f = peers.get("open + f.write + close (new file)")
    if m is None or f is None:
        return "≥ 50% of memcpy or ≥ f.write: not measured", False
    r, rf = s.speedup_over(m), s.speedup_over(f)
    return (f"≥ 50% of memcpy (is {100 * r:.1f}%), at least f.write to a new file (is "
            f"{rf:.2f}x)"), r >= 0.5 or rf >= 1.0


class LargeAppend(_TempDirSuite):
    """One large numpy array appended with ``store[key] = arr`` vs memcpy of the same size."""

    label = "d"
    baseline = ("np.copyto (memcpy, pre-faulted)", "open + f.write + close (new file)")
    params: ClassVar[list[int]] = [64 * c.MiB, 512 * c.MiB]
    param_names: ClassVar[list[str]] = ["size"]

    def setup(self, size: int) -> None:
        self._mktemp()
        self.nbytes = min(size, 64 * c.MiB) if c.quick() else size
        self.arr = np.random.default_rng().random(self.nbytes // 8)
        self.dst = np.ones_like(self.arr)
        self.path = self.p("large.zip")
        self.fpath = self.p("large.bin")

    def prepare(self, name: str) -> None:
        c.remove(self.path)
        c.remove(self.fpath)

    def _size(self) -> str:
        return c.human_bytes(self.nbytes)

    @property
    def size_h(self) -> str:
        return c.human_bytes(self.nbytes)

    @c.bench("append one {size_h} array", "MmapZipStore store[key] = arr", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size(), target=_memcpy_target)
    def time_append_mmapzip(self) -> None:
        c.remove(self.path)
        store = MmapZipStore(self.path, "w")
        store["x"] = self.arr
        store.close()

    @c.bench("append one {size_h} array", "MmapZipStore, one copy thread", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_append_mmapzip_one_thread(self) -> None:
        previous = _posix.set_threads(1)
        try:
            self.time_append_mmapzip()
        finally:
            _posix.set_threads(previous)

    @c.bench("append one {size_h} array", "np.copyto (memcpy, pre-faulted)", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_memcpy(self) -> None:
        np.copyto(self.dst, self.arr)

    @c.bench("append one {size_h} array", "arr.copy() (fresh pages)", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_copy_fresh(self) -> None:
        self.arr.copy()

    @c.bench("append one {size_h} array", "open + f.write + close (new file)", c.MB,
             lambda s: s.nbytes, size=lambda s: s._size())
    def time_file_write(self) -> None:
        c.remove(self.fpath)
        with open(self.fpath, "wb") as f:
            f.write(self.arr.data.cast("B"))

    # Peak memory of the writers (asv only; the table reports times). asv passes the
    # suite's parameter, which setup() already took.
    def peakmem_append_mmapzip(self, *params: Any) -> None:
        self.time_append_mmapzip()

    def peakmem_file_write(self, *params: Any) -> None:
        self.time_file_write()


# --- (e) CRC-32 ------------------------------------------------------------------------


class Crc32(_TempDirSuite):
    """CRC-32 (the ZIP polynomial) of an in-memory buffer, repeated to ~64 MiB per sample.

    ``dafzarr._core.crc.crc32`` is what the package uses (ISA-L, split over threads from 32 MiB);
    ``dafzarr._posix.crc32`` is the project's own kernel, kept only for copy-with-CRC (suite
    e2) and measured here to show where ISA-L matches it.
    """

    label = "e"
    baseline = ("isal.isal_zlib.crc32",)
    params: ClassVar[list[int]] = [256 * c.KiB, 8 * c.MiB, 256 * c.MiB]
    param_names: ClassVar[list[str]] = ["size"]

    def setup(self, size: int) -> None:
        self._mktemp()
        if c.quick():
            size = min(size, 32 * c.MiB)
        self.size = size
        self.reps = max(1, (64 * c.MiB) // size)
        self.buf = np.random.default_rng().integers(0, 256, size, dtype=np.uint8).data
        want = zlib.crc32(self.buf)
        got = {"dafzarr": _crc.crc32(self.buf), "own kernel": _posix.crc32(self.buf),
               "isal": isal_zlib.crc32(self.buf)}
        for k, v in got.items():
            if v != want:
                raise AssertionError(f"{k} CRC-32 {v:#x} != zlib's {want:#x}")

    @property
    def size_h(self) -> str:
        return c.human_bytes(self.size)

    @c.bench("CRC-32 {size_h}", "dafzarr._core.crc.crc32", c.MB, lambda s: s.size * s.reps,
             size=lambda s: f"{s.size_h} x {s.reps}")
    def time_crc_dafzarr(self) -> None:
        f, b = _crc.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench("CRC-32 {size_h}", f"own kernel ({_posix.CRC32_KERNEL})", c.MB,
             lambda s: s.size * s.reps, size=lambda s: f"{s.size_h} x {s.reps}")
    def time_crc_own(self) -> None:
        f, b = _posix.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench("CRC-32 {size_h}", "zlib.crc32", c.MB, lambda s: s.size * s.reps,
             size=lambda s: f"{s.size_h} x {s.reps}")
    def time_crc_zlib(self) -> None:
        f, b = zlib.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench("CRC-32 {size_h}", "isal.isal_zlib.crc32", c.MB, lambda s: s.size * s.reps,
             size=lambda s: f"{s.size_h} x {s.reps}")
    def time_crc_isal(self) -> None:
        f, b = isal_zlib.crc32, self.buf
        for _ in range(self.reps):
            f(b)


class CopyCrc32(_TempDirSuite):
    """An entry stored into a writable mapping with its CRC-32, as an append does: the fused
    copy-and-checksum kernel (source read once) vs a copy then ISA-L's CRC of the source."""

    label = "e2"
    baseline = ("write + isal.crc32",)
    params: ClassVar[list[int]] = [64 * c.KiB, 8 * c.MiB, 256 * c.MiB]
    param_names: ClassVar[list[str]] = ["size"]

    def setup(self, size: int) -> None:
        self._mktemp()
        if c.quick():
            size = min(size, 64 * c.MiB)
        self.size = size
        self.reps = max(1, (256 * c.MiB) // size)
        self.src = np.random.default_rng().integers(0, 256, size, dtype=np.uint8)
        path = self.p("mapped.bin")
        with open(path, "wb") as f:
            f.truncate(size)
        self.fm = _posix.FileMapping(path, True, size)
        self.fm.write(0, self.src)  # pages resident: both rows measure copy + CRC only
        if self.fm.write_crc32(0, self.src) != isal_zlib.crc32(self.src):
            raise AssertionError("fused copy-and-CRC disagrees with ISA-L")

    def teardown(self, *params: Any) -> None:
        self.fm.close()
        super().teardown(*params)

    @property
    def size_h(self) -> str:
        return c.human_bytes(self.size)

    @c.bench("copy + CRC-32 {size_h}", "FileMapping.write_crc32 (fused)", c.MB,
             lambda s: s.size * s.reps, size=lambda s: f"{s.size_h} x {s.reps}")
    def time_fused(self) -> None:
        fm, b = self.fm, self.src
        for _ in range(self.reps):
            fm.write_crc32(0, b)

    @c.bench("copy + CRC-32 {size_h}", "write + isal.crc32", c.MB,
             lambda s: s.size * s.reps, size=lambda s: f"{s.size_h} x {s.reps}")
    def time_write_then_isal(self) -> None:
        fm, b, crc = self.fm, self.src, isal_zlib.crc32
        for _ in range(self.reps):
            fm.write(0, b)
            crc(b)


# --- (f) pack a directory store, (g) compaction --------------------------------------------


def _write_directory_store(path: str, nbytes: int, files: int) -> None:
    """A zarr v2 directory store: one float64 array of ``files`` chunks, ``nbytes`` in all."""
    row = max(1, nbytes // files // 8)
    a = zarr.create_array(store=LocalStore(path), shape=(files, row), chunks=(1, row),
                          dtype="float64", compressors=None, zarr_format=2)
    rng = np.random.default_rng()
    step = max(1, (64 * c.MiB) // (row * 8))
    for i in range(0, files, step):
        a[i : i + step] = rng.random((min(step, files - i), row))


class Pack(_TempDirSuite):
    """A zarr directory store packed into one archive: ``MmapZipStore.pack`` vs ``zip -0 -r``.

    Both read the same files (warm in the page cache after the first round) and write a new
    archive of stored entries; ``pack`` also fsyncs it before the rename that publishes it.
    """

    label = "f"
    baseline = ("zip -0 -r",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        self.nbytes = 64 * c.MiB if c.quick() else c.GiB
        self.files = 1_000 if c.quick() else 10_000
        self.src = self.p("store.zarr")
        _write_directory_store(self.src, self.nbytes, self.files)
        self.total = sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.src) for f in fs
        )
        if shutil.which("zip") is None:
            raise RuntimeError("the pack benchmark needs Info-ZIP's zip")

    def prepare(self, name: str) -> None:
        c.remove(self.p(name + ".zip"))

    def _size(self) -> str:
        return f"{self.files:,} files, {c.human_bytes(self.total)}"

    @c.bench("pack a directory store", "MmapZipStore.pack", c.MB, lambda s: s.total,
             size=lambda s: s._size(), target=_ratio_target("zip -0 -r", 2.0))
    def time_pack_mmapzip(self) -> None:
        MmapZipStore.pack(self.src, self.p("time_pack_mmapzip.zip"))

    @c.bench("pack a directory store", "zip -0 -r", c.MB, lambda s: s.total,
             size=lambda s: s._size())
    def time_pack_zip(self) -> None:
        subprocess.run(["zip", "-0", "-r", "-q", self.p("time_pack_zip.zip"), "."],
                       cwd=self.src, check=True)


class Compact(_TempDirSuite):
    """Compaction of an archive of which half the bytes are dead (every entry rewritten once).

    Peer: a plain copy of the live bytes' worth of archive (``shutil.copyfile`` + fsync of
    the compacted result), what compaction cannot beat.
    """

    label = "g"
    baseline = ("copy + fsync of the result",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        nbytes = 32 * c.MiB if c.quick() else 512 * c.MiB
        self.entries = 500 if c.quick() else 5_000
        self.source = self.p("dead.zip")
        rng = np.random.default_rng()
        size = nbytes // self.entries
        with MmapZipStore(self.source, "w") as store:
            for _ in range(2):
                with store.batch():
                    for i in range(self.entries):
                        store[f"x/{i}"] = rng.bytes(size)
            self.space = store.space()
        self.live = self.p("live.zip")
        MmapZipStore.compact(self.source, self.live)

    def prepare(self, name: str) -> None:
        c.remove(self.p(name + ".zip"))

    def _size(self) -> str:
        s = self.space
        return (f"{s.entries:,} entries, {c.human_bytes(s.live_bytes)} live + "
                f"{c.human_bytes(s.dead_bytes)} dead")

    @c.bench("compact an archive", "MmapZipStore.compact(path, out)", c.MB,
             lambda s: s.space.live_bytes, size=lambda s: s._size())
    def time_compact_mmapzip(self) -> None:
        MmapZipStore.compact(self.source, self.p("time_compact_mmapzip.zip"))

    @c.bench("compact an archive", "copy + fsync of the result", c.MB,
             lambda s: s.space.live_bytes, size=lambda s: s._size())
    def time_copy(self) -> None:
        out = self.p("time_copy.zip")
        shutil.copyfile(self.live, out)
        fd = os.open(out, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- (h) compressed foreign entries ------------------------------------------------------


class CompressedRead(_TempDirSuite):
    """Read every entry of a zipfile-written DEFLATE archive of 64 x 1 MiB entries: "sparse"
    entries (zeros with a few random bytes, about 500:1) are decoded twice by MmapZipStore
    (a checking pass, then into one buffer), "noisy" ones (about 2:1) once."""

    label = "h"
    baseline = ("zipfile.ZipFile.read",)
    params: ClassVar[list[str]] = ["sparse", "noisy"]
    param_names: ClassVar[list[str]] = ["kind"]
    #: The ZIP method the archive is written with (``benchmarks.bench_codecs`` uses BZIP2).
    compression = zipfile.ZIP_DEFLATED
    method_name = "DEFLATE"

    def setup(self, kind: str) -> None:
        self._mktemp()
        self.kind = kind
        self.count = 16 if c.quick() else 64
        self.size = 1 * c.MiB
        rng = np.random.default_rng()
        self.path = self.p("entries.zip")
        with zipfile.ZipFile(self.path, "w", self.compression) as z:
            for i in range(self.count):
                if kind == "sparse":
                    data = np.zeros(self.size, np.uint8)
                    data[rng.integers(0, self.size, 1000)] = rng.integers(0, 256, 1000)
                else:
                    data = rng.integers(0, 16, self.size, dtype=np.uint8)
                z.writestr(f"c/{i}", data.tobytes())
        self.keys = [f"c/{i}" for i in range(self.count)]
        with MmapZipStore(self.path) as store, zipfile.ZipFile(self.path) as z:
            for k in self.keys[:2]:
                if bytes(store[k]) != z.read(k):
                    raise AssertionError(f"MmapZipStore and zipfile disagree on {k}")

    @c.bench("read {count} x 1 MiB {method_name} entries ({kind})", "MmapZipStore[key]", c.MB,
             lambda s: s.size * s.count)
    def time_read_mmapzip(self) -> None:
        with MmapZipStore(self.path) as store:
            for k in self.keys:
                store[k].release()

    @c.bench("read {count} x 1 MiB {method_name} entries ({kind})", "zipfile.ZipFile.read",
             c.MB,
             lambda s: s.size * s.count)
    def time_read_zipfile(self) -> None:
        with zipfile.ZipFile(self.path) as z:
            for k in self.keys:
                z.read(k)


# --- (i) opening a large directory --------------------------------------------------------


def _write_many_entries(path: str, count: int) -> None:
    """An archive of ``count`` one-byte entries named like zarr chunks (``a/c/<i>/<j>``)."""
    side = max(1, int(np.ceil(np.sqrt(count))))
    with MmapZipStore(path, "w") as store, store.batch():
        for k in range(count):
            store[f"a/c/{k // side}/{k % side}"] = b"x"


def _open_and_list(how: str, path: str) -> int:
    """Open ``path`` as ``how`` says and list its keys; the number of keys."""
    if how == "zipfile":
        with zipfile.ZipFile(path) as z:
            return len(z.namelist())
    with MmapZipStore(path, how) as store:
        return len(store.keys())  # a list already, as namelist() is


_OPEN_CHILD = """
import sys
how, path = sys.argv[1], sys.argv[2]
if how == "zipfile":
    import zipfile
else:
    from dafzarr import MmapZipStore

def hwm():  # this process' peak RSS (VmHWM: unlike ru_maxrss, not inherited across exec)
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))

before = hwm()
if how == "zipfile":
    with zipfile.ZipFile(path) as z:
        n = len(z.namelist())
else:
    with MmapZipStore(path, how) as store:
        n = len(store.keys())
print(before, hwm(), n)
"""


def open_peak_rss(how: str, path: str) -> tuple[int, int]:
    """Peak RSS after the imports, and at the end, of a child process that opens ``path``
    as ``how`` says (``"r"``, ``"r+"`` or ``"zipfile"``) and lists its keys (Linux)."""
    res = subprocess.run([sys.executable, "-c", _OPEN_CHILD, how, path], capture_output=True,
                         text=True, check=True)
    before, peak, _ = res.stdout.split()
    return int(before), int(peak)


def _open_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    return f"< 1 s (is {s.median:.2f} s)", s.median < 1.0


class OpenLarge(_TempDirSuite):
    """Open an archive of many tiny entries and list its keys: the central directory parsed,
    checked and indexed. Peer: ``zipfile.ZipFile(path).namelist()``."""

    label = "i"
    baseline = ("zipfile.ZipFile.namelist",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        self.count = 100_000 if c.quick() else 1_000_000
        self.path = self.p("many.zip")
        _write_many_entries(self.path, self.count)
        for how in ("r", "r+", "zipfile"):
            if _open_and_list(how, self.path) != self.count:
                raise AssertionError(f"{how} does not list {self.count} keys")

    def _size(self) -> str:
        return f"{self.count:,} entries, {c.human_bytes(os.path.getsize(self.path))}"

    @c.bench("open + list keys", 'MmapZipStore(path, "r")', c.ENTRIES, lambda s: s.count,
             size=lambda s: s._size(), target=_open_target)
    def time_open_read(self) -> None:
        _open_and_list("r", self.path)

    @c.bench("open + list keys", 'MmapZipStore(path, "r+")', c.ENTRIES, lambda s: s.count,
             size=lambda s: s._size(), target=_open_target)
    def time_open_writable(self) -> None:
        _open_and_list("r+", self.path)

    @c.bench("open + list keys", "zipfile.ZipFile.namelist", c.ENTRIES, lambda s: s.count,
             size=lambda s: s._size())
    def time_open_zipfile(self) -> None:
        _open_and_list("zipfile", self.path)


def open_memory_report(count: int) -> str:
    """Peak RSS of open + list for each opener, one child process each."""
    rows = ["| open + list keys | RSS after imports | peak RSS | peak above imports |",
            "|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-open-") as tmp:
        path = os.path.join(tmp, "many.zip")
        _write_many_entries(path, count)
        for how, label in (("r", 'MmapZipStore(path, "r")'), ("r+", 'MmapZipStore(path, "r+")'),
                           ("zipfile", "zipfile.ZipFile.namelist")):
            before, peak = open_peak_rss(how, path)
            rows.append(f"| {label} | {c.human_bytes(before)} | {c.human_bytes(peak)} | "
                        f"{c.human_bytes(peak - before)} |")
    return f"{count:,} entries:\n\n" + "\n".join(rows)


def open_growth_report(sizes: list[int]) -> str:
    """Median time of open + list (3 runs, alternating) at each size: the growth of cost."""
    rows = ["| entries | MmapZipStore r | MmapZipStore r+ | zipfile namelist | r per entry |",
            "|---|---|---|---|---|"]

    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-open-") as tmp:
        for count in sizes:
            path = os.path.join(tmp, f"many{count}.zip")
            _write_many_entries(path, count)
            times: dict[str, list[float]] = {"r": [], "r+": [], "zipfile": []}
            for _ in range(3):
                for how, samples in times.items():
                    t0 = time.perf_counter()
                    _open_and_list(how, path)
                    samples.append(time.perf_counter() - t0)
            med = {how: sorted(v)[1] for how, v in times.items()}
            rows.append(f"| {count:,} | {med['r']:.3f} s | {med['r+']:.3f} s | "
                        f"{med['zipfile']:.3f} s | {med['r'] / count * 1e9:.0f} ns |")
            c.remove(path)
    return "\n".join(rows)


# --- Command line ----------------------------------------------------------------------

SUITES: dict[str, list[type]] = {
    "a": [ZarrWrite, ZarrRead],
    "b": [RawMmapRead],
    "c": [SmallAppends, CommitScaling],
    "d": [LargeAppend],
    "e": [Crc32, CopyCrc32],
    "f": [Pack],
    "g": [Compact],
    "h": [CompressedRead],
    "i": [OpenLarge],
}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_zipstore", __doc__, SUITES)
    ap.add_argument("--open-sizes", default="",
                    help="with suite i: also time open + list at these entry counts")
    ap.add_argument("--growth-sizes", default="",
                    help="with suite c: also time appends vs archive size at these entry "
                         "counts (default 1000,10000,100000,1000000; quick: up to 100000)")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    rounds = args.rounds or (3 if c.quick() else 5)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
        extra: list[tuple[str, str]] = []
        if "i" in only:
            extra.append(("Open + list keys (child processes, suite i)",
                          open_memory_report(100_000 if c.quick() else 1_000_000)))
            if args.open_sizes:
                extra.append(("Open + list keys vs size (suite i)",
                              open_growth_report([int(n) for n in args.open_sizes.split(",")])))
        if "c" in only:
            sizes = args.growth_sizes or (
                "1000,10000,100000" if c.quick() else "1000,10000,100000,1000000")
            extra.append(("Appends vs archive size (child processes, suite c)",
                          append_growth_report([int(n) for n in sizes.split(",")])))
    c.report("MmapZipStore benchmarks", [
        (f"* dafzarr {dafzarr.__version__} (CRC-32 kernel: {_posix.CRC32_KERNEL}, "
         f"{_posix.get_threads()} copy threads), zarr {zarr.__version__}, isal "
         f"{importlib.metadata.version('isal')}"),
        *clock.lines(rounds),
    ], results, (
        "Rates use MB = 10^6 bytes. **median** is the rate at the median time; ratio = how "
        "many times faster than the named peer (medians). zipfile 'a' writes its central "
        "directory only on close (not crash-safe); MmapZipStore commits each single append. "
        "Targets are informational."
    ))
    for title, part in extra:
        print(f"\n### {title}\n")
        print(part)
        c.record_table(title, part)
    return 0

if __name__ == "__main__":
    sys.exit(main())
