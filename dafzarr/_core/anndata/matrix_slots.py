"""Matrices (``X``, layers, ``obsm``/``varm`` arrays, ``obsp``/``varp``, 2-D ``uns`` arrays).

A matrix is stored in the Daf layout whose bytes are its own: a C-ordered ``rows x cols``
array (or CSR matrix) is the column-major (CSC) ``cols x rows`` matrix, so it is stored
under the swapped axes without a copy and read back as the transpose of the stored view.
Square matrices (``obsp``/``varp``) keep their axes: a CSR or C-ordered one is converted once.
The spec records the stored axes, the class (``ndarray``, ``csr_matrix``, ``csc_array``, ...)
and the memory order, which the reverse direction restores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import AnnDataConversionError
from .plan import ConversionPlan, Spec, daf_dtype

__all__ = ["decode_matrix", "encode_matrix"]


_SPARSE = (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array)


def _sparse_class(value: Any) -> str | None:
    """The scipy class a sparse value is (anndata's views are subclasses of them)."""
    for cls in _SPARSE:
        if isinstance(value, cls):
            return str(cls.__name__)
    return None


def _order(value: np.ndarray[Any, Any]) -> str:
    """``"F"`` for a column-major array (or a strided view that a copy would make one, as
    ``np.copy(order="K")`` does), else ``"C"``."""
    if value.flags.c_contiguous:
        return "C"
    if value.flags.f_contiguous:
        return "F"
    return "F" if abs(value.strides[0]) < abs(value.strides[1]) else "C"


def _stored_index_type(dtype: np.dtype[Any], largest: int) -> np.dtype[Any] | None:
    """The matrix's own index type when it holds the 1-based indices (then the indices are
    shifted in place of being widened, and read back in their type); else Daf's int64."""
    if dtype.kind in "iu" and largest + 1 <= np.iinfo(dtype).max:
        return dtype
    return None


def encode_matrix(
    plan: ConversionPlan, rows: str, cols: str, name: str, value: Any, where: str
) -> Spec:
    """Plan ``value`` (``len(rows) x len(cols)``) as the matrix ``name``; its spec."""
    if sp.issparse(value):
        cls = _sparse_class(value)
        if cls is None:
            raise AnnDataConversionError(
                f"{where}: sparse class {type(value).__name__} has no Daf mapping"
            )
        daf_dtype(value.dtype, where)
        index_dtype = value.coords[0].dtype if value.format == "coo" else value.indices.dtype
        spec: Spec = {"kind": "sparse", "class": cls, "index_dtype": str(index_dtype)}
        indtype = _stored_index_type(index_dtype, max(*value.shape, value.nnz))
        if value.format == "csr" and rows != cols:
            plan.matrix(cols, rows, name, value.T, where, indtype)
            return {**spec, "rows": cols, "cols": rows, "name": name, "transposed": True}
        plan.matrix(rows, cols, name, value, where, indtype)
        return {**spec, "rows": rows, "cols": cols, "name": name, "transposed": False}
    if hasattr(value, "to_numpy") or not isinstance(value, np.ndarray):
        raise AnnDataConversionError(
            f"{where}: {type(value).__name__} has no Daf mapping "
            "(expected a numpy array or a scipy sparse matrix)"
        )
    if value.ndim != 2:
        raise AnnDataConversionError(f"{where}: a {value.ndim}-D array has no Daf mapping")
    if value.dtype.kind in "OUT":
        raise AnnDataConversionError(
            f"{where}: a matrix of {value.dtype} has no Daf mapping (only numbers and bool)"
        )
    daf_dtype(value.dtype, where)
    order = _order(value)
    spec = {"kind": "dense", "class": "ndarray", "order": order, "name": name}
    if order == "C" and rows != cols:
        plan.matrix(cols, rows, name, value.T, where)
        return {**spec, "rows": cols, "cols": rows, "transposed": True}
    plan.matrix(rows, cols, name, value, where)
    return {**spec, "rows": rows, "cols": cols, "transposed": False}


def decode_matrix(daf: Any, spec: Spec) -> Any:
    """The matrix ``encode_matrix`` planned: a view of the store where the layout allows."""
    cls = spec["class"]
    sparse_class = "csc_array" if cls.endswith("_array") else "csc_matrix"
    m = daf.get_np_matrix(
        spec["rows"], spec["cols"], spec["name"], relayout=False, sparse_class=sparse_class
    )
    if spec["transposed"]:
        m = m.T
    if spec["kind"] == "sparse":
        fmt = cls.split("_")[0]
        if m.format != fmt:
            m = m.asformat(fmt)
        index_dtype = np.dtype(spec["index_dtype"])
        if fmt != "coo" and m.indices.dtype != index_dtype:
            m.indices = m.indices.astype(index_dtype)
            m.indptr = m.indptr.astype(index_dtype)
        return m
    if spec["order"] == "C" and not m.flags.c_contiguous:
        return np.ascontiguousarray(m)
    if spec["order"] == "F" and not m.flags.f_contiguous:
        return np.asfortranarray(m)
    return m
