"""MmapZipStore reading (and appending to) archives written by other tools.

Python's ``zipfile`` (every method, streamed with data descriptors, comments, unaligned
stored data), Info-ZIP's ``zip`` (directory entries, forced ZIP64, a top folder),
zarr-python's ``ZipStore`` (duplicate names), hand-built zstd and unknown-method archives,
and the ZarrDaf stores written by DataAxesFormats.jl.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr

from dafzarr import (
    MmapZipStore,
    RecoveryWarning,
    RefusedEntryWarning,
    UnsafeEntryNameError,
    UnsupportedEntryError,
)
from tests.helpers import zipbuild as zb
from tests.helpers.common import check_zip_tools_accept

needs_zip = pytest.mark.skipif(shutil.which("zip") is None, reason="Info-ZIP zip is not installed")

METHODS = {
    "stored": zipfile.ZIP_STORED,
    "deflated": zipfile.ZIP_DEFLATED,
    "bzip2": zipfile.ZIP_BZIP2,
}


def payloads() -> dict[str, bytes]:
    """Entries of assorted sizes: empty, tiny, compressible, random beyond 64 KiB."""
    rng = np.random.default_rng(1234)
    return {
        "empty": b"",
        "tiny": b"abc",
        "text/lorem.txt": b"lorem ipsum dolor sit amet " * 800,
        "nested/dir/random.bin": rng.integers(0, 256, 70_000, dtype=np.uint8).tobytes(),
        "floats": np.linspace(0, 1, 1000).tobytes(),
    }


def read_all(store: MmapZipStore) -> dict[str, bytes]:
    return {k: bytes(store[k]) for k in store}


def ours_vs_zipfile(path: Path) -> dict[str, bytes]:
    """Read every key with the store and check it against zipfile's reading of the same name."""
    with zipfile.ZipFile(path) as z, MmapZipStore(path) as store:
        names = [n for n in z.namelist() if not n.endswith("/")]
        assert store.keys() == list(dict.fromkeys(names))
        got = read_all(store)
        for name in names:
            assert got[name] == z.read(name), name
        return got


# --- Python zipfile --------------------------------------------------------------------


@pytest.mark.parametrize("method", list(METHODS))
def test_zipfile_archive_reads_back_byte_identical(tmp_path: Path, method: str) -> None:
    p = tmp_path / f"{method}.zip"
    data = payloads()
    with zipfile.ZipFile(p, "w", compression=METHODS[method]) as z:
        for k, v in data.items():
            z.writestr(k, v)
    with MmapZipStore(p) as store:
        assert store.keys() == list(data)
        assert len(store) == len(data)
        for k, v in data.items():
            got = store[k]
            assert isinstance(got, memoryview)
            assert got.readonly
            assert bytes(got) == v, k
            del got
        assert store.verify() == []
        methods = {i["name"]: i["method"] for i in store.info()}
        for k, v in data.items():
            arr = store.try_mmap_entry_as(k, np.uint8, len(v))
            if METHODS[method] == zipfile.ZIP_STORED:
                assert methods[k] == 0
                assert arr is not None
                assert arr.tobytes() == v
                assert not arr.flags.writeable
            else:
                assert methods[k] == METHODS[method]
                assert arr is None  # compressed entries are never mapped
            del arr
        assert store.try_mmap_entry_as("absent", np.uint8, 1) is None


def test_zipfile_lzma_entry_is_unsupported_and_others_still_read(tmp_path: Path) -> None:
    p = tmp_path / "lzma.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("before", b"stored before", compress_type=zipfile.ZIP_STORED)
        z.writestr("sub/packed.lzma", b"x" * 5000, compress_type=zipfile.ZIP_LZMA)
        z.writestr("after", b"deflated after" * 50, compress_type=zipfile.ZIP_DEFLATED)
    with MmapZipStore(p) as store:
        assert "sub/packed.lzma" in store
        with pytest.raises(UnsupportedEntryError) as exc:
            store["sub/packed.lzma"]
        msg = str(exc.value)
        assert "14" in msg
        assert "LZMA" in msg
        assert "sub/packed.lzma" in msg
        assert store.try_mmap_entry_as("sub/packed.lzma", np.uint8, 5000) is None
        assert bytes(store["before"]) == b"stored before"
        assert bytes(store["after"]) == b"deflated after" * 50
        assert store.verify() == ["sub/packed.lzma"]


