"""The ``dafzarr`` command line (also ``python -m dafzarr``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Sequence
from typing import Any

from . import __version__, _refs_cli
from ._atomic import atomic_directory, atomic_file
from ._config import show_config
from .errors import DafzarrError, RecoveryWarning, RefusedEntryWarning
from .zipstore import MmapZipStore

__all__ = ["main"]


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# --- dafzarr zip ... ----------------------------------------------------------------------


def _zip_ls(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RefusedEntryWarning)  # listed below, one per line
        with MmapZipStore(args.path, "r") as store:
            rows = store.info()
    print(f"{'size':>12} {'stored':>12} {'method':>6} {'crc32':>8} {'offset':>12}  name")
    for r in rows:
        offset = (
            "REFUSED" if r["refused"] else "BAD" if r["error"]
            else "" if r["data_offset"] is None else str(r["data_offset"])
        )
        print(
            f"{r['size']:>12} {r['compressed_size']:>12} {r['method']:>6} {r['crc32']:08x} "
            f"{offset:>12}  {r['name']}"
        )
    total = sum(r["size"] for r in rows)
    print(f"{len(rows)} entries, {_human(total)} of data in {args.path}")
    bad = [r for r in rows if r["error"]]
    for r in bad:
        print(f"{'refused' if r['refused'] else 'damaged'}: {r['error']}", file=sys.stderr)
    return 1 if bad else 0


def _zip_verify(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    with MmapZipStore(args.path, "r") as store:
        n = len(store)
        bad = store.verify()
    if bad:
        for key in bad:
            print(f"BAD  {key}")
        print(f"{args.path}: {len(bad)} of {n} entries fail their CRC-32 or do not decode")
        return 1
    print(f"{args.path}: all {n} entries intact ({time.perf_counter() - t0:.2f} s)")
    return 0


def _zip_repair(args: argparse.Namespace) -> int:
    before = os.path.getsize(args.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoveryWarning)
        with MmapZipStore(args.path, "r+") as store:
            n = len(store)
    messages = [str(w.message) for w in caught if issubclass(w.category, RecoveryWarning)]
    for m in messages:
        print(m)
    after = os.path.getsize(args.path)
    state = "repaired" if messages else "already consistent"
    print(f"{args.path}: {state}; {n} entries, {before} -> {after} bytes")
    return 0


def _zip_cat(args: argparse.Namespace) -> int:
    with MmapZipStore(args.path, "r") as store:
        if args.key not in store:
            print(f"dafzarr: no entry {args.key!r} in {args.path}", file=sys.stderr)
            return 1
        data = store[args.key]
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        del data
    return 0


def _zip_compact(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    before = os.path.getsize(args.path)
    space = MmapZipStore.compact(args.path, args.output, force=args.force,
                                 progress=not args.quiet)
    target = args.output or args.path
    print(f"{args.path} -> {target}: {space.entries} entries, {_human(before)} -> "
          f"{_human(space.file_size)} ({time.perf_counter() - t0:.2f} s)")
    return 0


def _zip_pack(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    space = MmapZipStore.pack(args.directory, args.output, force=args.force,
                              progress=not args.quiet)
    print(f"{args.directory} -> {args.output}: {space.entries} entries, "
          f"{_human(space.file_size)} ({time.perf_counter() - t0:.2f} s)")
    return 0


# --- dafzarr daf ... ----------------------------------------------------------------------


def _daf_info(args: argparse.Namespace) -> int:
    from .daf import open_daf

    d = open_daf(args.path, "r")
    try:
        sys.stdout.write(d.description())
    finally:
        d.close()
    return 0


def _daf_ls(args: argparse.Namespace) -> int:
    from .daf import open_daf

    d = open_daf(args.path, "r")
    try:
        for name in sorted(d.scalars_set()):
            print(f"scalar  {name} = {d.get_scalar(name)!r}")
        axes = sorted(d.axes_set())
        for axis in axes:
            print(f"axis    {axis} ({d.axis_length(axis)} entries)")
        for axis in axes:
            for name in sorted(d.vectors_set(axis)):
                print(f"vector  {axis}/{name}: {d._describe(f'vectors/{axis}/{name}')}")
        for rows in axes:
            for cols in axes:
                for name in sorted(d.matrices_set(rows, cols, relayout=False)):
                    what = d._describe(f"matrices/{rows}/{cols}/{name}")
                    print(f"matrix  {rows},{cols}/{name}: {what}")
    finally:
        d.close()
    return 0


def _daf_convert(args: argparse.Namespace) -> int:
    from .daf import convert_daf

    t0 = time.perf_counter()
    fmt = convert_daf(args.source, args.destination, zarr_format=args.zarr_format,
                      force=args.force, progress=not args.quiet)
    print(f"{args.source} -> {args.destination} (zarr v{fmt}) in "
          f"{time.perf_counter() - t0:.2f} s")
    return 0


def _demo_daf(out: Any, root: str) -> None:
    """The Daf step of ``dafzarr demo``: build a small data set, convert it, read it back."""
    import numpy as np
    import scipy.sparse as sp

    from .daf import convert_daf, open_daf

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
    print(f"Daf demo: wrote {path} ({cells} cells x {genes} genes, sparse UMIs, a dense "
          f"fraction matrix) in {time.perf_counter() - t0:.3f} s", file=out)
    zpath = os.path.join(root, "example.daf.zarr.zip")
    convert_daf(path, zpath, force=True)
    back = open_daf(zpath, "r")
    got = back.get_np_matrix("cell", "gene", "UMIs")
    assert (got != umis).nnz == 0, "UMIs do not round-trip"
    frac_back = back.get_np_matrix("cell", "gene", "fraction")
    print(f"  converted to {zpath} ({_human(os.path.getsize(zpath))}); read back: UMIs "
          f"{got.shape} nnz {got.nnz}, fraction is a zero-copy view "
          f"(owns data={frac_back.flags.owndata}, column-major={frac_back.flags.f_contiguous})",
          file=out)
    del frac_back
    back.close()


# --- dafzarr demo -------------------------------------------------------------------------


def _array(group: Any, name: str) -> Any:
    """``group[name]``, checked to be an array."""
    import zarr

    node = group[name]
    if not isinstance(node, zarr.Array):
        raise TypeError(f"{name} is not an array")
    return node


def _demo(args: argparse.Namespace) -> int:
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

        print("MmapZipStore demo: an append-only Zarr store in one ZIP file", file=out)
        t0 = time.perf_counter()
        with atomic_file(path, force=True, create=False) as tmp_zip, \
                MmapZipStore(tmp_zip, "w") as store:
            # Append-only: attributes are given when a node is created, not updated later.
            group = zarr.open_group(
                store=store, mode="w", zarr_format=2, attributes={"title": "dafzarr demo"}
            )
            t = group.create_array(
                "temperature", shape=temperature.shape, chunks=(73, 180), dtype="float32",
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
            f"  wrote {path} ({_human(size)}): a Zarr v2 group with 2 arrays and 100 notes "
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
                raise RuntimeError("the zero-copy view of counts/0 does not match")
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
        _refs_cli.demo_step(root, out)
    print("demo finished: OK", file=out)
    return 0


def _demo_arrayfile(root: str, out: Any) -> None:
    """The ArrayFile step of ``dafzarr demo``: arrays, a sidecar per flush, compaction."""
    import numpy as np

    from .arrayfile import ArrayFile, FileConfig

    # The file and its sidecars live in one folder, replaced whole (never partial).
    folder = os.path.join(root, "example.arrayfile")
    path = os.path.join(folder, "example.af")
    rng = np.random.default_rng(1)
    signal = rng.normal(0, 1, size=(10_000, 4)).astype("float32")
    print("ArrayFile demo: many arrays in one object, with delta sidecars", file=out)
    with atomic_directory(folder, force=True) as tmp, \
            ArrayFile.create(os.path.join(tmp, "example.af"),
                             config=FileConfig(codec="lz4")) as f:
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
            f"({_human(os.path.getsize(path))}): arrays {f.list_arrays()}, units "
            f"{f.get_attribute('signal', 'units')!r}, channels {f.read_array('channels').tolist()}",
            file=out,
        )
        if stats is not None:
            print(f"  statistics: min {stats.min:.3f}, max {stats.max:.3f}, "
                  f"{stats.row_count} values", file=out)


# --- entry point --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dafzarr", description="Zero-copy array storage: ZIP stores, Daf, references."
    )
    parser.add_argument("--version", action="version", version=f"dafzarr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="build and read back an example archive")
    demo.add_argument("--dir", help="keep the example files in this directory")
    demo.set_defaults(func=_demo)

    config = sub.add_parser("config", help="print the build configuration")
    config.set_defaults(func=lambda args: 0 if show_config() else 1)

    zipcmd = sub.add_parser("zip", help="inspect and repair MmapZipStore archives")
    zsub = zipcmd.add_subparsers(dest="zip_command", required=True)
    for name, func, text in (
        ("ls", _zip_ls, "list the entries"),
        ("verify", _zip_verify, "check every entry's CRC-32 (read-only)"),
        ("repair", _zip_repair, "recover an archive left by an interrupted writer"),
    ):
        p = zsub.add_parser(name, help=text)
        p.add_argument("path")
        p.set_defaults(func=func)
    cat = zsub.add_parser("cat", help="write one entry's bytes to standard output")
    cat.add_argument("path")
    cat.add_argument("key")
    cat.set_defaults(func=_zip_cat)
    compact = zsub.add_parser(
        "compact", help="rewrite the live entries into a fresh archive (gives dead bytes back)"
    )
    compact.add_argument("path")
    compact.add_argument("-o", "--output", default=None,
                         help="write the compacted archive here (default: in place)")
    compact.add_argument("--force", action="store_true", help="replace an existing output")
    compact.add_argument("--quiet", action="store_true", help="no progress report on stderr")
    compact.set_defaults(func=_zip_compact)
    pack = zsub.add_parser(
        "pack", help="pack a Zarr directory store into an aligned archive"
    )
    pack.add_argument("directory")
    pack.add_argument("output")
    pack.add_argument("--force", action="store_true", help="replace an existing output")
    pack.add_argument("--quiet", action="store_true", help="no progress report on stderr")
    pack.set_defaults(func=_zip_pack)

    dafcmd = sub.add_parser("daf", help="inspect and convert Daf data sets stored as Zarr")
    dsub = dafcmd.add_subparsers(dest="daf_command", required=True)
    for name, func, text in (
        ("info", _daf_info, "describe a data set"),
        ("ls", _daf_ls, "list every scalar, axis, vector and matrix"),
    ):
        p = dsub.add_parser(name, help=text)
        p.add_argument("path", help="X.daf.zarr, X.daf.zarr.zip, X.dafs.zarr.zip#/group or URL")
        p.set_defaults(func=func)
    conv = dsub.add_parser(
        "convert", help="copy a data set to another path (directory <-> ZIP, v2 <-> v3)"
    )
    conv.add_argument("source")
    conv.add_argument("destination", help="created (replaced only with --force)")
    conv.add_argument("--force", action="store_true", help="replace an existing destination")
    conv.add_argument("--zarr-format", type=int, choices=(2, 3), default=None,
                      help="layout of the destination (default: the source's)")
    conv.add_argument("--quiet", action="store_true", help="no progress report on stderr")
    conv.set_defaults(func=_daf_convert)
    _refs_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (DafzarrError, OSError) as exc:
        print(f"dafzarr: {exc}", file=sys.stderr)
        return 2
