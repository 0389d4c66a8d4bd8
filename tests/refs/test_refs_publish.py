"""Publishing reference stores into Icechunk repositories: ``refs.to_icechunk`` and
``dafzarr refs publish``, read back through xarray and zarr-python from the repository."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xarray as xr
import zarr

from dafzarr import refs
from dafzarr.errors import InvalidArgumentError

icechunk = pytest.importorskip("icechunk")


def _day(path: Path, day: int) -> str:
    """One OISST-like daily file: ``sst`` (float32, ``_FillValue`` -999 over land),
    ``anom`` (packed int16), coordinates ``time`` (CF days, a calendar), ``lat``, ``lon``."""
    rng = np.random.default_rng(day)
    land = np.zeros((1, 6, 10), bool)
    land[:, 1:3, 2:5] = True
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "OISST-like"
        ds.createDimension("time", None)
        ds.createDimension("lat", 6)
        ds.createDimension("lon", 10)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 1978-01-01 12:00:00"
        t.calendar = "standard"
        t[:] = [16000 + day]
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-75, 75, 6)
        ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 324, 10)
        sst = ds.createVariable(
            "sst",
            "f4",
            ("time", "lat", "lon"),
            fill_value=-999.0,
            chunksizes=(1, 3, 10),
            zlib=True,
            shuffle=True,
        )
        sst.units = "degC"
        sst[:] = np.ma.masked_array(rng.random((1, 6, 10)).astype("f4") * 30, mask=land)
        anom = ds.createVariable("anom", "i2", ("time", "lat", "lon"), fill_value=-32768)
        anom.scale_factor = 0.01
        anom.set_auto_maskandscale(False)
        packed = rng.integers(-500, 500, (1, 6, 10)).astype("i2")
        packed[land] = -32768
        anom[:] = packed
    return str(path)


def _series(root: Path, n: int = 4) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    return [_day(root / f"day{d}.nc", d) for d in range(n)]


def _repo(path: Path, prefixes: list[str]) -> Any:
    """A new local repository with a local-file container for each prefix."""
    config = icechunk.RepositoryConfig.default()
    for p in prefixes:
        config.set_virtual_chunk_container(
            icechunk.VirtualChunkContainer(
                p, icechunk.local_filesystem_store(p.removeprefix("file://"))
            )
        )
    return icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(path)),
        config,
        authorize_virtual_chunk_access=dict.fromkeys(prefixes),
    )


def _reader(path: Path, prefixes: list[str]) -> Any:
    repo = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(path)),
        authorize_virtual_chunk_access=dict.fromkeys(prefixes),
    )
    return repo.readonly_session("main")


def _open(session: Any, group: str | None = None) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numcodecs codecs are not in the Zarr v3 spec
        return xr.open_zarr(session.store, consolidated=False, zarr_format=3, group=group).load()


def _same(got: xr.Dataset, files: list[str]) -> None:
    """Values, NaN for NaN, decoded times and attributes as xarray reads the files."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xr.open_mfdataset(files, combine="by_coords").load()
    assert sorted(got.variables) == sorted(want.variables)
    for name in want.variables:
        a, b = got[name], want[name]
        assert a.dtype == b.dtype and a.dims == b.dims, name
        np.testing.assert_array_equal(a.values, b.values, err_msg=name)
        assert a.attrs == b.attrs, name
    assert np.isnan(got["sst"].values[:, 1:3, 2:5]).all()
    assert np.isnan(got["anom"].values[:, 1:3, 2:5]).all()
    assert got["time"].dtype.kind == "M"
    assert got["time"].encoding["units"] == "days since 1978-01-01 12:00:00"
    assert got["time"].encoding["calendar"] == "standard"
    assert got.attrs["title"] == "OISST-like"


