"""A hard link that reports ``EEXIST`` although it was made: NFS clients retry a ``link``
whose reply was lost, and the retry finds the name the first call made. The name is then
the writer's own file: publishing succeeds, leaves no temporary, and never writes the same
object twice nor refuses a destination that is its own output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dafzarr._core.atomic import link_descriptor, publish_file, publish_new_file
from dafzarr.errors import OutputExistsError


def _temporary(tmp_path: Path, data: bytes) -> tuple[int, str]:
    tmp = str(tmp_path / ".out.tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    os.write(fd, data)
    return fd, tmp


def test_a_descriptor_link_made_before_its_retry_is_the_writers(tmp_path: Path) -> None:
    fd = os.open(str(tmp_path), os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, b"sidecar")
        path = str(tmp_path / "x.af.1")
        link_descriptor(fd, path)
        link_descriptor(fd, path)  # the retry: the name is there, and is this file
        assert Path(path).read_bytes() == b"sidecar"
        assert sorted(os.listdir(tmp_path)) == ["x.af.1"]
    finally:
        os.close(fd)


def test_a_descriptor_link_over_another_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.af.1"
    path.write_bytes(b"someone else's")
    fd = os.open(str(tmp_path), os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        with pytest.raises(FileExistsError):
            link_descriptor(fd, str(path))
    finally:
        os.close(fd)
    assert path.read_bytes() == b"someone else's"


def test_a_published_file_linked_before_its_retry_is_the_writers(tmp_path: Path) -> None:
    fd, tmp = _temporary(tmp_path, b"archive")
    destination = str(tmp_path / "out.zip")
    try:
        os.link(tmp, destination)  # the first link, whose reply was lost
        publish_file(fd, tmp, destination, force=False)
    finally:
        os.close(fd)
    assert Path(destination).read_bytes() == b"archive"
    assert os.listdir(tmp_path) == ["out.zip"]


def test_a_published_file_over_another_is_refused(tmp_path: Path) -> None:
    fd, tmp = _temporary(tmp_path, b"archive")
    destination = tmp_path / "out.zip"
    destination.write_bytes(b"someone else's")
    try:
        with pytest.raises(OutputExistsError):
            publish_file(fd, tmp, str(destination), force=False)
    finally:
        os.close(fd)
    assert destination.read_bytes() == b"someone else's"


@pytest.mark.parametrize("sync", [False, True])
def test_a_new_file_linked_before_its_retry_leaves_no_temporary(tmp_path: Path, sync: bool) -> None:
    fd, tmp = _temporary(tmp_path, b"data set")
    os.close(fd)
    destination = str(tmp_path / "d.daf.zarr.zip")
    os.link(tmp, destination)  # the first link, whose reply was lost
    publish_new_file(tmp, destination, sync)
    assert Path(destination).read_bytes() == b"data set"
    assert os.listdir(tmp_path) == ["d.daf.zarr.zip"]
