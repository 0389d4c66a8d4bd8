"""Benchmarks of Daf queries on a ZarrDaf data set against scanpy and pandas on the same data.

Run from the project root::

    python -m benchmarks.bench_query [--quick] [--only group,masks]

The data: a cells x genes sparse UMI matrix (100,000 x 30,000, about 2 % dense, so 60 M
stored float32 values with int32 indices; ``--quick``: 10,000 x 30,000), as in
``bench_daf``, stored in a ZarrDaf ZIP with ``set_matrix``'s default arguments from the scipy
CSR matrix (both layouts), and per-cell vectors ``type`` (strings, the entries of a 40-entry
``type`` axis), ``age`` (float32) and ``score`` (float32), and a per-type string vector
``color``. A fresh seed each run (printed).

Suites (peers alternate within each round, same data, same process):

* **group**: ``@ cell @ gene :: UMIs -/ type =@ >- Sum`` (the sums of each type's cells, a
  types x genes matrix) on the ZIP opened afresh for each call (``open_daf`` + query + close:
  no cached result can answer), next to ``scanpy.get.aggregate(adata, by="type",
  func="sum")`` on an AnnData in memory (X the same CSR float32 matrix, ``obs["type"]``
  categorical, as anndata holds it), and the physical floor: one numpy pass over the stored
  values and indices of the same matrix in memory (``data.sum() + indices.sum()``).
* **masks**: ``@ cell [ type = T3 & age > K ] : score`` and ``@ cell [ age > K ] : type :
  color`` on an open data set, ``K`` different at each call (no cached result answers), next
  to the pandas a user writes on the same columns (``type`` categorical):
  ``obs.loc[(obs.type == "T3") & (obs.age > K), "score"]`` and
  ``colors[obs.type[obs.age > K]]``; per call, many calls per sample.

Speed is never asserted: the script prints figures, ratios and whether targets are met.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, ClassVar

import numpy as np

import dafzarr

from . import common as c
from . import daf_data

N_TYPES = 40
CALLS = 50  # calls per sample of the masks suite


def make_data(the_seed: int) -> dict[str, Any]:
    d = daf_data.make_data(the_seed)
    cells = len(d["cells"])
    rng = np.random.default_rng(the_seed + 1)
    d["types"] = np.asarray([f"T{i}" for i in range(N_TYPES)], dtype=object)
    d["type"] = d["types"][rng.integers(0, N_TYPES, size=cells)]
    d["age"] = (rng.random(cells, dtype=np.float32) * 100).astype(np.float32)
    d["score"] = rng.random(cells, dtype=np.float32)
    d["color"] = np.asarray([f"color{i}" for i in range(N_TYPES)], dtype=object)
    return d


def write_daf(path: str, d: dict[str, Any], *, matrix: bool = True) -> None:
    """The data set as a user writes it (``set_matrix``'s default arguments); ``matrix``:
    with the UMIs."""
    daf = dafzarr.open_daf(path, "w")
    daf.add_axis("cell", d["cells"]).add_axis("gene", d["genes"]).add_axis("type", d["types"])
    daf.set_vector("cell", "type", d["type"])
    daf.set_vector("cell", "age", d["age"])
    daf.set_vector("cell", "score", d["score"])
    daf.set_vector("type", "color", d["color"])
    if matrix:
        daf.set_matrix("cell", "gene", "UMIs", d["X"])
    daf.close()


def _frame(d: dict[str, Any]) -> Any:
    import pandas as pd

    return pd.DataFrame(
        {"type": pd.Categorical(d["type"]), "age": d["age"], "score": d["score"]},
        index=pd.Index(d["cells"]),
    )


dataset = c.SeededData(make_data)
seed = dataset.seed

GROUP_QUERY = "@ cell @ gene :: UMIs -/ type =@ >- Sum"


def _size(s: Any) -> str:
    cells, genes, _density = daf_data.sizes()
    return f"{cells:,} x {genes:,}, nnz {s.nnz:,}, {N_TYPES} types"


def _group_target(s: c.Stats, peers: dict[str, c.Stats]) -> tuple[str, bool]:
    scanpy, scanpy_ok = c.ratio_target("scanpy.get.aggregate", 3)(s, peers)
    floor, floor_ok = c.ratio_target("floor: numpy pass", 5, within=True)(s, peers)
    return f"{scanpy}; {floor}", scanpy_ok and floor_ok


class Group(c.TempDirSuite):
    """Group-by sum of the UMIs' rows by cell type."""

    label = "group"
    baseline = ("scanpy.get.aggregate",)
    temp_prefix = "dafzarr-bench-query-"
    bench_rounds: ClassVar[dict[bool, int]] = {False: 5, True: 3}

    def setup(self) -> None:
        import anndata

        self._mktemp()
        d = dataset()
        self.nnz = d["X"].nnz
        self.nbytes = daf_data.data_bytes(d["X"])
        self.path = self.p("q.daf.zarr.zip")
        write_daf(self.path, d)
        self.x = d["X"]
        self.adata = anndata.AnnData(X=d["X"], obs=_frame(d))
        # The same sums from both (scanpy orders the types by name).
        ours = self.time_daf_zip()
        theirs = self.time_scanpy()
        order = [list(theirs.obs_names).index(t) for t in d["types"]]
        np.testing.assert_allclose(ours, np.asarray(theirs.layers["sum"])[order], rtol=1e-5)

    def teardown(self) -> None:
        del self.adata, self.x
        super().teardown()

    @c.bench(
        "group-by sum of rows (types x genes)",
        "ZarrDaf ZIP: open + query",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
        target=_group_target,
    )
    def time_daf_zip(self) -> Any:
        daf = dafzarr.open_daf(self.path)
        try:
            return daf.get_np_query(GROUP_QUERY)
        finally:
            daf.close()

    @c.bench(
        "group-by sum of rows (types x genes)",
        "scanpy.get.aggregate",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
    )
    def time_scanpy(self) -> Any:
        import scanpy as sc

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sc.get.aggregate(self.adata, by="type", func="sum")

    @c.bench(
        "group-by sum of rows (types x genes)",
        "floor: numpy pass",
        c.MB,
        lambda s: s.nbytes,
        size=_size,
    )
    def time_floor(self) -> Any:
        return self.x.data.sum() + self.x.indices.sum()


class Masks(c.TempDirSuite):
    """Masked lookups on an open data set, a new threshold at each call."""

    label = "masks"
    baseline = ("pandas",)
    temp_prefix = "dafzarr-bench-query-"
    bench_rounds: ClassVar[dict[bool, int]] = {False: 7, True: 3}

    def setup(self) -> None:
        self._mktemp()
        d = dataset()
        self.nnz = d["X"].nnz
        path = self.p("m.daf.zarr.zip")
        write_daf(path, d, matrix=False)  # the matrix plays no part here
        self.daf = dafzarr.open_daf(path)
        self.obs = _frame(d)
        import pandas as pd

        self.colors = pd.Series(d["color"], index=pd.Index(d["types"]))
        self.k = 10.0
        ours = self.daf.get_np_query("@ cell [ type = T3 & age > 50 ] : score")
        obs = self.obs
        theirs = obs.loc[(obs.type == "T3") & (obs.age > 50), "score"]
        assert np.array_equal(ours, theirs.to_numpy())
        ours = self.daf.get_np_query("@ cell [ age > 50 ] : type : color")
        assert list(ours) == list(self.colors[obs.type[obs.age > 50]])

    def teardown(self) -> None:
        self.daf.close()
        super().teardown()

    def _thresholds(self) -> list[float]:
        out = [self.k + i * 1e-3 for i in range(CALLS)]
        self.k += 0.5
        return out

    def _cells(self) -> str:
        cells, _genes, _density = daf_data.sizes()
        return f"{cells:,} cells"

    @c.bench(
        "@ cell [ type = T3 & age > K ] : score",
        "ZarrDaf ZIP (open)",
        c.PER_CALL,
        lambda s: CALLS,
        size=lambda s: s._cells(),
        target=c.ratio_target("pandas", 2, within=True),
    )
    def time_daf_and(self) -> None:
        for k in self._thresholds():
            self.daf.get_np_query(f"@ cell [ type = T3 & age > {k} ] : score")

    @c.bench(
        "@ cell [ type = T3 & age > K ] : score",
        "pandas",
        c.PER_CALL,
        lambda s: CALLS,
        size=lambda s: s._cells(),
    )
    def time_pandas_and(self) -> None:
        obs = self.obs
        for k in self._thresholds():
            obs.loc[(obs.type == "T3") & (obs.age > k), "score"]

    @c.bench(
        "@ cell [ age > K ] : type : color",
        "ZarrDaf ZIP (open)",
        c.PER_CALL,
        lambda s: CALLS,
        size=lambda s: s._cells(),
        target=c.ratio_target("pandas", 2, within=True),
    )
    def time_daf_chain(self) -> None:
        for k in self._thresholds():
            self.daf.get_np_query(f"@ cell [ age > {k} ] : type : color")

    @c.bench(
        "@ cell [ age > K ] : type : color",
        "pandas",
        c.PER_CALL,
        lambda s: CALLS,
        size=lambda s: s._cells(),
    )
    def time_pandas_chain(self) -> None:
        obs, colors = self.obs, self.colors
        for k in self._thresholds():
            colors[obs.type[obs.age > k]]


SUITES: dict[str, list[type]] = {"group": [Group], "masks": [Masks]}


def main(argv: list[str] | None = None) -> int:
    parts = list(SUITES)
    ap = c.argument_parser("python -m benchmarks.bench_query", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    dataset.set_seed(args.seed)
    rounds = args.rounds or 5
    from importlib.metadata import version

    with c.RunClock() as clock:
        c.eprint(f"seed {seed()}; generating data ...")
        results = c.run_suites(SUITES, only, rounds)
    cells, genes, density = daf_data.sizes()
    c.report(
        "Daf query benchmarks",
        [
            (
                f"* dafzarr {dafzarr.__version__}, scanpy {version('scanpy')}, anndata "
                f"{version('anndata')}, pandas {version('pandas')}"
            ),
            (
                f"* {cells:,} cells x {genes:,} genes at {density:.0%} (float32 UMIs), {N_TYPES} "
                f"types; seed {seed()}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "MB/s count the sparse matrix's bytes (data + indices + indptr). The floor is one "
            "numpy pass over the stored values and indices in memory (`data.sum() + "
            "indices.sum()`): the least any group-by must read. Mask rows are per call on an open "
            f"data set ({CALLS} calls per sample, each with another threshold)."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
