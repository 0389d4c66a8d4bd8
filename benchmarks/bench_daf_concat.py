"""Benchmark of Daf ``concatenate`` against ``anndata.concat`` + ``write_h5ad`` on the same data.

Run from the project root::

    python -m benchmarks.bench_daf_concat [--quick] [--sets N --cells N --genes N --per-cell N]
                                          [--rounds N] [--seed N]

The data: 8 data sets of 25,000 cells x 30,000 genes, each with 15 M stored float32 UMIs
(600 per cell, ``--quick``: 8 x 2,500 cells, 1.5 M each; or ``DAFZARR_BENCH_CONCAT_CELLS``
in the environment) and 10 float32 per-cell vectors, random, with a fresh seed each run
(printed). Each data set is written twice, as a user would have it: a ZarrDaf ZIP made with
``set_matrix("cell", "gene", "UMIs", csr)`` (the default arguments: both layouts stored) and
``set_vector``, and an ``.h5ad`` written by anndata from the same arrays.

The two sides, each run in its own child process (so that each one's peak resident memory,
``VmHWM``, is its own), alternating, after one uncounted warm-up round:

* **Daf**: open the 8 ZIP data sets read-only, ``concatenate`` them along ``cell`` into a new
  ``.daf.zarr.zip`` (default arguments: a ``dataset`` axis and property), close.
* **anndata**: ``read_h5ad`` of the 8 files (into memory, as ``anndata.concat`` needs them),
  ``anndata.concat(..., join="inner", label="dataset", keys=names)``, ``write_h5ad``.

Both outputs hold the same UMIs (Daf's ``gene x cell`` CSC arrays are anndata's cells x genes
CSR), the vectors and the data set of each cell. Targets: Daf at least 2x faster, and its peak
resident memory at most half of anndata's. Speed is never asserted: the script prints figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

import dafzarr

from . import common as c
from . import record

_SIZES: dict[str, int] = {}
N_VECTORS = 10


def sizes() -> tuple[int, int, int, int]:
    """(data sets, cells per data set, genes, stored values per cell)."""
    env = os.environ.get("DAFZARR_BENCH_CONCAT_CELLS")
    cells = _SIZES.get("cells") or (int(env) if env else (2_500 if c.quick() else 25_000))
    return (_SIZES.get("sets", 8), cells, _SIZES.get("genes", 30_000), _SIZES.get("per_cell", 600))


def umis(cells: int, genes: int, per: int, seed: int) -> sp.csr_matrix:
    """A cells x genes float32 CSR with ``per`` sorted, unique genes per cell (see
    :func:`benchmarks.common.banded_csr`)."""
    x: sp.csr_matrix = c.banded_csr(cells, genes, per, seed)
    return x


def make_inputs(tmp: str, seed: int) -> list[str]:
    """Write the data sets (ZIP and .h5ad); return their names."""
    import anndata as ad
    import pandas as pd

    n_sets, cells, genes, per = sizes()
    gene_names = [f"g{i}" for i in range(genes)]
    names = []
    for k in range(n_sets):
        name = f"batch{k}"
        x = umis(cells, genes, per, seed + k)
        cell_names = [f"{name}_c{i}" for i in range(cells)]
        rng = np.random.default_rng(seed + 1000 + k)
        vectors = {f"v{j}": rng.random(cells, dtype=np.float32) for j in range(N_VECTORS)}
        daf = dafzarr.open_daf(os.path.join(tmp, f"{name}.daf.zarr.zip"), "w", name=name)
        daf.add_axis("cell", cell_names)
        daf.add_axis("gene", gene_names)
        daf.set_matrix("cell", "gene", "UMIs", x)
        for vname, v in vectors.items():
            daf.set_vector("cell", vname, v)
        daf.close()
        adata = ad.AnnData(
            X=x, obs=pd.DataFrame(vectors, index=cell_names), var=pd.DataFrame(index=gene_names)
        )
        adata.write_h5ad(os.path.join(tmp, f"{name}.h5ad"))
        names.append(name)
        c.eprint(f"data set {k + 1}/{n_sets} written")
    return names


def run_daf(tmp: str, names: list[str], out: str) -> None:
    """The Daf side: concatenate the ZIP data sets into a new ZIP data set."""
    from dafzarr.daf.ops import concatenate

    sources = [dafzarr.open_daf(os.path.join(tmp, f"{n}.daf.zarr.zip"), "r", name=n) for n in names]
    dest = dafzarr.open_daf(out, "w", name="all")
    concatenate(dest, "cell", sources)
    dest.close()
    for s in sources:
        s.close()


def run_anndata(tmp: str, names: list[str], out: str) -> None:
    """The anndata side: read the .h5ad files, concat, write_h5ad."""
    import anndata as ad

    adatas = [ad.read_h5ad(os.path.join(tmp, f"{n}.h5ad")) for n in names]
    joined = ad.concat(adatas, axis=0, join="inner", label="dataset", keys=names)
    joined.write_h5ad(out)


def child(side: str, tmp: str, names: list[str]) -> None:
    """Run one side once; print its time and peak resident memory as JSON."""
    warnings.filterwarnings("ignore")
    out = os.path.join(tmp, "out.daf.zarr.zip" if side == "daf" else "out.h5ad")
    c.remove(out)
    c.settle_writeback()
    gc.collect()
    t0 = time.perf_counter()
    (run_daf if side == "daf" else run_anndata)(tmp, names, out)
    elapsed = time.perf_counter() - t0
    print(
        json.dumps(
            {"side": side, "time": elapsed, "peak": c.peak_rss(), "output": os.path.getsize(out)}
        )
    )
    c.remove(out)


def _run_child(side: str, tmp: str, names: list[str]) -> dict[str, Any]:
    return c.child_json("benchmarks.bench_daf_concat", "--child", side, tmp, ",".join(names))


def compare(tmp: str, names: list[str], rounds: int) -> dict[str, list[dict[str, Any]]]:
    """Alternate the two sides (one warm-up round, not counted)."""
    runs: dict[str, list[dict[str, Any]]] = {"daf": [], "anndata": []}
    order = ["daf", "anndata"]
    for r in range(1 + rounds):
        for side in order if r % 2 == 0 else order[::-1]:
            fig = _run_child(side, tmp, names)
            if r:
                runs[side].append(fig)
            c.eprint(f"round {r}: {side} {fig['time']:.2f} s, peak {c.human_bytes(fig['peak'])}")
    return runs


def _data_bytes() -> int:
    n_sets, cells, _genes, per = sizes()
    return n_sets * (cells * per * 8 + (cells + 1) * 4 + cells * N_VECTORS * 4)


class Concat(c.TempDirSuite):
    """In-process timing of both sides (for asv; the script's own run uses child processes
    and also reports peak memory)."""

    def setup(self) -> None:
        self._mktemp()
        self.names = make_inputs(self.dir, 1)

    @c.bench("concatenate", "Daf ZIP", c.MB, lambda s: _data_bytes())
    def time_daf(self) -> None:
        run_daf(self.dir, self.names, self.p("out.daf.zarr.zip"))
        c.remove(self.p("out.daf.zarr.zip"))

    @c.bench("concatenate", "anndata concat + write_h5ad", c.MB, lambda s: _data_bytes())
    def time_anndata(self) -> None:
        warnings.filterwarnings("ignore")
        run_anndata(self.dir, self.names, self.p("out.h5ad"))
        c.remove(self.p("out.h5ad"))


def record_concat(
    runs: dict[str, list[dict[str, Any]]],
    labels: dict[str, str],
    med: dict[str, float],
    peak: dict[str, int],
    speed: float,
    memory: float,
    run: dict[str, Any],
) -> None:
    """The recorded JSON of a run (when ``--record`` is given): times and peak memory."""
    if not record.recording():
        return
    record.update(
        title="Daf concatenate vs anndata.concat",
        load=c.loadavg(),
        environment=[
            (
                f"* {run['sets']} data sets of {run['cells']:,} cells x "
                f"{run['genes']:,} genes; seed {run['seed']}"
            ),
            (
                f"* {run['rounds']} counted rounds after a warm-up, sides "
                f"alternating, each in a child process; {run['wall']:.0f} s"
            ),
        ],
        notes="Each side in its own child process; peak = its VmHWM.",
    )
    size = f"{run['sets']} x {run['cells']:,} cells"
    rows = []
    for side, figs in runs.items():
        times = [f["time"] for f in figs]
        other = "anndata" if side == "daf" else "daf"
        rows.append(
            {
                "suite": "concat",
                "op": "concatenate",
                "peer": labels[side],
                "size": size,
                "unit": "s",
                "n": len(times),
                "median_s": med[side],
                "best_s": min(times),
                "median": med[side],
                "best": min(times),
                "ratios": {labels[other]: med[other] / med[side]},
                "target": "≥ 2x faster than anndata" if side == "daf" else None,
                "target_met": speed >= 2 if side == "daf" else None,
            }
        )
        rows.append(
            {
                "suite": "concat",
                "op": "peak resident memory",
                "peer": labels[side],
                "size": size,
                "unit": "MiB",
                "n": len(figs),
                "median": peak[side] / c.MiB,
                "best": peak[side] / c.MiB,
                "ratios": {},
                "target": "≤ 0.5x anndata's" if side == "daf" else None,
                "target_met": memory <= 0.5 if side == "daf" else None,
            }
        )
    record.add_rows(rows)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4].split(","))
        return 0
    ap: argparse.ArgumentParser = c.argument_parser(
        "python -m benchmarks.bench_daf_concat", __doc__, ["concat"]
    )
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    for name in ("sets", "cells", "genes", "per-cell"):
        ap.add_argument(f"--{name}", type=int, default=None, help=f"override the {name}")
    args = ap.parse_args(argv)
    c.selected_suites(ap, args, ["concat"])
    for name in ("sets", "cells", "genes", "per_cell"):
        if getattr(args, name) is not None:
            _SIZES[name] = getattr(args, name)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    rounds = args.rounds or (2 if c.quick() else 3)
    n_sets, cells, genes, per = sizes()
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-concat-") as tmp:
        c.eprint(f"seed {seed}; writing {n_sets} data sets ...")
        names = make_inputs(tmp, seed)
        t0 = time.perf_counter()
        runs = compare(tmp, names, rounds)
        wall = time.perf_counter() - t0
    med = {side: statistics.median(f["time"] for f in figs) for side, figs in runs.items()}
    peak = {side: max(f["peak"] for f in figs) for side, figs in runs.items()}
    speed = med["anndata"] / med["daf"]
    memory = peak["daf"] / peak["anndata"]
    print(f"## Daf concatenate vs anndata.concat ({'quick' if c.quick() else 'full'} mode)\n")
    print(
        f"* {n_sets} data sets of {cells:,} cells x {genes:,} genes, {cells * per:,} stored "
        f"float32 UMIs and {N_VECTORS} float32 vectors each; seed {seed}"
    )
    print(
        f"* {rounds} counted rounds after a warm-up, sides alternating, each in a child "
        f"process; {wall:.0f} s; load average {c.loadavg()}\n"
    )
    print("| side | median time | best time | peak resident memory |")
    print("|---|---|---|---|")
    labels = {
        "daf": f"Daf: concatenate {n_sets} ZIP data sets into a ZIP",
        "anndata": f"anndata: read_h5ad x {n_sets} (in memory), concat, write_h5ad",
    }
    for side, figs in runs.items():
        times = [f["time"] for f in figs]
        print(
            f"| {labels[side]} | {med[side]:.2f} s | {min(times):.2f} s | "
            f"{c.human_bytes(peak[side])} |"
        )
    print()
    record_concat(
        runs,
        labels,
        med,
        peak,
        speed,
        memory,
        {
            "sets": n_sets,
            "cells": cells,
            "genes": genes,
            "seed": seed,
            "rounds": rounds,
            "wall": wall,
        },
    )
    print(
        f"* speed: Daf is {speed:.2f}x faster (target ≥ 2x: {'met' if speed >= 2 else 'NOT met'})"
    )
    print(
        f"* peak memory: Daf uses {memory:.2f}x anndata's (target ≤ 0.5x: "
        f"{'met' if memory <= 0.5 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
