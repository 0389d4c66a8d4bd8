"""Composing many generated NetCDF4 files into one reference store, and what is refused."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dafzarr import refs
from dafzarr.errors import IncompatibleSourcesError

from .refs_common import assert_same_values, open_mf, open_refs


def make_day(
    path: Path,
    start: int,
    *,
    ntime: int = 2,
    dtype: str = "i2",
    zlib: bool = True,
    chunk_t: int = 1,
    scale: float = 0.01,
    offset: float = 0.0,
    fill: int = -999,
    units: str = "K",
    time_units: str = "days since 2000-01-01",
    calendar: str = "standard",
) -> Path:
    """One 'daily' file: time (unlimited), lat, lon; sst packed, chunked one step per chunk."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 6)
        ds.createDimension("lon", 8)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = time_units, calendar
        t[:] = np.arange(start, start + ntime, dtype="f8")
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-50, 50, 6)
        lon = ds.createVariable("lon", "f4", ("lon",))
        lon[:] = np.linspace(0, 315, 8)
        sst = ds.createVariable(
            "sst", dtype, ("time", "lat", "lon"), zlib=zlib, chunksizes=(chunk_t, 3, 8),
            fill_value=fill,
        )  # fmt: skip
        sst.scale_factor, sst.add_offset, sst.units = scale, offset, units
        rng = np.random.default_rng(start)
        sst[:] = rng.integers(0, 3000, size=(ntime, 6, 8))
        sst[0, 0, 0] = np.ma.masked
        mask = ds.createVariable("mask", "i1", ("lat", "lon"))
        mask[:] = 1
    return path


def days(tmp_path: Path, n: int = 3, **kw: Any) -> list[Path]:
    return [make_day(tmp_path / f"day{i}.nc", 2 * i, **kw) for i in range(n)]


def test_virtualize_equals_open_mfdataset(tmp_path: Path) -> None:
    files = days(tmp_path)
    vds = refs.virtualize(files[::-1], tmp_path / "store", progress=False)
    assert vds.arrays["sst"].zarray["shape"] == [6, 6, 8]
    assert vds.arrays["time"].raw and vds.arrays["lat"].raw  # coordinates inlined
    placement = vds.placement
    assert (
        placement is not None and placement.num_rows == 3 * 2 + 3
    )  # sst+time per file, lat/lon/mask once
    got = open_refs(tmp_path / "store", decode_cf=False).load()
    assert_same_values(got, open_mf(files, decode_cf=False))
    got_cf = open_refs(tmp_path / "store").load()
    want_cf = open_mf(files)
    np.testing.assert_array_equal(got_cf["time"].values, want_cf["time"].values)
    np.testing.assert_allclose(got_cf["sst"].values, want_cf["sst"].values.astype("f8"), rtol=1e-6)
    assert int(got_cf["sst"].isnull().sum()) == 3


def test_attributes_come_from_the_first_file_along_the_concatenation(tmp_path: Path) -> None:
    """Global and array attributes describe the same file, whatever order files are given in."""
    files = days(tmp_path)
    for i, f in enumerate(files):
        with netCDF4.Dataset(f, "a") as ds:
            ds.history = f"made as file {i}"
            ds["sst"].comment = f"from file {i}"
    vds = refs.virtualize(files[::-1], tmp_path / "store", progress=False)
    got = open_refs(tmp_path / "store", decode_cf=False)
    assert got.attrs["history"] == "made as file 0"
    assert got["sst"].attrs["comment"] == "from file 0"
    assert vds.placement is not None
    assert vds.placement.column("source").to_pylist()[0].endswith("day0.nc")


def test_concat_dim_is_found_or_asked_for(tmp_path: Path) -> None:
    files = days(tmp_path)
    scans = refs.scan_many(files, progress=False)
    explicit = refs.place(scans, concat_dim="time")
    assert refs.place(scans).equals(explicit)
    same = [make_day(tmp_path / f"same{i}.nc", 0) for i in range(2)]
    with pytest.raises(IncompatibleSourcesError, match="pass concat_dim="):
        refs.place(refs.scan_many(same, progress=False))


