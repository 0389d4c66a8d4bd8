"""``anndata_to_daf`` and ``daf_to_anndata``: one AnnData object as one Daf data set and back.

Every element is planned first (:class:`._plan.ConversionPlan`), so an element that cannot be kept
raises ``AnnDataConversionError`` before anything is written; the manifest (the string
scalar ``anndata``, JSON) is written last and tells the reverse direction how to rebuild
the exact object. A data set without the manifest (one written by DataAxesFormats.jl) is
read with the plain mapping of :mod:`._legacy`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sp

from ...errors import AnnDataConversionError
from ..daf.copy import new_destination
from ..daf.interface import DafReader
from ..daf.zarrdaf import ZarrDaf, open_daf
from .columns import decode_frame, encode_frame
from .escapes import EscapedNames
from .legacy import legacy_daf_to_anndata
from .matrix_slots import decode_matrix, encode_matrix
from .plan import ConversionPlan, Spec
from .uns import decode_uns, encode_uns

if TYPE_CHECKING:
    from anndata import AnnData

    from ..aliases import OpenMode

__all__ = ["MANIFEST", "anndata_to_daf", "daf_to_anndata"]

#: The name of the string scalar holding the JSON manifest of the mapping.
MANIFEST = "anndata"
_FORMAT = "dafzarr-anndata"
# 2: names that are no valid Daf names are stored escaped (``names``); 1 stored none.
_VERSION = 2
_READABLE = (1, 2)


def _mapping(plan: ConversionPlan, base: str, items: Any, slot: str, axis_prefix: str) -> list[Any]:
    """``obsm``/``varm`` entries: arrays and sparse matrices on an axis ``<prefix><key>``,
    DataFrames as vectors ``<slot>.<key>.<column>`` on ``base``."""
    import pandas as pd

    out: list[Any] = []
    for key, value in items.items():
        where = f"{slot}[{key!r}]"
        if isinstance(value, pd.DataFrame):
            out.append(
                [
                    key,
                    {
                        "kind": "frame",
                        "frame": encode_frame(plan, base, value, f"{slot}.{key}.", where),
                    },
                ]
            )
            continue
        axis = f"{axis_prefix}{key}"
        if not (sp.issparse(value) or isinstance(value, np.ndarray)) or value.ndim != 2:
            raise AnnDataConversionError(
                f"{where}: {type(value).__name__} has no Daf mapping (expected a 2-D numpy "
                "array, a scipy sparse matrix or a DataFrame)"
            )
        plan.axis(axis, [str(i) for i in range(value.shape[1])], where)
        out.append(
            [key, {"kind": "matrix", "matrix": encode_matrix(plan, base, axis, key, value, where)}]
        )
    return out


def _plan(adata: AnnData, plan: ConversionPlan, obs_axis: str, var_axis: str, x_name: str) -> Spec:
    if obs_axis == var_axis:
        raise AnnDataConversionError(f"obs_axis and var_axis are both {obs_axis!r}")
    plan.axis(obs_axis, np.asarray(adata.obs_names, dtype=object), "obs_names")
    plan.axis(var_axis, np.asarray(adata.var_names, dtype=object), "var_names")
    manifest: Spec = {
        "format": _FORMAT,
        "version": _VERSION,
        "obs_axis": obs_axis,
        "var_axis": var_axis,
    }
    manifest["obs"] = encode_frame(plan, obs_axis, adata.obs, "", "obs")
    manifest["var"] = encode_frame(plan, var_axis, adata.var, "", "var")
    manifest["X"] = (
        None if adata.X is None else encode_matrix(plan, obs_axis, var_axis, x_name, adata.X, "X")
    )
    manifest["layers"] = [
        [k, encode_matrix(plan, obs_axis, var_axis, k, v, f"layers[{k!r}]")]
        for k, v in adata.layers.items()
    ]
    manifest["obsm"] = _mapping(plan, obs_axis, adata.obsm, "obsm", "")
    manifest["varm"] = _mapping(plan, var_axis, adata.varm, "varm", "")
    manifest["obsp"] = [
        [k, encode_matrix(plan, obs_axis, obs_axis, k, v, f"obsp[{k!r}]")]
        for k, v in adata.obsp.items()
    ]
    manifest["varp"] = [
        [k, encode_matrix(plan, var_axis, var_axis, k, v, f"varp[{k!r}]")]
        for k, v in adata.varp.items()
    ]
    manifest["uns"] = encode_uns(plan, adata.uns)
    manifest["raw"] = None
    if adata.raw is not None:
        raw = adata.raw
        raw_axis = f"raw.{var_axis}"
        plan.axis(raw_axis, np.asarray(raw.var_names, dtype=object), "raw.var_names")
        manifest["raw"] = {
            "var_axis": raw_axis,
            "X": None
            if raw.X is None
            else encode_matrix(plan, obs_axis, raw_axis, x_name, raw.X, "raw.X"),
            "var": encode_frame(plan, raw_axis, raw.var, "", "raw.var"),
            "varm": _mapping(plan, raw_axis, raw.varm, "raw.varm", "raw."),
        }
    return manifest


def anndata_to_daf(
    adata: AnnData,
    destination: ZarrDaf | str | os.PathLike[str],
    *,
    obs_axis: str = "cell",
    var_axis: str = "gene",
    X: str = "UMIs",
    mode: str = "w",
    zarr_format: int = 2,
    relayout: bool = True,
) -> ZarrDaf:
    """Store ``adata`` as a Daf data set (a path, or an open writable ZarrDaf to add it to).

    Every element is kept (see the mapping table in the README's AnnData section) and
    :func:`daf_to_anndata` gives back an equal object; an element Daf cannot hold raises
    :class:`~dafzarr.errors.AnnDataConversionError` naming it, before anything is written.
    A path with ``mode="w"`` (the default) is written whole under a temporary name and renamed
    into place (a group of a multi-data-set ZIP: in one batch), so a failure or a kill leaves
    an existing destination as it was and no partial one; the data set is returned open
    ``r+``. Other modes write into the data set at the path as an open ZarrDaf does.
    ``X`` names the matrix holding ``adata.X``. Matrices are stored in the layout that is
    their own memory (a CSR ``X`` is the CSC ``var_axis x obs_axis`` matrix, its arrays
    written as they are); ``relayout`` stores the other layout too (never for ``obsp``/``varp``).

    Parameters
    ----------
    adata
        The AnnData object to store (it is not changed).
    destination
        The path of the data set to write, or an open writable ZarrDaf to add it to.
    obs_axis
        The Daf axis of the observations (``adata.obs_names``).
    var_axis
        The Daf axis of the variables (``adata.var_names``).
    X
        The name of the ``obs_axis x var_axis`` matrix holding ``adata.X``.
    mode
        How a path is opened: ``"w"`` (the default) writes a new data set in place of any
        there; ``"r+"``/``"w+"`` add to the data set at the path, as :func:`dafzarr.open_daf`.
    zarr_format
        The Zarr format of a new data set (2 or 3).
    relayout
        Also store each matrix in the other layout (rows and columns swapped).

    Returns
    -------
    ZarrDaf
        The data set written, open ``r+`` (``destination`` itself when it was a ZarrDaf).

    Raises
    ------
    AnnDataConversionError
        An element Daf cannot hold as it is, ``obs_axis`` equal to ``var_axis``, or (adding
        to a data set) a property the destination holds already; the message names the
        element, and nothing is written.
    DafNotFoundError
        ``mode="r+"`` and no data set at the path.
    InvalidArgumentError
        An unknown ``mode``.
    DafReadOnlyError
        ``destination`` is a data set opened read-only.

    Examples
    --------
    >>> import anndata
    >>> import pandas as pd
    >>> from dafzarr.anndata import anndata_to_daf, daf_to_anndata
    >>> adata = anndata.AnnData(
    ...     X=np.arange(6, dtype="f4").reshape(2, 3), obs=pd.DataFrame(index=["c0", "c1"]),
    ...     var=pd.DataFrame({"chromosome": ["1", "2", "X"]}, index=["g0", "g1", "g2"]))
    >>> daf = anndata_to_daf(adata, "cells.daf.zarr")
    >>> sorted(daf.axes_set()), daf.get_np_vector("gene", "chromosome").tolist()
    (['cell', 'gene'], ['1', '2', 'X'])
    >>> daf_to_anndata(daf).X.tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    if isinstance(destination, ZarrDaf) or mode != "w":
        open_mode = cast("OpenMode", mode)  # open_daf refuses an unknown mode
        daf = (
            destination
            if isinstance(destination, ZarrDaf)
            else open_daf(destination, open_mode, zarr_format=zarr_format)
        )
        _write(adata, daf, ConversionPlan(daf, relayout), obs_axis, var_axis, X)
        return daf
    plan = ConversionPlan(None, relayout)
    manifest = _plan(adata, plan, obs_axis, var_axis, X)  # refusals before any file exists
    with new_destination(os.fspath(destination), zarr_format, force=True) as new:
        _run(plan, manifest, new)
    return open_daf(destination, "r+")


def _write(
    adata: AnnData, daf: ZarrDaf, plan: ConversionPlan, obs_axis: str, var_axis: str, x_name: str
) -> None:
    _run(plan, _plan(adata, plan, obs_axis, var_axis, x_name), daf)


def _run(plan: ConversionPlan, manifest: Spec, daf: ZarrDaf) -> None:
    """Write the planned properties, then the manifest that makes them an AnnData object."""
    plan.reserve_scalar(MANIFEST, "the AnnData manifest")
    plan.run(daf)
    daf.set_scalar(MANIFEST, json.dumps(manifest, separators=(",", ":")))


def read_manifest(daf: ZarrDaf) -> Spec | None:
    """The stored manifest, or ``None`` for a data set that has none."""
    text = daf.get_scalar(MANIFEST, default=None)
    if text is None:
        return None
    try:
        manifest = json.loads(str(text))
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        return None
    if manifest.get("version") not in _READABLE:
        raise AnnDataConversionError(
            f"{_where(daf)}: AnnData manifest version {manifest.get('version')} is not one "
            f"this dafzarr reads ({', '.join(map(str, _READABLE))})"
        )
    return manifest


def _where(daf: Any) -> str:
    """The path of a stored data set, or the name of a view or chain."""
    return str(getattr(daf, "path", daf.name))


def _entries(daf: Any, axis: str) -> Any:
    return np.asarray(daf.axis_np_entries(axis), dtype=object)


def _mapping_back(daf: Any, items: list[Any], index: Any) -> dict[str, Any]:
    out = {}
    for key, spec in items:
        if spec["kind"] == "frame":
            out[key] = decode_frame(daf, spec["frame"], index)
        else:
            out[key] = decode_matrix(daf, spec["matrix"])
    return out


def daf_to_anndata(
    daf: DafReader | str | os.PathLike[str],
    obs_axis: str | None = None,
    var_axis: str | None = None,
    *,
    X: str | None = None,
    layers: bool = True,
    obsm: bool = True,
    obsp: bool = True,
    uns: bool = True,
) -> AnnData:
    """An ``anndata.AnnData`` of ``daf``'s data along ``obs_axis`` x ``var_axis``.

    ``daf``: a path, or any reader (a ``ZarrDaf``, a view, a chain). A data set written by
    :func:`anndata_to_daf` gives back the object that was written
    (axes default to the written ones; dense matrices are read-only views of the store where
    their layout allows, sparse ones share the stored values). Any other data set (e.g.
    written by DataAxesFormats.jl) is read with the plain mapping: ``X`` (default
    ``"UMIs"``) names the matrix that becomes ``adata.X``, the other ``obs x var`` matrices
    become layers; ``layers``, ``obsm``, ``obsp`` and ``uns`` switch those parts off.

    Parameters
    ----------
    daf
        A data set's path, or any Daf reader.
    obs_axis
        The axis of the observations (default: the one :func:`anndata_to_daf` wrote; needed
        for any other data set).
    var_axis
        The axis of the variables (same default).
    X
        The matrix that becomes ``adata.X`` in the plain mapping (default ``"UMIs"``).
    layers
        Read the other ``obs x var`` matrices as layers.
    obsm
        Read the ``obsm``/``varm`` matrices.
    obsp
        Read the ``obsp``/``varp`` matrices.
    uns
        Read the scalars (and what :func:`anndata_to_daf` stored) into ``uns``.

    Returns
    -------
    anndata.AnnData
        Observations along ``obs_axis``, variables along ``var_axis``.

    Raises
    ------
    AnnDataConversionError
        A data set without an AnnData manifest for these axes, and ``obs_axis`` or
        ``var_axis`` not given; a manifest of a version this dafzarr does not read.
    DafNotFoundError
        No data set at the path.
    DafMissingError
        An axis, or the ``X`` matrix of the plain mapping, the data set does not hold.

    Examples
    --------
    Any data set, read with the plain mapping:

    >>> from dafzarr.anndata import daf_to_anndata
    >>> daf = dafzarr.open_daf("plain.daf.zarr", "w")
    >>> _ = daf.add_axis("cell", ["c0", "c1"])
    >>> _ = daf.add_axis("gene", ["g0", "g1", "g2"])
    >>> _ = daf.set_matrix("gene", "cell", "UMIs", np.arange(6.0).reshape(3, 2))
    >>> _ = daf.set_vector("cell", "batch", ["b0", "b1"])
    >>> adata = daf_to_anndata(daf, "cell", "gene")
    >>> adata.X.tolist(), adata.obs["batch"].tolist(), adata.var_names.tolist()
    ([[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]], ['b0', 'b1'], ['g0', 'g1', 'g2'])
    """
    import anndata

    # Any reader (ZarrDaf, view, chain): only the public reader API is used.
    daf = cast("ZarrDaf", open_daf(daf) if isinstance(daf, str | os.PathLike) else daf)
    manifest = read_manifest(daf)
    if (
        manifest is None
        or obs_axis not in (None, manifest["obs_axis"])
        or var_axis not in (None, manifest["var_axis"])
    ):
        if obs_axis is None or var_axis is None:
            raise AnnDataConversionError(
                f"{_where(daf)}: holds no AnnData manifest for these axes; name the obs and "
                "var axes to read it with the plain mapping"
            )
        return legacy_daf_to_anndata(
            daf, obs_axis, var_axis, X=X or "UMIs", layers=layers, obsm=obsm, obsp=obsp, uns=uns
        )
    return _from_manifest(
        anndata,
        EscapedNames(daf) if manifest["version"] >= 2 else daf,
        manifest,
        layers,
        obsm,
        obsp,
        uns,
    )


def _from_manifest(
    anndata: Any, daf: Any, manifest: Spec, layers: bool, obsm: bool, obsp: bool, uns: bool
) -> AnnData:
    """The AnnData object ``manifest`` describes, read from ``daf`` by AnnData names."""
    obs_names = _entries(daf, manifest["obs_axis"])
    var_names = _entries(daf, manifest["var_axis"])
    adata = anndata.AnnData(
        X=None if manifest["X"] is None else decode_matrix(daf, manifest["X"]),
        obs=decode_frame(daf, manifest["obs"], obs_names),
        var=decode_frame(daf, manifest["var"], var_names),
        layers={k: decode_matrix(daf, s) for k, s in manifest["layers"]} if layers else None,
        obsm=_mapping_back(daf, manifest["obsm"], obs_names) if obsm else None,
        varm=_mapping_back(daf, manifest["varm"], var_names) if obsm else None,
        obsp={k: decode_matrix(daf, s) for k, s in manifest["obsp"]} if obsp else None,
        varp={k: decode_matrix(daf, s) for k, s in manifest["varp"]} if obsp else None,
        uns=decode_uns(daf, manifest["uns"]) if uns else None,
    )
    raw = manifest["raw"]
    if raw is not None:
        raw_names = _entries(daf, raw["var_axis"])
        adata.raw = anndata.AnnData(
            X=None if raw["X"] is None else decode_matrix(daf, raw["X"]),
            obs=adata.obs[[]],
            var=decode_frame(daf, raw["var"], raw_names),
            varm=_mapping_back(daf, raw["varm"], raw_names),
        )
    return adata
