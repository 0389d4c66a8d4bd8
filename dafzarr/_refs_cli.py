"""``dafzarr refs build|info|check`` and the reference-store step of ``dafzarr demo``."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ._atomic import atomic_file

__all__ = [
    "PLACEMENT_FILE",
    "CheckReport",
    "add_parser",
    "check_store",
    "demo_step",
    "open_reference_group",
    "write_daily_netcdf",
]

# Where a composed store keeps its placement table (readers ignore files not in .zmetadata).
PLACEMENT_FILE = ".placement.parquet"


def open_reference_group(
    store_path: str | os.PathLike[str], *, remote_protocol: str = "file"
) -> Any:
    """The store as a read-only zarr v2 group, read through fsspec with the pyarrow engine."""
    import zarr
    from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem

    mapper = LazyReferenceMapper(os.fspath(store_path), engine="pyarrow")
    fs = ReferenceFileSystem(fo=mapper, remote_protocol=remote_protocol, asynchronous=True)
    return zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r", zarr_format=2)


# --- build ---------------------------------------------------------------------------------
def _build(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from . import refs

    files = [os.fspath(f) for f in args.files]
    public = None
    if args.public_prefix:
        public = [args.public_prefix.rstrip("/") + "/" + Path(f).name for f in files]
    sources = refs.mosaic_sources(files, public)
    placement: Any = args.placement
    if placement and str(placement).endswith((".parquet", ".parq")):
        placement = pq.read_table(placement)
    t0 = time.perf_counter()
    vds = refs.virtualize(
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
    meta = json.loads((root / ".zmetadata").read_text(encoding="utf-8"))
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


# --- check ----------------------------------------------------------------------------------
def _placement_offsets(root: Path) -> dict[tuple[str, str], list[int]]:
    """``(source URL, variable) -> destination offset`` from the store's saved placement."""
    import pyarrow.parquet as pq

    path = root / PLACEMENT_FILE
    if not path.is_file():
        return {}
    t = pq.read_table(path)
    return {
        (s, v): o
        for s, v, o in zip(
            t["source"].to_pylist(), t["variable"].to_pylist(), t["dest_offset"].to_pylist(),
            strict=True,
        )
    }  # fmt: skip


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_store` compared: sampled chunks, and how many differed."""

    checked: int
    mismatched: int

    @property
    def ok(self) -> bool:
        """At least one chunk was compared, and none differed."""
        return self.checked > 0 and not self.mismatched


def check_store(
    store: str | os.PathLike[str], *, sample: int = 5, seed: int = 0, out: TextIO | None = None
) -> CheckReport:
    """Compare a sample of each array's chunks, read through the store, with the source files.

    Each sampled chunk is read through fsspec + zarr and compared bit for bit with the same
    region read by h5py from the referenced file (at the position the store's placement
    table gives; identity for single-file stores). Sources must be local paths or
    ``file://`` URLs. Chunks that are missing or inlined have no source to compare with; a
    store with no other chunks gives a report of 0 checked, which is not :attr:`~CheckReport.ok`.
    """
    import h5py
    import pyarrow.parquet as pq

    out = out or sys.stdout
    root = Path(store)
    meta = json.loads((root / ".zmetadata").read_text(encoding="utf-8"))
    record_size = int(meta["record_size"])
    placement = _placement_offsets(root)
    group = open_reference_group(root)
    rng = np.random.default_rng(seed)
    bad = checked = 0
    for key in sorted(k for k in meta["metadata"] if k.endswith("/.zarray")):
        name = key[: -len("/.zarray")]
        z = meta["metadata"][key]
        shape, chunks = tuple(z["shape"]), tuple(z["chunks"])
        grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))
        n = math.prod(grid)
        nfiles = max(1, -(-n // record_size))
        tables = [pq.read_table(root / name / f"refs.{k}.parq") for k in range(nfiles)]
        path = np.concatenate([t["path"].to_numpy(zero_copy_only=False) for t in tables])
        present = np.flatnonzero(np.array([p is not None for p in path], dtype=bool))
        if not present.size:
            continue
        pick = set(rng.choice(present, size=min(sample, present.size), replace=False).tolist())
        pick.update({int(present[0]), int(present[-1])})
        arr = group[name]
        for fi in sorted(pick):
            url = str(path[fi])
            src = url.removeprefix("file://")
            idx = np.unravel_index(fi, grid) if grid else ()
            dest = placement.get((url, name), [0] * len(shape))
            lo = [int(i) * c for i, c in zip(idx, chunks, strict=True)]
            hi = [min(a + c, s) for a, c, s in zip(lo, chunks, shape, strict=True)]
            with h5py.File(src, "r") as f:
                ds = f[name]
                llo = [a - d for a, d in zip(lo, dest, strict=True)]
                lhi = [min(b - d, s) for b, d, s in zip(hi, dest, ds.shape, strict=True)]
                want = np.asarray(ds[tuple(map(slice, llo, lhi))] if shape else ds[()])
            got = np.asarray(arr[tuple(map(slice, lo, hi))] if shape else arr[()])
            common = tuple(slice(0, m) for m in want.shape)
            checked += 1
            if got[common].tobytes() != want.astype(got.dtype, copy=False).tobytes():
                bad += 1
                key_s = ".".join(map(str, idx)) or "0"
                print(f"BAD  {name} chunk {key_s} differs from {src}:{name}", file=out)
    print(f"{root}: {checked - bad} of {checked} sampled chunks equal their source", file=out)
    return CheckReport(checked=checked, mismatched=bad)


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

    from . import refs

    print("Virtual reference store demo: NetCDF4 files -> kerchunk-Parquet", file=out)
    files = []
    for day in range(3):
        path = os.path.join(root, f"sst_{day}.nc")
        with atomic_file(path, force=True, create=False, suffix=".nc") as tmp:
            write_daily_netcdf(tmp, day, shape=(90, 180))  # replaced whole, never partial
        files.append(path)
    store = os.path.join(root, "sst.refs")
    t0 = time.perf_counter()
    vds = refs.virtualize(files, store, progress=False, overwrite=True)
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
        raise RuntimeError("the reference store does not read back like the files")
    print(
        f"  xarray opens it: sst {dict(opened.sizes)}, mean {float(opened['sst'].mean()):.2f} "
        f"{opened['sst'].attrs.get('units')}, equal to the files read one by one with xarray",
        file=out,
    )
