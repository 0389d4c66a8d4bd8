"""``MmapZipStore.copy_entry``: an entry of one archive copied into another file to file (by
the kernel), its CRC-32 taken from the source; and the copies between ZIP data sets that use
it. Every archive written stays valid for ``zipfile`` and ``unzip -t``."""

from __future__ import annotations

import errno
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import MmapZipStore
from dafzarr._core.zipstore import write
from dafzarr.errors import EntryExistsError
from tests.helpers.common import check_zip_tools_accept


def _payload(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_an_entry_is_copied_file_to_file_with_its_crc(tmp_path: Path) -> None:
    big, small = _payload(3 << 20), b"tiny value"
    with MmapZipStore(tmp_path / "src.zip", "w") as src:
        src["big"], src["small"] = big, small
    with MmapZipStore(tmp_path / "src.zip") as src, \
            MmapZipStore(tmp_path / "dst.zip", "w") as dst:  # fmt: skip
        dst["before"] = b"x"
        assert dst.copy_entry("copy/big", src, "big")
        assert dst.copy_entry("copy/small", src, "small")
        assert bytes(dst["copy/big"]) == big
        with pytest.raises(EntryExistsError):
            dst.copy_entry("copy/big", src, "small")
        assert not dst.copy_entry("absent", src, "nothing")
        assert "absent" not in dst
    with zipfile.ZipFile(tmp_path / "dst.zip") as z:
        assert z.testzip() is None
        assert z.read("copy/big") == big and z.read("copy/small") == small
        assert z.getinfo("copy/big").CRC == zipfile.ZipFile(tmp_path / "src.zip").getinfo("big").CRC
    check_zip_tools_accept(tmp_path / "dst.zip")


def test_entries_that_cannot_be_copied_as_they_are_are_left_to_the_caller(
    tmp_path: Path,
) -> None:
    """A compressed entry (written by another tool) and a reservation whose CRC was never
    stored: nothing is written, and the caller writes the bytes itself."""
    with zipfile.ZipFile(tmp_path / "foreign.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("deflated", b"a" * 10_000)
    with MmapZipStore(tmp_path / "reserved.zip", "w") as store:
        view = store.reserve_entry("unfinished", 64)
        view[:] = 7
        with MmapZipStore(tmp_path / "foreign.zip") as foreign, \
                MmapZipStore(tmp_path / "dst.zip", "w") as dst:  # fmt: skip
            assert not dst.copy_entry("a", foreign, "deflated")
            assert not dst.copy_entry("b", store, "unfinished")
            assert dst.keys() == []
        del view


def test_a_file_system_without_copy_file_range_copies_through_the_mappings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems (and copies between two of them on older kernels) refuse
    ``copy_file_range``; others stop short. The bytes then go through the mappings."""
    data = _payload(2 << 20, seed=3)
    with MmapZipStore(tmp_path / "src.zip", "w") as src:
        src["v"] = data
    calls: list[int] = []

    def refused(*args: Any) -> int:
        calls.append(1)
        if len(calls) == 1:  # the first call copies a part, the second is refused
            return os.copy_file_range(*args[:2], 1000, *args[3:])
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(write.os, "copy_file_range", refused)
    with MmapZipStore(tmp_path / "src.zip") as src, \
            MmapZipStore(tmp_path / "dst.zip", "w") as dst:  # fmt: skip
        assert dst.copy_entry("v", src, "v")
    assert len(calls) == 2
    with zipfile.ZipFile(tmp_path / "dst.zip") as z:
        assert z.read("v") == data


def test_copy_all_between_zip_data_sets_copies_large_chunks_as_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    umis = sp.random(3000, 400, density=0.3, format="csc", dtype=np.float32, random_state=rng)
    with dafzarr.open_daf(tmp_path / "src.daf.zarr.zip", "w") as d:
        d.add_axis("cell", [f"c{i}" for i in range(400)])
        d.add_axis("gene", [f"g{i}" for i in range(3000)])
        d.set_matrix("gene", "cell", "UMIs", umis)
        d.set_matrix("cell", "gene", "dense", rng.random((400, 3000), dtype=np.float32))
        d.set_vector("cell", "age", rng.random(400))
    copied: list[str] = []
    original = MmapZipStore.copy_entry

    def counted(self: MmapZipStore, key: str, source: MmapZipStore, source_key: str) -> bool:
        copied.append(key)
        return original(self, key, source, source_key)

    monkeypatch.setattr(MmapZipStore, "copy_entry", counted)
    with dafzarr.open_daf(tmp_path / "src.daf.zarr.zip") as src, \
            dafzarr.open_daf(tmp_path / "dst.daf.zarr.zip", "w") as dst:  # fmt: skip
        dafzarr.copy_all(destination=dst, source=src)
        assert (dst.get_np_matrix("gene", "cell", "UMIs") != umis).nnz == 0
        np.testing.assert_array_equal(
            dst.get_np_matrix("cell", "gene", "dense"), src.get_np_matrix("cell", "gene", "dense")
        )
        np.testing.assert_array_equal(
            dst.get_np_vector("cell", "age"), src.get_np_vector("cell", "age")
        )
    assert any(k.endswith("UMIs/nzval/0") for k in copied), copied
    assert any("dense" in k for k in copied), copied
    check_zip_tools_accept(tmp_path / "dst.daf.zarr.zip")


def test_damaged_row_indices_copied_as_entries_are_refused_when_read(tmp_path: Path) -> None:
    """Row indices copied as the entry they are keep the source's bytes: a damaged source
    gives a destination whose reads refuse them as the source's reads do, never a wrong
    value."""
    rng = np.random.default_rng(9)
    umis = sp.random(1000, 600, density=0.5, format="csc", dtype=np.float32, random_state=rng)
    folder = tmp_path / "src.daf.zarr"
    with dafzarr.open_daf(folder, "w") as d:
        d.add_axis("cell", [f"c{i}" for i in range(600)])
        d.add_axis("gene", [f"g{i}" for i in range(1000)])
        d.set_matrix("gene", "cell", "UMIs", umis, relayout=False)
    rowval = folder / "matrices" / "gene" / "cell" / "UMIs" / "rowval" / "0"
    bad = np.frombuffer(rowval.read_bytes(), np.uint32).copy()
    assert bad.nbytes >= 1 << 20
    bad[12345] = 5000  # a row past the 1,000 genes
    rowval.write_bytes(bad.tobytes())
    archive = tmp_path / "src.daf.zarr.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:  # a zipped directory
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                z.write(file, file.relative_to(folder).as_posix())
    with dafzarr.open_daf(archive) as src, \
            dafzarr.open_daf(tmp_path / "dst.daf.zarr.zip", "w") as dst:  # fmt: skip
        with pytest.raises(dafzarr.errors.DafFormatError, match="rowval"):
            src.get_np_matrix("gene", "cell", "UMIs")
        dafzarr.copy_all(destination=dst, source=src, relayout=False)
        with pytest.raises(dafzarr.errors.DafFormatError, match="rowval"):
            dst.get_np_matrix("gene", "cell", "UMIs")


@pytest.mark.parametrize("hint", [0, 6 << 20, 1 << 20, 64 << 20])
def test_a_batch_that_announces_its_size_makes_room_for_exactly_it(
    tmp_path: Path, hint: int
) -> None:
    """With ``size_hint``, the directory moves out of the entries' way once, right past
    them: the file never holds allocated room that the commit cuts off again. A hint too
    small or too large only moves the directory more often or further."""
    path = tmp_path / "hinted.zip"
    parts = [_payload(2 << 20, seed) for seed in range(3)]
    with MmapZipStore(path, "w") as store:
        store["first"] = b"x"
        start = os.path.getsize(path)
        sizes = []
        with store.batch(size_hint=hint + 3 * 64 if hint else 0):
            for i, part in enumerate(parts):
                store[f"part{i}"] = part
                sizes.append(os.path.getsize(path))
        final = sum(e["compressed_size"] for e in store.info())
        if hint == 6 << 20:
            assert sizes[0] == sizes[-1] < start + hint + (16 << 10)
        elif hint == 0:
            assert sizes[0] > start + (8 << 20)  # room for four more entries of this size
    assert final == (6 << 20) + 1
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert [z.read(f"part{i}") for i in range(3)] == parts
    check_zip_tools_accept(path)


def test_a_small_announced_batch_allocates_no_room_beyond_it(tmp_path: Path) -> None:
    """The least room a batch otherwise makes (``_batch_room``) is not made either: a
    commit that cuts allocated room off waits for the file system's journal."""
    path = tmp_path / "small.zip"
    with MmapZipStore(path, "w") as store:
        store["first"] = b"x"
        start = os.path.getsize(path)
        with store.batch(size_hint=3 * (64 + 2 * 4 + 2000)):
            for i in range(3):
                store[f"doc{i}"] = bytes(2000)
                assert os.path.getsize(path) < start + (16 << 10)
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None and z.read("doc2") == bytes(2000)


def test_a_copied_entry_starts_where_the_source_does_within_a_page(tmp_path: Path) -> None:
    """The kernel then moves whole pages from one page cache to the other, not two pieces
    of each; the padding is the store's own extra field, which ZIP tools skip."""
    with MmapZipStore(tmp_path / "src.zip", "w") as src:
        for i in range(5):
            src[f"pad{i}"] = b"x" * (100 * i + 8)
            src[f"big{i}"] = _payload(1 << 20, i)
    with MmapZipStore(tmp_path / "src.zip") as src, \
            MmapZipStore(tmp_path / "dst.zip", "w") as dst:  # fmt: skip
        dst["first"] = b"abc"
        for i in range(5):
            assert dst.copy_entry(f"copied/big{i}", src, f"big{i}")
    where = {e["name"]: e["data_offset"] for e in MmapZipStore(tmp_path / "src.zip").info()}
    with MmapZipStore(tmp_path / "dst.zip") as dst:
        for e in dst.info():
            if e["name"].startswith("copied/"):
                assert e["data_offset"] % 4096 == where[e["name"][7:]] % 4096
                assert e["data_offset"] % 8 == 0
                assert bytes(dst[e["name"]]) == _payload(1 << 20, int(e["name"][-1]))
    with zipfile.ZipFile(tmp_path / "dst.zip") as z:
        assert z.testzip() is None
    check_zip_tools_accept(tmp_path / "dst.zip")
