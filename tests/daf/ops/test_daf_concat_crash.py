"""A process concatenating into a ZIP data set, killed with SIGKILL midway, leaves the data set
as it was before: one commit, never half a concatenation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr.errors import CorruptArchiveError, RecoveryWarning
from tests.helpers.common import check_zip_tools_accept

CELLS, GENES = 20_000, 200

# The child concatenates the sources into the destination. With a block count, it kills
# itself right after the concatenation hands out that many blocks of the result to be written
# (the write of the result is under way); otherwise the parent kills it after a delay.
CHILD = """
import os, signal, sys
import dafzarr
from dafzarr._core.daf.ops import concat_write as _concat_write
dest, kill_at, sources = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
_concat_write._BLOCK = 20_000  # many blocks per source
if kill_at:
    blocks = _concat_write.Pieces.blocks
    seen = [0]
    def counted(self):
        for block in blocks(self):
            seen[0] += 1
            if seen[0] == kill_at:
                print("kill", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            yield block
    _concat_write.Pieces.blocks = counted
d = dafzarr.open_daf(dest, "r+")
srcs = [dafzarr.open_daf(p, "r") for p in sources]
print("ready", flush=True)
dafzarr.concatenate(d, "cell", srcs, names=[f"s{i}" for i in range(len(srcs))])
d.close()
print("done", flush=True)
"""


def _sources(tmp_path: Path) -> list[str]:
    paths = []
    for k in range(3):
        path = str(tmp_path / f"s{k}.daf.zarr.zip")
        d = dafzarr.open_daf(path, "w")
        d.add_axis("cell", [f"s{k}c{i}" for i in range(CELLS)])
        d.add_axis("gene", [f"g{i}" for i in range(GENES)])
        d.set_matrix(
            "gene",
            "cell",
            "UMIs",
            sp.random(GENES, CELLS, density=0.1, random_state=k, dtype=np.float32, format="csc"),
            relayout=False,
        )
        d.set_vector("cell", "age", np.arange(CELLS, dtype=np.int32))
        d.close()
        paths.append(path)
    return paths


def _earlier_state(path: str) -> None:
    d = dafzarr.open_daf(path, "w")
    d.set_scalar("kept", 7)
    d.add_axis("old", ["x", "y"])
    d.set_vector("old", "value", np.array([1.5, 2.5]))
    d.close()


def _is_earlier_state(d: dafzarr.ZarrDaf) -> bool:
    if d.axes_set() != {"old"}:
        return False
    assert d.get_scalar("kept") == 7
    assert list(d.get_np_vector("old", "value")) == [1.5, 2.5]
    return True


def _is_complete(d: dafzarr.ZarrDaf, sources: list[str]) -> None:
    assert d.axes_set() == {"old", "cell", "gene", "dataset"}
    m = d.get_np_matrix("gene", "cell", "UMIs")
    want = sp.hstack(
        [dafzarr.open_daf(p).get_np_matrix("gene", "cell", "UMIs") for p in sources]
    ).tocsc()
    assert (m != want).nnz == 0
    assert d.get_np_vector("cell", "age").shape == (3 * CELLS,)


def _run(dest: str, sources: list[str], kill_at: int, delay: float | None) -> str:
    """Run the child; with ``delay`` (and no ``kill_at``) kill it that long after it starts
    concatenating."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, dest, str(kill_at), *sources],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    if not kill_at and delay is not None:
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
    out = proc.stdout.read()
    proc.wait()
    proc.stdout.close()
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("kill_at", "delay"), [(1, None), (4, None), (40, None), (0, 0.3)])
def test_sigkill_midway_leaves_the_earlier_state(
    tmp_path: Path, kill_at: int, delay: float | None
) -> None:
    sources = _sources(tmp_path)
    dest = str(tmp_path / "dest.daf.zarr.zip")
    _earlier_state(dest)
    out = _run(dest, sources, kill_at, delay)
    if kill_at:
        assert "kill" in out and "done" not in out
    try:
        r = dafzarr.open_daf(dest, "r")  # what a reader sees right after the crash
    except CorruptArchiveError as exc:
        # killed inside the commit itself: a writable open recovers (below)
        assert "a writable open" in str(exc)  # noqa: PT017
    else:
        if not _is_earlier_state(r):
            assert "done" in out  # the timed kill came after the commit
            _is_complete(r, sources)
        r.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        w = dafzarr.open_daf(dest, "r+")
        earlier = _is_earlier_state(w)
        if not earlier:
            _is_complete(w, sources)
        w.close()
    if kill_at:
        assert earlier
    check_zip_tools_accept(dest)
    if earlier:  # the data set stays usable: the same concatenation now runs to its end
        assert "done" in _run(dest, sources, 0, None)
        r = dafzarr.open_daf(dest, "r")
        _is_complete(r, sources)
        r.close()
