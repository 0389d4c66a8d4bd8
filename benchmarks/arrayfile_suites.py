"""Suites a and b of ``python -m benchmarks.bench_arrayfile``: many small arrays, and one large
chunked array (the suite base too)."""

from __future__ import annotations

import os
import warnings
from typing import Any, ClassVar

import numpy as np
import zarr
from zarr.storage import LocalStore

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
    baseline: tuple[str, ...] = ("zarr sharded", "icechunk")
    codec: str | None = None
    temp_prefix = "dafzarr-bench-af-"

    def _af_config(self) -> FileConfig:
        return FileConfig(codec=self.codec)

    @property
    def codec_name(self) -> str:
        """The codec as the table's operations name it (each codec is an operation of its
        own, so that ratios compare peers of one codec)."""
        return self.codec or "none"

    def prepare(self, name: str) -> None:
        """Remove the output a write sample is about to make, right before it."""
        if name == "time_write_arrayfile":
            self._af_remove("w")
        elif name == "time_write_zarr":
            c.remove(self.p("w.zarr"))
        elif name == "time_write_icechunk":
            c.remove(self.p("w.ic"))
        elif name.startswith("time_write_plain"):
            c.remove(self.p("w.plain"))

    def _af_remove(self, stem: str) -> None:
        for name in os.listdir(self.dir):
            if name.startswith(stem + "."):
                c.remove(self.p(name))


# --- (a) many arrays -------------------------------------------------------------------


