"""Other readers of the written stores: VirtualiZarr, fsspec with and without fastparquet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

from dafzarr import errors, refs
from dafzarr.errors import InvalidArgumentError

from .refs_common import (
    chunk_refs,
    open_mf,
    open_reference_xr,
    open_zarr_default,
    write_nested_groups,
    write_nofill_netcdf,
    write_undefined_fill,
    write_vlen_strings,
)
from .test_refs_compose import days
from .test_refs_scan import make_cf


def _virtualizarr_version() -> tuple[int, ...]:
    vz = pytest.importorskip("virtualizarr")
    return tuple(int(x) for x in vz.__version__.split(".")[:3] if x.isdigit())


def _open_virtual(store: Path, **kw: Any) -> xr.Dataset:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkParquetParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    with warnings.catch_warnings():
        # zarr warns that numcodecs codecs (zlib, shuffle) are outside the zarr v3 spec
        warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
        # VirtualiZarr reads through fsspec's fastparquet engine, deprecated by pandas >= 3.1
        warnings.filterwarnings("ignore", "The 'fastparquet' engine is deprecated")
        return open_virtual_dataset(
            url=str(store), registry=registry, parser=KerchunkParquetParser(), **kw
        )


def test_virtualizarr_reads_referenced_store(tmp_path: Path) -> None:
    _virtualizarr_version()
    path = make_cf(tmp_path / "cf.nc")
    scanned = refs.scan(path, variables=["tas", "nanfill", "nofill", "big", "fl", "time"])
    store = refs.write_parquet(scanned, tmp_path / "store")
    vds = _open_virtual(store)
    for name in ("tas", "nanfill", "nofill", "big", "fl"):
        manifest = vds[name].data.manifest.dict()
        v = scanned[name]
        want = {
            ".".join(map(str, np.unravel_index(i, v.grid))): (int(v.offset[i]), int(v.size[i]))
            for i in np.flatnonzero(v.offset >= 0).tolist()
        }
        got = {k: (e["offset"], e["length"]) for k, e in manifest.items()}
        assert got == want, name
        assert all(isinstance(e["offset"], int) for e in manifest.values())
        assert {e["path"] for e in manifest.values()} == {path.resolve().as_uri()}


def test_virtualizarr_and_inlined_coordinates(tmp_path: Path) -> None:
    """VirtualiZarr reads inlined chunks from 2.6.1 on; 2.5.1 refuses them explicitly."""
    version = _virtualizarr_version()
    store = tmp_path / "store"
    refs.virtualize(days(tmp_path), store, progress=False)
    if version < (2, 6, 1):
        with pytest.raises(NotImplementedError, match="inlined reference data"):
            _open_virtual(store)
    else:
        vds = _open_virtual(store)
        assert vds.sizes["time"] == 6


CHILD = """
import sys
if {block}:
    sys.modules["fastparquet"] = None  # as if fastparquet were not installed
import warnings
import numpy as np, xarray as xr, zarr
from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem
warnings.filterwarnings("ignore", "The 'fastparquet' engine is deprecated")
root = {root!r}
if {block}:
    try:
        ReferenceFileSystem(fo=root, remote_protocol="file").get_mapper("")["sst/0.0.0"]
    except ImportError:
        print("default engine needs fastparquet")
    fo = LazyReferenceMapper(root, engine="pyarrow")
    fs = ReferenceFileSystem(fo=fo, remote_protocol="file", asynchronous=True)
    store = zarr.storage.FsspecStore(fs, read_only=True)
else:
    import fastparquet  # noqa: F401
    store = ReferenceFileSystem(fo=root, remote_protocol="file").get_mapper("")
