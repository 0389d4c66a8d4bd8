"""Scanning generated NetCDF4/HDF5 files, writing reference stores and reading them back."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xarray as xr
import zarr

from dafzarr import _h5chunks, refs
from dafzarr.errors import H5Error, UnsupportedHDF5Error, UnsupportedVariableWarning

from .refs_common import (
    assert_same_values,
    chunk_refs,
    fastparquet_deprecation_ignored,
    kerchunk_refs,
    open_refs,
    open_store,
    pandas_missing_chunk_workaround,
)


# --- Generators ------------------------------------------------------------------------
def make_cf(path: Path) -> Path:
    """Chunked + shuffle + zlib with packing, unlimited time, NaN fill, default fill, big-endian."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "generated"
        ds.createDimension("time", None)
        ds.createDimension("y", 10)
        ds.createDimension("x", 12)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t.calendar = "standard"
        t[:] = np.arange(4.0)
        tas = ds.createVariable(
            "tas",
            "i2",
            ("time", "y", "x"),
            zlib=True,
            shuffle=True,
            chunksizes=(1, 5, 6),
            fill_value=-999,
        )
        tas.scale_factor = 0.01
        tas.add_offset = 273.15
        tas.units = "K"
        tas[:] = np.arange(480, dtype="i2").reshape(4, 10, 12)
        tas[2, :5, :6] = np.ma.masked
        nan = ds.createVariable(
            "nanfill", "f4", ("y", "x"), zlib=True, chunksizes=(5, 6), fill_value=np.nan
        )
        nan[:5, :] = 1.5
        nofill = ds.createVariable("nofill", "f4", ("y", "x"), chunksizes=(5, 6))
        nofill[:5, :6] = 2.5  # three of four chunks never written, no _FillValue
        big = ds.createVariable("big", ">f8", ("y",), endian="big", zlib=True)
        big[:] = np.linspace(0, 1, 10)
        cont = ds.createVariable("cont", "i4", ("x",), contiguous=True)
        cont[:] = np.arange(12)
        scalar = ds.createVariable("scalar", "f8", ())
        scalar[()] = 42.0
        fl = ds.createVariable("fl", "f4", ("y", "x"), fletcher32=True, zlib=True, shuffle=True)
        fl[:] = np.arange(120, dtype="f4").reshape(10, 12)
    return path


