"""Benchmark results recorded as JSON (``--record``) and drawn by ``benchmarks/plots.py``: a
small real run writes the documented schema, the plots script turns it into an image, and
the recorded results kept in the repository (and their plots in the docs) stay readable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    not (ROOT / "benchmarks" / "record.py").is_file(), reason="needs the project's source tree"
)

ROW_KEYS = {
    "suite",
    "op",
    "peer",
    "size",
    "unit",
    "n",
    "median_s",
    "best_s",
    "median",
    "best",
    "ratios",
    "target",
    "target_met",
}
PNG = b"\x89PNG\r\n\x1a\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_small_run_records_its_results_and_plots_them(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results, out = tmp_path / "results", tmp_path / "plots"
    res = _run(
        "benchmarks.bench_reconstruct",
        "--quick",
        "--only",
        "contracts",
        "--rounds",
        "1",
        "--record",
        str(results),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads((results / "bench_reconstruct.json").read_text(encoding="utf-8"))
    assert doc["schema"] == 1
    assert doc["benchmark"] == "bench_reconstruct"
    assert doc["mode"] == "quick"
    assert doc["source"] == "run"
    assert doc["title"] in res.stdout
    assert len(doc["rows"]) == 4  # 2 operations x (enforced, off)
    for row in doc["rows"]:
        assert set(row) == ROW_KEYS
        assert row["unit"] == "us/call"
        assert row["n"] == 1
        assert row["median"] == pytest.approx(row["median_s"] * 1e6)
    enforced = [r for r in doc["rows"] if r["peer"] == "contract enforced"]
    assert all(set(r["ratios"]) == {"enforcement off"} for r in enforced)

    res = _run("benchmarks.plots", "--results", str(results), "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    image = out / "bench_reconstruct.png"
    assert image.read_bytes()[:8] == PNG
    assert image.stat().st_size > 5_000  # drawn panels, not an empty canvas


def test_the_kept_results_follow_the_schema_and_have_plots() -> None:
    files = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert files, "benchmarks/results holds the recorded figures"
    images = ROOT / "docs" / "_static" / "bench"
    for f in files:
        doc = json.loads(f.read_text(encoding="utf-8"))
        assert doc["schema"] == 1, f.name
        assert doc["benchmark"] == f.stem, f.name
        assert doc["date"] and doc["source"] and doc["machine"], f.name
        assert doc["rows"], f.name
        for row in doc["rows"]:
            assert set(row) == ROW_KEYS, (f.name, row)
        if images.parent.parent.joinpath("conf.py").is_file():  # docs/ is in a clone only
            assert (images / f"{f.stem}.png").read_bytes()[:8] == PNG, f.name


def test_plots_refuses_a_document_of_another_schema(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results = tmp_path / "results"
    results.mkdir()
    (results / "bench_x.json").write_text(
        json.dumps({"schema": 99, "benchmark": "bench_x", "rows": []})
    )
    res = _run("benchmarks.plots", "--results", str(results), "--out", str(tmp_path / "o"))
    assert res.returncode != 0
    assert "bench_x.json: schema 99, expected 1" in res.stderr
