"""Computed chunks (1-based indices, transposes) written block by block into a ZIP entry with
pwrite(2), and the canonical-format scan of sparse values split over threads.

* A writer killed with SIGKILL while the blocks of an entry are being written leaves the
  property absent (the entry is in an uncommitted batch), every earlier one whole, and an
  archive that ``zipfile`` and ``unzip -t`` accept.
* Blocks that do not fill the entry are an error, and the entry is rolled back.
* The split scan finds unsorted indices and duplicates in any part (they are then summed
  and sorted, the caller's arrays left alone) and indices out of range in any part.
* A CSC value stored in one layout is not scanned first: the pass writing its 1-based
  indices checks them. A fault found in any block drops what was written; the value is then
  written canonical, or refused when out of range, with nothing of it left behind.
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
from dafzarr._core.daf import backends_zip as _backends_zip
from dafzarr._core.daf import values as _values
from dafzarr.errors import CorruptArchiveError, DafFormatError, DafzarrError, RecoveryWarning
from tests.helpers.common import check_zip_tools_accept

# The child writes matrices m0, m1, ... until the entry of m2 (its transpose, or its
# rowval after the colptr of m0, m1 and m2 and the rowval of m0 and m1) has its first block
# written, then says so and waits to be killed. Blocks are small: each entry has several.
CHILD = """
import sys, time, numpy as np, scipy.sparse as sp, dafzarr
from dafzarr._core.daf import values as _values
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
def test_a_writer_killed_inside_an_entry_leaves_no_half_property(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "k.daf.zarr.zip"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), kind], stdout=subprocess.PIPE, text=True
    )
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
            with (
                pytest.raises(DafzarrError, match=f"given for 'x' {why} its 4 bytes"),
                backend.transaction(),
            ):
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
    return sp.csc_matrix(
        (data, np.array(indices, np.int32), np.array(indptr, np.int32)), shape=shape
    )


def _with_fault(indices: list[int], where: int, fault: str) -> list[int]:
    """``indices`` with the pair at ``where`` swapped ("unsorted") or made equal."""
    out = list(indices)
    if fault == "unsorted":
        out[where], out[where + 1] = out[where + 1], out[where]
    else:
        out[where + 1] = out[where]
    return out


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
def test_the_split_scan_finds_a_fault_in_any_part(split_scan: None, where: int, fault: str) -> None:
    indices = _with_fault(_SORTED, where, fault)
    value = _csc(indices, _PTR, (4, 6))
    expected = value.toarray()  # duplicates summed
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    d.set_matrix("g", "c", "m", value)  # both layouts: scanned before the flip converts it
    assert not value.has_canonical_format
    assert value.indices.tolist() == indices  # the caller's arrays are left alone
    got = d.get_np_matrix("g", "c", "m")
    assert got.has_canonical_format and np.array_equal(got.toarray(), expected)


def test_the_split_scan_caches_a_canonical_answer(split_scan: None) -> None:
    value = _csc(_SORTED, _PTR, (4, 6))
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    d.set_matrix("g", "c", "m", value)
    assert value._has_canonical_format is True  # as scipy's own scan leaves it
    assert np.array_equal(d.get_np_matrix("g", "c", "m").toarray(), value.toarray())


@pytest.mark.parametrize("where", [1, 5, 11])
def test_the_split_scan_still_refuses_indices_out_of_range(split_scan: None, where: int) -> None:
    indices = list(_SORTED)
    indices[where] = 4
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcd")).add_axis("c", list("uvwxyz"))
    with pytest.raises(DafFormatError, match=r"(?s)indices must be < 4.*matrix 'm'"):
        d.set_matrix("g", "c", "m", _csc(indices, _PTR, (4, 6)))


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
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=write",
            "-o",
            str(trace),
            sys.executable,
            "-c",
            _PIECES_CHILD,
            str(path),
        ],
        check=True,
        timeout=300,
    )
    sizes = [
        int(m.group(1))
        for m in re.finditer(r"\bwrite\(\d+, .*\) = (\d+)$", trace.read_text(), re.MULTILINE)
    ]
    assert sum(sizes) >= 2 * 1500 * 1400 * 8  # both 16.8 MB matrices went through write(2)
    assert max(sizes) <= 1 << 20, max(sizes)
    d = dafzarr.open_daf(path)
    assert bool(np.all(d.get_np_matrix("r", "c", "f", relayout=False) == 1))
    assert bool(np.all(d.get_np_matrix("r", "c", "t", relayout=False) == 1))
    d.close()


