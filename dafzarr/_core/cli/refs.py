"""``dafzarr refs build|info|check|publish``: virtual reference stores over NetCDF4/HDF5
files, and their publication into Icechunk repositories."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ...errors import InvalidArgumentError
from ..atomic import atomic_file
from ..refs.check import check_store, store_summary
from .common import add_output_options, emit_json, progress_wanted, say

__all__ = ["add_parser"]


# --- build ---------------------------------------------------------------------------------
def _storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--storage-options`` (a JSON object) and ``--anon``, as ``storage_options``."""
    options: dict[str, Any] = {}
    if args.storage_options:
        try:
            options = json.loads(args.storage_options)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"--storage-options is not JSON: {exc}") from None
        if not isinstance(options, dict):
            raise InvalidArgumentError("--storage-options must be a JSON object")
    if args.anon:
        options["anon"] = True
    return options or None


def _build(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from ..refs.compose import virtualize
    from ..refs.source_files import mosaic_sources

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
        progress=progress_wanted(args),
        on_unsupported="skip" if args.skip_unsupported else "raise",
        overwrite=args.overwrite,
        storage_options=_storage_options(args),
    )
    if args.save_placement and vds.placement is not None:
        with atomic_file(args.save_placement, force=True) as tmp:
            pq.write_table(vds.placement, tmp)
    nrefs = sum(int((a.path_index >= 0).sum()) for a in vds.arrays.values())
    say(
        args,
        f"{args.out}: {len(vds.arrays)} arrays, {nrefs} references into "
        f"{len(vds.paths)} files ({time.perf_counter() - t0:.2f} s)",
    )
    return 0


# --- info ----------------------------------------------------------------------------------
def _info(args: argparse.Namespace) -> int:
    info = store_summary(args.store)
    if args.json:
        emit_json(info)
        return 0
    say(args, f"{args.store}: record_size {info['record_size']}")
    print(f"{'array':<28} {'dtype':<6} {'shape':<18} {'chunks':<16} {'refs':>8} {'missing':>8} "
          f"{'inline':>6}  filters")  # fmt: skip
    for name, a in info["arrays"].items():
        print(
            f"{name:<28} {a['dtype']:<6} {tuple(a['shape'])!s:<18} "
            f"{tuple(a['chunks'])!s:<16} {a['references']:>8} {a['missing']:>8} "
            f"{a['inlined']:>6}  {','.join(a['filters']) or '-'}"
        )
    say(args, f"{len(info['files'])} referenced files; store size {info['size']} bytes")
    return 0


def _check(args: argparse.Namespace) -> int:
    quiet = args.quiet or args.json
    with open(os.devnull, "w") as devnull:
        report = check_store(
            args.store, sample=args.sample, seed=args.seed, out=devnull if quiet else None
        )
    if args.json:
        emit_json(
            {
                "store": args.store,
                "checked": report.checked,
                "mismatched": report.mismatched,
                "ok": report.ok,
            }
        )
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


# --- publish -------------------------------------------------------------------------------
def _container(prefix: str) -> Any:
    """A virtual chunk container for ``prefix``, with the object store its scheme reads."""
    import icechunk

    scheme = prefix.partition("://")[0]
    if not prefix.endswith("/") or not scheme or scheme == prefix:
        raise InvalidArgumentError(
            f"--container {prefix!r}: a URL prefix ending in '/' (file:///data/, s3://bucket/, "
            "https://host/)"
        )
    store: Any
    if scheme == "file":
        store = icechunk.local_filesystem_store(prefix.removeprefix("file://"))
    elif scheme == "s3":
        store = icechunk.s3_store()
    elif scheme in ("gs", "gcs"):
        store = icechunk.gcs_store()
    elif scheme in ("http", "https"):
        store = icechunk.http_store()
    else:
        raise InvalidArgumentError(f"--container {prefix!r}: no Icechunk store for {scheme}://")
    return icechunk.VirtualChunkContainer(prefix, store)


