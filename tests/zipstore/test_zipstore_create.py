"""Mode ``"w"``: a new path gets an empty archive, an existing archive is emptied; neither
truncates a file that already is the empty archive (ext4 writes a file truncated to zero out
in full when it is closed)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dafzarr import MmapZipStore
from tests.helpers.common import check_archive

_CHILD = """
import sys
from dafzarr import MmapZipStore
s = MmapZipStore(sys.argv[1], "w")
s["a/c/0"] = b"x" * 100_000
s.close()
"""


def _truncations_to_zero(tmp_path: Path, path: Path) -> list[str]:
    """The ``ftruncate(fd, 0)`` calls of a child process that writes ``path`` in mode "w"."""
    trace = tmp_path / "trace.txt"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=ftruncate,truncate", "-o", str(trace),
         sys.executable, "-c", _CHILD, str(path)],
        check=True, timeout=120,
    )  # fmt: skip
    calls = trace.read_text().splitlines()
    assert any("ftruncate(" in c for c in calls), calls  # the trace did see the commits
    return [c for c in calls if re.search(r"truncate\(\S+, 0\)", c)]


def test_a_new_archive_is_never_truncated_to_zero(tmp_path: Path) -> None:
    path = tmp_path / "new.zip"
    assert _truncations_to_zero(tmp_path, path) == []
    check_archive(path)
    with zipfile.ZipFile(path) as z:
        assert z.read("a/c/0") == b"x" * 100_000


def test_mode_w_empties_an_existing_archive(tmp_path: Path) -> None:
    path = tmp_path / "old.zip"
    with MmapZipStore(path, "w") as s:
        s["old"] = b"o" * 1000
    with MmapZipStore(path, "w") as s:
        assert list(s.keys()) == []
        s["new"] = b"n"
    check_archive(path)
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["new"]


@pytest.mark.parametrize("content", [b"", b"PK", b"x" * 98])
def test_mode_w_replaces_a_short_or_foreign_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "odd.zip"
    path.write_bytes(content)
    with MmapZipStore(path, "w") as s:
        s["k"] = b"v"
    check_archive(path)
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["k"]


_CREATE_ONLY = """
import sys
from dafzarr import MmapZipStore
MmapZipStore(sys.argv[1], "w").close()
"""


def test_a_kill_while_creating_leaves_no_file_beside_the_archive(tmp_path: Path) -> None:
    """A child killed when it gives the new empty archive its name (SIGKILL injected at the
    ``link``/``linkat`` call) leaves the folder as it was: no half-made temporary."""
    path = tmp_path / "new.zip"
    trace = tmp_path.parent / f"{tmp_path.name}-trace.txt"
    res = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=link,linkat", "-e", "inject=link,linkat:signal=KILL",
         "-o", str(trace), sys.executable, "-c", _CREATE_ONLY, str(path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert res.returncode in (-9, 137), res
    assert "killed by SIGKILL" in trace.read_text()
    assert list(tmp_path.iterdir()) == []
    subprocess.run([sys.executable, "-c", _CREATE_ONLY, str(path)], check=True, timeout=120)
    assert [p.name for p in tmp_path.iterdir()] == ["new.zip"]
    check_archive(path)


def test_creating_through_a_named_temporary(tmp_path: Path) -> None:
    """The way for file systems without anonymous files: the archive, nothing beside it, and
    a file another process made meanwhile is kept."""
    from dafzarr._core.zipstore.open import _create_empty_through_a_name

    path = tmp_path / "new.zip"
    _create_empty_through_a_name(str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["new.zip"]
    check_archive(path)
    path.write_bytes(b"theirs")
    _create_empty_through_a_name(str(path))
    assert path.read_bytes() == b"theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["new.zip"]
