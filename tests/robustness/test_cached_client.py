"""What a reader whose client caches like an NFS client sees while another host writes.

A ``bindfs`` mount of a temporary directory is a second view of its files, as a second
host sees a file server: the writer writes through the directory itself (the server's
view), the reader opens through the mount (the client's view). The mount keeps, as an NFS
client does, file attributes and names for a while (``attr_timeout``, ``entry_timeout``,
``negative_timeout``: a stale size, a stale or missing name) and file pages across opens
(``kernel_cache``), dropped when a refreshed attribute shows another size or
modification time (the kernel's ``auto_inval_data``, on by default). The passthrough
names files by path, so a file replaced by a rename on the server keeps, until the next
attribute refresh, the client's cached pages of the file it replaced, next to fresh pages
of the new one: harsher than NFS, whose file handles tell the two files apart.

The reader (a child process: a ``SIGBUS`` or a hang would show in its exit status or
its timeout) opens the data set read-only again and again and checks every value against
the generations the writer committed (see ``_cached_client_child``): it must only see
whole committed generations or raise a ``DafzarrError``. The counts it saw are printed.

``flock`` on this mount is the kernel's, local to the mount (the passthrough forwards no
locks), as on NFS mounted with ``local_lock=flock``: a lock taken on the server's path
does not exclude a process that locks through the mount, and the converse.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHILD = str(Path(__file__).with_name("_cached_client_child.py"))
ROOT = str(Path(__file__).parents[2])
#: A reader of a directory data set reads a property's metadata and chunks relative to one
#: descriptor of its directory, and reads again when a chunk is missing because the
#: directory was renamed aside (tests/daf/test_daf_directory_read_race.py). The view names
#: files by path, so that descriptor names whatever directory is at the path when each file
#: is opened: a vector renamed aside between the look-up of its metadata and the read of
#: its chunk may still read as zeros here. A race, so the test does not fail every time.
DIRECTORY_RACE = pytest.mark.xfail(
    reason="through a view that names files by path, a vector overwritten while read in a "
    "directory data set may read as zeros",
    strict=False,
)
KINDS = [pytest.param("daf-dir", marks=DIRECTORY_RACE), "daf-zip", "zip"]
FILES = {"zip": "store.zip", "daf-dir": "cells.daf.zarr", "daf-zip": "cells.daf.zarr.zip"}

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse")


def _unmount(path: Path) -> None:
    for command in (["fusermount3", "-u", str(path)], ["umount", "-l", str(path)]):
        if not os.path.ismount(path):
            return
        subprocess.run(command, capture_output=True, timeout=30, check=False)
    assert not os.path.ismount(path), f"{path} is still mounted"


@contextlib.contextmanager
def _mount(tmp_path: Path, timeout: float) -> Iterator[tuple[Path, Path]]:
    bindfs = shutil.which("bindfs")
    assert bindfs and shutil.which("fusermount3"), "bindfs and fuse3 are installed by .ci/run"
    server, client = tmp_path / "server", tmp_path / "client"
    server.mkdir()
    client.mkdir()
    options = (
        f"kernel_cache,attr_timeout={timeout},entry_timeout={timeout},negative_timeout={timeout}"
    )
    subprocess.run([bindfs, "-o", options, str(server), str(client)], check=True, timeout=30)
    try:
        assert os.path.ismount(client)
        yield server, client
    finally:
        _unmount(client)


@pytest.fixture
def cached_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(server directory, client mount) with half-second attribute and name caches."""
    with _mount(tmp_path, 0.5) as views:
        yield views


def _run(role: str, kind: str, path: Path, seconds: float) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, CHILD, role, kind, str(path), str(seconds)]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _finish(process: subprocess.Popen[str], timeout: float, what: str) -> str:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the {what} hung: {err[-2000:]}")
    assert process.returncode == 0, (
        f"the {what} ended with status {process.returncode}: {err[-3000:]}"
    )
    return out


def _write_and_read(server: Path, client: Path, kind: str, seconds: float) -> dict[str, object]:
    writer = _run("writer", kind, server / FILES[kind], seconds + 120)  # until told to stop
    try:
        deadline = time.monotonic() + 60
        while not (server / FILES[kind]).exists() and writer.poll() is None:
            assert time.monotonic() < deadline, "the writer made nothing in a minute"
            time.sleep(0.05)
        reader = _run("reader", kind, client / FILES[kind], seconds)
        seen: dict[str, object] = json.loads(_finish(reader, seconds + 60, "reader"))
    finally:
        (server / (FILES[kind] + ".stop")).touch()
        generations = int(_finish(writer, 60, "writer"))
    seen["generations"] = generations
    print(f"{kind}: {seen}")
    assert seen["torn_count"] == 0, f"the reader saw torn states: {seen['torn']}"
    assert isinstance(seen["states"], int) and seen["states"] >= 2, seen
    return seen


@pytest.mark.parametrize("kind", KINDS)
def test_reader_sees_committed_states_or_errors(cached_mount: tuple[Path, Path], kind: str) -> None:
    _write_and_read(*cached_mount, kind, 3.0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_reader_sees_committed_states_or_errors_long(tmp_path: Path, kind: str) -> None:
    with _mount(tmp_path, 2.0) as (server, client):
        _write_and_read(server, client, kind, 30.0)


def test_flock_is_local_to_the_mount(cached_mount: tuple[Path, Path]) -> None:
    server, client = cached_mount
    (server / "archive.zip").write_bytes(b"")
    with (
        open(server / "archive.zip", "rb") as on_server,
        open(client / "archive.zip", "rb") as on_client,
    ):
        fcntl.flock(on_server, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The server's lock does not reach the mount: the client's exclusive lock is granted.
        fcntl.flock(on_client, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Two opens through the same client do exclude each other.
        with open(client / "archive.zip", "rb") as again, pytest.raises(BlockingIOError):
            fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_writer_lock_does_not_reach_the_mount(cached_mount: tuple[Path, Path]) -> None:
    from dafzarr import MmapZipStore

    server, client = cached_mount
    code = (
        "import sys; from dafzarr import MmapZipStore; from dafzarr.errors import ArchiveLockedError\n"
        "try:\n    MmapZipStore(sys.argv[1], 'r+').close()\nexcept ArchiveLockedError:\n    print('refused')\n"
        "else:\n    print('opened')\n"
    )

    def second_writer(path: Path) -> str:
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip()

    with MmapZipStore(server / "store.zip", "w") as store:
        store["a"] = b"1"
        assert second_writer(server / "store.zip") == "refused"
        # With local locks a writer on another host is not refused: keep to one writing host.
        assert second_writer(client / "store.zip") == "opened"
    with MmapZipStore(client / "store.zip", "r+") as store:
        assert second_writer(client / "store.zip") == "refused"
        assert bytes(store["a"]) == b"1"