ds = xr.open_dataset(store, engine="zarr", zarr_format=2, consolidated=False, decode_cf=False)
np.save(sys.stdout.buffer, ds["sst"].values)
"""


@pytest.mark.parametrize("block", [True, False], ids=["without-fastparquet", "with-fastparquet"])
def test_fsspec_reads_with_and_without_fastparquet(tmp_path: Path, block: bool) -> None:
    if not block:
        pytest.importorskip("fastparquet")
    files = days(tmp_path)
    store = tmp_path / "store"
    refs.virtualize(files, store, progress=False)
    code = textwrap.dedent(CHILD.format(block=block, root=str(store)))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout
    if block:
        marker = b"default engine needs fastparquet\n"
        assert out.startswith(marker)
        out = out[len(marker) :]
    import io

    got = np.load(io.BytesIO(out))
    np.testing.assert_array_equal(got, open_mf(files, decode_cf=False)["sst"].values)


def _manifest_refs(vds: xr.Dataset, name: str) -> dict[str, tuple[int, int]]:
    return {k: (e["offset"], e["length"]) for k, e in vds[name].data.manifest.dict().items()}


def test_virtualizarr_reads_inline_threshold_0_stores_of_real_world_files(tmp_path: Path) -> None:
    """No inlined chunk with ``inline_threshold=0`` for arrays of numbers, whatever their fill
    value (user, default, undefined, no fill); nested groups through the JSON references."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkJSONParser

    _virtualizarr_version()
    for path in (
        write_undefined_fill(tmp_path / "undefined.h5"),
        write_nofill_netcdf(tmp_path / "nofill.nc"),
        make_cf(tmp_path / "cf.nc"),
    ):
        scanned = refs.scan(path)
        store = refs.write_parquet(scanned, tmp_path / f"{path.stem}.refs", inline_threshold=0)
        vds = _open_virtual(store)
        # VirtualiZarr loads dimension coordinates (and 0-d arrays, as their fill value)
        virtual = [n for n, v in scanned.variables.items() if v.shape and n not in vds.coords]
        assert virtual
        for name in virtual:
            assert _manifest_refs(vds, name) == chunk_refs(scanned[name]), (path, name)
    nested = write_nested_groups(tmp_path / "nested.h5")
    scanned = refs.scan(nested)
    out = tmp_path / "nested.json"
    refs.to_kerchunk_json(scanned, out, inline_threshold=0)
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    for group, names in ((None, ["top"]), ("g1", ["a"]), ("g2/sub", ["b"])):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
            vds = open_virtual_dataset(
                url=str(out), registry=registry, parser=KerchunkJSONParser(group=group)
            )
        assert list(vds.data_vars) == names, group
        prefix = f"{group}/" if group else ""
        assert _manifest_refs(vds, names[0]) == chunk_refs(scanned[prefix + names[0]])


# --- References only (inline_threshold=0) --------------------------------------------------------
def write_unreferenceable_netcdf(path: Path, *, group: bool = True) -> Path:
    """A netCDF-4 file whose variables have chunks to reference, next to ones that have none:
    variable-length strings (1-d, 0-d, and, with ``group``, in a group with attributes), a CF
    grid mapping whose 0-d value is never written, and a compact dataset (added with h5py)."""
    import h5py
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "unreferenceable"
        ds.createDimension("x", 3)
        data = ds.createVariable("data", "f4", ("x",), zlib=True, chunksizes=(2,))
        data.grid_mapping = "crs"
        data[:] = [1.5, 2.5, 3.5]
        scalar = ds.createVariable("scalar", "f8", ())
        scalar[()] = 42.0
        crs = ds.createVariable("crs", "i4", ())
        crs.grid_mapping_name = "latitude_longitude"
        names = ds.createVariable("names", str, ("x",))
        names[:] = np.array(["a", "bé", ""], dtype=object)
        label = ds.createVariable("label", str, ())
        label[0] = "hello"
        if group:
            station = ds.createGroup("station")
            station.id = "st-1"
            codes = np.array(["p", "q", "r"], dtype=object)
            station.createVariable("code", str, ("x",))[:] = codes
    with h5py.File(path, "a") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
        f["compact"][...] = np.arange(4, dtype="i2") - 2
    return path


UNREFERENCEABLE = {
    "names": "variable-length strings",
    "label": "variable-length strings",
    "crs": "0-d variable whose value was never written",
    "compact": "compact layout",
}
IN_GROUP = {"station/code": "variable-length strings"}
# The root attribute that records them (documented in docs/guide/refs.rst).
LEFT_OUT_ATTRIBUTE = "dafzarr_variables_left_out"


