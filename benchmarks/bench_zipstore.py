"""Benchmarks of MmapZipStore against zarr's ZipStore and LocalStore, Python's zipfile,
memcpy and the CRC-32 implementations at hand.

Run from the project root::

    python -m benchmarks.bench_zipstore [--quick] [--only a,b,c,d,e] [--open-sizes 10000,100000]
        [--growth-sizes 1000,10000,100000,1000000]

Suites (each runs the peers alternately on the same data in the same process):

a. zarr v2 group of 100 x 8 MiB float64 arrays (one chunk each, no compressor, random
   data): write, warm read (also against zarr's ``MemoryStore``, and from an archive whose
   arrays were rewritten and others deleted before), and read into a reused pre-faulted
   output array; beside them, the limit a mapping sets: each chunk copied from a fresh
   mapping of the same archive against the same copies from memory.
b. ``try_mmap_entry_as`` + ``.sum()`` vs the sum of an in-memory array and ``np.copyto``
   (memcpy); cost of ``try_mmap_entry_as`` for a 1 KiB and a 1 GiB entry.
c. 100-byte appends: batched (``store[k] = v`` in a ``batch()``, and ``set_many``), singly
   (each append a commit), vs ``zipfile`` in mode "a"; c2: single commits into archives of
   10^3, 10^4 and 10^5 entries vs the limits (a pwrite and a memcpy of one directory, and
   the directory written alternately past the end and back down, as a commit that never
   stores into the live directory must); and the
   cost per append and peak memory vs archive size (10^3 to 10^6 entries, child processes).
d. one 64 MiB and one 512 MiB array appended with ``store[key] = arr`` (with all copy
   threads, and with one) vs memcpy of the same size and ``f.write`` to a new file.
e. CRC-32: the package's (ISA-L, threaded from 32 MiB) vs the project's own kernel, ``zlib``
   and ``isal`` alone; and copy-with-CRC into a mapping: the fused kernel vs copy then ISA-L.
f. ``MmapZipStore.pack`` of a 1 GiB, 10,000-file zarr directory store vs ``zip -0 -r``.
g. ``MmapZipStore.compact`` of a 512 MiB archive with as many dead bytes as live ones, vs
   a plain copy (and fsync) of the compacted archive.
h. reading DEFLATE entries written by ``zipfile`` (sparse ones, which MmapZipStore decodes
   twice, and noisy ones) vs ``zipfile.ZipFile.read``.
i. opening an archive of 10^6 tiny entries (quick: 10^5) and listing its keys, read-only
   and writable, vs ``zipfile.ZipFile(path).namelist()``; and the peak resident memory of
   each in a child process.

Speed is never asserted: the script prints absolute figures, ratios and whether the
project's targets are met. Data is random and regenerated on every run.
"""

from __future__ import annotations

import importlib.metadata
import sys

import zarr

import dafzarr
from dafzarr import _posix

from . import common as c
from .zipstore_files import Compact, CompressedRead, CopyCrc32, Crc32, Pack
from .zipstore_open import OpenLarge, open_growth_report, open_memory_report
from .zipstore_reads import RawMmapRead, ZarrRead, ZarrWrite
from .zipstore_writes import CommitScaling, LargeAppend, SmallAppends, append_growth_report

# --- Command line ----------------------------------------------------------------------

SUITES: dict[str, list[type]] = {
    "a": [ZarrWrite, ZarrRead],
    "b": [RawMmapRead],
    "c": [SmallAppends, CommitScaling],
    "d": [LargeAppend],
    "e": [Crc32, CopyCrc32],
    "f": [Pack],
    "g": [Compact],
    "h": [CompressedRead],
    "i": [OpenLarge],
}


def main(argv: list[str] | None = None) -> int:
    ap = c.argument_parser("python -m benchmarks.bench_zipstore", __doc__, SUITES)
    ap.add_argument(
        "--open-sizes", default="", help="with suite i: also time open + list at these entry counts"
    )
    ap.add_argument(
        "--growth-sizes",
        default="",
        help="with suite c: also time appends vs archive size at these entry "
        "counts (default 1000,10000,100000,1000000; quick: up to 100000)",
    )
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, list(SUITES))
    rounds = args.rounds or (3 if c.quick() else 5)
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
        extra: list[tuple[str, str]] = []
        if "i" in only:
            extra.append(
                (
                    "Open + list keys (child processes, suite i)",
                    open_memory_report(100_000 if c.quick() else 1_000_000),
                )
            )
            if args.open_sizes:
                extra.append(
                    (
                        "Open + list keys vs size (suite i)",
                        open_growth_report([int(n) for n in args.open_sizes.split(",")]),
                    )
                )
        if "c" in only:
            sizes = args.growth_sizes or (
                "1000,10000,100000" if c.quick() else "1000,10000,100000,1000000"
            )
            extra.append(
                (
                    "Appends vs archive size (child processes, suite c)",
                    append_growth_report([int(n) for n in sizes.split(",")]),
                )
            )
    c.report(
        "MmapZipStore benchmarks",
        [
            (
                f"* dafzarr {dafzarr.__version__} (CRC-32 kernel: {_posix.CRC32_KERNEL}, "
                f"{_posix.get_threads()} copy threads), zarr {zarr.__version__}, isal "
                f"{importlib.metadata.version('isal')}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "Rates use MB = 10^6 bytes. **median** is the rate at the median time; ratio = how "
            "many times faster than the named peer (medians). zipfile 'a' writes its central "
            "directory only on close (not crash-safe); MmapZipStore commits each single append. "
            "Targets are informational."
        ),
    )
    for title, part in extra:
        print(f"\n### {title}\n")
        print(part)
        c.record_table(title, part)
    return 0


if __name__ == "__main__":
    sys.exit(main())
