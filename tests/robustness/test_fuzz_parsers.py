"""Every parser of hostile bytes, fuzzed with hypothesis in a child process.

Targets: the ZIP store (headers, directory, trailer, compressed entries), ArrayFile (a layer
file, its rkyv footer decoded on its own too), Daf metadata documents (``.zattrs``,
``.zarray``, ``.zgroup``, ``zarr.json``) and the HDF5 scan of ``dafzarr.refs``. Each input must
parse or raise a ``DafzarrError`` within a per-input time limit, with bounded allocation (see
``tests/robustness/_fuzz_child.py``). The loop runs in a child process so that a segfault or
SIGBUS is a failure of this test, reported with its signal and the input, not a crash of
pytest; a native hang that the child's timer cannot interrupt is ended by the child's
watchdog, or else by the parent's timeout, and reported with every thread's stack and the input.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

from ._fuzz_child import CURRENT_INPUT

# The child, run as a module of this test package (``python -m``) from the repository root.
CHILD = f"{__package__}._fuzz_child"
TARGETS = ["zip", "arrayfile", "rkyv", "daf", "hdf5"]


def _child_env(**extra: str) -> dict[str, str]:
    """The environment of a fuzzing child: this one, with this tree importable."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, **extra)


def _fuzz(target: str, examples: int, tmp_path: Path, timeout: float) -> None:
    env = _child_env()
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as fout, err.open("wb") as ferr:
        proc = subprocess.Popen(
            [sys.executable, "-m", CHILD, target, str(examples), str(tmp_path)],
            cwd=ROOT,
            env=env,
            stdout=fout,
            stderr=ferr,
        )
        try:
            status = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # The child's own watchdog should have ended it: ask faulthandler for every
            # thread's stack (SIGABRT), then kill it.
            proc.send_signal(signal.SIGABRT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            status = None
    stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    current = tmp_path / CURRENT_INPUT
    last = f"\nthe input being parsed: {current.read_bytes().hex()}" if current.exists() else ""
    if status is None:
        pytest.fail(f"fuzzing {target} hung for {timeout} s:\n{stderr[-6000:]}{last}")
    if status < 0:
        pytest.fail(
            f"fuzzing {target} killed the child with {signal.Signals(-status).name}:\n"
            f"{stderr[-4000:]}{last}"
        )
    assert status == 0, f"fuzzing {target} failed:\n{stderr[-6000:]}{last}"
    assert f"{target}: {examples} inputs" in stdout


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


def test_watchdog_ends_a_native_hang_with_stacks_and_the_input(tmp_path: Path) -> None:
    """An input that hangs where the timer signal cannot interrupt it ends the child with
    every thread's stack printed, and the input is left for the parent to report."""
    proc = subprocess.run(
        [sys.executable, "-m", CHILD, "native-hang", "10", str(tmp_path)],
        cwd=ROOT,
        env=_child_env(DAFZARR_FUZZ_WATCHDOG="2"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Timeout (0:00:02)!" in proc.stderr
    assert "most recent call first" in proc.stderr and "in run" in proc.stderr
    hung = (tmp_path / CURRENT_INPUT).read_bytes()
    assert hung != b"a" * 40 and hung  # the mutated input, not the valid one