def _left_out(warned: list[warnings.WarningMessage], path: Path) -> dict[str, str]:
    """``{variable: message}`` of the VariableLeftOutWarnings, each checked to name ``path``."""
    out = {}
    for w in warned:
        assert w.category.__name__ == "VariableLeftOutWarning", w
        assert issubclass(w.category, errors.VariableLeftOutWarning), w
        message = str(w.message)
        assert message.startswith(f"{path}: variable "), message
        out[message.split("'")[1]] = message
    return out


def test_inline_threshold_0_leaves_out_variables_without_chunks(tmp_path: Path) -> None:
    """``inline_threshold=0``: no inlined chunk, so VirtualiZarr 2.5.1 opens the parquet store
    of a file without nested groups, and the JSON references of one with them, group by
    group; each variable that has no chunk to reference is left out with a warning naming
    the file, the variable and why, recorded in the root attributes."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkJSONParser

    _virtualizarr_version()
    path = write_unreferenceable_netcdf(tmp_path / "flat.nc", group=False)
    scanned = refs.scan(path)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        store = refs.write_parquet(scanned, tmp_path / "flat.refs", inline_threshold=0)
    messages = _left_out(warned, path)
    assert sorted(messages) == sorted(UNREFERENCEABLE)
    for name, why in UNREFERENCEABLE.items():
        assert why in messages[name] and "inline_threshold=None" in messages[name], name
    vds = _open_virtual(store)
    assert set(vds.variables) == {"data", "scalar"}
    for name in ("data", "scalar"):
        assert _manifest_refs(vds, name) == chunk_refs(scanned[name])
    recorded = vds.attrs[LEFT_OUT_ATTRIBUTE]
    assert sorted(recorded) == sorted(UNREFERENCEABLE)
    assert all(why in recorded[n] for n, why in UNREFERENCEABLE.items())
    assert vds.attrs["title"] == "unreferenceable"
    # the scan itself is not changed
    assert set(scanned.variables) == {"data", "scalar", *UNREFERENCEABLE}
    assert LEFT_OUT_ATTRIBUTE not in scanned.groups[""]

    # JSON: no base64 chunk; a group that held only strings keeps its attributes
    path = write_unreferenceable_netcdf(tmp_path / "mixed.nc")
    scanned = refs.scan(path)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        doc = refs.to_kerchunk_json(scanned, tmp_path / "mixed.json", inline_threshold=0)
    assert sorted(_left_out(warned, path)) == sorted({**UNREFERENCEABLE, **IN_GROUP})
    assert not [k for k, v in doc["refs"].items() if isinstance(v, str) and "/.z" not in k
                and not k.startswith(".z")]  # fmt: skip
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
        root = open_virtual_dataset(
            url=str(tmp_path / "mixed.json"), registry=registry, parser=KerchunkJSONParser()
        )
        station = open_virtual_dataset(
            url=str(tmp_path / "mixed.json"), registry=registry,
            parser=KerchunkJSONParser(group="station"),
        )  # fmt: skip
    assert set(root.variables) == {"data", "scalar"}
    assert _manifest_refs(root, "data") == chunk_refs(scanned["data"])
    assert dict(station.attrs) == {"id": "st-1"} and not station.variables


def test_default_threshold_keeps_every_variable_for_xarray_and_fsspec(tmp_path: Path) -> None:
    """``inline_threshold=None`` (the default) and ``N > 0`` inline what has no chunk to
    reference, as always: xarray over fsspec and zarr-python read every variable, silently."""
    path = write_unreferenceable_netcdf(tmp_path / "mixed.nc")
    scanned = refs.scan(path)
    for threshold in ({}, {"inline_threshold": None}, {"inline_threshold": 64}):
        store = tmp_path / f"store-{len(threshold)}-{threshold.get('inline_threshold')}"
        refs.write_parquet(scanned, store, **threshold)  # any warning fails the test
        ds = open_reference_xr(store, decode_cf=False)
        assert set(ds.variables) == {"data", "scalar", "crs", "names", "label", "compact"}
        np.testing.assert_array_equal(ds["data"].values, [1.5, 2.5, 3.5])
        assert [str(s) for s in ds["names"].values] == ["a", "bé", ""]
        assert str(ds["label"].values) == "hello"
        np.testing.assert_array_equal(ds["compact"].values, np.arange(4, dtype="i2") - 2)
        assert float(ds["scalar"]) == 42.0
        assert ds["crs"].attrs["grid_mapping_name"] == "latitude_longitude"
        assert LEFT_OUT_ATTRIBUTE not in ds.attrs
        station = open_reference_xr(store, group="station")
        assert [str(s) for s in station["code"].values] == ["p", "q", "r"]
        assert open_zarr_default(store)["station"].attrs["id"] == "st-1"


@pytest.mark.parametrize("threshold", [-1, True, 1.5, "0"])
def test_inline_threshold_must_be_none_or_a_count_of_bytes(
    tmp_path: Path, threshold: object
) -> None:
    path = write_unreferenceable_netcdf(tmp_path / "mixed.nc")
    scanned = refs.scan(path)
    with pytest.raises(InvalidArgumentError, match="inline_threshold must be None or"):
        refs.write_parquet(scanned, tmp_path / "store", inline_threshold=threshold)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="inline_threshold must be None or"):
        refs.to_kerchunk_json(scanned, inline_threshold=threshold)  # type: ignore[arg-type]
    assert not (tmp_path / "store").exists()


def test_h5py_strings_left_out_and_their_group_attributes_kept(tmp_path: Path) -> None:
    """NWB/h5ad-shaped strings (h5py): with ``inline_threshold=0`` the strings are left out,
    the numbers referenced, and the h5ad dataframe group that held only its index keeps its
    attributes (zarr-python and xarray read them)."""
    path = write_vlen_strings(tmp_path / "s.h5")
    scanned = refs.scan(path)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        store = refs.write_parquet(scanned, tmp_path / "s.refs", inline_threshold=0)
    strings = {"session_description", "ascii0", "ascii1", "obs/_index"}
    assert set(_left_out(warned, path)) == strings
    root = open_zarr_default(store)
    assert set(root.array_keys()) == {"x"} and set(root.group_keys()) == {"obs"}
    assert set(root.attrs[LEFT_OUT_ATTRIBUTE]) == strings
    assert root["obs"].attrs["encoding-type"] == "dataframe"
    assert root.attrs["neurodata_type"] == "NWBFile"
    np.testing.assert_array_equal(open_reference_xr(store)["x"].values, np.arange(6.0))


def test_virtualizarr_parquet_parser_and_nested_groups(tmp_path: Path) -> None:
    """Pins the cause of a reader limitation (docs/guide/refs.rst, *Reader notes*):
    VirtualiZarr 2.5.1's parquet parser lists keys through fsspec's ``LazyReferenceMapper``,
    which takes every nested group for an array. The store is valid (zarr-python reads every
    group; JSON references of the same scan open in VirtualiZarr level by level, see above).
    When this test fails, fsspec or VirtualiZarr lifted the limitation: update
    docs/guide/refs.rst."""
    from fsspec.implementations.reference import LazyReferenceMapper
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkParquetParser

    _virtualizarr_version()
    scanned = refs.scan(write_nested_groups(tmp_path / "nested.h5"))
    store = refs.write_parquet(scanned, tmp_path / "nested.refs", inline_threshold=0)
    group_as_array = r"'g[12](/sub)?/\.zarray'"
    with pytest.raises(KeyError, match=group_as_array):
        list(LazyReferenceMapper(str(store), engine="pyarrow").keys())
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    for group in (None, "g1"):
        with pytest.raises(KeyError, match=group_as_array), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The 'fastparquet' engine is deprecated")
            open_virtual_dataset(
                url=str(store), registry=registry, parser=KerchunkParquetParser(group=group)
            )
    root = open_zarr_default(store)
    for name in ("top", "g1/a", "g1/sub/b", "g2/a", "g2/sub/b"):
        np.testing.assert_array_equal(root[name][:], _h5py_read(scanned.path, name))


def test_one_parquet_store_per_group_opens_in_virtualizarr(tmp_path: Path) -> None:
    """``write_parquet(group=...)``: the arrays directly in one group as a flat store, which
    VirtualiZarr 2.5.1's parquet parser opens (no nested group for its listing to trip on),
    with the scan's references and the group's attributes; values equal h5py's."""
    _virtualizarr_version()
    scanned = refs.scan(write_nested_groups(tmp_path / "nested.h5"))
    expected = {"": ["top"], "g1": ["a"], "g1/sub": ["b"], "g2": ["a"], "/g2/sub/": ["b"]}
    for group, names in expected.items():
        out = tmp_path / f"{group.strip('/').replace('/', '_') or 'root'}.refs"
        store = refs.write_parquet(scanned, out, inline_threshold=0, group=group)
        vds = _open_virtual(store)
        assert sorted(vds.variables) == names, group
        prefix = group.strip("/") + "/" if group.strip("/") else ""
        assert _manifest_refs(vds, names[0]) == chunk_refs(scanned[prefix + names[0]])
        if group.strip("/") in ("g1", "g2"):
            assert vds.attrs["name"] == group
        ds = open_reference_xr(store)
        np.testing.assert_array_equal(
            ds[names[0]].values, _h5py_read(scanned.path, prefix + names[0])
        )
    with pytest.raises(InvalidArgumentError, match=r"no group 'g3' among .*'g1/sub'"):
        refs.write_parquet(scanned, tmp_path / "bad.refs", group="g3")
    assert not (tmp_path / "bad.refs").exists()


