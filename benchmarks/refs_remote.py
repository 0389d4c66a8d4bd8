"""Suites d and e of ``python -m benchmarks.bench_refs`` (files on a remote HTTP server), the
growth of the reference writer and its peak memory."""

from __future__ import annotations

import os
import sys
import tempfile
import tracemalloc
import warnings
from typing import ClassVar

import numpy as np

from dafzarr import refs
from dafzarr._core.examples import write_daily_netcdf

from . import common as c

warnings.filterwarnings("ignore")
from .refs_local import (
    _kerchunk_translate,
    _kerchunk_translate_file,
    _make_many_chunks,
    _ratio_target,
    _TempDirSuite,
    _vz_open,
)

# --- (d) files on a remote HTTP server --------------------------------------------------------
REMOTE_DELAY = 0.020


class RemoteFiles(_TempDirSuite):
    """Daily files served over HTTP with 20 ms per request -> their references."""

    label = "d"
    op = "remote files -> refs"
    baseline = ("kerchunk SingleHdf5ToZarr over fsspec HTTP",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 2}
    fetch_lines: ClassVar[list[str]] = []

    def setup(self) -> None:
        import subprocess

        self._mktemp()
        self.nfiles = 20 if c.quick() else 100
        names = [f"oisst{d:04d}.nc" for d in range(self.nfiles)]
        for d, name in enumerate(names):
            write_daily_netcdf(
                self.p(name), d, shape=(720, 1440), variables=("sst", "anom", "err", "ice")
            )
        self.size = sum(os.path.getsize(self.p(n)) for n in names)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_http", "--serve", self.dir,
             str(REMOTE_DELAY)], stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.urls = [f"http://127.0.0.1:{port}/{n}" for n in names]
        ours = refs.scan_many(self.urls, progress=False)
        local = refs.scan(self.p(names[-1]))
        if not np.array_equal(ours[-1].variables["sst"].offset, local.variables["sst"].offset):
            raise AssertionError("the remote scan found other chunks than the local one")
        self._count_fetches()

    def _count_fetches(self) -> None:
        """Requests and bytes per file of each peer (one more pass, outside the timings)."""
        from dafzarr._core.refs.remote import PrefetchedReaders
        from dafzarr._core.refs.scan import scan_reader

        readers = PrefetchedReaders(self.urls)
        for reader in readers:
            scan_reader(reader)
        n = self.nfiles
        import fsspec

        fs = fsspec.filesystem("http", skip_instance_cache=True)
        k_requests = k_bytes = 0
        for u in self.urls:
            with fs.open(u, "rb") as f:
                _kerchunk_translate_file(f, u)
                k_requests += f.cache.miss_count + 1  # + the HEAD
                k_bytes += f.cache.total_requested_bytes
        RemoteFiles.fetch_lines = [
            (
                f"* suite d, per file ({c.human_bytes(self.size / n)} on average): dafzarr "
                f"{readers.requests / n + 1:.1f} requests (with the HEAD), "
                f"{c.human_bytes(readers.fetched / n)}; kerchunk over fsspec "
                f"{k_requests / n:.1f} requests, {c.human_bytes(k_bytes / n)}"
            )
        ]

    def teardown(self) -> None:
        self.proc.kill()
        self.proc.wait()
        super().teardown()

    @c.bench(
        "remote files -> refs",
        "dafzarr scan_many",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files, 20 ms/request",
        target=_ratio_target("kerchunk SingleHdf5ToZarr over fsspec HTTP", 5),
    )
    def time_dafzarr(self) -> None:
        refs.scan_many(self.urls, progress=False)

    @c.bench(
        "{op}",
        "kerchunk SingleHdf5ToZarr over fsspec HTTP",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files, 20 ms/request",
    )
    def time_kerchunk(self) -> None:
        import fsspec

        for u in self.urls:
            with fsspec.open(u, "rb") as f:
                _kerchunk_translate_file(f, u)


# --- (e) many small files on a remote HTTP server ----------------------------------------------
def _small_files_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    """≥ 10x kerchunk, ≥ 2x VirtualiZarr, within 2x of the latency floor."""
    texts, ok = [], True
    for other, factor in (
        ("kerchunk SingleHdf5ToZarr over fsspec HTTP", 10),
        ("VirtualiZarr open_virtual_mfdataset, threads", 2),
    ):
        text, met = c.ratio_target(other, factor)(s, peers)
        texts.append(text)
        ok = ok and met
    floor = RemoteSmallFiles.floor
    if floor:
        texts.append(f"within 2x of the latency floor {floor:.3f} s (is {s.median / floor:.2f}x)")
        ok = ok and s.median <= 2 * floor
    return "; ".join(texts), ok


