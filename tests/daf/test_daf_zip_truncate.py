"""Mode ``"w"`` on a ZIP data set (the whole archive): the old data set stays until the
commit that makes the new, empty one, and the guarantees of the open hold (the writer's lock
of another process, the read-only handles of this one); a new archive appears only with
its group."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr import ArchiveLockedError, DafzarrError, MmapZipStore
from dafzarr.errors import RecoveryWarning
from tests.helpers.common import check_archive


def _old(path: Path) -> None:
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", ["a", "b", "c"])
        d.set_vector("cell", "age", np.arange(3, dtype=np.int32))
        d.set_scalar("version", 1)


def _is_old(path: Path) -> bool:
    with dafzarr.open_daf(path) as d:
        return (
            d.axes_set() == {"cell"}
            and d.get_scalar("version") == 1
            and d.get_np_vector("cell", "age").tolist() == [0, 1, 2]
        )


# Killed with SIGKILL at the first write of the new data set's group, after the open.
_KILLED_AT_THE_NEW_GROUP = """
import os, signal, sys
import dafzarr
from dafzarr._core.daf.backends_zip import ZipBackend

def killed(self, items):
    os.kill(os.getpid(), signal.SIGKILL)

ZipBackend.put = killed
dafzarr.open_daf(sys.argv[1], "w")
"""


def test_a_writer_killed_before_the_new_group_leaves_the_old_data_set(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    _old(path)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_THE_NEW_GROUP, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _is_old(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        dafzarr.open_daf(path, "r+").close()  # recovers what the killed writer left
    assert _is_old(path)
    check_archive(path)


def test_a_writer_killed_before_the_new_group_leaves_no_archive(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_THE_NEW_GROUP, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not path.exists()
    with dafzarr.open_daf(path, "w") as d:  # the killed writer's temporary is not in the way
        d.add_axis("cell", ["a"])
    with dafzarr.open_daf(path) as d:
        assert d.axes_set() == {"cell"}


def test_a_new_archive_leaves_nothing_beside_it(tmp_path: Path) -> None:
    for rel in ("x.daf.zarr.zip", "y.dafs.zarr.zip#/g"):
        with dafzarr.open_daf(f"{tmp_path}/{rel}", "w") as d:
            d.add_axis("cell", ["a"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.daf.zarr.zip", "y.dafs.zarr.zip"]
    with dafzarr.open_daf(f"{tmp_path}/y.dafs.zarr.zip#/g") as d:
        assert d.axes_set() == {"cell"}


_TRY_WRITER = """
import sys
from dafzarr import MmapZipStore
from dafzarr.errors import ArchiveLockedError
try:
    MmapZipStore(sys.argv[1], "r+").close()
except ArchiveLockedError:
    print("locked")
else:
    print("opened")
"""


def _other_process_opens_for_writing(path: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", _TRY_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()


def test_a_new_archive_is_held_and_served_at_its_name(tmp_path: Path) -> None:
    """The store made under a temporary name keeps the archive's lock, and renews and
    compacts the file at its name."""
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w")
    store = d._backend.store  # type: ignore[attr-defined]
    assert store.path == str(path)
    assert _other_process_opens_for_writing(path) == "locked"
    d.add_axis("cell", [f"c{i}" for i in range(1000)])
    d.set_vector("cell", "x", np.arange(1000.0))
    d.delete_vector("cell", "x")
    store.compact()
    with dafzarr.open_daf(path, "r+") as again:  # the process-wide store of the path
        assert again._backend.store is store  # type: ignore[attr-defined]
    d.close()
    gc.collect()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.daf.zarr.zip"]
    assert _other_process_opens_for_writing(path) == "opened"
    with dafzarr.open_daf(path) as r:
        assert r.axes_set() == {"cell"} and not r.has_vector("cell", "x")
    check_archive(path)


def test_mode_w_drops_every_key_of_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    _old(path)
    with MmapZipStore(path, "r+") as s:
        s["extra/file"] = b"not of the data set"
    with dafzarr.open_daf(path, "w") as d:
        assert d.axes_set() == set() and d.scalars_set() == set()
        d.add_axis("gene", ["g"])
    with MmapZipStore(path) as s:
        assert not any(k.startswith(("extra", "axes/cell", "vectors/cell")) for k in s)
    with dafzarr.open_daf(path) as d:
        assert d.axes_set() == {"gene"}
    check_archive(path)


_HOLD_WRITER = """
import sys, time
from dafzarr import MmapZipStore
s = MmapZipStore(sys.argv[1], "r+")
print("holding", flush=True)
sys.stdin.read()
s.close()
"""


def test_mode_w_is_refused_while_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    _old(path)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == "holding"
        with pytest.raises(ArchiveLockedError):
            dafzarr.open_daf(path, "w")
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
    assert _is_old(path)


@pytest.mark.parametrize("other", ["r", "r+"])
def test_mode_w_is_refused_while_this_process_has_the_data_set_open(
    tmp_path: Path, other: str
) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    _old(path)
    handle = dafzarr.open_daf(path, other)  # type: ignore[call-overload]
    with pytest.raises(DafzarrError, match=r"can't truncate .*x\.daf\.zarr\.zip: it is open"):
        dafzarr.open_daf(path, "w")
    assert handle.get_np_vector("cell", "age").tolist() == [0, 1, 2]
    handle.close()
    assert _is_old(path)
    dafzarr.open_daf(path, "w").close()  # once they are closed
    with dafzarr.open_daf(path) as d:
        assert d.axes_set() == set()


def test_mode_w_replaces_a_file_that_is_no_archive(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    path.write_bytes(b"not an archive\n" * 100)
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("cell", ["a"])
    with dafzarr.open_daf(path) as d:
        assert d.axes_set() == {"cell"}
    check_archive(path)
