"""Computed chunks (1-based indices, transposes) written block by block into a ZIP entry with
pwrite(2), and the canonical-format scan of sparse values split over threads.

* A writer killed with SIGKILL while the blocks of an entry are being written leaves the
  property absent (the entry is in an uncommitted batch), every earlier one whole, and an
  archive that ``zipfile`` and ``unzip -t`` accept.
* Blocks that do not fill the entry are an error, and the entry is rolled back.
* The split scan finds unsorted indices and duplicates in any part (they are then summed
  and sorted, the caller's arrays left alone) and indices out of range in any part.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import dafzarr
from dafzarr import MmapZipStore
from dafzarr.daf import _backends_zip, _values
from dafzarr.errors import CorruptArchiveError, DafFormatError, DafzarrError, RecoveryWarning

from .common import check_zip_tools_accept

# The child writes matrices m0, m1, ... until the entry of m2 (its transpose, or its
# rowval after the colptr of m0, m1 and m2 and the rowval of m0 and m1) has its first block
# written, then says so and waits to be killed. Blocks are small: each entry has several.
CHILD = """
import sys, time, numpy as np, scipy.sparse as sp, dafzarr
from dafzarr.daf import _values
path, kind = sys.argv[1], sys.argv[2]
_values._STREAM_BYTES = 64 << 10
_values._BLOCK = 4096
target = {"dense": _values.Transposed, "sparse": _values.OneBased}[kind]
nth = {"dense": 3, "sparse": 6}[kind]
seen = [0]
plain_blocks = target.blocks

def blocks(self):
    seen[0] += 1
    for k, block in enumerate(plain_blocks(self)):
        yield block
        if k == 0 and seen[0] == nth:
            print("mid", flush=True)
            time.sleep(60)

target.blocks = blocks
NR, NC = 1500, 1300
d = dafzarr.open_daf(path, "w")
d.add_axis("r", [str(i) for i in range(NR)]).add_axis("c", [str(i) for i in range(NC)])
for i in range(5):
    value = np.full((NR, NC), i + 1, dtype=np.float32)  # row-major: stored transposed
    if kind == "sparse":
        value = sp.csc_matrix(value)
    d.set_matrix("r", "c", f"m{i}", value, relayout=False, indtype="uint32")
print("done", flush=True)
"""


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_a_writer_killed_inside_an_entry_leaves_no_half_property(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "k.daf.zarr.zip"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), kind],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        said = proc.stdout.readline().strip()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert said == "mid"  # killed while an entry of m2 was being written
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        for mode in ("r", "r+"):
            try:
                d = dafzarr.open_daf(path, mode)
            except CorruptArchiveError:
                assert mode == "r"  # killed inside a commit: a writable open recovers
                continue
            assert d.matrices_set("r", "c", relayout=False) == {"m0", "m1"}
            for i in range(2):
                m = d.get_np_matrix("r", "c", f"m{i}", relayout=False)
                dense = m.toarray() if sp.issparse(m) else m
                assert dense.shape == (1500, 1300) and bool(np.all(dense == i + 1))
                del m, dense
            d.close()
    check_zip_tools_accept(path)


def test_blocks_that_do_not_fill_the_entry_are_refused(tmp_path: Path) -> None:
    with MmapZipStore(tmp_path / "s.zip", "w") as store:
        backend = _backends_zip.ZipBackend(store, "", read_only=False)
        for blocks, why in (([b"ab", b"c"], "do not fill"), ([b"abcd", b"ef"], "overflow")):
            with pytest.raises(DafzarrError, match=f"given for 'x' {why} its 4 bytes"), \
                    backend.transaction():
                backend.put_streamed("x", 4, blocks)
            assert "x" not in store
        with backend.transaction():
            backend.put_streamed("x", 4, [b"ab", b"", b"cd"])
            backend.put_streamed("empty", 0, [])
    import zipfile

    with zipfile.ZipFile(tmp_path / "s.zip") as zf:
        assert zf.testzip() is None
        assert zf.read("x") == b"abcd" and zf.read("empty") == b""


def _csc(indices: list[int], indptr: list[int], shape: tuple[int, int]) -> Any:
    data = np.arange(1, len(indices) + 1, dtype=np.float32)
    return sp.csc_matrix((data, np.array(indices, np.int32), np.array(indptr, np.int32)),
                         shape=shape)


@pytest.fixture
def split_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sparse value is scanned in three parts."""
    monkeypatch.setattr(_values, "_PARALLEL_MIN", 1)
    monkeypatch.setattr(_values, "_THREADS", 3)


