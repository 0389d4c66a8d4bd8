"""Maps refused by the kernel: a clear error naming the file and the cause.

A ZIP archive opened read-only is mapped whole, and each array file of a ZarrDaf directory
larger than 64 KiB is mapped when it is read (smaller ones are read into memory). Where the
kernel refuses a map (``ENOMEM``), the error is an :class:`AddressSpaceError` (a
``DafzarrError`` and an ``OSError``) that names the file, its size and the limit that
refused it: the address-space limit (``ulimit -v``, ``RLIMIT_AS``) or the number of mappings
one process may hold (``vm.max_map_count``). Each case runs in a real child process that
reaches the limit. A writable open at the mapping limit names that limit too, not the
archive's size option (a smaller reservation would not help).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dafzarr

ROWS, COLS = 2000, 1000  # a 16 MB float64 matrix

READ = """
try:
    d = dafzarr.open_daf(path, "r")
    print("read", d.get_np_matrix("r", "g", "big").sum())
except dafzarr.AddressSpaceError as exc:
    assert isinstance(exc, dafzarr.DafzarrError) and isinstance(exc, OSError), type(exc)
    assert exc.errno == errno.ENOMEM, exc.errno
    print("refused:", exc)
"""

# Address space: what the child uses after its imports plus 1 MiB.
ADDRESS_SPACE = (
    """
import errno, resource, sys, dafzarr, dafzarr.daf  # what the read imports, before the limit
path = sys.argv[1]
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 20), resource.RLIM_INFINITY))
"""
    + READ
)

# Mappings: small anonymous maps of alternating protection (so that none merge) until the
# kernel refuses one.
FILL = """
while True:
    prot = mmap.PROT_READ if len(held) % 2 else mmap.PROT_READ | mmap.PROT_WRITE
    try:
        held.append(mmap.mmap(-1, mmap.PAGESIZE, prot=prot))
    except OSError:
        break
"""
FILL_MAPPINGS = (
    """
import errno, mmap, sys, dafzarr, dafzarr.daf
path = sys.argv[1]
held = []
"""
    + FILL
)
MAPPINGS = FILL_MAPPINGS + READ


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("mapped")
    out = {}
    for kind, name in (("directory", "d.daf.zarr"), ("zip", "d.daf.zarr.zip")):
        path = str(base / name)
        with dafzarr.open_daf(path, "w") as d:
            d.add_axis("r", [f"r{i}" for i in range(ROWS)])
            d.add_axis("g", [f"g{i}" for i in range(COLS)])
            d.set_matrix("r", "g", "big", np.ones((ROWS, COLS)), relayout=False)
        out[kind] = path
    return out


def _child(code: str, path: str) -> str:
    res = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


@pytest.mark.parametrize("kind", ["directory", "zip"])
def test_address_space_limit_is_named(datasets: dict[str, str], kind: str) -> None:
    out = _child(ADDRESS_SPACE, datasets[kind])
    assert out.startswith("refused: "), out
    assert "can't map " + datasets[kind] in out  # the archive, or a file of the directory
    assert "RLIMIT_AS, ulimit -v" in out and "bytes) to read it" in out
    if kind == "zip":
        assert f"({Path(datasets[kind]).stat().st_size} bytes)" in out


@pytest.mark.parametrize("kind", ["directory", "zip"])
def test_mapping_count_limit_is_named(datasets: dict[str, str], kind: str) -> None:
    out = _child(MAPPINGS, datasets[kind])
    assert out.startswith("refused: "), out
    assert "can't map " + datasets[kind] in out
    assert "vm.max_map_count = " in out and "memory mappings" in out


def test_reads_within_the_limits(datasets: dict[str, str]) -> None:
    """The same reads, with the limits not reached, return the values."""
    for path in datasets.values():
        with dafzarr.open_daf(path, "r") as d:
            assert d.get_np_matrix("r", "g", "big").sum() == ROWS * COLS


def test_writable_open_at_the_mapping_limit_names_it(tmp_path: Path) -> None:
    path = tmp_path / "new.zip"
    out = _child(
        FILL_MAPPINGS
        + """
try:
    dafzarr.MmapZipStore(path, "w")
    print("opened")
except dafzarr.AddressSpaceError as exc:
    print("refused:", exc)
""",
        str(path),
    )
    assert out.startswith("refused: "), out
    assert f"can't open {path} for writing" in out and "vm.max_map_count = " in out
    assert "max_file_size" not in out
    assert not path.exists()


def test_small_files_of_a_directory_take_no_mapping(tmp_path: Path) -> None:
    """Small array files of a directory are read, not mapped: a data set of many small
    vectors stays readable, all of them held at once, by a process with a handful of
    mappings left, while its large matrix still meets the limit."""
    path = str(tmp_path / "many.daf.zarr")
    count = 400
    with dafzarr.open_daf(path, "w") as d:
        d.add_axis("r", [f"r{i}" for i in range(ROWS)])
        d.add_axis("g", [f"g{i}" for i in range(COLS)])
        for i in range(count):
            d.set_vector("g", f"v{i}", np.full(COLS, i, np.float64))  # 8,000 bytes each
        d.set_matrix("r", "g", "big", np.ones((ROWS, COLS)), relayout=False)
    out = _child(
        FILL_MAPPINGS
        + f"""
del held[-32:]  # room for the interpreter's own maps, far fewer than the vectors
d = dafzarr.open_daf(path, "r")
vectors = [d.get_np_vector("g", f"v{{i}}") for i in range({count})]
assert all((v == i).all() for i, v in enumerate(vectors))
print("read", len(vectors))
"""
        + FILL
        + READ,
        path,
    )
    assert out.startswith(f"read {count}\nrefused: "), out
    assert "vm.max_map_count = " in out