@pytest.mark.parametrize("how", ["store, references only", "store", "composed object"])
def test_a_daily_series_publishes_and_reads_back(tmp_path: Path, how: str) -> None:
    files = _series(tmp_path / "files")
    store = tmp_path / "series.parq"
    if how == "composed object":
        source: Any = refs.virtualize(files, None, progress=False)
    else:
        refs.virtualize(
            files, store, progress=False, inline_threshold=0 if how.endswith("only") else None
        )
        source = store
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    # sst: 2 chunks a day, anom: 1; references only: lat and lon in the first file too
    want = 4 * 2 + 4 + (2 if how.endswith("only") else 0)
    assert refs.to_icechunk(source, session.store) == want
    session.commit("a daily series")
    if (store / "values.bin").exists():  # native copies: the store is not needed any more
        (store / "values.bin").unlink()
    reader = _reader(tmp_path / "repo", [prefix])
    _same(_open(reader), files)
    # zarr-python directly: codecs, fill value, dimension names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(reader.store, mode="r", zarr_format=3)
        sst = g["sst"]
        assert sst.metadata.dimension_names == ("time", "lat", "lon")
        assert sst.fill_value == np.float32(-999)
        raw = sst[:]
    with h5py.File(files[2]) as f:
        np.testing.assert_array_equal(raw[2], f["sst"][0])  # -999 over land, as stored
    assert reader.all_virtual_chunk_locations() and all(
        loc.startswith(prefix) for loc in reader.all_virtual_chunk_locations()
    )


@pytest.mark.slow  # command-line runs: a process start each
def test_into_a_group_and_with_the_command_line(tmp_path: Path) -> None:
    files = _series(tmp_path / "files", 3)
    store = tmp_path / "series.parq"
    refs.virtualize(files, store, progress=False, inline_threshold=0)
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    refs.to_icechunk(store, session.store, group="ocean/oisst")
    with pytest.raises(InvalidArgumentError, match="has an array 'ocean/oisst/anom' already"):
        refs.to_icechunk(store, session.store, group="ocean/oisst")
    refs.to_icechunk(store, session.store, group="ocean/oisst", overwrite=True)
    session.commit("into a group")
    _same(_open(_reader(tmp_path / "repo", [prefix]), "ocean/oisst"), files)
    # the command line: a new repository, its container given, the snapshot printed
    res = _cli(
        "publish", str(store), str(tmp_path / "cli"), "-m", "daily series", "--container", prefix
    )
    assert res.returncode == 0, res.stderr
    reader = _reader(tmp_path / "cli", [prefix])
    assert res.stdout.splitlines()[-1] == reader.snapshot_id
    assert "11 virtual chunk references" in res.stdout  # and time, native
    _same(_open(reader), files)
    log = list(
        icechunk.Repository.open(icechunk.local_filesystem_storage(str(tmp_path / "cli"))).ancestry(
            branch="main"
        )
    )
    assert log[0].message == "daily series"
    # again, on another branch, into a group of the existing repository
    res = _cli(
        "publish",
        "-q",
        str(store),
        str(tmp_path / "cli"),
        "--branch",
        "dev",
        "-m",
        "again",
        "--group",
        "g",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() != reader.snapshot_id
    dev = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(tmp_path / "cli")),
        authorize_virtual_chunk_access={prefix: None},
    )
    _same(_open(dev.readonly_session("dev"), "g"), files)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dafzarr", "refs", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow  # command-line runs: a process start each
def test_refuses_a_location_outside_every_container(tmp_path: Path) -> None:
    files = _series(tmp_path / "files", 2)
    store = tmp_path / "series.parq"
    refs.virtualize(files, store, progress=False)
    elsewhere = (tmp_path / "elsewhere").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [elsewhere])
    session = repo.writable_session("main")
    with pytest.raises(InvalidArgumentError) as exc:
        refs.to_icechunk(store, session.store)
    msg = str(exc.value)
    prefix = (tmp_path / "files").as_uri() + "/"
    assert f"no virtual chunk container of the Icechunk repository covers {prefix}day" in msg
    assert f"VirtualChunkContainer({prefix!r}" in msg and f"--container {prefix}" in msg
    assert "authorize_virtual_chunk_access" in msg
    assert not session.has_uncommitted_changes  # refused before writing anything
    # the command line: exit code 1, the message, no commit
    before = repo.lookup_branch("main")
    res = _cli("publish", str(store), str(tmp_path / "repo"), "-m", "x")
    assert res.returncode == 1 and f"--container {prefix}" in res.stderr
    assert res.stdout == ""
    assert (
        icechunk.Repository.open(
            icechunk.local_filesystem_storage(str(tmp_path / "repo"))
        ).lookup_branch("main")
        == before
    )
    # into a new repository: none is left behind
    res = _cli("publish", str(store), str(tmp_path / "new"), "-m", "x")
    assert res.returncode == 1 and "no virtual chunk container" in res.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.slow  # command-line runs: a process start each
