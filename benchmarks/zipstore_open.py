"""Suite i of ``python -m benchmarks.bench_zipstore``: opening and listing an archive of many
entries, with the peak memory of each open in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import ClassVar

import numpy as np

from dafzarr import MmapZipStore

from . import common as c
from .zipstore_reads import _TempDirSuite

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
    res = subprocess.run(
        [sys.executable, "-c", _OPEN_CHILD, how, path], capture_output=True, text=True, check=True
    )
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

    @c.bench(
        "open + list keys",
        'MmapZipStore(path, "r")',
        c.ENTRIES,
        lambda s: s.count,
        size=lambda s: s._size(),
        target=_open_target,
    )
    def time_open_read(self) -> None:
        _open_and_list("r", self.path)

    @c.bench(
        "open + list keys",
        'MmapZipStore(path, "r+")',
        c.ENTRIES,
        lambda s: s.count,
        size=lambda s: s._size(),
        target=_open_target,
    )
    def time_open_writable(self) -> None:
        _open_and_list("r+", self.path)

    @c.bench(
        "open + list keys",
        "zipfile.ZipFile.namelist",
        c.ENTRIES,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_open_zipfile(self) -> None:
        _open_and_list("zipfile", self.path)


def open_memory_report(count: int) -> str:
    """Peak RSS of open + list for each opener, one child process each."""
    rows = [
        "| open + list keys | RSS after imports | peak RSS | peak above imports |",
        "|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-open-") as tmp:
        path = os.path.join(tmp, "many.zip")
        _write_many_entries(path, count)
        for how, label in (
            ("r", 'MmapZipStore(path, "r")'),
            ("r+", 'MmapZipStore(path, "r+")'),
            ("zipfile", "zipfile.ZipFile.namelist"),
        ):
            before, peak = open_peak_rss(how, path)
            rows.append(
                f"| {label} | {c.human_bytes(before)} | {c.human_bytes(peak)} | "
                f"{c.human_bytes(peak - before)} |"
            )
    return f"{count:,} entries:\n\n" + "\n".join(rows)


def open_growth_report(sizes: list[int]) -> str:
    """Median time of open + list (3 runs, alternating) at each size: the growth of cost."""
    rows = [
        "| entries | MmapZipStore r | MmapZipStore r+ | zipfile namelist | r per entry |",
        "|---|---|---|---|---|",
    ]

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
            rows.append(
                f"| {count:,} | {med['r']:.3f} s | {med['r+']:.3f} s | "
                f"{med['zipfile']:.3f} s | {med['r'] / count * 1e9:.0f} ns |"
            )
            c.remove(path)
    return "\n".join(rows)
