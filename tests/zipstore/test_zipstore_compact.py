"""MmapZipStore compaction (``compact``) and packing of Zarr directory stores (``pack``).

The results must be valid for zipfile, unzip and 7-Zip, hold exactly the live entries (raw
bytes of compressed foreign entries unchanged), be laid out as the store itself writes, and
bad input must raise a clear error that leaves the source and the destination untouched.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from dafzarr import (
    ArchiveInUseError,
    ArchiveLockedError,
    CorruptArchiveError,
    MmapZipStore,
    OutputExistsError,
    PackSourceError,
)
from dafzarr._core.atomic import STALE_SECONDS, TMP_SUFFIX
from dafzarr._core.zipstore import pack as _zippack
from dafzarr._core.zipstore import repack as _zipcopy
from dafzarr.cli import main
from tests.helpers import ROOT
from tests.helpers.common import check_archive


def _contents(path: Path) -> dict[str, bytes]:
    with MmapZipStore(path) as store:
        return {k: bytes(store[k]) for k in store}


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(TMP_SUFFIX))


def _archive_with_dead_bytes(path: Path, seed: int = 0) -> dict[str, bytes]:
    """An archive with rewrites and deletes; returns its live contents."""
    rng = np.random.default_rng(seed)
    live: dict[str, bytes] = {}
    with MmapZipStore(path, "w") as store:
        for i in range(30):
            live[f"g/k{i}"] = store_value = rng.bytes(int(rng.integers(0, 5000)))
            store[f"g/k{i}"] = store_value
        for i in range(0, 30, 3):
            live[f"g/k{i}"] = store_value = rng.bytes(int(rng.integers(1, 3000)))
            store[f"g/k{i}"] = store_value
        for i in range(1, 30, 7):
            del store[f"g/k{i}"]
            del live[f"g/k{i}"]
        assert store.space().dead_bytes > 0
    return live


def _same_as_fresh_store(path: Path, tmp: Path) -> None:
    """The archive's bytes equal those of a new store written with the same entries."""
    fresh = tmp / "fresh.zip"
    with MmapZipStore(path) as store, MmapZipStore(fresh, "w") as other, other.batch():
        keys = sorted(store, key=lambda k: store._handle.archive.index[k].lfh_offset)
        for k in keys:
            other[k] = bytes(store[k])
    assert path.read_bytes() == fresh.read_bytes()
    fresh.unlink()


# --- Compaction -------------------------------------------------------------------------