# 6 columns of 2 values each: the three parts are columns 0-1, 2-3 and 4-5.
_SORTED = [0, 1, 1, 2, 0, 2, 1, 3, 0, 3, 2, 3]
_PTR = [0, 2, 4, 6, 8, 10, 12]


@pytest.mark.parametrize("where", [0, 4, 10])
@pytest.mark.parametrize("fault", ["unsorted", "duplicate"])
def test_the_split_scan_finds_a_fault_in_any_part(
    split_scan: None, where: int, fault: str
) -> None:
    indices = list(_SORTED)
    if fault == "unsorted":
        indices[where], indices[where + 1] = indices[where + 1], indices[where]
    else:
        indices[where + 1] = indices[where]
    value = _csc(indices, _PTR, (4, 6))
    expected = value.toarray()  # duplicates summed
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    d.set_matrix("g", "c", "m", value, relayout=False)
    assert not value.has_canonical_format
    assert value.indices.tolist() == indices  # the caller's arrays are left alone
    got = d.get_np_matrix("g", "c", "m")
    assert got.has_canonical_format and np.array_equal(got.toarray(), expected)


def test_the_split_scan_caches_a_canonical_answer(split_scan: None) -> None:
    value = _csc(_SORTED, _PTR, (4, 6))
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    d.set_matrix("g", "c", "m", value, relayout=False)
    assert value._has_canonical_format is True  # as scipy's own scan leaves it
    assert np.array_equal(d.get_np_matrix("g", "c", "m").toarray(), value.toarray())


@pytest.mark.parametrize("where", [1, 5, 11])
def test_the_split_scan_still_refuses_indices_out_of_range(split_scan: None, where: int) -> None:
    indices = list(_SORTED)
    indices[where] = 4
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    with pytest.raises(DafFormatError, match=r"(?s)indices must be < 4.*matrix 'm'"):
        d.set_matrix("g", "c", "m", _csc(indices, _PTR, (4, 6)), relayout=False)


_PIECES_CHILD = """
import sys
import numpy as np
import dafzarr
d = dafzarr.open_daf(sys.argv[1], "w")
d.add_axis("r", [f"r{i}" for i in range(1500)]).add_axis("c", [f"c{i}" for i in range(1400)])
d.set_matrix("r", "c", "f", np.asfortranarray(np.ones((1500, 1400))), relayout=False)
d.set_matrix("r", "c", "t", np.ones((1500, 1400)), relayout=False)  # transposed as written
d.close()
"""


def test_a_directory_writes_large_arrays_in_pieces(tmp_path: Path) -> None:
    # One write(2) of hundreds of MB lets the kernel back the file with 2 MiB page-cache
    # folios, which a VM whose host takes free memory back makes several times slower to
    # fill: a directory writes its files in pieces of at most 1 MiB, as the ZIP store does.
    trace, path = tmp_path / "trace.txt", tmp_path / "p.daf.zarr"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=write", "-o", str(trace),
                    sys.executable, "-c", _PIECES_CHILD, str(path)], check=True, timeout=300)
    sizes = [int(m.group(1)) for m in re.finditer(r"\bwrite\(\d+, .*\) = (\d+)$",
                                                   trace.read_text(), re.MULTILINE)]
    assert sum(sizes) >= 2 * 1500 * 1400 * 8  # both 16.8 MB matrices went through write(2)
    assert max(sizes) <= 1 << 20, max(sizes)
    d = dafzarr.open_daf(path)
    assert bool(np.all(d.get_np_matrix("r", "c", "f", relayout=False) == 1))
    assert bool(np.all(d.get_np_matrix("r", "c", "t", relayout=False) == 1))
    d.close()