# --- Indices checked as they are written ----------------------------------------------------
# A CSC value stored in one layout, with no canonical-format answer cached on it, is not
# scanned before the write: the pass writing its 1-based indices checks them. 4 columns of
# 3 values; blocks of 4 indices, so block edges fall inside columns.
_SORTED3 = [0, 2, 4, 1, 2, 3, 0, 1, 4, 2, 3, 4]
_PTR3 = [0, 3, 6, 9, 12]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_values, "_BLOCK", 1)  # blocks of 4 indices


def _daf3(tmp_path: Path, backend: str) -> Any:
    path = {
        "memory": None,
        "directory": tmp_path / "x.daf.zarr",
        "zip": tmp_path / "x.daf.zarr.zip",
        "append-only": tmp_path / "x.daf.zarr.zip",
    }[backend]
    d = (
        dafzarr.memory_daf()
        if path is None
        else dafzarr.open_daf(path, "w", append_only=backend == "append-only")
    )
    d.add_axis("g", list("abcde")).add_axis("c", list("wxyz"))
    d.set_vector("c", "kept", np.arange(4.0))
    return d


def _matrix_keys(d: Any, tmp_path: Path, backend: str) -> list[str]:
    """The stored keys of matrix ``m`` (after ``d`` is closed)."""
    if backend == "directory":
        root = tmp_path / "x.daf.zarr"
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "/m/" in str(p))
    if backend in ("zip", "append-only"):
        import zipfile

        check_zip_tools_accept(tmp_path / "x.daf.zarr.zip")
        with zipfile.ZipFile(tmp_path / "x.daf.zarr.zip") as zf:
            return sorted(n for n in zf.namelist() if "/m/" in n)
    return []


BACKENDS = ["memory", "directory", "zip", "append-only"]