def test_refuses_a_reference_past_the_end_of_its_file(tmp_path: Path) -> None:
    files = _series(tmp_path / "files", 2)
    store = tmp_path / "series.parq"
    refs.virtualize(files, store, progress=False)
    part = store / "sst" / "refs.0.parq"
    t = pq.read_table(part)
    size = t["size"].to_numpy().copy()
    size[3] += 10_000_000  # the last chunk of the second file, now far past its end
    pq.write_table(t.set_column(2, t.schema.field("size"), pa.array(size)), part)
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    with pytest.raises(
        InvalidArgumentError,
        match=r"array 'sst' has a reference ending at byte \d+, past the end "
        r"of .*day1.nc \(\d+ bytes\)",
    ):
        refs.to_icechunk(store, session.store)
    assert not session.has_uncommitted_changes
    res = _cli("publish", str(store), str(tmp_path / "repo"), "-m", "x", "--container", prefix)
    assert res.returncode == 1 and "past the end of" in res.stderr
    assert icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(tmp_path / "repo"))
    ).lookup_branch("main") == repo.lookup_branch("main")


def test_refuses_a_damaged_store(tmp_path: Path) -> None:
    files = _series(tmp_path / "files", 2)
    store = tmp_path / "series.parq"
    refs.virtualize(files, store, progress=False)
    prefix = (tmp_path / "files").as_uri() + "/"
    session = _repo(tmp_path / "repo", [prefix]).writable_session("main")
    part = store / "sst" / "refs.0.parq"
    whole = pq.read_table(part)
    pq.write_table(whole.slice(0, 3), part)  # a reference lost
    with pytest.raises(
        InvalidArgumentError,
        match=r"refs.0.parq: 3 references where array "
        r"'sst' needs 4",
    ):
        refs.to_icechunk(store, session.store)
    part.write_bytes(b"PAR1 not parquet")
    with pytest.raises(InvalidArgumentError, match="references of array 'sst' are unreadable"):
        refs.to_icechunk(store, session.store)
    pq.write_table(whole.drop_columns(["raw"]), part)
    with pytest.raises(InvalidArgumentError, match="references of array 'sst' are unreadable"):
        refs.to_icechunk(store, session.store)
    (store / ".zmetadata").unlink()
    with pytest.raises(InvalidArgumentError, match="not a kerchunk-Parquet reference store"):
        refs.to_icechunk(store, session.store)
    assert not session.has_uncommitted_changes


def test_hdf5_array_typed_datasets_read_back_exact(tmp_path: Path) -> None:
    path = tmp_path / "files" / "arrays.h5"
    path.parent.mkdir()
    rng = np.random.default_rng(3)
    values = {
        "f8x3": rng.random((40, 3)),
        "i4x2x5": rng.integers(-9, 9, (12, 2, 5)).astype("<i4"),
        "u2be": rng.integers(0, 60000, (30, 4)).astype(">u2"),
    }
    with h5py.File(path, "w") as f:
        for name, v in values.items():
            element = np.dtype((v.dtype, v.shape[1:]))
            d = f.create_dataset(
                name,
                shape=(v.shape[0],),
                dtype=element,
                chunks=(7,),
                compression="gzip" if name != "u2be" else None,
            )
            d[:] = v
    store = tmp_path / "arrays.parq"
    refs.write_parquet(refs.scan(path), store)
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    refs.to_icechunk(store, session.store)
    session.commit("array types")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(_reader(tmp_path / "repo", [prefix]).store, mode="r")
        for name, v in values.items():
            got = g[name][:]
            assert got.shape == v.shape and got.dtype == v.dtype.newbyteorder("="), name
            np.testing.assert_array_equal(got, v, err_msg=name)


