"""SIGKILL during flush and compact loses no flushed data (real child processes).

The child (``tests/arrayfile/_af_crash_child.py``) kills itself with SIGKILL right before or
right after each publishing file-system call (link, rename, unlink) of a script of flushes, compactions,
a delete and a re-definition; another test kills it from outside after random delays. After
every kill the file set must open and hold everything the child acknowledged, and the open
removes the temporaries the killed child left, once they are stale (no process holds them).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dafzarr import ArrayFile
from dafzarr._core.atomic import STALE_SECONDS

from ._af_crash_child import STEPS, expected

CHILD = str(Path(__file__).with_name("_af_crash_child.py"))


def _run(path: Path, kill_at: int) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [sys.executable, CHILD, str(path), str(kill_at)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.splitlines()
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stderr}")
    return proc.returncode, lines


def _state(path: Path) -> dict[str, tuple[list[int], dict[str, object]]]:
    with ArrayFile.open(path) as f:
        return {n: (f.read_array(n).tolist(), f.attributes(n)) for n in f.list_arrays()}


def _as_state(want: dict[str, tuple[np.ndarray, dict[str, object]]]) -> dict[str, object]:
    return {n: (d.tolist(), a) for n, (d, a) in want.items()}


def _check(path: Path, lines: list[str]) -> None:
    """The file set holds exactly the acknowledged state, or the state of the step that was
    in progress (a flush is durable once its sidecar is published, before it returns)."""
    acks = [line[4:] for line in lines if line.startswith("ack ")]
    if "created" not in acks:
        return  # killed before the empty base was published: nothing was promised
    done = len(acks)
    allowed = [_as_state(expected(acks))]
    if done < len(STEPS):
        nxt = STEPS[done]
        allowed.append(_as_state(expected([*acks, nxt])))
        if nxt == "redefined a0":  # the tombstone sidecar is published before the definition
            gone = _as_state(expected(acks))
            del gone["a0"]
            allowed.append(gone)
    state = _state(path)
    state.pop("after", None)  # written by the parent after the crash
    assert state in allowed, (acks, state)


def _points(tmp_path: Path) -> int:
    code, lines = _run(tmp_path / "ref.af", -1)
    assert code == 0 and lines[-1].startswith("points ")
    _check(tmp_path / "ref.af", lines)
    points = int(lines[-1].split()[1])
    assert points > 20
    return points


def test_sigkill_at_a_quarter_of_the_publishing_points(tmp_path: Path) -> None:
    """Every fourth point, from a random offset (all points: the slow test below)."""
    _kill_at(tmp_path, range(random.randrange(4), _points(tmp_path), 4))


@pytest.mark.slow
def test_sigkill_at_every_publishing_point(tmp_path: Path) -> None:
    _kill_at(tmp_path, range(_points(tmp_path)))


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def _check_temporaries_swept(directory: Path) -> list[str]:
    """An open removes what the killed child left once it is stale; the names it removed."""
    left = _temporaries(directory)
    old = time.time() - 2 * STALE_SECONDS
    for name in left:
        os.utime(directory / name, (old, old))
    if (directory / "f.af").exists():
        ArrayFile.open(directory / "f.af").close()
        assert _temporaries(directory) == [], left
    return left


def _kill_at(tmp_path: Path, points: range) -> None:
    for kill_at in points:
        d = tmp_path / f"k{kill_at}"
        d.mkdir()
        code, lines = _run(d / "f.af", kill_at)
        assert code == -signal.SIGKILL, (kill_at, lines)
        _check(d / "f.af", lines)
        _check_temporaries_swept(d)
        # the survivor can continue: flush and compact again
        if (d / "f.af").exists() and "ack created" in lines:
            with ArrayFile.open(d / "f.af") as f:
                f.define_array("after", "u1", ["x"], [3])
                f.write_array("after", [0], np.ones(3, "u1"))
                f.flush()
                f.compact()
            _check(d / "f.af", lines)
            with ArrayFile.open(d / "f.af") as f:
                assert f.read_array("after").tolist() == [1, 1, 1]


@pytest.mark.slow
def test_sigkill_at_random_times(tmp_path: Path) -> None:
    rng = random.Random()
    for n in range(30):
        d = tmp_path / f"r{n}"
        d.mkdir()
        proc = subprocess.Popen(
            [sys.executable, CHILD, str(d / "f.af"), "-1"], stdout=subprocess.PIPE, text=True
        )
        time.sleep(rng.uniform(0.3, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        _check(d / "f.af", out.splitlines())
        _check_temporaries_swept(d)


def test_sigkill_between_writing_and_publishing_leaves_no_temporary_for_good(
    tmp_path: Path,
) -> None:
    """Killed (SIGKILL) just before each ``os.replace`` that publishes a named temporary
    (the statistics of every flush, the new base of a compaction): the next open removes
    each of them once stale."""
    _, lines = _run(tmp_path / "ref.af", -1)
    before = [
        int(line.split()[1])
        for line in lines
        if line.startswith("point ") and line.split()[2] == "replace"
    ]
    swept = []
    for kill_at in before:
        d = tmp_path / f"k{kill_at}"
        d.mkdir()
        code, _ = _run(d / "f.af", kill_at)
        assert code == -signal.SIGKILL
        swept += _check_temporaries_swept(d)
    assert any(".stats" in name for name in swept), swept
    assert any(name.endswith(".af") for name in swept), swept


_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_temporary_that_a_live_process_holds_is_kept(tmp_path: Path) -> None:
    ArrayFile.create(tmp_path / "f.af").close()
    name = f".f.af.{os.getpid()}-0123abcd.dafzarr-tmp.stats"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path / name)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        old = time.time() - 2 * STALE_SECONDS
        os.utime(tmp_path / name, (old, old))
        ArrayFile.open(tmp_path / "f.af").close()
        assert _temporaries(tmp_path) == [name]
    finally:
        holder.communicate("", timeout=60)
    ArrayFile.open(tmp_path / "f.af").close()
    assert _temporaries(tmp_path) == []
