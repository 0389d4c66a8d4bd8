"""DataFrame columns (``obs``, ``var``, DataFrames in ``obsm``/``varm``) as Daf vectors.

Each column becomes one vector of Daf's own element types plus, when needed, a bool vector
``<vector>.missing`` (true where the value is missing) and, for a categorical, an axis
``<axis>.<vector>.categories`` holding its categories in order. A column spec (a JSON object
in the manifest) records what the reverse direction needs to rebuild the exact column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import AnnDataConversionError
from .plan import ConversionPlan, Spec, daf_dtype

__all__ = ["decode_column", "decode_frame", "encode_column", "encode_frame"]


def _markers() -> dict[str, Any]:
    """The missing-value markers of object columns that can be restored, by name."""
    import pandas as pd

    return {"none": None, "nan": np.nan, "na": pd.NA}


def _strings(values: Any, missing: np.ndarray[Any, Any], where: str) -> tuple[Any, str | None]:
    """Object values as an object array of ``str`` ("" where missing) and the name of the
    missing marker (``none``, ``nan`` or ``na`` for ``pandas.NA``)."""
    import pandas as pd

    out = np.asarray(values, dtype=object).copy()
    marks = {
        (
            "none"
            if v is None
            else "nan"
            if isinstance(v, float)
            else "na"
            if v is pd.NA
            else type(v).__name__
        )
        for v in out[missing].tolist()
    }
    if len(marks) > 1 or not marks <= set(_markers()):
        raise AnnDataConversionError(
            f"{where}: missing values marked by {sorted(marks)}; one marker (None, NaN or "
            "pandas.NA) per column can be restored"
        )
    out[missing] = ""
    bad = [v for v in out.tolist() if not isinstance(v, str)]
    if bad:
        raise AnnDataConversionError(
            f"{where}: an object column must hold only str (or missing values), found "
            f"{type(bad[0]).__name__} {bad[0]!r}"
        )
    return out, (marks.pop() if marks else None)


def _missing(
    plan: ConversionPlan, axis: str, vector: str, missing: np.ndarray[Any, Any], where: str
) -> str | None:
    if not bool(missing.any()):
        return None
    name = f"{vector}.missing"
    plan.vector(axis, name, np.ascontiguousarray(missing, dtype=bool), f"{where} (missing mask)")
    return name


def _categorical(plan: ConversionPlan, axis: str, vector: str, series: Any, where: str) -> Spec:
    dtype = series.dtype
    cats = dtype.categories
    cat_axis = f"{axis}.{vector}.categories"
    spec: Spec = {
        "kind": "categorical",
        "ordered": bool(dtype.ordered),
        "categories": cat_axis,
        "categories_dtype": str(cats.dtype),
    }
    if cats.dtype.kind in "biuf":
        daf_dtype(cats.dtype, f"{where} categories")
        labels = [str(c) for c in cats.tolist()]
        typed: Any = np.asarray(cats)
    elif cats.dtype == object or str(cats.dtype) in ("str", "string"):
        labels = cats.tolist()
        typed = None
        if not all(isinstance(c, str) for c in labels):
            raise AnnDataConversionError(f"{where}: categories of mixed types ({cats.dtype})")
    else:
        raise AnnDataConversionError(
            f"{where}: categories of dtype {cats.dtype} have no Daf mapping"
        )
    if len(set(labels)) != len(labels):
        raise AnnDataConversionError(f"{where}: categories whose text forms repeat")
    plan.axis(cat_axis, labels, f"{where} categories")
    if typed is not None:
        plan.vector(cat_axis, "value", typed, f"{where} categories")
        spec["categories_value"] = "value"
    codes = np.asarray(series.cat.codes)
    table = np.array([*labels, ""], dtype=object)
    plan.vector(axis, vector, table[codes], where)
    spec["missing"] = _missing(plan, axis, vector, codes < 0, where)
    return spec


def encode_column(plan: ConversionPlan, axis: str, vector: str, series: Any, where: str) -> Spec:
    """Plan one column (a pandas Series) as the vector ``vector`` on ``axis``; its spec."""
    import pandas as pd

    dtype = series.dtype
    spec: Spec = {"dtype": str(dtype)}
    if isinstance(dtype, pd.CategoricalDtype):
        return {**spec, **_categorical(plan, axis, vector, series, where)}
    array = series.array
    if isinstance(array, pd.arrays.IntegerArray | pd.arrays.FloatingArray | pd.arrays.BooleanArray):
        np_dtype = dtype.numpy_dtype
        missing = np.asarray(array.isna(), dtype=bool)
        plan.vector(axis, vector, array.to_numpy(dtype=np_dtype, na_value=np_dtype.type(0)), where)
        return {**spec, "kind": "masked", "missing": _missing(plan, axis, vector, missing, where)}
    if isinstance(dtype, pd.StringDtype):
        missing = np.asarray(series.isna(), dtype=bool)
        values = np.asarray(series.to_numpy(dtype=object, na_value=""), dtype=object)
        plan.vector(axis, vector, values, where)
        return {
            **spec,
            "kind": "string",
            "storage": dtype.storage,
            "na_nan": isinstance(dtype.na_value, float),
            "missing": _missing(plan, axis, vector, missing, where),
        }
    if isinstance(dtype, pd.DatetimeTZDtype):
        plan.vector(axis, vector, np.asarray(array.asi8), where)
        return {**spec, "kind": "datetime_tz", "unit": dtype.unit, "tz": str(dtype.tz)}
    if isinstance(dtype, np.dtype) and dtype.kind in "mM":
        plan.vector(axis, vector, series.to_numpy().view(np.int64), where)
        return {**spec, "kind": "datetime"}
    if isinstance(dtype, np.dtype) and dtype.kind in "biufc":
        daf_dtype(dtype, where)
        plan.vector(axis, vector, series.to_numpy(), where)
        return {**spec, "kind": "plain"}
    if isinstance(dtype, np.dtype) and dtype.kind in "OU":
        values = series.to_numpy()
        missing = np.asarray(pd.isna(values), dtype=bool)
        strings, marker = _strings(values, missing, where)
        plan.vector(axis, vector, strings, where)
        return {
            **spec,
            "kind": "object",
            "na": marker,
            "missing": _missing(plan, axis, vector, missing, where),
        }
    raise AnnDataConversionError(f"{where}: dtype {dtype} has no Daf mapping")


def encode_frame(plan: ConversionPlan, axis: str, frame: Any, prefix: str, where: str) -> Spec:
    """Plan the columns of ``frame`` as vectors ``prefix + column`` on ``axis``."""
    columns = []
    if frame.columns.has_duplicates:
        raise AnnDataConversionError(f"{where}: repeated column names")
    for col in frame.columns:
        at = f"{where} column {col!r}"
        if not isinstance(col, str):
            raise AnnDataConversionError(
                f"{at}: a column name must be a str, got {type(col).__name__}"
            )
        vector = prefix + col
        spec = encode_column(plan, axis, vector, frame[col], at)
        columns.append({"column": col, "vector": vector, **spec})
    return {
        "axis": axis,
        "index_name": frame.index.name,
        "columns": columns,
        "columns_dtype": str(frame.columns.dtype),
    }


def decode_column(daf: Any, axis: str, spec: Spec) -> Any:
    """The column ``encode_column`` planned (``spec`` with its ``vector``)."""
    import pandas as pd

    kind, vector = spec["kind"], spec["vector"]
    values: Any = daf.get_np_vector(axis, vector)
    missing = (
        np.asarray(daf.get_np_vector(axis, spec["missing"]), dtype=bool)
        if spec.get("missing")
        else None
    )
    if kind == "plain":
        return values
    if kind == "datetime":
        return np.asarray(values).view(np.dtype(spec["dtype"]))
    if kind == "datetime_tz":
        index = pd.DatetimeIndex(np.asarray(values).view(f"M8[{spec['unit']}]"))
        return index.tz_localize("UTC").tz_convert(spec["tz"]).array
    if kind == "masked":
        cls = pd.api.types.pandas_dtype(spec["dtype"]).construct_array_type()
        mask = np.zeros(len(values), dtype=bool) if missing is None else missing.copy()
        return cls(np.array(values), mask)
    strings = np.array(values, dtype=object)  # a writable copy
    if kind == "object":
        if missing is not None:
            strings[missing] = _markers()[spec["na"]]
        return strings
    if kind == "string":
        if missing is not None:
            strings[missing] = None
        na = {"na_value": np.nan} if spec["na_nan"] else {}
        return pd.array(strings, dtype=pd.StringDtype(spec["storage"], **na))
    if kind == "categorical":
        cat_axis = spec["categories"]
        labels = np.asarray(daf.axis_np_entries(cat_axis), dtype=object)
        if spec.get("categories_value"):
            cats = pd.Index(np.asarray(daf.get_np_vector(cat_axis, spec["categories_value"])))
        else:
            cats = pd.Index(labels, dtype=spec["categories_dtype"])
        codes = pd.Index(labels).get_indexer(strings)
        if missing is not None:
            codes[missing] = -1
        if bool((codes[~missing] if missing is not None else codes).min(initial=0) < 0):
            raise AnnDataConversionError(
                f"vector {vector!r} of axis {axis!r} holds a value "
                f"that is not one of the categories {cat_axis!r}"
            )
        return pd.Categorical.from_codes(codes, categories=cats, ordered=spec["ordered"])
    raise AnnDataConversionError(f"vector {vector!r} of axis {axis!r}: unknown kind {kind!r}")


def decode_frame(daf: Any, spec: Spec, index: Any) -> Any:
    """The DataFrame ``encode_frame`` planned, indexed by ``index``."""
    import pandas as pd

    axis = spec["axis"]
    data = {c["column"]: decode_column(daf, axis, c) for c in spec["columns"]}
    frame = pd.DataFrame(
        data,
        index=pd.Index(index, name=spec["index_name"]),
        columns=pd.Index(
            [c["column"] for c in spec["columns"]], dtype=spec.get("columns_dtype", "object")
        ),
    )
    return frame
