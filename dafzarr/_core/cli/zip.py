"""``dafzarr zip ...``: inspect, verify, repair, compact and pack MmapZipStore archives."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import warnings
from typing import Any

from ...errors import RecoveryWarning, RefusedEntryWarning
from ..zipstore.store import MmapZipStore
from .common import add_output_options, emit_json, human, progress_wanted, say

__all__ = ["add_parser"]


def _ls(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RefusedEntryWarning)  # listed below, one per line
        with MmapZipStore(args.path, "r") as store:
            rows = store.info()
    bad = [r for r in rows if r["error"]]
    if args.json:
        emit_json({"path": args.path, "entries": rows})
        return 1 if bad else 0
    print(f"{'size':>12} {'stored':>12} {'method':>6} {'crc32':>8} {'offset':>12}  name")
    for r in rows:
        offset = (
            "REFUSED"
            if r["refused"]
            else "BAD"
            if r["error"]
            else ""
            if r["data_offset"] is None
            else str(r["data_offset"])
        )
        print(
            f"{r['size']:>12} {r['compressed_size']:>12} {r['method']:>6} {r['crc32']:08x} "
            f"{offset:>12}  {r['name']}"
        )
    total = sum(r["size"] for r in rows)
    say(args, f"{len(rows)} entries, {human(total)} of data in {args.path}")
    for r in bad:
        print(f"{'refused' if r['refused'] else 'damaged'}: {r['error']}", file=sys.stderr)
    return 1 if bad else 0


def _info(args: argparse.Namespace) -> int:
    with MmapZipStore(args.path, "r") as store:
        space = store.space()
        comment = store.comment
    if args.json:
        emit_json(
            {
                "path": args.path,
                **dataclasses.asdict(space),
                "comment": comment.decode("utf-8", "replace"),
            }
        )
        return 0
    print(f"{args.path}: {space.entries} entries in {human(space.file_size)}")
    print(f"  live bytes       {space.live_bytes:>14}  ({human(space.live_bytes)})")
    print(
        f"  dead bytes       {space.dead_bytes:>14}  ({human(space.dead_bytes)}; "
        "dafzarr zip compact gives them back)"
    )
    if space.free_bytes:
        print(
            f"  free bytes       {space.free_bytes:>14}  ({human(space.free_bytes)}; room a "
            "writer keeps for its next commits, given back when it closes)"
        )
    print(f"  directory bytes  {space.directory_bytes:>14}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    with MmapZipStore(args.path, "r") as store:
        n = len(store)
        bad = store.verify()
    if args.json:
        emit_json({"path": args.path, "entries": n, "bad": bad})
        return 1 if bad else 0
    for key in bad:
        print(f"BAD  {key}")
    if bad:
        say(args, f"{args.path}: {len(bad)} of {n} entries fail their CRC-32 or do not decode")
        return 1
    say(args, f"{args.path}: all {n} entries intact ({time.perf_counter() - t0:.2f} s)")
    return 0


def _repair(args: argparse.Namespace) -> int:
    before = os.path.getsize(args.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoveryWarning)
        with MmapZipStore(args.path, "r+") as store:
            n = len(store)
    messages = [str(w.message) for w in caught if issubclass(w.category, RecoveryWarning)]
    for m in messages:
        say(args, m)
    after = os.path.getsize(args.path)
    state = "repaired" if messages else "already consistent"
    say(args, f"{args.path}: {state}; {n} entries, {before} -> {after} bytes")
    return 0


def _cat(args: argparse.Namespace) -> int:
    with MmapZipStore(args.path, "r") as store:
        if args.key not in store:
            print(f"dafzarr: no entry {args.key!r} in {args.path}", file=sys.stderr)
            return 1
        data = store[args.key]
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        finally:
            del data
    return 0


def _compact(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    before = os.path.getsize(args.path)
    space = MmapZipStore.compact(
        args.path, args.output, force=args.force, progress=progress_wanted(args)
    )
    target = args.output or args.path
    say(
        args,
        f"{args.path} -> {target}: {space.entries} entries, {human(before)} -> "
        f"{human(space.file_size)} ({time.perf_counter() - t0:.2f} s)",
    )
    return 0


def _pack(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    space = MmapZipStore.pack(
        args.directory, args.output, force=args.force, progress=progress_wanted(args)
    )
    say(
        args,
        f"{args.directory} -> {args.output}: {space.entries} entries, "
        f"{human(space.file_size)} ({time.perf_counter() - t0:.2f} s)",
    )
    return 0


def add_parser(sub: Any) -> None:
    """The ``zip`` command and its subcommands."""
    zipcmd = sub.add_parser("zip", help="inspect and repair MmapZipStore archives")
    zsub = zipcmd.add_subparsers(dest="zip_command", required=True)
    for name, func, text, listing in (
        ("ls", _ls, "list the entries", True),
        ("info", _info, "live, dead and directory bytes of an archive", True),
        ("verify", _verify, "check every entry's CRC-32 (read-only)", True),
        ("repair", _repair, "recover an archive left by an interrupted writer", False),
    ):
        p = zsub.add_parser(name, help=text)
        p.add_argument("path")
        add_output_options(p, json_output=listing)
        p.set_defaults(func=func)
    cat = zsub.add_parser("cat", help="write one entry's bytes to standard output")
    cat.add_argument("path")
    cat.add_argument("key")
    add_output_options(cat)
    cat.set_defaults(func=_cat)
    compact = zsub.add_parser(
        "compact", help="rewrite the live entries into a fresh archive (gives dead bytes back)"
    )
    compact.add_argument("path")
    compact.add_argument(
        "-o", "--output", default=None, help="write the compacted archive here (default: in place)"
    )
    compact.add_argument("--force", action="store_true", help="replace an existing output")
    add_output_options(compact)
    compact.set_defaults(func=_compact)
    pack = zsub.add_parser("pack", help="pack a Zarr directory store into an aligned archive")
    pack.add_argument("directory")
    pack.add_argument("output")
    pack.add_argument("--force", action="store_true", help="replace an existing output")
    add_output_options(pack)
    pack.set_defaults(func=_pack)