def make_unlimited(path: Path) -> Path:
    """Two variables on one unlimited dimension with different current lengths."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        a = ds.createVariable("long", "f4", ("time",), chunksizes=(2,))
        b = ds.createVariable("short", "f4", ("time",), chunksizes=(2,), fill_value=-1.0)
        a[:] = np.arange(7, dtype="f4")
        b[:3] = np.arange(3, dtype="f4") + 10
    return path


def make_groups(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 4)
        x = ds.createVariable("x", "i4", ("x",))
        x[:] = np.arange(4)
        g = ds.createGroup("sub")
        g.long_name = "a subgroup"
        g.createDimension("z", 3)
        z = g.createVariable("v", "f4", ("z", "x"), zlib=True)
        z[:] = np.arange(12, dtype="f4").reshape(3, 4)
        gg = g.createGroup("deeper")
        w = gg.createVariable("w", "i8", ("x",))
        w[:] = [5, 6, 7, 8]
    return path


# --- Scanner metadata --------------------------------------------------------------------
def test_scan_metadata(tmp_path: Path) -> None:
    r = refs.scan(make_cf(tmp_path / "cf.nc"))
    tas = r["tas"]
    assert tas.dtype == "<i2" and tas.shape == (4, 10, 12) and tas.chunks == (1, 5, 6)
    assert tas.filters == [{"id": "shuffle", "elementsize": 2}, {"id": "zlib", "level": 4}]
    assert tas.fill_value == -999
    assert tas.dims == ("time", "y", "x")
    # _FillValue stays an attribute too (as Zarr v3 readers decode it): they mask by it alone
    assert tas.attrs == {
        "scale_factor": 0.01,
        "add_offset": 273.15,
        "units": "K",
        "_FillValue": -999,
    }
    assert tas.group == ""
    assert r["nanfill"].fill_value == "NaN"
    nan_attr = r["nanfill"].attrs["_FillValue"]
    assert np.isnan(struct.unpack("<d", base64.standard_b64decode(nan_attr))[0])
    assert r["nofill"].fill_value == pytest.approx(9.96921e36, rel=1e-6)
    assert r["big"].dtype == ">f8"
    assert r["fl"].filters == [
        {"id": "fletcher32"},
        {"id": "shuffle", "elementsize": 4},
        {"id": "zlib", "level": 4},
    ]
    assert r["cont"].layout == "contiguous" and r["cont"].chunks == (12,)
    assert r["scalar"].shape == () and r["scalar"].chunks == () and r["scalar"].nchunks == 1
    assert r.groups[""] == {"title": "generated"}
    assert r.dimensions == {"time": 4, "y": 10, "x": 12}
    # chunk (2, 0, 0) of tas was masked, i.e. written with fill values: still allocated
    assert (tas.offset >= 0).all() and (tas.filter_mask == 0).all()
    assert (r["nofill"].offset >= 0).sum() == 1
    # no hidden attribute leaks
    for v in r.variables.values():
        assert not set(v.attrs) & refs.HIDDEN_ATTRIBUTES


def test_scan_matches_h5py_chunk_iter(tmp_path: Path) -> None:
    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("a", shape=(300, 70), chunks=(7, 9), dtype="f4", compression="gzip")
        d[:150] = 1.0
        d[200:230, 20:40] = 2.0
    r = refs.scan(path)
    with h5py.File(path) as f:
        infos: list[h5py.h5d.StoreInfo] = []
        f["a"].id.chunk_iter(infos.append)
    want = {
        f"{i.chunk_offset[0] // 7}.{i.chunk_offset[1] // 9}": (i.byte_offset, i.size) for i in infos
    }
    assert chunk_refs(r["a"]) == want
    assert len(want) < r["a"].nchunks  # some chunks are unallocated and stay missing


def test_refs_equal_kerchunk(tmp_path: Path) -> None:
    path = make_cf(tmp_path / "cf.nc")
    r = refs.scan(path)
    kc = kerchunk_refs(path)
    for name in ("tas", "nanfill", "nofill", "big", "cont", "time"):
        want = {
            k.rsplit("/", 1)[1]: (v[1], v[2])
            for k, v in kc.items()
            if k.startswith(f"{name}/") and isinstance(v, list)
        }
        assert want, name
        assert chunk_refs(r[name]) == want, name


def test_chunk_index_rejects_bad_arguments(tmp_path: Path) -> None:
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(100), chunks=(10,))
    with h5py.File(path) as f:
        dsid = f["a"].id
        o, s, m = np.full(10, -1, np.int64), np.zeros(10, np.int64), np.zeros(10, np.uint32)
        with pytest.raises(TypeError, match="DatasetID"):
            _h5chunks.chunk_index(dsid.id, (10,), (10,), o, s, m)
        with pytest.raises(ValueError, match="10 entries"):
            _h5chunks.chunk_index(dsid, (10,), (10,), o[:5], s, m)
        with pytest.raises(ValueError, match="outside the chunk grid"):
            _h5chunks.chunk_index(dsid, (10,), (5,), o[:5], s[:5], m[:5])
        o[:] = -1
        assert _h5chunks.chunk_index(dsid, (10,), (10,), o, s, m) == 10
        with pytest.raises(ValueError, match="reported twice"):
            _h5chunks.chunk_index(dsid, (10,), (10,), o, s, m)  # offsets not reset to -1


def test_chunk_index_on_contiguous_dataset_raises(tmp_path: Path) -> None:
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(10))
    with h5py.File(path) as f:
        o, s, m = np.full(1, -1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.uint32)
        with pytest.raises(RuntimeError, match="not a chunked dataset"):
            _h5chunks.chunk_index(f["a"].id, (10,), (1,), o, s, m)


# --- Round trips through fsspec + xarray ---------------------------------------------------
@pytest.mark.parametrize("engine", ["pyarrow", "fastparquet"])
def test_roundtrip_cf(tmp_path: Path, engine: str) -> None:
    pytest.importorskip(engine)
    path = make_cf(tmp_path / "cf.nc")
    store = refs.write_parquet(refs.scan(path), tmp_path / "store")
    with pandas_missing_chunk_workaround(), fastparquet_deprecation_ignored():
        got = open_refs(store, engine=engine, decode_cf=False).load()
        with xr.open_mfdataset([path], decode_cf=False) as want:
            assert_same_values(got, want.load())
        # CF decoding: packing, masking of _FillValue and time decoding agree too
        got_cf = open_refs(store, engine=engine).load()
    with xr.open_dataset(path) as want_cf:
        for name in ("tas", "nanfill", "big", "cont", "fl", "time"):
            a, b = got_cf[name].values, want_cf[name].values
            if a.dtype.kind == "f":
                np.testing.assert_allclose(a, b.astype(a.dtype), rtol=1e-6, err_msg=name)
            else:
                np.testing.assert_array_equal(a, b, err_msg=name)
    assert int(got_cf["tas"].isnull().sum()) == 30  # the masked block


def test_unlimited_dimension_of_unequal_lengths(tmp_path: Path) -> None:
    path = make_unlimited(tmp_path / "u.nc")
    r = refs.scan(path)
    assert r["long"].shape == r["short"].shape == (7,)
    assert (r["short"].offset[2:] == -1).all()  # beyond its own extent: missing chunks
    store = refs.write_parquet(r, tmp_path / "store")
    with pandas_missing_chunk_workaround():
        got = open_refs(store, decode_cf=False).load()
    with xr.open_dataset(path, decode_cf=False) as want:
        assert_same_values(got, want)


def test_groups(tmp_path: Path) -> None:
    path = make_groups(tmp_path / "g.nc")
    r = refs.scan(path)
    assert set(r.variables) == {"x", "sub/v", "sub/deeper/w"}
    assert r["sub/v"].group == "sub" and r["sub/v"].dims == ("z", "x")
    assert r["sub/deeper/w"].dims == ("x",)
    assert r.groups["sub"] == {"long_name": "a subgroup"}
    store = refs.write_parquet(r, tmp_path / "store")
    meta = json.loads((store / ".zmetadata").read_text())["metadata"]
    assert meta["sub/.zgroup"] == {"zarr_format": 2}
    assert meta["sub/deeper/.zgroup"] == {"zarr_format": 2}
    # xarray's group= over fsspec's async listing does not see nested arrays (a reader
    # limitation); zarr's hierarchy reads them.
    root = zarr.open_group(open_store(store), mode="r", zarr_format=2)
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        np.testing.assert_array_equal(root["sub/v"][...], nc["sub"]["v"][...])
        np.testing.assert_array_equal(root["sub/deeper/w"][...], nc["sub/deeper"]["w"][...])
        np.testing.assert_array_equal(root["x"][...], nc["x"][...])


def test_compact_layout_is_inlined(tmp_path: Path) -> None:
    path = tmp_path / "compact.h5"
    with h5py.File(path, "w") as f:
        space = h5py.h5s.create_simple((20,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        dsid = h5py.h5d.create(f.id, b"small", h5py.h5t.STD_I32BE, space, dcpl=dcpl)
        h5py.Dataset(dsid)[:] = np.arange(20) * 3
    r = refs.scan(path)
    v = r["small"]
    assert v.layout == "compact" and v.dtype == ">i4" and v.offset[0] == -1
    assert v.raw[0] == (np.arange(20) * 3).astype(">i4").tobytes()
    store = refs.write_parquet(r, tmp_path / "store")
    got = open_refs(store, decode_cf=False).load()
    np.testing.assert_array_equal(got["small"].values, np.arange(20) * 3)


def test_vlen_strings_are_inlined(tmp_path: Path) -> None:
    path = tmp_path / "s.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 4)
        s = ds.createVariable("names", str, ("n",))
        s[0], s[1], s[2] = "alpha", "wörld", ""
    r = refs.scan(path)
    assert r["names"].filters == [{"id": "vlen-utf8"}] and r["names"].dtype == "|O"
    got = open_refs(refs.write_parquet(r, tmp_path / "store")).load()
    with xr.open_dataset(path) as want:
        assert [str(x) for x in got["names"].values] == [str(x) for x in want["names"].values]


def test_user_block(tmp_path: Path) -> None:
    path = tmp_path / "ub.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("c", data=np.arange(50, dtype="f8"), chunks=(7,), compression="gzip")
        f.create_dataset("d", data=np.arange(5, dtype="i2"))
    r = refs.scan(path)
    raw = path.read_bytes()
    import zlib

    first = r["c"]
    chunk0 = raw[first.offset[0] : first.offset[0] + first.size[0]]
    np.testing.assert_array_equal(np.frombuffer(zlib.decompress(chunk0), "f8"), np.arange(7.0))
    # decode_cf=False: xarray over zarr masks the HDF5 fill value (0 here)
    got = open_refs(refs.write_parquet(r, tmp_path / "store"), decode_cf=False).load()
    np.testing.assert_array_equal(got["c"].values, np.arange(50.0))
    np.testing.assert_array_equal(got["d"].values, np.arange(5))


def test_to_kerchunk_json(tmp_path: Path) -> None:
    path = make_cf(tmp_path / "cf.nc")
    out = tmp_path / "refs.json"
    doc = refs.to_kerchunk_json(refs.scan(path), out)
    assert json.loads(out.read_text())["version"] == 1
    assert json.loads(doc["refs"]["tas/.zarray"])["filters"][1] == {"id": "zlib", "level": 4}
    assert "nofill/0.1" not in doc["refs"] and "nofill/0.0" in doc["refs"]
    import fsspec

    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file")
    got = xr.open_dataset(
        fs.get_mapper(""), engine="zarr", zarr_format=2, consolidated=False, decode_cf=False
    ).load()
    with xr.open_dataset(path, decode_cf=False) as want:
        assert_same_values(got, want)


# --- The written parquet files ---------------------------------------------------------------
def test_parquet_layout(tmp_path: Path) -> None:
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("a", shape=(25, 10), chunks=(1, 1), dtype="i1")
        d[:10] = 1
    store = refs.write_parquet(refs.scan(path), tmp_path / "store", record_size=100)
    meta = json.loads((store / ".zmetadata").read_text())
    assert meta["record_size"] == 100 and isinstance(meta["metadata"]["a/.zarray"], dict)
    assert meta["metadata"]["a/.zarray"]["dimension_separator"] == "."
    files = sorted((store / "a").iterdir())
    assert [p.name for p in files] == ["refs.0.parq", "refs.1.parq", "refs.2.parq"]
    rows = []
    for p in files:
        t = pq.read_table(p)
        assert t.schema.equals(refs.REFS_SCHEMA, check_metadata=False)
        assert b"pandas" in t.schema.metadata
        md = pq.ParquetFile(p).metadata
        assert md.num_row_groups == 1
        col = md.row_group(0).column(0)
        assert col.compression == "ZSTD" and "RLE_DICTIONARY" in col.encodings
        rows.append(t.num_rows)
    assert rows == [100, 100, 50]  # last file unpadded
    t = pq.read_table(files[1])
    assert t.column("path").null_count == 100  # rows 100..199 are never written
    assert t.column("offset").to_pylist() == [0] * 100
    t0 = pq.read_table(files[0])
    assert t0.column("path").unique().to_pylist() == [path.resolve().as_uri()]
    assert pa.compute.min(t0.column("size")).as_py() > 0


def test_store_is_never_clobbered(tmp_path: Path) -> None:
    path = make_groups(tmp_path / "g.nc")
    r = refs.scan(path)
    other = tmp_path / "precious"
    other.mkdir()
    (other / "data.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        refs.write_parquet(r, other)
    with pytest.raises(FileExistsError, match="not a reference store"):
        refs.write_parquet(r, other, overwrite=True)
    assert (other / "data.txt").read_text() == "keep"
    store = refs.write_parquet(r, tmp_path / "store")
    refs.write_parquet(r, store, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.nc", "precious", "store"]


# --- What cannot be represented ---------------------------------------------------------------
def test_nonzero_filter_mask_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mask.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("m", shape=(4, 4), chunks=(2, 2), dtype="i4", compression="gzip")
        d[:] = 1
        d.id.write_direct_chunk((2, 2), np.full((2, 2), 7, "i4").tobytes(), filter_mask=1)
    with pytest.raises(UnsupportedHDF5Error) as exc:
        refs.scan(path)
    msg = str(exc.value)
    assert str(path) in msg and "'m'" in msg and "chunk 1.1" in msg and "deflate" in msg
    with pytest.warns(UnsupportedVariableWarning, match="non-zero filter mask"):
        r = refs.scan(path, on_unsupported="skip")
    assert "m" not in r.variables


@pytest.mark.parametrize(
    ("kwargs", "label"),
    [
        ({"compression": "szip"}, r"szip \(HDF5 filter id 4\)"),
        ({"scaleoffset": 2}, r"scaleoffset \(HDF5 filter id 6\)"),
        ({"compression": "lzf"}, r"lzf \(HDF5 filter id 32000\)"),
    ],
)
def test_unsupported_filters_are_refused(
    tmp_path: Path, kwargs: dict[str, object], label: str
) -> None:
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("ok", data=np.arange(10.0))
        f.create_dataset("bad", data=np.arange(100.0), chunks=(10,), **kwargs)
    with pytest.raises(UnsupportedHDF5Error, match=f"variable 'bad': unsupported filter {label}"):
        refs.scan(path)
    with pytest.warns(UnsupportedVariableWarning, match=label):
        r = refs.scan(path, on_unsupported="skip")
    assert list(r.variables) == ["ok"]


def test_unsupported_types_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("rec", data=np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
    with pytest.raises(UnsupportedHDF5Error, match=r"variable 'rec': compound data type"):
        refs.scan(path)


def test_differing_fillvalue_attribute_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fv.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("a", data=np.arange(4.0), fillvalue=-1.0)
        d.attrs["_FillValue"] = -2.0
    with pytest.raises(UnsupportedHDF5Error, match=r"_FillValue attribute -2\.0 differs"):
        refs.scan(path)


def test_missing_file() -> None:
    with pytest.raises(FileNotFoundError):
        refs.scan("/nonexistent/file.nc")


PLUGIN_WRITER = """
import sys, h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    data = np.arange(1000.0).reshape(10, 100)
    f.create_dataset("z", data=data, chunks=(5, 50), **hdf5plugin.Zstd(clevel=5))
    f.create_dataset("b", data=data, chunks=(5, 50),
                     **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
"""


def test_zstd_and_blosc_filters(tmp_path: Path) -> None:
    pytest.importorskip("hdf5plugin")
    path = tmp_path / "plugins.h5"
    # Written in a child process without HDF5_PLUGIN_PATH: importing netCDF4 points it at
    # netCDF4's own plugins, built against netCDF4's bundled HDF5, and h5py's HDF5 then fails
    # in them ("error during user callback").
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    subprocess.run(
        [sys.executable, "-c", PLUGIN_WRITER, str(path)], check=True, timeout=120, env=env
    )
    r = refs.scan(path)
    assert r["z"].filters == [{"id": "zstd", "level": 5}]
    assert r["b"].filters == [
        {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
    ]
    got = open_refs(refs.write_parquet(r, tmp_path / "store"), decode_cf=False).load()
    data = np.arange(1000.0).reshape(10, 100)
    for name in ("z", "b"):
        np.testing.assert_array_equal(got[name].values, data, err_msg=name)


def test_inline_threshold(tmp_path: Path) -> None:
    path = make_cf(tmp_path / "cf.nc")
    r = refs.scan(path)
    vds = refs.as_virtual(r, inline_threshold=100)
    tas = vds.arrays["tas"]
    small = (r["tas"].offset >= 0) & (r["tas"].size < 100)
    assert small.any() and set(tas.raw) == set(np.flatnonzero(small).tolist())
    assert (tas.path_index[small] == -1).all()
    store = refs.write_parquet(r, tmp_path / "store", inline_threshold=100)
    t = pq.read_table(store / "tas" / "refs.0.parq")
    assert t.column("raw").null_count == t.num_rows - int(small.sum())
    with pandas_missing_chunk_workaround():
        got = open_refs(store, decode_cf=False).load()
    with xr.open_dataset(path, decode_cf=False) as want:
        assert_same_values(got, want)


def test_not_hdf5_and_truncated_files(tmp_path: Path) -> None:
    from scipy.io import netcdf_file

    nc3 = tmp_path / "classic.nc"
    with netcdf_file(nc3, "w") as f:
        f.createDimension("x", 3)
        f.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
    with pytest.raises(UnsupportedHDF5Error, match=r"classic\.nc: not an HDF5/NetCDF4 file"):
        refs.scan(nc3)
    whole = make_cf(tmp_path / "cf.nc")
    cut = tmp_path / "cut.nc"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(H5Error, match=r"cut\.nc"):
        refs.scan(cut)


def test_soft_and_external_links_are_not_variables(tmp_path: Path) -> None:
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.create_dataset("elsewhere", data=np.arange(10.0), chunks=(5,))
    path = tmp_path / "links.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("real", data=np.arange(4))
        f["soft"] = h5py.SoftLink("/real")
        f["ext"] = h5py.ExternalLink(str(other), "/elsewhere")
        f["dangling"] = h5py.SoftLink("/nowhere")
    assert set(refs.scan(path).variables) == {"real"}


def test_dimension_scale_without_a_path(tmp_path: Path) -> None:
    """A DIMENSION_LIST reference to a scale whose link was deleted: phony dimension names."""
    p = tmp_path / "dangling.h5"
    with h5py.File(p, "w") as f:
        x = f.create_dataset("x", data=np.arange(4.0))
        x.make_scale("x")
        v = f.create_dataset("v", data=np.arange(4.0) * 2)
        v.dims[0].attach_scale(x)
        y = f.create_dataset("y", data=np.arange(3.0))
        y.make_scale("y")
        w = f.create_dataset("w", data=np.ones((4, 3)))
        w.dims[0].attach_scale(x)
        w.dims[1].attach_scale(y)
        del f["y"]  # w's second reference now names no path
    with h5py.File(p, "r") as f:
        ref = f["w"].attrs["DIMENSION_LIST"][1][0]
        assert h5py.h5r.get_name(ref, f.id) is None
    r = refs.scan(p)
    assert r["v"].dims == ("x",)
    assert len(r["w"].dims) == 2 and r["w"].dims[0].startswith("phony_dim")
    np.testing.assert_array_equal(r["w"].shape, (4, 3))
