"""Archives that do not start at the file's first byte keep the bytes before them.

A self-extracting archive starts with a program; ``zip -A`` and Python's ``zipfile`` in mode
``"a"`` on a file that is not an archive put the archive after the file's bytes, with offsets
counted from the file's start. Those bytes are the user's: a writable open, every commit,
deleting every entry and compaction keep them byte for byte, and the file keeps its inode
unless the user compacts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
import zipfile
from pathlib import Path

import pytest

from dafzarr import MmapZipStore
from tests.helpers.common import check_archive

STUB = b"#!/bin/sh\necho stub ran\nexit 0\n" + bytes(range(256)) * 4


def _stub_archive(path: Path, entries: dict[str, bytes], stub: bytes = STUB) -> None:
    """``stub`` followed by a ZIP archive of ``entries`` whose offsets count from the file's
    start, as ``zipfile`` writes it after a file's bytes (mode "a" does it for a file that is
    not an archive)."""
    with open(path, "wb") as f:
        f.write(stub)
        with zipfile.ZipFile(f, "w") as z:
            for name, data in entries.items():
                z.writestr(name, data)


def _open_quietly(path: Path) -> MmapZipStore:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RecoveryWarning: nothing is recovered
        return MmapZipStore(path, "r+")


def test_a_writable_open_keeps_a_stub_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "sfx.zip"
    path.write_bytes(STUB)
    with zipfile.ZipFile(path, "a") as z:  # appends an archive to a file that is not one
        z.writestr("a", b"alpha")
        z.writestr("b", b"beta")
    before, inode = path.read_bytes(), path.stat().st_ino
    store = _open_quietly(path)
    assert sorted(store.keys()) == ["a", "b"]
    store.close()
    assert path.read_bytes() == before
    assert path.stat().st_ino == inode


def test_commits_keep_the_stub_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sfx.zip"
    _stub_archive(path, {"a": bytes(range(256)) * 64, "b": b"beta"})
    inode = path.stat().st_ino
    with _open_quietly(path) as store:
        store["c"] = b"gamma"
        store["a"] = b"a rewritten"  # the first entry dies, with binary data
        del store["b"]
    assert path.read_bytes().startswith(STUB)
    assert path.stat().st_ino == inode  # not renewed: the file is what it was
    check_archive(path, {"a": b"a rewritten", "c": b"gamma"}, aligned=("c",))
    # The stub still runs, and the archive reopens with the same contents.
    out = subprocess.run(["sh", str(path)], capture_output=True, check=True)
    assert out.stdout == b"stub ran\n"
    with _open_quietly(path) as store:
        assert store["a"] == b"a rewritten" and sorted(store.keys()) == ["a", "c"]
        assert store.space().leading_bytes == len(STUB)


def test_deleting_every_entry_keeps_the_stub(tmp_path: Path) -> None:
    path = tmp_path / "sfx.zip"
    _stub_archive(path, {"a": b"alpha"})
    with _open_quietly(path) as store:
        store.delete_dir_sync("")
    assert path.read_bytes().startswith(STUB)
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == []
    with _open_quietly(path) as store:
        store["new"] = b"after"
    assert path.read_bytes().startswith(STUB)
    check_archive(path, {"new": b"after"})


def test_an_empty_archive_after_a_stub_takes_entries_after_it(tmp_path: Path) -> None:
    path = tmp_path / "sfx.zip"
    path.write_bytes(STUB)
    zipfile.ZipFile(path, "a").close()  # the stub and an end record
    with _open_quietly(path) as store:
        assert list(store.keys()) == []
        store["x"] = b"x"
        store["y"] = bytes(1000)
    assert path.read_bytes().startswith(STUB)
    check_archive(path, {"x": b"x", "y": bytes(1000)})


def test_an_archive_appended_to_another_archive_leaves_that_one_alone(tmp_path: Path) -> None:
    """The leading bytes are a ZIP archive of their own: its local headers are not this
    archive's dead copies, and none of them is marked or dropped."""
    first = tmp_path / "first.zip"
    with zipfile.ZipFile(first, "w") as z:
        z.writestr("one", b"1" * 100)
        z.writestr("two", b"2" * 100)
    leading = first.read_bytes()
    path = tmp_path / "both.zip"
    _stub_archive(path, {"a": b"alpha", "b": b"beta"}, stub=leading)
    with _open_quietly(path) as store:
        store["a"] = b"rewritten"  # the first entry dies
    data = path.read_bytes()
    assert data.startswith(leading)
    check_archive(path, {"a": b"rewritten", "b": b"beta"}, aligned=())
    with MmapZipStore(path, "r") as store:
        assert store.space().leading_bytes == len(leading)


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs Info-ZIP's zip")
def test_zip_adjusted_self_extractor(tmp_path: Path) -> None:
    """A self-extractor made the classic way: a stub, an archive, ``zip -A``."""
    (tmp_path / "f.txt").write_bytes(b"file")
    inner = tmp_path / "inner.zip"
    subprocess.run(["zip", "-q", str(inner), "f.txt"], cwd=tmp_path, check=True)
    path = tmp_path / "sfx.zip"
    path.write_bytes(STUB + inner.read_bytes())
    subprocess.run(["zip", "-qA", str(path)], check=True)
    with _open_quietly(path) as store:
        store["g.txt"] = b"added"
    assert path.read_bytes().startswith(STUB)
    check_archive(path, {"f.txt": b"file", "g.txt": b"added"}, aligned=("g.txt",))


@pytest.mark.parametrize("in_place", [True, False])
def test_compaction_keeps_the_stub(tmp_path: Path, in_place: bool) -> None:
    path = tmp_path / "sfx.zip"
    _stub_archive(path, {"a": b"alpha" * 100, "b": b"beta"})
    with _open_quietly(path) as store:
        store["a"] = b"short"
    out = None if in_place else tmp_path / "out.zip"
    space = MmapZipStore.compact(path, out)
    result = path if out is None else out
    assert space.leading_bytes == len(STUB) and space.dead_bytes == 0
    assert result.read_bytes().startswith(STUB)
    check_archive(result, {"a": b"short", "b": b"beta"})
    assert os.path.getsize(result) == space.file_size
