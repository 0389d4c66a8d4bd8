"""``dafzarr refs check``: compare sampled chunks read through a store with their source files.

Also :func:`open_reference_group`, the store opened as a read-only zarr v2 group through
fsspec, which the check and the demo read through.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .filenames import METADATA_FILE, PLACEMENT_FILE, VALUES_FILE, refs_file

__all__ = ["CheckReport", "check_store", "open_reference_group"]


def open_reference_group(
    store_path: str | os.PathLike[str], *, remote_protocol: str = "file"
) -> Any:
    """The store as a read-only zarr v2 group, read through fsspec with the pyarrow engine."""
    import zarr
    from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem

    mapper = LazyReferenceMapper(os.fspath(store_path), engine="pyarrow")
    fs = ReferenceFileSystem(fo=mapper, remote_protocol=remote_protocol, asynchronous=True)
    return zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r", zarr_format=2)


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
    ``file://`` URLs. Chunks that are missing, inlined or in the store's ``values.bin``
    (composed values) have no source to compare with; a
    store with no other chunks gives a report of 0 checked, which is not :attr:`~CheckReport.ok`.
    """
    import h5py
    import pyarrow.parquet as pq

    out = out or sys.stdout
    root = Path(store)
    meta = json.loads((root / METADATA_FILE).read_text(encoding="utf-8"))
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
        tables = [pq.read_table(root / name / refs_file(k)) for k in range(nfiles)]
        path = np.concatenate([t["path"].to_numpy(zero_copy_only=False) for t in tables])
        # Composed values in the store's own values file have no source file to compare with.
        present = np.flatnonzero(
            np.array(
                [p is not None and not p.endswith(f"/{VALUES_FILE}") for p in path], dtype=bool
            )
        )
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


def store_summary(store: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``dafzarr refs info`` shows: per array its dtype, shape, chunks, references,
    missing and inlined chunks and filters; the referenced files and the store's size."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = Path(store)
    meta = json.loads((root / METADATA_FILE).read_text(encoding="utf-8"))
    md = meta["metadata"]
    arrays: dict[str, dict[str, Any]] = {}
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
        arrays[name] = {
            "dtype": z["dtype"],
            "shape": list(z["shape"]),
            "chunks": list(z["chunks"]),
            "references": n_ref,
            "missing": n_missing,
            "inlined": n_inline,
            "filters": [f["id"] for f in z.get("filters") or []],
        }
    return {
        "store": os.fspath(store),
        "record_size": meta["record_size"],
        "arrays": arrays,
        "files": sorted(paths),
        "size": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
    }