def test_pytables_array_atoms_read_back_exact(tmp_path: Path) -> None:
    """Arrays as PyTables writes them: an Array of a (3, 5) atom (stored as plain extra
    dimensions), extendable and chunked arrays whose element is an HDF5 array type (a (3, 5)
    atom: compressed, big-endian, two-dimensional with a (2,) atom)."""
    tables = pytest.importorskip("tables")
    path = tmp_path / "files" / "pytables.h5"
    path.parent.mkdir()
    rng = np.random.default_rng(11)
    values = {
        "arr": rng.random((6, 3, 5)),
        "ear": rng.integers(-99, 99, (10, 3, 5)).astype("<i4"),
        "ebe": rng.integers(0, 60000, (7, 3, 5)).astype(">u2"),
        "car": rng.random((9, 4, 2)).astype("<f4"),
    }
    zlib = tables.Filters(complevel=5, complib="zlib", shuffle=True)
    with warnings.catch_warnings(), tables.open_file(str(path), "w") as f:
        warnings.simplefilter("ignore")
        f.create_array("/", "arr", atom=tables.Float64Atom(shape=(3, 5)), shape=(6,))[:] = values[
            "arr"
        ]
        f.create_earray(
            "/",
            "ear",
            atom=tables.Int32Atom(shape=(3, 5)),
            shape=(0,),
            chunkshape=(4,),
            filters=zlib,
        ).append(values["ear"])
        f.create_earray(
            "/",
            "ebe",
            atom=tables.UInt16Atom(shape=(3, 5)),
            shape=(0,),
            chunkshape=(3,),
            byteorder="big",
        ).append(values["ebe"])
        f.create_carray(
            "/",
            "car",
            atom=tables.Float32Atom(shape=(2,)),
            shape=(9, 4),
            chunkshape=(4, 3),
            filters=zlib,
        )[:] = values["car"]
    with h5py.File(path) as f:  # the element types are HDF5 array types
        assert f["ear"].dtype.subdtype is not None and f["car"].dtype.subdtype is not None
    store = tmp_path / "pytables.parq"
    refs.write_parquet(refs.scan(path), store)
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    assert refs.to_icechunk(store, session.store) == 1 + 3 + 3 + 6
    session.commit("pytables")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(_reader(tmp_path / "repo", [prefix]).store, mode="r")
        for name, v in values.items():
            got = g[name][:]
            assert got.shape == v.shape and got.dtype == v.dtype.newbyteorder("="), name
            np.testing.assert_array_equal(got, v, err_msg=name)


