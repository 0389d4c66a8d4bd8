"""``delete_dir`` on archives with folder entries (``zip -r`` writes ``x/`` entries): the
deleted prefix leaves no empty folder behind for listings (zarr-python, ``unzip -l``)."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from dafzarr import MmapZipStore
from tests.helpers.common import check_archive

pytestmark = pytest.mark.skipif(not shutil.which("zip"), reason="needs Info-ZIP zip")


def _zip_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for rel in ("a/b/c/k1", "a/b/k2", "a/bb/k3", "top"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(rel.encode())
    path = tmp_path / "t.zip"
    subprocess.run(["zip", "-q", "-r", "-0", str(path), "."], cwd=src, check=True)
    assert "a/b/c/" in zipfile.ZipFile(path).namelist()
    return path


def test_delete_dir_drops_folder_entries(tmp_path: Path) -> None:
    path = _zip_tree(tmp_path)
    with MmapZipStore(path, "r+") as store:
        store.delete_dir_sync("a/b")
        assert sorted(store) == ["a/bb/k3", "top"]
    names = zipfile.ZipFile(path).namelist()
    assert not [n for n in names if n.startswith("a/b/")]
    assert "a/" in names and "a/bb/" in names  # other folders stay
    check_archive(path, aligned=())
    with MmapZipStore(path) as store:
        assert sorted(store) == ["a/bb/k3", "top"]


def test_rolled_back_delete_dir_keeps_folder_entries(tmp_path: Path) -> None:
    path = _zip_tree(tmp_path)
    with MmapZipStore(path, "r+") as store:
        with pytest.raises(RuntimeError, match="abandon"), store.batch():
            store.delete_dir_sync("a/b")
            raise RuntimeError("abandon")
        store["new"] = b"n"  # a later commit lists the folders again
    names = zipfile.ZipFile(path).namelist()
    assert {"a/b/", "a/b/c/", "a/b/c/k1", "a/b/k2", "new"} <= set(names)
    check_archive(path, aligned=())
