"""Placement from a GDAL multidimensional VRT (as written by ``gdal mdim mosaic``)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from ._refs_compose import _placement
from ._refs_scan import ScanResult
from .errors import IncompatibleSourcesError

__all__ = ["placement_from_vrt"]


def _match(filename: str, vrt_dir: Path, access: list[str]) -> int:
    """Index of the source whose access path is ``filename``: exact, resolved, then basename."""
    if filename in access:
        return access.index(filename)
    resolved = (vrt_dir / filename).resolve() if not os.path.isabs(filename) else Path(filename)
    for i, a in enumerate(access):
        if Path(a).resolve() == resolved:
            return i
    base = [i for i, a in enumerate(access) if Path(a).name == Path(filename).name]
    if len(base) == 1:
        return base[0]
    raise IncompatibleSourcesError(
        f"VRT source {filename!r} matches {'no' if not base else 'several'} of the access paths"
    )


def placement_from_vrt(
    vrt: str | os.PathLike[str], sources: pa.Table, scans: Sequence[ScanResult]
) -> pa.Table:
    """The placement table described by a multidimensional VRT's ``<Source>`` elements.

    Each ``<Array>``'s sources give (``SourceFilename``, ``SourceArray``, ``DestSlab
    offset``); ``SourceSlab`` subsetting is refused (references cannot subset a chunk).
    Coordinate variables of each file follow the offsets of the arrays that use them.
    """
    path = Path(vrt)
    root = ET.parse(path).getroot()
    if root.tag != "VRTDataset":
        raise ValueError(f"{path}: not a VRT (root element {root.tag!r})")
    access = sources.column("access").to_pylist()
    by_access = {s.path: s for s in scans}
    rows: list[tuple[str, str, list[int]]] = []
    dim_offsets: dict[tuple[int, str], int] = {}
    for group in root.iter("Group"):
        gname = group.get("name", "/").strip("/")
        for array in group.findall("Array"):
            for src in array.findall("Source"):
                fname = (src.findtext("SourceFilename") or "").strip()
                sarr = (src.findtext("SourceArray") or array.get("name") or "").strip("/")
                if src.find("SourceSlab") is not None:
                    raise IncompatibleSourcesError(
                        f"{path}: array {array.get('name')!r} subsets {fname!r} with "
                        "<SourceSlab>; byte references cannot subset chunks"
                    )
                k = _match(fname, path.parent, access)
                scan = by_access[access[k]]
                name = f"{gname}/{sarr}" if gname and "/" not in sarr else sarr
                if name not in scan.variables:
                    raise IncompatibleSourcesError(
                        f"{scan.path}: no variable {name!r} (from {path})"
                    )
                var = scan.variables[name]
                slab = src.find("DestSlab")
                text = slab.get("offset", "") if slab is not None else ""
                off = [int(x) for x in text.split(",")] if text else [0] * len(var.shape)
                if len(off) != len(var.shape):
                    raise IncompatibleSourcesError(
                        f"{path}: DestSlab offset {text!r} for {name!r} has {len(off)} values, "
                        f"the array has {len(var.shape)} dimensions"
                    )
                rows.append((scan.url, name, off))
                for d, o in zip(var.dims, off, strict=True):
                    dim_offsets.setdefault((k, d), o)
    placed = {(u, n) for u, n, _ in rows}
    seen: set[tuple[str, int]] = set()  # a coordinate segment comes from its first file only
    for k, a in enumerate(access):
        scan = by_access[a]
        for name in scan.coords:
            dim = name.rpartition("/")[2]
            if (scan.url, name) in placed or (k, dim) not in dim_offsets:
                continue
            if (name, dim_offsets[(k, dim)]) not in seen:
                seen.add((name, dim_offsets[(k, dim)]))
                rows.append((scan.url, name, [dim_offsets[(k, dim)]]))
    if not rows:
        raise IncompatibleSourcesError(f"{path}: no <Source> elements")
    return _placement(rows)
