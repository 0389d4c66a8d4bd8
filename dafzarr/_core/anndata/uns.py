"""``uns``: nested dicts of scalars, strings, arrays and lists as Daf scalars, axes and vectors.

A value at ``uns[k1][k2]`` is stored under the path name ``uns.k1.k2``: a scalar (bool, int,
float, str, numpy scalar) as the scalar of that name; a 1-D array or a flat list of one
element type as the axis ``uns.k1.k2`` (entries ``"0"``, ``"1"``, ...) with the vector
``value``; a 2-D array or sparse matrix as the matrix ``value`` of the axes
``uns.k1.k2.rows`` x ``uns.k1.k2.columns``. The tree (keys in order, dicts, ``None``) is in
the manifest, with each value's numpy dtype: bytes (``S``) values, which Daf has no element
type for, are stored as strings of one Latin-1 character per byte and come back as the same
bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import AnnDataConversionError
from .columns import decode_column, decode_frame, encode_column, encode_frame
from .matrix_slots import decode_matrix, encode_matrix
from .plan import ConversionPlan, Spec, daf_dtype

__all__ = ["decode_uns", "encode_uns"]

_PYTHON_SCALARS = {bool: "bool", int: "int", float: "float", str: "str"}


def _where(path: tuple[str, ...]) -> str:
    return "uns" + "".join(f"[{k!r}]" for k in path)


def _storable(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Unicode or bytes values as the ``str`` objects Daf stores (bytes: one Latin-1
    character per byte, so every byte value has one); other values as they are."""
    if values.dtype.kind == "S":
        return np.char.decode(values, "latin-1").astype(object)
    return values.astype(object) if values.dtype.kind == "U" else values


def _restored(values: Any, dtype: np.dtype[Any]) -> Any:
    """Stored values back in the numpy ``dtype`` the manifest recorded (undoes
    :func:`_storable`)."""
    if dtype.kind == "S":
        return np.char.encode(np.asarray(values, dtype=str), "latin-1").astype(dtype)
    if dtype.kind in "OU":
        text = np.asarray(values, dtype=object)
        return text.astype(dtype) if dtype.kind == "U" else text
    return values


def _array(plan: ConversionPlan, name: str, value: Any, where: str) -> Spec:
    if sp.issparse(value) or (isinstance(value, np.ndarray) and value.ndim == 2):
        rows, cols = f"{name}.rows", f"{name}.columns"
        plan.axis(rows, [str(i) for i in range(value.shape[0])], where)
        plan.axis(cols, [str(i) for i in range(value.shape[1])], where)
        return {"kind": "matrix", "matrix": encode_matrix(plan, rows, cols, "value", value, where)}
    if value.ndim != 1:
        raise AnnDataConversionError(f"{where}: a {value.ndim}-D array has no Daf mapping")
    if value.dtype.kind == "O":
        if not all(isinstance(v, str) for v in value.tolist()):
            raise AnnDataConversionError(f"{where}: an object array must hold only str")
    elif value.dtype.kind not in "US":
        daf_dtype(value.dtype, where)
    plan.axis(name, [str(i) for i in range(value.shape[0])], where)
    plan.vector(name, "value", _storable(value), where)
    return {"kind": "vector", "axis": name, "dtype": value.dtype.str}


def _records(plan: ConversionPlan, name: str, value: Any, where: str) -> Spec:
    """A 1-D record array (scanpy's ``rank_genes_groups`` results): one vector per field."""
    if value.ndim != 1:
        raise AnnDataConversionError(f"{where}: a {value.ndim}-D record array has no Daf mapping")
    plan.axis(name, [str(i) for i in range(value.shape[0])], where)
    fields = []
    for field in value.dtype.names:
        dtype = value.dtype.fields[field][0]
        at = f"{where} field {field!r}"
        if dtype.names is not None or dtype.shape != ():
            raise AnnDataConversionError(f"{at}: a nested or sub-array field has no Daf mapping")
        column = np.asarray(value[field])
        if dtype.kind == "O" and not all(isinstance(v, str) for v in column.tolist()):
            raise AnnDataConversionError(f"{at}: an object field must hold only str")
        if dtype.kind not in "OUS":
            daf_dtype(dtype, at)
        plan.vector(name, field, _storable(column), at)
        fields.append([field, dtype.str])
    return {
        "kind": "records",
        "axis": name,
        "fields": fields,
        "recarray": isinstance(value, np.recarray),
    }


