"""The writers users already hold write into MmapZipStore: xarray, zarr, anndata, dask.

Each scenario runs the real library against an MmapZipStore and, where the result is
deterministic, the same operations against zarr's LocalStore on a directory: the archive
read by Python's ``zipfile`` must hold exactly the directory's files, byte for byte. After
each scenario the archive is valid for zipfile, ``unzip -t`` and 7-Zip (no duplicate names,
8-aligned data), and uncompressed chunks are served zero-copy from the mapping.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anndata
import dask
import numcodecs
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import xarray as xr
import zarr
import zarr.codecs
from zarr.core.sync import sync

import dafzarr._core.zipstore.commit
from dafzarr import MmapZipStore
from tests.helpers import ROOT
from tests.helpers.common import check_archive

pytestmark = [
    # zarr warns on every consolidated write in format 3 (xarray, anndata and zarr's own
    # consolidate_metadata all do it); the warning is about the format, not the store.
    pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part"),
    # Fixed-length strings (xarray's coordinate of names) have no Zarr 3 specification yet.
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
]


# --- Helpers --------------------------------------------------------------------------------


def archive_contents(path: Path) -> dict[str, bytes]:
    """Every entry of the archive, read by Python's zipfile (an independent reader)."""
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def directory_contents(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its key (LocalStore's layout)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def check_same_as_oracle(path: Path, root: Path) -> None:
    """The archive holds exactly the keys and bytes zarr's LocalStore wrote."""
    got, want = archive_contents(path), directory_contents(root)
    assert sorted(got) == sorted(want)
    differ = [k for k in want if got[k] != want[k]]
    assert not differ, differ


def chunk_key(store: zarr.abc.store.Store, array_path: str, coords: tuple[int, ...]) -> str:
    """The store key of one chunk of an array (format 2 or 3)."""
    arr = zarr.open_array(store=store, path=array_path, mode="r")
    return f"{array_path}/{arr.metadata.encode_chunk_key(coords)}"


def check_zero_copy(
    store: MmapZipStore, key: str, dtype: str, shape: tuple[int, ...], expected: np.ndarray
) -> None:
    """An uncompressed chunk is a view of the mapping, through both of the store's APIs."""
    view = store.try_mmap_entry_as(key, dtype, shape)
    assert view is not None, key
    assert not view.flags.owndata and not view.flags.writeable
    np.testing.assert_array_equal(view, expected)
    buf = sync(store.get(key))  # zarr's own call, here without a prototype
    assert buf is not None
    got = buf.as_numpy_array()
    assert np.shares_memory(got, view), key
    del view, got, buf


@contextmanager
def counting_commits() -> Iterator[dict[str, int]]:
    """Count the store's commits (each passes ``commit:truncated`` or ``commit:up-trailer``)."""
    seen = {"n": 0}

    def hook(name: str) -> None:
        if name in ("commit:truncated", "commit:up-trailer"):
            seen["n"] += 1

    dafzarr._core.zipstore.commit.step_hook = hook
    try:
        yield seen
    finally:
        dafzarr._core.zipstore.commit.step_hook = None


def on_both(
    tmp_path: Path, name: str, write: Callable[[zarr.abc.store.Store], None]
) -> tuple[Path, Path]:
    """Run ``write`` on a new MmapZipStore and on a LocalStore; return both paths."""
    path, root = tmp_path / f"{name}.zip", tmp_path / f"{name}.dir"
    with MmapZipStore(path, "w") as store:
        write(store)
    local = zarr.storage.LocalStore(root)
    write(local)
    local.close()
    return path, root


# --- xarray ---------------------------------------------------------------------------------


def make_dataset(nt: int = 6, start: str = "2000-01-01", seed: int = 0) -> xr.Dataset:
    """A small climate-like dataset: dims, coordinates, attributes, NaNs, CF times."""
    rng = np.random.default_rng(seed)
    temp = rng.normal(280.0, 5.0, (nt, 4, 6)).astype("f4")
    temp[0, 0, 0] = np.nan
    return xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "K", "long_name": "air temperature"}),
            "precip": (("time", "y", "x"), rng.gamma(2.0, 1.0, (nt, 4, 6))),
            "flag": (("time", "x"), rng.integers(0, 3, (nt, 6)).astype("u1")),
            "elevation": (("y", "x"), rng.normal(size=(4, 6)), {"units": "m"}),
        },
        coords={
            "time": pd.date_range(start, periods=nt, freq="6h"),
            "y": np.linspace(-1.0, 1.0, 4),
            "x": np.arange(6) * 10,
            "station": ("x", np.array(list("abcdef"))),
        },
        attrs={"title": "writers", "version": 3, "levels": [1, 2, 3]},
    )


