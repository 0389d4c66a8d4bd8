"""ZarrDaf data sets as xarray Datasets: ``ZarrDaf.to_xarray()`` and ``engine="daf"``.

Every Dataset is compared with what the Daf readers return (values, element types, dims,
coordinates, attributes) on every backend and both Zarr layouts, with the real xarray, the
real pydata ``sparse`` and real files.
"""

from __future__ import annotations

import functools
import http.server
import pickle
import subprocess
import sys
import threading
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import xarray as xr

import dafzarr
from dafzarr.errors import (
    DafFormatError,
    DafNotFoundError,
    InvalidArgumentTypeError,
    UnsupportedVariableWarning,
)
from tests.helpers import ROOT

from .daf_helpers import BACKENDS, Backend
from .test_daf_http import _Quiet

sparse = pytest.importorskip("sparse")

FILE_BACKENDS = [b for b in BACKENDS if b[1] is not None]


@pytest.fixture(scope="module")
def daf_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The engine name ``"daf"``, registered as pip registers it.

    An installed dafzarr has the entry point already. A source checkout imported from its
    directory has not: its ``xarray.backends`` entry points (read from pyproject.toml) are
    written into a ``.dist-info`` on ``sys.path`` for the module, which xarray finds through
    ``importlib.metadata`` like an installed one.
    """
    engines = xr.backends.list_engines
    if "daf" in engines():
        yield "daf"
        return
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = table["project"]["entry-points"]["xarray.backends"]
    site = tmp_path_factory.mktemp("site")
    info = site / "dafzarr_xarray_engine-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: dafzarr-xarray-engine\nVersion: 0.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[xarray.backends]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    )
    sys.path.insert(0, str(site))
    engines.cache_clear()
    try:
        assert "daf" in engines()
        yield "daf"
    finally:
        sys.path.remove(str(site))
        engines.cache_clear()


@pytest.fixture(params=BACKENDS, ids=[b[0] for b in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    _id, rel, fmt = request.param
    return Backend(tmp_path, rel, fmt)


@pytest.fixture(params=FILE_BACKENDS, ids=[b[0] for b in FILE_BACKENDS])
def file_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    _id, rel, fmt = request.param
    return Backend(tmp_path, rel, fmt)


def fill(w: dafzarr.ZarrDaf) -> dafzarr.ZarrDaf:
    """Every kind of property: element types, strings, sparse, relayout, square matrices."""
    rng = np.random.default_rng(7)
    w.add_axis("cell", [f"c{i}" for i in range(5)]).add_axis("gene", ["g1", "g2", "g3"])
    w.add_axis("batch", ["b1", "b2"])
    w.set_scalar("title", "hé").set_scalar("n", np.int32(7)).set_scalar("ok", True)
    w.set_scalar("pi", np.float32(3.25)).set_scalar("big", np.uint64(2**63 + 5))
    w.set_vector("cell", "score", rng.normal(size=5))
    w.set_vector("cell", "flag", np.array([True, False, True, True, False]))
    w.set_vector("cell", "label", np.array(["a", "bé", "", "日本", "x"], dtype=object))
    w.set_vector("cell", "small", np.array([-1, 2, -3, 4, -5], np.int8))
    w.set_vector("gene", "score", np.array([1, 2, 3], np.uint64))  # same name, other axis
    w.set_vector("gene", "sparse", sp.csr_matrix(np.array([[0, 3, 0]], np.int16)))
    w.set_vector("gene", "marker", sp.csr_matrix(np.array([[True, False, True]])))
    w.set_matrix("cell", "gene", "expr", rng.normal(size=(5, 3)).astype(np.float32))
    w.set_matrix("cell", "gene", "counts", rng.integers(0, 9, (5, 3)), relayout=False)
    w.set_matrix(
        "cell",
        "gene",
        "UMIs",
        sp.random(5, 3, density=0.4, format="csc", random_state=1, dtype=np.float64),
    )
    w.set_matrix(
        "gene", "batch", "mask", sp.csc_matrix(np.array([[1, 0], [0, 1], [1, 1]], dtype=bool))
    )
    w.set_matrix("cell", "cell", "knn", rng.random((5, 5)) < 0.5)
    w.set_matrix("batch", "batch", "dist", sp.csc_matrix(np.array([[0, 2], [2, 0]], np.int32)))
    w.set_matrix(
        "gene",
        "batch",
        "names",
        np.array([["a", "b"], ["c", ""], ["é", "f"]], dtype=object),
        relayout=False,
    )
    return w


def expected_names(r: dafzarr.ZarrDaf) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Variable name -> (Daf axes, dims), by the documented naming scheme."""
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for axis in r.axes_set():
        for v in r.vectors_set(axis):
            out[f"{axis}.{v}"] = ((axis,), (axis,))
        for cols in r.axes_set():
            for m in r.matrices_set(axis, cols, relayout=False):
                dims = (axis, f"{cols}_columns" if cols == axis else cols)
                out[f"{axis}.{cols}.{m}"] = ((axis, cols), dims)
    return out


