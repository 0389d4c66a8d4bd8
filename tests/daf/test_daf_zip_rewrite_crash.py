"""A writer killed with SIGKILL while it overwrites and deletes ZarrDaf properties in a ZIP
leaves every property at its old value or its new one: never missing, never a mix."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr.errors import CorruptArchiveError, RecoveryWarning
from tests.helpers.common import check_archive

N = 20_000

# Each round writes the round number i into every property; a property must always hold
# one round's value, whole (a uniform array of the right shape, both layouts of a matrix
# alike), and the properties that are only overwritten must always be there.
CHILD = """
import sys, numpy as np, scipy.sparse as sp, dafzarr
path, fmt = sys.argv[1], int(sys.argv[2])
d = dafzarr.open_daf(path, "w+", zarr_format=fmt)
i = int(d.get_scalar("s", default=0)) + 1
if not d.has_axis("cell"):
    d.add_axis("cell", [f"c{k}" for k in range(NCELLS)]).add_axis("gene", ["a", "b", "c"])
    d.add_axis("tmp", ["t0"])
first = i
while True:
    d.set_scalar("s", i if i % 3 else f"{i}", overwrite=True)
    if i % 2:
        d.set_vector("cell", "v", np.full(NCELLS, i, "int64"), overwrite=True)
    else:
        d.set_vector("cell", "v", sp.csr_matrix(np.full((1, NCELLS), i, "float32")),
                     overwrite=True)
    full = np.full((NCELLS, 3), i % 100 + 1, "float32")
    d.set_matrix("cell", "gene", "m", full if i % 2 else sp.csc_matrix(full), overwrite=True)
    if i % 2:  # one layout over both: the other goes in the same commit
        with d.empty_dense_matrix("cell", "gene", "f", "float32", overwrite=True) as f:
            f[:] = i % 100 + 1
    else:
        d.set_matrix("cell", "gene", "f", full, overwrite=True)
    with d.empty_dense_vector("cell", "e", "int32" if i % 2 else "float64",
                              overwrite=True) as e:
        e[:] = i
    if i % 2:
        d.delete_vector("cell", "gone", must_exist=False)
    else:
        d.set_vector("cell", "gone", np.full(NCELLS, i, "int16"), overwrite=True)
    d.add_axis("tmp", [f"t{i}", "x"], overwrite=True)
    d.set_vector("tmp", "tv", [i, i])
    if i == first + 1:
        print("ready", flush=True)
    i += 1
""".replace("NCELLS", str(N))


def _value(arr: np.ndarray, what: str) -> int:  # type: ignore[type-arg]
    """The round number a whole property holds (all its elements are equal)."""
    flat = np.asarray(arr).ravel()
    assert flat.size and bool(np.all(flat == flat[0])), f"{what} is a mix"
    return int(flat[0])


def _check(d: dafzarr.ZarrDaf) -> int:
    s = d.get_scalar("s")
    rounds = int(s)
    v = d.get_np_vector("cell", "v")
    assert v.shape == (N,)
    assert _value(v, "v") >= rounds - 1
    m = d.get_np_matrix("cell", "gene", "m")
    back = d.get_np_matrix("gene", "cell", "m")
    dense = m.toarray() if hasattr(m, "toarray") else m
    dense_back = back.toarray() if hasattr(back, "toarray") else back
    assert dense.shape == (N, 3) and dense_back.shape == (3, N)
    assert _value(dense, "m") == _value(dense_back, "m (other layout)")  # one commit
    f = d.get_np_matrix("cell", "gene", "f")
    assert f.shape == (N, 3)
    if d.has_matrix("gene", "cell", "f", relayout=False):  # never a stale other layout
        assert _value(f, "f") == _value(
            d.get_np_matrix("gene", "cell", "f", relayout=False), "f (other layout)"
        )
    e = d.get_np_vector("cell", "e")
    assert e.shape == (N,)
    assert _value(e, "e") >= rounds - 1
    if d.has_vector("cell", "gone"):
        assert _value(d.get_np_vector("cell", "gone"), "gone") % 2 == 0
    entries = list(d.axis_np_entries("tmp"))
    if d.has_vector("tmp", "tv"):  # the axis overwrite drops it; the next step sets it
        assert _value(d.get_np_vector("tmp", "tv"), "tv") == int(entries[0][1:])
    return rounds


def _run_and_kill(path: str, zarr_format: int, delay: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, path, str(zarr_format)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


@pytest.mark.parametrize("rel", ["x.daf.zarr.zip", "x.dafs.zarr.zip#/g"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_sigkill_during_overwrites_and_deletes(tmp_path: Path, rel: str, zarr_format: int) -> None:
    path = f"{tmp_path}/{rel}"
    rng = random.Random(f"{rel}{zarr_format}")
    seen = 0
    for _ in range(6):
        _run_and_kill(path, zarr_format, rng.uniform(0.0, 0.4))
        try:
            r = dafzarr.open_daf(path, "r")  # what a reader sees right after the crash
        except CorruptArchiveError as exc:
            # Killed inside a commit that moved the central directory: only a writable open
            # scans back (below).
            assert "a writable open" in str(exc)  # noqa: PT017
        else:
            assert _check(r) >= seen
            r.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecoveryWarning)
            w = dafzarr.open_daf(path, "r+")
            rounds = _check(w)
            w.close()
        assert rounds >= max(seen, 2)
        seen = rounds
    check_archive(Path(path.split("#/")[0]))
