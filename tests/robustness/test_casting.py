"""No silent casts: every writer refuses values the stored element type cannot hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import ArrayFile, FileConfig
from dafzarr.errors import (
    DafFormatError,
    DafzarrError,
    InvalidArgumentTypeError,
    UnsafeCastError,
)
from tests.helpers.common import check_zip_tools_accept

# (stored dtype, data, what the message says)
REFUSED: list[tuple[str, Any, str]] = [
    ("i4", np.array([1, 2**40], np.int64), r"value 1099511627776 at index 1 is outside"),
    ("i4", [5, 2**40], r"value 1099511627776 at index 1 is outside"),
    ("u2", np.array([3, -1], np.int64), r"value -1 at index 1 is outside 0\.\.65535"),
    ("i8", np.array([2**63], np.uint64), r"value 9223372036854775808 at index 0 is outside"),
    ("i4", np.array([1.0, 2.0]), "floating-point values never become integers"),
    ("i8", np.array([np.nan]), "floating-point values never become integers"),
    ("u1", np.array([0.5], np.float32), "floating-point values never become integers"),
    ("f4", np.array([1.0, 1e300]), r"value 1e\+300 at index 1 overflows to infinity"),
    (
        "datetime64[ns]",
        np.array(["2020-01-01", "2500-01-01"], "M8[s]"),
        "value 2500-01-01T00:00:00 at index 1 does not fit",
    ),
    ("f8", np.array([1 + 2j]), "the kinds differ"),
]

# (stored dtype, data, the values read back)
ACCEPTED: list[tuple[str, Any, list[Any]]] = [
    ("i4", np.array([1, -7, 2**31 - 1], np.int64), [1, -7, 2**31 - 1]),  # values fit
    ("u1", [0, 255], [0, 255]),
    ("i8", np.array([2**63 - 1], np.uint64), [2**63 - 1]),
    ("f4", np.array([0.1, np.nan, -np.inf]), [np.float32(0.1), np.nan, -np.inf]),  # rounded
    ("f4", np.array([2**24 + 1], np.int64), [2.0**24]),  # rounded, as numpy's safe i8 -> f8
    ("f8", np.array([True, False]), [1.0, 0.0]),
]


def _same(got: np.ndarray[Any, Any], want: list[Any]) -> bool:
    return bool(
        np.array_equal(got, np.array(want, dtype=got.dtype), equal_nan=got.dtype.kind == "f")
    )


# --- ArrayFile ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "data", "why"), REFUSED)
def test_arrayfile_refuses_values_the_array_cannot_hold(
    tmp_path: Path, dtype: str, data: Any, why: str
) -> None:
    path = tmp_path / "c.af"
    with ArrayFile.create(path, config=FileConfig(codec=None)) as f:
        n = len(data)
        f.define_array("a", dtype, ["x"], [n + 2], chunk_shape=[2], fill_value=None)
        f.write_array("a", [0], np.zeros(n + 2, np.dtype(dtype)))
        f.flush()
        before = f.read_array("a")
        src = np.asarray(data).dtype
        with pytest.raises(UnsafeCastError, match=why) as info:
            f.write_array("a", [1], data)  # partly covered chunks: read, patched, rewritten
        message = str(info.value)
        assert str(path) in message and "array 'a'" in message
        assert f"{src} data cannot be stored as {np.dtype(dtype)}" in message
        assert isinstance(info.value, DafzarrError | TypeError | ValueError)
        assert np.array_equal(f.read_array("a"), before)  # no chunk was stored
    with ArrayFile.open(path) as f:
        assert np.array_equal(f.read_array("a"), before)
        assert f.num_layers == 2


@pytest.mark.parametrize(("dtype", "data", "want"), ACCEPTED)
def test_arrayfile_stores_values_that_fit_exactly(
    tmp_path: Path, dtype: str, data: Any, want: list[Any]
) -> None:
    path = tmp_path / "c.af"
    with ArrayFile.create(path) as f:
        f.define_array("a", dtype, ["x"], [len(want)], chunk_shape=[2])
        f.write_array("a", [0], data)
    with ArrayFile.open(path) as f:
        assert _same(f.read_array("a"), want)


def test_arrayfile_timestamps_from_other_units_and_integers(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "t.af") as f:
        f.define_array("t", "datetime64[ns]", ["x"], [3])
        f.write_array("t", [0], np.array(["2020-01-01", "NaT", "1970-01-01"], "M8[s]"))
        assert f.read_array("t").view("i8").tolist()[::2] == [1577836800 * 10**9, 0]
        assert np.isnat(f.read_array("t")[1])
        f.write_array("t", [0], np.array([5, 6, 7], np.uint8))
        assert f.read_array("t").view("i8").tolist() == [5, 6, 7]
        with pytest.raises(UnsafeCastError, match="outside"):
            f.write_array("t", [0], np.array([2**64 - 1], np.uint64))


# --- ZarrDaf -----------------------------------------------------------------------------


@pytest.fixture(params=[None, "x.daf.zarr", "x.daf.zarr.zip"])
def daf(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    rel = request.param
    d = dafzarr.memory_daf() if rel is None else dafzarr.open_daf(f"{tmp_path}/{rel}", "w")
    d.add_axis("cell", ["a", "b", "c"]).add_axis("gene", ["g", "h"])
    yield d
    d.close()
    if rel is not None and rel.endswith(".zip"):
        check_zip_tools_accept(f"{tmp_path}/{rel}")


@pytest.mark.parametrize(("dtype", "data", "why"), [r for r in REFUSED if r[0][0] != "d"])
def test_empty_dense_vector_refuses_values_it_cannot_hold(
    daf: Any, dtype: str, data: Any, why: str
) -> None:
    values = np.resize(np.asarray(data), 3)
    with (
        pytest.raises(UnsafeCastError, match=why) as info,
        daf.empty_dense_vector("cell", "v", dtype) as v,
    ):
        v[:] = values
    assert "vectors/cell/v" in str(info.value)
    assert daf.vectors_set("cell") == set()  # nothing published


@pytest.mark.parametrize(("dtype", "data", "want"), ACCEPTED)
def test_empty_dense_vector_stores_values_that_fit(
    daf: Any, dtype: str, data: Any, want: list[Any]
) -> None:
    daf.add_axis("k", [str(i) for i in range(len(want))])
    with daf.empty_dense_vector("k", "v", dtype) as v:
        v[:] = data
    assert _same(daf.get_np_vector("k", "v"), want)


def test_every_way_of_filling_in_place_is_checked(daf: Any) -> None:
    big = np.array([2**40, 1, 2], np.int64)
    attempts = [
        lambda v: v.__setitem__(0, 2**40),
        lambda v: v.__setitem__(slice(None), big),
        lambda v: v.__setitem__(0, 1.0),
        lambda v: v[1:].__setitem__(0, np.int64(2**40)),  # a view of the view
        lambda v: np.copyto(v, big),
        lambda v: np.add(v, big, out=v),
        lambda v: v.__iadd__(big),
        lambda v: np.multiply(v, 0.5, out=v),
        lambda v: np.add.at(v, [0], np.int64(2**40)),
        lambda v: v.fill(1.5),
        lambda v: v.fill(np.int64(2**40)),
        lambda v: v.put([0], np.array([2**40])),
        lambda v: np.put(v, [1], [2.5]),
    ]
    for attempt in attempts:
        with (
            pytest.raises(UnsafeCastError, match="vectors/cell/v"),
            daf.empty_dense_vector("cell", "v", "int32") as v,
        ):
            attempt(v)
        assert daf.vectors_set("cell") == set()
    with daf.empty_dense_vector("cell", "v", "int32") as v:
        v[:] = [1, 2, 3]
        v += 1  # stays int32: computed in place
        np.copyto(v, v * np.int64(2))  # int64 values that fit
        np.add(v, np.int64(1), out=v)
        v.fill(np.int64(4))
        v.put([1, 2], np.array([5, 6], np.int64))
        assert v.tolist() == [4, 5, 6]
        np.copyto(v, np.array([9.9, 9.9, 9.9]), casting="unsafe")  # an explicit request
    assert daf.get_np_vector("cell", "v").tolist() == [9, 9, 9]


_MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])


def test_masked_arrays_are_refused_by_every_daf_writer(daf: Any) -> None:
    """A masked array that masks values is refused naming the property, never stored with
    the values under its mask as data; one that masks nothing is stored as its data."""
    masked_matrix = np.ma.masked_array(np.ones((3, 2)), mask=[[0, 1], [0, 0], [0, 0]])
    writes = [
        (lambda: daf.set_vector("cell", "v", _MASKED), "vector 'v' of the axis cell"),
        (
            lambda: daf.set_vector(
                "cell", "v", np.ma.masked_array(["a", "b", "c"], mask=[1, 0, 0])
            ),
            "vector 'v'",
        ),
        (lambda: daf.set_vector("cell", "v", np.ma.masked), "vector 'v'"),
        (
            lambda: daf.set_matrix("cell", "gene", "m", masked_matrix),
            "matrix 'm' of the axes cell x gene",
        ),
        (lambda: daf.set_matrix("cell", "gene", "m", masked_matrix, relayout=False), "matrix 'm'"),
        (lambda: daf.set_scalar("s", np.ma.masked), "scalar 's'"),
        (
            lambda: daf.add_axis("ax", np.ma.masked_array(["a", "b"], mask=[0, 1])),
            "entries of the axis ax",
        ),
    ]
    for write, where in writes:
        with pytest.raises(DafzarrError, match=where) as info:
            write()
        assert isinstance(info.value, TypeError)
    fills = [
        lambda v: v.__setitem__(slice(None), _MASKED),
        lambda v: v.__setitem__(0, np.ma.masked),
        lambda v: v.fill(np.ma.masked),
        lambda v: v.put([0, 1, 2], _MASKED),
        lambda v: np.copyto(v, _MASKED),
    ]
    for fill in fills:
        with (
            pytest.raises(InvalidArgumentTypeError, match="vectors/cell/f: a masked array"),
            daf.empty_dense_vector("cell", "f", "float64") as v,
        ):
            fill(v)
    assert daf.vectors_set("cell") == set() and daf.matrices_set("cell", "gene") == set()
    assert daf.scalars_set() == set() and daf.axes_set() == {"cell", "gene"}
    daf.set_vector("cell", "v", np.ma.masked_array([1.0, 2.0, 3.0]))
    with daf.empty_dense_vector("cell", "f", "float64") as v:
        v[:] = np.ma.masked_array([4.0, 5.0, 6.0], mask=False)
    assert daf.get_np_vector("cell", "v").tolist() == [1.0, 2.0, 3.0]
    assert daf.get_np_vector("cell", "f").tolist() == [4.0, 5.0, 6.0]


def test_empty_sparse_and_matrix_fills_are_checked(daf: Any) -> None:
    with (
        pytest.raises(UnsafeCastError, match="vectors/cell/s/nzval"),
        daf.empty_sparse_vector("cell", "s", "uint8", 2) as (nzind, nzval),
    ):
        nzind[:] = [1, 3]
        nzval[:] = [1, 300]
    with (
        pytest.raises(UnsafeCastError, match="vectors/cell/s/nzind"),
        daf.empty_sparse_vector("cell", "s", "uint8", 2, "uint32") as (nzind, nzval),
    ):
        nzind[:] = [-1, 2]
    with (
        pytest.raises(UnsafeCastError, match="matrices/cell/gene/m"),
        daf.empty_dense_matrix("cell", "gene", "m", "float32") as m,
    ):
        m[:, 1] = 1e300
    with (
        pytest.raises(UnsafeCastError, match="matrices/cell/gene/sm/nzval"),
        daf.empty_sparse_matrix("cell", "gene", "sm", "int8", 1) as (_c, rowval, nzval),
    ):
        rowval[:] = [1]
        nzval[:] = [np.nan]
    assert daf.vectors_set("cell") == set() and daf.matrices_set("cell", "gene") == set()


@pytest.mark.parametrize("indtype", [None, "uint32", "int16"])
@pytest.mark.parametrize("fmt", ["csc", "csr", "coo"])
def test_sparse_values_with_indices_out_of_range_are_refused(
    daf: Any, indtype: Any, fmt: str
) -> None:
    # scipy's C conversions write out of bounds on such input: refused before any of them
    for bad_index, why in ((-1, ">= 0|in 0..2"), (3, "< 3|in 0..2")):
        csc = sp.csc_matrix(
            (np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(3, 2)
        )
        bad = csc.asformat(fmt)
        (bad.row if fmt == "coo" else bad.indices if fmt == "csc" else bad.indptr)[1] = (
            bad_index if fmt != "csr" else 5
        )
        with pytest.raises(DafFormatError, match="matrix 'm' of the axes cell x gene"):
            daf.set_matrix("cell", "gene", "m", bad, indtype=indtype)
        vec = sp.coo_array((np.array([1.0]), (np.array([0]),)), shape=(3,)).asformat(
            "coo" if fmt == "csc" else fmt
        )
        (vec.coords[0] if vec.format == "coo" else vec.indices)[0] = bad_index
        with pytest.raises(DafFormatError, match=rf"(?s)({why}).*vector 'v' of the axis cell"):
            daf.set_vector("cell", "v", vec, indtype=indtype)
    assert daf.matrices_set("cell", "gene") == set() and daf.vectors_set("cell") == set()


@pytest.mark.parametrize("indtype", ["uint8", "int8", "float32"])
def test_index_types_that_cannot_hold_the_indices_are_refused(indtype: str) -> None:
    d = dafzarr.memory_daf()
    d.add_axis("cell", [f"c{i}" for i in range(300)])
    value = sp.coo_array((np.array([1.0]), (np.array([299]),)), shape=(300,))
    with pytest.raises(UnsafeCastError, match=rf"vectors/cell/v.*{indtype}"):
        d.set_vector("cell", "v", value, indtype=indtype)
    with pytest.raises(UnsafeCastError, match=rf"'m'.*{indtype}"):
        d.set_matrix("cell", "cell", "m", sp.csc_matrix((300, 300)), indtype=indtype)
    with (
        pytest.raises(UnsafeCastError, match=rf"s.*{indtype}"),
        d.empty_sparse_vector("cell", "s", "float32", 1, indtype),
    ):
        pass
    assert d.vectors_set("cell") == set() and d.matrices_set("cell", "cell") == set()


def test_arrayfile_text_arrays_take_only_their_own_values(tmp_path: Path) -> None:
    with ArrayFile.create(tmp_path / "s.af") as f:
        f.define_array("s", str, ["x"], [2])
        f.define_array("b", bytes, ["x"], [2])
        for name, bad in (("s", [b"a", "b"]), ("s", np.array([1, 2])), ("b", ["a", "b"])):
            with pytest.raises(UnsafeCastError, match=rf"s\.af: array '{name}': "):
                f.write_array(name, [0], bad)
        f.write_array("s", [0], ["a", "é"])
        assert f.read_array("s").tolist() == ["a", "é"]
