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

import sys

import h5py

import dafzarr

from . import common as c
from .refs_local import ManyFiles, ScanVariable, WriteParquet
from .refs_remote import RemoteFiles, RemoteSmallFiles, peak_memory, writer_growth

SUITES: dict[str, list[type]] = {
    "a": [ScanVariable],
    "b": [WriteParquet],
    "c": [ManyFiles],
    "d": [RemoteFiles],
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
