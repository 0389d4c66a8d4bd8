"""Peak memory and cost growth of ``python -m benchmarks.bench_daf``, each measured in child
processes."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

import dafzarr

from . import common as c
from .daf_data import (
    column_counts,
    data_bytes,
    make_data,
    read_daf_sparse,
    read_h5ad_sparse,
    rows_block,
    sizes,
    write_anndata_zarr,
    write_daf,
    write_daf_umis,
    write_h5ad,
    write_npy,
)
from .daf_suites import Read, Write, WriteDense, dataset

# --- Peak memory (child processes) -------------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _fill_in_place(path: str, the_seed: int) -> tuple[int, int]:
    """Write the UMIs with empty_sparse_matrix on a ZIP, generating cells block by block.

    Returns the RSS right before the fill and the size of the filled data."""
    cells, genes, density = sizes()
    rng = np.random.default_rng(the_seed)
    counts = column_counts(rng, cells, genes, density)
    daf = dafzarr.open_daf(path, "w")
    daf.add_axis("cell", [f"c{i}" for i in range(cells)])
    daf.add_axis("gene", [f"g{i}" for i in range(genes)])
    nnz = int(counts.sum())
    import gc

    gc.collect()
    c.reset_peak_rss()
    before = _rss()
    with daf.empty_sparse_matrix("gene", "cell", "UMIs", "float32", nnz) as (colptr, rowval, val):
        colptr[0] = 1
        np.cumsum(counts, out=colptr[1:])
        colptr[1:] += 1
        start = 0
        for lo in range(0, cells, 200):  # small blocks: the generator's own memory stays small
            block = counts[lo : lo + 200]
            idx, v = rows_block(rng, block, genes)
            # Duplicates were re-drawn, so each cell keeps exactly its count.
            rowval[start : start + idx.size] = idx + 1
            val[start : start + idx.size] = v
            start += idx.size
    daf.close()
    return before, nnz * 8 + (cells + 1) * 4


def child(task: str, path: str, the_seed: int) -> None:
    """Run one writer and print its memory figures as JSON."""
    dataset.set_seed(the_seed)
    if task == "fill":
        import gc

        before, final = _fill_in_place(path, the_seed)
        peak = c.peak_rss()
        print(json.dumps({"task": task, "before": before, "peak": peak, "data": final}))
        return
    d = make_data(the_seed)
    writers = {
        "daf-dir": write_daf,
        "daf-zip": write_daf,
        "h5ad": write_h5ad,
        "anndata-zarr": write_anndata_zarr,
    }
    readers = {"read-daf-zip": read_daf_sparse, "read-h5ad": read_h5ad_sparse}
    if task in readers:
        (write_daf if task == "read-daf-zip" else write_h5ad)(path, d)
        x_bytes = data_bytes(d["X"])
        del d
        import gc

        gc.collect()
        c.reset_peak_rss()
        before = _rss()
        x = readers[task](path)
        print(json.dumps({"task": task, "before": before, "peak": c.peak_rss(), "data": x_bytes}))
        del x
        return
    import gc

    gc.collect()
    c.reset_peak_rss()
    before = _rss()
    writers[task](path, d)
    print(
        json.dumps(
            {"task": task, "before": before, "peak": c.peak_rss(), "data": data_bytes(d["X"])}
        )
    )


def memory_report(the_seed: int) -> str:
    rows = ["| task | RSS before | peak above that | data size | ratio |", "|---|---|---|---|---|"]
    labels = {
        "fill": "ZarrDaf ZIP, empty_sparse_matrix fill (no input matrix held)",
        "daf-dir": "ZarrDaf directory write",
        "daf-zip": "ZarrDaf ZIP write",
        "h5ad": "anndata write_h5ad",
        "anndata-zarr": "anndata write_zarr",
        "read-daf-zip": "ZarrDaf ZIP read of the UMIs",
        "read-h5ad": "anndata .h5ad read of X",
    }
    suffix = {
        "fill": ".daf.zarr.zip",
        "daf-dir": ".daf.zarr",
        "daf-zip": ".daf.zarr.zip",
        "h5ad": ".h5ad",
        "anndata-zarr": ".zarr",
        "read-daf-zip": ".daf.zarr.zip",
        "read-h5ad": ".h5ad",
    }
    with tempfile.TemporaryDirectory(prefix="dafzarr-bench-mem-") as tmp:
        for task, label in labels.items():
            path = os.path.join(tmp, f"m{suffix[task]}")
            fig = c.child_json(
                "benchmarks.bench_daf",
                "--child",
                task,
                path,
                str(the_seed),
                *(["--quick"] if c.quick() else []),
            )
            extra = fig["peak"] - fig["before"]
            rows.append(
                f"| {label} | {c.human_bytes(fig['before'])} | "
                f"{c.human_bytes(max(extra, 0))} | {c.human_bytes(fig['data'])} | "
                f"{max(extra, 0) / fig['data']:.2f}x |"
            )
            c.remove(path)
            c.eprint(f"memory: {task} done")
    return "\n".join(rows)


# --- Cost growth (child processes) ------------------------------------------------------------


def growth_sizes() -> list[int]:
    """Stored values of the growth table (``--quick``: a smoke run)."""
    return [100_000, 1_000_000] if c.quick() else [1_000_000, 10_000_000, 100_000_000]


GROWTH_PER_CELL = 600  # 2 % of the 30,000 genes


def growth_data(nnz: int, the_seed: int) -> dict[str, Any]:
    """A cells x 30,000 genes CSR with ``GROWTH_PER_CELL`` values per cell and ``nnz`` in
    all (rounded to whole cells), built in a few vector passes (sorted, unique gene indices:
    one random gene in each of 600 consecutive bands of 50 genes)."""
    genes, per = 30_000, GROWTH_PER_CELL
    cells = max(1, nnz // per)
    x = c.banded_csr(cells, genes, per, the_seed, indptr_dtype=np.int64)
    return {
        "X": x,
        "cells": [f"c{i}" for i in range(cells)],
        "genes": [f"g{i}" for i in range(genes)],
    }


def _growth_child(nnz: int, tmp: str, the_seed: int, rounds: int) -> None:
    """Time the UMIs + axes writes (directory, ZIP, ``np.save``) alternately, one warm-up
    round and ``rounds`` counted ones, and the peak resident memory of each write above the
    memory before it (which holds the input); print the figures as JSON."""
    import gc
    import time

    d = growth_data(nnz, the_seed)
    writers = {
        "dir": (write_daf_umis, "g.daf.zarr"),
        "zip": (write_daf_umis, "g.daf.zarr.zip"),
        "npy": (write_npy, "g.npy"),
    }
    names = list(writers)
    times: dict[str, list[float]] = {k: [] for k in names}
    peaks: dict[str, int] = dict.fromkeys(names, 0)
    for r in range(1 + rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            fn, out = writers[name]
            path = os.path.join(tmp, out)
            c.remove(path)
            c.settle_writeback()
            gc.collect()
            c.reset_peak_rss()
            before = _rss()
            t0 = time.perf_counter()
            fn(path, d)
            dt = time.perf_counter() - t0
            peaks[name] = max(peaks[name], c.peak_rss() - before)
            if r:
                times[name].append(dt)
    for _fn, out in writers.values():
        c.remove(os.path.join(tmp, out))
    print(
        json.dumps(
            {
                "nnz": int(d["X"].nnz),
                "data": data_bytes(d["X"]),
                "times": times,
                "peaks": peaks,
                "load": c.loadavg(),
            }
        )
    )


def growth_report(the_seed: int, rounds: int) -> str:
    """The growth table: one child process per size (its memory starts fresh)."""
    import statistics

    rows = [
        (
            "| stored values | data | ZarrDaf directory: median s (ns/value), peak | "
            "ZarrDaf ZIP: median s (ns/value), peak | np.save: median s (ns/value), peak | "
            "load average |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for nnz in growth_sizes():
        with tempfile.TemporaryDirectory(prefix="dafzarr-bench-growth-") as tmp:
            fig = c.child_json(
                "benchmarks.bench_daf",
                "--child",
                "growth",
                tmp,
                str(the_seed),
                "--growth-nnz",
                str(nnz),
                "--rounds",
                str(rounds),
                *(["--quick"] if c.quick() else []),
            )
        cells = []
        for name in ("dir", "zip", "npy"):
            med = statistics.median(fig["times"][name])
            cells.append(
                f"{med:.3f} s ({med / fig['nnz'] * 1e9:.1f}), "
                f"{c.human_bytes(max(fig['peaks'][name], 0))}"
            )
        rows.append(
            f"| {fig['nnz']:,} | {c.human_bytes(fig['data'])} | "
            + " | ".join(cells)
            + f" | {fig['load']} |"
        )
        c.eprint(f"growth: {nnz:,} done")
    return "\n".join(rows)


SUITES: dict[str, list[type]] = {"write": [Write], "write-dense": [WriteDense], "read": [Read]}