@pytest.mark.parametrize(
    ("kw", "label"),
    [
        ({"dtype": "i4", "fill": -999}, "dtype differs"),
        ({"zlib": False}, "codec configuration differs"),
        ({"chunk_t": 2}, "chunk shape differs"),
        ({"scale": 0.02}, "scale_factor differs"),
        ({"offset": 1.0}, "add_offset differs"),
        ({"fill": -1}, r"_FillValue \(HDF5 fill value\) differs"),
        ({"units": "degC"}, "units differs"),
        ({"calendar": "noleap"}, "calendar differs"),
        ({"time_units": "hours since 2000-01-01"}, "units differs"),
    ],
)
def test_refuses_inconsistent_files(tmp_path: Path, kw: dict[str, Any], label: str) -> None:
    a = make_day(tmp_path / "a.nc", 0)
    b = make_day(tmp_path / "b.nc", 2, **kw)
    with pytest.raises(IncompatibleSourcesError, match=label) as exc:
        refs.virtualize([a, b], tmp_path / "store", progress=False, concat_dim="time")
    assert str(a) in str(exc.value) and str(b) in str(exc.value)
    assert not (tmp_path / "store").exists()


def test_refuses_misaligned_concat(tmp_path: Path) -> None:
    a = make_day(tmp_path / "a.nc", 0, ntime=3, chunk_t=2)
    b = make_day(tmp_path / "b.nc", 3, ntime=2, chunk_t=2)
    with pytest.raises(IncompatibleSourcesError, match="not a multiple of the chunk length 2") as e:
        refs.virtualize([a, b], tmp_path / "store", progress=False)
    assert "stacked file dimension" not in str(e.value)  # a file of 3 in chunks of 2: no hint
    # the last file may end in a partial chunk
    c = make_day(tmp_path / "c.nc", 0, ntime=2, chunk_t=2)
    d = make_day(tmp_path / "d.nc", 2, ntime=3, chunk_t=2)
    refs.virtualize([c, d], tmp_path / "ok", progress=False)
    assert_same_values(
        open_refs(tmp_path / "ok", decode_cf=False).load(), open_mf([c, d], decode_cf=False)
    )


def test_misaligned_one_step_files_hint_at_a_stacked_file_dimension(tmp_path: Path) -> None:
    """Files of one time step each, chunked 4 along time (HDF5 sizes chunks of a growing
    dimension for many steps): the refusal names the likely cause."""
    a = make_day(tmp_path / "a.nc", 0, ntime=1, chunk_t=4)
    b = make_day(tmp_path / "b.nc", 1, ntime=1, chunk_t=4)
    with pytest.raises(IncompatibleSourcesError) as e:
        refs.virtualize([a, b], tmp_path / "store", progress=False, inline_coords=True)
    msg = str(e.value)
    assert f"variable 'sst': {a} has 1 elements along 'time', not a multiple" in msg
    assert (
        "'time' looks like a stacked file dimension (a dimension per file to concatenate "
        "along: each file adds 1 element in a chunk of 4"
    ) in msg
    assert "written with chunks of 1 (or a divisor) along 'time'" in msg
    assert not (tmp_path / "store").exists()


def test_refuses_overlapping_coordinates(tmp_path: Path) -> None:
    a = make_day(tmp_path / "a.nc", 0, ntime=2)
    b = make_day(tmp_path / "b.nc", 1, ntime=2)  # times 1, 2: overlaps a's 0, 1
    with pytest.raises(IncompatibleSourcesError, match="overlapping sources along 'time'") as e:
        refs.virtualize([a, b], tmp_path / "store", progress=False)
    assert "a.nc ends at" in str(e.value) and "b.nc starts at" in str(e.value)
    assert not (tmp_path / "store").exists()


def test_refuses_overlapping_sources(tmp_path: Path) -> None:
    a = make_day(tmp_path / "a.nc", 0)
    b = make_day(tmp_path / "b.nc", 4)
    scans = refs.scan_many([a, b], progress=False)
    placement = refs.place(scans).to_pylist()
    for row in placement:
        if row["source"] == scans[1].url and row["variable"] == "sst":
            row["dest_offset"] = [1, 0, 0]
    table = pa.Table.from_pylist(placement, schema=refs.PLACEMENT_SCHEMA)
    with pytest.raises(IncompatibleSourcesError, match="overlap"):
        refs.compose(scans, table)


