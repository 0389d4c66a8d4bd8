"""Suites c and d of ``python -m benchmarks.bench_arrayfile``: footer decoding, and growth with
the number of arrays (with the peak memory table)."""

from __future__ import annotations

import os
import tempfile
import tracemalloc
import warnings
from typing import Any, ClassVar

import numpy as np

from dafzarr import ArrayFile, FileConfig

from . import common as c

icechunk: Any
try:
    import icechunk
except ImportError:  # pragma: no cover - icechunk is a declared benchmark dependency
    icechunk = None
warnings.filterwarnings("ignore", message=".*not part of the Zarr.*")  # numcodecs.zarr3 codecs
from .arrayfile_suites import PLAIN, _read_plain, _write_plain

# --- (c) footer decoding --------------------------------------------------------------


class Footer:
    """Footers of 1,000 and 1,000,000 chunk entries (2-D): decode, open, random lookups."""

    label = "c"
    baseline = ()
    params: ClassVar[list[int]] = [1_000, 1_000_000]
    param_names: ClassVar[list[str]] = ["chunks"]
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}
    n_lookups = 1000

    def setup(self, n: int) -> None:
        from dafzarr._core.arrayfile import format as fmt

        self._tmp = tempfile.TemporaryDirectory(prefix="dafzarr-bench-af-")
        self.n = n
        side = 1000
        grid = (n // side, side)
        coords = np.stack(np.unravel_index(np.arange(self.n), grid), axis=1)
        addrs = np.zeros((self.n, 3), np.uint32)
        addrs[:, 1] = np.arange(self.n) % 1024 * 8
        addrs[:, 2] = 8
        footer = fmt.empty_footer()
        footer["blocks"] = [
            {
                "id": 0,
                "file_offset": 0,
                "compressed_size": 8192,
                "uncompressed_size": 8192,
                "codec": ("None",),
            }
        ]
        footer["arrays"] = [
            {
                "name": "grid",
                "dtype": ("Float64",),
                "layout": {
                    "shape": list(grid),
                    "dimension_names": ["y", "x"],
                    "storage": {
                        "chunk_shape": [1, 1],
                        "chunks": fmt.ChunkTable(coords.astype(np.uint32), addrs),
                    },
                },
                "fill_value": None,
                "deleted": False,
                "attributes": ("U16", []),
            }
        ]
        self.data = fmt.encode_footer(footer)
        self.path = os.path.join(self._tmp.name, "grid.af")
        with open(self.path, "wb") as f:
            f.write(bytes(8192) + self.data)
        self.grid = grid
        self._rng = np.random.default_rng()
        self._af = ArrayFile.open(self.path)
        self._af.read_array("grid", [0, 0], [1, 1])  # builds the chunk index
        self.picks: list[tuple[int, int]] = []

    def teardown(self, *params: Any) -> None:
        self._af.close()
        self._tmp.cleanup()

    def prepare(self, name: str) -> None:
        if name == "time_lookup":
            ys = self._rng.integers(0, self.grid[0], self.n_lookups).tolist()
            xs = self._rng.integers(0, self.grid[1], self.n_lookups).tolist()
            self.picks = list(zip(ys, xs, strict=True))

    def _size(self) -> str:
        return f"{self.n:,} chunks, {c.human_bytes(len(self.data))}"

    @c.bench(
        "footer of {n:,} chunks: decode",
        "ArrayFile",
        c.ENTRIES,
        lambda s: s.n,
        size=lambda s: s._size(),
    )
    def time_decode(self) -> None:
        from dafzarr._core.arrayfile import format as fmt

        fmt.decode_footer(self.data[:-12])

    @c.bench(
        "footer of {n:,} chunks: open + first chunk read",
        "ArrayFile",
        c.ENTRIES,
        lambda s: s.n,
        size=lambda s: s._size(),
        target=lambda s, peers: (f"open < 1 s (is {s.median:.3f} s)", s.median < 1.0),
    )
    def time_open(self) -> None:
        with ArrayFile.open(self.path) as f:
            f.read_array("grid", [self.grid[0] // 2, 500], [1, 1])

    @c.bench(
        "footer of {n:,} chunks: random single-chunk reads (lookup)",
        "ArrayFile",
        c.PER_CALL,
        lambda s: s.n_lookups,
        size=lambda s: s._size(),
    )
    def time_lookup(self) -> None:
        read = self._af.read_array
        for y, x in self.picks:
            read("grid", [y, x], [1, 1])


# --- (d) growth with the number of arrays ----------------------------------------------


class Growth:
    """10 to 100,000 arrays of 100 float64 in one file: write, open, open + read all."""

    label = "d"
    baseline = (PLAIN,)
    params: ClassVar[list[int]] = [10, 100, 1_000, 10_000, 100_000]
    param_names: ClassVar[list[str]] = ["arrays"]
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 3}
    memory: ClassVar[list[tuple[int, int, int, int]]] = []  # (arrays, bytes, held, peak)

    def setup(self, count: int) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="dafzarr-bench-af-")
        self.dir = self._tmp.name
        self.count = count
        rng = np.random.default_rng()
        data = rng.standard_normal((count, 100)).round(3)
        self.arrays = list(data)
        self.names = [f"a{i:06d}" for i in range(count)]
        self.nbytes = data.nbytes
        self._write_af("read.af")
        _write_plain(os.path.join(self.dir, "read.plain"), self.names, self.arrays, fsync=False)
        self._measure_memory()

    def teardown(self, *params: Any) -> None:
        self._tmp.cleanup()

    def _write_af(self, name: str) -> None:
        path = os.path.join(self.dir, name)
        with ArrayFile.create(path, config=FileConfig(codec=None)) as f:
            for n, x in zip(self.names, self.arrays, strict=True):
                f.define_array(n, x.dtype, ["t"], x.shape)
                f.write_array(n, [0], x)

    def _measure_memory(self) -> None:
        tracemalloc.start()
        try:
            f = ArrayFile.open(os.path.join(self.dir, "read.af"), config=FileConfig(codec=None))
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            for n in self.names:
                f.read_array(n)
            peak = tracemalloc.get_traced_memory()[1]
            f.close()
        finally:
            tracemalloc.stop()
        size = os.path.getsize(os.path.join(self.dir, "read.1.af"))
        self.memory.append((self.count, size, held, peak))

    def prepare(self, name: str) -> None:
        if name == "time_write_arrayfile":
            for n in os.listdir(self.dir):
                if n.startswith("w."):
                    c.remove(os.path.join(self.dir, n))
        elif name == "time_write_plain":
            c.remove(os.path.join(self.dir, "w.plain"))

    def _size(self) -> str:
        return f"{self.count:,} x 800 B"

    @c.bench(
        "growth, {count:,} arrays: write all",
        "ArrayFile",
        c.PER_CALL,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_write_arrayfile(self) -> None:
        self._write_af("w.af")

    @c.bench(
        "growth, {count:,} arrays: write all",
        PLAIN,
        c.PER_CALL,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_write_plain(self) -> None:
        _write_plain(os.path.join(self.dir, "w.plain"), self.names, self.arrays, fsync=False)

    @c.bench(
        "growth, {count:,} arrays: open",
        "ArrayFile",
        c.PER_CALL,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_open(self) -> None:
        ArrayFile.open(os.path.join(self.dir, "read.af"), config=FileConfig(codec=None)).close()

    @c.bench(
        "growth, {count:,} arrays: open + read all",
        "ArrayFile",
        c.PER_CALL,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_read_arrayfile(self) -> None:
        with ArrayFile.open(os.path.join(self.dir, "read.af"), config=FileConfig(codec=None)) as f:
            for n in self.names:
                f.read_array(n)

    @c.bench(
        "growth, {count:,} arrays: open + read all",
        PLAIN,
        c.PER_CALL,
        lambda s: s.count,
        size=lambda s: s._size(),
    )
    def time_read_plain(self) -> None:
        _read_plain(os.path.join(self.dir, "read.plain"), self.names, np.float64)


def memory_table() -> str:
    """The memory figures suite d measured, as Markdown."""
    rows = [
        "| arrays | file size | held by an open handle | per array | peak of open + read all |",
        "|---|---|---|---|---|",
    ]
    for count, size, held, peak in Growth.memory:
        rows.append(
            f"| {count:,} | {c.human_bytes(size)} | {c.human_bytes(held)} | "
            f"{held / count:,.0f} B | {c.human_bytes(peak)} |"
        )
    return "\n".join(rows)
