"""Benchmarks of the Daf operations between data sets (``dafzarr.daf.ops``).

Run from the project root::

    python -m benchmarks.bench_daf_ops [--quick] [--only copy-all]

The data: a ZIP data set (``X.daf.zarr.zip``) of 20,000 cells x 10,000 genes with a sparse
float32 UMI matrix of about 10 million stored values (5 % dense; ``--quick``: 4,000 x
5,000), written with ``set_matrix``'s default arguments (so both layouts are stored), plus
five float32 per-cell vectors and two per-gene vectors, random, with a fresh seed each run
(printed).

Suites (peers alternate within each round, same data, same process):

* **copy-all**: ``copy_all`` from the ZIP data set (opened read-only) into a new ZIP data
  set (opened, copied into, closed), next to ``shutil.copyfile`` of the archive's bytes,
  the floor of any copy of the same data. Every timed write starts with the system's dirty
  pages written back (untimed).

Speed is never asserted: the script prints figures, ratios and whether targets are met.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

import dafzarr

from . import common as c


def sizes() -> tuple[int, int, float]:
    return (4_000, 5_000, 0.05) if c.quick() else (20_000, 10_000, 0.05)


def make_source(path: str, the_seed: int) -> int:
    """Write the source data set; returns its number of stored values."""
    cells, genes, density = sizes()
    rng = np.random.default_rng(the_seed)
    umis = sp.random(
        genes,
        cells,
        density=density,
        format="csc",
        dtype=np.float32,
        random_state=rng,
        data_rvs=lambda n: rng.integers(1, 20, n),
    )
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", [f"c{i}" for i in range(cells)])
        d.add_axis("gene", [f"g{i}" for i in range(genes)])
        for i in range(5):
            d.set_vector("cell", f"v{i}", rng.random(cells, dtype=np.float32))
        for i in range(2):
            d.set_vector("gene", f"w{i}", rng.random(genes, dtype=np.float32))
        d.set_matrix("gene", "cell", "UMIs", umis)
    return int(umis.nnz)


def copy_daf_zip(source: str, destination: str) -> None:
    """``copy_all`` as a user calls it: open both, copy, close."""
    from dafzarr.daf.ops import copy_all  # imported here: asv discovers suites on any commit

    with dafzarr.open_daf(source, "r") as src, dafzarr.open_daf(destination, "w") as dst:
        copy_all(source=src, destination=dst)


class _Data:
    seed: int | None = None


def _size(s: Any) -> str:
    cells, genes, _density = sizes()
    return f"{cells:,} x {genes:,}, nnz {s.nnz:,}"


class CopyAll(c.WriterSuite):
    """``copy_all`` between two ZIP data sets vs copying the archive's bytes."""

    label = "copy-all"
    temp_prefix = "dafzarr-bench-daf-ops-"
    baseline = ("shutil.copyfile",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}
    _outputs: ClassVar[dict[str, str]] = {
        "time_copy_all": "copy.daf.zarr.zip",
        "time_copyfile": "bytes.daf.zarr.zip",
    }

    def setup(self) -> None:
        self._mktemp()
        if _Data.seed is None:
            _Data.seed = random.SystemRandom().randrange(1 << 32)
        self.source = self.p("source.daf.zarr.zip")
        self.nnz = make_source(self.source, _Data.seed)
        self.nbytes = os.path.getsize(self.source)

    @c.bench(
        "copy whole data set (ZIP -> ZIP)",
        "copy_all",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=c.ratio_target("shutil.copyfile", 1.5, within=True),
    )
    def time_copy_all(self) -> None:
        copy_daf_zip(self.source, self.p("copy.daf.zarr.zip"))

    @c.bench(
        "copy whole data set (ZIP -> ZIP)", "shutil.copyfile", c.MB, lambda s: s.nbytes, size=_size
    )
    def time_copyfile(self) -> None:
        shutil.copyfile(self.source, self.p("bytes.daf.zarr.zip"))


SUITES: dict[str, list[type]] = {"copy-all": [CopyAll]}


def main(argv: list[str] | None = None) -> int:
    parts = list(SUITES)
    ap = c.argument_parser("python -m benchmarks.bench_daf_ops", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    _Data.seed = args.seed
    rounds = args.rounds or 3
    with c.RunClock() as clock:
        results = c.run_suites(SUITES, only, rounds)
    cells, genes, density = sizes()
    c.report(
        "Daf operations benchmarks",
        [
            f"* dafzarr {dafzarr.__version__}",
            (
                f"* {cells:,} cells x {genes:,} genes at {density:.0%} (float32 UMIs, both layouts), "
                f"5 per-cell and 2 per-gene vectors; seed {_Data.seed}"
            ),
            *clock.lines(rounds),
        ],
        results,
        "MB/s count the source archive's bytes.",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
