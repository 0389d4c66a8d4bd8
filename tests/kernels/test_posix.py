"""The compiled mapping layer: errno -> OSError subclasses, lifetime, bounds, exports."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from dafzarr._posix import PAGE_SIZE, FileMapping


def test_errno_becomes_the_right_oserror(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such.zip"
    with pytest.raises(FileNotFoundError) as info:
        FileMapping(str(missing), False)
    assert info.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        FileMapping(str(tmp_path), True, 1 << 20)
    ro = tmp_path / "ro.bin"
    ro.write_bytes(b"x" * 10)
    ro.chmod(0o444)
    if os.geteuid() != 0:  # root ignores file permissions
        with pytest.raises(PermissionError):
            FileMapping(str(ro), True, 1 << 20)


def test_lifetime_and_exports(tmp_path: Path) -> None:
    p = tmp_path / "m.bin"
    p.write_bytes(bytes(100))
    fm = FileMapping(str(p), True, 1 << 20)
    assert fm.address % (2 << 20) == 0  # the writable base sits on a huge-page boundary
    view = fm.view(0, 100, writable=True)
    array = np.frombuffer(view, np.uint8)
    array[:] = 7
    del view
    assert fm.exports == 1  # the array still holds the export
    with pytest.raises(BufferError, match="still alive"):
        fm.close()
    del array
    fm.close()
    fm.close()
    with pytest.raises(ValueError, match="closed"):
        fm.read(0, 1)
    with pytest.raises(ValueError, match="closed"):
        fm.view(0, 1)
    assert p.read_bytes() == b"\x07" * 100


def test_read_only_views_refuse_writes(tmp_path: Path) -> None:
    p = tmp_path / "r.bin"
    p.write_bytes(b"abc")
    with FileMapping(str(p), False) as fm:
        view = fm.view(0, 3)
        assert view.readonly and bytes(view) == b"abc"
        with pytest.raises(TypeError):
            view[0] = 1
        del view
        with pytest.raises(ValueError, match="read-only"):
            fm.write(0, b"x")
        with pytest.raises(ValueError, match="read-only"):
            fm.view(0, 1, writable=True)


def test_bounds_are_checked(tmp_path: Path) -> None:
    p = tmp_path / "b.bin"
    p.write_bytes(bytes(4096))
    with FileMapping(str(p), True, 1 << 20) as fm:
        for offset, length in [(-1, 1), (4096, 1), (4000, 97), (0, 4097), (0, -1)]:
            with pytest.raises(IndexError, match="outside"):
                fm.read(offset, length)
        with pytest.raises(IndexError):
            fm.write(4095, b"xy")
        with pytest.raises(ValueError, match="reserved"):
            fm.resize((4 << 20) + 1)


def test_resize_keeps_the_base_and_recovers_the_tail(tmp_path: Path) -> None:
    p = tmp_path / "g.bin"
    p.write_bytes(b"")
    with FileMapping(str(p), True, 64 << 20) as fm:
        base = fm.address
        fm.resize(10 * PAGE_SIZE + 5)
        fm.write(10 * PAGE_SIZE, b"tail!")
        fm.resize(3)  # pages past the new end are inaccessible again, not SIGBUS traps
        assert fm.address == base and fm.size == 3
        with pytest.raises(IndexError):
            fm.read(3, 1)
        fm.resize(20 * PAGE_SIZE)
        assert fm.read(10 * PAGE_SIZE, 5) == bytes(5)  # the file's bytes, zero after regrowth
    assert os.path.getsize(p) == 20 * PAGE_SIZE


def test_rfind_and_zero_checks(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"PK\x05\x06" + bytes(100_000) + b"PK\x05\x06xx")
    with FileMapping(str(p), False) as fm:
        assert fm.rfind(b"PK\x05\x06", 0, fm.size) == 100_004
        assert fm.rfind(b"PK\x05\x06", 0, 100_007) == 0
        assert fm.rfind(b"nope", 0, fm.size) == -1
        assert fm.is_zero(4, 100_000) and not fm.is_zero(0, 5)


def test_populate_maps_whole_pages_and_changes_no_byte(tmp_path: Path) -> None:
    # An unaligned range of a shared file mapping: only its whole pages are populated, and
    # no byte inside or outside it changes.
    path = tmp_path / "m.bin"
    base = np.random.default_rng(5).integers(0, 256, 3 << 20, dtype=np.uint8)
    base.tofile(path)
    with FileMapping(str(path), True, 8 << 20) as fm:
        assert fm.populate(1234, len(base) - 1234 - 777, writable=True)
        assert fm.populate(0, len(base))
        assert not fm.populate(1234, 4096)  # no whole page inside
        assert not fm.populate(0, 0)
        with pytest.raises(IndexError, match="outside"):
            fm.populate(len(base) - 10, 20)  # outside the file
        fm.msync(0, len(base))
    assert np.array_equal(np.fromfile(path, np.uint8), base)
    path.write_bytes(bytes(8192))
    with FileMapping(str(path), False, 0) as ro:
        assert ro.populate(0, 8192)
        with pytest.raises(ValueError, match="read-only"):
            ro.populate(0, 8192, writable=True)
