"""Benchmarks of axis reconstruction and computation contracts.

Run from the project root::

    python -m benchmarks.bench_reconstruct [--quick] [--only reconstruct,contracts]

Suites (peers alternate within each round, same data, same process):

* **reconstruct**: the ``type`` axis of 1,000,000 cells (``--quick``: 100,000) with 40 types
  (5% of the cells untyped), rebuilt from their ``type`` vector, with 6 per-type vectors
  stored per cell (moved) and 6 per-cell vectors (checked, left): ``reconstruct_axis`` on a
  memory and on a ZIP data set, against the same operation written by hand with pandas
  (``groupby(...).nunique()`` to find the per-type vectors, ``first()`` for their values,
  then the same writes) on a memory data set. Each sample starts from a fresh copy of the
  data set (made untimed).
* **contracts**: the per-call cost of ``@computation`` checks: a computation that sums the
  sparse UMIs of 100,000 cells x 2,000 genes (``--quick``: 10,000) into a per-cell vector of
  a ZIP data set, with the contract enforced and with ``DAFZARR_ENFORCE_CONTRACTS=0``; and a
  computation that reads one scalar, both ways.

Before timing, both reconstructions are checked to give the same axis and vectors. Speed is
never asserted: the script prints medians, bests and ratios.
"""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

import dafzarr

from . import common as c

N_TYPES = 40
N_PER_TYPE = 6
N_PER_CELL = 6


def n_cells() -> int:
    return 100_000 if c.quick() else 1_000_000


def make_cells(the_seed: int) -> dict[str, Any]:
    """The per-cell vectors: ``type`` and the per-type and per-cell properties."""
    rng = np.random.default_rng(the_seed)
    n = n_cells()
    names = np.array([f"type{i:02d}" for i in range(N_TYPES)], dtype=object)
    codes = rng.integers(0, N_TYPES, n)
    types = names[codes]
    types[rng.random(n) < 0.05] = ""
    codes[types == ""] = N_TYPES  # the untyped cells share one value of each property
    vectors: dict[str, Any] = {"type": types}
    for i in range(N_PER_TYPE):
        kind = i % 3
        per_type = (
            rng.random(N_TYPES + 1).astype(np.float32)
            if kind == 0
            else rng.integers(0, 1000, N_TYPES + 1)
            if kind == 1
            else np.array([f"color{j}" for j in rng.permutation(N_TYPES + 1)], dtype=object)
        )
        vectors[f"per_type_{i}"] = per_type[codes]
    for i in range(N_PER_CELL):
        vectors[f"per_cell_{i}"] = rng.random(n) if i % 2 else rng.integers(0, 50, n)
    return vectors


cells = c.SeededData(make_cells)
seed = cells.seed


def fill(daf: Any, vectors: dict[str, Any]) -> Any:
    daf.add_axis("cell", [f"c{i}" for i in range(n_cells())])
    for name, values in vectors.items():
        daf.set_vector("cell", name, values)
    return daf


