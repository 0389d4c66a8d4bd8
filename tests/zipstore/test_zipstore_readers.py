"""Read-only opens while a writer in another process commits: each sees a valid committed
state (the one before a commit or the one after it), never an error or a mixed state."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dafzarr import CorruptArchiveError, MmapZipStore
from dafzarr._core.zipstore import open as zipstore_open

from . import _commit_child as child

CHILD = Path(child.__file__)


def _check_state(store: MmapZipStore) -> int:
    """The newest keys hold one of their versions; returns how many keys there are."""
    keys = [k for k in store if not k.startswith("base/")]
    for key in keys[-3:]:
        assert bytes(store[key]) in (child.payload(key, 0), child.payload(key, 1)), key
    return len(keys)


def test_read_only_opens_during_commits(tmp_path: Path) -> None:
    p = tmp_path / "busy.zip"
    with MmapZipStore(p, "w") as store, store.batch():
        for i in range(1000):  # a directory of ~80 KB: small entries overlap it
            store[f"base/{i:05d}"] = b"b"
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(p)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    failures: list[str] = []
    sizes: set[int] = set()
    # At least 1000 opens, over at least 3 s: an open takes well under a millisecond, and
    # the opens must span a few hundred of the writer's commits.
    opens = 0
    until = time.monotonic() + 3.0
    while opens < 1000 or time.monotonic() < until:
        opens += 1
        try:
            with MmapZipStore(p) as store:
                sizes.add(_check_state(store))
        except Exception as e:  # noqa: BLE001 - counted and reported below
            failures.append(f"{type(e).__name__}: {e}")
    proc.stdin.close()
    commits = int(proc.stdout.read().strip())
    proc.stdout.close()
    assert proc.wait() == 0
    assert not failures, f"{len(failures)} of {opens} opens failed, e.g. {failures[:3]}"
    assert commits >= 200, f"only {commits} commits during the opens"
    assert len(sizes) > 100, f"the opens saw only {len(sizes)} states"
    print(f"{commits} commits, {len(sizes)} states seen by 1000 opens")


def _damaged(tmp_path: Path) -> Path:
    p = tmp_path / "damaged.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"a" * 100
    p.write_bytes(p.read_bytes()[:-5])  # no end record at the end of the file
    return p


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    loads = [0]
    load = zipstore_open.load_read_only

    def counted(archive: Any, fm: Any) -> None:
        loads[0] += 1
        load(archive, fm)

    monkeypatch.setattr(zipstore_open, "load_read_only", counted)
    return loads


def test_damaged_archive_without_writer_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process holds the writer's lock: no commit can be under way, so no waiting."""
    p = _damaged(tmp_path)
    loads = _count_loads(monkeypatch)
    with pytest.raises(CorruptArchiveError, match="writable open"):
        MmapZipStore(p)
    assert loads[0] == 2  # the load, and one more look in case a writer had just finished


def test_damaged_archive_under_a_writer_lock_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process holds the writer's lock (as during a commit): the open waits for a valid
    state, up to its limit, then refuses."""
    p = _damaged(tmp_path)
    hold = (
        "import fcntl, sys; f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_EX); "
        "print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(p)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        loads = _count_loads(monkeypatch)
        with pytest.raises(CorruptArchiveError):
            MmapZipStore(p)
        assert loads[0] > 10
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
