"""HDF5 array element types become trailing dimensions of a reference store.

PyTables (multidimensional atoms), HDF5's own examples and R's rhdf5 write datasets whose
element is a fixed-shape array, e.g. ``('<i8', (3, 5))``. Each element is a C-ordered block
of its base type, so a chunk holds exactly the bytes of the same chunk with the element's
dimensions added last: the store references it as an array of the base type, with the
element's shape appended to its shape and chunks (and the shuffle filter's element size
being the whole element's, as HDF5 applied it). Values read back equal h5py's, element by
element, through fsspec and xarray and through VirtualiZarr into Icechunk.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

from dafzarr import refs
from dafzarr._core.refs.walk import _one_fill
from dafzarr.errors import UnsupportedHDF5Error

tables = pytest.importorskip("tables")


def _read_back(store: Path) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers' deprecation warnings
        return xr.open_dataset(
            f"reference::{store}",
            engine="zarr",
            consolidated=False,
            zarr_format=2,
            mask_and_scale=False,  # raw values, as h5py reads them (fills unmasked)
            backend_kwargs={"storage_options": {"remote_protocol": "file"}},
        ).load()


def _h5py_values(path: Path) -> dict[str, np.ndarray]:
    """Each dataset as h5py reads it, element dimensions last."""
    with h5py.File(path, "r") as f:
        return {name: np.asarray(f[name][()]) for name in f}


def _check(path: Path, tmp_path: Path) -> refs.ScanResult:
    result = refs.scan(str(path))
    store = tmp_path / "store.parq"
    refs.write_parquet(result, str(store), overwrite=True, inline_threshold=0)
    got = _read_back(store)
    for name, want in _h5py_values(path).items():
        assert got[name].dtype.kind == want.dtype.kind, name  # xarray reads native order
        np.testing.assert_array_equal(got[name].values, want, err_msg=name)
    return result


def test_h5py_array_types_in_every_layout(tmp_path: Path) -> None:
    path = tmp_path / "arrays.h5"
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        chunked = f.create_dataset(
            "chunked",
            shape=(7,),
            dtype=np.dtype(("<i8", (3, 5))),
            chunks=(2,),
            compression="gzip",
            shuffle=True,
        )
        chunked[:] = rng.integers(-(2**40), 2**40, (7, 3, 5))
        contiguous = f.create_dataset("contiguous", shape=(4,), dtype=np.dtype(("<f4", (2,))))
        contiguous[:] = rng.random((4, 2)).astype("<f4")
    result = _check(path, tmp_path)
    v = result["chunked"]
    assert v.dtype == "<i8" and v.shape == (7, 3, 5) and v.chunks == (2, 3, 5)
    assert v.filters == [{"id": "shuffle", "elementsize": 120}, {"id": "zlib", "level": 4}]


def test_pytables_multidimensional_atoms(tmp_path: Path) -> None:
    path = tmp_path / "pytables.h5"
    with tables.open_file(str(path), "w") as f:
        pos = f.create_carray(
            "/",
            "pos",
            atom=tables.Float64Atom(shape=(3,)),
            shape=(10,),
            chunkshape=(4,),
            filters=tables.Filters(complevel=1, shuffle=True),
        )
        pos[:] = np.arange(30.0).reshape(10, 3)
        grow = f.create_earray(
            "/", "grow", atom=tables.Int32Atom(shape=(2, 2)), shape=(0,), chunkshape=(3,)
        )
        grow.append(np.arange(20, dtype="i4").reshape(5, 2, 2))
        grid = f.create_carray(
            "/",
            "grid",
            atom=tables.Float64Atom(shape=(2,), dflt=-1.0),
            shape=(3, 4),
            chunkshape=(2, 2),
        )
        grid[:2] = np.random.default_rng(2).random((2, 4, 2))  # the last row: the fill
        big = f.create_carray(
            "/",
            "big",
            atom=tables.Int16Atom(shape=(3,)),
            shape=(5,),
            chunkshape=(2,),
            byteorder="big",
        )
        big[:] = np.arange(15, dtype="i2").reshape(5, 3)
    result = _check(path, tmp_path)
    assert result["pos"].shape == (10, 3) and result["pos"].chunks == (4, 3)
    assert result["grow"].shape == (5, 2, 2) and result["grow"].chunks == (3, 2, 2)
    g = result["grid"]
    assert g.dtype == "<f8" and g.shape == (3, 4, 2) and g.chunks == (2, 2, 2)
    assert g.fill_value == -1.0
    assert result["big"].dtype == ">i2" and result["big"].shape == (5, 3)


def test_an_element_fill_that_differs_between_members_is_refused() -> None:
    """zarr has one fill value per array: an element whose members fill differently cannot
    be one (no writer at hand makes such a file: PyTables broadcasts one default, and h5py
    cannot convert an array fill value; the check is called directly)."""
    assert _one_fill(np.array([-1.0, -1.0]), np.dtype(">f8"), "f.h5: variable 'v'") == -1.0
    assert np.isnan(_one_fill(np.array([np.nan, np.nan]), np.dtype("<f4"), "x"))
    with pytest.raises(
        UnsupportedHDF5Error,
        match=r"'v'.*fill value differs between the "
        r"members of an element",
    ):
        _one_fill(np.array([1, 2], "<i4"), np.dtype("<i4"), "f.h5: variable 'v'")


def test_array_types_of_strings_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "strings.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", shape=(2,), dtype=np.dtype(("S4", (3,))))
    with pytest.raises(UnsupportedHDF5Error, match=r"'s'.*HDF5 array type"):
        refs.scan(str(path))


def test_the_chunk_walk_refuses_a_grid_of_another_rank(tmp_path: Path) -> None:
    """The walk reads one offset per dimension from HDF5: a grid with the element's
    dimensions added would read past them."""
    from dafzarr import _h5chunks

    path = tmp_path / "rank.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", shape=(4,), dtype=np.dtype(("<i4", (3,))), chunks=(2,))[:] = np.ones(
            (4, 3), "<i4"
        )
        with pytest.raises(ValueError, match=r"rank 2; the dataset has rank 1"):
            _h5chunks.chunk_index(
                f["a"].id,
                (2, 3),
                (2, 1),
                np.full(2, -1, np.int64),
                np.zeros(2, np.int64),
                np.zeros(2, np.uint32),
            )


def test_array_types_publish_through_virtualizarr_into_icechunk(tmp_path: Path) -> None:
    pytest.importorskip("icechunk")
    from .test_refs_icechunk import _published

    files = tmp_path / "files"
    files.mkdir()
    path = files / "pytables.h5"
    with tables.open_file(str(path), "w") as f:
        pos = f.create_carray(
            "/",
            "pos",
            atom=tables.Float32Atom(shape=(3,)),
            shape=(10,),
            chunkshape=(4,),
            filters=tables.Filters(complevel=1, shuffle=True),
        )
        pos[:] = np.arange(30.0).reshape(10, 3)
    store = tmp_path / "store.parq"
    refs.write_parquet(refs.scan(str(path)), str(store), inline_threshold=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peers' deprecation warnings
        session = _published(store, tmp_path / "repo", files)
        got = xr.open_zarr(session.store, consolidated=False, zarr_format=3).load()
    np.testing.assert_array_equal(got["pos"].values, np.arange(30.0, dtype="f4").reshape(10, 3))
