"""Check functions shared by the reference-store tests (readers, comparisons, peers)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
import zarr
from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem


@contextlib.contextmanager
def pandas_missing_chunk_workaround() -> Iterator[None]:
    """fsspec under pandas >= 3 fails on null ``path`` rows; the documented reader workaround."""
    if int(pd.__version__.split(".")[0]) < 3:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the option itself is deprecated in pandas 3
        old = pd.get_option("future.infer_string")
        pd.set_option("future.infer_string", False)
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pd.set_option("future.infer_string", old)


@contextlib.contextmanager
def fastparquet_deprecation_ignored() -> Iterator[None]:
    """pandas >= 3.1 deprecates its fastparquet engine, which fsspec uses by default."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The 'fastparquet' engine is deprecated")
        yield


def open_store(root: Path, engine: str = "pyarrow") -> zarr.storage.FsspecStore:
    """The reference store as a read-only zarr store, through fsspec's lazy parquet mapper."""
    mapper = LazyReferenceMapper(str(root), engine=engine)  # type: ignore[arg-type]
    fs = ReferenceFileSystem(fo=mapper, remote_protocol="file", asynchronous=True)
    return zarr.storage.FsspecStore(fs, read_only=True)


def open_refs(
    root: Path, *, engine: str = "pyarrow", group: str | None = None, **kw: Any
) -> xr.Dataset:
    """xarray over the reference store (zarr v2, not consolidated)."""
    return xr.open_dataset(
        open_store(root, engine),
        engine="zarr",
        zarr_format=2,
        consolidated=False,
        group=group,
        **kw,
    )


def assert_same_values(got: xr.Dataset, want: xr.Dataset, names: list[str] | None = None) -> None:
    """Every variable of ``want`` (or ``names``) equal in ``got``: values, dtype, NaN-aware."""
    for name in names or list(want.variables):
        a = np.asarray(got[name].values)
        b = np.asarray(want[name].values)
        assert a.shape == b.shape, (name, a.shape, b.shape)
        if b.dtype.kind in "fc":
            assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
            np.testing.assert_array_equal(a, b, err_msg=name)
        elif b.dtype.kind in "OUT":
            assert [str(x) for x in a.ravel()] == [str(x) for x in b.ravel()], name
        else:
            assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
            np.testing.assert_array_equal(a, b, err_msg=name)


def open_mf(files: list[Path], **kw: Any) -> xr.Dataset:
    """The originals through xarray: concatenated along time, other variables from one file."""
    return xr.open_mfdataset(
        files, combine="by_coords", data_vars="minimal", coords="minimal", compat="override", **kw
    ).load()


def kerchunk_refs(path: Path) -> dict[str, Any]:
    """kerchunk's references for one file, without inlining."""
    from kerchunk.hdf import SingleHdf5ToZarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kerchunk warns about variables it drops
        return dict(SingleHdf5ToZarr(str(path), inline_threshold=0).translate()["refs"])


def chunk_refs(var: Any) -> dict[str, tuple[int, int]]:
    """``{"i.j": (offset, size)}`` of a scanned variable's allocated chunks."""
    out = {}
    grid = var.grid
    for i in np.flatnonzero(var.offset >= 0).tolist():
        key = ".".join(str(int(c)) for c in np.unravel_index(i, grid))
        out[key] = (int(var.offset[i]), int(var.size[i]))
    return out


# --- Readers with their defaults ---------------------------------------------------------------
def open_zarr_default(root: Path) -> zarr.Group:
    """The store through zarr-python with its defaults (format and consolidation detected)."""
    return zarr.open_group(open_store(root), mode="r")


def open_reference_xr(
    root: Path, engine: str = "pyarrow", *, group: str | None = None, **kw: Any
) -> xr.Dataset:
    """xarray over fsspec's ``reference://`` file system, with xarray's defaults otherwise.

    fsspec opens a parquet store given as a path with fastparquet; the pyarrow engine is
    chosen by handing fsspec a ``LazyReferenceMapper`` of its own.
    """
    fo: Any = (
        str(root) if engine == "fastparquet" else LazyReferenceMapper(str(root), engine="pyarrow")
    )
    with pandas_missing_chunk_workaround(), fastparquet_deprecation_ignored():
        return xr.open_dataset(
            "reference://",
            engine="zarr",
            group=group,
            storage_options={"fo": fo, "remote_protocol": "file"},
            **kw,
        ).load()


# --- Files as the field's tools write them ----------------------------------------------------
def write_vlen_strings(path: Path) -> Path:
    """Variable-length strings as NWB, PyTables and h5ad write them, and one number array.

    Datasets: 0-d and 1-d UTF-8 (``session_description``, ``obs/_index``), 0-d and 1-d ASCII
    (``ascii0``, ``ascii1``); attributes: scalar and array vlen strings on the root, a group
    and a dataset, an empty array of them (h5ad's empty ``column-order``).
    """
    import h5py

    utf8, ascii_ = h5py.string_dtype("utf-8"), h5py.string_dtype("ascii")
    with h5py.File(path, "w") as f:
        f.attrs["namespace"] = "core"  # NWB: scalar vlen strings
        f.attrs["neurodata_type"] = "NWBFile"
        f.attrs["nwb_version"] = np.array(["2.8.0", "x"], dtype=utf8)
        f.create_dataset("session_description", data="a séance", dtype=utf8)
        f.create_dataset("ascii0", data=b"plain", dtype=ascii_)
        f.create_dataset("ascii1", data=[b"a", b"bc"], dtype=ascii_)
        obs = f.create_group("obs")  # h5ad's dataframe
        obs.attrs["encoding-type"] = "dataframe"
        obs.attrs["encoding-version"] = "0.2.0"
        obs.attrs["_index"] = "_index"
        obs.attrs["column-order"] = np.array([], dtype=utf8)
        idx = obs.create_dataset("_index", data=["cell-1", "cellé-2", ""], dtype=utf8)
        idx.attrs["encoding-type"] = "string-array"
        x = f.create_dataset("x", data=np.arange(6.0), chunks=(3,))
        x.attrs["unit"] = np.array(["volt"], dtype=utf8)
    return path


