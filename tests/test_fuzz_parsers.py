"""Every parser of hostile bytes, fuzzed with hypothesis in a child process.

Targets: the ZIP store (headers, directory, trailer, compressed entries), ArrayFile (a layer
file, its rkyv footer decoded on its own too), Daf metadata documents (``.zattrs``,
``.zarray``, ``.zgroup``, ``zarr.json``) and the HDF5 scan of ``dafzarr.refs``. Each input must
parse or raise a ``DafzarrError`` within a per-input time limit, with bounded allocation (see
``tests/_fuzz_child.py``). The loop runs in a child process so that a segfault or SIGBUS is a
failure of this test, reported with its signal, not a crash of pytest; a native hang that the
child's timer cannot interrupt is caught by the parent's timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["zip", "arrayfile", "rkyv", "daf", "hdf5"]


def _fuzz(target: str, examples: int, tmp_path: Path, timeout: float) -> None:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tests._fuzz_child", target, str(examples), str(tmp_path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"fuzzing {target} hung for {timeout} s (a native hang?): {exc.stderr!r}")
    if proc.returncode < 0:
        pytest.fail(
            f"fuzzing {target} killed the child with {signal.Signals(-proc.returncode).name}:\n"
            f"{proc.stderr[-4000:]}"
        )
    assert proc.returncode == 0, f"fuzzing {target} failed:\n{proc.stderr[-6000:]}"
    assert f"{target}: {examples} inputs" in proc.stdout


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_parser(target: str, tmp_path: Path) -> None:
    _fuzz(target, 300, tmp_path, timeout=600)


# The HDF5 library loops for ever, holding the GIL, inside H5Aread of one mutated attribute
# message among the 10,000 derandomized inputs (h5py 3.16, hypothesis 6.170): the scan's
# deadline (a helper process killed when it passes) turns that input into a ScanTimeoutError.
@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_parser_long(target: str, tmp_path: Path) -> None:
    _fuzz(target, 10_000, tmp_path, timeout=1800)
