"""MmapZipStore: exact bytes, round trips, append-only rules, lifetime and locking."""

from __future__ import annotations

import asyncio
import os
import re
import struct
import subprocess
import sys
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.core.buffer import default_buffer_prototype

from dafzarr import (
    AppendOnlyError,
    ArchiveLockedError,
    CorruptArchiveError,
    EntryExistsError,
    MmapZipStore,
    RecoveryWarning,
)
from dafzarr._core.zipstore import ziprecords as zf
from dafzarr.errors import InvalidArgumentError
from tests.helpers.common import check_archive, check_zip_tools_accept

EMPTY_HEX = (
    "504b06062c000000000000001e032d00000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000504b06070000000000000000000000000100000050"
    "4b050600000000ffffffffffffffffffffffff0000"
)

# The one-entry archive of the format description: `zarr.json` = {"zarr_format":2}.
ONE_ENTRY_DUMP = """
0000: 504b0304 2d000008 00000000 21001006 9e75ffff ffffffff ffff0900 19007a61
0020: 72722e6a 736f6e01 00100011 00000000 00000011 00000000 000000f1 da010000
0040: 7b227a61 72725f66 6f726d61 74223a32 7d504b01 021e032d 00000800 00000021
0060: 0010069e 75ffffff ffffffff ff09001c 00000000 00000000 00a481ff ffffff7a
0080: 6172722e 6a736f6e 01001800 11000000 00000000 11000000 00000000 00000000
00a0: 00000000 504b0606 2c000000 00000000 1e032d00 00000000 00000000 01000000
00c0: 00000000 01000000 00000000 53000000 00000000 51000000 00000000 504b0607
00e0: 00000000 a4000000 00000000 01000000 504b0506 00000000 ffffffff ffffffff
0100: ffffffff 0000
"""