def test_placement_table_round_trip(tmp_path: Path) -> None:
    files = days(tmp_path)
    vds = refs.virtualize(files, None, progress=False)
    assert vds.placement is not None
    pq.write_table(vds.placement, tmp_path / "placement.parquet")
    again = refs.virtualize(
        files, tmp_path / "store", placement=pq.read_table(tmp_path / "placement.parquet"),
        progress=False,
    )  # fmt: skip
    np.testing.assert_array_equal(again.arrays["sst"].offset, vds.arrays["sst"].offset)
    np.testing.assert_array_equal(again.arrays["sst"].path_index, vds.arrays["sst"].path_index)


def test_mosaic_sources_access_and_public(tmp_path: Path) -> None:
    public_dir = tmp_path / "public"
    mirror = tmp_path / "mirror"
    public_dir.mkdir()
    files = days(public_dir)
    mirror.mkdir()
    for f in files:
        shutil.copy(f, mirror / f.name)
    urls = [f.resolve().as_uri() for f in files]
    sources = refs.mosaic_sources(access=[mirror / f.name for f in files], public=urls)
    refs.virtualize(sources, tmp_path / "store", progress=False)
    paths = set(pq.read_table(tmp_path / "store" / "sst" / "refs.0.parq")["path"].to_pylist())
    assert paths == set(urls)  # the public URLs, not the mirror that was scanned
    for f in files:
        (mirror / f.name).unlink()  # reading needs only the public copies
    assert_same_values(
        open_refs(tmp_path / "store", decode_cf=False).load(), open_mf(files, decode_cf=False)
    )
    with pytest.raises(ValueError, match="2 access paths but 1 public"):
        refs.mosaic_sources(access=files[:2], public=urls[:1])
    other = make_day(tmp_path / "other.nc", 0, ntime=3)
    with pytest.raises(IncompatibleSourcesError, match="differ in size"):
        refs.mosaic_sources(access=[other], public=[urls[0]])


def test_workers_give_the_same_store(tmp_path: Path) -> None:
    files = days(tmp_path, n=4)
    serial = refs.scan_many(files, progress=False)
    parallel = refs.scan_many(files, workers=2, progress=False)
    assert [s.path for s in parallel] == [s.path for s in serial]
    for a, b in zip(serial, parallel, strict=True):
        assert a.to_arrow().equals(b.to_arrow(), check_metadata=True)


def test_progress_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    files = days(tmp_path, n=3)
    refs.scan_many(files, progress=True)
    err = capfd.readouterr().err
    assert "scanning: 100%" in err and "3/3" in err and "files/s" in err


