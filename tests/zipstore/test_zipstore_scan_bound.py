"""The writable open's recovery scan costs time linear in the file's size, whatever it holds.

Work is measured by what the scan hands to the directory parser (bytes copied and parsed),
never by time. On this project's 2-core test machine, before the bound: 2,000 fake end
records over an 8 MiB "directory" took about 2.5 s (16 GiB parsed) and the cost grew with the
square of the file's size (a 64 MiB file: hours); after: 0.1 s and 0.6 s for the 64 MiB file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from dafzarr import CorruptArchiveError, MmapZipStore
from dafzarr._core.zipstore import ziprecords as zf
from tests.helpers import zipbuild as zb


class CountingStore(MmapZipStore):
    """The real store, counting the directory bytes its opens parse."""

    parsed: ClassVar[list[int]] = []

    def _parse(self, read: zf.Reader, tr: zf.Trailer) -> Any:
        CountingStore.parsed.append(tr.cd_size)
        return super()._parse(read, tr)


@pytest.fixture
def counting() -> type[CountingStore]:
    CountingStore.parsed.clear()
    return CountingStore


def _budget(size: int) -> int:
    return 4 * size + (64 << 20)


def test_many_end_records_claiming_distinct_directories(
    tmp_path: Path, counting: type[CountingStore]
) -> None:
    """2,000 end records, each claiming a different 8 MiB directory that starts with a record."""
    cd = 8 << 20
    head = struct.pack("<I", zb.CD_SIG) + bytes(cd)
    fakes = b"".join(zb.EOCD.pack(zb.EOCD_SIG, 0, 0, 1, 1, cd - i, 0, 0) for i in range(2000))
    p = tmp_path / "fakes.zip"
    data = head + fakes + b"not an end record"
    p.write_bytes(data)
    with pytest.raises(CorruptArchiveError, match=r"fakes\.zip"):
        counting(p, "r+")
    assert p.read_bytes() == data
    assert sum(counting.parsed) <= _budget(len(data)), (
        f"{len(counting.parsed)} directories parsed, {sum(counting.parsed)} bytes"
    )


def test_64_mib_of_junk_with_many_end_records(
    tmp_path: Path, counting: type[CountingStore]
) -> None:
    rng = np.random.default_rng(0)
    n = 64 << 20
    data = bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    data[:4] = struct.pack("<I", zb.CD_SIG)
    for pos in range(4096, n - 22, 997):  # end records claiming a directory [0, pos)
        data[pos : pos + 22] = zb.EOCD.pack(zb.EOCD_SIG, 0, 0, 1, 1, pos, 0, 0)
    p = tmp_path / "junk.bin"
    p.write_bytes(data)
    for mode in ("r", "r+"):
        with pytest.raises(CorruptArchiveError, match=r"junk\.bin"):
            counting(p, mode)
    assert sum(counting.parsed) <= _budget(n)