def encoding(zarr_format: int) -> dict[str, dict[str, Any]]:
    """Chunks, fill values, no compressor, a numcodecs/zarr compressor, CF time units."""
    if zarr_format == 2:
        zstd: Any = numcodecs.Zstd(level=3)
        blosc: Any = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    else:
        zstd = zarr.codecs.ZstdCodec(level=3)
        blosc = zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
    return {
        "temp": {"chunks": (2, 2, 3), "compressors": (zstd,), "_FillValue": np.float32(-9999)},
        "precip": {"chunks": (2, 4, 6), "compressors": None},
        "flag": {"chunks": (3, 6), "compressors": (blosc,), "_FillValue": 255},
        "time": {
            "units": "hours since 2000-01-01",
            "calendar": "proleptic_gregorian",
            "dtype": "i8",
        },
    }


def check_precip_zero_copy(store: MmapZipStore, ds: xr.Dataset) -> None:
    """``precip`` is stored uncompressed in chunks of (2, 4, 6): its first chunk is a view."""
    key = chunk_key(store, "precip", (0, 0, 0))
    check_zero_copy(store, key, "f8", (2, 4, 6), ds["precip"].values[:2])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_round_trip(tmp_path: Path, zarr_format: int) -> None:
    ds = make_dataset()

    def write(store: zarr.abc.store.Store) -> None:
        ds.to_zarr(
            store,
            mode="w",
            zarr_format=zarr_format,
            consolidated=True,
            encoding=encoding(zarr_format),
        )

    path, root = on_both(tmp_path, "rt", write)
    check_archive(path)
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, ds)
        assert back["temp"].encoding["chunks"] == (2, 2, 3)
        assert back["temp"].encoding["_FillValue"] == -9999
        assert back["flag"].encoding["_FillValue"] == 255
        assert back["time"].encoding["units"] == "hours since 2000-01-01"
        assert back["time"].encoding["calendar"] == "proleptic_gregorian"
        assert not back["precip"].encoding["compressors"]
        assert "zstd" in str(back["temp"].encoding["compressors"]).lower()
        check_precip_zero_copy(store, ds)
        del back
    zs = zarr.storage.ZipStore(path, mode="r")  # zarr's own reader of ZIP archives
    xr.testing.assert_identical(xr.open_zarr(zs).load(), ds)
    zs.close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_append_along_time(tmp_path: Path, zarr_format: int) -> None:
    first = make_dataset(nt=3)
    parts = [first] + [
        make_dataset(nt=1 + i % 2, start=f"2001-01-{i + 1:02d}", seed=i + 1).drop_vars(
            ["elevation"]
        )
        for i in range(20)
    ]

    def write(store: zarr.abc.store.Store) -> None:
        first.to_zarr(
            store,
            mode="w",
            zarr_format=zarr_format,
            consolidated=True,
            encoding=encoding(zarr_format),
        )
        for part in parts[1:]:
            part.to_zarr(store, mode="a", append_dim="time", consolidated=True)

    path, root = on_both(tmp_path, "append", write)
    check_archive(path)
    check_same_as_oracle(path, root)
    expected = xr.concat(
        parts, dim="time", data_vars="minimal", coords="minimal", compat="override", join="override"
    )
    expected["elevation"] = first["elevation"]
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, expected)
        assert store.space().dead_bytes > 0  # metadata and last chunks were rewritten
        check_precip_zero_copy(store, expected)
        del back


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_region_and_r_plus(tmp_path: Path, zarr_format: int) -> None:
    ds = make_dataset(nt=8)
    new = make_dataset(nt=8, seed=7)
    expected = ds.copy(deep=True)
    timed = ["temp", "precip", "flag"]

    def write(store: zarr.abc.store.Store) -> None:
        ds.to_zarr(
            store,
            mode="w",
            zarr_format=zarr_format,
            consolidated=True,
            encoding=encoding(zarr_format),
        )
        # Aligned with the chunks of precip (2 along time), not with those of flag (3).
        new[timed].isel(time=slice(2, 5)).drop_vars(["station", "x", "y"]).to_zarr(
            store, region={"time": slice(2, 5)}
        )
        new[["precip"]].isel(time=slice(6, 8)).to_zarr(store, region="auto")
        new[["elevation"]].to_zarr(store, mode="r+")
        changed = ds[["temp"]].copy(deep=True)
        changed["temp"][:] = 1.5
        changed.attrs = {}
        changed[["temp"]].to_zarr(store, mode="r+")

    for name in timed:
        expected[name][2:5] = new[name][2:5]
    expected["precip"][6:8] = new["precip"][6:8]
    expected["elevation"][:] = new["elevation"]
    expected["temp"][:] = np.float32(1.5)

    path, root = on_both(tmp_path, "region", write)
    check_archive(path)
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, expected)
        check_precip_zero_copy(store, expected)
        del back


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_mode_w_replaces_a_dataset(tmp_path: Path, zarr_format: int) -> None:
    big, small = make_dataset(nt=8), make_dataset(nt=2, seed=3)[["precip"]]

    def write(store: zarr.abc.store.Store) -> None:
        big.to_zarr(
            store,
            mode="w",
            zarr_format=zarr_format,
            consolidated=True,
            encoding=encoding(zarr_format),
        )
        small.to_zarr(
            store,
            mode="w",
            zarr_format=zarr_format,
            consolidated=True,
            encoding={"precip": {"chunks": (2, 4, 6), "compressors": None}},
        )

    path, root = on_both(tmp_path, "replace", write)
    check_archive(path)  # the second write cleared the store: a fresh archive took its place
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, small)
        check_precip_zero_copy(store, small)
        del back


