"""Files as the field's tools write them: scanned, written, and read back through zarr-python
(its defaults) and xarray over fsspec's ``reference://`` (both parquet engines)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

from dafzarr import refs
from dafzarr.errors import AttributeLossWarning, UnsupportedHDF5Error, UnsupportedVariableWarning

from .refs_common import (
    open_reference_xr,
    open_zarr_default,
    write_nested_groups,
    write_nofill_netcdf,
    write_non_utf8_strings,
    write_undefined_fill,
    write_unrepresentable,
    write_vlen_strings,
)

ENGINES = [
    "pyarrow",
    pytest.param("fastparquet", marks=pytest.mark.skipif(
        __import__("importlib").util.find_spec("fastparquet") is None, reason="no fastparquet"
    )),
]  # fmt: skip


def _strings(values: object) -> list[str]:
    return [str(x) for x in np.asarray(values).ravel()]


# --- Variable-length strings ------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_vlen_strings_0d_and_1d_as_datasets_and_attributes(tmp_path: Path, engine: str) -> None:
    path = write_vlen_strings(tmp_path / "s.h5")
    r = refs.scan(path)
    assert set(r.variables) == {"session_description", "ascii0", "ascii1", "obs/_index", "x"}
    for name in ("session_description", "ascii0", "ascii1", "obs/_index"):
        assert r[name].dtype == "|O" and r[name].filters == [{"id": "vlen-utf8"}], name
    assert r.groups[""] == {
        "namespace": "core", "neurodata_type": "NWBFile", "nwb_version": ["2.8.0", "x"],
    }  # fmt: skip
    assert r.groups["obs"]["column-order"] == [] and r.groups["obs"]["_index"] == "_index"
    assert r["x"].attrs == {"unit": "volt"}
    store = refs.write_parquet(r, tmp_path / "store")

    root = open_zarr_default(store)
    assert str(root["session_description"][()]) == "a séance"
    assert str(root["ascii0"][()]) == "plain"
    assert _strings(root["ascii1"][:]) == ["a", "bc"]
    assert _strings(root["obs/_index"][:]) == ["cell-1", "cellé-2", ""]
    np.testing.assert_array_equal(root["x"][:], np.arange(6.0))

    ds = open_reference_xr(store, engine)
    assert _strings(ds["session_description"].values) == ["a séance"]
    assert _strings(ds["ascii1"].values) == ["a", "bc"]
    assert ds.attrs["namespace"] == "core"
    obs = open_reference_xr(store, engine, group="obs")
    assert _strings(obs["_index"].values) == ["cell-1", "cellé-2", ""]
    assert obs.attrs["encoding-type"] == "dataframe"


def test_vlen_strings_that_are_not_utf8_are_skipped_with_a_reason(tmp_path: Path) -> None:
    path = write_non_utf8_strings(tmp_path / "latin1.h5")
    with pytest.raises(UnsupportedHDF5Error, match=r"variable 'latin1': .*not UTF-8"):
        refs.scan(path)
    with pytest.warns(UnsupportedVariableWarning, match=r"'latin1': .*not UTF-8"):
        r = refs.scan(path, on_unsupported="skip")
    assert list(r.variables) == ["x"]
    np.testing.assert_array_equal(
        open_zarr_default(refs.write_parquet(r, tmp_path / "store"))["x"][:], np.arange(4)
    )


def test_pytables_strings_are_skipped_with_a_reason(tmp_path: Path) -> None:
    """PyTables stores a VLArray of strings as variable-length sequences of bytes (with a
    ``PSEUDOATOM`` attribute) and an empty ``TITLE`` as a null dataspace."""
    path = tmp_path / "tables.h5"
    with h5py.File(path, "w") as f:
        f.attrs["TITLE"] = h5py.Empty("S1")
        f.attrs["PYTABLES_FORMAT_VERSION"] = np.bytes_(b"2.1")
        vl = f.create_dataset("vlarray", shape=(2,), dtype=h5py.vlen_dtype(np.uint8))
        vl[0], vl[1] = np.frombuffer(b"alpha", np.uint8), np.frombuffer(b"b", np.uint8)
        vl.attrs["PSEUDOATOM"] = np.bytes_(b"utf-8")
        f.create_dataset("array", data=np.arange(5, dtype="<i8"))
    with pytest.warns(UnsupportedVariableWarning, match=r"'vlarray': variable-length sequences"):
        r = refs.scan(path, on_unsupported="skip")
    assert list(r.variables) == ["array"]
    assert r.groups[""] == {"TITLE": None, "PYTABLES_FORMAT_VERSION": "2.1"}
    root = open_zarr_default(refs.write_parquet(r, tmp_path / "store"))
    np.testing.assert_array_equal(root["array"][:], np.arange(5))


def test_empty_string_and_number_arrays(tmp_path: Path) -> None:
    """h5ad writes empty string arrays (no observations, no categories): no chunk at all."""
    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("names", data=np.array([], dtype=object), dtype=h5py.string_dtype())
        f.create_dataset("values", shape=(0,), maxshape=(None,), chunks=(4,), dtype="i4")
        compact = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        compact.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((0,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.IEEE_F64LE, space, dcpl=compact)
    r = refs.scan(path)
    for v in r.variables.values():
        assert v.shape == (0,) and v.nchunks == 0 and not v.raw, v.name
    again = refs.ScanResult.from_arrow(r.to_arrow())  # what a dask worker sends back
    assert set(again.variables) == set(r.variables)
    doc = refs.to_kerchunk_json(r)
    assert not [k for k in doc["refs"] if not k.rsplit("/", 1)[-1].startswith(".z")]
    root = open_zarr_default(refs.write_parquet(r, tmp_path / "store"))
    for name in r.variables:
        assert root[name].shape == (0,), name
    ds = open_reference_xr(tmp_path / "store")
    assert ds.sizes == {"phony_dim_0": 0}


# --- Nested groups ---------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_nested_groups_open_with_zarr_defaults_and_xarray_group(
    tmp_path: Path, engine: str
) -> None:
    store = refs.write_parquet(refs.scan(write_nested_groups(tmp_path / "n.h5")), tmp_path / "st")
    root = open_zarr_default(store)
    assert sorted(name for name, _ in root.members(max_depth=None)) == [
        "g1", "g1/a", "g1/sub", "g1/sub/b", "g2", "g2/a", "g2/sub", "g2/sub/b", "top",
    ]  # fmt: skip
    for k, g in enumerate(("g1", "g2")):
        np.testing.assert_array_equal(root[f"{g}/a"][:], np.arange(3) + 10 * k)
        np.testing.assert_array_equal(root[f"{g}/sub/b"][:], np.arange(4.0) + 100 * k)
        assert root[g].attrs["name"] == g
        got = open_reference_xr(store, engine, group=g)
        assert list(got.data_vars) == ["a"] and got.attrs["name"] == g
        np.testing.assert_array_equal(got["a"].values, np.arange(3) + 10 * k)
        deeper = open_reference_xr(store, engine, group=f"{g}/sub")
        np.testing.assert_array_equal(deeper["b"].values, np.arange(4.0) + 100 * k)
    assert list(open_reference_xr(store, engine).data_vars) == ["top"]


# --- The blosc filter --------------------------------------------------------------------------
BLOSC_WRITER = """
import sys, h5py, hdf5plugin, numpy as np
data = np.repeat(np.arange(600.0), 10).reshape(60, 100)
with h5py.File(sys.argv[1], "w") as f:
    for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
        for shuffle in (0, 1, 2):
            for clevel in (1, 5, 9):
                f.create_dataset(f"{cname}_{shuffle}_{clevel}", data=data, chunks=(20, 50),
                                 **hdf5plugin.Blosc(cname=cname, clevel=clevel, shuffle=shuffle))
    f.create_dataset("ints", data=np.arange(1000, dtype=">i2"), chunks=(300,),
                     **hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=2))
