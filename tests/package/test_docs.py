"""The API reference builds from the docstrings without a single warning (skipped outside a
clone, where ``docs/`` is absent)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    not (ROOT / "docs" / "conf.py").is_file(), reason="needs the project's source tree"
)


def test_api_reference_builds_warning_free(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-q",
            "-W",
            "--keep-going",
            "-E",
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pages = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "html").glob("*.html")}
    # Each page documents the members, not just a title (autodoc found and imported them).
    for page, member in (
        ("zipstore.html", "try_mmap_entry_as"),
        ("daf.html", "get_np_matrix"),
        ("refs.html", "virtualize"),
        ("daf-contracts.html", "reconstruct_axis"),
        ("daf-contracts.html", "verify_output"),
        ("arrayfile.html", "read_array"),
        ("errors.html", "CorruptArchiveError"),
    ):
        assert member in pages[page], page