def test_seven_zip_detects_the_format_after_leading_entries_die(tmp_path: Path) -> None:
    path = tmp_path / "lead.zip"
    with MmapZipStore(path, "w") as store:
        store["a/c/0"] = numcodecs.Zstd(level=1).encode(bytes(100))
        store["b"] = b"live"
        del store["a/c/0"]
    check_archive(path)


# --- zarr -----------------------------------------------------------------------------------


def zarr_edits(store: zarr.abc.store.Store, zarr_format: int) -> None:
    """zarr's rewriting operations, each of which supersedes or deletes keys."""
    g = zarr.open_group(store=store, mode="w", zarr_format=zarr_format, attributes={"v": 1})
    a = g.create_array(
        "a", shape=(6, 8), chunks=(2, 4), dtype="f8", compressors=None, fill_value=0.0
    )
    a[:] = np.arange(48.0).reshape(6, 8)
    a.resize((4, 8))  # a shrink deletes the chunks past the new edge
    a.resize((5, 10))
    a[4, :] = 9.0  # fills the new edge chunks (read, modify, write)
    a.append(np.ones((2, 10)), axis=0)
    a.append(np.full((7, 3), 2.0), axis=1)
    a.attrs["units"] = "m"
    a.attrs.update({"scale": 2, "units": "km"})
    a.attrs.put({"only": True})
    sub = g.create_group("sub", attributes={"keep": False})
    sub.create_array("s", shape=(5,), chunks=(2,), dtype="i4")[:] = np.arange(5)
    sub.create_group("deeper").create_array("d", shape=(3,), dtype="u1")[:] = 1
    g.create_group("sub", overwrite=True, attributes={"keep": True})  # drops sub's children
    g.create_array("b", shape=(3,), dtype="f8")[:] = 1.5
    g.create_array("b", shape=(4,), dtype="i2", overwrite=True)[:] = 2
    g.create_group("to_go").create_array("x", shape=(2,), dtype="i1")[:] = 5
    del g["to_go"]
    g.create_array("c", shape=(4,), chunks=(2,), dtype="i4", fill_value=7)[:] = [1, 2, 3, 4]
    g["c"][:2] = 7  # a chunk equal to the fill value is deleted
    zarr.consolidate_metadata(store)
    g.attrs["v"] = 2
    zarr.consolidate_metadata(store)
    if zarr_format == 3:
        sh = g.create_array(
            "sharded", shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="i2", compressors=None
        )
        sh[:] = np.arange(64, dtype="i2").reshape(8, 8)
        sh[1:3, 1:3] = -1  # partial writes of a shard: read, modify, write
        sh[5:, :] = 0
        zarr.consolidate_metadata(store)


