"""``concatenate`` writes the result block by block: its resident memory stays far below the
size of the data sets read (each source's pages are unmapped behind the writer) and of the
result (streamed into the ZIP entry or the file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr

SOURCES, CELLS, GENES, PER_CELL = 4, 20_000, 20_000, 300

CHILD = """
import gc, json, sys
import dafzarr
from dafzarr._core.daf.ops import concat_write as _concat_write
from dafzarr.daf.ops import concatenate

_concat_write._BLOCK = 1 << 20  # blocks of 4 MiB: far below the data, whatever its size

def rss(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0

dest, sources = sys.argv[1], sys.argv[2:]
srcs = [dafzarr.open_daf(p, "r") for p in sources]
d = dafzarr.open_daf(dest, "w")
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak restarts here
before = rss("VmRSS:")
concatenate(d, "cell", srcs)
print(json.dumps({"before": before, "peak": rss("VmHWM:")}))
"""


def _umis(k: int) -> sp.csc_matrix:
    """GENES x CELLS, PER_CELL sorted rows in each column (one in each band of genes)."""
    rng = np.random.default_rng(k)
    band = GENES // PER_CELL
    rows = rng.integers(0, band, size=(CELLS, PER_CELL), dtype=np.int32)
    rows += np.arange(0, band * PER_CELL, band, dtype=np.int32)
    values = rng.random(CELLS * PER_CELL, dtype=np.float32) + 1
    colptr = np.arange(0, (CELLS + 1) * PER_CELL, PER_CELL, dtype=np.int32)
    return sp.csc_matrix((values, rows.reshape(-1), colptr), shape=(GENES, CELLS))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("src", "dst"), [(".daf.zarr.zip", ".daf.zarr.zip"), (".daf.zarr", ".daf.zarr")]
)
def test_resident_memory_stays_below_the_data(tmp_path: Path, src: str, dst: str) -> None:
    paths = []
    for k in range(SOURCES):
        path = str(tmp_path / f"s{k}{src}")
        d = dafzarr.open_daf(path, "w")
        d.add_axis("cell", [f"s{k}c{i}" for i in range(CELLS)])
        d.add_axis("gene", [f"g{i}" for i in range(GENES)])
        d.set_matrix("gene", "cell", "UMIs", _umis(k), relayout=False)
        d.close()
        paths.append(path)
    out = str(tmp_path / f"out{dst}")
    res = subprocess.run(
        [sys.executable, "-c", CHILD, out, *paths],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    fig = json.loads(res.stdout.strip().splitlines()[-1])
    data = SOURCES * CELLS * PER_CELL * 8  # the rows and values read, and written
    grew = fig["peak"] - fig["before"]
    assert grew < data / 4, (grew, data)
    r = dafzarr.open_daf(out)
    got = r.get_np_matrix("gene", "cell", "UMIs")
    assert got.nnz == SOURCES * CELLS * PER_CELL
    assert (got[:, CELLS : 2 * CELLS] != _umis(1)).nnz == 0
