"""``dafzarr refs build|info|check``, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.refs.test_refs_compose import days
from tests.refs.test_refs_storage import N, make_file, put


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dafzarr", "refs", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_build_info_check(tmp_path: Path) -> None:
    files = [str(f) for f in days(tmp_path)]
    store = tmp_path / "store"
    res = run("build", str(store), *files, "--save-placement", str(tmp_path / "p.parquet"))
    assert res.returncode == 0, res.stderr
    assert "5 arrays, 13 references into 3 files" in res.stdout
    assert "scanning" not in res.stderr  # stderr is not a terminal: no progress bar
    assert pq.read_table(tmp_path / "p.parquet").num_rows == 9
    res = run("info", str(store))
    assert res.returncode == 0, res.stderr
    assert "sst" in res.stdout and "(6, 6, 8)" in res.stdout and "3 referenced files" in res.stdout
    res = run("check", str(store))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "8 of 8 sampled chunks equal their source" in res.stdout
    info = json.loads(run("info", "--json", str(store)).stdout)
    assert info["arrays"]["sst"]["shape"] == [6, 6, 8] and len(info["files"]) == 3
    assert info["arrays"]["sst"]["references"] > 0
    check = json.loads(run("check", "--json", str(store)).stdout)
    assert check == {"store": str(store), "checked": 8, "mismatched": 0, "ok": True}
    # existing stores are only replaced on request
    res = run("build", "-q", str(store), *files)
    assert res.returncode == 1 and "exists" in res.stderr
    assert run("build", "-q", "--overwrite", str(store), *files).returncode == 0


def test_check_finds_wrong_references(tmp_path: Path) -> None:
    files = [str(f) for f in days(tmp_path)]
    store = tmp_path / "store"
    assert run("build", "-q", str(store), *files).returncode == 0
    refs_file = store / "sst" / "refs.0.parq"
    t = pq.read_table(refs_file)
    offset = t["offset"].to_numpy().copy()
    size = t["size"].to_numpy().copy()
    offset[[0, 1]], size[[0, 1]] = offset[[1, 0]], size[[1, 0]]  # two chunks swapped
    t = t.set_column(1, t.schema.field("offset"), pa.array(offset))
    t = t.set_column(2, t.schema.field("size"), pa.array(size))
    pq.write_table(t, refs_file)
    res = run("check", str(store), "--sample", "20")
    assert res.returncode == 1
    assert "BAD  sst chunk 0.0.0" in res.stdout and "BAD  sst chunk 0.1.0" in res.stdout
    assert "sampled chunks differ from their source" in res.stderr


def test_build_public_prefix_and_refusal(tmp_path: Path) -> None:
    files = [str(f) for f in days(tmp_path, n=2)]
    store = tmp_path / "store"
    res = run("build", "-q", str(store), *files, "--public-prefix", "https://example.org/sst/")
    assert res.returncode == 0, res.stderr
    paths = set(pq.read_table(store / "sst" / "refs.0.parq")["path"].to_pylist())
    assert paths == {"https://example.org/sst/day0.nc", "https://example.org/sst/day1.nc"}
    bad = tmp_path / "szip.h5"
    with h5py.File(bad, "w") as f:
        f.create_dataset("v", data=np.arange(100.0), chunks=(10,), compression="szip")
    res = run("build", "-q", str(tmp_path / "s2"), str(bad))
    assert res.returncode == 1
    assert f"{bad}: variable 'v': unsupported filter szip (HDF5 filter id 4)" in res.stderr
    res = run("build", "-q", "--skip-unsupported", str(tmp_path / "s3"), str(bad))
    assert res.returncode == 0 and "skipped" in res.stderr


def test_build_refuses_and_check_fails_on_nothing_checked(tmp_path: Path) -> None:
    ext = make_file(tmp_path / "external.h5", "external", "contiguous")
    res = run("build", "-q", str(tmp_path / "s1"), str(ext))
    assert res.returncode == 1
    assert f"{ext}: variable 'odd': its data are stored outside the file" in res.stderr
    res = run("build", "-q", "--skip-unsupported", str(tmp_path / "s2"), str(ext))
    assert res.returncode == 0 and "skipped" in res.stderr
    res = run("check", str(tmp_path / "s2"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "of 0 sampled" not in res.stdout
    # a store whose data are all inlined has nothing to compare with its source
    only = tmp_path / "only.h5"
    with h5py.File(only, "w") as f:
        put(f, "small", h5py.h5t.STD_I32LE, np.arange(N, dtype="<i4"), "compact", False)
    assert run("build", "-q", str(tmp_path / "s3"), str(only)).returncode == 0
    res = run("check", str(tmp_path / "s3"))
    assert res.returncode == 1
    assert "nothing was checked" in res.stderr and "0 of 0 sampled chunks" in res.stdout
    # the external dataset alone: skipped, the store is empty, and check says so
    lone = tmp_path / "lone.h5"
    with h5py.File(lone, "w") as f:
        f.create_dataset("v", shape=(4,), dtype="<f8", external=[("lone.bin", 0, 32)])
    (tmp_path / "lone.bin").write_bytes(np.arange(4.0).tobytes())
    assert run("build", "-q", "--skip-unsupported", str(tmp_path / "s4"), str(lone)).returncode == 0
    res = run("check", str(tmp_path / "s4"))
    assert res.returncode == 1 and "nothing was checked" in res.stderr