def groups_equal(a: zarr.Group, b: zarr.Group) -> None:
    """Same members, attributes and values, recursively."""
    assert dict(a.attrs) == dict(b.attrs)
    assert sorted(a.array_keys()) == sorted(b.array_keys())
    assert sorted(a.group_keys()) == sorted(b.group_keys())
    for name in a.array_keys():
        x, y = a[name], b[name]
        assert isinstance(x, zarr.Array) and isinstance(y, zarr.Array)
        assert dict(x.attrs) == dict(y.attrs) and x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x[...], y[...])
    for name in a.group_keys():
        x, y = a[name], b[name]
        assert isinstance(x, zarr.Group) and isinstance(y, zarr.Group)
        groups_equal(x, y)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_edits_match_local_store(tmp_path: Path, zarr_format: int) -> None:
    path, root = on_both(tmp_path, "zarr", lambda store: zarr_edits(store, zarr_format))
    check_same_as_oracle(path, root)
    oracle = zarr.open_group(store=zarr.storage.LocalStore(root, read_only=True), mode="r")
    zs = zarr.storage.ZipStore(path, mode="r")
    with MmapZipStore(path) as store:
        for s in (store, zs):
            g = zarr.open_group(store=s, mode="r")
            groups_equal(g, oracle)
            assert dict(g["a"].attrs) == {"only": True}
            assert "to_go" not in g and not list(g["sub"].members())
            assert g.attrs["v"] == 2
        consolidated = zarr.open_consolidated(store=store, mode="r")
        assert consolidated.attrs["v"] == 2
        groups_equal(consolidated, oracle)
        expected = oracle["a"][0:2, 0:4]
        check_zero_copy(store, chunk_key(store, "a", (0, 0)), "f8", (2, 4), expected)
    zs.close()
    check_archive(path)


# --- anndata --------------------------------------------------------------------------------


