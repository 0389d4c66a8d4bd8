"""Moving data between Daf and AnnData (scanpy's container) in one call.

Needs the optional ``anndata`` extra (``pip install dafzarr[anndata]``).

The mapping, in both directions:

=================================  ==================================================
AnnData                            Daf
=================================  ==================================================
``obs_names`` / ``var_names``      the entries of ``obs_axis`` / ``var_axis``
``obs[col]`` / ``var[col]``        vectors on ``obs_axis`` / ``var_axis``
``X``                              the matrix ``obs_axis x var_axis`` named ``X``
``layers[k]``                      the matrix ``obs_axis x var_axis`` named ``k``
``obsm[k]`` (n_obs x m)            axis ``k`` (entries ``"0"``..) and matrix
                                   ``obs_axis x k`` named ``k``; likewise ``varm``
``obsp[k]`` / ``varp[k]``          the square matrix ``obs_axis x obs_axis`` named ``k``
``uns[k]`` (bool/int/float/str)    the scalar ``k``
=================================  ==================================================

Categorical columns become string vectors; sparse matrices stay sparse (CSC).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .daf import ZarrDaf, open_daf
from .daf._layout import element_type

if TYPE_CHECKING:
    from anndata import AnnData

__all__ = ["anndata_to_daf", "daf_to_anndata"]


def _frame(daf: ZarrDaf, axis: str) -> Any:
    import pandas as pd

    index = pd.Index(list(daf.axis_np_entries(axis)), name=None)
    columns: dict[str, Any] = {}
    for name in sorted(daf.vectors_set(axis)):
        values = daf.get_np_vector(axis, name)
        columns[name] = values.astype(str) if values.dtype == object else values
    return pd.DataFrame(columns, index=index)


def daf_to_anndata(
    daf: ZarrDaf, obs_axis: str, var_axis: str, *, X: str = "UMIs", layers: bool = True,
    obsm: bool = True, obsp: bool = True, uns: bool = True,
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


def _column(values: Any, where: str) -> Any:
    import pandas as pd

    if isinstance(values.dtype, pd.CategoricalDtype):
        return np.asarray(values.astype(str), dtype=object)
    arr = np.asarray(values)
    if arr.dtype.kind in "OUT":
        return np.array(["" if v is None else str(v) for v in arr], dtype=object)
    try:
        element_type(arr.dtype, where)
    except TypeError:
        warnings.warn(f"{where}: dtype {arr.dtype} has no Daf element type; skipped",
                      UserWarning, stacklevel=3)
        return None
    return arr


def anndata_to_daf(
    adata: AnnData, destination: ZarrDaf | str | os.PathLike[str], *, obs_axis: str = "cell",
    var_axis: str = "gene", X: str = "UMIs", mode: str = "w", zarr_format: int = 2,
    relayout: bool = True,
) -> ZarrDaf:
    """Store ``adata`` as a Daf data set (a path to create, or an open writable ZarrDaf).

    ``X`` and layers are stored as ``obs_axis x var_axis`` matrices (with their transposed
    layout too when ``relayout``); see the module documentation for the whole mapping.
    Columns whose dtype has no Daf element type are skipped with a warning.
    """
    daf = destination if isinstance(destination, ZarrDaf) else open_daf(
        destination, mode, zarr_format=zarr_format  # type: ignore[arg-type]
    )
    daf.add_axis(obs_axis, np.asarray(adata.obs_names, dtype=object))
    daf.add_axis(var_axis, np.asarray(adata.var_names, dtype=object))
    for axis, frame in ((obs_axis, adata.obs), (var_axis, adata.var)):
        for col in frame.columns:
            values = _column(frame[col], f"{axis} column {col!r}")
            if values is not None:
                daf.set_vector(axis, str(col), values)
    if adata.X is not None:
        daf.set_matrix(obs_axis, var_axis, X, _matrix(adata.X), relayout=relayout)
    for name, layer in adata.layers.items():
        daf.set_matrix(obs_axis, var_axis, name, _matrix(layer), relayout=relayout)
    for target, base in ((adata.obsm, obs_axis), (adata.varm, var_axis)):
        for name, value in target.items():
            m = _matrix(value)
            if not daf.has_axis(name):
                daf.add_axis(name, [str(i) for i in range(m.shape[1])])
            daf.set_matrix(base, name, name, m, relayout=relayout)
    for target, base in ((adata.obsp, obs_axis), (adata.varp, var_axis)):
        for name, value in target.items():
            daf.set_matrix(base, base, name, _matrix(value))
    for name, value in adata.uns.items():
        if isinstance(value, bool | int | float | str | np.generic):
            daf.set_scalar(name, value)
    return daf


def _matrix(value: Any) -> Any:
    if sp.issparse(value):
        return value
    if hasattr(value, "to_numpy"):  # a DataFrame in obsm
        return value.to_numpy()
    return np.asarray(value)
