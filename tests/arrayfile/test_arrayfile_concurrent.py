"""One process compacts a file set in a loop while another opens, reads, writes and flushes
it (real processes): every open sees one state of the file set, before or after a
compaction, never an error and never a mix; a file set that keeps changing under an open
ends in a clear error."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dafzarr import ArrayFile
from dafzarr._core.arrayfile import sidecars
from tests.helpers import ROOT
from tests.helpers.common import kill_when_ready

from . import _af_compact_child as child

CHILD = Path(child.__file__)


def _start_compacting(path: Path, log: Path) -> subprocess.Popen[bytes]:
    """The child compacting ``path`` in a loop, once it is ready."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(path), str(log)],
        # The child imports the dafzarr under test, not another installed copy.
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_bytes().startswith(b"ready")):
        if proc.poll() is not None:
            raise AssertionError(f"the child died: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.005)
    return proc


def _race(tmp_path: Path, seconds: float) -> None:
    """Open, read (checking every value), write and flush ``seconds`` long, with a fresh
    handle and with one kept open, while the child compacts."""
    path = tmp_path / "f.af"
    child.create(str(path))
    log = tmp_path / "log"
    proc = _start_compacting(path, log)
    b = np.zeros(2 * child.CHUNKS, "i4")  # written by fresh handles
    c = np.zeros(2 * child.CHUNKS, "i4")  # written by the handle kept open
    newest = rounds = 0
    kept = ArrayFile.open(path)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            rounds += 1
            with ArrayFile.open(path) as f:
                newest = child.check(f.read_array("a"), newest)
                assert f.read_array("b").tolist() == b.tolist()
                assert f.read_array("c").tolist() == c.tolist()
            i = rounds % (2 * child.CHUNKS)
            with ArrayFile.open(path) as f:
                f.write_array("b", [i], np.array([rounds], "i4"))  # a partial chunk
            b[i] = rounds
            kept.write_array("c", [i], np.array([rounds], "i4"))
            kept.flush()
            c[i] = rounds
        assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        kept.close(flush=False)
        kill_when_ready(proc, log, 0)
    assert _compactions(log) > 10 and rounds > 10, (_compactions(log), rounds)
    with ArrayFile.open(path) as f:
        child.check(f.read_array("a"), newest)
        assert f.read_array("b").tolist() == b.tolist()
        assert f.read_array("c").tolist() == c.tolist()


def _compactions(log: Path) -> int:
    return sum(1 for line in log.read_text().split("\n") if line.startswith("done "))


def _race_object_store(tmp_path: Path, seconds: float) -> None:
    """Open through obstore (the listing path of object stores) ``seconds`` long while the
    child compacts: every open succeeds and every value read belongs to one state.

    An object store keeps no descriptor on the generation an open read: a read of an object
    that a compaction replaced or deleted since the open raises ``FileNotFoundError``
    (``ESTALE``/``ENOENT``, naming the object), so those rounds check no values.
    """
    obstore_store = pytest.importorskip("obstore.store")
    path = tmp_path / "f.af"
    child.create(str(path))
    target = (obstore_store.LocalStore(str(tmp_path)), path.name)
    log = tmp_path / "log"
    proc = _start_compacting(path, log)
    newest = opens = 0
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with ArrayFile.open(target) as f:
                opens += 1
                with contextlib.suppress(FileNotFoundError):
                    newest = child.check(f.read_array("a"), newest)
        assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        kill_when_ready(proc, log, 0)
    assert _compactions(log) > 10 and opens > 10 and newest > 0, (_compactions(log), opens)


def test_open_read_write_and_flush_while_another_process_compacts(tmp_path: Path) -> None:
    _race(tmp_path, 4.0)


def test_object_store_open_while_another_process_compacts(tmp_path: Path) -> None:
    _race_object_store(tmp_path, 4.0)


@pytest.mark.slow
def test_a_minute_beside_another_process_compacting(tmp_path: Path) -> None:
    for sub in ("local", "obstore"):
        (tmp_path / sub).mkdir()
    _race(tmp_path / "local", 60.0)
    _race_object_store(tmp_path / "obstore", 60.0)


def test_a_sidecar_listed_but_never_readable_ends_in_a_clear_error(tmp_path: Path) -> None:
    """A listed sidecar that is gone at every attempt (here a dangling link) is retried a
    bounded number of times, then named in an :class:`UnstableFileSetError`."""
    from dafzarr.errors import DafzarrError, UnstableFileSetError

    path = tmp_path / "f.af"
    child.create(str(path))
    (tmp_path / "f.3.af").symlink_to(tmp_path / "gone.af")
    started = time.monotonic()
    with pytest.raises(UnstableFileSetError) as caught:
        ArrayFile.open(path)
    assert time.monotonic() - started < 10
    assert isinstance(caught.value, DafzarrError) and isinstance(caught.value, OSError)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'f.3.af'}: was listed next to {path}")
    assert f"{sidecars.LOAD_ATTEMPTS} times in a row" in message
