"""A publishing process killed with SIGKILL (``tests/refs/_publish_child.py``) at several moments,
while it writes the references and while it commits: the repository's branch still points at
a whole commit (the one before, or the new one complete) that reads as it was, and a new
session publishes and commits again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zarr

from dafzarr import refs

from . import _publish_child as child
from .test_refs_publish import _open, _repo, _series

icechunk = pytest.importorskip("icechunk")

ROWS, PER_ROW, CHUNK = 100, 1000, 16  # 100,000 references of 16 float32 each
SLOTS = 65_536  # chunk-sized slots of the referenced file (4 MiB)


def _big_store(data: Path, out: Path) -> np.ndarray:
    """A file of random float32 and a store of ROWS * PER_ROW references into it (slot
    ``i * 7919 % SLOTS`` for chunk ``i``); returns the file's values by slot."""
    values = np.random.default_rng(0).random((SLOTS, CHUNK), dtype="f4")
    (data / "big.bin").write_bytes(values.tobytes())
    n = ROWS * PER_ROW
    zarray = {
        "zarr_format": 2,
        "shape": [ROWS, PER_ROW * CHUNK],
        "chunks": [1, CHUNK],
        "dtype": "<f4",
        "compressor": None,
        "filters": None,
        "fill_value": "NaN",
        "order": "C",
        "dimension_separator": ".",
    }
    with refs.ReferenceWriter(out, [(data / "big.bin").as_uri()]) as w:
        w.add_group("", {"what": "many references"})
        w.add_array("v", zarray, {"_ARRAY_DIMENSIONS": ["y", "x"]})
        slot = np.arange(n, dtype=np.int64) * 7919 % SLOTS
        w.append(np.zeros(n, np.int32), slot * CHUNK * 4, np.full(n, CHUNK * 4))
    return values


def _row(values: np.ndarray, r: int) -> np.ndarray:
    return values[(np.arange(r * PER_ROW, (r + 1) * PER_ROW) * 7919) % SLOTS].ravel()


def _check_big(session: Any, values: np.ndarray) -> None:
    """The published array reads its first, a middle and its last row from the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = zarr.open_group(session.store, mode="r", zarr_format=3)["big/v"]
        assert v.shape == (ROWS, PER_ROW * CHUNK)
        for r in (0, ROWS // 2, ROWS - 1):
            np.testing.assert_array_equal(v[r], _row(values, r))


def _killed(repo: Path, store: Path, prefix: str, marker: str, delay: float) -> list[str]:
    """Runs the child, kills it ``delay`` seconds after it prints ``marker``; its output."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(child.__file__)), str(repo), str(store), prefix],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        while not (line := proc.stdout.readline()).startswith(marker):
            assert line, f"the child ended before printing {marker!r}: {lines}"
            lines.append(line.strip())
        lines.append(line.strip())
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        lines += [x.strip() for x in proc.stdout.read().splitlines()]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, lines
    return lines


@pytest.mark.slow  # a publication of 100,000 references per moment
def test_killed_while_publishing_or_committing(tmp_path: Path) -> None:
    data = tmp_path / "files"
    files = _series(data, 2)
    store = tmp_path / "big.parq"
    values = _big_store(data, store)
    small = tmp_path / "series.parq"
    refs.virtualize(files, small, progress=False)
    prefix = data.as_uri() + "/"
    repo = _repo(tmp_path / "repo", [prefix])
    session = repo.writable_session("main")
    refs.to_icechunk(small, session.store, group="series")
    base = session.commit("base")
    want = _open(repo.readonly_session(snapshot_id=base), "series")
    tips = [base]
    outcomes = []
    for marker, delay in (
        ("publishing", 0.3),
        ("publishing", 1.5),
        ("committing", 0.0),
        ("committing", 0.05),
        ("committing", 0.2),
        ("committing", 0.5),
    ):
        lines = _killed(tmp_path / "repo", store, prefix, marker, delay)
        again = icechunk.Repository.open(
            icechunk.local_filesystem_storage(str(tmp_path / "repo")),
            authorize_virtual_chunk_access={prefix: None},
        )
        tip, before = again.lookup_branch("main"), tips[-1]
        reader = again.readonly_session("main")
        xr.testing.assert_identical(_open(reader, "series"), want)
        if tip == before:  # the commit did not happen: the tip reads as it did
            if len(tips) == 1:
                assert "big" not in zarr.open_group(reader.store, mode="r", zarr_format=3)
            else:
                _check_big(reader, values)
        else:  # it did, whole: its parent is the previous tip
            assert [s.id for s in again.ancestry(branch="main")][1] == before
            _check_big(reader, values)
            tips.append(tip)
        outcomes.append((marker, delay, tip != before))
        if any(x.startswith("committed") for x in lines):
            assert tip != before, lines
        if not any(x.startswith("committing") for x in lines):
            assert tip == before, lines
    # killed as the commit starts, it has not reached its commit point
    assert outcomes[2] == ("committing", 0.0, False), outcomes
    # a new session publishes again, over whatever the kills left
    session = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(tmp_path / "repo")),
        authorize_virtual_chunk_access={prefix: None},
    ).writable_session("main")
    assert refs.to_icechunk(store, session.store, group="big", overwrite=True) == ROWS * PER_ROW
    session.commit("published again")
    reader = _repo_reader(tmp_path / "repo", prefix)
    _check_big(reader, values)
    xr.testing.assert_identical(_open(reader, "series"), want)
    print(outcomes)  # which kills landed before or after the commit point (-s shows it)


def _repo_reader(path: Path, prefix: str) -> Any:
    return icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(path)), authorize_virtual_chunk_access={prefix: None}
    ).readonly_session("main")
