"""CF missing values survive every reader of a reference store, Icechunk included.

A daily NetCDF-4 file with ``_FillValue = -999`` over a land mask, as OISST writes it: the
store is read by xarray through fsspec (Zarr v2, which masks by the array's ``fill_value``)
and published through VirtualiZarr into an Icechunk repository (Zarr v3, where only the
``_FillValue`` attribute means "missing"). Every value read back equals the source read by
xarray, NaN for NaN.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

from dafzarr import refs

icechunk = pytest.importorskip("icechunk")


def _oisst_like(path: Path, day: int) -> Path:
    """One time step: ``sst`` (float32, -999 over land), ``anom`` (packed int16 with its
    own fill), ``err`` (float32 with a NaN fill)."""
    rng = np.random.default_rng(day)
    land = np.zeros((1, 8, 16), bool)
    land[:, 2:4, 3:7] = True
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 8)
        ds.createDimension("lon", 16)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 1978-01-01"
        t[:] = [day]
        ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-80, 80, 8)
        ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 350, 16)
        sst = ds.createVariable(
            "sst", "f4", ("time", "lat", "lon"), fill_value=-999.0, chunksizes=(1, 8, 16), zlib=True
        )
        sst[:] = np.ma.masked_array(rng.random((1, 8, 16)).astype("f4") * 30, mask=land)
        anom = ds.createVariable(
            "anom", "i2", ("time", "lat", "lon"), fill_value=-32768, chunksizes=(1, 4, 16)
        )
        anom.scale_factor = 0.01
        anom.set_auto_maskandscale(False)
        packed = rng.integers(-500, 500, (1, 8, 16)).astype("i2")
        packed[land] = -32768
        anom[:] = packed
        err = ds.createVariable("err", "f4", ("time", "lat", "lon"), fill_value=np.nan)
        err[:] = np.ma.masked_array(rng.random((1, 8, 16)).astype("f4"), mask=land)
    return path


def _same(got: xr.Dataset, want: xr.Dataset) -> None:
    for name in ("sst", "anom", "err"):
        a, b = got[name].values, want[name].values
        assert a.dtype == b.dtype, name
        assert np.isnan(a[0, 2:4, 3:7]).all(), f"{name}: the land box is not missing"
        np.testing.assert_array_equal(a, b, err_msg=name)  # NaN where the source has NaN


def _published(store_path: Path, repo_path: Path, files_root: Path) -> Any:
    """The store through VirtualiZarr's kerchunk-Parquet parser, written into a new local
    Icechunk repository; a read-only session of it."""
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkParquetParser
    from virtualizarr.registry import ObjectStoreRegistry

    registry = ObjectStoreRegistry({"file:///": LocalStore("/")})
    vds = open_virtual_dataset(
        f"file://{store_path}", parser=KerchunkParquetParser(), registry=registry
    )
    prefix = f"file://{files_root}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(files_root)))
    )
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(repo_path)),
        config,
        authorize_virtual_chunk_access={prefix: None},
    )
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    session.commit("references of one day")
    return repo.readonly_session("main")


def test_land_mask_reads_missing_through_fsspec_and_through_icechunk(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    src = _oisst_like(files / "day0.nc", 0)
    store = tmp_path / "day0.parq"
    # VirtualiZarr reads no inlined bytes: every reference points into the file.
    refs.virtualize([str(src)], str(store), inline_threshold=0, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers' deprecation and zarr-v3 codec warnings
        want = xr.open_dataset(src).load()
        v2 = xr.open_dataset(
            f"reference::{store}",
            engine="zarr",
            consolidated=False,
            backend_kwargs={"storage_options": {"remote_protocol": "file"}},
            zarr_format=2,
        ).load()
        _same(v2, want)
        session = _published(store, tmp_path / "repo", files)
        v3 = xr.open_zarr(session.store, consolidated=False, zarr_format=3).load()
    _same(v3, want)


def test_a_daily_series_composes_every_variable_for_virtualizarr(tmp_path: Path) -> None:
    """Three daily files, one time step each in HDF5 chunks of 512 along ``time``: the
    composed ``time`` (and the other coordinates) cannot be referenced in the files, so a
    references-only store holds their values as real bytes in its ``values.bin`` and
    references them there; every variable is composed, nothing is inlined, and both
    readers get the source series."""
    files = tmp_path / "files"
    files.mkdir()
    days = [str(_oisst_like(files / f"day{d}.nc", d)) for d in range(3)]
    store = tmp_path / "series.parq"
    vds = refs.virtualize(days, str(store), inline_threshold=0, progress=False)
    assert sorted(vds.arrays) == ["anom", "err", "lat", "lon", "sst", "time"]
    assert (store / "values.bin").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xr.open_mfdataset(days, combine="by_coords").load()
        v2 = xr.open_dataset(
            f"reference::{store}",
            engine="zarr",
            consolidated=False,
            backend_kwargs={"storage_options": {"remote_protocol": "file"}},
            zarr_format=2,
        ).load()
        session = _published(store, tmp_path / "repo", tmp_path)
        v3 = xr.open_zarr(session.store, consolidated=False, zarr_format=3).load()
    for got in (v2, v3):
        np.testing.assert_array_equal(got["time"].values, want["time"].values)
        for name in ("sst", "anom", "err"):
            np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)
    # the command-line check compares every referenced chunk but those of values.bin
    check = subprocess.run(
        [sys.executable, "-m", "dafzarr", "refs", "check", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
