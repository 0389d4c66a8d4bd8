"""Benchmarks of the virtual-reference scanner and writer against kerchunk and VirtualiZarr.

Run from the project root::

    python -m benchmarks.bench_refs [--quick] [--only a,b,c]

Suites (each runs the peers alternately on the same data in the same process):

a. One chunked variable of 100,000 chunks (f4 (1000, 1000), chunks (1, 10), gzip + shuffle;
   quick: 10,000): ``dafzarr.refs.scan`` vs the bare ``H5Dchunk_iter`` walk into numpy
   columns (``dafzarr._h5chunks.chunk_index``, the C call), h5py's ``chunk_iter`` with a
   Python callback, kerchunk's ``SingleHdf5ToZarr`` (no inlining) and VirtualiZarr's
   ``HDFParser`` (``loadable_variables=[]``).
b. Writing those 100,000 references as kerchunk-Parquet: ``dafzarr.refs.write_parquet`` vs
   kerchunk's ``refs_to_dataframe`` (from kerchunk's reference dict).
c. 1,000 daily NetCDF4 files (quick: 40) -> one store: ``dafzarr.refs.virtualize`` (one
   process, and two processes) vs kerchunk ``SingleHdf5ToZarr`` + ``MultiZarrToZarr`` +
   ``refs_to_dataframe`` vs VirtualiZarr ``open_virtual_mfdataset`` + ``to_kerchunk(parquet)``.
d. 100 OISST-like daily NetCDF4 files (720 x 1440, 4 packed variables, about 2 MB each;
   quick: 20) on an HTTP server on 127.0.0.1 (a child process) that answers every request
   20 ms late, as a remote server would: ``dafzarr.refs.scan_many`` of the URLs (metadata
   blocks only, the next files prefetched while one is scanned) vs kerchunk's
   ``SingleHdf5ToZarr`` over fsspec's HTTP file system, file after file as its docs show.
   Requests and bytes fetched per file are printed after the table.
e. 100 small daily NetCDF4 files (90 x 180, about 48 KiB each; quick: 20) on the same kind
   of server: latency-bound. ``dafzarr.refs.scan_many`` with its defaults vs kerchunk file
   after file and VirtualiZarr's ``open_virtual_mfdataset`` (``HDFParser``, obstore's HTTP
   store, ``parallel=ThreadPoolExecutor``); the latency floor (requests x 20 ms / files in
   flight) is printed after the table.

After the table: how writing references grows with their count (10^5 -> 10^8; quick: up
to 10^7), each count in a fresh child process: ``ReferenceWriter`` fed pieces of 10^6
synthetic references (memory bounded by one record) vs all the columns in memory first and
written in one call (what ``write_parquet`` of a composed dataset does), with references per
second and peak RSS.

Peak traced Python memory of one scan per peer (suite a) is printed after the table.
Speed is never asserted; targets are informational.
"""

from __future__ import annotations

import os
import sys
import tempfile
import tracemalloc
import warnings
from typing import Any, ClassVar

import h5py
import numpy as np

import dafzarr
from dafzarr import _h5chunks, refs
from dafzarr._core.examples import write_daily_netcdf

from . import common as c

# Peers print deprecation and zarr-v3 codec warnings on every call; keep the table readable.
warnings.filterwarnings("ignore")


_ratio_target = c.ratio_target


class _TempDirSuite(c.TempDirSuite):
    temp_prefix = "dafzarr-bench-refs-"


# --- (a) one variable, 100,000 chunks ---------------------------------------------------------
def _make_many_chunks(path: str, rows: int) -> None:
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "a", shape=(rows, 1000), chunks=(1, 10), dtype="f4", compression="gzip", shuffle=True
        )
        d[:] = np.random.default_rng().random((rows, 1000), dtype="f4")


def _kerchunk_translate(path: str) -> dict[str, Any]:
    from kerchunk.hdf import SingleHdf5ToZarr

    return dict(SingleHdf5ToZarr(path, inline_threshold=0).translate())


def _kerchunk_translate_file(f: Any, url: str) -> dict[str, Any]:
    from kerchunk.hdf import SingleHdf5ToZarr

    return dict(SingleHdf5ToZarr(f, url, inline_threshold=0).translate())


def _vz_registry() -> Any:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def _vz_open(path: str) -> Any:
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    return open_virtual_dataset(
        url=path, registry=_vz_registry(), parser=HDFParser(), loadable_variables=[]
    )


def _size_chunks(s: Any) -> str:
    return f"{s.nchunks:,} chunks"


