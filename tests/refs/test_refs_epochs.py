"""Daily files whose CF time units differ only in their epoch, composed along time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from dafzarr import refs
from dafzarr.errors import IncompatibleSourcesError

from .refs_common import open_reference_xr, write_day_of_seconds

ENGINES = ["pyarrow", "fastparquet"]


@pytest.mark.parametrize("dtype", ["f8", "i4"])
@pytest.mark.parametrize("engine", ENGINES)
def test_daily_files_counting_from_their_own_day(tmp_path: Path, dtype: str, engine: str) -> None:
    pytest.importorskip(engine)
    files = [write_day_of_seconds(tmp_path / f"d{d}.nc", d, dtype=dtype) for d in (3, 1, 2)]
    vds = refs.virtualize(files, tmp_path / "store", progress=False)  # concat dim found
    time = vds.arrays["time"]
    assert time.raw and time.zattrs["units"] == "seconds since 2020-01-01 00:00:00"
    assert time.zarray["dtype"] == np.dtype(dtype).str
    got = open_reference_xr(tmp_path / "store", engine)
    want = xr.open_mfdataset(sorted(files), combine="by_coords").load()
    np.testing.assert_array_equal(got["time"].values, want["time"].values)
    assert got["time"].values[0] == np.datetime64("2020-01-01T00:00:00")
    assert got["time"].values[-1] == np.datetime64("2020-01-03T18:00:00")
    for name in ("temp", "rh"):
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)
    raw = open_reference_xr(tmp_path / "store", engine, decode_times=False)
    assert raw["time"].values[4] == 86400 and raw["time"].attrs["units"].endswith(
        "2020-01-01 00:00:00"
    )


def test_overlapping_days_are_refused_with_dates(tmp_path: Path) -> None:
    a = write_day_of_seconds(tmp_path / "a.nc", 1, hours=range(0, 36, 6))  # into day 2
    b = write_day_of_seconds(tmp_path / "b.nc", 2)
    with pytest.raises(IncompatibleSourcesError, match="overlapping sources along 'time'") as e:
        refs.virtualize([a, b], tmp_path / "store", progress=False)
    msg = str(e.value)
    assert f"{a} ends at 2020-01-02 06:00:00 (108000.0 seconds since 2020-01-01 00:00:00)" in msg
    assert f"{b} starts at 2020-01-02 00:00:00 (86400.0 seconds since 2020-01-01 00:00:00)" in msg
    assert not (tmp_path / "store").exists()


def test_other_units_or_calendars_are_still_refused(tmp_path: Path) -> None:
    import netCDF4

    a = write_day_of_seconds(tmp_path / "a.nc", 1)
    b = write_day_of_seconds(tmp_path / "b.nc", 2)
    with netCDF4.Dataset(b, "a") as ds:
        ds["time"].units = "minutes since 2020-01-02"
    with pytest.raises(IncompatibleSourcesError, match="units differs"):
        refs.virtualize([a, b], None, progress=False, concat_dim="time")
    c = write_day_of_seconds(tmp_path / "c.nc", 2)
    with netCDF4.Dataset(c, "a") as ds:
        ds["time"].calendar = "noleap"
    with pytest.raises(IncompatibleSourcesError, match="calendar differs"):
        refs.virtualize([a, c], None, progress=False, concat_dim="time")


def test_rebased_time_must_be_inlined(tmp_path: Path) -> None:
    files = [write_day_of_seconds(tmp_path / f"d{d}.nc", d) for d in (1, 2)]
    with pytest.raises(IncompatibleSourcesError, match="inline_coords=True"):
        refs.virtualize(files, None, progress=False, inline_coords=False)


def test_integer_times_need_a_whole_number_offset(tmp_path: Path) -> None:
    import netCDF4

    a = write_day_of_seconds(tmp_path / "a.nc", 1, dtype="i4")
    b = write_day_of_seconds(tmp_path / "b.nc", 2, dtype="i4")
    for path, units in ((a, "days since 2020-01-01"), (b, "days since 2020-01-02 12:00")):
        with netCDF4.Dataset(path, "a") as ds:
            ds["time"].units = units
            ds["time"][:] = np.arange(4) + (10 if path == b else 0)
    with pytest.raises(IncompatibleSourcesError, match=rf"{b}: coordinate 'time'.*whole number"):
        refs.virtualize([a, b], None, progress=False, concat_dim="time")
