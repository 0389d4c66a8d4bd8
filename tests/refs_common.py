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