def test_compact_open_store_gives_dead_bytes_back_and_keeps_serving(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    live = _archive_with_dead_bytes(p)
    size_before = p.stat().st_size
    with MmapZipStore(p, "r+") as store:
        before = store.space()
        space = store.compact()
        assert space.dead_bytes == 0 and store.space().dead_bytes == 0
        assert space.entries == before.entries == len(live)
        assert space.file_size < size_before == before.file_size
        assert {k: bytes(store[k]) for k in store} == live
        store["g/after"] = b"written after the compaction"  # still the writer
        live["g/after"] = b"written after the compaction"
    assert _contents(p) == live
    check_archive(p, live)
    with MmapZipStore(p, "r+") as store:
        del store["g/after"]
        store.compact()
    del live["g/after"]
    _same_as_fresh_store(p, tmp_path)
    assert _leftovers(tmp_path) == []


def test_compact_by_path_in_place_and_to_another_file(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    live = _archive_with_dead_bytes(p)
    old = p.read_bytes()
    out = tmp_path / "b.zip"
    space = MmapZipStore.compact(p, out)
    assert p.read_bytes() == old  # the source is untouched
    assert space.dead_bytes == 0 and space.file_size == out.stat().st_size
    check_archive(out, live)
    _same_as_fresh_store(out, tmp_path)
    MmapZipStore.compact(p)
    assert p.read_bytes() == out.read_bytes()
    assert _leftovers(tmp_path) == []


def test_compact_keeps_the_archive_mode_and_follows_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.zip"
    live = _archive_with_dead_bytes(real)
    real.chmod(0o640)
    link = tmp_path / "link.zip"
    link.symlink_to(real)
    MmapZipStore.compact(link)
    assert link.is_symlink() and link.resolve() == real
    assert real.stat().st_mode & 0o777 == 0o640
    check_archive(real, live)


def test_compact_refuses_an_existing_output_without_force(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    live = _archive_with_dead_bytes(p)
    old = p.read_bytes()
    out = tmp_path / "b.zip"
    out.write_bytes(b"precious")
    with pytest.raises(OutputExistsError, match=r"b\.zip exists; pass force=True"):
        MmapZipStore.compact(p, out)
    assert out.read_bytes() == b"precious" and p.read_bytes() == old
    assert _leftovers(tmp_path) == []
    MmapZipStore.compact(p, out, force=True)
    check_archive(out, live)


def test_compact_refuses_while_views_are_alive(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    live = _archive_with_dead_bytes(p)
    with MmapZipStore(p, "r+") as store:
        old = p.read_bytes()
        view = store["g/k0"]
        with pytest.raises(ArchiveInUseError, match=r"1 zero-copy view\(s\) of its mapping"):
            store.compact()
        assert p.read_bytes() == old and bytes(view) == live["g/k0"]
        del view
        array = store.try_mmap_entry_as("g/k0", "u1", len(live["g/k0"]))
        with pytest.raises(ArchiveInUseError, match="zero-copy view"):
            store.compact()
        del array
        store.compact()
    assert _leftovers(tmp_path) == []
    check_archive(p, live)


def test_compact_refuses_inside_a_batch_and_on_unpatched_reservations(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    _archive_with_dead_bytes(p)
    with MmapZipStore(p, "r+") as store:
        with store.batch(), pytest.raises(RuntimeError, match="inside a batch"):
            store.compact()
        view = store.reserve_entry("r", 16)
        view[:] = 7
        del view
        with pytest.raises(ArchiveInUseError, match=r"reserved entries \['r'\]"):
            store.compact()
        store.patch_entry_crc("r")
        store.compact()
        assert bytes(store["r"]) == bytes([7] * 16)


def test_compact_in_place_refuses_while_another_writer_holds_the_archive(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    _archive_with_dead_bytes(p)
    with MmapZipStore(p, "r+"):
        old = p.read_bytes()
        with pytest.raises(ArchiveLockedError, match="already open for writing"):
            MmapZipStore.compact(p)
        assert p.read_bytes() == old


def test_read_only_handles_keep_the_archive_they_opened(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    live = _archive_with_dead_bytes(p)
    with MmapZipStore(p) as reader:
        view = reader["g/k3"]
        MmapZipStore.compact(p)
        # The old file is no longer at the path but stays mapped: same keys, same bytes.
        assert {k: bytes(reader[k]) for k in reader} == live
        assert bytes(view) == live["g/k3"]
        del view
    assert _contents(p) == live


def test_compact_copies_foreign_compressed_entries_as_they_are(tmp_path: Path) -> None:
    p = tmp_path / "foreign.zip"
    text = b"compressible text " * 500
    with zipfile.ZipFile(p, "w") as z:
        z.comment = b"kept comment"
        z.writestr("dir/", b"")
        z.writestr("dir/deflated", text, compress_type=zipfile.ZIP_DEFLATED)
        with pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr("dir/", b"")  # a folder listed twice
        z.writestr("bz", text[:3000], compress_type=zipfile.ZIP_BZIP2)
        z.writestr("stored", b"plain bytes")
    with zipfile.ZipFile(p) as z:
        assert z.namelist().count("dir/") == 2
        raw_before = {i.filename: _raw_data(p, i) for i in z.infolist()}
        info_before = {i.filename: (i.compress_type, i.CRC, i.file_size) for i in z.infolist()}
    copy = tmp_path / "copy.zip"
    MmapZipStore.compact(p, copy)  # from the archive as it is, folder listed twice
    check_archive(
        copy, {"dir/": b"", "dir/deflated": text, "bz": text[:3000], "stored": b"plain bytes"}
    )
    with MmapZipStore(p, "r+") as store:
        store["stored"] = b"rewritten plain bytes"
        store.compact()
        assert store.comment == b"kept comment"
    with zipfile.ZipFile(p) as z:
        assert z.comment == b"kept comment"
        for i in z.infolist():
            if i.filename != "stored":
                assert (i.compress_type, i.CRC, i.file_size) == info_before[i.filename]
                assert _raw_data(p, i) == raw_before[i.filename], i.filename
        assert z.read("dir/deflated") == text
    check_archive(
        p,
        {"dir/": b"", "dir/deflated": text, "bz": text[:3000], "stored": b"rewritten plain bytes"},
    )


def _raw_data(path: Path, info: zipfile.ZipInfo) -> bytes:
    """The stored (still compressed) bytes of an entry."""
    raw = path.read_bytes()
    n_len, e_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    start = info.header_offset + 30 + n_len + e_len
    return raw[start : start + info.compress_size]


def test_compact_refuses_a_damaged_entry(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    _archive_with_dead_bytes(p)
    with MmapZipStore(p) as store:
        off = store.info()[[r["name"] for r in store.info()].index("g/k2")]["data_offset"]
    raw = bytearray(p.read_bytes())
    raw[off] ^= 0xFF
    p.write_bytes(raw)
    with pytest.raises(CorruptArchiveError, match=r"'g/k2' fails its CRC-32 check"):
        MmapZipStore.compact(p, tmp_path / "out.zip")
    assert not (tmp_path / "out.zip").exists() and _leftovers(tmp_path) == []
    assert p.read_bytes() == raw


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")


def test_compact_onto_a_full_disk_loses_nothing(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "1m")
    try:
        p = disk / "a.zip"
        with MmapZipStore(p, "w") as store:
            for i in range(8):
                store[f"k{i}"] = bytes([i]) * 80_000
            live = {f"k{i}": bytes([i]) * 80_000 for i in range(8)}
        old = p.read_bytes()
        with MmapZipStore(p, "r+") as store:
            with pytest.raises(OSError, match="writing the compacted copy") as info:
                store.compact()
            assert info.value.errno in (28, 27)  # ENOSPC, EFBIG
            assert p.read_bytes() == old and _leftovers(disk) == []
            assert {k: bytes(store[k]) for k in store} == live  # still serving
            store["k9"] = b"the store still takes writes"
        assert _contents(p) == {**live, "k9": b"the store still takes writes"}
        out = disk / "b.zip"
        with pytest.raises(OSError, match="writing the compacted copy"):
            MmapZipStore.compact(p, out)
        assert not out.exists() and _leftovers(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# --- Packing ----------------------------------------------------------------------------


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(1)
    return xr.Dataset(
        {
            "t": (("time", "x"), rng.normal(size=(40, 30)).astype("float32")),
            "n": (("x",), np.arange(30, dtype="int64")),
        },
        coords={"time": np.arange(40), "x": np.arange(30) * 2.5},
        attrs={"title": "packed"},
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_pack_xarray_directory_store(tmp_path: Path, zarr_format: int) -> None:
    ds = _dataset().chunk({"time": 7, "x": 11})  # dask chunks, written by dask threads
    d = tmp_path / "ds.zarr"
    ds.to_zarr(d, zarr_format=zarr_format, consolidated=zarr_format == 2)
    out = tmp_path / "ds.zarr.zip"
    space = MmapZipStore.pack(d, out)
    files = _files(d)
    assert space.entries == len(files) and space.file_size == out.stat().st_size
    check_archive(out, files)
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
    meta = [n for n in names if n.split("/")[-1] in _zipcopy.METADATA_NAMES]
    assert names[: len(meta)] == meta and meta  # metadata first
    assert names == meta + sorted(names[len(meta) :], key=lambda n: n.split("/"))
    _same_as_fresh_store(out, tmp_path)
    back = xr.open_zarr(MmapZipStore(out), zarr_format=zarr_format, consolidated=zarr_format == 2)
    xr.testing.assert_identical(back.load(), ds.load())
    peer = zarr.open_group(zarr.storage.ZipStore(out, mode="r"), mode="r")
    ours = zarr.open_group(MmapZipStore(out), mode="r")
    for name in ("t", "n"):
        a, b = peer[name], ours[name]
        assert isinstance(a, zarr.Array) and isinstance(b, zarr.Array)
        assert np.array_equal(a[:], ds[name].values) and np.array_equal(b[:], ds[name].values)
    assert _leftovers(tmp_path) == []


def test_pack_directory_written_by_dask_distributed_workers(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    ds = _dataset().chunk({"time": 5, "x": 10})
    d = tmp_path / "cluster.zarr"
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        ds.to_zarr(d, zarr_format=3, consolidated=False)  # chunks written by the workers
    out = tmp_path / "cluster.zip"
    MmapZipStore.pack(d, out)
    check_archive(out, _files(d))
    back = xr.open_zarr(MmapZipStore(out), zarr_format=3, consolidated=False)
    xr.testing.assert_identical(back.load(), ds.load())


def test_pack_streams_files_larger_than_its_buffer(tmp_path: Path) -> None:
    d = tmp_path / "big.zarr"
    g = zarr.open_group(d, mode="w", zarr_format=2)
    data = np.random.default_rng(2).random(_zippack._BUFFER // 8 * 2 + 13)  # 16 MiB + 104 B
    g.create_array("a", data=data, chunks=data.shape, compressors=None)
    out = tmp_path / "big.zip"
    MmapZipStore.pack(d, out)
    check_archive(out, _files(d))
    with MmapZipStore(out) as store:
        view = store.try_mmap_entry_as("a/0", "f8", data.shape)
        assert view is not None and np.array_equal(view, data)
        del view


def test_pack_follows_links_inside_the_directory(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=2)
    (d / "data").write_bytes(b"linked bytes")
    (d / "alias").symlink_to("data")
    MmapZipStore.pack(d, tmp_path / "g.zip")
    assert _contents(tmp_path / "g.zip")["alias"] == b"linked bytes"


def test_pack_refuses_a_directory_that_is_not_a_zarr_store(tmp_path: Path) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    (d / "notes.txt").write_text("hello")
    out = tmp_path / "out.zip"
    with pytest.raises(PackSourceError, match=r"plain is not a Zarr store: it has no zarr\.json"):
        MmapZipStore.pack(d, out)
    with pytest.raises(FileNotFoundError, match="no such directory"):
        MmapZipStore.pack(tmp_path / "missing", out)
    assert not out.exists() and _leftovers(tmp_path) == []


def test_pack_refuses_names_that_are_not_utf8(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=3)
    bad = os.path.join(os.fsencode(d), b"na\xefve")
    with open(bad, "wb") as f:
        f.write(b"latin-1 name")
    out = tmp_path / "out.zip"
    with pytest.raises(PackSourceError, match=r"the name of .*na.*ve.* is not UTF-8"):
        MmapZipStore.pack(d, out)
    assert not out.exists() and _leftovers(tmp_path) == []
    assert os.path.exists(bad)


def test_pack_refuses_links_leading_outside(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"outside")
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=2)
    (d / "sub").mkdir()
    (d / "sub" / "leak").symlink_to(secret)
    out = tmp_path / "out.zip"
    with pytest.raises(PackSourceError, match=r"'sub/leak' is a symbolic link to .*secret"):
        MmapZipStore.pack(d, out)
    (d / "sub" / "leak").unlink()
    (d / "up").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(PackSourceError, match="'up' is a symbolic link to"):
        MmapZipStore.pack(d, out)
    assert not out.exists() and _leftovers(tmp_path) == []
    assert secret.read_bytes() == b"outside"


def test_pack_refuses_an_existing_output_without_force(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=2).create_array("a", data=np.arange(10))
    out = tmp_path / "out.zip"
    out.write_bytes(b"precious")
    with pytest.raises(OutputExistsError, match=r"out\.zip exists; pass force=True"):
        MmapZipStore.pack(d, out)
    assert out.read_bytes() == b"precious" and _leftovers(tmp_path) == []
    MmapZipStore.pack(d, out, force=True)
    check_archive(out, _files(d))
    with pytest.raises(PackSourceError, match="would be inside the directory"):
        MmapZipStore.pack(d, d / "self.zip")


def test_force_does_not_replace_an_archive_a_writer_holds(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=2)
    src = tmp_path / "src.zip"
    live = _archive_with_dead_bytes(src)
    out = tmp_path / "out.zip"
    with MmapZipStore(out, "w") as writer:
        writer["mine"] = b"being written"
        for call in (
            lambda: MmapZipStore.pack(d, out, force=True),
            lambda: MmapZipStore.compact(src, out, force=True),
        ):
            with pytest.raises(ArchiveLockedError, match="open for writing; it cannot be replaced"):
                call()
            assert _leftovers(tmp_path) == []
        writer["mine"] = b"still the writer's archive"
    assert _contents(out) == {"mine": b"still the writer's archive"}
    assert _contents(src) == live


_FSIZE_CHILD = """
import resource, signal, sys
from dafzarr import MmapZipStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
try:
    MmapZipStore.pack(sys.argv[1], sys.argv[2])
except OSError as e:
    print(f"{type(e).__name__} {e.errno}: {e}")
"""


def test_pack_onto_a_full_disk_loses_nothing(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    g = zarr.open_group(d, mode="w", zarr_format=2)
    g.create_array("a", data=np.arange(100_000), chunks=(10_000,), compressors=None)
    out = tmp_path / "out.zip"
    res = subprocess.run(
        [sys.executable, "-c", _FSIZE_CHILD, str(d), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert "StorageIOError 27" in res.stdout and "writing the archive of" in res.stdout
    assert "nothing else was changed" in res.stdout
    assert not out.exists() and _leftovers(tmp_path) == []


def test_stale_temporaries_are_removed_by_the_next_call(tmp_path: Path) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=2)
    out = tmp_path / "out.zip"
    stale = tmp_path / f".out.zip.123-abcd{TMP_SUFFIX}"
    stale.write_bytes(b"debris of a killed run")
    recent = tmp_path / f".out.zip.124-abcd{TMP_SUFFIX}"
    recent.write_bytes(b"maybe a run that just started")
    held = tmp_path / f".out.zip.125-abcd{TMP_SUFFIX}"
    held.write_bytes(b"a live run")
    other = tmp_path / f".other.zip.126-abcd{TMP_SUFFIX}"
    other.write_bytes(b"another destination's")
    old = time.time() - 2 * STALE_SECONDS
    for p in (stale, held, other):
        os.utime(p, (old, old))
    with open(held, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        MmapZipStore.pack(d, out)
    assert _leftovers(tmp_path) == sorted(p.name for p in (held, other, recent))


def test_cli_compact_and_pack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "g.zarr"
    zarr.open_group(d, mode="w", zarr_format=3).create_array("a", data=np.arange(50))
    out = tmp_path / "g.zip"
    assert main(["zip", "pack", str(d), str(out), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")  # no summary, no progress
    assert main(["zip", "pack", str(d), str(out)]) == 1
    assert "exists; pass force=True (--force)" in capsys.readouterr().err
    assert main(["zip", "pack", str(d), str(out), "--force"]) == 0
    printed = capsys.readouterr()
    assert f"-> {out}: " in printed.out
    assert printed.err == ""  # stderr is not a terminal: no progress bar
    with MmapZipStore(out, "r+") as store:
        store["zarr.json"] = bytes(store["zarr.json"]) + b" "
    assert main(["zip", "compact", str(out)]) == 0
    assert "entries" in capsys.readouterr().out
    with MmapZipStore(out) as store:
        assert store.space().dead_bytes == 0
    assert main(["zip", "compact", str(out), "-o", str(tmp_path / "c.zip"), "--quiet"]) == 0
    assert main(["zip", "compact", str(out), "-o", str(tmp_path / "c.zip")]) == 1
    check_archive(tmp_path / "c.zip", _contents(out))