class _Unseekable(io.RawIOBase):
    """A write-only stream that cannot tell or seek: zipfile then streams with descriptors."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        raise OSError("unseekable stream")

    def seek(self, *args: object) -> int:
        raise OSError("unseekable stream")

    def write(self, b: bytes) -> int:  # type: ignore[override]
        return self.buf.write(b)


def _streamed_archive(path: Path) -> dict[str, bytes]:
    data = payloads()
    sink = _Unseekable()
    with zipfile.ZipFile(sink, "w") as z:
        for i, (k, v) in enumerate(data.items()):
            z.writestr(k, v, compress_type=zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)
    path.write_bytes(sink.buf.getvalue())
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        # The situation under test: every entry is followed by a data descriptor and its
        # local header carries no sizes.
        assert infos
        assert all(i.flag_bits & 0x08 for i in infos)
        assert {i.compress_type for i in infos} == {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
    raw = path.read_bytes()
    for rec in zb.central_records(raw):
        assert zb.LFH.unpack_from(raw, rec.lfh_offset)[7] == 0  # local csize
    return data


def test_streamed_archive_with_data_descriptors_reads(tmp_path: Path) -> None:
    p = tmp_path / "streamed.zip"
    data = _streamed_archive(p)
    assert ours_vs_zipfile(p) == data
    with MmapZipStore(p) as store:
        assert store.verify() == []
        lorem = data["text/lorem.txt"]  # entry 2: stored
        arr = store.try_mmap_entry_as("text/lorem.txt", np.uint8, len(lorem))
        assert arr is not None
        assert arr.tobytes() == lorem
        del arr


def test_append_to_streamed_archive(tmp_path: Path) -> None:
    p = tmp_path / "streamed.zip"
    data = _streamed_archive(p)
    before = p.read_bytes()
    old_cd = zb.end_records(before).cd_offset
    with MmapZipStore(p, "r+") as store:
        store["appended/one"] = b"first"
        store["appended/two"] = np.arange(100, dtype="<i8")
    after = p.read_bytes()
    assert after[:old_cd] == before[:old_cd]  # old local headers, data and descriptors intact
    data["appended/one"] = b"first"
    data["appended/two"] = np.arange(100, dtype="<i8").tobytes()
    assert ours_vs_zipfile(p) == data
    check_zip_tools_accept(p)


@pytest.mark.parametrize(
    "comment",
    [b"", b"an archive comment", b"fake end record PK\x05\x06 inside the comment", b"#" * 0xFFFF],
    ids=["none", "short", "fake-signature", "max-length"],
)
def test_non_zip64_archive_with_comment(tmp_path: Path, comment: bytes) -> None:
    p = tmp_path / "comment.zip"
    data = {"a": b"alpha" * 10, "dir/b": b"beta" * 1000, "c": b""}
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for k, v in data.items():
            z.writestr(k, v)
        z.comment = comment
    raw = p.read_bytes()
    assert raw.endswith(comment)
    assert b"PK\x06\x06" not in raw
    assert b"PK\x06\x07" not in raw
    if b"PK\x05\x06" in comment:
        # zipfile takes the signature in the comment for the end record and fails; the
        # store checks that the end record's comment length ends the file.
        with MmapZipStore(p) as store:
            assert read_all(store) == data
    else:
        assert ours_vs_zipfile(p) == data
    assert p.read_bytes() == raw


@pytest.mark.parametrize(
    "comment",
    [
        b"an archive comment",
        b'{"ome": {"version": "0.5", "jsonFirst": true}}',
        b"fake end record PK\x05\x06" + bytes(18) + b" inside",
        b"#" * 0xFFFF,
    ],
    ids=["short", "json", "fake-signature", "max-length"],
)
def test_appends_keep_the_archive_comment(tmp_path: Path, comment: bytes) -> None:
    """Zipped OME-Zarr keeps metadata in the archive comment: appends must not drop it."""
    p = tmp_path / "comment.zip"
    data = {"zarr.json": b'{"zarr_format": 3}', "a/c/0": b"alpha" * 1000}
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for k, v in data.items():
            z.writestr(k, v)
        z.comment = comment
    with MmapZipStore(p, "r") as store:
        assert store.comment == comment
    store = MmapZipStore(p, "r+")
    try:
        store["one"] = b"first"
        big = np.arange(300_000, dtype="<i8").tobytes()  # relocates the directory
        store["big"] = big
        with store.batch():
            for i in range(40):
                store[f"batch/{i}"] = bytes([i]) * (i * 997)
        view = store.reserve_entry("reserved", 64)
        view[:] = np.frombuffer(b"r" * 64, np.uint8)
        del view
        store.patch_entry_crc("reserved")
    finally:
        store.close()
    data.update({"one": b"first", "big": big, "reserved": b"r" * 64})
    data.update({f"batch/{i}": bytes([i]) * (i * 997) for i in range(40)})
    assert p.read_bytes().endswith(comment)
    with MmapZipStore(p, "r") as store:
        assert store.comment == comment
        assert read_all(store) == data
    if b"PK\x05\x06" not in comment:  # zipfile mistakes the fake signature for the record
        with zipfile.ZipFile(p) as z:
            assert z.comment == comment
            assert z.testzip() is None
        assert ours_vs_zipfile(p) == data
        check_zip_tools_accept(p)


def test_a_rollback_keeps_the_archive_comment(tmp_path: Path) -> None:
    """A writable open that rolls back a damaged last entry keeps the comment of the end
    record it rewrites."""
    p = tmp_path / "rollback.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a", b"alpha")
        z.writestr("b", b"beta" * 100)
        z.comment = b"keep me"
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("b")
    raw = bytearray(p.read_bytes())
    raw[info.header_offset + 30 + len("b") + len(info.extra)] ^= 0xFF  # its CRC fails now
    p.write_bytes(raw)
    with pytest.warns(RecoveryWarning, match="rolled back 1"), MmapZipStore(p, "r+") as store:
        assert sorted(store.keys()) == ["a"]
        assert store.comment == b"keep me"
    with zipfile.ZipFile(p) as z:
        assert z.namelist() == ["a"] and z.comment == b"keep me"
        assert z.testzip() is None


def test_unaligned_stored_entries_copy_path(tmp_path: Path) -> None:
    """Stored data at every residue mod 8: correct bytes always, arrays only when aligned."""
    p = tmp_path / "unaligned.zip"
    values = np.arange(16, dtype="<f8") * 1.5
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_STORED) as z:
        for n in range(1, 25):
            z.writestr("k" * n, values.tobytes())
    residues = set()
    with MmapZipStore(p) as store:
        for info in store.info():
            key, off = info["name"], info["data_offset"]
            residues.add(off % 8)
            assert bytes(store[key]) == values.tobytes()
            assert np.array_equal(np.frombuffer(store[key], "<f8"), values)
            as_f8 = store.try_mmap_entry_as(key, "<f8", 16)
            if off % 8 == 0:
                assert as_f8 is not None
                assert np.array_equal(as_f8, values)
            else:
                assert as_f8 is None
            as_u4 = store.try_mmap_entry_as(key, "<u4", 32)
            assert (as_u4 is not None) == (off % 4 == 0)
            as_u1 = store.try_mmap_entry_as(key, np.uint8, 128)
            assert as_u1 is not None
            assert as_u1.tobytes() == values.tobytes()
            # The wrong size is refused whatever the alignment.
            assert store.try_mmap_entry_as(key, np.uint8, 127) is None
            del as_f8, as_u4, as_u1
    assert residues == set(range(8))


# --- Hand-built: zstd and unknown methods ----------------------------------------------


@pytest.mark.parametrize("zip64", [False, True], ids=["eocd", "zip64"])
def test_zstd_entry_reads_and_unknown_method_names_itself(tmp_path: Path, zip64: bool) -> None:
    plain = np.arange(5000, dtype="<i4").tobytes()
    members = [
        zb.Member("stored", b"plain bytes"),
        zb.Member.compressed("arrays/zstd", plain, 93),
        zb.Member.compressed("deflated", b"d" * 3000, 8),
        zb.Member("weird/method99", b"\x00" * 40, 99, usize=100),
    ]
    p = tmp_path / "zstd.zip"
    p.write_bytes(zb.build(members, zip64=zip64).data)
    with zipfile.ZipFile(p) as z:  # the builder writes an archive zipfile agrees with
        assert z.read("stored") == b"plain bytes"
        assert z.read("deflated") == b"d" * 3000
    with MmapZipStore(p) as store:
        assert store.keys() == [m.name for m in members]
        assert bytes(store["arrays/zstd"]) == plain
        assert store.try_mmap_entry_as("arrays/zstd", "<i4", 5000) is None
        assert bytes(store["stored"]) == b"plain bytes"
        assert bytes(store["deflated"]) == b"d" * 3000
        with pytest.raises(UnsupportedEntryError) as exc:
            store["weird/method99"]
        assert "99" in str(exc.value)
        assert "weird/method99" in str(exc.value)
        assert store.verify() == ["weird/method99"]


def test_empty_zstd_entry_reads(tmp_path: Path) -> None:
    """A zstd frame of zero bytes (header with content size 0 and one empty last block)."""
    frame = zb.zstd_frame(b"")
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    p = tmp_path / "empty-zstd.zip"
    p.write_bytes(zb.build([zb.Member.compressed("empty", b"", 93), zb.Member("s", b"s")]).data)
    with MmapZipStore(p) as store:
        assert bytes(store["empty"]) == b""
        assert store.verify() == []


def test_julia_packed_shards_are_foreign_zip_archives(fixtures_dir: Path) -> None:
    """Each packed shard written by DataAxesFormats.jl is a ZIP after a 16·N+4-byte index."""
    from numcodecs import Blosc

    base = fixtures_dir / "julia-daf" / "zpk"
    if not base.is_dir():
        pytest.skip("packed Julia fixtures are not available")
    score = np.arange(1, 1201, dtype="<f8")
    expected = [score[:1024], np.concatenate([score[1024:], np.zeros(1024 - 176)])]
    # zstd (method 93) entries, decoded by the store.
    with MmapZipStore(base / "zs.daf.zarr/vectors/cell/score/c/0") as store:
        assert store.keys() == ["c/0", "c/1"]
        assert {i["method"] for i in store.info()} == {93}
        assert store.info()[0]["header_offset"] == 2 * 16 + 4  # the shard index comes first
        for key, want in zip(store.keys(), expected, strict=True):
            assert np.array_equal(np.frombuffer(store[key], "<f8"), want)
        assert store.verify() == []
    # Stored entries holding blosc chunks, and the codec list as JSON.
    for variant in ("bl", "bz"):
        with MmapZipStore(base / f"{variant}.daf.zarr/vectors/cell/score/c/0") as store:
            assert store.keys() == ["c/0", "c/1", "codec.json"]
            codecs = json.loads(bytes(store["codec.json"]))
            assert codecs[1]["name"] == "blosc"
            for key, want in zip(["c/0", "c/1"], expected, strict=True):
                chunk = Blosc().decode(bytes(store[key]))
                assert np.array_equal(np.frombuffer(chunk, "<f8"), want)
            assert store.verify() == []
    # gzip variant: entry names are gzip member headers, not UTF-8 although flag 11 is set
    # (Python's zipfile refuses them too): reported, not served, and never written next to.
    gz = base / "gz.daf.zarr/vectors/cell/score/c/0"
    before = gz.read_bytes()
    with pytest.warns(RefusedEntryWarning, match="UTF-8"), MmapZipStore(gz) as store:
        assert store.keys() == []
        assert [bool(i["refused"]) for i in store.info()] == [True, True]
    with pytest.raises(UnsafeEntryNameError, match="UTF-8"):
        MmapZipStore(gz, "r+")
    assert gz.read_bytes() == before


# --- Info-ZIP zip ----------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    files = {
        "a.txt": b"hello\n",
        "sub/b.bin": bytes(range(256)) * 40,
        "sub/deeper/c.json": json.dumps({"k": list(range(300))}).encode(),
        "sub/empty.bin": b"",
        "z.txt": b"zzz" * 5000,
    }
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    (root / "empty-dir").mkdir()
    return files


@needs_zip
@pytest.mark.parametrize("flags", [["-r"], ["-0", "-r", "-fz"]], ids=["deflate", "stored-zip64"])
def test_info_zip_directory_tree(tmp_path: Path, flags: list[str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    files = _tree(src)
    p = tmp_path / "tree.zip"
    subprocess.run(["zip", "-q", *flags, str(p), "."], cwd=src, check=True)
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
    dirs = [n for n in names if n.endswith("/")]
    assert "sub/" in dirs
    assert "empty-dir/" in dirs
    got = ours_vs_zipfile(p)
    assert got == files
    with MmapZipStore(p) as store:
        infos = store.info()
        assert sorted(i["name"] for i in infos) == sorted(names)  # info() lists them all
        assert not any(k.endswith("/") for k in store)
        assert "sub" not in store
        assert "sub/" not in store
        methods = {i["method"] for i in infos if not i["name"].endswith("/") and i["size"]}
        if "-0" in flags:
            assert methods == {0}
            assert zb.end_records(p.read_bytes()).zip64_eocd is not None  # forced ZIP64
            arr = store.try_mmap_entry_as("sub/b.bin", np.uint8, 256 * 40)
            assert arr is not None
            assert arr.tobytes() == files["sub/b.bin"]
            del arr
        else:
            assert 8 in methods
        assert store.verify() == []


@needs_zip
def test_info_zip_archive_under_a_top_folder_opens_with_a_path(tmp_path: Path) -> None:
    root = tmp_path / "ext.zarr"
    g = zarr.open_group(store=zarr.storage.LocalStore(root), mode="w", zarr_format=3)
    g.attrs["title"] = "top folder"
    a = g.create_array("values", shape=(10,), chunks=(4,), dtype="<f8")
    a[:] = np.arange(10) / 4
    p = tmp_path / "d.zip"
    subprocess.run(["zip", "-q", "-r", str(p), "ext.zarr"], cwd=tmp_path, check=True)
    with MmapZipStore(p) as store:
        assert all(k.startswith("ext.zarr/") for k in store)
        assert "ext.zarr/zarr.json" in store
        assert "ext.zarr/values/c/0" in store
        sub = zarr.open_group(store=store, mode="r", path="ext.zarr")
        assert sub.attrs["title"] == "top folder"
        assert np.array_equal(sub["values"][:], np.arange(10) / 4)


# --- zarr-python's ZipStore ------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("compression", ["stored", "deflated"])
def test_zarr_zipstore_with_duplicate_names(
    tmp_path: Path, zarr_format: int, compression: str
) -> None:
    p = tmp_path / "zarr.zip"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
        writer = zarr.storage.ZipStore(p, mode="w", compression=METHODS[compression])
        g = zarr.open_group(store=writer, mode="w", zarr_format=zarr_format)
        g.attrs["version"] = 1
        g.attrs["version"] = 2  # rewrites the attributes: a second entry of the same name
        a = g.create_array("x", shape=(6,), chunks=(3,), dtype="<i4")
        a[:] = np.arange(6)
        a[:3] = [10, 11, 12]  # rewrites chunk 0
        writer.close()
    with zipfile.ZipFile(p) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        last = {i.filename: z.read(i) for i in infos}  # later infos overwrite earlier ones
        first = {}
        for i in infos:
            first.setdefault(i.filename, z.read(i))
    dups = {n for n in names if names.count(n) > 1}
    chunk0 = "x/0" if zarr_format == 2 else "x/c/0"
    attrs = ".zattrs" if zarr_format == 2 else "zarr.json"
    assert chunk0 in dups
    assert attrs in dups
    assert any(first[n] != last[n] for n in dups)
    with MmapZipStore(p) as store:
        keys = store.keys()
        assert keys == list(dict.fromkeys(names))
        assert len(keys) == len(set(keys)) == len(store)
        for k in keys:
            assert bytes(store[k]) == last[k], k
        assert store.verify() == []
        g = zarr.open_group(store=store, mode="r")
        assert g.attrs["version"] == 2
        assert g["x"][:].tolist() == [10, 11, 12, 3, 4, 5]


# --- Appending to a foreign compressed archive -----------------------------------------


def _info_snapshot(path: Path) -> list[tuple[object, ...]]:
    with zipfile.ZipFile(path) as z:
        return [
            (
                i.filename,
                i.compress_type,
                i.date_time,
                i.external_attr,
                i.CRC,
                i.flag_bits,
                i.compress_size,
                i.file_size,
                i.header_offset,
                i.extra,
                z.read(i),
            )
            for i in z.infolist()
        ]


@pytest.mark.parametrize("method", ["deflated", "bzip2"])
def test_append_to_foreign_compressed_archive(tmp_path: Path, method: str) -> None:
    p = tmp_path / "foreign.zip"
    data = payloads()
    with zipfile.ZipFile(p, "w") as z:
        for i, (k, v) in enumerate(data.items()):
            info = zipfile.ZipInfo(k, date_time=(2001, 2, 3, 4, 5, 6 + 2 * i))
            info.compress_type = METHODS[method]
            info.external_attr = (0o100600 + i) << 16
            z.writestr(info, v)
        z.writestr("plain-stored", b"stored entry", compress_type=zipfile.ZIP_STORED)
    data["plain-stored"] = b"stored entry"
    before = p.read_bytes()
    old_end = zb.end_records(before)
    old_records = [before[r.offset : r.offset + r.length] for r in zb.central_records(before)]
    old_infos = _info_snapshot(p)
    assert {t[1] for t in old_infos} == {METHODS[method], zipfile.ZIP_STORED}

    new = {
        "new/bytes": b"appended by dafzarr",
        "new/array": np.arange(1000, dtype="<f8"),
        "new/odd": b"x" * 13,
    }
    with MmapZipStore(p, "r+") as store:
        assert read_all(store) == data
        store["new/bytes"] = new["new/bytes"]
        with store.batch():
            store["new/array"] = new["new/array"]
            store["new/odd"] = new["new/odd"]
        store["tail"] = b""
    new["tail"] = b""

    after = p.read_bytes()
    # The foreign entries' local headers and data are untouched...
    assert after[: old_end.cd_offset] == before[: old_end.cd_offset]
    # ...their central-directory records are kept byte for byte...
    records = zb.central_records(after)
    assert [after[r.offset : r.offset + r.length] for r in records[: len(old_records)]] == (
        old_records
    )
    # ...and zipfile sees the same attributes and contents.
    assert _info_snapshot(p)[: len(old_infos)] == old_infos
    check_zip_tools_accept(p)

    with MmapZipStore(p) as store:
        infos = {i["name"]: i for i in store.info()}
        for k, v in new.items():
            assert infos[k]["method"] == 0
            assert infos[k]["data_offset"] % 8 == 0
            want = v.tobytes() if isinstance(v, np.ndarray) else v
            assert bytes(store[k]) == want
        arr = store.try_mmap_entry_as("new/array", "<f8", 1000)
        assert arr is not None
        assert np.array_equal(arr, np.arange(1000, dtype="<f8"))
        del arr
        for k, v in data.items():
            assert bytes(store[k]) == v
            assert infos[k]["method"] == (0 if k == "plain-stored" else METHODS[method])
        assert store.verify() == []


# --- DataAxesFormats.jl fixtures -------------------------------------------------------


def _julia_flat(fixtures_dir: Path) -> Path:
    src = fixtures_dir / "julia-daf" / "daf030-flat.daf.zarr"
    if not src.is_dir():
        pytest.skip("Julia flat fixture is not available")
    return src


def _zip_with_info_zip(src: Path, dest: Path) -> None:
    if shutil.which("zip") is None:
        pytest.skip("Info-ZIP zip is not installed")
    subprocess.run(["zip", "-q", "-r", str(dest), "."], cwd=src, check=True)


def _copy_into_store(src: Path, dest: Path) -> None:
    with MmapZipStore(dest, "w") as store:
        for root, _dirs, files in sorted(os.walk(src)):
            for name in sorted(files):
                path = Path(root) / name
                store[path.relative_to(src).as_posix()] = path.read_bytes()


@pytest.mark.parametrize("how", ["zip-r", "copied"])
def test_julia_flat_fixture_through_zarr(tmp_path: Path, fixtures_dir: Path, how: str) -> None:
    src = _julia_flat(fixtures_dir)
    p = tmp_path / "flat.daf.zarr.zip"
    if how == "zip-r":
        _zip_with_info_zip(src, p)
    else:
        _copy_into_store(src, p)
    files = {f.relative_to(src).as_posix(): f.read_bytes() for f in src.rglob("*") if f.is_file()}
    with MmapZipStore(p) as store:
        assert read_all(store) == files  # archive root = Zarr root, every file byte-identical
        methods = {i["method"] for i in store.info()}
        if how == "copied":
            assert methods == {0}
        else:
            assert 8 in methods  # Info-ZIP deflated the metadata
        g = zarr.open_group(store=store, mode="r", use_consolidated=False)
        assert g.attrs.asdict() == {"daf": [1, 0]}
        assert list(g["axes/cell"][:]) == ["c1", "c2", "c3"]
        assert list(g["axes/gene"][:]) == ["g1", "g2"]
        assert list(g["scalars/title"][:]) == ["hello"]
        n = g["scalars/n"][:]
        assert n.dtype == np.int32
        assert n.tolist() == [7]
        score = g["vectors/cell/score"][:]
        assert score.dtype == np.float64
        assert score.tolist() == [1.5, 2.5, 3.5]
        expr = g["matrices/cell/gene/expr"][:]
        assert expr.shape == (2, 3)
        assert expr.dtype == np.float32
        assert expr.T.tolist() == [[1, 2], [3, 4], [5, 6]]
        relayout = g["matrices/gene/cell/expr"][:]
        assert relayout.shape == (3, 2)
        assert relayout.tolist() == [[1, 2], [3, 4], [5, 6]]
        sp = "matrices/cell/gene/sp"
        assert g[f"{sp}/colptr"][:].tolist() == [1, 2, 3]
        assert g[f"{sp}/rowval"][:].tolist() == [3, 1]
        assert g[f"{sp}/nzval"][:].tolist() == [5.0, 2.0]
        sp = "matrices/gene/cell/sp"
        assert g[f"{sp}/colptr"][:].tolist() == [1, 2, 2, 3]
        assert g[f"{sp}/rowval"][:].tolist() == [2, 1]
        assert g[f"{sp}/nzval"][:].tolist() == [2.0, 5.0]
        assert g[f"{sp}/nzval"].dtype == np.float64
        # The stored chunk of `expr` maps zero-copy when the archive left it aligned.
        chunk = "matrices/cell/gene/expr/c/0/0"
        arr = store.try_mmap_entry_as(chunk, "<f4", (2, 3))
        if how == "copied":
            assert arr is not None
            assert arr.T.tolist() == [[1, 2], [3, 4], [5, 6]]
        del arr
    check_zip_tools_accept(p)