class RemoteSmallFiles(RemoteFiles):
    """Many small daily files served over HTTP with 20 ms per request -> their references:
    bound by latency, not by bytes (each peer reads a whole file in one or two requests)."""

    label = "e"
    op = "small remote files -> refs"
    baseline = (
        "kerchunk SingleHdf5ToZarr over fsspec HTTP",
        "VirtualiZarr open_virtual_mfdataset, threads",
    )
    fetch_lines: ClassVar[list[str]] = []
    #: Seconds the requests of one scan take at least: requests x latency / requests in flight.
    floor = 0.0

    def setup(self) -> None:
        import subprocess

        from dafzarr._core.refs.remote import WINDOW, PrefetchedReaders
        from dafzarr._core.refs.scan import scan_reader

        self._mktemp()
        self.nfiles = 20 if c.quick() else 100
        names = [f"small{d:04d}.nc" for d in range(self.nfiles)]
        for d, name in enumerate(names):
            write_daily_netcdf(self.p(name), d, shape=(90, 180))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_http", "--serve", self.dir,
             str(REMOTE_DELAY)], stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.base = f"http://127.0.0.1:{port}"
        self.urls = [f"{self.base}/{n}" for n in names]
        ours = refs.scan_many(self.urls, progress=False)
        local = refs.scan(self.p(names[-1]))
        if not np.array_equal(ours[-1].variables["sst"].offset, local.variables["sst"].offset):
            raise AssertionError("the remote scan found other chunks than the local one")
        readers = PrefetchedReaders(self.urls)
        for reader in readers:  # in this process, where the reader counts its requests
            scan_reader(reader, timeout=None)
        requests = readers.requests + self.nfiles  # and one HEAD per file
        RemoteSmallFiles.floor = requests * REMOTE_DELAY / WINDOW
        RemoteSmallFiles.fetch_lines = [
            (
                f"* suite e: {requests / self.nfiles:.1f} requests per file (with the HEAD), "
                f"{c.human_bytes(os.path.getsize(self.p(names[0])))} per file; at most {WINDOW} "
                f"files in flight, so a latency floor of {requests} x {REMOTE_DELAY * 1000:g} ms / "
                f"{WINDOW} = {RemoteSmallFiles.floor:.3f} s"
            )
        ]

    @c.bench(
        "small remote files -> refs",
        "dafzarr scan_many",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files, 20 ms/request",
        target=_small_files_target,
    )
    def time_dafzarr(self) -> None:
        refs.scan_many(self.urls, progress=False)

    @c.bench(
        "small remote files -> refs",
        "VirtualiZarr open_virtual_mfdataset, threads",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files, 20 ms/request",
    )
    def time_virtualizarr(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import HTTPStore
        from virtualizarr import open_virtual_mfdataset
        from virtualizarr.parsers import HDFParser

        store = HTTPStore.from_url(self.base, client_options={"allow_http": True})
        open_virtual_mfdataset(
            self.urls, registry=ObjectStoreRegistry({self.base: store}), parser=HDFParser(),
            concat_dim="time", combine="nested", data_vars="minimal", coords="minimal",
            compat="override", parallel=ThreadPoolExecutor,
            loadable_variables=["time", "lat", "lon"],
        )  # fmt: skip


# --- Growth of the reference writer --------------------------------------------------------------
_GROWTH_CHILD = """
import sys, time, numpy as np
from benchmarks.common import peak_rss
from dafzarr.refs import ReferenceWriter
mode, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
piece = 1_000_000 if mode == "stream" else n
rng = np.random.default_rng(0)
paths = [f"s3://bucket/day{i:05d}.nc" for i in range(1000)]
t0 = time.perf_counter()
with ReferenceWriter(out, paths) as w:
    w.add_group("")
    w.add_array("v", {"shape": [n], "chunks": [1]}, {})
    for start in range(0, n, piece):
        k = min(piece, n - start)
        w.append(rng.integers(0, 1000, k, dtype=np.int32), np.arange(start, start + k) * 4096,
                 np.full(k, 4096))
print(time.perf_counter() - t0, peak_rss())
"""


def writer_growth(counts: list[int]) -> list[str]:
    """References per second and peak RSS of the writer at each count (see module doc)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the child imports
    lines = [("* reference writer growth (fresh process per count; 10^6-reference pieces vs "
              "all columns first):")]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-refs-") as d:
        for n in counts:
            cells = []
            for mode in ("stream", "whole"):
                if mode == "whole" and n > 10**7:
                    cells.append("all columns first: not run (2 GB of columns)")
                    continue
                out = os.path.join(d, f"{mode}{n}")
                res = subprocess.run(
                    [sys.executable, "-c", _GROWTH_CHILD, mode, str(n), out],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=root,
                )
                seconds, rss = (float(x) for x in res.stdout.split())
                c.remove(out)
                label = "pieces" if mode == "stream" else "all columns first"
                cells.append(f"{label} {n / seconds / 1e6:.1f} M refs/s, peak RSS "
                             f"{c.human_bytes(rss)}")  # fmt: skip
            lines.append(f"  * {n:.0e} references: " + "; ".join(cells))
    return lines


# --- Peak memory -------------------------------------------------------------------------------
def peak_memory(rows: int) -> list[str]:
    """Peak traced Python allocations of one scan of the 100,000-chunk variable per peer."""
    lines = []
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-refs-") as d:
        path = os.path.join(d, "many.h5")
        _make_many_chunks(path, rows)
        n = rows * 100
        for peer, fn in (
            ("dafzarr refs.scan", lambda: refs.scan(path)),
            ("kerchunk SingleHdf5ToZarr", lambda: _kerchunk_translate(path)),
            ("VirtualiZarr HDFParser", lambda: _vz_open(path).close()),
        ):
            tracemalloc.start()
            result = fn()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del result
            lines.append(f"* peak traced memory, {peer}: {c.human_bytes(peak)} "
                         f"({peak / n:.0f} bytes per reference)")  # fmt: skip
    return lines
