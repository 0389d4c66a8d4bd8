"""Benchmarks of the AnnData bridge: a whole AnnData object through Daf on ZIP, against anndata.

Run from the project root::

    python -m benchmarks.bench_anndata [--quick] [--cells N --genes N --nnz N] [--only write,read]

The data: a sparse float32 CSR ``X`` of 100,000 cells x 30,000 genes with 60 M stored values
(``--quick``: 10,000 x 30,000 with 6 M), a realistic ``obs`` (three categoricals, a nullable
``Int32`` column with missing values, a barcode string column, two float and one bool
column), a ``var`` (gene ids, a categorical, a bool, a float), a 50-column PCA in ``obsm`` and
a few ``uns`` entries; random, with a fresh seed each run (printed).

Suites (peers alternate within each round, same object, same process):

* **write**: ``anndata_to_daf`` into a new ``.daf.zarr.zip`` (each matrix in its own layout,
  ``relayout=False``; and with the default ``relayout=True``, which also stores every
  matrix transposed), anndata ``write_h5ad`` and ``write_zarr``.
* **read**: the whole object back: ``daf_to_anndata`` of the opened ZIP, ``read_h5ad``,
  ``read_zarr``.

Before timing, each peer's read-back object is checked equal to the original (``X``, ``obs``
dtypes and values). Speed is never asserted: the script prints medians, bests and ratios.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

import dafzarr
from dafzarr.anndata import anndata_to_daf, daf_to_anndata

from . import common as c
from .daf_data import rows_block

N_PCS = 50
_SIZES: dict[str, int] = {}


def sizes() -> tuple[int, int, int]:
    """Cells, genes and stored values (``--cells``/``--genes``/``--nnz`` override)."""
    cells, genes, nnz = (10_000, 30_000, 6_000_000) if c.quick() else (100_000, 30_000, 60_000_000)
    return (_SIZES.get("cells", cells), _SIZES.get("genes", genes), _SIZES.get("nnz", nnz))


def make_adata(the_seed: int) -> Any:
    """The AnnData object every peer writes."""
    import anndata
    import pandas as pd

    cells, genes, nnz = sizes()
    rng = np.random.default_rng(the_seed)
    counts = rng.binomial(genes, min(1.0, nnz / (cells * genes)), size=cells)
    indices, values = rows_block(rng, counts, genes)
    indptr = np.zeros(cells + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    x = sp.csr_matrix((values, indices, indptr), shape=(cells, genes))
    n_genes = pd.array(np.diff(indptr).astype(np.int32), dtype="Int32")
    n_genes[rng.random(cells) < 0.01] = pd.NA
    obs = pd.DataFrame(
        {
            "barcode": np.array([f"AAACCTGAGC{i:08d}-1" for i in range(cells)], dtype=object),
            "sample": pd.Categorical(rng.choice([f"s{i}" for i in range(12)], cells)),
            "cell_type": pd.Categorical(
                rng.choice(["T", "B", "NK", "Mono", "DC", "Platelet"], cells),
                categories=["T", "B", "NK", "Mono", "DC", "Platelet", "unassigned"],
            ),
            "phase": pd.Categorical(
                rng.choice(["G1", "S", "G2M"], cells), ordered=True, categories=["G1", "S", "G2M"]
            ),
            "n_genes_by_counts": n_genes,
            "total_counts": np.asarray(x.sum(axis=1)).ravel(),
            "pct_counts_mt": rng.random(cells).astype(np.float32) * 10,
            "doublet": rng.random(cells) < 0.05,
        },
        index=[f"cell{i}" for i in range(cells)],
    )
    var = pd.DataFrame(
        {
            "gene_ids": np.array([f"ENSG{i:011d}" for i in range(genes)], dtype=object),
            "feature_types": pd.Categorical(["Gene Expression"] * genes),
            "highly_variable": rng.random(genes) < 0.1,
            "means": rng.random(genes),
        },
        index=[f"gene{i}" for i in range(genes)],
    )
    ad = anndata.AnnData(X=x, obs=obs, var=var)
    ad.obsm["X_pca"] = rng.random((cells, N_PCS), dtype=np.float32)
    ad.uns["log1p"] = {"base": None}
    ad.uns["pca"] = {"variance_ratio": rng.random(N_PCS), "params": {"zero_center": True}}
    return ad


def x_bytes(ad: Any) -> int:
    x = ad.X
    return int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)


def _size(s: Any) -> str:
    cells, genes, _ = sizes()
    return f"{cells:,} x {genes:,}, nnz {s.nnz:,}"


def _check(got: Any, want: Any, peer: str) -> None:
    """The read-back object equals the original in ``X`` and ``obs`` (dtypes included)."""
    import pandas as pd

    if got.X.shape != want.X.shape or got.X.format != want.X.format or (got.X != want.X).nnz:
        raise RuntimeError(f"{peer}: X does not round-trip")
    try:
        pd.testing.assert_frame_equal(got.obs, want.obs, check_exact=True)
    except AssertionError as exc:
        raise RuntimeError(f"{peer}: obs does not round-trip: {exc}") from None


# --- Writers and readers --------------------------------------------------------------------------


def write_daf(path: str, ad: Any, relayout: bool) -> None:
    anndata_to_daf(ad, path, relayout=relayout).close()


def read_daf(path: str) -> Any:
    with dafzarr.open_daf(path) as daf:
        return daf_to_anndata(daf)


def write_h5ad(path: str, ad: Any) -> None:
    ad.write_h5ad(path)


def read_h5ad(path: str) -> Any:
    import anndata

    return anndata.read_h5ad(path)


def write_zarr(path: str, ad: Any) -> None:
    ad.write_zarr(path)


def read_zarr(path: str) -> Any:
    import anndata

    return anndata.read_zarr(path)


# The data set of the run, from a seed the report prints (``--seed`` repeats a run).
dataset = c.SeededData(make_adata)
seed = dataset.seed


class _Suite(c.WriterSuite):
    temp_prefix = "dafzarr-bench-anndata-"

    def setup(self) -> None:
        self._mktemp()
        self.ad = dataset()
        self.nnz = self.ad.X.nnz
        self.nbytes = x_bytes(self.ad)


class Write(_Suite):
    """Write the whole AnnData object."""

    label = "write"
    baseline = ("anndata .h5ad",)
    bench_rounds: ClassVar[dict[bool, int]] = {False: 3, True: 3}
    _outputs: ClassVar[dict[str, str]] = {
        "time_daf_zip": "w.daf.zarr.zip",
        "time_daf_zip_relayout": "wr.daf.zarr.zip",
        "time_h5ad": "w.h5ad",
        "time_zarr": "w.zarr",
    }

    @c.bench("write AnnData", "Daf ZIP", c.MB, lambda s: s.nbytes, size=_size)
    def time_daf_zip(self) -> None:
        write_daf(self.p("w.daf.zarr.zip"), self.ad, relayout=False)

    @c.bench("write AnnData", "Daf ZIP, relayout", c.MB, lambda s: s.nbytes, size=_size)
    def time_daf_zip_relayout(self) -> None:
        write_daf(self.p("wr.daf.zarr.zip"), self.ad, relayout=True)

    @c.bench("write AnnData", "anndata .h5ad", c.MB, lambda s: s.nbytes, size=_size)
    def time_h5ad(self) -> None:
        write_h5ad(self.p("w.h5ad"), self.ad)

    @c.bench("write AnnData", "anndata .zarr", c.MB, lambda s: s.nbytes, size=_size)
    def time_zarr(self) -> None:
        write_zarr(self.p("w.zarr"), self.ad)


class Read(_Suite):
    """Read the whole AnnData object back (warm: page cache)."""

    label = "read"
    baseline = ("anndata .h5ad",)

    def setup(self) -> None:
        super().setup()
        write_daf(self.p("r.daf.zarr.zip"), self.ad, relayout=False)
        write_h5ad(self.p("r.h5ad"), self.ad)
        write_zarr(self.p("r.zarr"), self.ad)
        for reader, name in (
            (read_daf, "r.daf.zarr.zip"),
            (read_h5ad, "r.h5ad"),
            (read_zarr, "r.zarr"),
        ):
            _check(reader(self.p(name)), self.ad, name)

    @c.bench("read AnnData", "Daf ZIP", c.MB, lambda s: s.nbytes, size=_size)
    def time_daf_zip(self) -> None:
        read_daf(self.p("r.daf.zarr.zip"))

    @c.bench("read AnnData", "anndata .h5ad", c.MB, lambda s: s.nbytes, size=_size)
    def time_h5ad(self) -> None:
        read_h5ad(self.p("r.h5ad"))

    @c.bench("read AnnData", "anndata .zarr", c.MB, lambda s: s.nbytes, size=_size)
    def time_zarr(self) -> None:
        read_zarr(self.p("r.zarr"))


SUITES: dict[str, list[type]] = {"write": [Write], "read": [Read]}


def main(argv: list[str] | None = None) -> int:
    from importlib.metadata import version

    import zarr

    parts = ["write", "read"]
    ap = c.argument_parser("python -m benchmarks.bench_anndata", __doc__, parts)
    ap.add_argument("--seed", type=int, default=None, help="reuse a printed seed")
    for name in ("cells", "genes", "nnz"):
        ap.add_argument(f"--{name}", type=int, default=None, help=f"override the {name}")
    args = ap.parse_args(argv)
    only = c.selected_suites(ap, args, parts)
    for name in ("cells", "genes", "nnz"):
        if getattr(args, name) is not None:
            _SIZES[name] = getattr(args, name)
    dataset.set_seed(args.seed)
    rounds = args.rounds or 3
    warnings.filterwarnings("ignore", module="anndata")
    with c.RunClock() as clock:
        c.eprint(f"seed {seed()}; generating data ...")
        results = c.run_suites(SUITES, only, rounds)
    cells, genes, nnz = sizes()
    c.report(
        "AnnData bridge benchmarks",
        [
            (
                f"* dafzarr {dafzarr.__version__}, anndata {version('anndata')}, "
                f"zarr {zarr.__version__}"
            ),
            (
                f"* {cells:,} cells x {genes:,} genes, about {nnz:,} stored float32 values (CSR), "
                f"obs with 3 categoricals, a nullable Int32, strings; a {N_PCS}-column PCA; "
                f"seed {seed()}"
            ),
            *clock.lines(rounds),
        ],
        results,
        (
            "MB/s count X's bytes (data + indices + indptr). Daf ZIP writes go through "
            "anndata_to_daf into a new archive; reads through daf_to_anndata of the opened archive "
            "(matrices served from the mapping; the 1-based stored indices converted once)."
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
