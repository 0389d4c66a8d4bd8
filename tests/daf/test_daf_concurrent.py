"""Several processes on one data set: writers lose none of each other's arrays, and a
reader opening again sees what another process committed since."""

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
        subprocess.Popen(
            [sys.executable, "-c", WRITER, path, f"w{k}", str(n), str(zarr_format)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
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


ADD_GROUP = """
import sys, numpy as np, dafzarr
d = dafzarr.open_daf(sys.argv[1], "w")
d.set_scalar("seed", int(sys.argv[2]))
d.add_axis("cell", ["a", "b", "c"])
d.set_vector("cell", "x", np.arange(3.0) + int(sys.argv[2]))
d.close()
"""


def _add_group_in_another_process(target: str, seed: int) -> None:
    subprocess.run([sys.executable, "-c", ADD_GROUP, target, str(seed)], check=True, timeout=120)


@pytest.mark.parametrize("keep", ["view", "handle"])
def test_a_reader_opening_again_sees_what_another_process_committed(
    tmp_path: Path, keep: str
) -> None:
    """A read-only store kept alive in this process (by a zero-copy array read from it, or
    by an open handle) must not hide commits another process made since it opened."""
    path = tmp_path / "many.dafs.zarr.zip"
    _add_group_in_another_process(f"{path}#/first", 1)
    old = dafzarr.open_daf(f"{path}#/first", "r")
    held = old.get_np_vector("cell", "x")  # a view of the mapping
    if keep == "view":
        old.close()
    _add_group_in_another_process(f"{path}#/second", 2)
    new = dafzarr.open_daf(f"{path}#/second", "r")
    np.testing.assert_array_equal(new.get_np_vector("cell", "x"), np.arange(3.0) + 2)
    new.close()
    np.testing.assert_array_equal(held, np.arange(3.0) + 1)  # still valid
    if keep == "handle":  # the old handle keeps its snapshot and closes cleanly
        np.testing.assert_array_equal(old.get_np_vector("cell", "x"), np.arange(3.0) + 1)
        old.close()
    del held
    # and a writer may open the archive once every reader is gone
    w = dafzarr.open_daf(f"{path}#/third", "w")
    w.set_scalar("seed", 3)
    w.close()
