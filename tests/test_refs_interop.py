"""Other readers of the written stores: VirtualiZarr, fsspec with and without fastparquet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from dafzarr import refs

from .refs_common import (
    chunk_refs,
    open_mf,
    write_nested_groups,
    write_nofill_netcdf,
    write_undefined_fill,
)
from .test_refs_compose import days
from .test_refs_scan import make_cf


def _virtualizarr_version() -> tuple[int, ...]:
    vz = pytest.importorskip("virtualizarr")
    return tuple(int(x) for x in vz.__version__.split(".")[:3] if x.isdigit())


def _open_virtual(store: Path) -> xr.Dataset:
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
            url=str(store), registry=registry, parser=KerchunkParquetParser()
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
