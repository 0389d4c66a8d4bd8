"""The AnnData bridge: one call each way, against the real anndata package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

anndata = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")

import dafzarr
from dafzarr.anndata import anndata_to_daf, daf_to_anndata
from dafzarr.errors import AnnDataConversionError


def _adata() -> Any:
    rng = np.random.default_rng(1)
    n_obs, n_var = 40, 12
    x = sp.random(n_obs, n_var, density=0.3, format="csr", dtype="float32", rng=rng)
    obs = pd.DataFrame(
        {
            "total": np.asarray(x.sum(axis=1)).ravel(),
            "batch": pd.Categorical(rng.choice(["b1", "b2"], n_obs)),
            "ok": rng.random(n_obs) < 0.5,
            "n_genes": rng.integers(0, 10, n_obs),
            "label": [f"é{i}" for i in range(n_obs)],
        },
        index=[f"cell{i}" for i in range(n_obs)],
    )
    var = pd.DataFrame({"mean": rng.random(n_var)}, index=[f"g{i}" for i in range(n_var)])
    ad = anndata.AnnData(X=x, obs=obs, var=var)
    ad.layers["dense"] = rng.random((n_obs, n_var))
    ad.obsm["X_pca"] = rng.random((n_obs, 5)).astype("float32")
    ad.obsp["distances"] = sp.random(n_obs, n_obs, density=0.1, format="csr", rng=rng)
    ad.uns["title"] = "example"
    ad.uns["version"] = 3
    return ad


@pytest.mark.parametrize("rel", ["a.daf.zarr", "a.daf.zarr.zip"])
def test_round_trip(tmp_path: Path, rel: str) -> None:
    ad = _adata()
    d = anndata_to_daf(ad, tmp_path / rel)
    d.close()
    r = dafzarr.open_daf(tmp_path / rel)
    assert r.axis_length("cell") == 40 and r.axis_length("gene") == 12
    assert list(r.get_np_vector("cell", "batch")) == list(ad.obs["batch"].astype(str))
    back = daf_to_anndata(r, "cell", "gene")
    assert list(back.obs_names) == list(ad.obs_names)
    assert sp.issparse(back.X) and (back.X != ad.X).nnz == 0
    assert np.array_equal(back.layers["dense"], ad.layers["dense"])
    assert np.array_equal(back.obsm["X_pca"], ad.obsm["X_pca"])
    assert (back.obsp["distances"] != ad.obsp["distances"]).nnz == 0
    for col in ("total", "ok", "n_genes"):
        assert np.array_equal(back.obs[col].to_numpy(), ad.obs[col].to_numpy()), col
    assert list(back.obs["label"]) == [f"é{i}" for i in range(40)]
    assert np.array_equal(back.var["mean"].to_numpy(), ad.var["mean"].to_numpy())
    assert back.uns["title"] == "example" and back.uns["version"] == 3
    # The AnnData object we built writes to .h5ad like any other.
    back.write_h5ad(tmp_path / "back.h5ad")
    again = anndata.read_h5ad(tmp_path / "back.h5ad")
    assert (again.X != ad.X).nnz == 0


def test_unsupported_columns_are_refused_by_name(tmp_path: Path) -> None:
    ad = anndata.AnnData(
        X=np.ones((2, 1), "float32"),
        obs=pd.DataFrame({"z": np.array([1j, 2j]), "f": [1.0, 2.0]}, index=["a", "b"]),
    )
    d = dafzarr.memory_daf()
    with pytest.raises(
        AnnDataConversionError, match="obs column 'z': dtype complex128 has no Daf element type"
    ):
        anndata_to_daf(ad, d)
    assert d.axes_set() == set()  # nothing written
