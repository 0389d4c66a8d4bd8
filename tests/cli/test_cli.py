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
    assert res.returncode == 1 and "zip repair" in res.stderr
    res = run("zip", "repair", str(p))
    assert res.returncode == 0 and "repaired" in res.stdout, res.stdout + res.stderr
    res = run("zip", "ls", str(p))
    assert res.returncode == 0 and "zarr.json" in res.stdout


def test_config() -> None:
    res = run("config")
    assert res.returncode == 0 and "crc32_copy_kernel" in res.stdout and "isal" in res.stdout
    script = Path(sys.executable).parent / "dafzarr"  # the installed console script
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("dafzarr ")


def test_zip_ls_lists_every_entry_past_a_damaged_header(tmp_path: Path) -> None:
    p = tmp_path / "a.zip"
    with MmapZipStore(p, "w") as store:
        store["first"] = b"1" * 100
        store["second"] = b"2" * 100
        store["third"] = b"3" * 100
    infos = MmapZipStore(p).info()
    header = next(i["header_offset"] for i in infos if i["name"] == "second")
    blob = bytearray(p.read_bytes())
    assert blob[header : header + 4] == b"PK\x03\x04"
    blob[header : header + 4] = b"XXXX"  # the central directory still lists the entry
    p.write_bytes(bytes(blob))

    with MmapZipStore(p) as store:
        rows = {r["name"]: r for r in store.info()}
    assert rows["second"]["data_offset"] is None and "second" in rows["second"]["error"]
    assert rows["first"]["error"] is None and rows["third"]["error"] is None
    assert rows["third"]["data_offset"] is not None

    res = run("zip", "ls", str(p))
    assert res.returncode == 1
    assert all(name in res.stdout for name in ("first", "second", "third"))
    assert "BAD" in res.stdout and "damaged:" in res.stderr and "second" in res.stderr


def test_demo_needs_only_the_demo_extra() -> None:
    # README's first command installs ".[demo]": no dask, no anndata. Blocking their import
    # here shows the demo does not depend on anything the test extra happens to bring.
    code = (
        "import sys\n"
        "for name in ('dask', 'distributed', 'anndata', 'kerchunk', 'virtualizarr'):\n"
        "    sys.modules[name] = None\n"
        "from dafzarr.cli import main\n"
        "sys.exit(main(['demo']))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "demo finished: OK" in res.stdout
    assert "Virtual reference store demo: NetCDF4" in res.stdout  # the step ran, not skipped
