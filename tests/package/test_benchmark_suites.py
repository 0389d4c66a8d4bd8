"""The benchmark suites stay runnable under asv, which tracks them across commits: asv's own
check of every suite (discovery, and each benchmark's signature against its suite's
parameters) finds no problem."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.skipif(not (ROOT / "asv.conf.json").exists(), reason="not a source tree")
def test_asv_finds_no_problem_in_the_suites() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "asv", "check", "--python=same"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0 and "No problems found" in res.stdout, res.stdout + res.stderr