def check_against_reader(ds: xr.Dataset, r: dafzarr.ZarrDaf, *, skip_sparse: bool = False) -> None:
    """``ds`` holds exactly the properties of ``r``, equal in values, types and dims."""
    names = expected_names(r)
    for axis in r.axes_set():
        assert ds[axis].dims == (axis,)
        assert ds[axis].values.tolist() == r.axis_np_entries(axis).tolist()
        assert axis in ds.indexes
    assert ds.attrs.keys() == r.scalars_set()
    for s in r.scalars_set():
        want = r.get_scalar(s)
        assert ds.attrs[s] == want and type(ds.attrs[s]) is type(want), s
    seen = set()
    for name, (axes, dims) in names.items():
        if len(axes) == 1:
            want = r.get_np_vector(axes[0], name.split(".", 1)[1])
        else:
            want = r.get_np_matrix(*axes, name.split(".", 2)[2], relayout=False)
        if sp.issparse(want) and skip_sparse:
            continue
        seen.add(name)
        var = ds[name]
        assert var.dims == dims, name
        for dim, axis in zip(dims, axes, strict=True):
            assert ds[dim].values.tolist() == r.axis_np_entries(axis).tolist()
        assert var.dtype == want.dtype, (name, var.dtype, want.dtype)
        if sp.issparse(want):
            assert isinstance(var.data, sparse.GCXS), name
            assert np.array_equal(var.data.todense(), want.toarray()), name
        else:
            assert var.values.tolist() == want.tolist(), name
    assert set(ds.data_vars) == seen


# --- to_xarray() --------------------------------------------------------------------------------


def test_to_xarray_matches_the_readers(backend: Backend) -> None:
    r = backend.reader(fill(backend.writer()))
    ds = r.to_xarray()
    check_against_reader(ds, r)
    assert ds.sizes == {"cell": 5, "gene": 3, "batch": 2, "cell_columns": 5, "batch_columns": 2}
    assert ds["cell.cell.knn"].dims == ("cell", "cell_columns")
    assert ds["cell_columns"].values.tolist() == ds["cell"].values.tolist()
    assert ds["cell.score"].attrs == {"daf_axis": "cell", "daf_vector": "score"}
    assert ds["gene.cell.expr"].attrs == {
        "daf_rows_axis": "gene",
        "daf_columns_axis": "cell",
        "daf_matrix": "expr",
    }
    assert "gene.cell.counts" not in ds  # stored in one layout only
    # the relayout is the same matrix, labelled the other way round
    xr.testing.assert_equal(
        ds["cell.gene.expr"].drop_attrs(),
        ds["gene.cell.expr"].transpose("cell", "gene").drop_attrs(),
    )


@pytest.mark.parametrize("lazy", [False, True], ids=["to_xarray", "engine"])
def test_orientation_of_the_julia_fixture(fixtures_dir: Path, daf_engine: str, lazy: bool) -> None:
    """The Julia-written 3 x 2 matrix reads as 3 cells x 2 genes, not as its Zarr shape."""
    path = fixtures_dir / "julia-daf" / "daf030-flat.daf.zarr"
    r = dafzarr.open_daf(path)
    ds = xr.open_dataset(path, engine=daf_engine) if lazy else r.to_xarray()
    check_against_reader(ds, r)
    expr = ds["cell.gene.expr"]
    assert expr.dims == ("cell", "gene") and expr.dtype == np.float32
    assert expr.sel(cell="c3", gene="g1").item() == 5
    assert expr.values.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert ds["cell.gene.sp"].data.todense().tolist() == [[0, 2], [0, 0], [5, 0]]
    assert ds.attrs == {"title": "hello", "n": 7}


@pytest.mark.parametrize("lazy", [False, True], ids=["to_xarray", "engine"])
def test_julia_packed_arrays(fixtures_dir: Path, daf_engine: str, lazy: bool) -> None:
    path = fixtures_dir / "julia-daf" / "zpk" / "bz.daf.zarr"
    r = dafzarr.open_daf(path)
    ds = xr.open_dataset(path, engine=daf_engine) if lazy else r.to_xarray()
    check_against_reader(ds, r)
    assert ds["cell.gene.dense"].sel(cell="c2", gene="g2").item() == 1202