def _h5py_read(path: str, name: str) -> np.ndarray:
    """``name``'s values as h5py reads them from ``path``."""
    import h5py

    with h5py.File(path, "r") as f:
        return np.asarray(f[name][()])


def test_a_composed_dataset_is_written_as_composed_or_refused(tmp_path: Path) -> None:
    """``virtualize`` composes coordinates on request: asking ``write_parquet`` for
    references only writes their values into the store's ``values.bin`` and references them
    there (what VirtualiZarr 2.5.1 reads); a JSON file has no such file, and inlining a
    composed dataset's small chunks is for ``virtualize``: both are errors."""
    files = days(tmp_path)
    vds = refs.virtualize(files, None, progress=False)
    with pytest.raises(InvalidArgumentError, match=r"references only.*'time'.*values\.bin"):
        refs.to_kerchunk_json(vds, inline_threshold=0)
    with pytest.raises(InvalidArgumentError, match="applies to a scanned file"):
        refs.to_kerchunk_json(vds, inline_threshold=10)
    assert vds.arrays["time"].raw  # the written store references them; vds keeps them
    store = refs.write_parquet(vds, tmp_path / "refs-only", inline_threshold=0)
    assert vds.arrays["time"].raw and (store / "values.bin").is_file()
    got = _open_virtual(store, decode_times=False)  # loads time through its references
    want = np.concatenate([_h5py_read(str(f), "time") for f in files])
    np.testing.assert_array_equal(got["time"].values, want)
    refs.write_parquet(vds, tmp_path / "store", inline_threshold=None)
    assert not (tmp_path / "store" / "values.bin").exists()
    # one file: its time coordinate (chunks of 512) can be referenced
    referenced = refs.virtualize(files[:1], None, progress=False, inline_coords=False)
    store = refs.write_parquet(referenced, tmp_path / "referenced", inline_threshold=0)
    assert _open_virtual(store).sizes["time"] == 2


