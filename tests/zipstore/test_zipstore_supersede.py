"""MmapZipStore rewrites (a newer copy supersedes the old one) and deletes.

Every committed state must be a valid archive for zipfile, unzip and 7-Zip, with no
duplicate names and every data offset 8-aligned; old copies stay in the file, so views of
them keep their bytes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.core.buffer import cpu, default_buffer_prototype

import dafzarr._core.zipstore.commit
from dafzarr import AppendOnlyError, EntryExistsError, MmapZipStore, RecoveryWarning
from dafzarr._core.zipstore import ziprecords as zf
from tests.helpers.common import check_archive


@pytest.fixture(autouse=True)
def _need_7z() -> None:
    assert shutil.which("7z"), "7z is not installed (.ci/run installs p7zip-full)"


def test_rewrite_supersedes_and_keeps_old_bytes(tmp_path: Path) -> None:
    p = tmp_path / "s.zip"
    with MmapZipStore(p, "w") as store:
        store["k"] = b"old-value" * 100
        store["other"] = b"x" * 10
        view = store["k"]
        arr = store.try_mmap_entry_as("k", "u1", 900)
        assert arr is not None
        store["k"] = b"new"
        assert bytes(store["k"]) == b"new"
        assert bytes(view) == b"old-value" * 100  # the old copy is never overwritten
        assert bytes(arr[:9]) == b"old-value"
        del view, arr
        assert sorted(store.keys()) == ["k", "other"]
    check_archive(p, {"k": b"new", "other": b"x" * 10})
    assert (b"old-value" * 100) in p.read_bytes()  # dead, but still in the file
    with MmapZipStore(p) as store:
        assert bytes(store["k"]) == b"new"


def test_identical_rewrite_does_not_grow(tmp_path: Path) -> None:
    p = tmp_path / "same.zip"
    with MmapZipStore(p, "w") as store:
        store["k"] = b"v" * 1000
        size = os.path.getsize(p)
        store["k"] = b"v" * 1000
        store["k"] = np.frombuffer(b"v" * 1000, np.uint8)
        assert os.path.getsize(p) == size
        assert store.space().dead_bytes == 0


def test_delete_and_delete_dir(tmp_path: Path) -> None:
    p = tmp_path / "d.zip"
    with MmapZipStore(p, "w") as store:
        assert store.supports_deletes
        for i in range(5):
            store[f"g/a/{i}"] = bytes([i]) * 100
            store[f"g/b/{i}"] = bytes([i]) * 10
        store["top"] = b"t"
        del store["g/b/0"]
        store.delete_sync("absent")  # zarr deletes fill-value chunks that never existed
        with pytest.raises(KeyError):
            del store["absent"]
        commits = _count_commits()
        try:
            store.delete_dir_sync("g/a")
        finally:
            dafzarr._core.zipstore.commit.step_hook = None
        assert commits["n"] == 1  # a prefix delete is one commit
        assert sorted(store.keys()) == [f"g/b/{i}" for i in range(1, 5)] + ["top"]
    check_archive(p)
    with MmapZipStore(p) as store:
        assert sorted(store) == sorted([f"g/b/{i}" for i in range(1, 5)] + ["top"])


def test_deleted_tail_stays_in_the_file(tmp_path: Path) -> None:
    # The last entries deleted: their bytes sit between the last live entry and the
    # directory. A writable reopen must keep them (a reader may map them), not take
    # them for the leftovers of an interrupted commit.
    p = tmp_path / "tail.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"A" * 100
        store["b"] = b"B" * 5000
        del store["b"]
    before = p.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecoveryWarning)
        with MmapZipStore(p, "r+") as store:
            assert store.keys() == ["a"]
            store["c"] = b"C"
    after = p.read_bytes()
    start = before.index(b"B" * 5000)
    assert after[start : start + 5000] == b"B" * 5000
    check_archive(p, {"a": b"A" * 100, "c": b"C"})


@pytest.mark.parametrize("first", ["rewrite", "delete"])
def test_first_entry_dead(tmp_path: Path, first: str) -> None:
    # The entry at offset 0 is no longer listed: 7-Zip must not see a missing entry there,
    # and a view of the old copy still reads it.
    p = tmp_path / "first.zip"
    with MmapZipStore(p, "w") as store:
        store["zarr.json"] = b'{"old": 1}'
        store["x"] = b"x"
        view = store["zarr.json"]
        if first == "rewrite":
            store["zarr.json"] = b'{"new": 2}'
        else:
            del store["zarr.json"]
        assert bytes(view) == b'{"old": 1}'
        del view
    check_archive(p)
    with MmapZipStore(p, "r+") as store:  # the marked header does not upset a reopen
        store["y"] = b"y"
    check_archive(p)


def test_space_accounting(tmp_path: Path) -> None:
    p = tmp_path / "space.zip"
    with MmapZipStore(p, "w") as store:
        # Plain text: dead binary bytes first would make the commit renew the archive.
        store["a"] = b"x" * 1000
        store["b"] = b"y" * 500
        s0 = store.space()
        assert s0.dead_bytes == 0 and s0.entries == 2
        assert s0.file_size == os.path.getsize(p)
        store["a"] = b"z" * 10
        del store["b"]
        s1 = store.space()
        assert s1.entries == 1
        assert s1.dead_bytes >= 1500
        assert s1.file_size == os.path.getsize(p)
        assert s1.live_bytes + s1.dead_bytes + s1.free_bytes + s1.directory_bytes == s1.file_size
        assert s1.free_bytes > 0  # room the writer keeps between commits, not dead bytes
        assert "dead bytes" in str(s1) and "free bytes" in str(s1)
    with MmapZipStore(p) as reader:  # closed: the room was given back
        s2 = reader.space()
    assert s2.free_bytes == 0 and s2.dead_bytes == s1.dead_bytes
    assert s2.live_bytes + s2.dead_bytes + s2.directory_bytes == s2.file_size == os.path.getsize(p)


def test_batch_of_rewrites_and_deletes_rolls_back_together(tmp_path: Path) -> None:
    p = tmp_path / "batch.zip"
    with MmapZipStore(p, "w") as store:
        store["keep"] = b"1"
        store["gone"] = b"2"
        with pytest.raises(RuntimeError, match="boom"), store.batch():
            store["keep"] = b"changed"
            del store["gone"]
            store["new"] = b"3"
            assert bytes(store["keep"]) == b"changed" and "gone" not in store
            raise RuntimeError("boom")
        assert bytes(store["keep"]) == b"1" and bytes(store["gone"]) == b"2"
        assert "new" not in store
        with store.batch():
            store["keep"] = b"changed"
            del store["gone"]
            store["keep"] = b"changed twice"  # superseded within the batch too
        assert store.keys() == ["keep"]
    check_archive(p, {"keep": b"changed twice"})


def test_foreign_duplicates_are_pruned_by_the_first_commit(tmp_path: Path) -> None:
    p = tmp_path / "dups.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        with zipfile.ZipFile(p, "w") as z:
            z.writestr(".zattrs", b'{"v": 1}')
            z.writestr("data", b"d")
            z.writestr(".zattrs", b'{"v": 2}')
    with MmapZipStore(p, "r+") as store:
        assert bytes(store[".zattrs"]) == b'{"v": 2}'  # the last duplicate wins
        store["more"] = b"m"
    check_archive(p, {".zattrs": b'{"v": 2}', "data": b"d", "more": b"m"}, aligned=("more",))


def test_reserve_over_an_existing_key_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.zip"
    with MmapZipStore(p, "w") as store:
        store["k"] = b"v"
        with pytest.raises(EntryExistsError, match="'k'"):
            store.reserve_entry("k", 8)
        del store["k"]
        view = store.reserve_entry("k", 8)
        view[:] = 7
        store.patch_entry_crc("k")
        del view
    check_archive(p, {"k": bytes([7]) * 8})


def test_append_only_option(tmp_path: Path) -> None:
    p = tmp_path / "ao.zip"
    with MmapZipStore(p, "w", append_only=True) as store:
        store["k"] = b"v"
        with pytest.raises(AppendOnlyError, match="'k'"):
            store["k"] = b"w"
        with pytest.raises(AppendOnlyError, match="'k'"):
            store.delete_dir_sync("")
        store.delete_sync("absent")
    with MmapZipStore(p, "r+", append_only=True) as store:
        assert store.with_read_only(False).append_only
        import pickle

        assert pickle.loads(pickle.dumps(store)).append_only


def test_append_only_refuses_mode_w_on_a_file_with_entries(tmp_path: Path) -> None:
    """Mode "w" empties the file: an append-only store refuses it where entries would go,
    and keeps the file; a new file, an empty one or an archive without entries is fine."""
    p = tmp_path / "ao.zip"
    with MmapZipStore(p, "w", append_only=True) as store:  # a new file
        store["k"] = b"v"
    before = p.read_bytes()
    with pytest.raises(
        AppendOnlyError,
        match=r"holds an archive of 1 entries, and mode 'w' "
        r"would empty it.*'w\+'",
    ):
        MmapZipStore(p, "w", append_only=True)
    assert p.read_bytes() == before
    with MmapZipStore(p, "w+", append_only=True) as store:
        assert bytes(store["k"]) == b"v"
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not an archive")
    with pytest.raises(AppendOnlyError, match="14 bytes that is not a valid archive"):
        MmapZipStore(junk, "w", append_only=True)
    assert junk.read_bytes() == b"not an archive"
    empty = tmp_path / "empty.zip"
    MmapZipStore(empty, "w").close()
    (tmp_path / "zero.zip").touch()
    for q in (empty, tmp_path / "zero.zip"):
        with MmapZipStore(q, "w", append_only=True) as store:
            store["x"] = b"y"
        with MmapZipStore(q, "r") as store:
            assert bytes(store["x"]) == b"y"


def _count_commits() -> dict[str, int]:
    seen = {"n": 0}

    def hook(name: str) -> None:
        if name in ("commit:truncated", "commit:up-trailer"):  # each commit passes one
            seen["n"] += 1

    dafzarr._core.zipstore.commit.step_hook = hook
    return seen


def test_concurrent_sets_share_commits(tmp_path: Path) -> None:
    p = tmp_path / "gc.zip"

    async def write_all(store: MmapZipStore) -> None:
        await asyncio.gather(
            *(store.set(f"c/{i}", cpu.Buffer.from_bytes(bytes([i % 256]) * 64)) for i in range(500))
        )

    with MmapZipStore(p, "w") as store:
        commits = _count_commits()
        try:
            asyncio.run(write_all(store))
        finally:
            dafzarr._core.zipstore.commit.step_hook = None
        assert len(store) == 500
        assert 1 <= commits["n"] <= 5, commits
    with MmapZipStore(p) as store:
        assert bytes(store["c/300"]) == bytes([300 % 256]) * 64


def test_get_without_prototype(tmp_path: Path) -> None:
    p = tmp_path / "g.zip"
    with MmapZipStore(p, "w") as store:
        store["k"] = b"abc"
        buf = asyncio.run(store.get("k"))
        assert buf is not None and buf.to_bytes() == b"abc"
        del buf


def test_threads_read_while_others_rewrite(tmp_path: Path) -> None:
    # zarr's event loop and dask threads: reads and rewrites of the same keys at once.
    # Every read sees one complete version, never a mix.
    p = tmp_path / "threads.zip"
    keys = [f"k/{i}" for i in range(8)]
    versions = 60

    def value(key: str, v: int) -> bytes:
        return f"{key}:{v:04d}:".encode() * 50

    errors: list[BaseException] = []
    with MmapZipStore(p, "w") as store:
        for k in keys:
            store[k] = value(k, 0)

        def writer(ks: list[str]) -> None:
            try:
                for v in range(1, versions):
                    for k in ks:
                        zarr.core.sync.sync(store.set(k, cpu.Buffer.from_bytes(value(k, v))))
                    if v % 10 == 0:
                        store.delete_sync(ks[0])
                        store[ks[0]] = value(ks[0], v)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def reader() -> None:
            try:
                for _ in range(3000):
                    for k in keys:
                        buf = store.get_sync(k, prototype=default_buffer_prototype())
                        if buf is None:
                            continue  # deleted for a moment
                        data = buf.to_bytes()
                        head = data[: data.index(b":", len(k) + 1) + 1]
                        assert data == head * 50, (k, data[:40])
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [
            threading.Thread(target=writer, args=(keys[:4],)),
            threading.Thread(target=writer, args=(keys[4:],)),
            threading.Thread(target=reader),
            threading.Thread(target=reader),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
    check_archive(p, {k: value(k, versions - 1) for k in keys})


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_writers_that_rewrite(tmp_path: Path, zarr_format: int) -> None:
    p = tmp_path / f"z{zarr_format}.zip"
    with MmapZipStore(p, "w") as store:
        g = zarr.open_group(store=store, mode="w", zarr_format=zarr_format)
        a = g.create_array("a", shape=(10,), chunks=(5,), dtype="i4", compressors=None)
        a[:] = np.arange(10)
        g.attrs["title"] = "t"
        a.attrs["units"] = "m"
        a.resize((15,))
        a[10:] = 7
        a.append(np.arange(5))
        g.create_array("b", shape=(3,), dtype="f8")[:] = 1.5
        g.create_array("b", shape=(4,), dtype="i2", overwrite=True)[:] = 2
        g.create_array("c", shape=(3,), dtype="u1")[:] = 3
        del g["c"]
        a[:5] = 0  # a fill-value chunk: zarr deletes it
        zarr.consolidate_metadata(store)
    expected = np.concatenate([np.zeros(5, "i4"), np.arange(5, 10), np.full(5, 7), np.arange(5)])
    for s in (MmapZipStore(p), zarr.storage.ZipStore(p, mode="r")):
        g = zarr.open_group(store=s, mode="r")
        assert g.attrs["title"] == "t" and g["a"].attrs["units"] == "m"
        np.testing.assert_array_equal(g["a"][:], expected)
        np.testing.assert_array_equal(g["b"][:], np.full(4, 2, "i2"))
        assert "c" not in g
        s.close()
    with MmapZipStore(p) as s:
        g = zarr.open_consolidated(store=s, mode="r")
        assert sorted(g.array_keys()) == ["a", "b"]
    check_archive(p)


def _entry_offsets(path: Path) -> dict[str, int]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: i.header_offset for i in z.infolist()}


def test_views_are_zero_copy_after_rewrites(tmp_path: Path) -> None:
    p = tmp_path / "zc.zip"
    with MmapZipStore(p, "w") as store:
        for v in range(3):
            store["m"] = np.full(1000, v, "f8")
        arr = store.try_mmap_entry_as("m", "f8", 1000)
        assert arr is not None and (arr == 2).all() and not arr.flags.owndata
        assert store._handle.fm is not None
        addr = arr.__array_interface__["data"][0]
        assert addr == store._handle.fm.address + _entry_offsets(p)["m"] + 30 + 1 + 20 + (
            zf.alignment_padding(_entry_offsets(p)["m"], 1)
        )
        del arr


def test_rebuild_from_local_headers_takes_the_newest_copy(tmp_path: Path) -> None:
    p = tmp_path / "salvage.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"a1"
        store["b"] = b"b1"
        store["a"] = b"a2"
        store["c"] = b"c1"
        store["b"] = b"b2"  # a1 and b1 lie before the first listed entry: marked
        store["d"] = b"d1"
        store["d"] = b"d2"  # d1 carries no mark
        data_end = store.space().live_bytes + store.space().dead_bytes
    raw = bytearray(p.read_bytes())
    raw[data_end:] = bytes(len(raw) - data_end)  # no directory, no trailer anywhere
    p.write_bytes(bytes(raw))
    with pytest.warns(RecoveryWarning, match="older copies"), MmapZipStore(p, "r+") as store:
        assert {k: bytes(store[k]) for k in store} == {
            "a": b"a2",
            "b": b"b2",
            "c": b"c1",
            "d": b"d2",
        }
    check_archive(p, {"a": b"a2", "b": b"b2", "c": b"c1", "d": b"d2"})


def test_zarr_chunk_writes_share_commits(tmp_path: Path) -> None:
    # zarr writes an array's chunks concurrently; large ones are copied in worker threads,
    # and a commit waits for the copies under way, so the chunks commit in groups.
    p = tmp_path / "big.zip"
    data = np.random.default_rng(0).random((200, 256, 1024), dtype=np.float32)
    with MmapZipStore(p, "w") as store:
        a = zarr.create_array(
            store, name="x", shape=data.shape, chunks=(1, 256, 1024), dtype="f4", compressors=None
        )
        commits = _count_commits()
        try:
            a[:] = data
        finally:
            dafzarr._core.zipstore.commit.step_hook = None
        assert 1 <= commits["n"] <= 35, commits  # about 60 when each commits what is ready
    with MmapZipStore(p) as store:
        assert np.array_equal(zarr.open_array(store, path="x")[:], data)
