"""``dafzarr daf ...``: describe, list, query, convert, copy and concatenate Daf data sets
stored as Zarr."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import add_output_options, emit_json, progress_wanted, say

__all__ = ["add_parser"]


def _summary(path: str) -> dict[str, Any]:
    from ..daf.zarrdaf import open_daf

    d = open_daf(path, "r")
    try:
        return d.summary()
    finally:
        d.close()


def _describe(args: argparse.Namespace) -> int:
    from ..daf.zarrdaf import open_daf

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
    from ..daf.describe import describe_property

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
    from ..daf.copy import convert_daf

    t0 = time.perf_counter()
    fmt = convert_daf(
        args.source,
        args.destination,
        zarr_format=args.zarr_format,
        force=args.force,
        progress=progress_wanted(args),
    )
    say(
        args,
        f"{args.source} -> {args.destination} (zarr v{fmt}) in {time.perf_counter() - t0:.2f} s",
    )
    return 0


def _stored_name(path: str) -> str:
    """A data set's name for ``concat``: its ``name`` scalar, else its file's or group's."""
    from ..daf.zarrdaf import ZarrDaf

    d = ZarrDaf(path, "r")
    try:
        stored = d.get_scalar("name", default=None)
    finally:
        d.close()
    if stored is not None:
        return str(stored)
    base = path.rstrip("/").split("#/")[-1].rsplit("/", 1)[-1]
    for ending in (".dafs.zarr.zip", ".daf.zarr.zip", ".daf.zarr"):
        base = base.removesuffix(ending)
    return base


def _concat(args: argparse.Namespace) -> int:
    from ..daf.copy import new_destination
    from ..daf.ops.concat import concatenate
    from ..daf.zarrdaf import ZarrDaf

    t0 = time.perf_counter()
    sources: list[ZarrDaf] = []
    try:
        sources.extend(ZarrDaf(path, "r") for path in args.sources)  # kept as each opens
        names = args.name or [_stored_name(path) for path in args.sources]
        fmt = args.zarr_format or sources[0].zarr_format
        with new_destination(args.destination, fmt, args.force) as dst:
            concatenate(
                dst,
                args.axis,
                sources,
                names=names,
                dataset_axis=None if args.no_dataset_axis else args.dataset_axis,
                prefix=args.prefix,
                progress=progress_wanted(args),
            )
            cells = {axis: dst.axis_length(axis) for axis in args.axis}
    finally:
        for src in sources:
            src.close()
    lengths = ", ".join(f"{n} {axis} entries" for axis, n in cells.items())
    say(
        args,
        f"{len(sources)} data sets -> {args.destination} ({lengths}) in "
        f"{time.perf_counter() - t0:.2f} s",
    )
    return 0


def _empty_values(texts: list[str]) -> dict[tuple[str, ...], Any]:
    """``--empty AXIS,NAME=VALUE`` (or ``ROWS,COLUMNS,NAME=VALUE``, or
    ``MAIN,ROWS,COLUMNS,NAME=VALUE`` for a tensor): the value is read as a query value is
    (``true``/``false``, integers, floats, else a string)."""
    from ...errors import InvalidArgumentError
    from ..daf.query.literals import guess_value

    out: dict[tuple[str, ...], Any] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        parts = tuple(key.split(","))
        if not sep or not 2 <= len(parts) <= 4 or not all(parts):
            raise InvalidArgumentError(
                f"invalid --empty: {text!r} (expected AXIS,NAME=VALUE, "
                "ROWS_AXIS,COLUMNS_AXIS,NAME=VALUE or MAIN_AXIS,ROWS_AXIS,COLUMNS_AXIS,NAME=VALUE)"
            )
        out[parts] = guess_value(value)[0]
    return out


def _copy(args: argparse.Namespace) -> int:
    from ..daf.ops.copy_all import copy_all
    from ..daf.zarrdaf import open_daf

    t0 = time.perf_counter()
    empty = _empty_values(args.empty) if args.empty else None
    src = open_daf(args.source, "r")
    try:
        dst = open_daf(args.destination, "w+")
        try:
            copy_all(
                source=src,
                destination=dst,
                empty=empty,
                overwrite=args.overwrite,
                insist=not args.skip_existing,
                relayout=not args.no_relayout,
                progress=progress_wanted(args),
            )
        finally:
            dst.close()
    finally:
        src.close()
    say(args, f"{args.source} -> {args.destination} in {time.perf_counter() - t0:.2f} s")
    return 0


