"""Suites e to h of ``python -m benchmarks.bench_zipstore``: CRC-32, pack, compact and
DEFLATE reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
import zlib
from typing import Any, ClassVar

import numpy as np
import zarr
from isal import isal_zlib
from zarr.storage import LocalStore

from dafzarr import MmapZipStore, _posix
from dafzarr._core import crc as _crc

from . import common as c
from .zipstore_reads import _ratio_target, _TempDirSuite

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
        got = {
            "dafzarr": _crc.crc32(self.buf),
            "own kernel": _posix.crc32(self.buf),
            "isal": isal_zlib.crc32(self.buf),
        }
        for k, v in got.items():
            if v != want:
                raise AssertionError(f"{k} CRC-32 {v:#x} != zlib's {want:#x}")

    @property
    def size_h(self) -> str:
        return c.human_bytes(self.size)

    @c.bench(
        "CRC-32 {size_h}",
        "dafzarr._core.crc.crc32",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
    def time_crc_dafzarr(self) -> None:
        f, b = _crc.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench(
        "CRC-32 {size_h}",
        f"own kernel ({_posix.CRC32_KERNEL})",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
    def time_crc_own(self) -> None:
        f, b = _posix.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench(
        "CRC-32 {size_h}",
        "zlib.crc32",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
    def time_crc_zlib(self) -> None:
        f, b = zlib.crc32, self.buf
        for _ in range(self.reps):
            f(b)

    @c.bench(
        "CRC-32 {size_h}",
        "isal.isal_zlib.crc32",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
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

    @c.bench(
        "copy + CRC-32 {size_h}",
        "FileMapping.write_crc32 (fused)",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
    def time_fused(self) -> None:
        fm, b = self.fm, self.src
        for _ in range(self.reps):
            fm.write_crc32(0, b)

    @c.bench(
        "copy + CRC-32 {size_h}",
        "write + isal.crc32",
        c.MB,
        lambda s: s.size * s.reps,
        size=lambda s: f"{s.size_h} x {s.reps}",
    )
    def time_write_then_isal(self) -> None:
        fm, b, crc = self.fm, self.src, isal_zlib.crc32
        for _ in range(self.reps):
            fm.write(0, b)
            crc(b)


# --- (f) pack a directory store, (g) compaction --------------------------------------------


def _write_directory_store(path: str, nbytes: int, files: int) -> None:
    """A zarr v2 directory store: one float64 array of ``files`` chunks, ``nbytes`` in all."""
    row = max(1, nbytes // files // 8)
    a = zarr.create_array(
        store=LocalStore(path),
        shape=(files, row),
        chunks=(1, row),
        dtype="float64",
        compressors=None,
        zarr_format=2,
    )
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

    @c.bench(
        "pack a directory store",
        "MmapZipStore.pack",
        c.MB,
        lambda s: s.total,
        size=lambda s: s._size(),
        target=_ratio_target("zip -0 -r", 2.0),
    )
    def time_pack_mmapzip(self) -> None:
        MmapZipStore.pack(self.src, self.p("time_pack_mmapzip.zip"))

    @c.bench(
        "pack a directory store", "zip -0 -r", c.MB, lambda s: s.total, size=lambda s: s._size()
    )
    def time_pack_zip(self) -> None:
        subprocess.run(
            ["zip", "-0", "-r", "-q", self.p("time_pack_zip.zip"), "."], cwd=self.src, check=True
        )


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
        return (
            f"{s.entries:,} entries, {c.human_bytes(s.live_bytes)} live + "
            f"{c.human_bytes(s.dead_bytes)} dead"
        )

    @c.bench(
        "compact an archive",
        "MmapZipStore.compact(path, out)",
        c.MB,
        lambda s: s.space.live_bytes,
        size=lambda s: s._size(),
    )
    def time_compact_mmapzip(self) -> None:
        MmapZipStore.compact(self.source, self.p("time_compact_mmapzip.zip"))

    @c.bench(
        "compact an archive",
        "copy + fsync of the result",
        c.MB,
        lambda s: s.space.live_bytes,
        size=lambda s: s._size(),
    )
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

    @c.bench(
        "read {count} x 1 MiB {method_name} entries ({kind})",
        "MmapZipStore[key]",
        c.MB,
        lambda s: s.size * s.count,
    )
    def time_read_mmapzip(self) -> None:
        with MmapZipStore(self.path) as store:
            for k in self.keys:
                store[k].release()

    @c.bench(
        "read {count} x 1 MiB {method_name} entries ({kind})",
        "zipfile.ZipFile.read",
        c.MB,
        lambda s: s.size * s.count,
    )
    def time_read_zipfile(self) -> None:
        with zipfile.ZipFile(self.path) as z:
            for k in self.keys:
                z.read(k)
