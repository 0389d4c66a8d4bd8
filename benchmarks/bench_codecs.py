"""Benchmarks of dafzarr's bounded decoding against the codec libraries decoding unbounded.

Run from the project root::

    python -m benchmarks.bench_codecs [--quick] [--only a,b,c]

Every compressed read of dafzarr (foreign ZIP entries, ArrayFile blocks and segments) checks
that the data can produce the size its container claims and, for a large claim, proves it by
decoding in pieces before allocating it. These suites measure what that costs against the
library alone, on the same data in the same run (peers alternate within each round):

a. foreign BZIP2 ZIP entries written by ``zipfile`` (64 x 1 MiB, quick: 16): "sparse" ones
   (zeros with a few random bytes: decoded twice, a checking pass then into one buffer) and
   "noisy" ones (about 2:1, decoded once), against ``zipfile.ZipFile.read``. (DEFLATE entries:
   suite h of ``bench_zipstore``.)
b. one float64 ArrayFile array of 64 MiB (quick: 16 MiB) in 8 MiB zstd or LZ4 blocks: read
   whole, against the library decoding the same bytes compressed in 8 MiB blocks. "walk" data
   (a random walk, about 1.2:1) decode once; "sparse" data (zeros with a few values) make
   every zstd block prove its size in pieces first.
c. 200 random single-chunk reads (256 KiB chunks) of that array, block cache emptied before
   each sample, so that each read decodes its chunk's segment; against the library decoding
   one chunk compressed alone, 200 times.

Speed is never asserted: the script prints medians, bests and ratios.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable
from typing import Any, ClassVar

import lz4.block
import numpy as np
from numcodecs import Zstd

import dafzarr
from dafzarr import ArrayFile, DeltaCache, FileConfig

from . import common as c
from .bench_zipstore import CompressedRead

_BLOCK = 8 * c.MiB


def _data(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` float64 values: a random walk, or zeros with one value in 4,096."""
    if kind == "walk":
        return np.cumsum(rng.standard_normal(n)).round(3)
    x = np.zeros(n)
    x[rng.integers(0, n, n // 4096)] = rng.standard_normal(n // 4096)
    return x


def _codec(name: str) -> tuple[Callable[[Any], bytes], Callable[[bytes, int], Any]]:
    """The library's (compress, decompress to a known size) for a block codec."""
    if name == "lz4":
        return (
            lambda b: lz4.block.compress(b, store_size=False),
            lambda b, n: lz4.block.decompress(b, uncompressed_size=n),
        )
    zstd = Zstd(level=3)
    return (lambda b: bytes(zstd.encode(b)), lambda b, n: zstd.decode(b))


class ZipEntries(CompressedRead):
    """Foreign BZIP2 entries: MmapZipStore's bounded decode against zipfile's (the suite of
    ``benchmarks.bench_zipstore`` that reads DEFLATE entries, with another method)."""

    label = "a"
    compression = zipfile.ZIP_BZIP2
    method_name = "BZIP2"


class _ArraySuite(c.TempDirSuite):
    """One float64 array in 8 MiB blocks of ``codec``, and the same bytes for the peer."""

    params: ClassVar[list[list[str]]] = [["zstd", "lz4"], ["walk", "sparse"]]
    param_names: ClassVar[list[str]] = ["codec", "data"]

    def setup(self, codec: str, kind: str) -> None:
        self._mktemp()
        self.codec, self.kind = codec, kind
        n = (2 if c.quick() else 8) * (1 << 20)  # 16 or 64 MiB of float64
        self.rng = np.random.default_rng()
        self.x = _data(kind, n, self.rng).reshape(-1, 4096)
        self.nbytes = self.x.nbytes
        self.chunk = (8, 4096)  # 256 KiB
        self.path = self.p("a.af")
        with ArrayFile.create(self.path, config=FileConfig(codec=codec)) as f:
            f.define_array("x", self.x.dtype, ["r", "c"], self.x.shape, chunk_shape=self.chunk)
            f.write_array("x", [0, 0], self.x)
        with ArrayFile.open(self.path) as f:
            if not np.array_equal(f.read_array("x"), self.x):
                raise AssertionError("ArrayFile returned wrong data")
        compress, self.decompress = _codec(codec)
        raw = memoryview(self.x).cast("B")
        self.blocks = [compress(raw[i : i + _BLOCK]) for i in range(0, len(raw), _BLOCK)]
        self.block_sizes = [len(raw[i : i + _BLOCK]) for i in range(0, len(raw), _BLOCK)]
        self.chunk_nbytes = 8 * 4096 * 8
        self.one_chunk = compress(raw[: self.chunk_nbytes])


class ArrayRead(_ArraySuite):
    """Whole-array reads: every block decoded."""

    label = "b"
    baseline = ("library, unbounded",)

    @c.bench(
        "read 1 array, 8 MiB {codec} blocks ({kind})",
        "ArrayFile.read_array",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(self.path) as f:
            f.read_array("x")

    @c.bench(
        "read 1 array, 8 MiB {codec} blocks ({kind})",
        "library, unbounded",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: c.human_bytes(s.nbytes),
    )
    def time_decode_library(self) -> None:
        for block, n in zip(self.blocks, self.block_sizes, strict=True):
            self.decompress(block, n)


class RandomChunks(_ArraySuite):
    """Random single-chunk reads: each decodes the segment that holds its chunk."""

    label = "c"
    baseline = ("library, one chunk",)
    n_random = 200

    def setup(self, codec: str, kind: str) -> None:
        super().setup(codec, kind)
        self.cache = DeltaCache()
        self.f = ArrayFile.open(self.path, config=FileConfig(codec=codec, cache=self.cache))
        self.rows = self.x.shape[0] // self.chunk[0]

    def teardown(self, *params: Any) -> None:
        self.f.close()
        super().teardown()

    def prepare(self, name: str) -> None:
        self.picks = [int(i) for i in self.rng.integers(0, self.rows, self.n_random)]
        self.cache.clear()

    @c.bench(
        "200 random 256 KiB chunk reads, {codec} ({kind})",
        "ArrayFile.read_array",
        c.PER_CALL,
        lambda s: s.n_random,
    )
    def time_random_arrayfile(self) -> None:
        for i in self.picks:
            self.f.read_array("x", [i * 8, 0], list(self.chunk))

    @c.bench(
        "200 random 256 KiB chunk reads, {codec} ({kind})",
        "library, one chunk",
        c.PER_CALL,
        lambda s: s.n_random,
    )
    def time_random_library(self) -> None:
        for _ in self.picks:
            self.decompress(self.one_chunk, self.chunk_nbytes)


SUITES: dict[str, list[type]] = {"a": [ZipEntries], "b": [ArrayRead], "c": [RandomChunks]}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_codecs", __doc__, SUITES)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    rounds = args.rounds or (3 if c.quick() else 5)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    c.report(
        "Bounded decoding benchmarks",
        [
            f"* dafzarr {dafzarr.__version__} from {dafzarr.__file__}",
            *clock.lines(rounds),
        ],
        results,
        (
            "Rates use MB = 10^6 bytes; random reads are in µs per chunk read (lower is better). "
            "ratio = how many times faster than the named peer (medians)."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
