"""Several processes writing one directory data set at once: none loses another's arrays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import dafzarr

WRITER = """
import sys, numpy as np, dafzarr
path, who, n, fmt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = dafzarr.open_daf(path, "r+")
for i in range(n):
    d.set_vector("cell", f"{who}_{i:03d}", np.full(10, i, dtype="int32"))
print("done", flush=True)
"""


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_concurrent_writers_keep_every_array_in_the_consolidated_metadata(
    tmp_path: Path, zarr_format: int
) -> None:
    path = str(tmp_path / "shared.daf.zarr")
    d = dafzarr.open_daf(path, "w+", zarr_format=zarr_format)
    d.add_axis("cell", [f"c{i}" for i in range(10)])
    del d
    writers, n = 4, 60
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, path, f"w{k}", str(n), str(zarr_format)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(writers)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out == "done\n", err
    want = {f"w{k}_{i:03d}" for k in range(writers) for i in range(n)}
    # what zarr-python sees through the consolidated metadata alone
    root = Path(path)
    if zarr_format == 2:
        meta = json.loads((root / ".zmetadata").read_text())["metadata"]
    else:
        meta = json.loads((root / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    listed = {k.split("/")[2] for k in meta if k.startswith("vectors/cell/") and k.count("/") >= 2}
    assert want <= listed, f"{len(want - listed)} arrays missing, e.g. {sorted(want - listed)[:5]}"
    g = zarr.open_consolidated(path, mode="r", zarr_format=zarr_format)
    assert want <= set(g["vectors/cell"].array_keys())
    d = dafzarr.open_daf(path, "r")
    assert want <= set(d.vectors_set("cell"))
    np.testing.assert_array_equal(d.get_np_vector("cell", "w3_059"), np.full(10, 59))
