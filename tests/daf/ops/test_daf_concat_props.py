"""``concatenate`` against plain numpy evaluations written here (hypothesis), and against
``anndata.concat`` where their semantics agree (and where they differ, as documented)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dafzarr
from dafzarr import concatenate
from dafzarr.anndata import daf_to_anndata
from dafzarr.errors import DafMismatchError

NUMERIC = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "float32",
    "float64",
]

# --- the expected element type, evaluated independently ------------------------------------

_SIGNED_BY_SIZE = [
    "int8",
    "int8",
    "int16",
    "int32",
    "int32",
    "int64",
    "int64",
    "int64",
    "int64",
    "int64",
]  # index: bytes needed (1..9), capped at int64


def _expected_pair(a: str, b: str) -> str:
    """The pairwise rule of the specification, spelled out by kind letters."""
    if "str" in (a, b):
        return "str"
    if a == b == "bool":
        return "bool"
    da, db = (np.dtype("uint8" if t == "bool" else t) for t in (a, b))
    kinds = {da.kind, db.kind}
    if "f" in kinds:
        return "float32" if da.itemsize <= 4 and db.itemsize <= 4 else "float64"
    if "i" in kinds:
        need = max(d.itemsize + (d.kind == "u") for d in (da, db))
        return _SIGNED_BY_SIZE[need]
    return da.name if da.itemsize >= db.itemsize else db.name


def _expected_type(empty: Any, types: list[str]) -> str:
    out: str | None = None
    if empty is not None:
        if isinstance(empty, str):
            out = "str"
        elif isinstance(empty, bool):
            out = "bool"
        elif isinstance(empty, np.generic):
            out = empty.dtype.name
        else:
            out = "int64" if isinstance(empty, int) else "float64"
    for t in types:
        out = t if out is None else _expected_pair(out, t)
    assert out is not None
    return out


def _text(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, np.floating | float):
        f = float(str(v)) if isinstance(v, np.float32) else float(v)
        return repr(f)
    if isinstance(v, np.integer | int):
        return str(int(v))
    return str(v)


# --- generated data sets ----------------------------------------------------------------


@st.composite
def _values(draw: Any, dtype: str, n: int) -> np.ndarray[Any, Any]:
    if dtype == "str":
        return np.array(
            draw(st.lists(st.sampled_from(["a", "bb", ""]), min_size=n, max_size=n)), dtype=object
        )
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    ints = st.integers(0, 3) if dtype.startswith("u") else st.integers(-3, 3)
    vals = draw(st.lists(st.one_of(st.just(0), ints), min_size=n, max_size=n))
    return (
        np.array(vals, dtype=dtype) / (2 if dtype.startswith("float") else 1)
        if dtype.startswith("float")
        else np.array(vals, dtype=dtype)
    )


@st.composite
def _case(draw: Any) -> dict[str, Any]:
    n_sources = draw(st.integers(1, 4))
    genes = draw(st.integers(1, 4))
    sources = []
    for k in range(n_sources):
        cells = draw(st.integers(0, 5))
        vec = None
        if draw(st.booleans()):
            dt = draw(st.sampled_from([*NUMERIC, "str"]))
            vec = (draw(_values(dt, cells)), draw(st.booleans()) and dt != "str")
        mat = None
        if draw(st.booleans()):
            dt = draw(st.sampled_from(NUMERIC))
            values = draw(_values(dt, genes * cells)).reshape(genes, cells)
            mat = (values.astype(dt), draw(st.booleans()))
        sources.append({"cells": [f"s{k}c{i}" for i in range(cells)], "vec": vec, "mat": mat})
    empty_value = st.one_of(
        st.none(),
        st.just(0),
        st.just(2),
        st.just(0.0),
        st.just(1.5),
        st.just(np.float32(0)),
        st.just(np.int8(-1)),
        st.just(False),
        st.just("none"),
    )
    return {
        "genes": [f"g{i}" for i in range(genes)],
        "sources": sources,
        "vec_empty": draw(empty_value),
        "mat_empty": draw(empty_value),
        "fraction": draw(st.sampled_from([0.1, 0.25, 0.5, 0.9])),
    }


def _build(case: dict[str, Any]) -> list[dafzarr.ZarrDaf]:
    out = []
    for k, s in enumerate(case["sources"]):
        d = dafzarr.memory_daf(f"p{k}!")
        d.add_axis("cell", s["cells"])
        d.add_axis("gene", case["genes"])
        if s["vec"] is not None:
            values, sparse = s["vec"]
            d.set_vector(
                "cell",
                "v",
                sp.csr_matrix(values.reshape(1, -1)) if sparse and values.size else values,
            )
        if s["mat"] is not None:
            values, sparse = s["mat"]
            d.set_matrix(
                "gene", "cell", "m", sp.csc_matrix(values) if sparse else values, relayout=False
            )
        out.append(d)
    return out


def _expect(case: dict[str, Any], key: str, rows: int | None) -> Any:
    """(values, dtype, sparse), or None when a data set lacks it and no empty is given, or
    "absent" when no data set has it."""
    parts = [s[key] for s in case["sources"]]
    if all(p is None for p in parts):
        return "absent"
    empty = case["vec_empty" if key == "vec" else "mat_empty"]
    if empty is None and any(p is None for p in parts):
        return None
    dtype = _expected_type(
        empty, [str(p[0].dtype) if p[0].dtype != object else "str" for p in parts if p is not None]
    )
    blocks, stored, total = [], 0, 0
    for s, p in zip(case["sources"], parts, strict=True):
        n = len(s["cells"])
        shape = (n,) if rows is None else (rows, n)
        size = int(np.prod(shape))
        total += size
        if p is None:
            blocks.append(np.full(shape, empty, dtype=object))
            stored += 0 if (not isinstance(empty, str) and empty == 0) else size
        else:
            values, sparse = p
            blocks.append(values.astype(object))
            stored += int(np.count_nonzero(values)) if sparse and values.size else size
    joined = np.concatenate(blocks, axis=-1) if blocks else np.zeros(0)
    if dtype == "str":
        return np.vectorize(_text, otypes=[object])(joined) if joined.size else joined, dtype, False
    e = 1 if dtype == "bool" else np.dtype(dtype).itemsize
    saving = total * e - stored * (e + 4)
    if rows is not None:
        saving -= (joined.shape[-1] + 1) * 4
    sparse_result = total > 0 and saving / (total * e) >= case["fraction"]
    return joined.astype(dtype), dtype, sparse_result


@settings(max_examples=100)
@given(_case())
def test_concatenate_matches_numpy(case: dict[str, Any]) -> None:
    sources = _build(case)
    empty: dict[Any, Any] = {}
    if case["vec_empty"] is not None:
        empty[("cell", "v")] = case["vec_empty"]
    if case["mat_empty"] is not None:
        empty[("cell", "gene", "m")] = case["mat_empty"]
    vec = _expect(case, "vec", None)
    mat = _expect(case, "mat", len(case["genes"]))
    dest = dafzarr.memory_daf("hyp!")
    if vec is None or mat is None:
        with pytest.raises(DafMismatchError, match="no empty value for the"):
            concatenate(
                dest,
                "cell",
                sources,
                empty=empty,
                sparse_if_saves_storage_fraction=case["fraction"],
            )
        assert dest.axes_set() == set()
        return
    concatenate(
        dest, "cell", sources, empty=empty, sparse_if_saves_storage_fraction=case["fraction"]
    )
    cells = [c for s in case["sources"] for c in s["cells"]]
    assert list(dest.axis_np_entries("cell")) == cells
    assert list(dest.get_np_vector("cell", "dataset")) == [
        f"p{k}!" for k, s in enumerate(case["sources"]) for _ in s["cells"]
    ]
    if vec == "absent":
        assert not dest.has_vector("cell", "v")
    else:
        values, dtype, sparse = vec
        got = dest.get_np_vector("cell", "v")
        assert (got.dtype == object) if dtype == "str" else got.dtype == np.dtype(dtype)
        assert got.tolist() == values.tolist()
        assert (dest._node_kind("vectors/cell/v") == "group") == sparse
    if mat == "absent":
        assert not dest.has_matrix("gene", "cell", "m")
    else:
        values, dtype, sparse = mat
        got = dest.get_np_matrix("gene", "cell", "m")
        assert sp.issparse(got) == sparse
        dense = got.toarray() if sparse else got
        assert dense.dtype == (object if dtype == "str" else np.dtype(dtype))
        assert dense.tolist() == values.tolist()


# --- against anndata.concat ----------------------------------------------------------------


def _daf_sets(unique: bool = True) -> list[dafzarr.ZarrDaf]:
    rng = np.random.default_rng(5)
    out = []
    for k, n in enumerate((30, 1, 12)):
        d = dafzarr.memory_daf(f"batch{k}!")
        d.add_axis("cell", [f"{'b' + str(k) if unique else ''}c{i}" for i in range(n)])
        d.add_axis("gene", [f"g{i}" for i in range(8)])
        umis = sp.random(n, 8, density=0.3, random_state=k, dtype=np.float32, format="csr")
        d.set_matrix("cell", "gene", "UMIs", umis)
        d.set_vector("cell", "score", rng.random(n))
        d.set_vector(
            "cell", "type", np.array(["T", "B", "NK"], dtype=object)[rng.integers(0, 3, n)]
        )
        if k != 1:
            d.set_vector("cell", "only_some", np.ones(n))
        d.set_vector("gene", "gene_id", [f"id{i}" for i in range(8)])
        out.append(d)
    return out


def _anndata_side(sources: list[dafzarr.ZarrDaf], **kwargs: Any) -> Any:
    import anndata

    adatas = [daf_to_anndata(s, "cell", "gene") for s in sources]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return anndata.concat(adatas, join="inner", **kwargs)


def test_same_result_as_anndata_concat_where_they_agree(tmp_path: Path) -> None:
    sources = _daf_sets()
    names = ["b0", "b1", "b2"]
    want = _anndata_side([sources[0], sources[2]], keys=["b0", "b2"], label="dataset")
    dest = dafzarr.open_daf(tmp_path / "all.daf.zarr.zip", "w", name="all")
    concatenate(
        dest,
        "cell",
        [sources[0], sources[2]],
        names=["b0", "b2"],
        empty={("cell", "only_some"): 0.0},
    )
    got = daf_to_anndata(dest, "cell", "gene")
    assert list(got.obs_names) == list(want.obs_names)
    assert list(got.var_names) == list(want.var_names)
    assert (sp.csr_matrix(got.X) != sp.csr_matrix(want.X)).nnz == 0
    for column in ("score", "type", "dataset"):  # the columns every data set has, the label
        assert got.obs[column].astype(str).tolist() == want.obs[column].astype(str).tolist()
    # three data sets, one of them without a column: the inner join drops it, Daf needs an
    # empty value and keeps it (documented difference)
    want = _anndata_side(sources, keys=names, label="dataset")
    other = dafzarr.memory_daf("other!")
    concatenate(other, "cell", sources, names=names, empty={("cell", "only_some"): 0.0})
    got = daf_to_anndata(other, "cell", "gene")
    assert (
        "only_some" not in want.obs
        and list(got.obs["only_some"]) == [1.0] * 30 + [0.0] + [1.0] * 12
    )
    assert (sp.csr_matrix(got.X) != sp.csr_matrix(want.X)).nnz == 0
    assert got.obs["dataset"].astype(str).tolist() == want.obs["dataset"].astype(str).tolist()


def test_prefixes_where_anndata_writes_suffixes() -> None:
    sources = _daf_sets(unique=False)
    names = ["b0", "b1", "b2"]
    want = _anndata_side(sources, keys=names, index_unique="-")
    dest = dafzarr.memory_daf("prefixed!")
    concatenate(dest, "cell", sources, names=names, prefix=True, empty={("cell", "only_some"): 0.0})
    got = daf_to_anndata(dest, "cell", "gene")
    assert [n.split(".", 1)[1] + "-" + n.split(".", 1)[0] for n in got.obs_names] == list(
        want.obs_names
    )
    assert (sp.csr_matrix(got.X) != sp.csr_matrix(want.X)).nnz == 0
