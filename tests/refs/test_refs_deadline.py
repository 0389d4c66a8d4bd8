"""A file's scan has a deadline that holds even when the HDF5 library never returns."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from dafzarr import refs
from dafzarr._core.refs import deadline
from dafzarr.errors import H5Error, InvalidArgumentError, ScanTimeoutError

from .test_refs_scan import make_cf


def _fifo(tmp_path: Path) -> Path:
    """A named pipe: HDF5's open(2) of it blocks until a writer comes, which none does."""
    path = tmp_path / "never.nc"
    os.mkfifo(path)
    return path


def test_a_scan_that_never_returns_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    path = _fifo(tmp_path)
    start = time.monotonic()
    with pytest.raises(ScanTimeoutError, match=rf"{path}: not done after 1 s") as info:
        refs.scan(path, timeout=1.0)
    assert 1.0 <= time.monotonic() - start < 30
    assert isinstance(info.value, H5Error) and isinstance(info.value, TimeoutError)
    # the helper stuck in open(2) was killed, not kept for the next scan
    assert all(h.proc.poll() is None for h in deadline._IDLE)
    good = make_cf(tmp_path / "cf.nc")
    assert set(refs.scan(good, timeout=60)["tas"].shape) == {4, 10, 12}


@pytest.mark.parametrize("workers", [None, 2])
def test_scan_many_stops_the_file_that_hangs_and_names_it(
    tmp_path: Path, workers: int | None
) -> None:
    good = [make_cf(tmp_path / f"cf{i}.nc") for i in range(6)]
    bad = _fifo(tmp_path)
    start = time.monotonic()
    with pytest.raises(ScanTimeoutError, match=str(bad)):
        refs.scan_many([*good[:3], bad, *good[3:]], workers=workers, progress=False, timeout=2.0)
    assert time.monotonic() - start < 30
    # helpers that were queued files behind the stuck one were killed, not kept
    assert all(h.proc.poll() is None for h in deadline._IDLE)
    assert len(refs.scan_many(good, workers=workers, progress=False)) == 6


def test_helpers_are_reused_and_killed_on_timeout(tmp_path: Path) -> None:
    good = make_cf(tmp_path / "cf.nc")
    refs.scan(good)
    pids = {h.proc.pid for h in deadline._IDLE}
    assert pids
    refs.scan(good)
    assert {h.proc.pid for h in deadline._IDLE} == pids  # the same helper answered
    with pytest.raises(ScanTimeoutError):
        refs.scan(_fifo(tmp_path), timeout=0.5)
    refs.scan(good)
    # the killed helper is gone from the pool
    for h in deadline._IDLE:
        assert h.proc.poll() is None


def test_a_helper_killed_mid_scan_is_an_h5error(tmp_path: Path) -> None:
    path = _fifo(tmp_path)
    caught: list[BaseException] = []

    def run() -> None:
        try:
            refs.scan(path, timeout=60)
        except H5Error as exc:  # recorded for the assertion below
            caught.append(exc)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(1.0)
    idle = {h.proc.pid for h in deadline._IDLE}
    busy = [pid for pid in _children() if pid not in idle]  # the helper stuck in open(2)
    assert len(busy) == 1
    os.kill(busy[0], 9)
    t.join(30)
    assert caught and isinstance(caught[0], H5Error)
    assert "the scanning process ended without an answer (exit status -9" in str(caught[0])


def _children() -> list[int]:
    """This process' scan helpers (Linux /proc: children running the helper's loop)."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if int(fields[1]) == me and b"dafzarr._core.refs.deadline" in cmdline:
                out.append(int(entry))
    return out


@pytest.mark.parametrize("timeout", [0, -1, "5", True])
def test_timeout_must_be_positive_seconds(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(InvalidArgumentError, match="timeout must be"):
        refs.scan(tmp_path / "x.nc", timeout=timeout)  # type: ignore[arg-type]


def test_timeout_none_scans_in_this_process(tmp_path: Path) -> None:
    r = refs.scan(make_cf(tmp_path / "cf.nc"), timeout=None)
    assert r["tas"].chunks == (1, 5, 6)


def test_helpers_outlive_the_threads_that_asked_for_them(tmp_path: Path) -> None:
    """Linux kills a child when the thread that started it ends (PR_SET_PDEATHSIG): helpers
    are started by one long-lived thread, so scan_many's worker threads can come and go."""
    files = [make_cf(tmp_path / f"cf{i}.nc") for i in range(4)]
    refs.scan_many(files, workers=2, progress=False)
    pids = {h.proc.pid for h in deadline._IDLE}
    assert len(pids) >= 2
    time.sleep(0.5)  # the executor's threads have ended by now
    assert all(h.proc.poll() is None for h in deadline._IDLE)
    refs.scan_many(files, workers=2, progress=False)
    assert {h.proc.pid for h in deadline._IDLE} == pids


def test_map_with_deadline_spreads_calls_over_helpers_and_answers_in_order() -> None:
    calls = (((i,), {}, f"call {i}") for i in range(12))  # taken as they are needed
    answers = list(deadline.map_with_deadline(_pid_and, calls, timeout=60, helpers=2))
    assert [i for i, _ in answers] == list(range(12))
    pids = [pid for _, pid in answers]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert pids[0::2] == [pids[0]] * 6 and pids[1::2] == [pids[1]] * 6


def test_a_failing_call_among_several_helpers_kills_them_all(tmp_path: Path) -> None:
    calls = [((i,), {}, f"call {i}") for i in range(10)]
    got: list[int] = []
    with pytest.raises(InvalidArgumentError, match="call number 5"):
        got.extend(deadline.map_with_deadline(_fails_at_5, calls, timeout=60, helpers=3))
    assert got == [0, 1, 2, 3, 4]
    assert all(h.proc.poll() is None for h in deadline._IDLE)  # the killed ones are gone
    assert len(list(deadline.map_with_deadline(_pid_and, calls, timeout=60, helpers=3))) == 10


def _pid_and(i: int) -> tuple[int, int]:
    return i, os.getpid()


def _fails_at_5(i: int) -> int:
    if i == 5:
        raise InvalidArgumentError(f"call number {i}")
    return i


def test_a_relative_path_is_scanned_in_the_callers_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Helpers are reused across scans: after the caller changes directory, a relative path
    names the file in the new directory, not the one where the helper started."""
    import h5py
    import numpy as np

    for name, n in (("a", 2), ("b", 5)):
        (tmp_path / name).mkdir()
        with h5py.File(tmp_path / name / "x.nc", "w") as f:
            f["v"] = np.zeros(n)
    monkeypatch.chdir(tmp_path / "a")
    assert refs.scan("x.nc")["v"].shape == (2,)
    monkeypatch.chdir(tmp_path / "b")
    assert refs.scan("x.nc")["v"].shape == (5,)
    assert [s["v"].shape for s in refs.scan_many(["x.nc"], progress=False)] == [(5,)]