def test_virtualizarr_reads_the_goes_fixture_references_only(
    fixture_set: Callable[[str], Path], tmp_path: Path
) -> None:
    """A GOES-R product (real-world NetCDF4): its 0-d containers never written (the grid
    mapping among them) are left out with ``inline_threshold=0``, and VirtualiZarr 2.5.1 opens
    the rest with the scan's references. It cannot read a 0-d chunk of kerchunk references
    (its manifest gets the grid (1,)), which decoding the 0-d time ``t`` does at open: that
    needs ``decode_times=False`` (docs/guide/refs.rst, *Reader notes*)."""
    path = fixture_set("netcdf") / "20171025_2056.Cloud_Top_Height.nc"
    _virtualizarr_version()
    scanned = refs.scan(path)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        store = refs.write_parquet(scanned, tmp_path / "goes.refs", inline_threshold=0)
    never_written = {n for n, v in scanned.variables.items() if not v.shape and v.offset[0] < 0}
    assert "goes_imager_projection" in never_written
    assert set(_left_out(warned, path)) == never_written
    with pytest.raises(AttributeError, match="has no attribute 'decode'"):
        _open_virtual(store)
    vds = _open_virtual(store, decode_times=False)
    assert set(vds.variables) == set(scanned.variables) - never_written
    assert sorted(vds.attrs[LEFT_OUT_ATTRIBUTE]) == sorted(never_written)
    virtual = [n for n in vds.variables if hasattr(vds[n].data, "manifest")]
    assert "t" in virtual and len(virtual) == len(vds.variables) - 2  # x, y loaded
    for name in virtual:
        assert _manifest_refs(vds, name) == chunk_refs(scanned[name]), name


