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

from . import __version__
from ._config import show_config
from .errors import DafzarrError, RecoveryWarning
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
    with MmapZipStore(args.path, "r") as store:
        rows = store.info()
    print(f"{'size':>12} {'stored':>12} {'method':>6} {'crc32':>8} {'offset':>12}  name")
    for r in rows:
        offset = "" if r["data_offset"] is None else str(r["data_offset"])
        print(
            f"{r['size']:>12} {r['compressed_size']:>12} {r['method']:>6} {r['crc32']:08x} "
            f"{offset:>12}  {r['name']}"
        )
    total = sum(r["size"] for r in rows)
    print(f"{len(rows)} entries, {_human(total)} of data in {args.path}")
    return 0


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
        with MmapZipStore(path, "w") as store:
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
        _demo_arrayfile(root, out)
        if args.dir:
            print(f"  kept {path}", file=out)
    print("demo finished: OK", file=out)
    return 0


def _demo_arrayfile(root: str, out: Any) -> None:
    """The ArrayFile step of ``dafzarr demo``: arrays, a sidecar per flush, compaction."""
    import numpy as np

    from .arrayfile import ArrayFile, FileConfig

    path = os.path.join(root, "example.af")
    for name in os.listdir(root):
        if name.startswith("example.") and name.endswith((".af", ".stats")):
            os.unlink(os.path.join(root, name))
    rng = np.random.default_rng(1)
    signal = rng.normal(0, 1, size=(10_000, 4)).astype("float32")
    print("ArrayFile demo: many arrays in one object, with delta sidecars", file=out)
    with ArrayFile.create(path, config=FileConfig(codec="lz4")) as f:
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (DafzarrError, OSError) as exc:
        print(f"dafzarr: {exc}", file=sys.stderr)
        return 2