def _frame(plan: ConversionPlan, name: str, value: Any, where: str) -> Spec:
    """A DataFrame: axis ``name`` (entries ``"0"``, ...), its columns as vectors on it and its
    index as the vector ``_index`` (as anndata names it in ``.h5ad``)."""
    import pandas as pd

    plan.axis(name, [str(i) for i in range(len(value))], where)
    index = encode_column(plan, name, "_index", pd.Series(value.index), f"{where} index")
    return {
        "kind": "frame",
        "frame": encode_frame(plan, name, value, "", where),
        "index": {**index, "vector": "_index"},
    }


def encode_uns(plan: ConversionPlan, value: Any, path: tuple[str, ...] = ()) -> Spec:
    """Plan the ``uns`` value at ``path``; its spec."""
    import pandas as pd

    where = _where(path)
    name = ".".join(("uns", *path))
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise AnnDataConversionError(f"{where}: key {key!r} is not a str")
            items.append([key, encode_uns(plan, item, (*path, key))])
        return {"kind": "dict", "items": items}
    if value is None:
        return {"kind": "none"}
    if type(value) in _PYTHON_SCALARS:
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not (-(1 << 63) <= value < (1 << 63))
        ):
            raise AnnDataConversionError(f"{where}: integer {value} does not fit int64")
        plan.scalar(name, value, where)
        return {"kind": "scalar", "type": _PYTHON_SCALARS[type(value)]}
    if isinstance(value, np.generic):
        if not isinstance(value, np.str_ | np.bytes_):
            daf_dtype(value.dtype, where)
        plan.scalar(name, _storable(np.asarray(value))[()], where)
        return {"kind": "scalar", "type": "numpy", "dtype": value.dtype.str}
    if isinstance(value, list):
        types = {type(v) for v in value}
        if len(types) > 1 or not types <= set(_PYTHON_SCALARS):
            raise AnnDataConversionError(
                f"{where}: only a list of one element type (bool, int, float or str) has a Daf "
                f"mapping, found {sorted(t.__name__ for t in types)}"
            )
        array = np.asarray(value, dtype=object if types == {str} else None)
        return {**_array(plan, name, array, where), "list": True}
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        return _records(plan, name, value, where)
    if sp.issparse(value) or isinstance(value, np.ndarray):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return encode_uns(plan, value[()], path)
        return _array(plan, name, value, where)
    if isinstance(value, pd.DataFrame):
        return _frame(plan, name, value, where)
    raise AnnDataConversionError(f"{where}: {type(value).__name__} has no Daf mapping")


def _scalar(daf: Any, name: str, spec: Spec) -> Any:
    value = daf.get_scalar(name)
    kind = spec["type"]
    if kind == "numpy":
        dtype = np.dtype(spec["dtype"])
        if dtype.kind in "US":
            return _restored([value], dtype)[0]
        return np.asarray(value).astype(dtype)[()]
    return {"bool": bool, "int": int, "float": float, "str": str}[kind](value)


def _records_back(daf: Any, spec: Spec) -> Any:
    axis = spec["axis"]
    dtype = np.dtype([(field, np.dtype(code)) for field, code in spec["fields"]])
    out = np.empty(daf.axis_length(axis), dtype=dtype)
    for field, _code in spec["fields"]:
        out[field] = _restored(daf.get_np_vector(axis, field), dtype[field])
    return out.view(np.recarray) if spec["recarray"] else out


def decode_uns(daf: Any, spec: Spec, path: tuple[str, ...] = ()) -> Any:
    """The ``uns`` value ``encode_uns`` planned at ``path``."""
    kind = spec["kind"]
    name = ".".join(("uns", *path))
    if kind == "dict":
        return {key: decode_uns(daf, item, (*path, key)) for key, item in spec["items"]}
    if kind == "none":
        return None
    if kind == "scalar":
        return _scalar(daf, name, spec)
    if kind == "matrix":
        return decode_matrix(daf, spec["matrix"])
    if kind == "records":
        return _records_back(daf, spec)
    if kind == "frame":
        index = decode_column(daf, spec["frame"]["axis"], spec["index"])
        return decode_frame(daf, spec["frame"], index)
    values = _restored(daf.get_np_vector(spec["axis"], "value"), np.dtype(spec["dtype"]))
    if spec.get("list"):
        return values.tolist()
    return values