def test_virtualize_with_inline_threshold_0_writes_references_only(tmp_path: Path) -> None:
    """A collection composed with ``inline_threshold=0``: coordinates referenced, not inlined;
    a variable with no chunk to reference in the files is left out once (one warning, the
    root attribute); VirtualiZarr 2.5.1 opens the store with the scan's references."""
    import netCDF4

    _virtualizarr_version()
    files = []
    for i in range(3):  # daily files whose time coordinate is chunked one step per chunk
        files.append(tmp_path / f"day{i}.nc")
        with netCDF4.Dataset(files[-1], "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("x", 4)
            t = ds.createVariable("time", "f8", ("time",), chunksizes=(1,))
            t.units = "days since 2000-01-01"
            t[:] = [2 * i, 2 * i + 1]
            sst = ds.createVariable("sst", "f4", ("time", "x"), zlib=True, chunksizes=(1, 4))
            sst[:] = np.arange(8, dtype="f4").reshape(2, 4) + 10 * i
            ds.createVariable("station", str, ())[0] = "st-1"
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        vds = refs.virtualize(files, tmp_path / "store", inline_threshold=0, progress=False)
    assert [str(w.message).split("'")[1] for w in warned] == ["station"]
    assert issubclass(warned[0].category, errors.VariableLeftOutWarning)
    assert "variable-length strings" in str(warned[0].message)
    assert not any(a.raw for a in vds.arrays.values())  # nothing inlined, time included
    assert "station" not in vds.arrays
    got = _open_virtual(tmp_path / "store", decode_times=False)
    assert set(got.variables) == set(vds.arrays)
    assert "variable-length strings" in got.attrs[LEFT_OUT_ATTRIBUTE]["station"]
    assert _manifest_refs(got, "sst") == {
        k: (int(o), int(n)) for k, o, n in _composed_refs(vds, "sst")
    }
    # the default still inlines the strings and the coordinates for fsspec and xarray
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.VariableLeftOutWarning)
        vds = refs.virtualize(files, tmp_path / "default", progress=False)
    assert vds.arrays["station"].raw and vds.arrays["time"].raw


def _composed_refs(vds: Any, name: str) -> list[tuple[str, int, int]]:
    a = vds.arrays[name]
    grid = [-(-s // c) for s, c in zip(a.zarray["shape"], a.zarray["chunks"], strict=True)]
    out = []
    for flat in np.flatnonzero(a.path_index >= 0):
        key = ".".join(str(int(i)) for i in np.unravel_index(flat, grid))
        out.append((key, a.offset[flat], a.size[flat]))
    return out


def test_inline_threshold_0_with_composed_coordinates(tmp_path: Path) -> None:
    """``inline_coords=True`` with references only: the coordinates' composed values go
    into ``values.bin``, referenced, and VirtualiZarr reads them as the files hold them."""
    files = days(tmp_path, 2)
    vds = refs.virtualize(
        files, tmp_path / "store", inline_threshold=0, inline_coords=True, progress=False
    )
    assert vds.arrays["time"].raw
    got = _open_virtual(tmp_path / "store", decode_times=False, loadable_variables=["time"])
    want = np.concatenate([_h5py_read(str(f), "time") for f in files])
    np.testing.assert_array_equal(got["time"].values, want)
    with pytest.raises(InvalidArgumentError, match="inline_threshold must be None or"):
        refs.virtualize(files, None, inline_threshold=-1, progress=False)
