"""Variables whose stored bytes are not the values HDF5 reads: refused, or skipped on request.

HDF5 converts on every read (h5py's and netCDF's included); a byte-range reference hands
readers the stored bytes as they are. Types with padding bits, non-IEEE floats, space-padded
strings, complex parts in another order and data stored in external files would read back as
wrong numbers, so the scanner refuses them, naming the file, variable and reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

from dafzarr import _h5chunks, refs
from dafzarr._core.examples import write_daily_netcdf
from dafzarr.errors import UnsupportedHDF5Error, UnsupportedVariableWarning

from .refs_common import assert_same_values, open_refs

N = 10


# --- Generators ------------------------------------------------------------------------------
def int12(f: h5py.File) -> Any:
    """A 12-bit signed integer at bit offset 2 of 16 bits."""
    t = h5py.h5t.STD_I16LE.copy()
    t.set_precision(12)
    t.set_offset(2)
    return t


def put(f: h5py.File, name: str, tid: Any, data: np.ndarray, layout: str, raw: bool) -> None:
    """A dataset of file type ``tid`` in ``layout``; ``raw``: ``data`` are the stored bytes."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if layout == "compact":
        dcpl.set_layout(h5py.h5d.COMPACT)
    elif layout == "chunked":
        dcpl.set_chunk((N // 2,))
    dsid = h5py.h5d.create(f.id, name.encode(), tid, h5py.h5s.create_simple((N,)), dcpl=dcpl)
    if raw:
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=tid)
    else:
        h5py.Dataset(dsid)[...] = data


def _int12_committed(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = int12(f)
    t.commit(f.id, b"int12_t")  # a named type in the file, used by the dataset
    return t, np.array([-2048, -1, 0, 1, 2047, 5, 6, 7, 8, 9], "i2"), False


def _uint10_be(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.STD_U16BE.copy()
    t.set_precision(10)
    t.set_offset(3)
    return t, np.arange(N, dtype="u2") * 100, False


def _float_e11(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.IEEE_F32LE.copy()  # 4 bytes: 11-bit exponent, 20-bit mantissa
    t.set_fields(31, 20, 11, 0, 20)
    t.set_ebias(1023)
    return t, np.linspace(-3, 3, N), False


def _enum12(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.enum_create(int12(f))
    t.enum_insert(b"calm", 0)
    t.enum_insert(b"storm", -5)
    return t, np.array([0, -5] * (N // 2), "i2"), False


def _bitfield12(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.STD_B16LE.copy()
    # h5py's bitfield class has no setters of its own; HDF5's are the atomic type's.
    h5py.h5t.TypeAtomicID.set_precision(t, 12)
    h5py.h5t.TypeAtomicID.set_offset(t, 2)
    return t, (np.arange(N, dtype="<u2") * 100) << 2, True


def _spacepad(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.C_S1.copy()
    t.set_size(6)
    t.set_strpad(h5py.h5t.STR_SPACEPAD)
    return t, np.array([b"ab    ", b"abcdef"] * (N // 2), "S6"), True


def _complex_swapped(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    t = h5py.h5t.create(h5py.h5t.COMPOUND, 8)
    t.insert(b"r", 4, h5py.h5t.IEEE_F32LE)  # h5py reads it as complex64, real part second
    t.insert(b"i", 0, h5py.h5t.IEEE_F32LE)
    return t, (np.arange(N) + 2j).astype("c8"), False


ODD: dict[str, tuple[Callable[[h5py.File], tuple[Any, np.ndarray, bool]], str]] = {
    "int12": (
        lambda f: (int12(f), np.array([-2048, -1, 0, 1, 2047, 5, 6, 7, 8, 9], "i2"), False),
        r"12-bit integer at bit offset 2 in 2 byte\(s\)",
    ),
    "int12_committed": (_int12_committed, r"12-bit integer at bit offset 2"),
    "uint10_be": (_uint10_be, r"10-bit integer at bit offset 3"),
    "float_e11": (_float_e11, r"non-IEEE 4-byte floating-point format .*11-bit exponent"),
    "enum12": (_enum12, r"12-bit integer at bit offset 2"),
    "bitfield12": (_bitfield12, r"12-bit bitfield at bit offset 2"),
    "spacepad": (_spacepad, r"fixed-length strings padded with spaces \(H5T_STR_SPACEPAD\)"),
    "complex_swapped": (_complex_swapped, r"compound read as complex64 .*r at byte 4"),
}


def make_file(path: Path, case: str, layout: str) -> Path:
    """Ordinary variables (chunked + gzip, contiguous) and one variable ``odd`` of the case."""
    with h5py.File(path, "w") as f:
        f.create_dataset("temp", data=np.linspace(0, 1, 24, dtype="f4").reshape(4, 6),
                         chunks=(2, 3), compression="gzip")  # fmt: skip
        f.create_dataset("count", data=np.arange(7, dtype=">i4"))
        if case == "external":
            raw = path.with_suffix(".bin")
            raw.write_bytes(b"\xff" * 16 + np.arange(N, dtype="<f8").tobytes())
            f.create_dataset("odd", shape=(N,), dtype="<f8", external=[(raw.name, 16, 8 * N)])
        else:
            build, _ = ODD[case]
            tid, data, raw_write = build(f)
            put(f, "odd", tid, data, layout, raw_write)
    return path


def assert_rest_reads_back(path: Path, r: refs.ScanResult, store_dir: Path) -> None:
    """The variables that were scanned read back through fsspec + xarray as h5py reads them."""
    got = open_refs(refs.write_parquet(r, store_dir), decode_cf=False).load()
    with h5py.File(path, "r") as f:
        for name in r.variables:
            np.testing.assert_array_equal(got[name].values, f[name][()], err_msg=name)
            assert got[name].dtype == f[name].dtype.newbyteorder("="), name


# --- Refused in references, skipped on request -----------------------------------------------
CASES = [(c, lay) for c in ODD for lay in ("contiguous", "chunked")] + [("external", "contiguous")]


@pytest.mark.parametrize(("case", "layout"), CASES)
def test_refused_then_skipped(tmp_path: Path, case: str, layout: str) -> None:
    path = make_file(tmp_path / f"{case}.h5", case, layout)
    reason = (
        r"its data are stored outside the file, in 'external.bin'"
        if case == "external"
        else ODD[case][1]
    )
    with pytest.raises(
        UnsupportedHDF5Error, match=f"^{re.escape(str(path))}: variable 'odd': {reason}"
    ):
        refs.scan(path)
    with pytest.warns(UnsupportedVariableWarning, match=f"skipped: {path}: variable 'odd'"):
        r = refs.scan(path, on_unsupported="skip")
    assert set(r.variables) == {"temp", "count"}
    assert_rest_reads_back(path, r, tmp_path / "store")


@pytest.mark.parametrize("case", [c for c in ODD if c != "bitfield12"])
def test_compact_data_are_read_through_hdf5(tmp_path: Path, case: str) -> None:
    """Compact data are read (HDF5 converts them) and inlined: exact, so not refused."""
    path = make_file(tmp_path / f"{case}.h5", case, "compact")
    r = refs.scan(path)
    assert r["odd"].layout == "compact"
    got = open_refs(refs.write_parquet(r, tmp_path / "store"), decode_cf=False).load()
    with h5py.File(path, "r") as f:
        want = f["odd"][()]
    if want.dtype.kind == "S":
        assert [bytes(x) for x in got["odd"].values] == list(want)
    else:
        np.testing.assert_array_equal(got["odd"].values, want)
        assert got["odd"].dtype == want.dtype.newbyteorder("=")


def _long_double(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    return h5py.h5t.NATIVE_LDOUBLE, np.linspace(-3, 3, N).astype(np.longdouble), False


def _complex_half(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    return h5py.h5t.COMPLEX_IEEE_F16LE, np.zeros(4 * N, "u1"), True


def _datetime(f: h5py.File) -> tuple[Any, np.ndarray, bool]:
    dt = h5py.opaque_dtype(np.dtype("<M8[s]"))
    return h5py.h5t.py_create(dt), np.arange(N, dtype="<i8").view("u1"), True


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (_long_double, r"extended-precision type float128 .* has no zarr data type"),
        (_complex_half, r"data type without a numpy equivalent"),
        (_datetime, r"opaque HDF5 type \(h5py's encoding of numpy datetime64\[s\]\)"),
    ],
)
@pytest.mark.parametrize("layout", ["contiguous", "chunked", "compact"])
def test_types_without_a_zarr_dtype_are_refused(
    tmp_path: Path, build: Callable[[h5py.File], tuple[Any, np.ndarray, bool]], reason: str,
    layout: str,
) -> None:  # fmt: skip
    if build is _complex_half and not hasattr(h5py.h5t, "COMPLEX_IEEE_F16LE"):
        pytest.skip("HDF5 < 2.0 has no complex class")
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("temp", data=np.arange(6.0), chunks=(3,))
        tid, data, raw_write = build(f)
        put(f, "odd", tid, data, layout, raw_write)
    with pytest.raises(
        UnsupportedHDF5Error, match=f"^{re.escape(str(path))}: variable 'odd': {reason}"
    ):
        refs.scan(path)
    with pytest.warns(UnsupportedVariableWarning):
        r = refs.scan(path, on_unsupported="skip")
    assert list(r.variables) == ["temp"]
    assert_rest_reads_back(path, r, tmp_path / "store")


# --- What is referenced as it is -------------------------------------------------------------
@pytest.mark.parametrize(
    ("tid", "values", "dtype"),
    [
        ("IEEE_F16LE", np.linspace(-3, 3, N), "<f2"),
        ("IEEE_F16BE", np.linspace(-3, 3, N), ">f2"),
        ("IEEE_F64BE", np.linspace(-3, 3, N), ">f8"),
        ("STD_I16BE", np.arange(N) - 5, ">i2"),
        ("STD_U64BE", np.arange(N) * 2**40, ">u8"),
        ("STD_B8LE", np.arange(N), "|u1"),
        ("STD_B16BE", np.arange(N) * 1000, ">u2"),
        ("COMPLEX_IEEE_F32LE", np.arange(N) + 2j, "<c8"),
        ("COMPLEX_IEEE_F64BE", np.arange(N) - 1j, ">c16"),
    ],
)
@pytest.mark.parametrize("layout", ["contiguous", "chunked"])
def test_standard_types_keep_their_byte_order(
    tmp_path: Path, tid: str, values: np.ndarray, dtype: str, layout: str
) -> None:
    if not hasattr(h5py.h5t, tid):
        pytest.skip(f"this HDF5 has no {tid}")
    t = getattr(h5py.h5t, tid)
    path = tmp_path / "std.h5"
    with h5py.File(path, "w") as f:
        # the stored bytes are numpy's encoding of the dtype (written as such, no conversion)
        put(f, "v", t, np.asarray(values).astype(dtype).view("u1"), layout, True)
    assert _h5chunks.storage_problem(h5py.File(path, "r")["v"].id) is None
    r = refs.scan(path)
    assert r["v"].dtype == dtype
    got = open_refs(refs.write_parquet(r, tmp_path / "store"), decode_cf=False).load()
    with h5py.File(path, "r") as f:
        want = f["v"][()]
    np.testing.assert_array_equal(got["v"].values, want)
    np.testing.assert_array_equal(got["v"].values, np.asarray(values).astype(dtype))


def test_fast_path_reads_standard_types_only(tmp_path: Path) -> None:
    """The extension's numeric fast path hands odd types to the checked path."""
    path = make_file(tmp_path / "i.h5", "int12", "chunked")
    with h5py.File(path, "r") as f:
        assert _h5chunks.numeric_info(f["odd"].id) is None
        assert _h5chunks.storage_problem(f["odd"].id) is not None
        assert _h5chunks.numeric_info(f["count"].id) is not None
        assert _h5chunks.storage_problem(f["count"].id) is None


@pytest.mark.parametrize("base", ["IEEE_F32LE", "IEEE_F64LE"])
def test_vax_order_is_refused(base: str) -> None:
    """HDF5 2.0 writes no VAX-ordered types to files any more; older files may hold them."""
    t = getattr(h5py.h5t, base).copy()
    t.set_order(h5py.h5t.ORDER_VAX)
    assert _h5chunks.type_problem(t) == "floating-point type in VAX byte order"
    assert _h5chunks.type_problem(getattr(h5py.h5t, base)) is None
    with pytest.raises(TypeError, match=r"expected an h5py\.h5t\.TypeID"):
        _h5chunks.type_problem(3)


# --- NetCDF4 files and collections -----------------------------------------------------------
def add_odd_variable(path: Path, case: str) -> None:
    """Add a variable ``odd`` on the file's ``lat`` dimension, written with h5py."""
    with h5py.File(path, "a") as f:
        n = f["lat"].shape[0]
        if case == "external":
            raw = path.with_name(path.stem + ".bin")
            raw.write_bytes(np.arange(n, dtype="<f4").tobytes())
            f.create_dataset("odd", shape=(n,), dtype="<f4", external=[(raw.name, 0, 4 * n)])
        else:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dsid = h5py.h5d.create(f.id, b"odd", int12(f), h5py.h5s.create_simple((n,)), dcpl=dcpl)
            h5py.Dataset(dsid)[...] = np.arange(n, dtype="i2") - n // 2
        f["odd"].dims[0].attach_scale(f["lat"])


@pytest.mark.parametrize("case", ["int12", "external"])
def test_netcdf_file_keeps_its_other_variables(tmp_path: Path, case: str) -> None:
    path = Path(write_daily_netcdf(str(tmp_path / "day.nc"), 0, shape=(4, 6)))
    add_odd_variable(path, case)
    with pytest.raises(UnsupportedHDF5Error, match=f"^{path}: variable 'odd'"):
        refs.scan(path)
    with pytest.warns(UnsupportedVariableWarning):
        r = refs.scan(path, on_unsupported="skip")
    assert set(r.variables) == {"time", "lat", "lon", "sst"}
    got = open_refs(refs.write_parquet(r, tmp_path / "store"), decode_cf=False).load()
    with xr.open_dataset(path, decode_cf=False, drop_variables=["odd"]) as want:
        assert_same_values(got, want.load())


@pytest.mark.parametrize("workers", [None, 2])
def test_virtualize_refuses_then_skips(tmp_path: Path, workers: int | None) -> None:
    files = [
        Path(write_daily_netcdf(str(tmp_path / f"d{i}.nc"), i, shape=(4, 6))) for i in range(3)
    ]
    add_odd_variable(files[1], "int12")
    with pytest.raises(UnsupportedHDF5Error, match=f"{files[1]}: variable 'odd': 12-bit"):
        refs.virtualize(files, tmp_path / "s1", workers=workers, progress=False)
    assert not (tmp_path / "s1").exists()
    # warnings raised in the scanning processes are shown again in this one
    with pytest.warns(UnsupportedVariableWarning, match=f"{files[1]}: variable 'odd'"):
        vds = refs.virtualize(
            files, tmp_path / "s2", workers=workers, progress=False, on_unsupported="skip"
        )
    assert "odd" not in vds.arrays
    got = open_refs(tmp_path / "s2", decode_cf=False).load()
    parts = [xr.open_dataset(p, decode_cf=False, drop_variables=["odd"]) for p in files]
    try:
        want = xr.concat([p.load() for p in parts], dim="time", data_vars="minimal",
                         coords="minimal", compat="override")  # fmt: skip
    finally:
        for p in parts:
            p.close()
    assert_same_values(got, want)


def test_netcdf4_reads_what_the_refused_variable_holds(tmp_path: Path) -> None:
    """The refused values are real data (netCDF-C reads them converted, like h5py)."""
    path = Path(write_daily_netcdf(str(tmp_path / "day.nc"), 0, shape=(4, 6)))
    add_odd_variable(path, "int12")
    with netCDF4.Dataset(path) as ds:
        np.testing.assert_array_equal(ds["odd"][:], np.arange(4) - 2)
    with h5py.File(path, "r") as f:
        start = f["odd"].id.get_offset()
    stored = np.frombuffer(path.read_bytes()[start : start + 2 * 4], "<i2")
    assert not np.array_equal(stored, np.arange(4) - 2)  # what a reference would have given