class ScanVariable(_TempDirSuite):
    """Chunk index of one variable: every peer produces (key, offset, size) for all chunks."""

    label = "a"
    baseline = ("kerchunk SingleHdf5ToZarr", "H5Dchunk_iter -> numpy (C walk)")
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        rows = 100 if c.quick() else 1000
        self.nchunks = rows * 100
        self.path = self.p("many.h5")
        _make_many_chunks(self.path, rows)
        got = refs.scan(self.path)["a"]
        kc = _kerchunk_translate(self.path)["refs"]
        for key in ("a/0.0", f"a/{rows - 1}.99"):
            i = np.ravel_multi_index(tuple(int(x) for x in key[2:].split(".")), got.grid)
            if kc[key][1:] != [int(got.offset[i]), int(got.size[i])]:
                raise AssertionError(f"{key}: dafzarr and kerchunk disagree")

    @c.bench(
        "scan 1 variable",
        "dafzarr refs.scan",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=_ratio_target("kerchunk SingleHdf5ToZarr", 30),
    )
    def time_dafzarr_scan(self) -> None:
        refs.scan(self.path)

    @c.bench(
        "scan 1 variable",
        "dafzarr refs.scan (vs C walk)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=_ratio_target("H5Dchunk_iter -> numpy (C walk)", 2, within=True),
    )
    def time_dafzarr_scan_again(self) -> None:
        refs.scan(self.path)

    @c.bench(
        "scan 1 variable",
        "H5Dchunk_iter -> numpy (C walk)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_c_walk(self) -> None:
        n = self.nchunks
        with h5py.File(self.path, "r") as f:
            o, z, m = np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint32)
            _h5chunks.chunk_index(f["a"].id, (1, 10), (n // 100, 100), o, z, m)

    @c.bench(
        "scan 1 variable",
        "h5py chunk_iter (Python callback)",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_h5py_chunk_iter(self) -> None:
        out: list[Any] = []
        with h5py.File(self.path, "r") as f:
            f["a"].id.chunk_iter(out.append)

    @c.bench(
        "scan 1 variable",
        "kerchunk SingleHdf5ToZarr",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_kerchunk(self) -> None:
        _kerchunk_translate(self.path)

    @c.bench(
        "scan 1 variable",
        "VirtualiZarr HDFParser",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_virtualizarr(self) -> None:
        _vz_open(self.path).close()


# --- (b) writing the references ---------------------------------------------------------------
class WriteParquet(_TempDirSuite):
    """kerchunk-Parquet of one 100,000-chunk variable."""

    label = "b"
    baseline = ("kerchunk refs_to_dataframe",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        rows = 100 if c.quick() else 1000
        self.nchunks = rows * 100
        path = self.p("many.h5")
        _make_many_chunks(path, rows)
        self.scanned = refs.scan(path)
        self.kc = _kerchunk_translate(path)

    def prepare(self, name: str) -> None:
        c.remove(self.p("out_dafzarr"))
        c.remove(self.p("out_kerchunk"))

    @c.bench(
        "write parquet",
        "dafzarr write_parquet",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
        target=lambda s, p: (f"< 0.1 s: {s.median:.3f} s", s.median < 0.1),
    )
    def time_dafzarr(self) -> None:
        c.remove(self.p("out_dafzarr"))
        refs.write_parquet(self.scanned, self.p("out_dafzarr"))

    @c.bench(
        "write parquet",
        "kerchunk refs_to_dataframe",
        c.ENTRIES,
        lambda s: s.nchunks,
        size=_size_chunks,
    )
    def time_kerchunk(self) -> None:
        from kerchunk.df import refs_to_dataframe

        refs_to_dataframe(self.kc, self.p("out_kerchunk"))


# --- (c) many daily files -> one store -----------------------------------------------------------
class ManyFiles(_TempDirSuite):
    """Daily files (2 chunked variables of 4 chunks + 3 coordinates each) -> one parquet store."""

    label = "c"
    baseline = ("kerchunk Single+MultiZarrToZarr+parquet",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 2, True: 2}

    def setup(self) -> None:
        self._mktemp()
        self.nfiles = 40 if c.quick() else 1000
        self.files = [self.p(f"day{d:05d}.nc") for d in range(self.nfiles)]
        for d, p in enumerate(self.files):
            write_daily_netcdf(p, d, shape=(180, 360), variables=("sst", "anom"))
        vds = refs.virtualize(self.files, None, progress=False)
        if vds.arrays["sst"].zarray["shape"] != [self.nfiles, 180, 360]:
            raise AssertionError("dafzarr composed the wrong shape")

    def prepare(self, name: str) -> None:
        for out in ("out_dafzarr", "out_dafzarr2", "out_kerchunk", "out_vz"):
            c.remove(self.p(out))

    @c.bench(
        "files -> store",
        "dafzarr virtualize",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
        target=_ratio_target("kerchunk Single+MultiZarrToZarr+parquet", 10),
    )
    def time_dafzarr(self) -> None:
        c.remove(self.p("out_dafzarr"))
        refs.virtualize(self.files, self.p("out_dafzarr"), progress=False)

    @c.bench(
        "files -> store",
        "dafzarr virtualize workers=2",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_dafzarr_workers(self) -> None:
        c.remove(self.p("out_dafzarr2"))
        refs.virtualize(self.files, self.p("out_dafzarr2"), workers=2, progress=False)

    @c.bench(
        "files -> store",
        "kerchunk Single+MultiZarrToZarr+parquet",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_kerchunk(self) -> None:
        from kerchunk.combine import MultiZarrToZarr
        from kerchunk.df import refs_to_dataframe

        singles = [_kerchunk_translate(p) for p in self.files]
        combined = MultiZarrToZarr(
            singles, concat_dims=["time"], identical_dims=["lat", "lon"], remote_protocol="file"
        ).translate()
        refs_to_dataframe(combined, self.p("out_kerchunk"))

    @c.bench(
        "files -> store",
        "VirtualiZarr open_virtual_mfdataset+parquet",
        c.ENTRIES,
        lambda s: s.nfiles,
        size=lambda s: f"{s.nfiles} files",
    )
    def time_virtualizarr(self) -> None:
        from virtualizarr import open_virtual_mfdataset
        from virtualizarr.parsers import HDFParser

        vds = open_virtual_mfdataset(
            self.files, registry=_vz_registry(), parser=HDFParser(), concat_dim="time",
            combine="nested", data_vars="minimal", coords="minimal", compat="override",
            loadable_variables=["time", "lat", "lon"],
        )  # fmt: skip
        vds.vz.to_kerchunk(self.p("out_vz"), format="parquet")


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
            write_daily_netcdf(self.p(name), d, shape=(720, 1440),
                               variables=("sst", "anom", "err", "ice"))
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
        RemoteFiles.fetch_lines = [(
            f"* suite d, per file ({c.human_bytes(self.size / n)} on average): dafzarr "
            f"{readers.requests / n + 1:.1f} requests (with the HEAD), "
            f"{c.human_bytes(readers.fetched / n)}; kerchunk over fsspec "
            f"{k_requests / n:.1f} requests, {c.human_bytes(k_bytes / n)}"
        )]

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
    for other, factor in (("kerchunk SingleHdf5ToZarr over fsspec HTTP", 10),
                          ("VirtualiZarr open_virtual_mfdataset, threads", 2)):
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
    baseline = ("kerchunk SingleHdf5ToZarr over fsspec HTTP",
                "VirtualiZarr open_virtual_mfdataset, threads")
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
        RemoteSmallFiles.fetch_lines = [(
            f"* suite e: {requests / self.nfiles:.1f} requests per file (with the HEAD), "
            f"{c.human_bytes(os.path.getsize(self.p(names[0])))} per file; at most {WINDOW} "
            f"files in flight, so a latency floor of {requests} x {REMOTE_DELAY * 1000:g} ms / "
            f"{WINDOW} = {RemoteSmallFiles.floor:.3f} s"
        )]

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
                    capture_output=True, text=True, check=True, cwd=root,
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


SUITES: dict[str, list[type]] = {
    "a": [ScanVariable], "b": [WriteParquet], "c": [ManyFiles], "d": [RemoteFiles],
    "e": [RemoteSmallFiles],
}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_refs", __doc__, SUITES)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    rounds = args.rounds or (3 if c.quick() else 5)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
        memory = peak_memory(100 if c.quick() else 1000) if "a" in only else []
        if "b" in only:
            top = 7 if c.quick() else 8
            memory += writer_growth([10**k for k in range(5, top + 1)])

    import kerchunk
    import virtualizarr

    c.report("Virtual reference benchmarks", [
        (f"* dafzarr {dafzarr.__version__}, h5py {h5py.version.version} (HDF5 "
         f"{h5py.version.hdf5_version}), kerchunk {kerchunk.__version__}, VirtualiZarr "
         f"{virtualizarr.__version__}"),
        *clock.lines(rounds),
        *memory,
        *RemoteFiles.fetch_lines,
        *RemoteSmallFiles.fetch_lines,
    ], results, (
        "Rates are references (suites a, b) or files (suites c, d, e) per second at the median "
        "time; ratio = how many times faster than the named peer (medians). Targets are "
        "informational."
    ))  # fmt: skip
    return 0

if __name__ == "__main__":
    sys.exit(main())
