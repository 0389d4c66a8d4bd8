"""Rollback of a damaged tail: archives left by a writer that commits the central directory
before it copies the entry (DataAxesFormats.jl's order, and this store's own reservations).

This store writes an entry's data before the directory that lists it, so its own crashes
never leave a listed entry incomplete; the Julia writer's crashes (windows A3 to A5 of the
``mmap-zip-store`` specification, section 9.4) do. A writable open must drop exactly the
trailing entries whose local header or CRC-32 does not check, keep every entry before them
bit for bit, and leave an archive every reader accepts.
"""

from __future__ import annotations

import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from dafzarr import MmapZipStore, RecoveryWarning
from tests.helpers.common import check_zip_tools_accept

VALUES = {f"k/{i}": bytes([65 + i]) * (200 + 37 * i) for i in range(4)}


def _layout(path: Path) -> dict[str, tuple[int, int]]:
    """Key -> (local-header offset, data offset) as zipfile reads them."""
    out = {}
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            n_len, e_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
            out[info.filename] = (info.header_offset, info.header_offset + 30 + n_len + e_len)
    return out


def _zero(start: int, length: int) -> Callable[[bytearray], None]:
    def damage(raw: bytearray) -> None:
        raw[start : start + length] = bytes(length)

    return damage


# How each crash window leaves the last entry: (name, damage of the file's bytes given the
# last entry's local-header offset, data offset and size).
WINDOWS: dict[str, Callable[[int, int, int], Callable[[bytearray], None]]] = {
    # A3: the directory is committed; the local header was never written (zeros here).
    "no-local-header": lambda lfh, data, size: _zero(lfh, data - lfh),
    # A4: the local header is partly written.
    "half-local-header": lambda lfh, data, size: _zero(lfh + 10, data - lfh - 10),
    # A5: the header is complete, the data missing or partial.
    "no-data": lambda lfh, data, size: _zero(data, size),
    "data-prefix": lambda lfh, data, size: _zero(data + size // 2, size - size // 2),
    "one-byte-missing": lambda lfh, data, size: _zero(data + size - 1, 1),
}


@pytest.mark.parametrize("window", list(WINDOWS))
@pytest.mark.parametrize("damaged", [1, 2])
def test_writable_open_rolls_back_the_damaged_tail(
    tmp_path: Path, window: str, damaged: int
) -> None:
    """The last ``damaged`` entries were listed by a commit but never completely written."""
    p = tmp_path / "tail.zip"
    with MmapZipStore(p, "w") as store:
        for key, value in VALUES.items():
            store[key] = value
    layout = _layout(p)
    raw = bytearray(p.read_bytes())
    for key in list(VALUES)[-damaged:]:
        lfh, data = layout[key]
        WINDOWS[window](lfh, data, len(VALUES[key]))(raw)
    p.write_bytes(bytes(raw))
    kept = dict(list(VALUES.items())[:-damaged])
    dropped = list(VALUES)[-damaged:]

    with pytest.warns(RecoveryWarning, match="rolled back") as caught:
        store = MmapZipStore(p, "r+")
    message = str(caught[0].message)
    assert all(repr(k) in message for k in dropped), message
    with store:
        assert sorted(store) == sorted(kept)
        for key, value in kept.items():
            assert bytes(store[key]) == value
        store["after"] = b"appended after the rollback"
    check_zip_tools_accept(p)
    with zipfile.ZipFile(p) as z:
        assert sorted(z.namelist()) == sorted([*kept, "after"])
        for key, value in kept.items():
            assert z.read(key) == value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left to recover
        MmapZipStore(p, "r+").close()


def test_read_only_open_never_rolls_back(tmp_path: Path) -> None:
    p = tmp_path / "tail.zip"
    with MmapZipStore(p, "w") as store:
        for key, value in VALUES.items():
            store[key] = value
    _, data = _layout(p)["k/3"]
    raw = bytearray(p.read_bytes())
    _zero(data, len(VALUES["k/3"]))(raw)
    p.write_bytes(bytes(raw))
    with MmapZipStore(p) as store:
        assert store.verify() == ["k/3"]  # listed, and reported as failing its CRC
    assert p.read_bytes() == bytes(raw)