def _publish(args: argparse.Namespace) -> int:
    import shutil

    try:
        import icechunk
    except ImportError:
        raise InvalidArgumentError(
            "refs publish writes Icechunk repositories and needs icechunk: "
            "pip install 'dafzarr[icechunk]'"
        ) from None

    from ..refs.icechunk import to_icechunk

    if "ICECHUNK_LOG" not in os.environ:
        icechunk.set_logs_filter("error")  # no warnings on stdout, which has the snapshot
    containers = [_container(p) for p in args.container]
    repo_path = os.path.abspath(args.repo)
    storage = icechunk.local_filesystem_storage(repo_path)
    created = not os.path.exists(repo_path)
    config = icechunk.RepositoryConfig.default()
    for cont in containers:
        config.set_virtual_chunk_container(cont)
    t0 = time.perf_counter()
    try:
        if icechunk.Repository.exists(storage):
            repo = icechunk.Repository.open(storage, config=config if containers else None)
        else:
            repo = icechunk.Repository.create(storage, config)
        if args.branch not in repo.list_branches():
            repo.create_branch(args.branch, repo.lookup_branch("main"))
        session = repo.writable_session(args.branch)
        n = to_icechunk(
            args.refs,
            session.store,
            group=args.group,
            overwrite=args.overwrite,
            progress=progress_wanted(args),
        )
        snapshot = session.commit(args.message)
        if containers:
            repo.save_config()
    except BaseException:
        if created:  # a repository this command created and that holds nothing
            shutil.rmtree(repo_path, ignore_errors=True)
        raise
    say(
        args,
        f"{args.repo}: branch {args.branch}, {n} virtual chunk references from "
        f"{args.refs} ({time.perf_counter() - t0:.2f} s); snapshot:",
    )
    print(snapshot)
    return 0


# --- parser --------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """Add ``refs build|info|check|publish`` to the top-level subparsers."""
    refs = sub.add_parser("refs", help="virtual reference stores over NetCDF4/HDF5 files")
    rsub = refs.add_subparsers(dest="refs_command", required=True)
    b = rsub.add_parser("build", help="scan files and write a kerchunk-Parquet store")
    b.add_argument("out", help="store directory to create")
    b.add_argument(
        "files", nargs="+", help="NetCDF4/HDF5 files to scan: paths, http(s):// or s3:// URLs"
    )
    b.add_argument("--concat-dim", help="dimension to concatenate along (default: found)")
    b.add_argument("--public-prefix", help="URL prefix written into references instead of paths")
    b.add_argument("--placement", help="a GDAL multidimensional VRT or a saved placement table")
    b.add_argument("--save-placement", help="write the placement table to this parquet file")
    b.add_argument("--record-size", type=int, default=100_000)
    b.add_argument(
        "--inline-threshold",
        type=int,
        default=None,
        help="0: references only (variables with no chunk left out, coordinates "
        "referenced: a store VirtualiZarr 2.5.1 reads); N: also inline chunks "
        "under N bytes; default: inline only what has no chunk",
    )
    b.add_argument("--workers", type=int, default=None, help="scan with N processes")
    b.add_argument("--skip-unsupported", action="store_true", help="skip, warn, do not fail")
    b.add_argument("--overwrite", action="store_true", help="replace an existing store")
    b.add_argument(
        "--storage-options",
        metavar="JSON",
        help="how to reach remote files, as fsspec/s3fs options, e.g. "
        '\'{"endpoint_url": "http://127.0.0.1:9000", "key": "...", '
        '"secret": "..."}\'',
    )
    b.add_argument("--anon", action="store_true", help="read s3:// files without credentials")
    add_output_options(b)
    b.set_defaults(func=_build)
    i = rsub.add_parser("info", help="summarise a reference store")
    i.add_argument("store")
    add_output_options(i, json_output=True)
    i.set_defaults(func=_info)
    c = rsub.add_parser("check", help="compare sampled chunks with the source files")
    c.add_argument("store")
    c.add_argument("--sample", type=int, default=5, help="chunks per array (plus first/last)")
    c.add_argument("--seed", type=int, default=0)
    add_output_options(c, json_output=True)
    c.set_defaults(func=_check)
    p = rsub.add_parser("publish", help="write a store's references into an Icechunk repository")
    p.add_argument("refs", help="the kerchunk-Parquet reference store")
    p.add_argument("repo", help="local Icechunk repository directory (created if missing)")
    p.add_argument("--branch", default="main", help="branch to commit to (created from main)")
    p.add_argument("-m", "--message", required=True, help="the commit message")
    p.add_argument("--group", default=None, help="group of the repository to write into")
    p.add_argument(
        "--container",
        action="append",
        default=[],
        metavar="PREFIX",
        help="add a virtual chunk container for this URL prefix (file:///data/, "
        "s3://bucket/, https://host/) to the repository's configuration; "
        "repeatable",
    )
    p.add_argument("--overwrite", action="store_true", help="replace arrays already there")
    add_output_options(p)
    p.set_defaults(func=_publish)
