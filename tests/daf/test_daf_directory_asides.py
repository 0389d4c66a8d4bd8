"""A directory data set's deletes and overwrites stand or fall with their change: the old
property is renamed aside, removed when the change passed, put back when it raised; debris a
failed removal or a killed process leaves aside is swept by the next writable open.

(The errno-injection harness, ``test_io_errors.py``, fails deletes and overwrites at every
system call and checks the state left; this file checks the sweep.)"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import numpy as np

import dafzarr


def _base(path: Path) -> None:
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", ["a", "b", "c"])
        d.set_vector("cell", "age", np.array([1.0, 2.0, 3.0]))


def _hidden(path: Path) -> list[str]:
    """What is set aside below ``path``."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*.dafzarr-tmp"))


def test_debris_left_aside_is_swept_by_the_next_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "d.daf.zarr"
    _base(path)
    cell = path / "vectors" / "cell"
    stale = cell / f".old.{os.getpid()}-0badcafe.dafzarr-tmp"
    held = cell / f".held.{os.getpid()}-0badbeef.dafzarr-tmp"
    for aside in (stale, held):
        (aside / "sub").mkdir(parents=True)
        (aside / "sub" / "0").write_bytes(b"x" * 100)
        os.utime(aside, (time.time() - 3600, time.time() - 3600))
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live change may still put it back
    try:
        with dafzarr.open_daf(path, "r") as d:  # read-only: nothing removed, nothing listed
            assert d.vectors_set("cell") == {"age"}
        assert stale.exists()
        with dafzarr.open_daf(path, "r+") as d:
            assert d.vectors_set("cell") == {"age"}
        assert not stale.exists()
        assert held.exists()
    finally:
        os.close(fd)
    with dafzarr.open_daf(path, "r+"):
        pass
    assert _hidden(path) == []
