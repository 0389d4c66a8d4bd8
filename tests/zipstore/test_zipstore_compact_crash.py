"""SIGKILL at random instants of ``compact`` and ``pack``: the path holds the old archive or
the complete new one (both valid for zipfile, unzip and 7-Zip, aligned, no duplicate names,
the same live contents), and at most the killed run's temporary file is left, which the next
call removes once it is stale."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import zarr

from dafzarr import MmapZipStore
from dafzarr._core.atomic import STALE_SECONDS, TMP_SUFFIX
from dafzarr._core.zipstore import repack as _zipcopy
from tests.helpers import ROOT
from tests.helpers.common import check_archive, kill_when_ready

from . import _compact_child as child

CHILD = Path(child.__file__)


def _run_and_kill(args: list[str], log: Path, delay: float) -> int:
    """Start the child, SIGKILL it ``delay`` seconds after it is ready; runs it completed."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), *args, str(log)],
        # The child imports the dafzarr under test, not another installed copy.
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    kill_when_ready(proc, log, delay)
    return sum(1 for line in log.read_text().split("\n") if line.startswith("done "))


def _check_leftovers(directory: Path, destination: Path) -> None:
    """At most the killed run's temporary file; the next call removes it once stale."""
    prefix = f".{destination.name}."
    left = [p for p in directory.iterdir() if p.name.startswith(prefix)]
    assert len(left) <= 1 and all(p.name.endswith(TMP_SUFFIX) for p in left), left
    old = time.time() - 2 * STALE_SECONDS
    for p in left:
        os.utime(p, (old, old))
    assert _zipcopy.remove_stale_temporaries(str(destination)) == [str(p) for p in left]


def _compact_round(tmp_path: Path, seed: int) -> int:
    rng = random.Random(seed)
    d = tmp_path / f"c{seed}"
    d.mkdir()
    path = d / "a.zip"
    live: dict[str, bytes] = {}
    with MmapZipStore(path, "w") as store:
        for i in range(60):
            live[f"k{i}"] = store_value = rng.randbytes(rng.choice((0, 10, 3000, 200_000)))
            store[f"k{i}"] = store_value
        for i in range(0, 60, 2):
            live[f"k{i}"] = store_value = rng.randbytes(rng.choice((1, 5000, 400_000)))
            store[f"k{i}"] = store_value
        del store["k1"], live["k1"]
    done = _run_and_kill(["compact", str(path)], d / "log", rng.uniform(0.0, 0.5))
    # A read-only open refuses a damaged archive: no repair was needed.
    with MmapZipStore(path) as store:
        assert {k: bytes(store[k]) for k in store} == live
        assert store.space().dead_bytes == 0 or done == 0
    check_archive(path, live)
    _check_leftovers(d, path)
    return done


def _pack_round(tmp_path: Path, seed: int) -> int:
    rng = np.random.default_rng(seed)
    d = tmp_path / f"p{seed}"
    d.mkdir()
    src = d / "g.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2 + seed % 2)
    for i in range(4):
        g.create_array(
            f"a{i}", data=rng.normal(size=(300, 300)), chunks=(30, 300), compressors=None
        )
    files = {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()}
    out = d / "g.zip"
    done = _run_and_kill(["pack", str(src), str(out)], d / "log", float(rng.uniform(0.0, 0.5)))
    if out.exists():
        check_archive(out, files)
        with MmapZipStore(out) as store:
            assert {k: bytes(store[k]) for k in store} == files
    else:
        assert done == 0
    _check_leftovers(d, out)
    return done


def _rounds(tmp_path: Path, func: Callable[[Path, int], int], seeds: range) -> list[int]:
    # Children start slowly (imports): run a few rounds at once.
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda seed: func(tmp_path, seed), seeds))


def test_sigkill_while_compacting(tmp_path: Path) -> None:
    done = _rounds(tmp_path, _compact_round, range(20))
    assert sum(done) > 20, f"kills landed too early to test anything: {done}"


def test_sigkill_while_packing(tmp_path: Path) -> None:
    done = _rounds(tmp_path, _pack_round, range(20))
    assert sum(done) > 20, f"kills landed too early to test anything: {done}"


@pytest.mark.slow
def test_sigkill_while_compacting_many(tmp_path: Path) -> None:
    _rounds(tmp_path, _compact_round, range(100, 200))


@pytest.mark.slow
def test_sigkill_while_packing_many(tmp_path: Path) -> None:
    _rounds(tmp_path, _pack_round, range(100, 200))
