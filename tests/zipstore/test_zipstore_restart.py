"""A delete that leaves no entry listed puts a fresh empty archive in the file's place.

Without it, the dead copies would be the archive's first bytes for ever: 7-Zip looks for an
archive among them (it takes a zstd chunk for a zstd file, and past a few MiB finds none),
and `to_zarr(mode="w")` or `write_zarr` over an earlier dataset would keep its bytes. The
fresh archive is put in place as compaction does it, so a kill leaves a valid archive, and
it is skipped whenever something may still read the old bytes through this store.
"""

from __future__ import annotations

import os
import random
import shutil
import warnings
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import xarray as xr
import zarr
from zarr.core.sync import sync

from dafzarr import MmapZipStore, RecoveryWarning
from dafzarr._core.zipstore import ziprecords as zf
from tests.helpers.common import check_archive

from .test_zipstore_compact_crash import _check_leftovers, _run_and_kill


@pytest.fixture(autouse=True)
def _need_7z() -> None:
    assert shutil.which("7z"), "7z is not installed (.ci/run installs p7zip-full)"


def _fill(store: MmapZipStore) -> None:
    # A zstd chunk first: once dead, 7-Zip would take it for a zstd file.
    store["a/c/0"] = numcodecs.Zstd(level=1).encode(bytes(100_000))
    store["a/c/1"] = os.urandom(3000)
    store["zarr.json"] = b'{"zarr_format": 3, "node_type": "group"}'


def _delete_one_by_one(store: MmapZipStore) -> None:
    for k in list(store.keys()):
        del store[k]


DELETES: dict[str, Callable[[MmapZipStore], None]] = {
    "clear": lambda store: sync(store.clear()),
    "delete_dir": lambda store: store.delete_dir_sync(""),
    "one_by_one": _delete_one_by_one,
    "zarr_mode_w": lambda store: zarr.open_group(store, mode="w"),
}


@pytest.mark.parametrize("how", sorted(DELETES))
def test_deleting_every_key_starts_a_fresh_archive(tmp_path: Path, how: str) -> None:
    p = tmp_path / "r.zip"
    with MmapZipStore(p, "w") as store:
        _fill(store)
        inode = os.stat(p).st_ino
        DELETES[how](store)
        if how != "zarr_mode_w":
            assert p.read_bytes() == zf.EMPTY_ARCHIVE
            assert os.stat(p).st_ino != inode  # a new file, renamed over the old one
        assert store.space().dead_bytes == 0
        store["b"] = b"after"
        assert bytes(store["b"]) == b"after"
    assert b"\x28\xb5\x2f\xfd" not in p.read_bytes()  # the zstd chunk is gone
    expected = {"b": b"after"}
    if how == "zarr_mode_w":
        with zipfile.ZipFile(p) as z:
            expected["zarr.json"] = z.read("zarr.json")
    check_archive(p, expected)  # 7-Zip finds the archive at offset 0 by itself
    with MmapZipStore(p) as store:
        assert bytes(store["b"]) == b"after"


def test_a_view_keeps_the_emptied_archive_in_place(tmp_path: Path) -> None:
    p = tmp_path / "v.zip"
    with MmapZipStore(p, "w") as store:
        _fill(store)
        view = store["a/c/1"]
        old = bytes(view)
        inode, size = os.stat(p).st_ino, os.path.getsize(p)
        sync(store.clear())
        assert os.stat(p).st_ino == inode and os.path.getsize(p) < size
        assert store.space().dead_bytes > 0  # kept: the view still maps them
        assert bytes(view) == old
        store["b"] = b"after"
        assert bytes(view) == old
        del view
        store.compact()  # what gives such an archive a fresh start
        assert store.space().dead_bytes == 0
    check_archive(p, {"b": b"after"})


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
def test_a_reader_opened_before_keeps_its_values(tmp_path: Path) -> None:
    p = tmp_path / "ro.zip"
    ds = xr.Dataset({"v": (("x",), np.arange(50_000.0))})
    with MmapZipStore(p, "w") as store:
        ds.to_zarr(
            store,
            mode="w",
            zarr_format=3,
            consolidated=True,
            encoding={"v": {"chunks": (5_000,), "compressors": None}},
        )
    with MmapZipStore(p) as reader, MmapZipStore(p, "r+") as writer:
        lazy = xr.open_zarr(reader)  # maps the old file, read later
        writer.delete_dir_sync("")
        assert p.read_bytes() == zf.EMPTY_ARCHIVE
        writer["other"] = b"1"
        xr.testing.assert_identical(lazy.load(), ds)
        del lazy


def test_a_hard_linked_archive_is_not_replaced(tmp_path: Path) -> None:
    p, twin = tmp_path / "h.zip", tmp_path / "twin.zip"
    with MmapZipStore(p, "w") as store:
        _fill(store)
        os.link(p, twin)
        sync(store.clear())
        assert os.path.samefile(p, twin)  # a rename would part the two names
        store["b"] = b"after"
    check_archive(p, {"b": b"after"}, seven_zip_detects=False)
    assert twin.read_bytes() == p.read_bytes()


def test_a_clear_inside_a_batch_commits_with_it(tmp_path: Path) -> None:
    p = tmp_path / "b.zip"
    with MmapZipStore(p, "w") as store:
        _fill(store)
        with store.batch():
            sync(store.clear())
            store["b"] = b"after"
            assert sorted(store.keys()) == ["b"]
        assert sorted(store.keys()) == ["b"]
    check_archive(p, {"b": b"after"})


def killed_run(tmp_path: Path, seed: int, mode: str) -> tuple[Path, dict[str, bytes], int]:
    """Run ``tests/zipstore/_compact_child.py MODE`` on a fresh archive, SIGKILL it at a random
    instant, reopen the archive for writing; its path, its values and the runs completed."""
    rng = random.Random(seed)
    d = tmp_path / f"{mode}{seed}"
    d.mkdir()
    path = d / "a.zip"
    MmapZipStore(path, "w").close()
    done = _run_and_kill([mode, str(path)], d / "log", rng.uniform(0.0, 0.6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)  # a killed batch of writes
        with MmapZipStore(path, "r+") as store:
            values = {k: bytes(store[k]) for k in store}
    _check_leftovers(d, path)
    return path, values, done


def _clear_round(tmp_path: Path, seed: int) -> int:
    path, values, done = killed_run(tmp_path, seed, "clear")
    if values:  # every key of one run, each whole
        runs = {v[: len(v) // (1 + int(k[1:]) * 5000)] for k, v in values.items()}
        assert len(runs) == 1 and sorted(values) == sorted(f"k{i}" for i in range(20))
        run = runs.pop()
        assert all(v == run * (1 + int(k[1:]) * 5000) for k, v in values.items())
        check_archive(path, values)
    return done


def sigkill_rounds(tmp_path: Path, one_round: Callable[[Path, int], int]) -> None:
    """Eight killed runs, four at a time; some kills must come after whole runs.

    The warning filters are process-wide: a thread leaving its own ``catch_warnings`` block
    restores them under the others, so the recovery of a killed run is allowed here, around
    the whole pool, too."""
    with warnings.catch_warnings(), ThreadPoolExecutor(4) as pool:
        warnings.simplefilter("ignore", RecoveryWarning)
        done = list(pool.map(lambda seed: one_round(tmp_path, seed), range(8)))
    assert sum(done) > 0


def test_sigkill_while_clearing(tmp_path: Path) -> None:
    sigkill_rounds(tmp_path, _clear_round)
