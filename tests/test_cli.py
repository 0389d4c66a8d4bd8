"""The dafzarr command line, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dafzarr import MmapZipStore


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dafzarr", *args], capture_output=True, text=True, timeout=300
    )


def test_demo() -> None:
    res = run("demo")
    assert res.returncode == 0, res.stderr
    assert "demo finished: OK" in res.stdout
    assert res.stderr == ""


def test_zip_subcommands(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    with MmapZipStore(p, "w") as store:
        store["zarr.json"] = b'{"zarr_format":3}'
        store["data/c/0"] = bytes(range(256)) * 10
    res = run("zip", "ls", str(p))
    assert res.returncode == 0 and "data/c/0" in res.stdout and "2 entries" in res.stdout
    res = run("zip", "verify", str(p))
    assert res.returncode == 0 and "all 2 entries intact" in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "dafzarr", "zip", "cat", str(p), "zarr.json"], capture_output=True
    )
    assert res.returncode == 0 and res.stdout == b'{"zarr_format":3}'
    assert run("zip", "cat", str(p), "nope").returncode == 1

    # Damage: flip one data byte, then cut the file inside its trailer.
    blob = bytearray(p.read_bytes())
    offset = next(i["data_offset"] for i in MmapZipStore(p).info() if i["name"] == "data/c/0")
    blob[offset] ^= 0xFF
    p.write_bytes(bytes(blob))
    res = run("zip", "verify", str(p))
    assert res.returncode == 1 and "BAD  data/c/0" in res.stdout
    p.write_bytes(bytes(blob[:-10]))
    res = run("zip", "verify", str(p))
    assert res.returncode == 2 and "zip repair" in res.stderr
    res = run("zip", "repair", str(p))
    assert res.returncode == 0 and "repaired" in res.stdout, res.stdout + res.stderr
    res = run("zip", "ls", str(p))
    assert res.returncode == 0 and "zarr.json" in res.stdout


def test_config() -> None:
    res = run("config")
    assert res.returncode == 0 and "crc32_kernel" in res.stdout
    script = Path(sys.executable).parent / "dafzarr"  # the installed console script
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("dafzarr ")
