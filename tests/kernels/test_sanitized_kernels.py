"""The compiled kernels under AddressSanitizer: hostile input touches nothing outside its arrays.

The Cython kernels run without bounds checks, so a read one element before or after an array
crashes nothing: a value may just come out wrong. This test builds the extensions again with
``-fsanitize=address`` in a copy of the source tree and runs the tests of the kernels and of
hostile input against that build, with the sanitizer's runtime preloaded into Python: a read
or write outside any allocation ends the run with the sanitizer's report. A self-check first
makes sure that such a read is reported.

Not run: the fuzzers and the address-space tests, which limit ``RLIMIT_AS`` (the sanitizer
reserves terabytes of shadow address space).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / "setup.py").exists() or not (ROOT / "_ext").is_dir(),
        reason="needs the source tree (setup.py, _ext/), absent from an installed test run",
    ),
]

# The tests of the kernels and of hostile bytes reaching them (paths under tests/).
SUITES = [
    "kernels/test_indices.py",
    "kernels/test_groupby.py",
    "kernels/test_groupby_columns.py",
    "kernels/test_vlen.py",
    "kernels/test_transpose.py",
    "arrayfile/test_arrayfile_footer.py",
    "arrayfile/test_arrayfile_hostile.py",
    "arrayfile/test_arrayfile_segments.py",
    "zipstore/test_zipstore_cdparse.py",
    "zipstore/test_zipstore_hostile.py",
    "refs/test_refs_scan.py",
    "refs/test_refs_scan_bound.py",
    "daf/test_daf_streamed_writes.py",
]

SELF_CHECK = """
import ctypes, numpy as np
a = np.zeros(16, np.uint8)
out = ctypes.create_string_buffer(8)
ctypes.memmove(out, a.ctypes.data + 16, 8)  # the 8 bytes right after the array
"""


def _runtime() -> str:
    path = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert os.path.isabs(path) and os.path.exists(path), (
        f"gcc has no AddressSanitizer runtime ({path!r}): install the libasan package of gcc"
    )
    return path


@pytest.fixture(scope="module")
def sanitized_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("sanitized")
    skip = shutil.ignore_patterns("*.so", "__pycache__", "*.c", "build")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    for name in ("_ext", "dafzarr", "tests"):
        shutil.copytree(ROOT / name, tree / name, ignore=skip)
    flags = "-fsanitize=address -fno-omit-frame-pointer -O1"
    env = dict(os.environ, CFLAGS=flags, LDFLAGS="-fsanitize=address")
    res = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    assert list((tree / "dafzarr").glob("_indices*.so")), "the build made no extension"
    return tree


def _sanitized(tree: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ, LD_PRELOAD=_runtime(), ASAN_OPTIONS="detect_leaks=0", PYTHONPATH=str(tree)
    )
    env.pop("PYTHONSTARTUP", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_read_past_an_array_is_reported(sanitized_tree: Path) -> None:
    res = _sanitized(sanitized_tree, "-c", SELF_CHECK, timeout=120)
    assert res.returncode != 0
    assert "AddressSanitizer: heap-buffer-overflow" in res.stderr, res.stderr[-2000:]


def test_kernels_and_hostile_input_stay_inside_their_arrays(sanitized_tree: Path) -> None:
    probe = _sanitized(
        sanitized_tree, "-c", "import dafzarr._indices as m; print(m.__file__)", timeout=120
    )
    assert probe.stdout.strip().startswith(str(sanitized_tree)), probe.stdout + probe.stderr
    # -s: the sanitizer's report goes to this process' stderr even if it ends pytest.
    res = _sanitized(
        sanitized_tree,
        "-m",
        "pytest",
        "-q",
        "-s",
        "-p",
        "no:cacheprovider",
        "-m",
        "not slow",
        *(f"tests/{s}" for s in SUITES),
        timeout=1500,
    )
    report = res.stderr[-6000:] + res.stdout[-3000:]
    assert "AddressSanitizer" not in res.stderr, report
    assert res.returncode == 0, report