def _jsonable(values: Any) -> Any:
    return values.tolist() if hasattr(values, "tolist") else values


def _query(args: argparse.Namespace) -> int:
    import sys

    import pandas as pd

    from ..daf.zarrdaf import open_daf

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
            emit_json(
                {
                    "axis": result.index.name,
                    "entries": list(result.index),
                    "values": _jsonable(result.to_numpy()),
                }
            )
        elif args.csv:
            result.rename("value").to_csv(sys.stdout, index_label=result.index.name or "entry")
        else:
            print(result.to_string())
    elif isinstance(result, pd.DataFrame):
        if args.json:
            emit_json(
                {
                    "rows_axis": result.index.name,
                    "columns_axis": result.columns.name,
                    "rows": list(result.index),
                    "columns": list(result.columns),
                    "values": _jsonable(result.to_numpy()),
                }
            )
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
        "query", help="print the result of a Daf query (e.g. '@ cell [ ! is_doublet ] : type')"
    )
    query.add_argument("path", help="X.daf.zarr, X.daf.zarr.zip, X.dafs.zarr.zip#/group or URL")
    query.add_argument("query", help="the query text")
    add_output_options(query)
    form = query.add_mutually_exclusive_group()
    form.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout instead of text"
    )
    form.add_argument(
        "--csv", action="store_true", help="print vectors and matrices as CSV (entry names first)"
    )
    query.set_defaults(func=_query)
    conv = dsub.add_parser(
        "convert", help="copy a data set to another path (directory <-> ZIP, v2 <-> v3)"
    )
    conv.add_argument("source")
    conv.add_argument("destination", help="created (replaced only with --force)")
    conv.add_argument("--force", action="store_true", help="replace an existing destination")
    conv.add_argument(
        "--zarr-format",
        type=int,
        choices=(2, 3),
        default=None,
        help="layout of the destination (default: the source's)",
    )
    add_output_options(conv)
    conv.set_defaults(func=_convert)
    copy = dsub.add_parser(
        "copy",
        help="copy every scalar, axis, vector and matrix of a data set into another "
        "(created if missing; its axes must match or be subsets of the source's)",
    )
    copy.add_argument("source", help="X.daf.zarr, X.daf.zarr.zip, X.dafs.zarr.zip#/group or URL")
    copy.add_argument(
        "destination",
        help="X.daf.zarr, X.daf.zarr.zip or X.dafs.zarr.zip#/group (created if missing)",
    )
    copy.add_argument(
        "--overwrite",
        action="store_true",
        help="replace properties the destination has (never its axes)",
    )
    copy.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave properties the destination has as they are",
    )
    copy.add_argument(
        "--no-relayout",
        action="store_true",
        help="store exactly the matrix layouts the source stores (default: both layouts)",
    )
    copy.add_argument(
        "--empty",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fill value for the entries of a destination axis the source "
        "lacks, per property: AXIS,NAME=VALUE (vector), ROWS,COLUMNS,NAME=VALUE "
        "(matrix); repeat for each property",
    )
    add_output_options(copy)
    copy.set_defaults(func=_copy)
    cat = dsub.add_parser(
        "concat",
        help="concatenate data sets along axes into a new data set",
        description="Concatenate data sets along one or more axes into a new data set "
        "(written under a temporary name and renamed into place when complete). Every other "
        "axis must have the same entries in every data set; vectors and matrices along the "
        "concatenated axes are stacked, scalars and other properties are not copied.",
    )
    cat.add_argument("destination", help="the new data set (replaced only with --force)")
    cat.add_argument("sources", nargs="+", help="the data sets, in order")
    cat.add_argument(
        "--axis", action="append", required=True, help="a concatenated axis (repeat for several)"
    )
    cat.add_argument(
        "--prefix",
        action="store_true",
        help="prefix the entries of the concatenated axes with '<name>.'",
    )
    cat.add_argument(
        "--name",
        action="append",
        default=[],
        help="the name of each data set, in order (default: its own name)",
    )
    cat.add_argument(
        "--dataset-axis",
        default="dataset",
        help="the axis created with one entry per data set (default: dataset)",
    )
    cat.add_argument("--no-dataset-axis", action="store_true", help="create no dataset axis")
    cat.add_argument("--force", action="store_true", help="replace an existing destination")
    cat.add_argument(
        "--zarr-format",
        type=int,
        choices=(2, 3),
        default=None,
        help="layout of the destination (default: the first data set's)",
    )
    add_output_options(cat)
    cat.set_defaults(func=_concat)