def write_non_utf8_strings(path: Path) -> Path:
    """One ASCII-tagged vlen string dataset holding Latin-1 bytes, next to a number array."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("latin1", data=[b"na\xefve"], dtype=h5py.string_dtype("ascii"))
        f.create_dataset("x", data=np.arange(4, dtype="i4"))
    return path


def write_nested_groups(path: Path) -> Path:
    """Arrays at depth 0..2 in sibling groups that each hold a subgroup (h5ad's, NWB's shape)."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("top", data=np.arange(2, dtype="i4"))
        for k, g in enumerate(("g1", "g2")):
            f.create_dataset(f"{g}/a", data=np.arange(3, dtype="i8") + 10 * k)
            f.create_dataset(f"{g}/sub/b", data=np.arange(4.0) + 100 * k, chunks=(2,))
            f[g].attrs["name"] = g
    return path


def _set_undefined_fill(dcpl: Any) -> None:
    """``H5Pset_fill_value(dcpl, type, NULL)``, which h5py's wrapper does not pass on: called
    in the HDF5 library h5py loaded (found in this process' mappings)."""
    import ctypes

    import h5py

    with open("/proc/self/maps", encoding="utf-8") as maps:
        libs = {line.split()[-1] for line in maps if "/libhdf5" in line and ".so" in line}
    path = next(p for p in sorted(libs) if "libhdf5_hl" not in p)
    fn = ctypes.CDLL(path).H5Pset_fill_value
    fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    assert fn(dcpl.id, h5py.h5t.NATIVE_FLOAT.id, None) >= 0
    assert dcpl.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED


def write_undefined_fill(path: Path) -> Path:
    """Chunked datasets with an undefined fill value (``H5D_FILL_VALUE_UNDEFINED``), half
    written, and one with fill time ``H5D_FILL_TIME_NEVER``."""
    import h5py

    with h5py.File(path, "w") as f:
        for name, dtype, htype in (
            ("f", "f4", h5py.h5t.IEEE_F32LE),
            ("i", "i2", h5py.h5t.STD_I16LE),
        ):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((4,))
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_INCR)
            if name == "f":
                _set_undefined_fill(dcpl)
            space = h5py.h5s.create_simple((8,))
            dsid = h5py.h5d.create(f.id, name.encode(), htype, space, dcpl=dcpl)
            h5py.Dataset(dsid)[:4] = np.array([0, 1, 0, 2], dtype=dtype)
    return path


def write_nofill_netcdf(path: Path) -> Path:
    """netCDF-4 variables written with ``fill_value=False`` (no fill) holding real zeros."""
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 6)
        i = ds.createVariable("i", "i4", ("x",), fill_value=False, chunksizes=(3,))
        i[:] = [0, 1, 0, 2, 0, 3]
        f = ds.createVariable("f", "f4", ("x",), fill_value=False)
        f[:] = [0, 1, 0, 2, 0, 3]
        d = ds.createVariable("d", "f8", ("x",))  # netCDF's default fill: still a fill value
        d[:] = [0, 1, 0, 2, 0, 3]
    return path


def write_unrepresentable(path: Path) -> Path:
    """Arrays zarr has no data type for, next to ones it has, and attributes of such types."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("ok", data=np.arange(3, dtype="i4"))
        f.create_dataset("longdouble", data=np.arange(3, dtype=np.longdouble))
        f.create_dataset("clongdouble", data=np.arange(3, dtype=np.clongdouble))
        rec = np.dtype([("n", "i4"), ("name", h5py.string_dtype())])
        f.create_dataset("records", data=np.array([(1, "x"), (2, "yy")], dtype=rec))
        f.create_dataset("refs", data=[f["ok"].ref], dtype=h5py.ref_dtype)
        f.create_dataset("ragged", data=np.array([np.arange(2), np.arange(3)], dtype=object),
                         dtype=h5py.vlen_dtype("i4"))  # fmt: skip
        f.create_dataset("nothing", data=h5py.Empty("f4"))  # a null dataspace
        f.attrs["ld"] = np.longdouble(1.5)
        f.attrs["lds"] = np.arange(2, dtype=np.longdouble)
        f.attrs["record"] = np.array([(1, "x")], dtype=rec)
        f.attrs["ref"] = f["ok"].ref
        f["ok"].attrs["cld"] = np.clongdouble(1 + 2j)
    return path


def write_day_of_seconds(
    path: Path, day: int, *, hours: range = range(0, 24, 6), dtype: str = "f8"
) -> Path:
    """One daily file as ARM and instrument archives write them: ``time`` in "seconds since"
    the file's own day (2020-01-<day>), a 1-D and a 2-D variable along it."""
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("height", 3)
        t = ds.createVariable("time", dtype, ("time",))
        t.units = f"seconds since 2020-01-{day:02d} 00:00:00"
        t.calendar = "gregorian"
        t[:] = np.array([3600 * h for h in hours], dtype=dtype)
        temp = ds.createVariable("temp", "f4", ("time",), chunksizes=(1,))
        temp[:] = np.arange(len(hours), dtype="f4") + 10 * day
        rh = ds.createVariable("rh", "f4", ("time", "height"), chunksizes=(1, 3), zlib=True)
        rh[:] = np.arange(3 * len(hours), dtype="f4").reshape(-1, 3) + 100 * day
    return path
