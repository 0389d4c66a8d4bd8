"""Built-in example data: what ``dafzarr demo``, the tests and the benchmarks generate."""

from __future__ import annotations

import numpy as np

__all__ = ["write_daily_netcdf"]


def write_daily_netcdf(
    path: str, day: int, *, shape: tuple[int, int], variables: tuple[str, ...] = ("sst",)
) -> str:
    """A small OISST-like daily NetCDF4 file: one time step, packed i2 variables."""
    import netCDF4

    nlat, nlon = shape
    rng = np.random.default_rng(day)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", nlat)
        ds.createDimension("lon", nlon)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 1981-09-01"
        t[:] = [day]
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-90 + 90 / nlat, 90 - 90 / nlat, nlat)
        lon = ds.createVariable("lon", "f4", ("lon",))
        lon[:] = np.linspace(180 / nlon, 360 - 180 / nlon, nlon)
        for name in variables:
            v = ds.createVariable(
                name, "i2", ("time", "lat", "lon"), zlib=True, shuffle=True,
                chunksizes=(1, nlat // 2, nlon // 2), fill_value=-999,
            )  # fmt: skip
            v.scale_factor, v.units = 0.01, "degC"
            v[:] = rng.integers(-200, 3000, size=(1, nlat, nlon))
    return path