def _many(count: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng()
    return [np.cumsum(rng.standard_normal(n)).round(3) for _ in range(count)]


PLAIN = "plain files"
PLAIN_FSYNC = "plain files, fsync each"


def _plain_target(other: str, factor: float) -> Any:
    """At least ``factor`` times the speed of plain-file peer ``other``; with compression the
    ratio is shown but the target (set for uncompressed data) does not apply."""
    base = _ratio_target(other, factor)

    def target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
        if "none" in s.size:
            return base(s, peers)
        r = s.speedup_over(peers[other]) if other in peers else float("nan")
        return f"informational with compression: is {r:.2f}x {other}", True

    return target


def _both(*targets: Any) -> Any:
    """Several targets in one column: met when each is."""

    def target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
        outs = [t(s, peers) for t in targets]
        return "; ".join(text for text, _ in outs), all(ok for _, ok in outs)

    return target


def _write_plain(
    directory: str, names: list[str], arrays: list[np.ndarray], *, fsync: bool
) -> None:
    """One file per array (``ndarray.tofile``); ``fsync``: each file, then the directory."""
    os.mkdir(directory)
    for name, x in zip(names, arrays, strict=True):
        path = os.path.join(directory, name)
        if fsync:
            with open(path, "wb") as f:
                x.tofile(f)
                f.flush()
                os.fsync(f.fileno())
        else:
            x.tofile(path)
    if fsync:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_plain(directory: str, names: list[str], dtype: Any) -> None:
    for name in names:
        np.fromfile(os.path.join(directory, name), dtype=dtype)


class ManyArrays(_Suite):
    """1,000 x 1 MiB arrays (quick: 100): write all, then open and read all."""

    label = "a"
    chunk = 16_384  # 128 KiB of float64
    baseline = ("zarr sharded", "icechunk", PLAIN, PLAIN_FSYNC)

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
        _write_plain(self.p("read.plain"), self.names, self.arrays, fsync=False)

    def _write_af(self, stem: str) -> None:
        self._af_remove(stem)
        with ArrayFile.create(self.p(f"{stem}.af"), config=self._af_config()) as f:
            for name, x in zip(self.names, self.arrays, strict=True):
                f.define_array(name, x.dtype, ["t"], x.shape, chunk_shape=[self.chunk])
                f.write_array(name, [0], x)

    def _write_group(self, store: Any) -> None:
        g = zarr.open_group(store=store, mode="w", zarr_format=3)
        for name, x in zip(self.names, self.arrays, strict=True):
            a = g.create_array(
                name,
                shape=x.shape,
                dtype=x.dtype,
                chunks=(self.chunk,),
                shards=x.shape,
                compressors=_zarr_codecs(self.codec),
            )
            a[...] = x

    def _write_zarr(self, name: str) -> None:
        c.remove(self.p(name))
        self._write_group(LocalStore(self.p(name)))

    def _write_icechunk(self, name: str) -> None:
        c.remove(self.p(name))
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(self.p(name)))
        session = repo.writable_session("main")
        g = zarr.open_group(store=session.store, mode="w", zarr_format=3)
        for n, x in zip(self.names, self.arrays, strict=True):
            a = g.create_array(
                n,
                shape=x.shape,
                dtype=x.dtype,
                chunks=(self.chunk,),
                compressors=_zarr_codecs(self.codec),
            )
            a[...] = x
        session.commit("write")

    def _size(self) -> str:
        return f"{len(self.arrays)} x 1 MiB, {self.codec or 'none'}"

    @c.bench(
        "many arrays, {codec_name}: write",
        "ArrayFile",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_both(_ratio_target("icechunk", 1.5), _plain_target(PLAIN_FSYNC, 0.5)),
    )
    def time_write_arrayfile(self) -> None:
        self._write_af("w")

    @c.bench(
        "many arrays, {codec_name}: write",
        PLAIN,
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_plain(self) -> None:
        _write_plain(self.p("w.plain"), self.names, self.arrays, fsync=False)

    @c.bench(
        "many arrays, {codec_name}: write",
        PLAIN_FSYNC,
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_plain_fsync(self) -> None:
        _write_plain(self.p("w.plain"), self.names, self.arrays, fsync=True)

    @c.bench(
        "many arrays, {codec_name}: write",
        "zarr sharded",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_zarr(self) -> None:
        self._write_zarr("w.zarr")

    @c.bench(
        "many arrays, {codec_name}: write",
        "icechunk",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_icechunk(self) -> None:
        self._write_icechunk("w.ic")

    @c.bench(
        "many arrays, {codec_name}: read",
        "ArrayFile",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_both(_ratio_target("icechunk", 1.5), _plain_target(PLAIN, 0.8)),
    )
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(self.p("read.af"), config=self._af_config()) as f:
            for name in self.names:
                f.read_array(name)

    @c.bench(
        "many arrays, {codec_name}: read", PLAIN, c.MB, lambda s: s.nbytes, size=lambda s: s._size()
    )
    def time_read_plain(self) -> None:
        _read_plain(self.p("read.plain"), self.names, np.float64)

    @c.bench(
        "many arrays, {codec_name}: read",
        "zarr sharded",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_read_zarr(self) -> None:
        g: Any = zarr.open_group(store=LocalStore(self.p("read.zarr"), read_only=True), mode="r")
        for name in self.names:
            g[name][...]

    @c.bench(
        "many arrays, {codec_name}: read",
        "icechunk",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_read_icechunk(self) -> None:
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self.p("read.ic")))
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
        with ArrayFile.create(
            self.p("small.af"), config=FileConfig(codec=self.codec, block_target_size=1 << 20)
        ) as f:
            f.define_array("x", self.x.dtype, ["y", "x"], self.x.shape, chunk_shape=self.chunks)
            f.write_array("x", [0, 0], self.x)
        # caches of their own, emptied before each random-read sample (see prepare)
        self._caches = [DeltaCache(), DeltaCache()]
        self._af_small = ArrayFile.open(
            self.p("small.af"), config=FileConfig(codec=self.codec, cache=self._caches[0])
        )
        self._af = ArrayFile.open(
            self.p("read.af"), config=FileConfig(codec=self.codec, cache=self._caches[1])
        )
        self._za: Any = zarr.open_array(LocalStore(self.p("read.zarr"), read_only=True), mode="r")
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self.p("read.ic")))
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
            self.picks = [
                (int(i), int(j)) for i, j in self._rng.integers(0, 64, (self.n_random, 2))
            ]
            for cache in self._caches:
                cache.clear()

    def _write_af(self, stem: str) -> None:
        self._af_remove(stem)
        with ArrayFile.create(self.p(f"{stem}.af"), config=self._af_config()) as f:
            f.define_array("x", self.x.dtype, ["y", "x"], self.x.shape, chunk_shape=self.chunks)
            f.write_array("x", [0, 0], self.x)

    def _write_zarr(self, name: str) -> None:
        c.remove(self.p(name))
        a = zarr.create_array(
            LocalStore(self.p(name)),
            shape=self.x.shape,
            dtype=self.x.dtype,
            chunks=self.chunks,
            shards=self.shards,
            compressors=_zarr_codecs(self.codec),
        )
        a[...] = self.x

    def _write_icechunk(self, name: str) -> None:
        c.remove(self.p(name))
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(self.p(name)))
        session = repo.writable_session("main")
        a = zarr.create_array(
            session.store,
            shape=self.x.shape,
            dtype=self.x.dtype,
            chunks=self.chunks,
            compressors=_zarr_codecs(self.codec),
        )
        a[...] = self.x
        session.commit("write")

    def _size(self) -> str:
        return f"{c.human_bytes(self.nbytes)}, 64x64 chunks, {self.codec or 'none'}"

    def _rsize(self) -> str:
        return f"{self.n_random} x {c.human_bytes(self.chunk_nbytes)}, {self.codec or 'none'}"

    def _region(self, i: int, j: int) -> tuple[slice, slice]:
        a, b = self.chunks
        return slice(i * a, (i + 1) * a), slice(j * b, (j + 1) * b)

    @c.bench(
        "1 array, {codec_name}: write",
        "ArrayFile",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_arrayfile(self) -> None:
        self._write_af("w")

    @c.bench(
        "1 array, {codec_name}: write",
        "zarr sharded",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_zarr(self) -> None:
        self._write_zarr("w.zarr")

    @c.bench(
        "1 array, {codec_name}: write",
        "icechunk",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_write_icechunk(self) -> None:
        self._write_icechunk("w.ic")

    @c.bench(
        "1 array, {codec_name}: read all",
        "ArrayFile",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(self.p("read.af"), config=self._af_config()) as f:
            f.read_array("x")

    @c.bench(
        "1 array, {codec_name}: read all",
        "zarr sharded",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_read_zarr(self) -> None:
        zarr.open_array(LocalStore(self.p("read.zarr"), read_only=True), mode="r")[...]

    @c.bench(
        "1 array, {codec_name}: read all",
        "icechunk",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_read_icechunk(self) -> None:
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(self.p("read.ic")))
        zarr.open_array(repo.readonly_session("main").store, mode="r")[...]

    @c.bench(
        "1 array, {codec_name}: random chunk reads",
        "ArrayFile",
        c.PER_CALL,
        lambda s: s.n_random,
        size=lambda s: s._rsize(),
        target=_ratio_target("zarr sharded", 2.0),
    )
    def time_random_arrayfile(self) -> None:
        a, b = self.chunks
        for i, j in self.picks:
            self._af.read_array("x", [i * a, j * b], [a, b])

    @c.bench(
        "1 array, {codec_name}: random chunk reads",
        "ArrayFile, 1 MiB blocks",
        c.PER_CALL,
        lambda s: s.n_random,
        size=lambda s: s._rsize(),
        target=_ratio_target("zarr sharded", 2.0),
    )
    def time_random_arrayfile_1mib_blocks(self) -> None:
        a, b = self.chunks
        for i, j in self.picks:
            self._af_small.read_array("x", [i * a, j * b], [a, b])

    @c.bench(
        "1 array, {codec_name}: random chunk reads",
        "zarr sharded",
        c.PER_CALL,
        lambda s: s.n_random,
        size=lambda s: s._rsize(),
    )
    def time_random_zarr(self) -> None:
        for i, j in self.picks:
            self._za[self._region(i, j)]

    @c.bench(
        "1 array, {codec_name}: random chunk reads",
        "icechunk",
        c.PER_CALL,
        lambda s: s.n_random,
        size=lambda s: s._rsize(),
    )
    def time_random_icechunk(self) -> None:
        for i, j in self.picks:
            self._ia[self._region(i, j)]