def test_inlined_values_strings_scalars_and_byte_orders_read_back_exact(tmp_path: Path) -> None:
    """What a scanned file inlines (variable-length strings, a compact dataset) becomes native
    chunks; scalars, big-endian and fixed-length byte strings keep their values; nested
    groups keep their attributes."""
    path = tmp_path / "files" / "kinds.h5"
    path.parent.mkdir()
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "names",
            data=np.array(["\u00e9t\u00e9", "beta", ""], dtype=object),
            dtype=h5py.string_dtype(),
        )
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        sid = h5py.h5s.create_simple((6,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, sid, dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(6, dtype="<i4")
        )
        f.create_dataset("scalar", data=np.float64(2.5))
        f.attrs["history"] = "made for a test"
        f.create_group("inner/deep").attrs["source"] = "nested"
        f.create_dataset("inner/deep/big", data=rng.random((9, 4)).astype(">f8"), chunks=(4, 4))
        f.create_dataset("codes", data=np.array([b"ab", b"cdefg", b"h"], dtype="S5"), chunks=(2,))
        f.create_dataset("flags", data=rng.random(10) > 0.5, chunks=(4,), compression="gzip")
    store = tmp_path / "kinds.parq"
    refs.write_parquet(refs.scan(path), store)
    prefix = (tmp_path / "files").as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    refs.to_icechunk(store, session.store)
    session.commit("kinds")
    with warnings.catch_warnings(), h5py.File(path) as f:
        warnings.simplefilter("ignore")
        g = zarr.open_group(_reader(tmp_path / "repo", [prefix]).store, mode="r")
        assert list(g["names"][:]) == ["\u00e9t\u00e9", "beta", ""]
        np.testing.assert_array_equal(g["compact"][:], np.arange(6))
        assert g["scalar"].shape == () and g["scalar"][()] == 2.5
        np.testing.assert_array_equal(g["inner/deep/big"][:], f["inner/deep/big"][:])
        assert g.attrs["history"] == "made for a test"
        assert g["inner/deep"].attrs["source"] == "nested"
        np.testing.assert_array_equal(g["codes"][:], f["codes"][:])
        np.testing.assert_array_equal(g["flags"][:], f["flags"][:])


def test_remote_locations_need_their_container(tmp_path: Path) -> None:
    """References to ``https://`` URLs: refused with the HTTP container to add, published
    once it is there (a remote file's length is not checked: Icechunk refuses short reads);
    a URL with a port, which Icechunk 1 would drop, is refused."""
    files = _series(tmp_path / "files", 2)
    base = "https://data.example.org/"
    store = tmp_path / "series.parq"
    refs.virtualize(
        refs.mosaic_sources(files, [base + "sst/" + Path(f).name for f in files]),
        store,
        progress=False,
    )
    local = (tmp_path / "files").as_uri() + "/"
    session = _repo(tmp_path / "repo", [local]).writable_session("main")
    with pytest.raises(
        InvalidArgumentError,
        match=rf"covers {base}sst/day0.nc and 1 other locations .*"
        rf"VirtualChunkContainer\('{base}', icechunk.http_store\(\)\)",
    ):
        refs.to_icechunk(store, session.store)
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(base, icechunk.http_store()))
    repo = icechunk.Repository.create(icechunk.in_memory_storage(), config)
    session = repo.writable_session("main")
    assert refs.to_icechunk(store, session.store) == 6
    assert sorted(set(session.all_virtual_chunk_locations())) == [
        base + "sst/day0.nc",
        base + "sst/day1.nc",
    ]
    if int(icechunk.__version__.split(".")[0]) >= 2:
        return
    ported = tmp_path / "ported.parq"
    refs.virtualize(
        refs.mosaic_sources(files, [f"http://127.0.0.1:8123/{Path(f).name}" for f in files]),
        ported,
        progress=False,
    )
    session = repo.writable_session("main")
    with pytest.raises(
        InvalidArgumentError,
        match=re.escape("would drop the port 8123 of http://127.0.0.1:8123/day0.nc"),
    ):
        refs.to_icechunk(ported, session.store)
    assert not session.has_uncommitted_changes


def test_same_dataset_as_through_virtualizarr(tmp_path: Path) -> None:
    """The OISST-like series of ``test_refs_icechunk`` (a NaN fill, packed values with their
    own fill): the repository written directly reads as the one VirtualiZarr writes."""
    from .test_refs_icechunk import _oisst_like, _published

    files = tmp_path / "files"
    files.mkdir()
    days = [str(_oisst_like(files / f"day{d}.nc", d)) for d in range(3)]
    store = tmp_path / "series.parq"
    refs.virtualize(days, str(store), inline_threshold=0, progress=False)
    prefix = f"file://{tmp_path}/"
    repo = _repo(tmp_path / "ours", [prefix])
    session = repo.writable_session("main")
    refs.to_icechunk(store, session.store)
    session.commit("ours")
    ours = _open(_reader(tmp_path / "ours", [prefix]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _open(_published(store, tmp_path / "theirs", tmp_path))
    xr.testing.assert_identical(ours, theirs)
    assert ours["err"].encoding["_FillValue"] != ours["err"].encoding["_FillValue"]  # NaN