def test_dask_client(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    files = days(tmp_path, n=3)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        vds = refs.virtualize(files, tmp_path / "store", workers=client, progress=False)
    serial = refs.virtualize(files, None, progress=False)
    np.testing.assert_array_equal(vds.arrays["sst"].offset, serial.arrays["sst"].offset)
    assert_same_values(
        open_refs(tmp_path / "store", decode_cf=False).load(), open_mf(files, decode_cf=False)
    )


# --- GDAL multidimensional VRT as the placement ----------------------------------------------
def _vrt_like_gdal(files: list[Path], out: Path, count: str = "2,6,8") -> Path:
    """A VRT as ``gdal mdim mosaic`` (GDAL >= 3.12) writes one, element for element.

    GDAL's serializer gives every source a ``<SourceSlab>`` (offset 0, the source's own size,
    step 1) and a ``<DestSlab>``, and the indexing variables inline values. Used where the
    tool is not installed; the test below runs the real tool when it is.
    """
    root = ET.Element("VRTDataset")
    group = ET.SubElement(root, "Group", name="/")
    for name, size in (("time", 2 * len(files)), ("lat", 6), ("lon", 8)):
        ET.SubElement(group, "Dimension", name=name, size=str(size), indexingVariable=name)
    for name, size in (("time", 2 * len(files)), ("lat", 6), ("lon", 8)):
        coord = ET.SubElement(group, "Array", name=name)
        ET.SubElement(coord, "DataType").text = "Float64"
        ET.SubElement(coord, "DimensionRef", ref=name)
        ET.SubElement(coord, "InlineValues", offset="0", count=str(size)).text = " ".join(
            str(float(v)) for v in range(size)
        )
    array = ET.SubElement(group, "Array", name="sst")
    ET.SubElement(array, "DataType").text = "Int16"
    for d in ("time", "lat", "lon"):
        ET.SubElement(array, "DimensionRef", ref=d)
    for i, f in enumerate(files):
        src = ET.SubElement(array, "Source")
        ET.SubElement(src, "SourceFilename", relativetoVRT="1").text = f.name
        ET.SubElement(src, "SourceArray").text = "/sst"
        ET.SubElement(src, "SourceSlab", offset="0,0,0", count=count, step="1,1,1")
        ET.SubElement(src, "DestSlab", offset=f"{2 * i},0,0")
    ET.ElementTree(root).write(out)
    return out


def test_vrt_placement(tmp_path: Path) -> None:
    files = days(tmp_path)
    vrt = _vrt_like_gdal(files, tmp_path / "mosaic.vrt")
    vds = refs.virtualize(files, tmp_path / "store", placement=vrt, progress=False)
    assert set(vds.arrays) == {"sst", "time", "lat", "lon"}  # coordinates follow "sst"
    got = open_refs(tmp_path / "store", decode_cf=False).load()
    assert_same_values(got, open_mf(files, decode_cf=False), names=["sst", "time"])


@pytest.mark.parametrize("count", ["1,6,8", "2,6,4", "2,6"])
def test_vrt_placement_refuses_part_of_a_source(tmp_path: Path, count: str) -> None:
    files = days(tmp_path)
    vrt = _vrt_like_gdal(files, tmp_path / "mosaic.vrt", count=count)
    with pytest.raises(IncompatibleSourcesError, match="SourceSlab"):
        refs.virtualize(files, tmp_path / "store", placement=vrt, progress=False)
    assert not (tmp_path / "store").exists()


def test_vrt_placement_written_by_gdal(tmp_path: Path) -> None:
    """VRTs serialized by GDAL itself (gdalmdimtranslate: the serializer gdal mdim mosaic
    uses), one per file, their sources gathered into one array as a mosaic has them."""
    tool = shutil.which("gdalmdimtranslate")
    if tool is None:
        pytest.skip("GDAL's gdalmdimtranslate is not installed")
    files = days(tmp_path)
    written = []
    for f in files:
        out = f.with_suffix(".vrt")
        subprocess.run([tool, str(f), str(out), "-of", "VRT"], check=True, capture_output=True)
        written.append(ET.parse(out).getroot())
    # a single file: GDAL's own VRT as it is
    one = tmp_path / "one"
    one.mkdir()
    vds = refs.virtualize(
        [files[0]], one / "store", placement=files[0].with_suffix(".vrt"), progress=False
    )
    assert vds.arrays["sst"].zarray["shape"] == [2, 6, 8]
    # the mosaic: every file's GDAL-written <Source> of sst, placed along time
    root = written[0]
    array = next(a for a in root.iter("Array") if a.get("name") == "sst")
    for i, other in enumerate(written[1:], start=1):
        src = next(a for a in other.iter("Array") if a.get("name") == "sst").find("Source")
        assert src is not None and src.find("SourceSlab") is not None
        src.find("DestSlab").set("offset", f"{2 * i},0,0")  # type: ignore[union-attr]
        array.append(src)
    vrt = tmp_path / "mosaic.vrt"
    ET.ElementTree(root).write(vrt)
    refs.virtualize(files, tmp_path / "store", placement=vrt, progress=False)
    got = open_refs(tmp_path / "store", decode_cf=False).load()
    assert_same_values(got, open_mf(files, decode_cf=False), names=["sst", "time"])


def test_vrt_placement_from_gdal(tmp_path: Path) -> None:
    gdal = shutil.which("gdal")
    if gdal is None:
        pytest.skip("GDAL >= 3.12 ('gdal mdim mosaic') is not installed")
    files = days(tmp_path)
    vrt = tmp_path / "mosaic.vrt"
    subprocess.run(
        [gdal, "mdim", "mosaic", *map(str, files), str(vrt), "--array", "sst"], check=True
    )
    refs.virtualize(files, tmp_path / "store", placement=vrt, progress=False)
    got = open_refs(tmp_path / "store", decode_cf=False).load()
    assert_same_values(got, open_mf(files, decode_cf=False), names=["sst"])
