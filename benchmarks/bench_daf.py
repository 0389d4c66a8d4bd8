"""Benchmarks of ZarrDaf against anndata (``.h5ad`` and ``.zarr``) on the same data.

Run from the project root::

    python -m benchmarks.bench_daf [--quick] [--only time,memory]

The data: a cells x genes sparse UMI matrix (100,000 x 30,000, about 2 % dense, float32;
``--quick``: 10,000 x 30,000), 20 float32 per-cell vectors and a dense 50-column per-cell
matrix (a PCA), random, with a fresh seed each run (printed).

Suites (peers alternate within each round, same data, same process):

* **write**: ZarrDaf directory, ZarrDaf ZIP, anndata ``write_h5ad``, anndata ``write_zarr``,
  and the floor: ``np.save`` of the same arrays (the UMIs' three arrays, the axes' names, the
  vectors and the PCA). Then the UMIs alone (the two axes and the sparse matrix) in ZarrDaf
  next to ``np.save`` of the UMIs' arrays and the names, and next to ``np.save`` +
  ``os.fsync`` of each file (neither ZarrDaf nor ``np.save`` syncs).
* **write dense**: a dense 20,000 x 20,000 float32 matrix (``--quick``: 4,000 x 4,000), as
  ZarrDaf directory and ZIP, from a row-major (C-ordered) array (the column-major layout is
  then its transpose) and from a Fortran-ordered one (the stored bytes as they are), next to
  ``np.save`` of the same array (and with ``os.fsync``), and the machine's limits in memory:
  a plain copy of the matrix and the transpose kernel alone (one and two threads).
* **write growth**: the UMIs and axes write (directory, ZIP, ``np.save``) at 10^6, 10^7 and
  10^8 stored values (``--quick``: 10^5, 10^6), each size in its own child process: median
  time, time per stored value and peak resident memory above the input.

Every timed write starts with the system's dirty pages written back (``os.sync``, untimed):
a writer otherwise pays, at random, for the writeback of the previous writers' output.
* **read sparse**: the whole UMI matrix as a scipy CSR cells x genes matrix (each ZarrDaf
  read opens the data set, reads and closes it), next to one numpy pass over the indices
  (``indices - 1``, the least a 1-based format must do).
* **read vector** / **read flat matrix**: one per-cell vector; the dense PCA matrix.

ZarrDaf stores the UMIs as the Daf matrix ``gene x cell`` (column-major, so its CSC arrays are
exactly the cells x genes CSR that anndata stores) with ``set_matrix``'s default index type
(uint32 here), no relayout; the sparse read also reads a ZIP that holds them as Int64 and as
UInt64 (what Julia's ``SparseMatrixCSC`` writes by default).

The **memory** part runs each writer (and the in-place ``empty_sparse_matrix`` fill of a ZIP)
in a child process and reports its peak resident memory above the memory it had before the
write (which already held the input data), next to the size of the data.

Speed is never asserted: the script prints figures, ratios and whether targets are met.
"""

from __future__ import annotations

import argparse
import sys

import h5py
import zarr

import dafzarr

from . import common as c
from .daf_data import N_PCS, N_VECTORS, sizes
from .daf_memory import SUITES, _growth_child, child, growth_report, memory_report
from .daf_suites import dataset, seed


def main(argv: list[str] | None = None) -> int:
    parts = ["write", "write-dense", "read", "memory", "write-growth"]
    ap = c.argument_parser("python -m benchmarks.bench_daf", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    ap.add_argument("--child", nargs=3, metavar=("TASK", "PATH", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--growth-nnz", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    if args.child and args.child[0] == "growth":
        _growth_child(args.growth_nnz, args.child[1], int(args.child[2]), args.rounds or 3)
        return 0
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    dataset.set_seed(args.seed)
    rounds = args.rounds or 3
    with c.RunClock() as clock:
        c.eprint(f"seed {seed()}; generating data ...")
        results = c.run_suites(SUITES, only, rounds)
        mem = memory_report(seed()) if "memory" in only else ""
        growth = growth_report(seed(), rounds) if "write-growth" in only else ""
    cells, genes, density = sizes()
    c.report(
        "ZarrDaf benchmarks",
        [
            f"* dafzarr {dafzarr.__version__}, zarr {zarr.__version__}, h5py {h5py.__version__}",
            (
                f"* {cells:,} cells x {genes:,} genes at {density:.0%} (float32 UMIs), {N_VECTORS} "
                f"per-cell vectors, a {N_PCS}-column dense PCA; seed {seed()}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "MB/s count the sparse matrix's bytes (data + indices + indptr), or the dense "
            "matrix's bytes. Vector and matrix reads are per call on an open data set."
        ),
    )
    if mem:
        print("\n### Peak resident memory (child processes)\n")
        print(mem)
        c.record_table("Peak resident memory (child processes)", mem)
        print(
            "\nThe fill writes the matrix into reserved ZIP entries through the mapping; "
            "its pages count as resident until the kernel writes them back."
        )
    if growth:
        print("\n### Cost growth: write of the UMIs and the two axes vs stored values\n")
        print(growth)
        c.record_table("Cost growth: write of the UMIs and the two axes vs stored values", growth)
        print(
            "\nEach size in its own child process: peers alternate, 1 warm-up round + "
            f"{rounds} counted rounds; peak = peak resident memory above the memory "
            "before the write (which holds the input); ns/value = median time / stored "
            "values."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