@pytest.mark.parametrize("rel", ["x.daf.zarr.zip", "x.dafs.zarr.zip#/g"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_xarray_is_zero_copy(tmp_path: Path, rel: str, zarr_format: int) -> None:
    """On a ZIP every read maps the one archive mapping: the Dataset's arrays are the
    reader's memory. (A directory maps each file anew per read, so two reads never share.)"""
    fill(dafzarr.open_daf(tmp_path / rel, "w", zarr_format=zarr_format)).close()
    r = dafzarr.open_daf(tmp_path / rel)
    ds = r.to_xarray()
    for name, want in [
        ("cell.score", r.get_np_vector("cell", "score")),
        ("gene.score", r.get_np_vector("gene", "score")),
        ("cell.gene.expr", r.get_np_matrix("cell", "gene", "expr")),
        ("gene.cell.expr", r.get_np_matrix("gene", "cell", "expr")),
        ("cell.cell.knn", r.get_np_matrix("cell", "cell", "knn")),
    ]:
        got = ds[name].data
        assert isinstance(got, np.ndarray) and np.shares_memory(got, want), name
        assert not got.flags.writeable, name
    assert ds["cell.gene.expr"].data.flags.f_contiguous  # Daf's column-major bytes
    # the GCXS matrix holds the stored values, not a copy of them
    UMIs = r.get_np_matrix("cell", "gene", "UMIs")
    assert np.shares_memory(ds["cell.gene.UMIs"].data.data, UMIs.data)


def test_empty_axis_and_empty_sparse_matrix(tmp_path: Path, daf_engine: str) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    w = dafzarr.open_daf(path, "w")
    w.add_axis("cell", []).add_axis("gene", ["g1", "g2"])
    w.set_vector("cell", "score", np.zeros(0, np.float32))
    w.set_matrix("cell", "gene", "UMIs", sp.csc_matrix((0, 2), dtype=np.int32))
    w.set_matrix("gene", "gene", "none", sp.csc_matrix((2, 2), dtype=np.float64))
    w.close()
    r = dafzarr.open_daf(path)
    for ds in (r.to_xarray(), xr.open_dataset(path, engine=daf_engine)):
        check_against_reader(ds, r)
        assert ds.sizes["cell"] == 0 and ds["cell.gene.UMIs"].shape == (0, 2)


def test_to_xarray_drop_variables(tmp_path: Path) -> None:
    r = fill(dafzarr.memory_daf())
    ds = r.to_xarray(drop_variables=["cell.score", "gene.cell.expr", "batch"])
    assert "cell.score" not in ds and "gene.cell.expr" not in ds and "batch" not in ds.coords
    assert "gene.score" in ds and "cell.gene.expr" in ds
    assert ds.sizes["batch"] == 2  # the dimension stays; its coordinate is dropped


# --- The sparse matrices without the sparse package -------------------------------------------


@pytest.fixture
def without_sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import sparse`` fails, as where the optional package is not installed."""
    monkeypatch.setitem(sys.modules, "sparse", None)


def check_left_out(ds: xr.Dataset, r: dafzarr.ZarrDaf, caught: list[Any]) -> None:
    assert len(caught) == 1 and caught[0].category is UnsupportedVariableWarning
    text = str(caught[0].message)
    assert r.path in text and "'sparse' package is not installed" in text
    for name in (
        "cell.gene.UMIs",
        "gene.cell.UMIs",
        "gene.batch.mask",
        "batch.gene.mask",
        "batch.batch.dist",
    ):
        assert name in text and name not in ds.data_vars, name
    assert "matrix UMIs of the axes cell x gene" in text
    check_against_reader(ds, r, skip_sparse=True)
    assert ds["gene.sparse"].values.tolist() == [0, 3, 0]  # sparse vectors are dense


def test_to_xarray_without_sparse_warns_and_leaves_them_out(without_sparse: None) -> None:
    r = fill(dafzarr.memory_daf())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = r.to_xarray()
    check_left_out(ds, r, caught)
    assert caught[0].filename == __file__  # points at the caller


def test_engine_without_sparse_warns_and_leaves_them_out(
    tmp_path: Path, daf_engine: str, without_sparse: None
) -> None:
    fill(dafzarr.open_daf(tmp_path / "x.daf.zarr.zip", "w")).close()
    r = dafzarr.open_daf(tmp_path / "x.daf.zarr.zip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(tmp_path / "x.daf.zarr.zip", engine=daf_engine)
    with ds:
        check_left_out(ds, r, caught)
    assert caught[0].filename == __file__


# --- engine="daf" -------------------------------------------------------------------------------


def test_engine_matches_the_readers_and_to_xarray(file_backend: Backend, daf_engine: str) -> None:
    assert file_backend.path is not None
    r = file_backend.reader(fill(file_backend.writer()))
    with xr.open_dataset(file_backend.path, engine=daf_engine) as ds:
        assert not any(v.variable._in_memory for v in ds.data_vars.values())
        check_against_reader(ds, r)
        loaded = ds.load()
        xr.testing.assert_identical(loaded, r.to_xarray())
        # outer indexing along both axes, sparse and dense
        sub = ds.isel(cell=[4, 0, 2], gene=[2, 0])
        full = r.to_xarray()
        want = full.isel(cell=[4, 0, 2], gene=[2, 0])
        assert sub["cell.gene.expr"].values.tolist() == want["cell.gene.expr"].values.tolist()
        assert np.array_equal(
            sub["cell.gene.UMIs"].data.todense(), want["cell.gene.UMIs"].data.todense()
        )
        assert sub["cell.label"].values.tolist() == want["cell.label"].values.tolist()
    with xr.open_dataset(file_backend.path, engine=daf_engine, chunks={}) as chunked:
        gcxs = [n for n, v in full.data_vars.items() if isinstance(v.data, sparse.GCXS)]
        xr.testing.assert_identical(chunked.drop_vars(gcxs).compute(), full.drop_vars(gcxs))


def test_engine_variables_pickle_and_reopen_by_path(tmp_path: Path, daf_engine: str) -> None:
    path = tmp_path / "x.dafs.zarr.zip#/g"
    fill(dafzarr.open_daf(path, "w", zarr_format=3)).close()
    r = dafzarr.open_daf(path)
    with xr.open_dataset(path, engine=daf_engine) as ds:
        copy = pickle.loads(pickle.dumps(ds))
        assert not copy["cell.score"].variable._in_memory
        check_against_reader(copy, r)
        copy.close()  # closes nothing of the original
        check_against_reader(ds, r)
    memory = fill(dafzarr.memory_daf())
    with pytest.raises(
        InvalidArgumentTypeError,
        match=r"can't pickle the lazy variable "
        r"\S+ of an in-memory daf data set: " + memory.name,
    ):
        pickle.dumps(xr.open_dataset(memory, engine=daf_engine))


def test_engine_computes_on_dask_workers(tmp_path: Path, daf_engine: str) -> None:
    """``chunks={}`` on a cluster of worker processes: the tasks carry the variables there."""
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "x.daf.zarr.zip"
    fill(dafzarr.open_daf(path, "w")).close()
    full = dafzarr.open_daf(path).to_xarray()
    gcxs = [n for n, v in full.data_vars.items() if isinstance(v.data, sparse.GCXS)]
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        xr.open_dataset(path, engine=daf_engine, chunks={"cell": 2}) as ds,
    ):
        got = ds.drop_vars(gcxs).compute()
    xr.testing.assert_identical(got, full.drop_vars(gcxs))


def test_engine_opens_an_open_daf(daf_engine: str) -> None:
    r = fill(dafzarr.memory_daf())
    ds = xr.open_dataset(r, engine=daf_engine)
    check_against_reader(ds, r)
    ds.close()
    assert r.get_np_vector("cell", "score").size == 5  # the caller's handle stays open


def test_engine_drop_variables(tmp_path: Path, daf_engine: str) -> None:
    path = tmp_path / "x.dafs.zarr.zip#/one"
    fill(dafzarr.open_daf(path, "w")).close()
    drop = ["cell.score", "cell.gene.UMIs", "gene", "cell_columns"]
    with xr.open_dataset(path, engine=daf_engine, drop_variables=drop) as ds:
        assert not set(drop) & set(ds.variables)
        assert {"gene.score", "gene.cell.UMIs", "cell.cell.knn", "cell"} <= set(ds.variables)
        assert ds["cell.cell.knn"].dims == ("cell", "cell_columns")
    with xr.open_dataset(path, engine=daf_engine, drop_variables="gene.score") as ds:
        assert "gene.score" not in ds and "cell.score" in ds


def test_engine_reads_nothing_before_values_are_asked_for(tmp_path: Path, daf_engine: str) -> None:
    """Values changed (or broken) after the open are the ones read: nothing was read at open."""
    path = tmp_path / "x.daf.zarr"
    fill(dafzarr.open_daf(path, "w")).close()
    ds = xr.open_dataset(path, engine=daf_engine)
    w = dafzarr.open_daf(path, "r+")
    w.set_vector("cell", "score", np.arange(5.0), overwrite=True)
    w.set_vector("cell", "label", np.array(list("vwxyz"), dtype=object), overwrite=True)
    w.set_matrix("cell", "gene", "UMIs", sp.csc_matrix(np.eye(5, 3)), overwrite=True)
    w.close()
    (path / "vectors/gene/score/0").write_bytes(b"\0" * 5)  # 5 bytes, not 3 x uint64
    with ds:
        assert ds["cell.score"].values.tolist() == [0, 1, 2, 3, 4]
        assert ds["cell.label"].values.tolist() == list("vwxyz")
        assert ds["cell.gene.UMIs"].data.todense().tolist() == np.eye(5, 3).tolist()
        with pytest.raises(DafFormatError, match=r"vectors/gene/score.*holds 5 bytes"):
            ds["gene.score"].values  # noqa: B018


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_engine_over_http(tmp_path: Path, daf_engine: str, zarr_format: int) -> None:
    fill(dafzarr.open_daf(tmp_path / "x.daf.zarr", "w", zarr_format=zarr_format)).close()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/x.daf.zarr"
        with xr.open_dataset(url, engine=daf_engine) as ds:
            check_against_reader(ds, dafzarr.open_daf(tmp_path / "x.daf.zarr"))
    finally:
        server.shutdown()
        server.server_close()


def test_guess_can_open_claims_only_daf_paths(tmp_path: Path, daf_engine: str) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    fill(dafzarr.open_daf(path, "w")).close()
    with xr.open_dataset(path) as ds:  # no engine: the daf engine claims it
        assert ds["cell.gene.expr"].dims == ("cell", "gene")
    engine = xr.backends.list_engines()[daf_engine]
    for yes in [
        "a.daf.zarr",
        "a.daf.zarr/",
        "/d/a.daf.zarr.zip",
        "a.dafs.zarr.zip#/g/h",
        tmp_path / "a.daf.zarr",
    ]:
        assert engine.guess_can_open(yes), yes
    for no in [
        "a.zarr",
        "a.zip",
        "a.nc",
        "a.dafs.zarr.zip",
        "a.dafs.zarr.zip#/",
        "http://h/a.nc",
        b"a.daf.zarr",
        3,
    ]:
        assert not engine.guess_can_open(no), no


def test_engine_names_the_path_of_a_non_daf_store(tmp_path: Path, daf_engine: str) -> None:
    plain = tmp_path / "plain.daf.zarr"
    xr.Dataset({"t": ("x", np.arange(3))}).to_zarr(plain, zarr_format=2, consolidated=False)
    with pytest.raises(DafFormatError, match=f"not a daf data set: {plain}$"):
        xr.open_dataset(plain, engine=daf_engine)
    other = tmp_path / "other.zarr"
    with pytest.raises(DafFormatError, match=f"can't parse as ZarrDaf path: {other}"):
        xr.open_dataset(other, engine=daf_engine)
    with pytest.raises(DafNotFoundError, match=str(tmp_path / "missing.daf.zarr.zip")):
        xr.open_dataset(tmp_path / "missing.daf.zarr.zip", engine=daf_engine)


# --- Names --------------------------------------------------------------------------------------


def test_colliding_names_are_refused_unless_dropped(tmp_path: Path, daf_engine: str) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    w = dafzarr.open_daf(path, "w")
    w.add_axis("cell", ["a", "b"]).add_axis("gene", ["g"])
    w.set_vector("cell", "gene.UMIs", np.array([1, 2]))
    w.set_matrix("cell", "gene", "UMIs", np.array([[1.0], [2.0]]), relayout=False)
    w.close()
    r = dafzarr.open_daf(path)
    both = (
        r"two Daf properties map to the xarray name 'cell.gene.UMIs': the vector gene.UMIs "
        r"of the axis cell and the matrix UMIs of the axes cell x gene\nin the daf data: "
    )
    with pytest.raises(DafFormatError, match=both + str(path)):
        r.to_xarray()
    with pytest.raises(DafFormatError, match=both + str(path)):
        xr.open_dataset(path, engine=daf_engine)
    ds = r.to_xarray(drop_variables=["cell.gene.UMIs"])
    assert set(ds.data_vars) == set()
    with xr.open_dataset(path, engine=daf_engine, drop_variables=["cell.gene.UMIs"]) as lazy:
        assert set(lazy.data_vars) == set()


def test_importing_dafzarr_does_not_import_xarray() -> None:
    code = (
        "import sys, dafzarr, dafzarr.daf; dafzarr.memory_daf().add_axis('a', ['x']); "
        "assert 'xarray' not in sys.modules and 'sparse' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
