"""A reader of a directory data set on a local file system, while another process overwrites
its vectors again and again, sees only whole committed vectors or a ``DafzarrError``.

The same writer and reader processes as ``test_cached_client`` (``_cached_client_child``),
both on the directory itself: no view between them. The reader reads each vector's metadata
and chunk from one directory, so an overwrite that renames the old vector aside between the
two neither makes it read zeros (the chunk gone) nor the new chunk's bytes under the old
metadata. A race: without that, the reader fails most runs, not every one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).parents[2])
CHILD = str(Path(__file__).with_name("_cached_client_child.py"))


def _run(role: str, path: Path, seconds: float) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, CHILD, role, "daf-dir", str(path), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(process: subprocess.Popen[str], timeout: float, what: str) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"the {what} ended with status {process.returncode}: {err}"
    return out


def test_reader_of_a_local_directory_sees_whole_vectors(tmp_path: Path) -> None:
    path = tmp_path / "cells.daf.zarr"
    writer = _run("writer", path, 120)  # until told to stop
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and writer.poll() is None:
            assert time.monotonic() < deadline, "the writer made nothing in a minute"
            time.sleep(0.05)
        seen = json.loads(_finish(_run("reader", path, 2.0), 120, "reader"))
    finally:
        (tmp_path / "cells.daf.zarr.stop").touch()
        generations = int(_finish(writer, 60, "writer"))
    print(f"{seen}, {generations} generations")
    assert seen["torn_count"] == 0, f"the reader saw torn states: {seen['torn']}"
    assert seen["states"] >= 2, seen