# An append-only archive could not drop what a fault leaves written: values are scanned first.
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "append-only"])
def test_canonical_indices_are_checked_as_written_not_scanned_first(
    tmp_path: Path, backend: str, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_scan(value: Any) -> bool:
        raise AssertionError("scanned before the write")

    monkeypatch.setattr(_values, "_has_canonical_format", no_scan)
    value = _csc(_SORTED3, _PTR3, (5, 4))
    d = _daf3(tmp_path, backend)
    d.set_matrix("g", "c", "m", value, relayout=False)
    assert value._has_canonical_format is True  # cached, as scipy's own scan would
    assert np.array_equal(d.get_np_matrix("g", "c", "m").toarray(), value.toarray())
    d.close()
    if backend != "memory":
        keys = _matrix_keys(d, tmp_path, backend)
        assert len(keys) == len(set(keys)) and any(k.endswith("rowval/0") for k in keys)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", [0, 3, 7, 10])  # a fault in each block, and across blocks
@pytest.mark.parametrize("fault", ["unsorted", "duplicate"])
def test_a_fault_found_while_writing_is_written_canonical(
    tmp_path: Path, backend: str, small_blocks: None, where: int, fault: str
) -> None:
    indices = _with_fault(_SORTED3, where, fault)
    value = _csc(indices, _PTR3, (5, 4))
    expected = value.toarray()  # duplicates summed
    d = _daf3(tmp_path, backend)
    d.set_matrix("g", "c", "m", value, relayout=False)
    assert value.indices.tolist() == indices  # the caller's arrays are left alone
    got = d.get_np_matrix("g", "c", "m")
    assert got.has_canonical_format and np.array_equal(got.toarray(), expected)
    d.close()
    if backend != "memory":
        keys = _matrix_keys(d, tmp_path, backend)
        assert len(keys) == len(set(keys))  # the dropped first attempt left no key
        again = dafzarr.open_daf(
            tmp_path / ("x.daf.zarr" if backend == "directory" else "x.daf.zarr.zip"), "r"
        )
        assert np.array_equal(again.get_np_matrix("g", "c", "m").toarray(), expected)
        assert np.array_equal(again.get_np_vector("c", "kept"), np.arange(4.0))
        again.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", [0, 5, 11])
@pytest.mark.parametrize("bad", [5, -1, 1 << 40])
def test_indices_out_of_range_found_while_writing_are_refused(
    tmp_path: Path, backend: str, small_blocks: None, where: int, bad: int
) -> None:
    indices = list(_SORTED3)
    indices[where] = bad
    big = bad >= 1 << 31
    value = sp.csc_matrix(
        (
            np.ones(12, np.float32),
            np.array(indices, np.int64 if big else np.int32),
            np.array(_PTR3, np.int64 if big else np.int32),
        ),
        shape=(5, 4),
    )
    d = _daf3(tmp_path, backend)
    with pytest.raises(DafFormatError, match=r"(?s)indices must be .*matrix 'm'"):
        d.set_matrix("g", "c", "m", value, relayout=False)
    assert not d.has_matrix("g", "c", "m")
    assert np.array_equal(d.get_np_vector("c", "kept"), np.arange(4.0))
    d.close()
    assert _matrix_keys(d, tmp_path, backend) == []  # nothing of the refused matrix


# --- CSR values converted on threads -----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("relayout", [False, True])
@pytest.mark.parametrize("fault", [None, "unsorted", "duplicate"])
def test_a_csr_value_is_converted_on_threads_and_stored_canonical(
    tmp_path: Path,
    backend: str,
    relayout: bool,
    fault: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_values, "_PARALLEL_MIN", 1)
    monkeypatch.setattr(_values, "_THREADS", 3)
    monkeypatch.setattr(_values, "_CONVERT_VALUES_PER_COLUMN", 1)
    calls = []
    kernel = _values.csr_to_csc
    monkeypatch.setattr(_values, "csr_to_csc", lambda *a: calls.append(1) or kernel(*a))
    # The transpose of the 5 x 4 CSC matrix of _SORTED3: a 4 x 5 CSR of rows c, columns g.
    indices = _SORTED3 if fault is None else _with_fault(_SORTED3, 4, fault)
    value = sp.csr_matrix(
        (
            np.arange(1, 13, dtype=np.float32),
            np.array(indices, np.int32),
            np.array(_PTR3, np.int32),
        ),
        shape=(4, 5),
    )
    expected = value.toarray()  # duplicates summed
    d = _daf3(tmp_path, backend)
    d.set_matrix("c", "g", "m", value, relayout=relayout)
    assert calls  # the compiled conversion, not scipy's
    assert value.indices.tolist() == indices  # the caller's arrays are left alone
    for rows, cols, want in (("c", "g", expected), ("g", "c", expected.T))[: 1 + relayout]:
        got = d.get_np_matrix(rows, cols, "m", relayout=False)
        assert got.has_canonical_format and np.array_equal(got.toarray(), want)
    d.close()


def test_a_very_wide_csr_value_is_converted_by_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer values per column than the threaded conversion's counters would cost."""
    monkeypatch.setattr(_values, "_PARALLEL_MIN", 1)
    monkeypatch.setattr(_values, "_THREADS", 3)
    calls = []
    kernel = _values.csr_to_csc
    monkeypatch.setattr(_values, "csr_to_csc", lambda *a: calls.append(1) or kernel(*a))
    value = sp.csr_matrix(
        (
            np.ones(3, np.float32),
            np.array([1, 4, 2], np.int32),
            np.array([0, 2, 2, 3, 3], np.int32),
        ),
        shape=(4, 5),
    )
    d = dafzarr.memory_daf()
    d.add_axis("g", list("abcde")).add_axis("c", list("wxyz"))
    d.set_matrix("c", "g", "m", value, relayout=False)
    assert not calls
    assert np.array_equal(d.get_np_matrix("c", "g", "m").toarray(), value.toarray())
