"""Benchmarks of ArrayFile against zarr-python v3 with sharding (LocalStore) and Icechunk.

Run from the project root::

    python -m benchmarks.bench_arrayfile [--quick] [--only a,b] [--codecs none,lz4]

Suites (the peers run alternately on the same data in the same process):

a. many arrays: 1,000 x 1 MiB float64 arrays (quick: 100), 128 KiB chunks. Write all
   (ArrayFile: define + write + flush; zarr: one array per shard; Icechunk: one commit), then
   open and read all back.
b. one 1 GiB float64 array (quick: 64 MiB) in a 64 x 64 grid of chunks: write, full read,
   and 200 random single-chunk reads on an open handle (zarr: shards of 8 x 8 chunks) whose
   chunk cache is emptied before every sample, so every read goes to the file; ArrayFile also
   with 1 MiB blocks instead of the default 8 MiB. An LZ4 block written by dafzarr is made of
   independently decodable segments, so a chunk read decodes its segment, not its block.
c. a footer of 1,000,000 chunk entries: decode it, and open a file holding it.

Each suite runs with no compression and with LZ4 (ArrayFile: LZ4 blocks; the zarr peers: the
numcodecs LZ4 codec on each chunk). Speed is never asserted: the script prints figures,
ratios and whether the targets are met. Data is random-walk floats, regenerated per run.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from typing import Any, ClassVar

import numpy as np
import zarr
from zarr.storage import LocalStore

import dafzarr
from dafzarr import ArrayFile, DeltaCache, FileConfig

from . import common as c

icechunk: Any
try:
    import icechunk
except ImportError:  # pragma: no cover - icechunk is a declared benchmark dependency
    icechunk = None

warnings.filterwarnings("ignore", message=".*not part of the Zarr.*")  # numcodecs.zarr3 codecs


def _zarr_codecs(codec: str | None) -> Any:
    if codec is None:
        return None
    from numcodecs.zarr3 import LZ4

    return [LZ4()]


_ratio_target = c.ratio_target


class _Suite(c.TempDirSuite):
    params: ClassVar[list[str]] = ["none", "lz4"]
    param_names: ClassVar[list[str]] = ["codec"]
    baseline = ("zarr sharded", "icechunk")
    codec: str | None = None
    temp_prefix = "dafzarr-bench-af-"

    def _af_config(self) -> FileConfig:
        return FileConfig(codec=self.codec)

    def prepare(self, name: str) -> None:
        """Remove the output a write sample is about to make, right before it."""
        if name == "time_write_arrayfile":
            self._af_remove("w")
        elif name == "time_write_zarr":
            c.remove(self._path("w.zarr"))
        elif name == "time_write_icechunk":
            c.remove(self._path("w.ic"))

    def _af_remove(self, stem: str) -> None:
        for name in os.listdir(self.dir):
            if name.startswith(stem + "."):
                c.remove(self._path(name))


# --- (a) many arrays -------------------------------------------------------------------


def _many(count: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng()
    return [np.cumsum(rng.standard_normal(n)).round(3) for _ in range(count)]


class ManyArrays(_Suite):
    """1,000 x 1 MiB arrays (quick: 100): write all, then open and read all."""

    label = "a"
    chunk = 16_384  # 128 KiB of float64

    def setup(self, codec: str) -> None:
        self.codec = None if codec == "none" else codec
        self._mktemp()
        count = 100 if c.quick() else 1000
        self.arrays = _many(count, 131_072)
        self.names = [f"a{i:04d}" for i in range(count)]
        self.nbytes = sum(x.nbytes for x in self.arrays)
        # read sources, written once
        self._write_af("read")
        self._write_zarr("read.zarr")
        self._write_icechunk("read.ic")

    def _write_af(self, stem: str) -> None:
        self._af_remove(stem)
        with ArrayFile.create(self._path(f"{stem}.af"), config=self._af_config()) as f:
            for name, x in zip(self.names, self.arrays, strict=True):
                f.define_array(name, x.dtype, ["t"], x.shape, chunk_shape=[self.chunk])
                f.write_array(name, [0], x)

    def _write_group(self, store: Any) -> None:
        g = zarr.open_group(store=store, mode="w", zarr_format=3)
        for name, x in zip(self.names, self.arrays, strict=True):
            a = g.create_array(name, shape=x.shape, dtype=x.dtype, chunks=(self.chunk,),
                               shards=x.shape, compressors=_zarr_codecs(self.codec))
            a[...] = x

    def _write_zarr(self, name: str) -> None:
        c.remove(self._path(name))
        self._write_group(LocalStore(self._path(name)))

    def _write_icechunk(self, name: str) -> None:
        c.remove(self._path(name))
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(self._path(name)))
        session = repo.writable_session("main")
        g = zarr.open_group(store=session.store, mode="w", zarr_format=3)
        for n, x in zip(self.names, self.arrays, strict=True):
            a = g.create_array(n, shape=x.shape, dtype=x.dtype, chunks=(self.chunk,),
                               compressors=_zarr_codecs(self.codec))
            a[...] = x
        session.commit("write")

    def _size(self) -> str:
        return f"{len(self.arrays)} x 1 MiB, {self.codec or 'none'}"

    @c.bench("many arrays: write", "ArrayFile", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size(), target=_ratio_target("icechunk", 1.5))
    def time_write_arrayfile(self) -> None:
        self._write_af("w")

    @c.bench("many arrays: write", "zarr sharded", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_write_zarr(self) -> None:
        self._write_zarr("w.zarr")

    @c.bench("many arrays: write", "icechunk", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_write_icechunk(self) -> None:
        self._write_icechunk("w.ic")

    @c.bench("many arrays: read", "ArrayFile", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size(), target=_ratio_target("icechunk", 1.5))
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(self._path("read.af"), config=self._af_config()) as f:
            for name in self.names:
                f.read_array(name)

    @c.bench("many arrays: read", "zarr sharded", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_read_zarr(self) -> None:
        g: Any = zarr.open_group(store=LocalStore(self._path("read.zarr"), read_only=True),
                                 mode="r")
        for name in self.names:
            g[name][...]

    @c.bench("many arrays: read", "icechunk", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_read_icechunk(self) -> None:
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self._path("read.ic")))
        g: Any = zarr.open_group(store=repo.readonly_session("main").store, mode="r")
        for name in self.names:
            g[name][...]


# --- (b) one large chunked array -------------------------------------------------------


class BigArray(_Suite):
    """One float64 array of 1 GiB (quick: 64 MiB) in a 64 x 64 grid of chunks."""

    label = "b"
    n_random = 200
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 3}

    def setup(self, codec: str) -> None:
        self.codec = None if codec == "none" else codec
        self._mktemp()
        rows, cols = (2048, 4096) if c.quick() else (8192, 16384)
        self.chunks = (rows // 64, cols // 64)
        self.shards = (self.chunks[0] * 8, self.chunks[1] * 8)
        rng = np.random.default_rng()
        self.x = np.cumsum(rng.standard_normal((rows, cols)), axis=1).round(3)
        self.nbytes = self.x.nbytes
        self.chunk_nbytes = self.chunks[0] * self.chunks[1] * 8
        self._rng = rng
        self.picks = [(int(i), int(j)) for i, j in rng.integers(0, 64, (self.n_random, 2))]
        self._write_af("read")
        self._write_zarr("read.zarr")
        self._write_icechunk("read.ic")
        # the same data in 1 MiB blocks: a random chunk read decompresses 1 MiB, not 8 MiB
        self._af_remove("small")
        with ArrayFile.create(self._path("small.af"), config=FileConfig(
                codec=self.codec, block_target_size=1 << 20)) as f:
            f.define_array("x", self.x.dtype, ["y", "x"], self.x.shape, chunk_shape=self.chunks)
            f.write_array("x", [0, 0], self.x)
        # caches of their own, emptied before each random-read sample (see prepare)
        self._caches = [DeltaCache(), DeltaCache()]
        self._af_small = ArrayFile.open(self._path("small.af"), config=FileConfig(
            codec=self.codec, cache=self._caches[0]))
        self._af = ArrayFile.open(self._path("read.af"), config=FileConfig(
            codec=self.codec, cache=self._caches[1]))
        self._za: Any = zarr.open_array(LocalStore(self._path("read.zarr"), read_only=True),
                                        mode="r")
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self._path("read.ic")))
        self._ia: Any = zarr.open_array(repo.readonly_session("main").store, mode="r")

    def teardown(self, *params: Any) -> None:
        self._af.close()
        self._af_small.close()
        super().teardown()

    def prepare(self, name: str) -> None:
        super().prepare(name)
        if name.startswith("time_random_"):
            # fresh chunks for every sample: a block cache warmed by an earlier sample of the
            # same picks would measure memory, not the read path
            self.picks = [(int(i), int(j)) for i, j in self._rng.integers(0, 64, (self.n_random, 2))]
            for cache in self._caches:
                cache.clear()

    def _write_af(self, stem: str) -> None:
        self._af_remove(stem)
        with ArrayFile.create(self._path(f"{stem}.af"), config=self._af_config()) as f:
            f.define_array("x", self.x.dtype, ["y", "x"], self.x.shape, chunk_shape=self.chunks)
            f.write_array("x", [0, 0], self.x)

    def _write_zarr(self, name: str) -> None:
        c.remove(self._path(name))
        a = zarr.create_array(LocalStore(self._path(name)), shape=self.x.shape,
                              dtype=self.x.dtype, chunks=self.chunks, shards=self.shards,
                              compressors=_zarr_codecs(self.codec))
        a[...] = self.x

    def _write_icechunk(self, name: str) -> None:
        c.remove(self._path(name))
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(self._path(name)))
        session = repo.writable_session("main")
        a = zarr.create_array(session.store, shape=self.x.shape, dtype=self.x.dtype,
                              chunks=self.chunks, compressors=_zarr_codecs(self.codec))
        a[...] = self.x
        session.commit("write")

    def _size(self) -> str:
        return f"{c.human_bytes(self.nbytes)}, 64x64 chunks, {self.codec or 'none'}"

    def _rsize(self) -> str:
        return f"{self.n_random} x {c.human_bytes(self.chunk_nbytes)}, {self.codec or 'none'}"

    def _region(self, i: int, j: int) -> tuple[slice, slice]:
        a, b = self.chunks
        return slice(i * a, (i + 1) * a), slice(j * b, (j + 1) * b)

    @c.bench("1 array: write", "ArrayFile", c.MB, lambda s: s.nbytes, size=lambda s: s._size())
    def time_write_arrayfile(self) -> None:
        self._write_af("w")

    @c.bench("1 array: write", "zarr sharded", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_write_zarr(self) -> None:
        self._write_zarr("w.zarr")

    @c.bench("1 array: write", "icechunk", c.MB, lambda s: s.nbytes, size=lambda s: s._size())
    def time_write_icechunk(self) -> None:
        self._write_icechunk("w.ic")

    @c.bench("1 array: read all", "ArrayFile", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(self._path("read.af"), config=self._af_config()) as f:
            f.read_array("x")

    @c.bench("1 array: read all", "zarr sharded", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_read_zarr(self) -> None:
        zarr.open_array(LocalStore(self._path("read.zarr"), read_only=True), mode="r")[...]

    @c.bench("1 array: read all", "icechunk", c.MB, lambda s: s.nbytes,
             size=lambda s: s._size())
    def time_read_icechunk(self) -> None:
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self._path("read.ic")))
        zarr.open_array(repo.readonly_session("main").store, mode="r")[...]

    @c.bench("1 array: random chunk reads", "ArrayFile", c.PER_CALL, lambda s: s.n_random,
             size=lambda s: s._rsize(), target=_ratio_target("zarr sharded", 2.0))
    def time_random_arrayfile(self) -> None:
        a, b = self.chunks
        for i, j in self.picks:
            self._af.read_array("x", [i * a, j * b], [a, b])

    @c.bench("1 array: random chunk reads", "ArrayFile, 1 MiB blocks", c.PER_CALL,
             lambda s: s.n_random, size=lambda s: s._rsize(),
             target=_ratio_target("zarr sharded", 2.0))
    def time_random_arrayfile_1mib_blocks(self) -> None:
        a, b = self.chunks
        for i, j in self.picks:
            self._af_small.read_array("x", [i * a, j * b], [a, b])

    @c.bench("1 array: random chunk reads", "zarr sharded", c.PER_CALL, lambda s: s.n_random,
             size=lambda s: s._rsize())
    def time_random_zarr(self) -> None:
        for i, j in self.picks:
            self._za[self._region(i, j)]

    @c.bench("1 array: random chunk reads", "icechunk", c.PER_CALL, lambda s: s.n_random,
             size=lambda s: s._rsize())
    def time_random_icechunk(self) -> None:
        for i, j in self.picks:
            self._ia[self._region(i, j)]


# --- (c) footer decoding --------------------------------------------------------------


class Footer:
    """Decode a footer holding 1,000,000 chunk entries (2-D), and open a file with it."""

    label = "c"
    baseline = ()
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        from dafzarr.arrayfile import _format as fmt

        self._tmp = tempfile.TemporaryDirectory(prefix="dafzarr-bench-af-")
        self.n = 1_000_000
        coords = np.stack(np.unravel_index(np.arange(self.n), (1000, 1000)), axis=1)
        addrs = np.zeros((self.n, 3), np.uint32)
        addrs[:, 1] = np.arange(self.n) % 1024 * 8
        addrs[:, 2] = 8
        footer = fmt.empty_footer()
        footer["blocks"] = [{"id": 0, "file_offset": 0, "compressed_size": 8192,
                             "uncompressed_size": 8192, "codec": ("None",)}]
        footer["arrays"] = [{
            "name": "grid", "dtype": ("Float64",),
            "layout": {"shape": [1000, 1000], "dimension_names": ["y", "x"],
                       "storage": {"chunk_shape": [1, 1], "chunks": fmt.ChunkTable(
                           coords.astype(np.uint32), addrs)}},
            "fill_value": None, "deleted": False, "attributes": ("U16", []),
        }]
        self.data = fmt.encode_footer(footer)
        self.path = os.path.join(self._tmp.name, "grid.af")
        with open(self.path, "wb") as f:
            f.write(bytes(8192) + self.data)

    def teardown(self) -> None:
        self._tmp.cleanup()

    @c.bench("footer: decode 1M chunk entries", "ArrayFile", c.ENTRIES, lambda s: s.n,
             size=lambda s: c.human_bytes(len(s.data)))
    def time_decode(self) -> None:
        from dafzarr.arrayfile import _format as fmt

        fmt.decode_footer(self.data[:-12])

    @c.bench("footer: open + first chunk read", "ArrayFile", c.ENTRIES, lambda s: s.n,
             size=lambda s: c.human_bytes(len(s.data)))
    def time_open(self) -> None:
        with ArrayFile.open(self.path) as f:
            f.read_array("grid", [500, 500], [1, 1])


SUITES: dict[str, list[type]] = {"a": [ManyArrays], "b": [BigArray], "c": [Footer]}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_arrayfile", __doc__, SUITES)
    ap.add_argument("--codecs", default="none,lz4", help="comma-separated: none,lz4")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    if icechunk is None:
        ap.error("the icechunk peer is missing: pip install 'dafzarr[bench]'")
    codecs = [s.strip() for s in args.codecs.split(",") if s.strip()]
    for key in only:
        for cls in SUITES[key]:
            if hasattr(cls, "params"):
                cls.params = codecs
    rounds = args.rounds or 3
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    c.report("ArrayFile benchmarks", [
        (f"* dafzarr {dafzarr.__version__}, zarr {zarr.__version__}, icechunk "
         f"{icechunk.__version__}"),
        *clock.lines(rounds),
    ], results, (
        "Rates use MB = 10^6 bytes; random reads are in µs per chunk read (lower is "
        "better). ratio = how many times faster than the named peer (medians). Targets are "
        "informational."
    ))
    return 0

if __name__ == "__main__":
    sys.exit(main())
