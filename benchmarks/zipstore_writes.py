"""Suites c and d of ``python -m benchmarks.bench_zipstore``: small appends, commit cost vs
archive size, and large appends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Any, ClassVar

import numpy as np

from dafzarr import MmapZipStore, _posix

from . import common as c
from .zipstore_reads import _TempDirSuite

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

    @c.bench(
        "100-byte appends, one batch",
        "MmapZipStore batch()",
        c.ENTRIES,
        lambda s: s.n_batch,
        size=lambda s: f"N = {s.n_batch:,}",
        target=_batched_target,
    )
    def time_batched_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_batched_mmapzip"), "w")
        with store.batch():
            for k, v in self.items[: self.n_batch]:
                store[k] = v
        store.close()

    @c.bench(
        "100-byte appends, one batch",
        "MmapZipStore set_many()",
        c.ENTRIES,
        lambda s: s.n_batch,
        size=lambda s: f"N = {s.n_batch:,}",
        target=_batched_target,
    )
    def time_set_many_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_set_many_mmapzip"), "w")
        store.set_many(self.items[: self.n_batch])
        store.close()

    @c.bench(
        "100-byte appends, one batch",
        "zipfile 'a'",
        c.ENTRIES,
        lambda s: s.n_batch,
        size=lambda s: f"N = {s.n_batch:,}",
    )
    def time_batched_zipfile(self) -> None:
        with zipfile.ZipFile(self._fresh("time_batched_zipfile"), "a", zipfile.ZIP_STORED) as z:
            for k, v in self.items[: self.n_batch]:
                z.writestr(k, v)

    @c.bench(
        "100-byte appends, singly",
        "MmapZipStore (commit each)",
        c.ENTRIES,
        lambda s: s.n_single,
        size=lambda s: f"N = {s.n_single:,}",
    )
    def time_single_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_single_mmapzip"), "w")
        for k, v in self.items[: self.n_single]:
            store[k] = v
        store.close()

    @c.bench(
        "100-byte appends, singly",
        "zipfile 'a'",
        c.ENTRIES,
        lambda s: s.n_single,
        size=lambda s: f"N = {s.n_single:,}",
    )
    def time_single_zipfile(self) -> None:
        with zipfile.ZipFile(self._fresh("time_single_zipfile"), "a", zipfile.ZIP_STORED) as z:
            for k, v in self.items[: self.n_single]:
                z.writestr(k, v)

    @c.bench(
        "100-byte appends, commit each",
        "MmapZipStore (commit each)",
        c.ENTRIES,
        lambda s: s.n_commit,
        size=lambda s: f"N = {s.n_commit:,}",
    )
    def time_commit_mmapzip(self) -> None:
        store = MmapZipStore(self._fresh("time_commit_mmapzip"), "w")
        for k, v in self.items[: self.n_commit]:
            store[k] = v
        store.close()

    @c.bench(
        "100-byte appends, commit each",
        "zipfile 'a' reopen+close each",
        c.ENTRIES,
        lambda s: s.n_commit,
        size=lambda s: f"N = {s.n_commit:,}",
    )
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
    text = (
        f"≥ 1,000 commits/s (is {s.median_rate:,.0f}; the pwrite of one directory "
        f"alone allows {lim.median_rate:,.0f}/s"
    )
    slots = peers.get("limit: directory past the end, then down")
    if slots is not None:
        text += (
            f", written past the end and back down {slots.median_rate:,.0f}/s: "
            f"{s.median_rate / slots.median_rate:.2f}x that"
        )
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

    @c.bench(
        "commit each, into {entries_h} entries",
        "MmapZipStore store[k] = v",
        c.ENTRIES,
        lambda s: s.commits,
        size=lambda s: s._size(),
        target=_limit_target,
    )
    def time_commit_mmapzip(self) -> None:
        if self.store is None:  # asv calls no prepare()
            self.prepare("time_commit_mmapzip")
        store, r = self.store, self.round
        assert store is not None
        for i in range(self.commits):
            store[f"new/{r}/{i:05d}"] = b"x" * _ENTRY

    @c.bench(
        "commit each, into {entries_h} entries",
        "limit: pwrite one directory",
        c.ENTRIES,
        lambda s: s.commits,
        size=lambda s: s._size(),
    )
    def time_pwrite_directory(self) -> None:
        fd, cd = self.fd, self.cd
        for _ in range(self.commits):
            os.pwrite(fd, cd, 0)

    @c.bench(
        "commit each, into {entries_h} entries",
        "limit: directory past the end, then down",
        c.ENTRIES,
        lambda s: s.commits,
        size=lambda s: s._size(),
    )
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

    @c.bench(
        "commit each, into {entries_h} entries",
        "limit: memcpy one directory",
        c.ENTRIES,
        lambda s: s.commits,
        size=lambda s: s._size(),
    )
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
    head = (
        "entries N",
        "batched, per append",
        "single commit, per append",
        "per directory MB",
        "directory",
        "peak RSS above inputs",
        "RSS per entry",
    )
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-growth-") as tmp:
        path = os.path.join(tmp, "growth.zip")
        for n in sizes:
            commits = max(5, min(100, 2_000_000 // n))
            runs = []
            for _ in range(3):
                res = subprocess.run(
                    [sys.executable, "-c", _GROWTH_CHILD, path, str(n), str(commits)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
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
    return (
        f"≥ 50% of memcpy (is {100 * r:.1f}%), at least f.write to a new file (is {rf:.2f}x)"
    ), r >= 0.5 or rf >= 1.0


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

    @c.bench(
        "append one {size_h} array",
        "MmapZipStore store[key] = arr",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
        target=_memcpy_target,
    )
    def time_append_mmapzip(self) -> None:
        c.remove(self.path)
        store = MmapZipStore(self.path, "w")
        store["x"] = self.arr
        store.close()

    @c.bench(
        "append one {size_h} array",
        "MmapZipStore, one copy thread",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_append_mmapzip_one_thread(self) -> None:
        previous = _posix.set_threads(1)
        try:
            self.time_append_mmapzip()
        finally:
            _posix.set_threads(previous)

    @c.bench(
        "append one {size_h} array",
        "np.copyto (memcpy, pre-faulted)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_memcpy(self) -> None:
        np.copyto(self.dst, self.arr)

    @c.bench(
        "append one {size_h} array",
        "arr.copy() (fresh pages)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
    def time_copy_fresh(self) -> None:
        self.arr.copy()

    @c.bench(
        "append one {size_h} array",
        "open + f.write + close (new file)",
        c.MB,
        lambda s: s.nbytes,
        size=lambda s: s._size(),
    )
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
