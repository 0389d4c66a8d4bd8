"""The plain mapping of a Daf data set without an AnnData manifest (e.g. written by
DataAxesFormats.jl): vectors become columns (sorted by name), the ``obs x var`` matrices ``X``
and layers, matrices on other axes ``obsm``/``varm``, square matrices ``obsp``/``varp`` and
scalars ``uns``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..daf.zarrdaf import ZarrDaf

if TYPE_CHECKING:
    from anndata import AnnData

__all__ = ["legacy_daf_to_anndata"]


def _frame(daf: ZarrDaf, axis: str) -> Any:
    import pandas as pd

    index = pd.Index(list(daf.axis_np_entries(axis)), name=None)
    columns: dict[str, Any] = {}
    for name in sorted(daf.vectors_set(axis)):
        values = daf.get_np_vector(axis, name)
        columns[name] = values.astype(str) if values.dtype == object else values
    return pd.DataFrame(columns, index=index)


def legacy_daf_to_anndata(
    daf: ZarrDaf,
    obs_axis: str,
    var_axis: str,
    *,
    X: str = "UMIs",
    layers: bool = True,
    obsm: bool = True,
    obsp: bool = True,
    uns: bool = True,
) -> AnnData:
    """An ``anndata.AnnData`` holding ``daf``'s data along ``obs_axis`` x ``var_axis``.

    ``X`` names the matrix that becomes ``adata.X``; the other ``obs x var`` matrices become
    layers. Dense matrices are column-major views of the store where possible.
    """
    import anndata

    obs, var = _frame(daf, obs_axis), _frame(daf, var_axis)
    x = daf.get_np_matrix(obs_axis, var_axis, X)
    ad = anndata.AnnData(X=x, obs=obs, var=var)
    if layers:
        for name in sorted(daf.matrices_set(obs_axis, var_axis) - {X}):
            ad.layers[name] = daf.get_np_matrix(obs_axis, var_axis, name)
    others = sorted(daf.axes_set() - {obs_axis, var_axis})
    if obsm:
        for axis in others:
            for target, base in ((ad.obsm, obs_axis), (ad.varm, var_axis)):
                for name in sorted(daf.matrices_set(base, axis)):
                    key = name if name == axis else f"{axis}_{name}"
                    m = daf.get_np_matrix(base, axis, name)
                    target[key] = m if sp.issparse(m) else np.asarray(m)
    if obsp:
        for target, base in ((ad.obsp, obs_axis), (ad.varp, var_axis)):
            for name in sorted(daf.matrices_set(base, base)):
                target[name] = daf.get_np_matrix(base, base, name)
    if uns:
        for name in sorted(daf.scalars_set()):
            value = daf.get_scalar(name)
            ad.uns[name] = value.item() if isinstance(value, np.generic) else value
    return ad
