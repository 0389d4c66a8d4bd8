"""Suites a and b of ``python -m benchmarks.bench_zipstore``: zarr groups written and read
through each store, and raw reads of mapped entries (the shared data and suite base too)."""

from __future__ import annotations

import mmap
from typing import Any, ClassVar

import numpy as np
import zarr
from zarr.core.buffer import cpu
from zarr.storage import LocalStore, MemoryStore, ZipStore

from dafzarr import MmapZipStore

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
        g.create_array(f"gone{i}", shape=x.shape, chunks=x.shape, dtype=x.dtype, compressors=None)[
            ...
        ] = x
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
        text += (
            f"; the mapping's page tables cost {cost * 1e3:.1f} ms a round, "
            f"MemoryStore + that = {peers['MemoryStore'].median / limit:.2f}x, "
            f"this row is {limit / s.median:.2f}x that limit"
        )
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
            for store in (
                MmapZipStore(self.p_mmap, "r"),
                MmapZipStore(self.p_zip, "r"),
                MmapZipStore(self.p_rewritten, "r"),
                self.memory,
                ZipStore(self.p_zip, mode="r"),
                LocalStore(self.p_local, read_only=True),
            ):
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
    @c.bench(
        "zarr read warm", _FROM_MAPPING["MmapZipStore"], c.MB, lambda s: s.nbytes, size=_size_a
    )
    def time_copy_from_mapping(self) -> None:
        self._copy_from_mapping(self.p_mmap, self.spans)

    @c.bench(
        "zarr read warm",
        _FROM_MAPPING["MmapZipStore (arrays rewritten, others deleted)"],
        c.MB,
        lambda s: s.nbytes,
        size=_size_a,
    )
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
    @c.bench(
        "zarr read warm",
        "MmapZipStore",
        c.MB,
        lambda s: s.nbytes,
        size=_size_a,
        target=_warm_read_target,
    )
    def time_read_mmapzip(self) -> None:
        store = MmapZipStore(self.p_mmap, "r")
        read_group(store, self.names)
        store.close()

    @c.bench(
        "zarr read warm",
        "MmapZipStore (arrays rewritten, others deleted)",
        c.MB,
        lambda s: s.nbytes,
        size=_size_a,
        target=_warm_read_target,
    )
    def time_read_mmapzip_rewritten(self) -> None:
        store = MmapZipStore(self.p_rewritten, "r")
        read_group(store, self.names)
        store.close()

    @c.bench("zarr read warm", "MemoryStore", c.MB, lambda s: s.nbytes, size=_size_a)
    def time_read_memorystore(self) -> None:
        read_group(self.memory, self.names)

    @c.bench(
        "zarr read warm", "MmapZipStore (ZipStore's file)", c.MB, lambda s: s.nbytes, size=_size_a
    )
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
    text = (
        f"O(1): best {s.best_rate:.2f} µs ({s.peer}) vs {small.best_rate:.2f} µs "
        f"(1 KiB), x{r:.2f}; ≤ 2 counts as O(1)"
    )
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

    @c.bench(
        "sum float64 ({nbytes_h})",
        "try_mmap_entry_as + .sum() (open store)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_sum_mmap(self) -> None:
        _mapped(self.store, "big", self.n).sum()

    @c.bench(
        "sum float64 ({nbytes_h})",
        "open + try_mmap_entry_as + .sum() + close",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_sum_mmap_fresh_open(self) -> None:
        store = MmapZipStore(self.path, "r")
        x = _mapped(store, "big", self.n)
        x.sum()
        del x
        store.close()

    @c.bench(
        "sum float64 ({nbytes_h})",
        "numpy sum (in memory)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_sum_inmemory(self) -> None:
        self.arr.sum()

    @c.bench(
        "sum float64 ({nbytes_h})",
        "np.copyto (memcpy)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_memcpy(self) -> None:
        np.copyto(self.dst, self.arr)

    @property
    def nbytes_h(self) -> str:
        return c.human_bytes(self.nbytes)

    @c.bench(
        "try_mmap_entry_as cost",
        "1 KiB entry",
        c.PER_CALL,
        lambda s: s.calls,
        size=lambda s: f"{s.calls} calls",
    )
    def time_map_small(self) -> None:
        f, n = self.store.try_mmap_entry_as, 128
        for _ in range(self.calls):
            f("small", np.float64, n)

    @c.bench(
        "try_mmap_entry_as cost",
        "{nbytes_h} entry",
        c.PER_CALL,
        lambda s: s.calls,
        size=lambda s: f"{s.calls} calls",
        target=_o1_target,
    )
    def time_map_large(self) -> None:
        f, n = self.store.try_mmap_entry_as, self.n
        for _ in range(self.calls):
            f("big", np.float64, n)
