"""Benchmarks of ArrayFile against zarr-python v3 with sharding (LocalStore) and Icechunk.

Run from the project root::

    python -m benchmarks.bench_arrayfile [--quick] [--only a,b] [--codecs none,lz4]

Suites (the peers run alternately on the same data in the same process):

a. many arrays: 1,000 x 1 MiB float64 arrays (quick: 100), 128 KiB chunks. Write all
   (ArrayFile: define + write + flush; zarr: one array per shard; Icechunk: one commit; plain
   files: one ``ndarray.tofile`` per array into a directory), then open and read all back
   (plain files: one ``np.fromfile`` per file). ArrayFile's flush fsyncs its one new file and
   the directory, so the plain files are written twice: without fsync, and with an fsync per
   file plus one of the directory (the same durability).
b. one 1 GiB float64 array (quick: 64 MiB) in a 64 x 64 grid of chunks: write, full read,
   and 200 random single-chunk reads on an open handle (zarr: shards of 8 x 8 chunks) whose
   chunk cache is emptied before every sample, so every read goes to the file; ArrayFile also
   with 1 MiB blocks instead of the default 8 MiB. An LZ4 block written by dafzarr is made of
   independently decodable segments, so a chunk read decodes its segment, not its block.
c. footers of 1,000 and 1,000,000 chunk entries: decode one, open a file holding it and read
   one chunk, and read 1,000 random single chunks on an open handle (the chunk lookup).
d. growth: 10 to 100,000 small arrays (quick: up to 10,000) of 100 float64 each in one file:
   write all, open, and open + read all, next to plain files (one per array); also the
   memory an open handle holds and the peak of a read of every array (tracemalloc).

Each suite runs with no compression and with LZ4 (ArrayFile: LZ4 blocks; the zarr peers: the
numcodecs LZ4 codec on each chunk). Speed is never asserted: the script prints figures,
ratios and whether the targets are met. Data is random-walk floats, regenerated per run.
"""

from __future__ import annotations

import sys

import zarr

import dafzarr

from . import common as c
from .arrayfile_scaling import Footer, Growth, memory_table
from .arrayfile_suites import BigArray, ManyArrays, icechunk

SUITES: dict[str, list[type]] = {
    "a": [ManyArrays],
    "b": [BigArray],
    "c": [Footer],
    "d": [Growth],
}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_arrayfile", __doc__, SUITES)
    ap.add_argument("--codecs", default="none,lz4", help="comma-separated: none,lz4")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    if icechunk is None and ("a" in only or "b" in only):
        ap.error("the icechunk peer is missing: pip install 'dafzarr[bench]'")
    codecs = [s.strip() for s in args.codecs.split(",") if s.strip()]
    for key in only:
        for cls in SUITES[key]:
            if getattr(cls, "param_names", None) == ["codec"]:
                setattr(cls, "params", codecs)  # noqa: B010 - not every suite has params
    if c.quick():
        Growth.params = [n for n in Growth.params if n <= 10_000]
    rounds = args.rounds or 3
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    c.report(
        "ArrayFile benchmarks",
        [
            (
                f"* dafzarr {dafzarr.__version__}, zarr {zarr.__version__}, icechunk "
                f"{icechunk.__version__ if icechunk is not None else 'not installed'}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "Rates use MB = 10^6 bytes; random reads are in µs per chunk read (lower is "
            "better). ratio = how many times faster than the named peer (medians). Targets are "
            "informational."
        ),
    )
    if Growth.memory:
        print("\nMemory (suite d, tracemalloc: Python objects and numpy buffers):\n")
        table = memory_table()
        print(table)
        c.record_table("Memory (suite d, tracemalloc: Python objects and numpy buffers)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
