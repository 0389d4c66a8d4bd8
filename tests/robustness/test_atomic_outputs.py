"""Whole outputs (``daf convert``, ``refs build``, ``zip pack``/``compact -o``) are atomic.

A failure half-way (a full disk: ``RLIMIT_FSIZE`` in a child process) leaves an existing
destination byte for byte as it was and no temporary behind; a SIGKILL at a random instant
leaves the old destination or the complete new one; a success replaces it completely.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dafzarr
from dafzarr._core.atomic import STALE_SECONDS, TMP_SUFFIX
from tests.helpers import ROOT as REPO

ROOT = str(REPO)
CHILD = """
import resource, signal, sys
limit = int(sys.argv[1])
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from dafzarr.cli import main
loop = sys.argv[2] == "loop"
while True:
    rc = main(sys.argv[3:])
    if not loop:
        sys.exit(rc)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _cli(args: list[str], limit: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), "once", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _digest(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) with its SHA-256."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {
        str(p.relative_to(path.parent)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if TMP_SUFFIX in p.name)


def _daf(path: Path, seed: int, n: int = 400) -> Path:
    d = dafzarr.open_daf(path, "w")
    d.set_scalar("seed", seed)
    d.add_axis("cell", [f"c{i}" for i in range(n)])
    d.add_axis("gene", [f"g{i}" for i in range(n)])
    d.set_matrix("cell", "gene", "x", np.random.default_rng(seed).random((n, n)))
    d.close()
    return path


def _seed_of(path: str) -> int:
    d = dafzarr.open_daf(path, "r")
    try:
        x = d.get_np_matrix("cell", "gene", "x")
        seed = int(d.get_scalar("seed"))
        assert np.array_equal(x, np.random.default_rng(seed).random(x.shape))
        return seed
    finally:
        d.close()


DESTINATIONS = ["out.daf.zarr.zip", "out.daf.zarr", "many.dafs.zarr.zip#/new"]


def _existing(tmp_path: Path, dest: str) -> tuple[str, Path]:
    """Write the old destination (seed 1); return the CLI's destination and its path."""
    src = _daf(tmp_path / "old.daf.zarr", 1)
    target = str(tmp_path / dest)
    if "#/" in dest:  # another data set in the archive must survive; the group is new
        assert (
            _cli(
                ["daf", "convert", str(src), target.replace("#/new", "#/other"), "--quiet"]
            ).returncode
            == 0
        )
    else:
        assert _cli(["daf", "convert", str(src), target, "--quiet"]).returncode == 0
    return target, tmp_path / dest.split("#")[0]


@pytest.mark.parametrize("dest", DESTINATIONS)
def test_convert_on_a_full_disk_leaves_the_destination(tmp_path: Path, dest: str) -> None:
    target, path = _existing(tmp_path, dest)
    before = _digest(path)
    new = _daf(tmp_path / "new.daf.zarr", 2, n=600)  # a 2.9 MB matrix, over the limit
    # An archive that gets a new group may grow by 1 MiB: its scalar and axes fit, not x.
    limit = (1 << 20) + (path.stat().st_size if "#/" in dest else 0)
    res = _cli(["daf", "convert", str(new), target, "--quiet", "--force"], limit=limit)
    assert res.returncode != 0, res.stdout
    assert _digest(path) == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("dest", DESTINATIONS[:2])
def test_convert_replaces_only_with_force(tmp_path: Path, dest: str) -> None:
    target, path = _existing(tmp_path, dest)
    before = _digest(path)
    new = _daf(tmp_path / "new.daf.zarr", 2, n=50)
    res = _cli(["daf", "convert", str(new), target, "--quiet"])
    assert res.returncode == 1 and "--force" in res.stderr
    assert _digest(path) == before
    assert _cli(["daf", "convert", str(new), target, "--quiet", "--force"]).returncode == 0
    assert _seed_of(target) == 2
    names = {n for n in _digest(path) if "matrices" in n or n.endswith(".zip")}
    assert names and _leftovers(tmp_path) == []
    if path.is_dir():  # nothing of the old store is left in the new one
        again = tmp_path / "again.daf.zarr"
        assert _cli(["daf", "convert", str(new), str(again), "--quiet"]).returncode == 0
        assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) == sorted(
            p.relative_to(again).as_posix() for p in again.rglob("*")
        )