def _hex(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def _dump(text: str) -> bytes:
    """Bytes of a hex dump whose lines start with an ``offset:`` column."""
    return _hex("".join(line.split(":", 1)[1] for line in text.strip().splitlines()))


# --- exact bytes ----------------------------------------------------------------------------


def test_empty_archive_golden_bytes(tmp_path: Path) -> None:
    p = tmp_path / "e.zip"
    with MmapZipStore(p, "w") as store:
        assert len(store) == 0
    data = p.read_bytes()
    assert len(data) == 98
    assert data == _hex(EMPTY_HEX) == zf.EMPTY_ARCHIVE
    with zipfile.ZipFile(p) as z:
        assert z.namelist() == []


def test_one_entry_golden_bytes(tmp_path: Path) -> None:
    p = tmp_path / "one.zip"
    with MmapZipStore(p, "w") as store:
        store["zarr.json"] = b'{"zarr_format":2}'
    data = p.read_bytes()
    assert len(data) == 262
    assert data == _dump(ONE_ENTRY_DUMP)
    assert zlib.crc32(b'{"zarr_format":2}') == 0x759E0610
    check_zip_tools_accept(p)


@pytest.mark.parametrize("residue", range(8))
def test_alignment_padding_at_every_residue(tmp_path: Path, residue: int) -> None:
    # The first entry's header is at 0: u = 30 + n + 20, so the name length sets u % 8.
    n = 8 + (residue - 50) % 8
    name = "k" * n
    assert (zf.LFH_SIZE + n + 20) % 8 == residue
    expected = {0: 0, 1: 7, 2: 6, 3: 5, 4: 4, 5: 11, 6: 10, 7: 9}[residue]
    p = tmp_path / "pad.zip"
    with MmapZipStore(p, "w") as store:
        store[name] = b"payload"
        store["second"] = b"x" * (residue + 1)  # a second entry at another residue
    data = p.read_bytes()
    (extra_len,) = struct.unpack_from("<H", data, 28)
    assert extra_len == 20 + expected
    if expected:
        field = 30 + n + 20
        tag, size = struct.unpack_from("<HH", data, field)
        assert (tag, size) == (0xDAF1, expected - 4)
        assert data[field + 4 : field + expected] == bytes(expected - 4)
    with MmapZipStore(p) as store:
        for info in store.info():
            assert info["data_offset"] % 8 == 0
    check_zip_tools_accept(p)


def test_central_directory_and_trailer_bytes(tmp_path: Path) -> None:
    p = tmp_path / "many.zip"
    values = {f"a/{i}": os.urandom(i * 13) for i in range(40)}
    with MmapZipStore(p, "w") as store:
        for k, v in values.items():
            store[k] = v
    data = p.read_bytes()
    # Rebuild the expected archive from the layout rules alone.
    expected = bytearray()
    cd = bytearray()
    for k, v in values.items():
        off = len(expected)
        crc = zlib.crc32(v)
        expected += zf.local_header(k.encode(), len(v), crc, off) + v
        cd += zf.central_entry(k.encode(), len(v), crc, off)
    expected += cd + zf.trailer(len(values), len(cd), len(expected))
    assert data == bytes(expected)


# --- round trips ----------------------------------------------------------------------------


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    p = tmp_path / "rt.zip"
    rng = np.random.default_rng(1)
    values: dict[str, bytes] = {
        ".zgroup": b'{"zarr_format":2}',
        "empty": b"",
        "sub/beta": b"beta",
        "sub/gamma/.zarray": b"{}",
        "unicod\u00e9/\u65e5\u672c/\U0001f600": b"utf-8 name",
        "big": rng.integers(0, 256, 3 << 20, dtype=np.uint8).tobytes(),
    }
    with MmapZipStore(p, "w+") as store:
        for k, v in values.items():
            store[k] = v
        store["array"] = np.arange(1000, dtype=np.int32)
        assert store.keys()[: len(values)] == list(values)
        assert bytes(store["sub/beta"]) == b"beta"
    with MmapZipStore(p, "r") as store:
        assert len(store) == len(values) + 1
        for k, v in values.items():
            assert bytes(store[k]) == v
        assert "missing" not in store
        with pytest.raises(KeyError):
            store["missing"]
        arr = store.try_mmap_entry_as("array", np.int32, (1000,))
        assert arr is not None and np.array_equal(arr, np.arange(1000))
        del arr
    with MmapZipStore(p, "r+") as store:  # reopen and append
        store["later"] = b"appended"
    with MmapZipStore(p) as store:
        assert store.keys()[-1] == "later"
    check_zip_tools_accept(p)
    with zipfile.ZipFile(p) as z:
        assert z.read("big") == values["big"]
        assert z.read("unicod\u00e9/\u65e5\u672c/\U0001f600") == b"utf-8 name"


def test_noncontiguous_and_typed_values(tmp_path: Path) -> None:
    p = tmp_path / "t.zip"
    a = np.arange(100, dtype=np.float64).reshape(10, 10)
    with MmapZipStore(p, "w") as store:
        store["f"] = a.T  # Fortran-ordered view: stored in C order of the given array
        store["mv"] = memoryview(np.arange(5, dtype=np.int16))
        assert bytes(store["f"]) == np.ascontiguousarray(a.T).tobytes()
        assert bytes(store["mv"]) == np.arange(5, dtype=np.int16).tobytes()
        with pytest.raises(TypeError):
            store["bad"] = "not bytes"  # type: ignore[assignment]


def test_many_entries_past_zip16_counts(tmp_path: Path) -> None:
    p = tmp_path / "n.zip"
    n = 70_000
    with MmapZipStore(p, "w") as store, store.batch():
        for i in range(n):
            store[f"c/{i}"] = i.to_bytes(4, "little")
    with MmapZipStore(p) as store:
        assert len(store) == n
        assert bytes(store["c/65536"]) == (65536).to_bytes(4, "little")
    with zipfile.ZipFile(p) as z:
        assert len(z.infolist()) == n


def test_name_limits(tmp_path: Path) -> None:
    p = tmp_path / "names.zip"
    with MmapZipStore(p, "w") as store:
        store["n" * 65535] = b"ok"
        with pytest.raises(ValueError, match="65535"):
            store["n" * 65536] = b"too long"
        for bad in ["", "/abs", "a/../b", "..", "a//b", "dir/", "nul\x00x", "back\\slash"]:
            with pytest.raises(ValueError):
                store[bad] = b"x"
        assert len(store) == 1
    with MmapZipStore(p) as store:
        assert bytes(store["n" * 65535]) == b"ok"


# --- append-only semantics ------------------------------------------------------------------


def test_append_only_errors(tmp_path: Path) -> None:
    p = tmp_path / "ao.zip"
    with MmapZipStore(p, "w", append_only=True) as store:
        assert not store.supports_deletes
        store["k"] = b"value"
        store["k"] = b"value"  # identical bytes: nothing to do
        with pytest.raises(AppendOnlyError, match=r"append-only.*'k'"):
            store["k"] = b"other"
        with pytest.raises(AppendOnlyError, match="'k'"):
            del store["k"]
        with pytest.raises(AppendOnlyError, match="'k'"):
            store.reserve_entry("k", 10)
        with pytest.raises(KeyError):
            del store["absent"]
        assert len(store) == 1
    with MmapZipStore(p) as store:
        assert bytes(store["k"]) == b"value"


def test_max_file_size(tmp_path: Path) -> None:
    p = tmp_path / "m.zip"
    with MmapZipStore(p, "w", max_file_size=256) as store:
        with pytest.raises(ValueError, match="max_file_size"):
            store["big"] = bytes(1024)
        store["small"] = b"fits"
    with MmapZipStore(p) as store:
        assert store.keys() == ["small"]


def test_modes(tmp_path: Path) -> None:
    p = tmp_path / "modes.zip"
    with pytest.raises(FileNotFoundError):
        MmapZipStore(p, "r")
    with pytest.raises(FileNotFoundError):
        MmapZipStore(p, "r+")
    with pytest.raises(ValueError, match="invalid mode"):
        MmapZipStore(p, "a")  # type: ignore[arg-type]
    with MmapZipStore(p, "w+") as store:
        store["a"] = b"1"
    with MmapZipStore(p, "w+") as store:  # w+ keeps what is there
        assert "a" in store
    with MmapZipStore(p, "w") as store:  # w truncates
        assert len(store) == 0
    with MmapZipStore(p, "r") as store:
        assert store.read_only
        # The package's error (a ValueError, as zarr's stores raise), naming the archive.
        with pytest.raises(InvalidArgumentError, match=f"{re.escape(str(p))}.*read-only.*'r\\+'"):
            store["x"] = b"1"
        with pytest.raises(InvalidArgumentError, match="read-only"):
            del store["a"]
        with pytest.raises(ValueError, match="read-only"):
            asyncio.run(store.set("x", default_buffer_prototype().buffer.from_bytes(b"1")))


def test_read_only_open_never_modifies(tmp_path: Path) -> None:
    p = tmp_path / "ro.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"1" * 100
    blob = p.read_bytes() + b"\x00" * 5000  # junk after the trailer
    p.write_bytes(blob)
    with pytest.raises(CorruptArchiveError, match="r\\+"):
        MmapZipStore(p, "r").keys()
    assert p.read_bytes() == blob
    with pytest.warns(RecoveryWarning, match="5000 bytes"), MmapZipStore(p, "r+") as store:
        assert bytes(store["a"]) == b"1" * 100
    check_zip_tools_accept(p)


# --- zero copy, reservations, batches -------------------------------------------------------


def test_zero_copy_views_survive_growth(tmp_path: Path) -> None:
    p = tmp_path / "zc.zip"
    store = MmapZipStore(p, "w")
    store["first"] = np.arange(1 << 16, dtype=np.float64)
    first = store.try_mmap_entry_as("first", np.float64, 1 << 16)
    assert first is not None and not first.flags.writeable and not first.flags.owndata
    assert store._handle.fm is not None
    base = store._handle.fm.address
    for i in range(50):  # grow the file well past its first size
        store[f"more/{i}"] = np.full(1 << 15, i, dtype=np.float64)
    assert store._handle.fm.address == base
    assert first[12345] == 12345.0 and first.sum() == np.arange(1 << 16).sum()
    view = store["more/3"]
    with pytest.raises(BufferError, match="view"):
        store.close()
    del first, view
    store.close()
    store.close()  # idempotent


def test_close_waits_for_views_another_thread_is_releasing(tmp_path: Path) -> None:
    # zarr decodes on its I/O thread, which can still hold a read's buffers for a few
    # milliseconds after the reading thread has its result and closes the store.
    p = tmp_path / "t.zip"
    store = MmapZipStore(p, "w")
    store["k"] = np.arange(1000, dtype=np.int64)
    cycle: list[object] = [store["k"]]
    cycle.append(cycle)  # freed by a garbage collection only, once the thread lets go
    held = [cycle]
    del cycle
    assert store._handle.fm is not None and store._handle.fm.exports == 1
    ready = threading.Event()

    def release_soon() -> None:
        ready.set()
        time.sleep(0.02)
        held.clear()

    thread = threading.Thread(target=release_soon)
    thread.start()
    ready.wait()
    store.close()
    thread.join()
    assert not held
    with zipfile.ZipFile(p) as z:
        assert z.read("k") == np.arange(1000, dtype=np.int64).tobytes()

    # A view nobody releases still refuses the close, after the wait.
    store = MmapZipStore(p, "r")
    view = store["k"]
    t0 = time.monotonic()
    with pytest.raises(BufferError, match="1 zero-copy view"):
        store.close()
    assert time.monotonic() - t0 >= 0.2
    del view
    store.close()


def test_try_mmap_entry_as_cases(tmp_path: Path) -> None:
    p = tmp_path / "t.zip"
    with MmapZipStore(p, "w") as store:
        store["f8"] = np.arange(12, dtype="<f8")
        store["odd"] = b"123"
        store["empty"] = b""
        assert store.try_mmap_entry_as("absent", "f8", 12) is None
        assert store.try_mmap_entry_as("f8", "f8", 11) is None  # wrong size
        a = store.try_mmap_entry_as("f8", "f8", (3, 4))
        assert a is not None and a.shape == (3, 4) and a[2, 3] == 11
        f = store.try_mmap_entry_as("f8", "f8", (4, 3), order="F")
        assert f is not None and f[0, 1] == 4 and f.flags.f_contiguous
        e = store.try_mmap_entry_as("empty", "i4", (0, 5))
        assert e is not None and e.shape == (0, 5)
        del a, f


def test_reserve_and_patch(tmp_path: Path) -> None:
    p = tmp_path / "r.zip"
    with MmapZipStore(p, "w") as store:
        store["before"] = b"b" * 10
        view = store.reserve_entry("res", 4096)
        assert view.flags.writeable and view.dtype == np.uint8 and not view.any()
        view[:] = np.arange(4096) % 251
        crc = store.patch_entry_crc("res")
        assert crc == zlib.crc32((np.arange(4096) % 251).astype(np.uint8).tobytes())
        assert store.reserve_entry("zero", 0).size == 0
        store["after"] = b"a"
        del view
    with MmapZipStore(p) as store:
        assert store.keys() == ["before", "res", "zero", "after"]
        assert bytes(store["res"]) == (np.arange(4096) % 251).astype(np.uint8).tobytes()
    check_zip_tools_accept(p)


def _blocks(parts: list[bytes]) -> Iterator[Any]:
    """The parts as bytes, memoryviews and numpy arrays of other dtypes, computed lazily."""
    for i, part in enumerate(parts):
        if i % 3 == 0:
            yield part
        elif i % 3 == 1:
            yield memoryview(part)
        else:
            yield (
                np.frombuffer(part, np.uint8).view(np.int32)
                if len(part) % 4 == 0
                else np.frombuffer(part, np.uint8)
            )


def test_set_streamed_writes_blocks_with_their_crc(tmp_path: Path) -> None:
    p = tmp_path / "s.zip"
    rng = np.random.default_rng(5)
    # small blocks (stored through the mapping), large ones (pwrite), an empty one
    parts = [rng.bytes(n) for n in (3, 40_000, 0, 1 << 20, 17, 3 << 20, 1000)]
    whole = b"".join(parts)
    with MmapZipStore(p, "w") as store:
        store["before"] = b"b"
        store.set_streamed("big", len(whole), _blocks(parts))
        assert bytes(store["big"]) == whole
        with MmapZipStore(p, "r") as reader:  # committed by the call
            assert bytes(reader["big"]) == whole
        with store.batch():
            store.set_streamed("in/batch", 4, [b"ab", b"cd"])
            store.set_streamed("empty", 0, [])
            with MmapZipStore(p, "r") as reader:  # not before the batch commits
                assert "in/batch" not in reader
        store["after"] = b"a"
    check_archive(
        p, {"before": b"b", "big": whole, "in/batch": b"abcd", "empty": b"", "after": b"a"}
    )


def test_set_streamed_refuses_blocks_that_do_not_add_up(tmp_path: Path) -> None:
    p = tmp_path / "s.zip"
    with MmapZipStore(p, "w") as store:
        store["keep"] = b"k"

        def failing() -> Iterator[bytes]:
            yield b"x" * 100_000
            raise RuntimeError("the source failed")

        cases: list[tuple[Any, type[Exception], str]] = [
            ([b"ab", b"c"], InvalidArgumentError, "given for 'x' do not fill its 4 bytes"),
            ([b"abcd", b"e"], InvalidArgumentError, "given for 'x' overflow its 4 bytes"),
            ([b"abcdefgh"], InvalidArgumentError, "overflow"),
            (failing(), RuntimeError, "the source failed"),
        ]
        for blocks, kind, match in cases:
            with pytest.raises(kind, match=match):
                store.set_streamed("x", 4 if kind is InvalidArgumentError else 200_000, blocks)
            assert "x" not in store and store.keys() == ["keep"]
        with pytest.raises(EntryExistsError):
            store.set_streamed("keep", 1, [b"k"])
        with pytest.raises(InvalidArgumentError, match="negative"):
            store.set_streamed("neg", -1, [])
        store.set_streamed("x", 4, [b"ab", b"cd"])
    check_archive(p, {"keep": b"k", "x": b"abcd"})


def test_sigkill_inside_set_streamed_leaves_the_last_commit(tmp_path: Path) -> None:
    p = tmp_path / "k.zip"
    code = f"""
import sys, time
from dafzarr import MmapZipStore
store = MmapZipStore({str(p)!r}, "w")
store["keep"] = b"k" * 100
def blocks():
    yield b"x" * (4 << 20)
    print("written", flush=True)
    time.sleep(60)
    yield b"y"
store.set_streamed("big", (4 << 20) + 1, blocks())
"""
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "written\n"
        finally:
            child.kill()
    with MmapZipStore(p, "r") as store:
        assert store.keys() == ["keep"]
    with MmapZipStore(p, "r+") as store:
        assert store.keys() == ["keep"]
        store.set_streamed("big", 3, [b"abc"])
    check_archive(p, {"keep": b"k" * 100, "big": b"abc"})


def test_unpatched_reservation_rolled_back(tmp_path: Path) -> None:
    p = tmp_path / "u.zip"
    with MmapZipStore(p, "w") as store:
        store["keep"] = b"k"
        view = store.reserve_entry("unfinished", 32)
        view[:] = 1
        del view
    with MmapZipStore(p, "r") as store:  # read-only: sees it, does not repair
        assert "unfinished" in store
    with pytest.warns(RecoveryWarning, match="unfinished"), MmapZipStore(p, "r+") as store:
        assert store.keys() == ["keep"]
        store["new"] = b"n"
    with MmapZipStore(p) as store:
        assert store.keys() == ["keep", "new"]
    check_zip_tools_accept(p)


def test_unpatched_reservation_in_the_middle_rolls_back_the_rest(tmp_path: Path) -> None:
    p = tmp_path / "u2.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"a"
        store.reserve_entry("mid", 16)[:] = 9
        store["b"] = b"b"  # appended after the unpatched reservation
    with pytest.warns(RecoveryWarning), MmapZipStore(p, "r+") as store:
        assert store.keys() == ["a"]
    check_zip_tools_accept(p)


def test_batch_commits_once_and_rolls_back_on_error(tmp_path: Path) -> None:
    p = tmp_path / "b.zip"
    with MmapZipStore(p, "w") as store:
        store["base"] = b"0"
        with store.batch():
            for i in range(100):
                store[f"x/{i}"] = bytes([i]) * i
            assert "x/99" in store
        size_after_batch = os.path.getsize(p)
        with pytest.raises(RuntimeError, match="boom"), store.batch():
            store["y/0"] = b"doomed"
            store["y/1"] = b"doomed too" * 1000
            raise RuntimeError("boom")
        assert "y/0" not in store and len(store) == 101
        store["z"] = b"after"
        assert os.path.getsize(p) >= size_after_batch
    with MmapZipStore(p) as store:
        assert store.keys() == ["base", *[f"x/{i}" for i in range(100)], "z"]
    check_zip_tools_accept(p)


# --- locking and recovery -------------------------------------------------------------------


def test_second_writer_refused(tmp_path: Path) -> None:
    p = tmp_path / "lock.zip"
    writer = MmapZipStore(p, "w")
    writer["a"] = b"1"
    with pytest.raises(ArchiveLockedError, match="one writer"):
        MmapZipStore(p, "r+").keys()
    code = (
        "import sys, dafzarr\n"
        "try:\n"
        f"    dafzarr.MmapZipStore({str(p)!r}, 'r+').keys()\n"
        "except dafzarr.ArchiveLockedError:\n"
        "    sys.exit(3)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 3, res.stderr
    with MmapZipStore(p, "r") as reader:  # readers take no lock
        assert reader.keys() == ["a"]
    writer.close()
    with MmapZipStore(p, "r+") as again:
        assert again.keys() == ["a"]


def test_interrupted_creation_is_completed(tmp_path: Path) -> None:
    p = tmp_path / "c.zip"
    for cut in (0, 1, 50, 97):
        p.write_bytes(zf.EMPTY_ARCHIVE[:cut])
        with MmapZipStore(p, "r+") as store:
            assert len(store) == 0
        assert p.read_bytes() == zf.EMPTY_ARCHIVE


def test_zero_tail_after_interrupted_growth(tmp_path: Path) -> None:
    p = tmp_path / "z.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"A" * 1000
    good = p.read_bytes()
    p.write_bytes(good + bytes(3 << 20))  # an interrupted append grew the file by 3 MiB
    with pytest.warns(RecoveryWarning), MmapZipStore(p, "r+") as store:
        assert bytes(store["a"]) == b"A" * 1000
    assert p.read_bytes() == good


def test_durable_mode(tmp_path: Path) -> None:
    p = tmp_path / "d.zip"
    with MmapZipStore(p, "w", durable=True) as store:
        store["a"] = np.arange(10000)
        with store.batch():
            store["b"] = b"b"
            store["c"] = b"c" * 70000
        store.reserve_entry("r", 100)[:] = 5
        store.patch_entry_crc("r")
    with MmapZipStore(p) as store:
        assert store.keys() == ["a", "b", "c", "r"]
    check_zip_tools_accept(p)


def test_pickle_round_trip(tmp_path: Path) -> None:
    import pickle

    p = tmp_path / "p.zip"
    with MmapZipStore(p, "w") as store:
        store["a"] = b"1"
        clone = pickle.loads(pickle.dumps(store))
        assert clone == store and clone.mode == "r+"
    with clone:
        assert bytes(clone["a"]) == b"1"


@pytest.mark.slow
def test_offsets_past_4_gib(tmp_path: Path) -> None:
    p = tmp_path / "huge.zip"
    with MmapZipStore(p, "w") as store:
        store["head"] = b"h"
        view = store.reserve_entry("hole", (4 << 30) + 123)  # sparse: nothing touched
        del view
        store.patch_entry_crc("hole")
        store["tail"] = b"past 4 GiB"
        tail = next(i for i in store.info() if i["name"] == "tail")
        assert tail["header_offset"] > 1 << 32
    with MmapZipStore(p) as store:
        assert bytes(store["tail"]) == b"past 4 GiB"
    with zipfile.ZipFile(p) as z:
        assert z.read("tail") == b"past 4 GiB"
        assert z.getinfo("hole").file_size == (4 << 30) + 123


# --- opening ---------------------------------------------------------------------------------


def test_constructor_opens_locks_and_truncates(tmp_path: Path) -> None:
    p = tmp_path / "eager.zip"
    with MmapZipStore(p, "w") as store:
        store["k"] = b"old"
    with MmapZipStore(p, "w"):  # never touched: the archive is emptied all the same
        pass
    with MmapZipStore(p) as store:
        assert store.keys() == []
    first = MmapZipStore(p, "r+")  # never touched: it holds the writer's lock already
    try:
        with pytest.raises(ArchiveLockedError):
            MmapZipStore(p, "w+")
    finally:
        first.close()


def test_concurrent_first_use_opens_once(tmp_path: Path) -> None:
    import pickle
    import threading

    p = tmp_path / "threads.zip"
    with MmapZipStore(p, "w") as store:
        for i in range(10):
            store[f"k{i}"] = bytes([i]) * 10
        reader = pickle.loads(pickle.dumps(store.with_read_only(True)))
    assert not reader._is_open  # an unpickled store opens at its first use
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def use() -> None:
        try:
            barrier.wait()
            assert bytes(reader["k3"]) == bytes([3]) * 10
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    reader.close()


def test_a_batch_allocates_a_bounded_room_ahead_of_large_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room a batch leaves for the entries that follow has its blocks allocated: it is
    bounded, so a large entry does not need several times its size of free disk."""
    from dafzarr._core.zipstore import commit

    monkeypatch.setattr(commit, "_ROOM_CAP", 1 << 20)
    p = tmp_path / "big.zip"
    big = np.arange(1 << 20, dtype=np.uint64).tobytes()  # 8 MiB
    with MmapZipStore(p, "w") as store:
        with store.batch():
            store["a"] = big
            inside = os.stat(p)
            store["b"] = big
        assert max(inside.st_size, inside.st_blocks * 512) < len(big) + (2 << 20)
    check_archive(p, {"a": big, "b": big})
    assert os.path.getsize(p) < 2 * len(big) + 4096


# --- single commits: one directory write, free room between commits --------------------------


def _base_archive(p: Path, count: int) -> dict[str, bytes]:
    items = {f"base/{i:05d}": bytes([i % 251]) * 50 for i in range(count)}
    with MmapZipStore(p, "w") as store:
        store.set_many(items)
    return items


def _cd_offset(p: Path) -> int:
    raw = p.read_bytes()
    return int(struct.unpack_from("<Q", raw, len(raw) - 98 + 48)[0])


@pytest.mark.parametrize(("durable", "commits"), [(False, 240), (True, 24)])
def test_single_commits_write_the_directory_once(
    tmp_path: Path, durable: bool, commits: int
) -> None:
    """Into an archive whose directory is much larger than an entry, every single commit
    after the first writes the directory once and relocates nothing: new keys, rewrites
    and deletes alike, with or without ``durable``. The file holds the entries, at most
    three directories and the holes between commits, instead of growing by a directory per
    commit; every committed state reads back; close() leaves the directory right after
    the last entry."""
    from dafzarr._core.zipstore import commit

    p = tmp_path / "once.zip"
    want = _base_archive(p, 3000)
    rewrites = iter(f"base/{j:05d}" for j in range(1, 1000))  # never the first entry
    deletes = iter(f"base/{j:05d}" for j in range(2000, 3000))
    steps: list[str] = []
    commit.step_hook = steps.append
    try:
        with MmapZipStore(p, "r+", durable=durable) as store:
            for i in range(commits):
                done = len(steps)
                if i % 3 == 0:
                    key, value = f"new/{i:04d}", os.urandom(100)
                    store[key] = want[key] = value
                elif i % 3 == 1:
                    key, value = next(rewrites), os.urandom(60)
                    del want[key]
                    store[key] = want[key] = value
                else:
                    key = next(deletes)
                    del store[key], want[key]
                # one write of the directory (the first commit also relocates it)
                writes = [s for s in steps[done:] if s.endswith("cd")]
                assert len(writes) == (2 if i == 0 else 1), writes
                assert writes[-1] in ("commit:cd", "commit:up-cd"), writes
                space = store.space()
                size = os.path.getsize(p)
                need = space.directory_bytes
                data_end = space.live_bytes + space.dead_bytes
                assert space.file_size == size
                assert size <= data_end + 3 * need + (32 << 10), (i, size - data_end, need)
                with MmapZipStore(p, "r") as reader:
                    assert reader.keys() == list(want)
                    assert reader.space().free_bytes == space.free_bytes > 0
                if i % 60 == 59:
                    check_archive(p, want)
    finally:
        commit.step_hook = None
    assert steps[-3:] == ["settle:cd", "settle:trailer", "settle:truncated"]
    with MmapZipStore(p, "r") as store:
        space = store.space()
        assert space.free_bytes == 0 and space.file_size == os.path.getsize(p)
        assert _cd_offset(p) == space.live_bytes + space.dead_bytes
        assert {k: bytes(store[k]) for k in store} == want
    check_archive(p, want)


def _read_with_zarr_zipstore(p: Path, key: str) -> bytes | None:
    """``key`` as zarr's own ``ZipStore`` (through ``zipfile``) reads it."""
    import asyncio

    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import ZipStore

    async def read() -> bytes | None:
        store = await ZipStore.open(p, mode="r")
        try:
            buf = await store.get(key, prototype=default_buffer_prototype())
            return None if buf is None else buf.to_bytes()
        finally:
            store.close()

    return asyncio.run(read())


_EXIT_WITHOUT_CLOSE = """
import os, sys
from dafzarr import MmapZipStore
store = MmapZipStore(sys.argv[1], "r+")
store["a"] = b"A" * 100
store["b"] = b"B" * 5000
del store["b"]
os._exit(0)
"""


def test_reopen_of_a_writer_left_open_keeps_its_free_room(tmp_path: Path) -> None:
    """A writer that exits without close() leaves free room before the directory: every
    reader takes the archive, a read-only handle counts the room as free (not dead), and a
    writable reopen warns of nothing, changes no byte, keeps the dead copy of a deleted key
    (a reader may map it) and writes its next commit's directory once."""
    from dafzarr._core.zipstore import commit

    p = tmp_path / "open.zip"
    want = _base_archive(p, 300)
    subprocess.run([sys.executable, "-c", _EXIT_WITHOUT_CLOSE, str(p)], check=True, timeout=120)
    want["a"] = b"A" * 100
    check_archive(p, want)
    assert _read_with_zarr_zipstore(p, "a") == want["a"]
    before = p.read_bytes()
    dead_at = before.index(b"B" * 5000)
    with MmapZipStore(p, "r") as reader:
        space = reader.space()
    assert space.free_bytes > 0 and 5000 < space.dead_bytes < 5100
    parts = (space.live_bytes, space.dead_bytes, space.free_bytes, space.directory_bytes)
    assert sum(parts) == space.file_size == len(before)
    steps: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = MmapZipStore(p, "r+")
    try:
        assert p.read_bytes() == before
        assert store.space() == space
        commit.step_hook = steps.append
        try:
            store["c"] = b"C" * 10
        finally:
            commit.step_hook = None
        assert [s for s in steps if s.endswith("cd")] in (["commit:cd"], ["commit:up-cd"])
    finally:
        store.close()
    want["c"] = b"C" * 10
    after = p.read_bytes()
    assert after[dead_at : dead_at + 5000] == b"B" * 5000
    check_archive(p, want)


def test_small_entries_of_a_batch_go_into_the_free_room(tmp_path: Path) -> None:
    """The compiled path of batched small appends writes into the room a single commit
    kept before the directory, without relocating it."""
    from dafzarr._core.zipstore import write

    p = tmp_path / "fast.zip"
    want = _base_archive(p, 300)
    with MmapZipStore(p, "r+") as store:
        store["single"] = want["single"] = b"s" * 100
        a, fm = store._handle.archive, store._handle.fm
        cd_before = a.cd_offset
        with store.batch():
            for i in range(20):
                key, value = f"fast/{i:02d}", os.urandom(100)
                assert write.stage_small(a, fm, key, value)
                want[key] = value
            assert a.tx is not None and a.tx.live_cd == cd_before and not a.tx.relocated
        assert max(e.lfh_offset for e in a.entries) < cd_before
    check_archive(p, want)
    with MmapZipStore(p) as store:
        assert {k: bytes(store[k]) for k in store} == want


def test_commits_near_max_file_size_keep_no_room(tmp_path: Path) -> None:
    """Where free room would take the file past ``max_file_size``, a commit places its
    directory right after its entries instead: the file stays within the limit after every
    commit, holds no room, and every state reads back."""
    from dafzarr._core.zipstore import commit

    p = tmp_path / "tight.zip"
    want = _base_archive(p, 300)
    limit = os.path.getsize(p) + 4000  # a few small entries, not a second directory
    steps: list[str] = []
    with MmapZipStore(p, "r+", max_file_size=limit) as store:
        commit.step_hook = steps.append
        try:
            for i in range(8):
                key = f"t/{i}" if i % 2 else f"base/{i + 1:05d}"  # new keys and rewrites
                want.pop(key, None)
                store[key] = want[key] = bytes([i]) * 100
                assert os.path.getsize(p) <= limit
                assert store.space().free_bytes == 0
                with MmapZipStore(p, "r") as reader:
                    assert reader.keys() == list(want)
        finally:
            commit.step_hook = None
    assert "commit:up-trailer" not in steps
    check_archive(p, want)
