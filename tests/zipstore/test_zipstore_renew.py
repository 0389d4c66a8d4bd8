"""A commit that leaves dead binary bytes first renews the archive, so 7-Zip still finds it.

7-Zip looks for an archive past leading bytes that no directory lists only within the first
8 MiB, and takes the first signature it meets there: a zstd chunk that died at the start of
the file made ``7z t`` open the archive as a zstd stream. Dead plain-text metadata (a
superseded ``zarr.json``) is harmless and stays; anything else before the first listed entry
makes the commit compact the archive (temporary file, fsync, rename) when nothing may still
read the old bytes through this store, and when its live entries are within the store's
``renew_limit`` (no bound by default).
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numcodecs
import pytest
import zarr

from dafzarr import MmapZipStore
from dafzarr.errors import InvalidArgumentError
from tests.helpers.common import check_archive

from .test_zipstore_restart import killed_run, sigkill_rounds

sys.path.insert(0, str(Path(__file__).parent))
from _compact_child import renew_value


@pytest.fixture(autouse=True)
def _need_7z() -> None:
    assert shutil.which("7z"), "7z is not installed (.ci/run installs p7zip-full)"


ZSTD_CHUNK = numcodecs.Zstd(level=1).encode(bytes(100_000))


def _delete(store: MmapZipStore) -> None:
    del store["a/c/0"]


def _rewrite(store: MmapZipStore) -> None:
    store["a/c/0"] = ZSTD_CHUNK + b"new"


def _rewrite_in_batch(store: MmapZipStore) -> None:
    with store.batch():
        store["a/c/0"] = ZSTD_CHUNK + b"new"
        store["b"] = b"live too"


def _delete_array(store: MmapZipStore) -> None:
    store.delete_dir_sync("a")


KILLS: dict[str, Callable[[MmapZipStore], None]] = {
    "delete": _delete,
    "rewrite": _rewrite,
    "rewrite_in_batch": _rewrite_in_batch,
    "delete_dir": _delete_array,
}


@pytest.mark.parametrize("how", sorted(KILLS))
def test_a_dead_binary_first_entry_renews_the_archive(tmp_path: Path, how: str) -> None:
    p = tmp_path / "lead.zip"
    with MmapZipStore(p, "w") as store:
        store["a/c/0"] = ZSTD_CHUNK
        store["b"] = b"live"
        inode = os.stat(p).st_ino
        KILLS[how](store)
        assert os.stat(p).st_ino != inode  # a new file, renamed over the old one
        assert store.space().dead_bytes == 0
        expected = {k: bytes(store[k]) for k in store}
        store["c"] = b"after"  # the store goes on writing into the renewed file
        expected["c"] = b"after"
    check_archive(p, expected)  # 7-Zip finds the archive by itself
    assert bytes(p.read_bytes()[:4]) == b"PK\x03\x04"


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
def test_the_xarray_pattern_keeps_its_file(tmp_path: Path) -> None:
    """Superseded metadata first (JSON): no copy, and 7-Zip finds the archive past it."""
    p = tmp_path / "meta.zip"
    with MmapZipStore(p, "w") as store:
        g = zarr.open_group(store, mode="w", zarr_format=3, attributes={"v": 1})
        a = g.create_array("x", shape=(4_000,), chunks=(1_000,), dtype="f8")
        a[:] = 1.5
        inode = os.stat(p).st_ino
        for v in range(2, 6):
            g.attrs["v"] = v  # rewrites the root zarr.json, the file's first entry
            zarr.consolidate_metadata(store)
        assert os.stat(p).st_ino == inode
        assert store.space().dead_bytes > 0
    with zipfile.ZipFile(p) as z:
        assert z.infolist()[0].header_offset > 0  # dead metadata first ...
    check_archive(p)  # ... which 7-Zip looks past
    with MmapZipStore(p) as store:
        assert zarr.open_group(store, mode="r").attrs["v"] == 5


def test_many_dead_plain_bytes_renew_the_archive(tmp_path: Path) -> None:
    """Plain text too, once 4 MiB or more of it come before the first listed entry."""
    p = tmp_path / "long.zip"
    text = b'{"note": "' + b"x" * (1 << 20) + b'"}'
    with MmapZipStore(p, "w") as store:
        for i in range(5):
            store[f"m{i}"] = text
        store["b"] = b"live"
        inode = os.stat(p).st_ino
        for i in range(3):
            del store[f"m{i}"]
            assert os.stat(p).st_ino == inode  # under 4 MiB of dead text: kept
        check_archive(p)
        del store["m3"]  # the fourth MiB
        assert os.stat(p).st_ino != inode
        assert store.space().dead_bytes == 0
    check_archive(p, {"m4": text, "b": b"live"})


def test_archives_beyond_64_mib_are_renewed_too(tmp_path: Path) -> None:
    """By default there is no size bound: 7-Zip finds every archive after every commit."""
    p = tmp_path / "big.zip"
    big = os.urandom(1 << 20)
    with MmapZipStore(p, "w") as store:
        store["a/c/0"] = ZSTD_CHUNK
        with store.batch():
            for i in range(70):
                store[f"b/c/{i}"] = big
        inode = os.stat(p).st_ino
        del store["a/c/0"]
        assert os.stat(p).st_ino != inode and store.space().dead_bytes == 0
        check_archive(p)
        assert bytes(store["b/c/69"]) == big


def test_a_renew_limit_keeps_the_dead_start_until_compact(tmp_path: Path) -> None:
    p = tmp_path / "big.zip"
    with MmapZipStore(p, "w", renew_limit=1000) as store:
        store["a/c/0"] = ZSTD_CHUNK
        store["b"] = os.urandom(5000)
        inode = os.stat(p).st_ino
        del store["a/c/0"]
        assert os.stat(p).st_ino == inode and store.space().dead_bytes > 0
        check_archive(p, seven_zip_detects=False)  # valid; 7-Zip needs -tzip
        store.compact()
    check_archive(p)
    with MmapZipStore(p, "r+", renew_limit=1000) as store:
        assert pickle.loads(pickle.dumps(store)).renew_limit == 1000
        assert store.with_read_only(True).renew_limit == 1000


@pytest.mark.parametrize("limit", [-1, 1.5, True, "64M"])
def test_a_bad_renew_limit_is_refused(tmp_path: Path, limit: object) -> None:
    with pytest.raises(InvalidArgumentError, match="renew_limit"):
        MmapZipStore(tmp_path / "x.zip", "w", renew_limit=limit)  # type: ignore[arg-type]
    assert not (tmp_path / "x.zip").exists()


def _dead_start_under_a_view(store: MmapZipStore) -> tuple[memoryview, int]:
    """Delete the archive's first entry while a view maps it: the renewal waits."""
    store["a/c/0"] = ZSTD_CHUNK
    store["b"] = b"live"
    view = store["a/c/0"]
    inode = os.stat(store.path).st_ino
    del store["a/c/0"]
    assert os.stat(store.path).st_ino == inode  # the view maps the dead bytes: kept
    assert bytes(view) == ZSTD_CHUNK
    return view, inode


