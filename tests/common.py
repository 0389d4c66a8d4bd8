"""Check functions shared by the test modules."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path


def check_zip_tools_accept(path: str | Path) -> None:
    """Python's zipfile and Info-ZIP's ``unzip -t`` both find the archive intact."""
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    if shutil.which("unzip"):
        res = subprocess.run(["unzip", "-tq", str(path)], capture_output=True, text=True)
        # unzip exits 1 with "zipfile is empty" for an archive without entries.
        assert res.returncode == 0 or "empty" in res.stdout + res.stderr, res.stdout + res.stderr
