"""``dafzarr daf ...``: describe, list, query and convert Daf data sets stored as Zarr."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ._common import add_output_options, emit_json, progress_wanted, say

__all__ = ["add_parser"]


def _summary(path: str) -> dict[str, Any]:
    from ..daf import open_daf

    d = open_daf(path, "r")
    try:
        return d.summary()
    finally:
        d.close()


def _describe(args: argparse.Namespace) -> int:
    from ..daf import open_daf

    if args.json:
        emit_json(_summary(args.path))
        return 0
    d = open_daf(args.path, "r")
    try:
        print(d.description(), end="")
    finally:
        d.close()
    return 0


def _ls(args: argparse.Namespace) -> int:
    from ..daf import describe_property

    info = _summary(args.path)
    if args.json:
        emit_json(info)
        return 0
    for name, value in info["scalars"].items():
        print(f"scalar  {name} = {value!r}")
    for axis, n in info["axes"].items():
        print(f"axis    {axis} ({n} entries)")
    for name, prop in info["vectors"].items():
        print(f"vector  {name}: {describe_property(prop)}")
    for name, prop in info["matrices"].items():
        print(f"matrix  {name}: {describe_property(prop)}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from ..daf import convert_daf

    t0 = time.perf_counter()
    fmt = convert_daf(args.source, args.destination, zarr_format=args.zarr_format,
                      force=args.force, progress=progress_wanted(args))
    say(args, f"{args.source} -> {args.destination} (zarr v{fmt}) in "
              f"{time.perf_counter() - t0:.2f} s")
    return 0


def _jsonable(values: Any) -> Any:
    return values.tolist() if hasattr(values, "tolist") else values


def _query(args: argparse.Namespace) -> int:
    import sys

    import pandas as pd

    from ..daf import open_daf

    d = open_daf(args.path, "r")
    try:
        result = d.get_pd_query(args.query)
    finally:
        d.close()
    if isinstance(result, set):
        names = sorted(result)
        if args.json:
            emit_json(names)
        else:
            print("\n".join(names))
    elif isinstance(result, pd.Series):
        if args.json:
            emit_json({"axis": result.index.name, "entries": list(result.index),
                       "values": _jsonable(result.to_numpy())})
        elif args.csv:
            result.rename("value").to_csv(sys.stdout, index_label=result.index.name or "entry")
        else:
            print(result.to_string())
    elif isinstance(result, pd.DataFrame):
        if args.json:
            emit_json({"rows_axis": result.index.name, "columns_axis": result.columns.name,
                       "rows": list(result.index), "columns": list(result.columns),
                       "values": _jsonable(result.to_numpy())})
        elif args.csv:
            result.to_csv(sys.stdout, index_label=result.index.name or "entry")
        else:
            print(result.to_string())
    elif args.json:
        emit_json(_jsonable(result))
    else:
        print(result)
    return 0


def add_parser(sub: Any) -> None:
    """The ``daf`` command and its subcommands."""
    dafcmd = sub.add_parser("daf", help="inspect and convert Daf data sets stored as Zarr")
    dsub = dafcmd.add_subparsers(dest="daf_command", required=True)
    for name, aliases, func, text in (
        ("describe", ["info"], _describe, "describe a data set"),
        ("ls", [], _ls, "list every scalar, axis, vector and matrix"),
    ):
        p = dsub.add_parser(name, aliases=aliases, help=text)
        p.add_argument("path", help="X.daf.zarr, X.daf.zarr.zip, X.dafs.zarr.zip#/group or URL")
        add_output_options(p, json_output=True)
        p.set_defaults(func=func)
    query = dsub.add_parser(
        "query", help="print the result of a Daf query (e.g. '@ cell [ ! is_doublet ] : type')")
    query.add_argument("path", help="X.daf.zarr, X.daf.zarr.zip, X.dafs.zarr.zip#/group or URL")
    query.add_argument("query", help="the query text")
    add_output_options(query)
    form = query.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true",
                      help="print one JSON document on stdout instead of text")
    form.add_argument("--csv", action="store_true",
                      help="print vectors and matrices as CSV (entry names first)")
    query.set_defaults(func=_query)
    conv = dsub.add_parser(
        "convert", help="copy a data set to another path (directory <-> ZIP, v2 <-> v3)"
    )
    conv.add_argument("source")
    conv.add_argument("destination", help="created (replaced only with --force)")
    conv.add_argument("--force", action="store_true", help="replace an existing destination")
    conv.add_argument("--zarr-format", type=int, choices=(2, 3), default=None,
                      help="layout of the destination (default: the source's)")
    add_output_options(conv)
    conv.set_defaults(func=_convert)