def make_adata(sparse_x: bool) -> Any:
    """An AnnData with dense or CSR X, layers, categorical obs, obsm and nested uns."""
    rng = np.random.default_rng(5)
    n_obs, n_var = 40, 15
    dense = rng.poisson(0.7, (n_obs, n_var)).astype("f4")
    x = sp.csr_matrix(dense) if sparse_x else dense
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice(["T", "B", "NK"], n_obs)),
            "n_counts": dense.sum(axis=1),
            "batch": pd.Categorical(rng.choice(["b1", "b2"], n_obs), ordered=True),
        },
        index=[f"cell{i}" for i in range(n_obs)],
    )
    var = pd.DataFrame(
        {
            "gene_ids": [f"ENSG{i:05d}" for i in range(n_var)],
            "highly_variable": rng.random(n_var) > 0.5,
        },
        index=[f"gene{i}" for i in range(n_var)],
    )
    return anndata.AnnData(
        X=x,
        obs=obs,
        var=var,
        layers={"counts": sp.csr_matrix(dense * 2), "log": np.log1p(dense)},
        obsm={"X_pca": rng.normal(size=(n_obs, 5)), "X_umap": rng.normal(size=(n_obs, 2))},
        varm={"loadings": rng.normal(size=(n_var, 5))},
        uns={
            "title": "cells",
            "params": {"k": 10, "method": "leiden"},
            "colors": np.array(["red", "blue", "green"]),
            "weights": np.arange(4.0),
        },
    )


@pytest.fixture
def anndata_assert_equal(request: pytest.FixtureRequest) -> Callable[..., None]:
    """anndata's own comparison of two AnnData objects (element by element, with dtypes)."""
    # Importing anndata's test helpers applies its own "gpu" marker.
    request.config.addinivalue_line("markers", "gpu: anndata's marker for GPU tests")
    from anndata.tests.helpers import assert_equal

    return assert_equal  # type: ignore[no-any-return]


# anndata announces changes of its defaults (format 3, sharding) on every write.
@pytest.mark.filterwarnings("ignore:Writing zarr v2 data will no longer be the default")
@pytest.mark.filterwarnings("ignore:zarr v3 autosharding will be the default")
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("sparse_x", [False, True], ids=["dense", "csr"])
def test_anndata_round_trip(
    tmp_path: Path, zarr_format: int, sparse_x: bool, anndata_assert_equal: Callable[..., None]
) -> None:
    adata = make_adata(sparse_x)

    def write(store: zarr.abc.store.Store) -> None:
        with anndata.settings.override(zarr_write_format=zarr_format):
            adata.write_zarr(store)
            adata.write_zarr(store)  # writing again replaces every element

    path, root = on_both(tmp_path, "ad", write)
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = anndata.read_zarr(store)
        anndata_assert_equal(back, adata)
        assert sp.issparse(back.X) == sparse_x and back.obs["cell_type"].dtype == "category"
        del back
    check_archive(path)  # the second write cleared the store: a fresh archive took its place


_CLEAR_UNDER_A_READER = """
import sys, warnings
import numpy as np, xarray as xr, anndata
from dafzarr import MmapZipStore

warnings.simplefilter("ignore")
ds = xr.Dataset({"v": (("x",), np.arange(100_000.0))})
with MmapZipStore(sys.argv[1], "w") as store:
    ds.to_zarr(store, mode="w", zarr_format=3, consolidated=True,
               encoding={"v": {"chunks": (10_000,), "compressors": None}})
    lazy = xr.open_zarr(store)  # a read-only handle on the archive as it is now
    anndata.AnnData(X=np.full((50, 20), 7.0, "f4")).write_zarr(store)  # clears the store
    assert np.array_equal(lazy["v"].values, ds["v"].values)
    assert anndata.read_zarr(store).X.sum() == 7.0 * 50 * 20
print("ok")
"""