def _kill_rounds(tmp_path: Path, args: list[str], check: object, rounds: int) -> None:
    rng = random.Random(7)
    for _ in range(rounds):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, "0", "loop", *args],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(1.0, 3.0))
        child.send_signal(signal.SIGKILL)
        child.wait()
        check()  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.parametrize("dest", DESTINATIONS[:2])
def test_sigkill_during_convert_leaves_old_or_new(tmp_path: Path, dest: str) -> None:
    target, _path = _existing(tmp_path, dest)
    new = _daf(tmp_path / "new.daf.zarr", 2, n=300)

    def check() -> None:
        assert _seed_of(target) in (1, 2)

    _kill_rounds(
        tmp_path, ["daf", "convert", str(new), target, "--quiet", "--force"], check, rounds=6
    )
    # A killed run's temporary is removed by the next run once it is stale and unlocked.
    old = time.time() - 2 * STALE_SECONDS
    for name in _leftovers(tmp_path):
        os.utime(tmp_path / name, (old, old))
    assert _cli(["daf", "convert", str(new), target, "--quiet", "--force"]).returncode == 0
    assert _leftovers(tmp_path) == [] and _seed_of(target) == 2


def _netcdf(tmp_path: Path) -> list[str]:
    from dafzarr._core.examples import write_daily_netcdf

    return [write_daily_netcdf(str(tmp_path / f"d{i}.nc"), i, shape=(40, 60)) for i in range(3)]


def test_refs_build_on_a_full_disk_leaves_the_store(tmp_path: Path) -> None:
    files = _netcdf(tmp_path)
    out = tmp_path / "s.refs"
    assert _cli(["refs", "build", str(out), *files[:2], "-q"]).returncode == 0
    before = _digest(out)
    res = _cli(["refs", "build", str(out), *files, "-q", "--overwrite"], limit=600)
    assert res.returncode != 0
    assert _digest(out) == before
    assert _leftovers(tmp_path) == []
    assert _cli(["refs", "build", str(out), *files, "-q", "--overwrite"]).returncode == 0
    assert _digest(out) != before and _leftovers(tmp_path) == []


@pytest.mark.slow
def test_sigkill_during_refs_build_leaves_old_or_new(tmp_path: Path) -> None:
    files = _netcdf(tmp_path)
    out = tmp_path / "s.refs"
    assert _cli(["refs", "build", str(out), *files[:2], "-q"]).returncode == 0
    old = _digest(out)
    assert _cli(["refs", "build", str(out), *files, "-q", "--overwrite"]).returncode == 0
    new = _digest(out)
    assert old != new

    def check() -> None:
        assert _digest(out) in (old, new)

    _kill_rounds(
        tmp_path, ["refs", "build", str(out), *files, "-q", "--overwrite"], check, rounds=6
    )


def test_pack_on_a_full_disk_leaves_the_archive(tmp_path: Path) -> None:
    import zarr

    src = tmp_path / "d.zarr"
    g = zarr.open_group(str(src), mode="w")
    g.create_array("a", data=np.arange(400_000), chunks=(400_000,), compressors=None)
    out = tmp_path / "o.zip"
    small = tmp_path / "s.zarr"
    zarr.open_group(str(small), mode="w").create_array("b", data=np.arange(10))
    assert _cli(["zip", "pack", str(small), str(out), "--quiet"]).returncode == 0
    before = _digest(out)
    res = _cli(["zip", "pack", str(src), str(out), "--quiet", "--force"], limit=1 << 20)
    assert res.returncode != 0
    assert _digest(out) == before and _leftovers(tmp_path) == []


@pytest.mark.slow
def test_sigkill_during_convert_into_a_group_keeps_the_archive(tmp_path: Path) -> None:
    target, path = _existing(tmp_path, DESTINATIONS[2])
    pristine = path.read_bytes()
    new = _daf(tmp_path / "new.daf.zarr", 2, n=300)
    rng = random.Random(3)
    outcomes = set()
    for _ in range(6):
        path.write_bytes(pristine)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                "0",
                "once",
                "daf",
                "convert",
                str(new),
                target,
                "--quiet",
            ],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.8, 2.5))
        child.send_signal(signal.SIGKILL)
        child.wait()
        # The next writable open rolls back an unfinished batch; the other data set stays.
        assert _seed_of(target.replace("#/new", "#/other")) == 1
        store = dafzarr.MmapZipStore(path, "r")
        has_new = any(k.startswith("new/") for k in store)
        store.close()
        if has_new:
            assert _seed_of(target) == 2
        outcomes.add(has_new)
    assert outcomes  # (which of the two each kill gave depends on the machine's speed)