for name, ds in h5py.File(sys.argv[1], "r").items():
    print(name, *ds.id.get_create_plist().get_filter(0)[2])
"""


def test_blosc_client_data_become_the_numcodecs_codec(tmp_path: Path) -> None:
    pytest.importorskip("hdf5plugin")
    path = tmp_path / "blosc.h5"
    # Without HDF5_PLUGIN_PATH: netCDF4 points it at plugins built against its own HDF5.
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    out = subprocess.run(
        [sys.executable, "-c", BLOSC_WRITER, str(path)],
        check=True, timeout=120, env=env, capture_output=True, text=True,
    ).stdout  # fmt: skip
    written = {line.split()[0]: tuple(map(int, line.split()[1:])) for line in out.splitlines()}
    # What the plugin keeps: (filter version, format version, type size, chunk bytes, clevel,
    # shuffle, compressor code)
    assert written["zstd_2_9"][2:] == (8, 20 * 50 * 8, 9, 2, 5)
    r = refs.scan(path)
    cnames = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
    for name, cd in written.items():
        assert r[name].filters == [
            {"id": "blosc", "cname": cnames[cd[6]], "clevel": cd[4], "shuffle": cd[5],
             "blocksize": 0}
        ], name  # fmt: skip
    store = refs.write_parquet(r, tmp_path / "store")
    root = open_zarr_default(store)
    data = np.repeat(np.arange(600.0), 10).reshape(60, 100)
    for name in written:
        want = np.arange(1000, dtype=">i2") if name == "ints" else data
        np.testing.assert_array_equal(root[name][...], want, err_msg=name)
    got = open_reference_xr(store, decode_cf=False)
    np.testing.assert_array_equal(got["lz4_2_9"].values, data)


@pytest.mark.parametrize(
    ("cd", "want"),
    [
        ((2, 2, 8, 4000), ("blosclz", 5, 1)),  # the plugin's defaults for absent values
        ((2, 2, 8, 4000, 7), ("blosclz", 7, 1)),
        ((2, 2, 8, 4000, 7, 0), ("blosclz", 7, 0)),
        ((2, 2, 8, 4000, 7, 2, 5), ("zstd", 7, 2)),
    ],
)
def test_blosc_client_data_of_other_writers(
    cd: tuple[int, ...], want: tuple[str, int, int]
) -> None:
    from dafzarr._core.refs.filters import codec

    got = codec(32001, cd, 8, "f: variable 'v'")
    assert (got["cname"], got["clevel"], got["shuffle"]) == want


@pytest.mark.parametrize("cd", [(2, 2, 8, 4000, 5, 1, 9), (2, 2, 8, 4000, 5, 4, 1), (2, 2)])
def test_blosc_client_data_not_understood_are_refused(cd: tuple[int, ...]) -> None:
    from dafzarr._core.refs.filters import codec

    with pytest.raises(UnsupportedHDF5Error, match=r"variable 'v': unsupported filter blosc"):
        codec(32001, cd, 8, "f: variable 'v'")


# --- Fill values -------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_undefined_fill_value_is_null(tmp_path: Path, engine: str) -> None:
    path = write_undefined_fill(tmp_path / "u.h5")
    r = refs.scan(path)
    assert r["f"].fill_value is None and r["i"].fill_value is None
    store = refs.write_parquet(r, tmp_path / "store")
    with h5py.File(path, "r") as f:
        for name in ("f", "i"):
            want = f[name][:]
            np.testing.assert_array_equal(open_zarr_default(store)[name][:], want)
            got = open_reference_xr(store, engine)[name].values
            np.testing.assert_array_equal(got, want, err_msg=name)  # zeros not masked


@pytest.mark.parametrize("engine", ENGINES)
def test_netcdf_no_fill_variables_keep_their_zeros(tmp_path: Path, engine: str) -> None:
    import xarray as xr

    path = write_nofill_netcdf(tmp_path / "nofill.nc")
    r = refs.scan(path)
    assert r["i"].fill_value is None and r["f"].fill_value is None
    assert r["d"].fill_value == pytest.approx(9.969209968386869e36)
    store = refs.write_parquet(r, tmp_path / "store")
    got = open_reference_xr(store, engine)
    with xr.open_dataset(path) as want:
        for name in ("i", "f", "d"):
            np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)
            assert got[name].dtype == want[name].dtype, name
    assert (got["i"].values == 0).sum() == 3


# --- Types zarr has no data type for ---------------------------------------------------------
def test_unrepresentable_types_are_skipped_with_a_reason(tmp_path: Path) -> None:
    path = write_unrepresentable(tmp_path / "types.h5")
    with pytest.raises(
        UnsupportedHDF5Error, match=r"variable .(clongdouble|longdouble|nothing|records)"
    ):
        refs.scan(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = refs.scan(path, on_unsupported="skip")
    reasons = {
        name: msg
        for name in ("longdouble", "clongdouble", "records", "refs", "ragged", "nothing")
        for msg in (str(w.message) for w in caught)
        if f"variable '{name}'" in msg
    }
    assert "extended-precision" in reasons["longdouble"]
    assert "extended-precision" in reasons["clongdouble"]
    assert "compound" in reasons["records"]
    assert "references" in reasons["refs"]
    assert "variable-length sequences" in reasons["ragged"]
    assert "null dataspace" in reasons["nothing"]
    assert all(issubclass(w.category, UnsupportedVariableWarning) for w in caught)
    assert list(r.variables) == ["ok"]
    assert r.groups[""] == {"ld": 1.5, "lds": [0.0, 1.0], "record": [1, "x"], "ref": None}
    assert r["ok"].attrs == {"cld": [1.0, 2.0]}
    store = refs.write_parquet(r, tmp_path / "store")
    root = open_zarr_default(store)
    np.testing.assert_array_equal(root["ok"][:], np.arange(3))
    assert open_reference_xr(store).attrs["ld"] == 1.5


def test_long_double_attributes_that_a_double_changes_are_named(tmp_path: Path) -> None:
    path = tmp_path / "ld.h5"
    third = np.longdouble(1) / 3  # not a double: rounding it changes it
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=np.arange(3, dtype="f4"))
        f.attrs["exact"] = np.longdouble(0.25)
        f.attrs["third"] = third
        f["v"].attrs["range"] = np.array([third, 2], dtype=np.longdouble)
        f["v"].attrs["z"] = np.clongdouble(third * 1j)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = refs.scan(path)
    messages = sorted(
        str(w.message) for w in caught if issubclass(w.category, AttributeLossWarning)
    )
    assert len(messages) == 3, [str(w.message) for w in caught]
    assert messages[0].startswith(f"{path}: group '/': attribute 'third' is extended")
    assert messages[1].startswith(f"{path}: variable 'v': attribute 'range' is extended")
    assert messages[2].startswith(f"{path}: variable 'v': attribute 'z' is extended")
    assert r.groups[""] == {"exact": 0.25, "third": float(third)}
    assert r["v"].attrs == {"range": [float(third), 2.0], "z": [0.0, float(third)]}
