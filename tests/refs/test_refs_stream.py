"""ReferenceWriter: a reference store written in pieces equals the one written whole, holds
in memory one record at most, and appears only complete."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from dafzarr import errors
from dafzarr._core.refs.kerchunk import as_virtual
from dafzarr.refs import ReferenceWriter, scan, write_parquet
from tests.helpers import ROOT as REPO
from tests.refs.refs_common import open_refs

ROOT = str(REPO)


def _netcdf(path: Path) -> Path:
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", 50)
        ds.createDimension("x", 40)
        v = ds.createVariable("v", "f4", ("t", "x"), chunksizes=(1, 8), zlib=True)
        v[:] = np.arange(2000, dtype=np.float32).reshape(50, 40)
        g = ds.createGroup("inner")
        w = g.createVariable("w", "i2", ("t",), chunksizes=(7,))
        w[:] = np.arange(50)
    return path


def test_pieces_give_the_store_written_whole(tmp_path: Path) -> None:
    vds = as_virtual(scan(_netcdf(tmp_path / "a.nc")))
    whole = write_parquet(vds, tmp_path / "whole", record_size=64)
    rng = np.random.default_rng(0)
    with ReferenceWriter(tmp_path / "pieces", vds.paths, record_size=64) as w:
        for g, attrs in vds.groups.items():
            w.add_group(g, attrs)
        for name, a in vds.arrays.items():
            w.add_array(name, a.zarray, a.zattrs)
            start = 0
            while start < a.nchunks:  # pieces of every size, across record boundaries
                stop = min(a.nchunks, start + int(rng.integers(0, 150)))
                w.append(a.path_index[start:stop], a.offset[start:stop], a.size[start:stop])
                start = stop
    assert w.written == sum(a.nchunks for a in vds.arrays.values())
    files = sorted(p.relative_to(whole) for p in whole.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(w.out) for p in w.out.rglob("*") if p.is_file())
    assert len([f for f in files if f.name.startswith("refs.")]) > 3
    for f in files:
        if f.suffix == ".parq":
            assert pq.read_table(whole / f).equals(pq.read_table(w.out / f)), f
        else:
            assert (whole / f).read_bytes() == (w.out / f).read_bytes(), f
    got = open_refs(w.out).load()
    np.testing.assert_array_equal(got["v"].values, np.arange(2000).reshape(50, 40))


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        (lambda w: w.append([0], [0], [1]), "before add_array"),
        (lambda w: (w.add_array("a", {"shape": [4], "chunks": [2]}),
                    w.append([0, 0, 0], [0, 1, 2], [1, 1, 1])), "3 references for a grid of 2"),
        (lambda w: (w.add_array("a", {"shape": [4], "chunks": [2]}), w.append([0], [0], [1]),
                    w.close()), "1 references for a grid of 2"),
        (lambda w: (w.add_array("a", {"shape": [4], "chunks": [2]}),
                    w.append([0, 1], [0, 1], [1, 1])), r"path index outside \[-1, 1\)"),
        (lambda w: (w.add_array("a", {"shape": [4], "chunks": [2]}),
                    w.append([0, 0], [0, -5], [1, 1])), "negative offset"),
        (lambda w: (w.add_array("a", {"shape": [4], "chunks": [2]}),
                    w.add_array("a", {"shape": [4], "chunks": [2]})), "2 chunks|already"),
        (lambda w: w.add_array("a", {"shape": [4]}), "invalid .zarray"),
    ],
    ids=["no-array", "too-many", "too-few", "path-index", "negative", "twice", "zarray"],
)  # fmt: skip
def test_bad_references_are_refused_and_leave_no_store(
    tmp_path: Path, spoil: object, match: str
) -> None:
    out = tmp_path / "refs"
    with (
        pytest.raises(errors.InvalidArgumentError, match=match),
        ReferenceWriter(out, ["file:///x.nc"], record_size=1) as w,
    ):
        spoil(w)  # type: ignore[operator]
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # and no temporary left behind


def test_an_existing_store_is_replaced_only_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "refs"
    with ReferenceWriter(out, ["file:///x.nc"]) as w:
        w.add_group("")
        w.add_array("a", {"shape": [2], "chunks": [1]}, {})
        w.append([0, -1], [0, 0], [5, 0])
    with pytest.raises(errors.OutputExistsError):
        ReferenceWriter(out, ["file:///x.nc"])
    with ReferenceWriter(out, ["file:///y.nc"], overwrite=True) as w:
        w.add_group("")
        w.add_array("b", {"shape": [1], "chunks": [1]}, {})
        w.append([0], [3], [4])
    assert (out / "b").is_dir() and not (out / "a").exists()


STREAM = """
import resource, sys, numpy as np
from dafzarr.refs import ReferenceWriter
n, piece, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
# warm up: what importing and one record cost
with ReferenceWriter(out + ".warm", [f"s3://b/f{i}.nc" for i in range(1000)]) as w:
    w.add_group("")
    w.add_array("v", {"shape": [piece], "chunks": [1]}, {})
    w.append(rng.integers(0, 1000, piece), rng.integers(0, 1 << 40, piece), np.full(piece, 99))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with ReferenceWriter(out, [f"s3://b/f{i}.nc" for i in range(1000)]) as w:
    w.add_group("")
    w.add_array("v", {"shape": [n], "chunks": [1]}, {})
    for start in range(0, n, piece):
        k = min(piece, n - start)
        w.append(rng.integers(0, 1000, k), rng.integers(0, 1 << 40, k), np.full(k, 99))
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, w.written)
"""


def test_memory_does_not_grow_with_the_number_of_references(tmp_path: Path) -> None:
    """3 * 10^7 references (600 MB as numpy columns) written in pieces of 10^5: the peak
    memory stays that of a few records."""
    n = 30_000_000
    res = subprocess.run(
        [sys.executable, "-c", STREAM, str(n), "100000", str(tmp_path / "big")],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": ROOT},
    )
    assert res.returncode == 0, res.stderr
    before, after, written = (int(x) for x in res.stdout.split())
    assert written == n
    grown_mib = (after - before) / 1024
    assert grown_mib < 64, f"peak memory grew by {grown_mib:.0f} MiB"
    files = list((tmp_path / "big" / "v").iterdir())
    assert len(files) == n // 100_000
