"""Scanning an HDF5 file costs memory bounded by the file's size, whatever shape it declares."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest

from dafzarr.errors import DafzarrError, UnsupportedHDF5Error, UnsupportedVariableWarning
from dafzarr.refs import scan


def _sparse(path: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=shape, chunks=chunks, dtype="f4")
        d[tuple(slice(0, c) for c in chunks)] = 1
        f.create_dataset("small", data=np.arange(10, dtype="i4"), chunks=(5,))


def test_a_huge_declared_grid_with_one_chunk_is_refused(tmp_path: Path) -> None:
    """10^10 chunk slots in a 44 kB file: refused before 200 GB of columns are allocated."""
    p = tmp_path / "sparse.h5"
    _sparse(p, (10**7, 10**7), (100, 100))
    with pytest.raises(UnsupportedHDF5Error, match=r"sparse\.h5.*'x'.*chunk grid") as info:
        scan(p)
    assert isinstance(info.value, DafzarrError)
    with pytest.warns(UnsupportedVariableWarning, match="chunk grid"):
        result = scan(p, on_unsupported="skip")
    assert list(result.variables) == ["small"]


def test_a_grid_just_over_the_floor_is_refused_without_allocating_it(tmp_path: Path) -> None:
    """4 M slots (80 MB of columns) in a small file: refused, and the scan stays small."""
    p = tmp_path / "over.h5"
    _sparse(p, (2000, 2000), (1, 1))
    tracemalloc.start()
    try:
        with pytest.raises(UnsupportedHDF5Error, match="chunk grid"):
            scan(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"refusing allocated {peak} bytes"


def test_a_grid_under_the_floor_still_scans(tmp_path: Path) -> None:
    p = tmp_path / "ok.h5"
    _sparse(p, (1000, 1000), (1, 1))  # 1 M slots, 20 MB of columns
    v = scan(p).variables["x"]
    assert v.nchunks == 1_000_000
    assert int((v.offset >= 0).sum()) == 1