def by_pandas(daf: Any, existing_axis: str, implicit_axis: str) -> None:
    """The reconstruction written by hand with pandas: per-type vectors are those with one
    value per type (the untyped cells included), moved with their first value per type."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            name: daf.get_np_vector(existing_axis, name)
            for name in sorted(daf.vectors_set(existing_axis))
        }
    )
    key = frame.pop(implicit_axis).to_numpy()
    groups = frame.groupby(key, sort=True)
    consistent = groups.nunique(dropna=False).le(1).all()
    moved = [name for name in frame.columns if consistent[name]]
    first = groups[moved].first().drop(index="", errors="ignore")
    daf.add_axis(implicit_axis, first.index.to_numpy(dtype=object))
    for name in moved:
        daf.set_vector(implicit_axis, name, first[name].to_numpy())
        daf.delete_vector(existing_axis, name)


def _same(a: Any, b: Any) -> None:
    if a.axes_set() != b.axes_set() or a.vectors_set("type") != b.vectors_set("type"):
        raise RuntimeError("the reconstructions differ in their axes or moved vectors")
    if list(a.axis_np_entries("type")) != list(b.axis_np_entries("type")):
        raise RuntimeError("the reconstructions differ in the type entries")
    for name in a.vectors_set("type"):
        x, y = a.get_np_vector("type", name), b.get_np_vector("type", name)
        if x.dtype != y.dtype or x.tolist() != y.tolist():
            raise RuntimeError(f"the reconstructions differ in the vector {name}")
    if a.vectors_set("cell") != b.vectors_set("cell"):
        raise RuntimeError("the reconstructions leave different per-cell vectors")


def _size(s: Any) -> str:
    return f"{n_cells():,} cells, {N_TYPES} types"


class Reconstruct(c.TempDirSuite):
    """Rebuild the type axis from the per-cell type vector."""

    label = "reconstruct"
    temp_prefix = "dafzarr-bench-reconstruct-"
    baseline = ("pandas group-by, memory",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        self._mktemp()
        self.vectors = cells()
        ours = fill(dafzarr.memory_daf("ours"), self.vectors)
        dafzarr.reconstruct_axis(ours, existing_axis="cell", implicit_axis="type")
        theirs = fill(dafzarr.memory_daf("theirs"), self.vectors)
        by_pandas(theirs, "cell", "type")
        _same(ours, theirs)
        self.daf: Any = None

    def prepare(self, name: str) -> None:
        if self.daf is not None and hasattr(self.daf, "close"):
            self.daf.close()
        if name.endswith("_zip"):
            path = self.p("cells.daf.zarr.zip")
            c.remove(path)
            self.daf = fill(dafzarr.open_daf(path, "w"), self.vectors)
        else:
            self.daf = fill(dafzarr.memory_daf("cells"), self.vectors)

    def teardown(self, *params: Any) -> None:
        if self.daf is not None:
            self.daf.close()
        super().teardown(*params)

    @c.bench(
        "reconstruct the type axis",
        "reconstruct_axis, memory",
        c.ENTRIES,
        lambda s: n_cells(),
        size=_size,
    )
    def time_memory(self) -> None:
        dafzarr.reconstruct_axis(self.daf, existing_axis="cell", implicit_axis="type")

    @c.bench(
        "reconstruct the type axis",
        "reconstruct_axis, ZIP",
        c.ENTRIES,
        lambda s: n_cells(),
        size=_size,
    )
    def time_zip(self) -> None:
        dafzarr.reconstruct_axis(self.daf, existing_axis="cell", implicit_axis="type")

    @c.bench(
        "reconstruct the type axis",
        "pandas group-by, memory",
        c.ENTRIES,
        lambda s: n_cells(),
        size=_size,
    )
    def time_pandas_memory(self) -> None:
        by_pandas(self.daf, "cell", "type")


def computations() -> tuple[Any, Any]:
    """The two computations: the UMIs summed per cell, and one scalar read."""
    from dafzarr import Contract, CreatedOutput, RequiredInput, computation

    counts = Contract(
        axes={"cell": (RequiredInput, "The cells."), "gene": (RequiredInput, "The genes.")},
        data={
            ("cell", "gene", "UMIs"): (RequiredInput, "float", "Molecules."),
            ("cell", "total"): (CreatedOutput, "float", "Molecules per cell."),
            "version": (RequiredInput, str, "The version."),
        },
    )

    @computation(counts)
    def count_cells(daf: Any, *, overwrite: bool = False) -> None:
        """Sum the molecules of each cell."""
        umis = daf.get_np_matrix("gene", "cell", "UMIs")
        daf.get_scalar("version")
        daf.set_vector("cell", "total", np.asarray(umis.sum(axis=0)).ravel(), overwrite=overwrite)

    @computation(Contract(data={"version": (RequiredInput, str, "The version.")}))
    def read_version(daf: Any) -> Any:
        """Read one scalar."""
        return daf.get_scalar("version")

    return count_cells, read_version


def _shape() -> tuple[int, int]:
    return (10_000 if c.quick() else 100_000), 2_000


class Contracts(c.TempDirSuite):
    """Computations with their contract enforced, and with enforcement off."""

    label = "contracts"
    temp_prefix = "dafzarr-bench-contracts-"
    baseline = ("enforcement off",)

    def setup(self) -> None:
        self._mktemp()
        n, genes = _shape()
        rng = np.random.default_rng(seed())
        umis = sp.random(genes, n, density=0.05, format="csc", dtype=np.float32, rng=rng)
        self.daf = dafzarr.open_daf(self.p("counts.daf.zarr.zip"), "w")
        self.daf.add_axis("cell", [f"c{i}" for i in range(n)])
        self.daf.add_axis("gene", [f"g{i}" for i in range(genes)])
        self.daf.set_matrix("gene", "cell", "UMIs", umis, relayout=False)
        self.daf.set_scalar("version", "1.0")
        self.nnz = umis.nnz
        self.count_cells, self.read_version = computations()

    def teardown(self, *params: Any) -> None:
        self.daf.close()
        super().teardown(*params)

    def _run(self, function: Any, enforce: bool, **kwargs: Any) -> None:
        before = os.environ.get("DAFZARR_ENFORCE_CONTRACTS")
        os.environ["DAFZARR_ENFORCE_CONTRACTS"] = "1" if enforce else "0"
        try:
            function(self.daf, **kwargs)
        finally:
            if before is None:
                del os.environ["DAFZARR_ENFORCE_CONTRACTS"]
            else:
                os.environ["DAFZARR_ENFORCE_CONTRACTS"] = before

    @c.bench(
        "sum the UMIs of each cell",
        "contract enforced",
        c.PER_CALL,
        lambda s: 1,
        size=lambda s: f"{_shape()[0]:,} x {_shape()[1]:,}, nnz {s.nnz:,}",
    )
    def time_sum_enforced(self) -> None:
        self._run(self.count_cells, True, overwrite=True)

    @c.bench(
        "sum the UMIs of each cell",
        "enforcement off",
        c.PER_CALL,
        lambda s: 1,
        size=lambda s: f"{_shape()[0]:,} x {_shape()[1]:,}, nnz {s.nnz:,}",
    )
    def time_sum_off(self) -> None:
        self._run(self.count_cells, False, overwrite=True)

    @c.bench(
        "read one scalar", "contract enforced", c.PER_CALL, lambda s: 1, size=lambda s: "1 scalar"
    )
    def time_scalar_enforced(self) -> None:
        self._run(self.read_version, True)

    @c.bench(
        "read one scalar", "enforcement off", c.PER_CALL, lambda s: 1, size=lambda s: "1 scalar"
    )
    def time_scalar_off(self) -> None:
        self._run(self.read_version, False)


SUITES: dict[str, list[type]] = {"reconstruct": [Reconstruct], "contracts": [Contracts]}


def main(argv: list[str] | None = None) -> int:
    parts = ["reconstruct", "contracts"]
    ap = c.argument_parser("python -m benchmarks.bench_reconstruct", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    cells.set_seed(args.seed)
    rounds = args.rounds or 5
    with c.RunClock() as clock:
        c.eprint(f"seed {seed()}; generating data ...")
        results = c.run_suites(SUITES, only, rounds)
    c.report(
        "Axis reconstruction and contracts",
        [
            (
                f"* dafzarr {dafzarr.__version__}; {n_cells():,} cells for the reconstruction; "
                f"seed {seed()}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "entries/s count the cells of the reconstructed vector; us/call is the whole call "
            "(checks, reads, computation, write)."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