@pytest.mark.parametrize("then", ["commit", "close"])
def test_a_view_defers_the_renewal_until_it_goes(tmp_path: Path, then: str) -> None:
    """To the next commit after the view goes, or to the store's close."""
    p = tmp_path / "view.zip"
    store = MmapZipStore(p, "w")
    view, inode = _dead_start_under_a_view(store)
    store["c"] = b"1"
    assert os.stat(p).st_ino == inode and bytes(view) == ZSTD_CHUNK
    del view
    if then == "commit":
        store["d"] = b"2"  # the next commit renews
        assert os.stat(p).st_ino != inode
    store.close()
    assert os.stat(p).st_ino != inode
    expected = {"b": b"live", "c": b"1"}
    check_archive(p, {**expected, "d": b"2"} if then == "commit" else expected)


def _renew_round(tmp_path: Path, seed: int) -> int:
    path, values, done = killed_run(tmp_path, seed, "renew")
    if values:  # every key, each whole and written by one of the runs
        assert sorted(values) == sorted(f"k{i}" for i in range(10))
        for k, v in values.items():
            i = int(k[1:])
            run = int(v[1 : v.index(b"\xfe", 1)] if v.count(b"\xfe") > 1 else v[1:].rstrip(b"!"))
            assert v in (renew_value(run, i), renew_value(run, i) + b"!"), k
        # Killed between a commit and its renewal, the archive was renewed when reopened.
        check_archive(path, values)
    return done


def test_sigkill_while_renewing(tmp_path: Path) -> None:
    sigkill_rounds(tmp_path, _renew_round)
