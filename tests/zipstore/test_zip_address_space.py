"""Writable ZIP archives under an address-space limit (``ulimit -v``, ``RLIMIT_AS``).

A writable archive reserves twice its ``max_file_size`` of address space. The default fits
the limit; a size that does not raises :class:`AddressSpaceError` naming the size and the
option, before any file is created. The limits are set in real child processes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr import AddressSpaceError, DafzarrError, MmapZipStore
from tests.helpers.common import check_archive

# The child limits its address space to what it uses after its imports plus 3 GiB.
PRELUDE = """
import resource, sys, numpy as np, dafzarr
from dafzarr import AddressSpaceError
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (3 << 30), resource.RLIM_INFINITY))
path = sys.argv[1]
"""


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + code, *args], capture_output=True, text=True, timeout=120
    )


def test_default_fits_the_address_space_limit(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    res = _child(
        """
d = dafzarr.open_daf(path, "w")
size = d._backend.store.max_file_size
assert 0 < size < (3 << 30) // 2, size
d.add_axis("cell", [f"c{i}" for i in range(1000)])
d.set_vector("cell", "v", np.arange(1000.0))
d.set_vector("cell", "v", np.ones(1000), overwrite=True)
d.close()
r = dafzarr.open_daf(path)
assert r.get_np_vector("cell", "v").tolist() == [1.0] * 1000
r.close()
with dafzarr.MmapZipStore(path + ".plain.zip", "w") as store:  # the store's default too
    store["k"] = b"v"
    assert store.max_file_size == size or store.max_file_size < (3 << 30) // 2
print("ok")
""",
        str(path),
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    check_archive(path)


@pytest.mark.parametrize("rel", ["x.daf.zarr.zip", "m.dafs.zarr.zip#/g"])
def test_too_large_max_file_size_names_the_option(tmp_path: Path, rel: str) -> None:
    path = f"{tmp_path}/{rel}"
    res = _child(
        """
try:
    dafzarr.open_daf(path, "w", max_file_size=1 << 40)
except AddressSpaceError as exc:
    assert isinstance(exc, dafzarr.DafzarrError) and isinstance(exc, OSError)
    print(exc)
""",
        path,
    )
    assert res.returncode == 0, res.stderr
    message = res.stdout
    assert f"max_file_size = {1 << 40} bytes" in message
    assert "pass a smaller max_file_size=" in message
    assert "RLIMIT_AS" in message and path.split("#/")[0] in message
    assert not list(tmp_path.iterdir())  # refused before anything was created


def test_reservation_beyond_the_address_space(tmp_path: Path) -> None:
    # 2 x 64 TiB is more than a 47-bit user address space holds, with no limit set.
    path = tmp_path / "x.zip"
    with pytest.raises(AddressSpaceError, match=f"max_file_size = {1 << 46} bytes"):
        MmapZipStore(path, "w", max_file_size=1 << 46)
    with pytest.raises(DafzarrError, match="max_file_size"):
        dafzarr.open_daf(tmp_path / "y.daf.zarr.zip", "w", max_file_size=1 << 46)
    assert not list(tmp_path.iterdir())


def test_max_file_size_option_limits_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "x.daf.zarr.zip"
    d = dafzarr.open_daf(path, "w", max_file_size=1 << 20)
    assert d._backend.store.max_file_size == 1 << 20  # type: ignore[attr-defined]
    d.add_axis("cell", [f"c{i}" for i in range(1000)]).add_axis(
        "gene", [f"g{i}" for i in range(200)]
    )
    d.set_matrix("cell", "gene", "m", np.ones((1000, 200), "int8"), relayout=False)
    with pytest.raises(ValueError, match=f"past max_file_size = {1 << 20} bytes"):
        d.set_matrix("cell", "gene", "m", np.zeros((1000, 200)), relayout=False, overwrite=True)
    assert d.get_np_matrix("cell", "gene", "m").dtype == np.int8  # the overwrite rolled back
    with pytest.raises(
        DafzarrError, match=f"open for writing in this process with max_file_size = {1 << 20}"
    ):
        dafzarr.open_daf(path, "r+", max_file_size=1 << 30)
    d.close()
    bigger = dafzarr.open_daf(path, "r+", max_file_size=1 << 30)
    bigger.set_matrix("cell", "gene", "m", np.zeros((1000, 200)), relayout=False, overwrite=True)
    bigger.close()
    assert dafzarr.open_daf(path).get_np_matrix("cell", "gene", "m").dtype == np.float64
    check_archive(path)
