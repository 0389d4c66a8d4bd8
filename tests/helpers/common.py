"""Check functions shared by the test modules."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def check_zip_tools_accept(path: str | Path) -> None:
    """Python's zipfile and Info-ZIP's ``unzip -t`` both find the archive intact."""
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    if shutil.which("unzip"):
        res = subprocess.run(["unzip", "-tq", str(path)], capture_output=True, text=True)
        # unzip exits 1 with "zipfile is empty" for an archive without entries.
        assert res.returncode == 0 or "empty" in res.stdout + res.stderr, res.stdout + res.stderr


def check_archive(
    path: Path,
    expected: dict[str, bytes] | None = None,
    aligned: tuple[str, ...] | None = None,
    *,
    seven_zip_detects: bool = True,
) -> None:
    """Valid for zipfile, unzip and 7-Zip; unique names; aligned data; optional contents.

    ``aligned``: the entries whose data must be 8-aligned (default: all).
    ``seven_zip_detects=False``: 7-Zip is told the format (``7z t -tzip``) instead of
    detecting it, for archives that start with dead bytes the store did not renew (see
    ``tests/zipstore/test_zipstore_renew.py``).
    """
    check_zip_tools_accept(path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert len(names) == len(set(names)), "duplicate names in the central directory"
        raw = path.read_bytes()
        for info in z.infolist():
            if aligned is not None and info.filename not in aligned:
                continue
            n_len, e_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
            assert (info.header_offset + 30 + n_len + e_len) % 8 == 0, info.filename
        if expected is not None:
            assert sorted(names) == sorted(expected)
            for k, v in expected.items():
                assert z.read(k) == v, k
    if names:  # 7-Zip and unzip refuse every archive without entries
        fmt = [] if seven_zip_detects else ["-tzip"]
        res = subprocess.run(["7z", "t", *fmt, str(path)], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


def peak_allocation(fn: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """The exception ``fn`` raises (or None) and the peak of Python allocations meanwhile."""
    tracemalloc.start()
    try:
        fn()
        err: BaseException | None = None
    except Exception as exc:  # noqa: BLE001 (the caller checks what was raised)
        err = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return err, peak


def kill_when_ready(proc: subprocess.Popen[bytes], log: Path, delay: float) -> None:
    """SIGKILL a child ``delay`` seconds after its log starts with ``ready``."""
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_bytes().startswith(b"ready")):
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"the child died: {err}")
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.005)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


class HttpReplies:
    """A ``reply`` for test HTTP handlers: a status, a body, its ``Content-Length`` (or a
    stated ``length``, for servers that lie) and an optional ``Content-Range``."""

    def reply(
        self: Any,
        status: int,
        body: bytes,
        content_range: str | None = None,
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        if content_range is not None:
            self.send_header("Content-Range", content_range)
        self.end_headers()
        self.wfile.write(body)


def alias_strings(data: bytearray, vec_head: int, count: int) -> bytes:
    """Point every string record of the archived vector whose head is at ``vec_head`` at the
    bytes of its first string: a hostile rkyv footer that is small in the file and, decoded
    naively, ``count`` times the first string in memory."""
    (rel, n) = struct.unpack_from("<qQ", data, vec_head)
    start = vec_head + rel
    assert n == count
    (head, first_rel) = struct.unpack_from("<Qq", data, start)
    target = start + first_rel
    for i in range(1, n):
        pos = start + 16 * i
        struct.pack_into("<Qq", data, pos, head, target - pos)
    return bytes(data)