def test_clear_keeps_the_bytes_readers_map(tmp_path: Path) -> None:
    # anndata's write_zarr clears the store first. A dataset xarray opened lazily before
    # keeps reading its values from its own mapping (no bus error, no other entry's bytes).
    path = tmp_path / "clear.zip"
    res = subprocess.run(
        [sys.executable, "-c", _CLEAR_UNDER_A_READER, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", (res.returncode, res.stderr)
    check_archive(path)


@pytest.mark.filterwarnings("ignore:zarr v3 autosharding will be the default")
def test_clear_inside_a_batch_is_part_of_it(
    tmp_path: Path, anndata_assert_equal: Callable[..., None]
) -> None:
    path = tmp_path / "batch-clear.zip"
    first, second = make_adata(sparse_x=False), make_adata(sparse_x=True)
    with MmapZipStore(path, "w") as store, anndata.settings.override(zarr_write_format=3):
        first.write_zarr(store)
        with pytest.raises(RuntimeError, match="boom"), store.batch():
            second.write_zarr(store)  # clears, then writes
            raise RuntimeError("boom")
        assert sp.issparse(second.X) and not sp.issparse(anndata.read_zarr(store).X)
        with counting_commits() as seen, store.batch():
            second.write_zarr(store)
        assert seen["n"] == 1
        assert sp.issparse(anndata.read_zarr(store).X)
        sync(store.clear())
        assert not list(store.keys())
        first.write_zarr(store)
    with MmapZipStore(path) as store:
        anndata_assert_equal(anndata.read_zarr(store), first)
    check_archive(path)


# --- dask and concurrency -------------------------------------------------------------------


def dask_encoding(zarr_format: int) -> dict[str, dict[str, Any]]:
    """Zarr chunks of two time steps; each dask chunk of four covers several of them."""
    enc = encoding(zarr_format)
    enc["flag"]["chunks"] = (2, 6)
    return enc


def zarr_chunk_count(ds: xr.Dataset, enc: dict[str, dict[str, Any]], names: list[str]) -> int:
    """How many zarr chunks the variables ``names`` have."""
    return sum(
        int(np.prod([-(-n // c) for n, c in zip(ds[v].shape, enc[v]["chunks"], strict=True)]))
        for v in names
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dask_threads_write_and_commits_are_shared(tmp_path: Path, zarr_format: int) -> None:
    ds = make_dataset(nt=24)
    lazy = ds.chunk({"time": 4, "y": 4, "x": 6})
    enc = dask_encoding(zarr_format)
    timed = ["temp", "precip", "flag"]
    tasks = len(timed) * 24 // 4  # one dask task writes one (4, 4, 6) block of a variable
    chunks = zarr_chunk_count(ds, enc, timed)
    commits: dict[str, int] = {}

    def write(store: zarr.abc.store.Store) -> None:
        delayed = lazy.to_zarr(
            store, mode="w", zarr_format=zarr_format, consolidated=True, encoding=enc, compute=False
        )
        with dask.config.set(scheduler="threads", num_workers=4), counting_commits() as seen:
            delayed.compute()
        commits.setdefault("n", seen["n"])

    path, root = on_both(tmp_path, "dask", write)
    # The chunks of one dask block are written concurrently by zarr and share a commit
    # (blocks written at the same time by different threads may share one too; on a busy
    # machine a block's chunks may straddle two); xarray's final step rewrites the
    # consolidated metadata. One commit per chunk would be 72.
    assert 1 <= commits["n"] <= tasks + tasks // 2 < chunks, (commits, tasks, chunks)
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, ds)
        check_precip_zero_copy(store, ds)
        del back
    check_archive(path)


def test_dask_write_inside_a_batch_is_one_commit(tmp_path: Path) -> None:
    # Many small dask tasks each commit on their own; a batch makes the whole dataset one
    # commit (and all or nothing).
    ds = make_dataset(nt=24)
    lazy = ds.chunk({"time": 2, "y": 4, "x": 6})
    path = tmp_path / "batch.zip"
    with MmapZipStore(path, "w") as store:
        with (
            dask.config.set(scheduler="threads", num_workers=4),
            counting_commits() as seen,
            store.batch(),
        ):
            lazy.to_zarr(
                store, mode="w", zarr_format=3, consolidated=True, encoding=dask_encoding(3)
            )
        assert seen["n"] == 1
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, ds)
        check_precip_zero_copy(store, ds)
        del back
    check_archive(path)


def test_dask_writes_shards_and_strings(tmp_path: Path) -> None:
    # Format 3 shards: dask blocks fill whole shards, reads take byte ranges of them (the
    # shard index is a suffix request), a region write reads, modifies and rewrites them.
    rng = np.random.default_rng(11)
    ds = xr.Dataset(
        {
            "v": (("time", "x"), rng.normal(size=(32, 64))),
            "name": (("x",), np.array([f"site-{i}" for i in range(64)], dtype=object)),
        },
        coords={"time": pd.date_range("2000-01-01", periods=32)},
    )
    enc = {"v": {"chunks": (4, 16), "shards": (8, 32), "compressors": None}}
    expected = ds.copy(deep=True)
    expected["v"][8:16] = 3.0

    def write(store: zarr.abc.store.Store) -> None:
        with dask.config.set(scheduler="threads", num_workers=4):
            first = ds.isel(time=slice(0, 16)).chunk({"time": 8, "x": 32})
            first["name"] = ds["name"]  # strings stay in memory (variable-length in zarr)
            first.to_zarr(store, mode="w", zarr_format=3, encoding=enc, consolidated=True)
            ds.isel(time=slice(16, 32)).drop_vars("name").chunk({"time": 8, "x": 32}).to_zarr(
                store, mode="a", append_dim="time", consolidated=True
            )
            expected[["v"]].isel(time=slice(8, 16)).chunk({"time": 8, "x": 32}).to_zarr(
                store, region="auto"
            )

    path, root = on_both(tmp_path, "shards", write)
    check_same_as_oracle(path, root)
    with MmapZipStore(path) as store:
        back = xr.open_zarr(store, chunks={}).compute()
        xr.testing.assert_identical(back, expected)
        del back
    check_archive(path)


def test_reads_are_whole_versions_while_dask_threads_rewrite(tmp_path: Path) -> None:
    # zarr's event loop serves get() and set() at once while dask threads push region
    # writes: every chunk read is one complete version, never a mix of two.
    versions = [make_dataset(nt=16, seed=s)[["precip"]] for s in range(4)]
    enc = {"precip": {"chunks": (2, 4, 6), "compressors": None}}
    path = tmp_path / "rw.zip"
    errors: list[BaseException] = []
    stop = threading.Event()
    with MmapZipStore(path, "w") as store:
        versions[0].to_zarr(store, mode="w", zarr_format=3, consolidated=True, encoding=enc)
        keys = [chunk_key(store, "precip", (i, 0, 0)) for i in range(8)]
        blocks = [
            [v["precip"].values[2 * i : 2 * i + 2].tobytes() for v in versions] for i in range(8)
        ]
        reads = {"n": 0}

        def reader(use_sync_api: bool) -> None:
            try:
                while not stop.is_set():
                    for key, choices in zip(keys, blocks, strict=True):
                        buf = store.get_sync(key) if use_sync_api else sync(store.get(key))
                        assert buf is not None, key
                        assert buf.to_bytes() in choices, key
                        reads["n"] += 1
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def array_reader() -> None:
            # Through zarr's Array API on the same (writable) store: decoded blocks.
            arr = zarr.open_array(store=store, path="precip", mode="r+")
            try:
                while not stop.is_set():
                    for i, choices in enumerate(blocks):
                        assert arr[2 * i : 2 * i + 2].tobytes() in choices, i
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(flag,)) for flag in (False, True)]
        threads.append(threading.Thread(target=array_reader))
        for t in threads:
            t.start()
        try:
            for v in versions[1:]:
                with dask.config.set(scheduler="threads", num_workers=4):
                    v.drop_vars(["x", "y", "station"]).chunk({"time": 2}).to_zarr(
                        store, region={"time": slice(0, 16)}
                    )
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors[0]
        assert reads["n"] > 0
        back = xr.open_zarr(store).load()
        xr.testing.assert_identical(back, versions[-1])
        check_precip_zero_copy(store, versions[-1])
        del back
    check_archive(path)
