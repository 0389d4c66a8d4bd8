"""Foreign archives holding an entry whose name is unsafe to serve (backslash, ``..``,
absolute, NUL, not UTF-8): a read-only open serves every other entry, and no writable open
or repair ever removes an entry whose header, data and CRC check out."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from dafzarr import MmapZipStore, RefusedEntryWarning, UnsafeEntryNameError
from dafzarr.cli import main

BAD_NAMES = {
    "backslash": b"dir\\evil",
    "dotdot": b"../evil",
    "absolute": b"/etc/evil",
    "nul": b"evil\x00.txt",
    "not-utf8": b"evil\xff\xfe",
}
COUNT = 4


def _archive(path: Path, bad: bytes, position: int) -> dict[str, bytes]:
    """An intact zipfile-written archive whose entry at ``position`` has the name ``bad``.

    zipfile cannot write such names, so the entry is written under a placeholder of the same
    length in bytes, whose bytes are then replaced in its local header and its directory record (no
    CRC covers a name). Returns the other entries.
    """
    # Not ASCII, so zipfile sets the UTF-8 flag (the last case's name then lies about it).
    placeholder = ("é" * (len(bad) // 2) + "#" * (len(bad) % 2)).encode()
    good: dict[str, bytes] = {}
    with zipfile.ZipFile(path, "w") as z:
        for i in range(COUNT):
            data = f"value {i} ".encode() * (50 + 100 * i)
            method = zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED
            info = zipfile.ZipInfo(placeholder.decode() if i == position else f"k/{i}")
            if i != position:
                good[info.filename] = data
            z.writestr(info, data, compress_type=method)
    raw = path.read_bytes()
    assert raw.count(placeholder) == 2
    path.write_bytes(raw.replace(placeholder, bad))
    return good


@pytest.fixture(params=list(BAD_NAMES), name="bad")
def _bad(request: pytest.FixtureRequest) -> bytes:
    return BAD_NAMES[request.param]


@pytest.mark.parametrize("position", range(COUNT))
def test_read_only_serves_every_other_entry(tmp_path: Path, bad: bytes, position: int) -> None:
    p = tmp_path / "foreign.zip"
    good = _archive(p, bad, position)
    with pytest.warns(RefusedEntryWarning, match="are not served"), MmapZipStore(p) as store:
        assert sorted(store) == sorted(good)
        for key, value in good.items():
            assert bytes(store[key]) == value
        refused = [r for r in store.info() if r["refused"]]
        assert len(refused) == 1 and refused[0]["error"]
        assert store.verify() == []


@pytest.mark.parametrize("position", range(COUNT))
def test_writable_open_and_repair_change_nothing(
    tmp_path: Path, bad: bytes, position: int, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "foreign.zip"
    _archive(p, bad, position)
    before = p.read_bytes()
    with pytest.raises(UnsafeEntryNameError, match="nothing was changed"):
        MmapZipStore(p, "r+")
    assert p.read_bytes() == before
    assert main(["zip", "repair", str(p)]) == 1
    assert "unsafe names" in capsys.readouterr().err
    assert p.read_bytes() == before


@pytest.mark.parametrize("position", range(COUNT))
def test_rebuild_never_drops_intact_entries(tmp_path: Path, bad: bytes, position: int) -> None:
    """With the directory gone, the rebuild from local headers meets the unsafe entry: it
    must neither cut the archive there nor leave the entry out of a new directory."""
    p = tmp_path / "foreign.zip"
    _archive(p, bad, position)
    raw = p.read_bytes()
    eocd = raw.rindex(b"PK\x05\x06")
    data_end = struct.unpack_from("<I", raw, eocd + 16)[0]  # where the directory starts
    p.write_bytes(raw[:data_end])  # no directory, no end record
    before = p.read_bytes()
    with pytest.raises(UnsafeEntryNameError, match="nothing was changed"):
        MmapZipStore(p, "r+")
    assert p.read_bytes() == before
