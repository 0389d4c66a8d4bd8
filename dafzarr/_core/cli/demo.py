"""``dafzarr demo``: every capability on built-in example data, written and read back."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zipfile
from typing import Any

from ...errors import SelfCheckError
from ..atomic import atomic_directory, atomic_file
from ..examples import write_daily_netcdf
from ..zipstore.store import MmapZipStore
from .common import human

__all__ = ["run_demo"]


def _demo_daf(out: Any, root: str) -> None:
    """The Daf step of ``dafzarr demo``: build a small data set, convert it, read it back."""
    import numpy as np
    import scipy.sparse as sp

    from ..daf.copy import convert_daf
    from ..daf.zarrdaf import open_daf

    rng = np.random.default_rng(0)
    cells, genes = 2000, 500
    umis = sp.random(cells, genes, density=0.02, format="csc", dtype="float32", rng=rng)
    umis.data[:] = rng.integers(1, 50, umis.nnz)
    path = os.path.join(root, "example.daf.zarr")
    t0 = time.perf_counter()
    with atomic_directory(path, force=True) as tmp:  # a demo directory keeps its old one
        d = open_daf(tmp, "w+")
        d.set_scalar("organism", "example")
        d.add_axis("cell", [f"cell{i}" for i in range(cells)])
        d.add_axis("gene", [f"gene{i}" for i in range(genes)])
        d.set_vector("cell", "total_umis", np.asarray(umis.sum(axis=1)).ravel())
        d.set_vector("gene", "is_marker", rng.random(genes) < 0.05)
        d.set_matrix("cell", "gene", "UMIs", umis)
        with d.empty_dense_matrix("cell", "gene", "fraction", "float32") as frac:
            frac[:] = umis.toarray() / np.maximum(1, np.asarray(umis.sum(axis=1)))
        d.close()
    print(
        f"Daf demo: wrote {path} ({cells} cells x {genes} genes, sparse UMIs, a dense "
        f"fraction matrix) in {time.perf_counter() - t0:.3f} s",
        file=out,
    )
    zpath = os.path.join(root, "example.daf.zarr.zip")
    convert_daf(path, zpath, force=True)
    back = open_daf(zpath, "r")
    got = back.get_np_matrix("cell", "gene", "UMIs")
    assert (got != umis).nnz == 0, "UMIs do not round-trip"
    frac_back = back.get_np_matrix("cell", "gene", "fraction")
    print(
        f"  converted to {zpath} ({human(os.path.getsize(zpath))}); read back: UMIs "
        f"{got.shape} nnz {got.nnz}, fraction is a zero-copy view "
        f"(owns data={frac_back.flags.owndata}, column-major={frac_back.flags.f_contiguous})",
        file=out,
    )
    del frac_back
    back.close()


def _array(group: Any, name: str) -> Any:
    """``group[name]``, checked to be an array."""
    import zarr

    node = group[name]
    if not isinstance(node, zarr.Array):
        raise SelfCheckError(f"{name} is not an array")
    return node


def run_demo(args: argparse.Namespace) -> int:
    """``dafzarr demo``: all four capabilities on built-in data, each read back and checked."""
    import numpy as np
    import zarr

    out = sys.stdout
    with tempfile.TemporaryDirectory(prefix="dafzarr-demo-") as tmp:
        root = args.dir or tmp
        os.makedirs(root, exist_ok=True)
        path = os.path.join(root, "example.zarr.zip")
        rng = np.random.default_rng(0)
        temperature = rng.normal(15, 8, size=(365, 180)).astype("float32")
        counts = rng.integers(0, 1000, size=(2000,), dtype="int64")

        print("MmapZipStore demo: a Zarr store in one ZIP file, served from a memory map", file=out)
        t0 = time.perf_counter()
        with (
            atomic_file(path, force=True, create=False) as tmp_zip,
            MmapZipStore(tmp_zip, "w") as store,
        ):
            group = zarr.open_group(
                store=store, mode="w", zarr_format=2, attributes={"title": "dafzarr demo"}
            )
            t = group.create_array(
                "temperature",
                shape=temperature.shape,
                chunks=(73, 180),
                dtype="float32",
                compressors=None,
            )
            t[:] = temperature
            c = group.create_array(
                "counts", shape=counts.shape, chunks=(2000,), dtype="int64", compressors=None
            )
            c[:] = counts
            with store.batch():  # many small entries, one commit
                for i in range(100):
                    store[f"notes/{i:03d}"] = f"note {i}".encode()
        size = os.path.getsize(path)
        print(
            f"  wrote {path} ({human(size)}): a Zarr v2 group with 2 arrays and 100 notes "
            f"in {time.perf_counter() - t0:.3f} s",
            file=out,
        )

        with MmapZipStore(path, "r") as store:
            group = zarr.open_group(store=store, mode="r")
            back = np.asarray(_array(group, "temperature")[:])
            back_counts = np.asarray(_array(group, "counts")[:])
            assert np.array_equal(back, temperature), "temperature does not round-trip"
            assert np.array_equal(back_counts, counts), "counts do not round-trip"
            print(
                f"  read back through zarr-python: temperature {back.shape} mean "
                f"{back.mean():.2f}, counts sum {int(back_counts.sum())}, "
                f"attrs {dict(group.attrs)}",
                file=out,
            )
            view = store.try_mmap_entry_as("counts/0", "int64", counts.shape)
            if view is None or not np.array_equal(view, counts):
                raise SelfCheckError("the zero-copy view of counts/0 does not match")
            print(
                "  zero-copy: try_mmap_entry_as('counts/0') is a read-only numpy view of the "
                f"mapped file (writeable={view.flags.writeable}, owns data={view.flags.owndata})",
                file=out,
            )
            del view
            print(f"  {len(store)} entries; CRC check: {store.verify() or 'all intact'}", file=out)

        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
        print(
            f"  Python zipfile reads it too: {len(zf.namelist())} entries, testzip -> {bad}",
            file=out,
        )
        # A read through zarr's own ZipStore, the peer most users know.
        peer = zarr.open_group(store=zarr.storage.ZipStore(path, mode="r"), mode="r")
        assert np.array_equal(np.asarray(_array(peer, "temperature")[:]), temperature)
        print("  zarr.storage.ZipStore opens the same archive with identical values", file=out)
        _demo_daf(out, root)
        _demo_arrayfile(root, out)
        if args.dir:
            print(f"  kept {path}", file=out)
        _demo_refs(root, out)
    print("demo finished: OK", file=out)
    return 0


def _demo_arrayfile(root: str, out: Any) -> None:
    """The ArrayFile step of ``dafzarr demo``: arrays, a sidecar per flush, compaction."""
    import numpy as np

    from ..arrayfile.file import ArrayFile
    from ..arrayfile.fileconfig import FileConfig

    # The file and its sidecars live in one folder, replaced whole (never partial).
    folder = os.path.join(root, "example.arrayfile")
    path = os.path.join(folder, "example.af")
    rng = np.random.default_rng(1)
    signal = rng.normal(0, 1, size=(10_000, 4)).astype("float32")
    print("ArrayFile demo: many arrays in one object, with delta sidecars", file=out)
    with (
        atomic_directory(folder, force=True) as tmp,
        ArrayFile.create(os.path.join(tmp, "example.af"), config=FileConfig(codec="lz4")) as f,
    ):
        f.define_array("signal", "f4", ["t", "ch"], signal.shape, chunk_shape=[2048, 4])
        f.write_array("signal", [0, 0], signal)
        f.set_attribute("signal", "units", "mV")
        f.define_array("channels", str, ["ch"], [4])
        f.write_array("channels", [0], ["Fz", "Cz", "Pz", "Oz"])
        f.flush()
        f.write_array("signal", [100, 0], np.zeros((10, 4), "float32"))
        signal[100:110] = 0
        f.flush()
        layers = f.num_layers
        f.compact()
    with ArrayFile.open(path) as f:
        assert np.array_equal(f.read_array("signal"), signal), "signal does not round-trip"
        stats = f.array_stats("signal")
        print(
            f"  {layers} layers compacted into {os.path.basename(path)} "
            f"({human(os.path.getsize(path))}): arrays {f.list_arrays()}, units "
            f"{f.get_attribute('signal', 'units')!r}, channels {f.read_array('channels').tolist()}",
            file=out,
        )
        if stats is not None:
            print(
                f"  statistics: min {stats.min:.3f}, max {stats.max:.3f}, {stats.row_count} values",
                file=out,
            )


def _demo_refs(root: str, out: Any) -> None:
    """Generate three daily NetCDF4 files, build one store, open it with xarray."""
    import numpy as np

    try:
        import netCDF4  # noqa: F401
        import xarray as xr
    except ImportError as exc:
        print(f"Virtual reference store demo skipped: {exc.name} is not installed", file=out)
        return

    from ..refs.check import open_reference_group
    from ..refs.compose import virtualize

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
