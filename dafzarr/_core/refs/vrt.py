"""Placement from a GDAL multidimensional VRT (as written by ``gdal mdim mosaic``).

Only what byte references can express is accepted: each ``<Source>`` a whole source array
at a destination offset; subsetting and transforming sources are refused.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from ...errors import IncompatibleSourcesError
from .model import ScanResult
from .placement import placement_table

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


def _check_whole_source(slab: ET.Element | None, scan: ScanResult, name: str, path: Path) -> None:
    """Refuse a ``<SourceSlab>`` that selects less than the whole source array.

    GDAL writes a slab for every source (``gdal mdim mosaic``: offset 0, the source's own
    size as count, step 1); such a slab is the whole array. A count of 0 means "to the end".
    """
    if slab is None:
        return
    shape = scan.variables[name].shape  # netCDF dimension lengths, as GDAL reports them
    n = len(shape)

    def values(attr: str, default: int) -> list[int]:
        text = slab.get(attr, "").strip()
        if not text:
            return [default] * n
        try:
            got = [int(x) for x in text.replace(" ", ",").split(",") if x]
        except ValueError:
            got = []
        if len(got) != n:
            raise IncompatibleSourcesError(
                f"{path}: SourceSlab {attr} {text!r} for {name!r} does not give {n} integers"
            )
        return got

    offset, count, step = values("offset", 0), values("count", 0), values("step", 1)
    whole = (
        all(o == 0 for o in offset)
        and all(s == 1 for s in step)
        and all(c in (0, size) for c, size in zip(count, shape, strict=True))
    )
    if not whole:
        raise IncompatibleSourcesError(
            f"{path}: the <SourceSlab> of {name!r} in {scan.path} (offset {offset}, count "
            f"{count}, step {step}) selects part of its {list(shape)} elements; byte "
            "references cannot subset chunks"
        )


def placement_from_vrt(
    vrt: str | os.PathLike[str], sources: pa.Table, scans: Sequence[ScanResult]
) -> pa.Table:
    """The placement table described by a multidimensional VRT's ``<Source>`` elements.

    Each ``<Array>``'s sources give (``SourceFilename``, ``SourceArray``, ``DestSlab
    offset``); a ``SourceSlab`` must select the whole source array (as ``gdal mdim mosaic``
    writes it), and subsetting, ``SourceTranspose`` and ``SourceView`` are refused
    (references cannot subset or transform a chunk).
    Coordinate variables of each file follow the offsets of the arrays that use them.
    """
    path = Path(vrt)
    root = ET.parse(path).getroot()
    if root.tag != "VRTDataset":
        raise IncompatibleSourcesError(f"{path}: not a VRT (root element {root.tag!r})")
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
                for tag in ("SourceTranspose", "SourceView"):
                    if src.find(tag) is not None:
                        raise IncompatibleSourcesError(
                            f"{path}: array {array.get('name')!r} reads {fname!r} through "
                            f"<{tag}>; byte references cannot transform chunks"
                        )
                k = _match(fname, path.parent, access)
                scan = by_access[access[k]]
                name = f"{gname}/{sarr}" if gname and "/" not in sarr else sarr
                if name not in scan.variables:
                    raise IncompatibleSourcesError(
                        f"{scan.path}: no variable {name!r} (from {path})"
                    )
                _check_whole_source(src.find("SourceSlab"), scan, name, path)
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
    return placement_table(rows)
