"""``dafzarr refs build|info|check`` and the reference-store step of ``dafzarr demo``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .._atomic import atomic_file
from ..errors import SelfCheckError
from ._check import check_store, open_reference_group
from ._layout import METADATA_FILE

__all__ = ["add_parser", "demo_step", "write_daily_netcdf"]


# --- build ---------------------------------------------------------------------------------
def _build(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from ._compose import virtualize
    from ._sources import mosaic_sources

    files = [os.fspath(f) for f in args.files]
    public = None
    if args.public_prefix:
        public = [args.public_prefix.rstrip("/") + "/" + Path(f).name for f in files]
    sources = mosaic_sources(files, public)
    placement: Any = args.placement
    if placement and str(placement).endswith((".parquet", ".parq")):
        placement = pq.read_table(placement)
    t0 = time.perf_counter()
    vds = virtualize(
        sources,
        args.out,
        concat_dim=args.concat_dim,
        placement=placement,
        record_size=args.record_size,
        inline_threshold=args.inline_threshold,
        workers=args.workers,
        progress=not args.quiet,
        on_unsupported="skip" if args.skip_unsupported else "raise",
        overwrite=args.overwrite,
    )
    if args.save_placement and vds.placement is not None:
        with atomic_file(args.save_placement, force=True) as tmp:
            pq.write_table(vds.placement, tmp)
    nrefs = sum(int((a.path_index >= 0).sum()) for a in vds.arrays.values())
    print(
        f"{args.out}: {len(vds.arrays)} arrays, {nrefs} references into {len(vds.paths)} "
        f"files ({time.perf_counter() - t0:.2f} s)"
    )
    return 0


# --- info ----------------------------------------------------------------------------------
def _info(args: argparse.Namespace) -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = Path(args.store)
    meta = json.loads((root / METADATA_FILE).read_text(encoding="utf-8"))
    md = meta["metadata"]
    print(f"{root}: record_size {meta['record_size']}")
    print(f"{'array':<28} {'dtype':<6} {'shape':<18} {'chunks':<16} {'refs':>8} {'missing':>8} "
          f"{'inline':>6}  filters")  # fmt: skip
    paths: set[str] = set()
    for key in sorted(k for k in md if k.endswith("/.zarray")):
        name = key[: -len("/.zarray")]
        z = md[key]
        n_ref = n_missing = n_inline = 0
        for f in sorted((root / name).glob("refs.*.parq")):
            t = pq.read_table(f)
            has_path = pc.is_valid(t["path"])
            has_raw = pc.is_valid(t["raw"])
            n_ref += pc.sum(has_path).as_py() or 0
            n_inline += pc.sum(has_raw).as_py() or 0
            n_missing += t.num_rows - (pc.sum(pc.or_(has_path, has_raw)).as_py() or 0)
            paths.update(p for p in pc.unique(t["path"]).to_pylist() if p is not None)
        filters = ",".join(f["id"] for f in z.get("filters") or []) or "-"
        print(
            f"{name:<28} {z['dtype']:<6} {tuple(z['shape'])!s:<18} "
            f"{tuple(z['chunks'])!s:<16} {n_ref:>8} {n_missing:>8} {n_inline:>6}  {filters}"
        )
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    print(f"{len(paths)} referenced files; store size {size} bytes")
    return 0


def _check(args: argparse.Namespace) -> int:
    report = check_store(args.store, sample=args.sample, seed=args.seed)
    if report.mismatched:
        print(
            f"dafzarr: {args.store}: {report.mismatched} of {report.checked} sampled chunks "
            "differ from their source",
            file=sys.stderr,
        )
        return 1
    if not report.checked:
        print(
            f"dafzarr: {args.store}: nothing was checked: the store references no chunk in a "
            "source file (every chunk missing or inlined)",
            file=sys.stderr,
        )
        return 1
    return 0


# --- parser --------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """Add ``refs build|info|check`` to the top-level subparsers."""
    refs = sub.add_parser("refs", help="virtual reference stores over NetCDF4/HDF5 files")
    rsub = refs.add_subparsers(dest="refs_command", required=True)
    b = rsub.add_parser("build", help="scan files and write a kerchunk-Parquet store")
    b.add_argument("out", help="store directory to create")
    b.add_argument("files", nargs="+", help="NetCDF4/HDF5 files to scan")
    b.add_argument("--concat-dim", help="dimension to concatenate along (default: found)")
    b.add_argument("--public-prefix", help="URL prefix written into references instead of paths")
    b.add_argument("--placement", help="a GDAL multidimensional VRT or a saved placement table")
    b.add_argument("--save-placement", help="write the placement table to this parquet file")
    b.add_argument("--record-size", type=int, default=100_000)
    b.add_argument("--inline-threshold", type=int, default=0)
    b.add_argument("--workers", type=int, default=None, help="scan with N processes")
    b.add_argument("--skip-unsupported", action="store_true", help="skip, warn, do not fail")
    b.add_argument("--overwrite", action="store_true", help="replace an existing store")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=_build)
    i = rsub.add_parser("info", help="summarise a reference store")
    i.add_argument("store")
    i.set_defaults(func=_info)
    c = rsub.add_parser("check", help="compare sampled chunks with the source files")
    c.add_argument("store")
    c.add_argument("--sample", type=int, default=5, help="chunks per array (plus first/last)")
    c.add_argument("--seed", type=int, default=0)
    c.set_defaults(func=_check)


# --- demo ------------------------------------------------------------------------------------
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


def demo_step(root: str, out: TextIO) -> None:
    """Generate three daily NetCDF4 files, build one store, open it with xarray."""
    try:
        import netCDF4  # noqa: F401
        import xarray as xr
    except ImportError as exc:
        print(f"Virtual reference store demo skipped: {exc.name} is not installed", file=out)
        return

    from ._compose import virtualize

    print("Virtual reference store demo: NetCDF4 files -> kerchunk-Parquet", file=out)
    files = []
    for day in range(3):
        path = os.path.join(root, f"sst_{day}.nc")
        with atomic_file(path, force=True, create=False, suffix=".nc") as tmp:
            write_daily_netcdf(tmp, day, shape=(90, 180))  # replaced whole, never partial
        files.append(path)
    store = os.path.join(root, "sst.refs")
    t0 = time.perf_counter()
    vds = virtualize(files, store, progress=False, overwrite=True)
    print(
        f"  built {store}: {len(vds.arrays)} arrays over {len(files)} files "
        f"in {time.perf_counter() - t0:.3f} s",
        file=out,
    )
    opened = xr.open_dataset(
        open_reference_group(store).store, engine="zarr", zarr_format=2, consolidated=False
    )
    # The files read one by one (open_mfdataset would need dask), joined along time.
    parts = [xr.open_dataset(f) for f in files]
    try:
        want = xr.concat([p["sst"] for p in parts], dim="time")
        same = bool(np.array_equal(opened["sst"].values, want.values, equal_nan=True))
    finally:
        for p in parts:
            p.close()
    if not same:
        raise SelfCheckError("the reference store does not read back like the files")
    print(
        f"  xarray opens it: sst {dict(opened.sizes)}, mean {float(opened['sst'].mean()):.2f} "
        f"{opened['sst'].attrs.get('units')}, equal to the files read one by one with xarray",
        file=out,
    )
